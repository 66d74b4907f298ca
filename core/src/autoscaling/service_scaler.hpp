// Model-level autoscaling behind one interface. A ServiceScaler decides for all the pools (Deployments)
// that serve one model at once — a prefill and a decode pool of a disaggregated service, or several
// accelerator variants of one model — at its own period. Like a ReplicaScaler it is pure: it reads a
// ServiceSnapshot and returns what to do (replica counts to set, metrics to publish) with decision
// records that show the arithmetic; only the world applies the result. Implementations: a port of
// NVIDIA Dynamo's planner (dynamo_planner.hpp) and of llm-d's Workload Variant Autoscaler (wva.hpp);
// the registry is service_scalers.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autoscaling/replica_scaler.hpp"
#include "kernel/decision.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// What a pool does in a disaggregated service (Dynamo's subComponentType prefill/decode; a pool doing
// both is an aggregated worker).
enum class ServiceRole : std::uint8_t { Aggregated, Prefill, Decode };
const char* service_role_name(ServiceRole role);  // "aggregated", "prefill", "decode"

// The engine limits a worker publishes in its model deployment card (Dynamo's WorkerCapabilities:
// runtime_config max_num_batched_tokens, max_num_seqs, the KV cache size in tokens, the context
// length). The lab fills them from the pool's EngineConfig.
struct EngineLimits {
  std::int64_t max_num_batched_tokens = 8192;  // tokens per step (--max-num-batched-tokens)
  std::int64_t max_num_seqs = 1024;            // sequences (--max-num-seqs)
  std::int64_t max_kv_tokens = 0;              // tokens: KV blocks × block size ("GPU KV cache size")
  std::int64_t context_length = 0;             // tokens: the engine's max_model_len
};

// One engine iteration as vLLM's instrumented scheduler reports it to Dynamo (ForwardPassMetrics v1,
// ai-dynamo/dynamo components/src/dynamo/common/forward_pass_metrics.py). The lab has no attention
// data parallelism, so one record per replica (dp_rank 0).
struct ForwardPassMetrics {
  std::uint32_t replica = 0;  // worker_id
  double wall_time_s = 0;     // seconds from schedule() to update_from_output(); 0 = the idle heartbeat
  // scheduled_requests: what ran in this iteration
  std::int64_t num_prefill_requests = 0;  // new requests and chunked-prefill continuations
  std::int64_t sum_prefill_tokens = 0;    // tokens computed for them in this iteration
  std::int64_t num_decode_requests = 0;
  std::int64_t sum_decode_kv_tokens = 0;  // their total context (prompt + generated so far)
  // queued_requests: what waits and was not scheduled
  std::int64_t queued_prefill_requests = 0;     // status WAITING
  std::int64_t queued_prefill_tokens = 0;       // their prompt tokens
  std::int64_t queued_decode_requests = 0;      // preempted requests back in the waiting queue
  std::int64_t queued_decode_kv_tokens = 0;     // their context
};

// One pool (Deployment) of the model, as a model-level autoscaler sees it at a sync.
struct ServicePool {
  std::string name;  // the Deployment (pool) name; WVA's variant_name
  ServiceRole role = ServiceRole::Aggregated;
  std::string accelerator;  // e.g. "H100": the VariantAutoscaling's accelerator label (WVA's accelerator_type)
  // VariantAutoscaling spec.variantCost: a cost per replica in any unit (the lab: USD per replica-hour).
  // nullopt = the CRD default "10.0".
  std::optional<double> variant_cost;
  int gpus_per_replica = 1;  // GPUs (Dynamo's num_gpu for the worker type)
  EngineLimits engine;       // what its workers publish (Dynamo planner)
  // Its pods as the API shows them and the last scrape (the same view a ReplicaScaler gets); the
  // scalers read spec_replicas and the replicas' states (Pending/Starting/Ready/Draining).
  ScalerSnapshot snapshot;
  // WVA: per replica id, what `max by (pod) (max_over_time(vllm:kv_cache_usage_perc[1m]))` and the
  // same over vllm:num_requests_waiting return: every replica with a vLLM sample in the last minute
  // (a deleted pod's series stays in the window; WVA drops pods it cannot find through the API).
  std::vector<std::pair<std::uint32_t, double>> kv_max_1m, queue_max_1m;
  // Dynamo planner: the latest ForwardPassMetrics of each worker registered with the runtime
  // (FpmEventSubscriber's get_recent_stats: the newest iteration per worker, an idle heartbeat if the
  // engine went idle). Ascending replica id.
  std::vector<ForwardPassMetrics> fpm;
};

// What the model's frontend counted over the window before the sync: the increases Dynamo's planner
// reads from Prometheus over its adjustment interval (monitoring/traffic_metrics.py). Histograms come
// as (sum, count) increases so that a mean over an empty window is undefined (NaN), as PromQL's is.
struct FrontendWindow {
  double seconds = 0;                      // the window (the planner's throughput_adjustment_interval)
  double requests_started = 0;             // increase(dynamo_frontend_requests_started_total)
  double isl_sum = 0, isl_count = 0;       // dynamo_frontend_input_sequence_tokens (tokens)
  double osl_sum = 0, osl_count = 0;       // dynamo_frontend_output_sequence_tokens (tokens)
  double ttft_sum_s = 0, ttft_count = 0;   // dynamo_frontend_time_to_first_token_seconds
  double itl_sum_s = 0, itl_count = 0;     // dynamo_frontend_inter_token_latency_seconds
  double duration_sum_s = 0, duration_count = 0;  // dynamo_frontend_request_duration_seconds
};

struct ServiceSnapshot {
  std::string model;               // the model all pools serve (WVA's modelID)
  std::vector<ServicePool> pools;  // every pool of the group, in a fixed order
  FrontendWindow frontend;         // over ServiceScaler::frontend_window() before now (zeros if it asks none)
};

struct ServiceDecision {
  // Per pool (the snapshot's order): set the Deployment's spec.replicas to this (Dynamo's operator
  // patching the DynamoGraphDeployment), or leave it.
  std::vector<std::optional<std::int32_t>> desired;
  // Per pool: External metrics the scaler publishes this sync (name, value), e.g. WVA's
  // wva_desired_replicas for the variant's HPA. Empty: nothing published (an HPA reading it fails).
  std::vector<std::vector<std::pair<std::string, double>>> published;
  std::vector<DecisionRecord> log;
};

class ServiceScaler {
 public:
  virtual ~ServiceScaler() = default;
  virtual const char* name() const = 0;
  virtual Micros period() const = 0;  // between syncs; the first sync is one period after the start
  // How far back the snapshot's FrontendWindow must reach (0: the scaler reads none).
  virtual Micros frontend_window() const { return 0; }
  virtual ServiceDecision sync(const ServiceSnapshot& snapshot, Micros now, const LogPolicy& log) = 0;
};

// Counts a pool's pods the way the controllers read a Deployment's status.
struct PoolCounts {
  std::int32_t spec = 0;         // spec.replicas
  std::int32_t existing = 0;     // status.replicas: pods not being deleted (Pending, Starting, Ready)
  std::int32_t ready = 0;        // status.readyReplicas
  std::int32_t terminating = 0;  // pods with a deletionTimestamp still finishing
};
PoolCounts pool_counts(const ScalerSnapshot& snapshot);

}  // namespace gpuscale
