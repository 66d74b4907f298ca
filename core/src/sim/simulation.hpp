// One run of the coupled system: workload → router → pools of replica engines, metrics scrape, the
// pools' replica scalers, the schedulers and the node provisioner, on one event queue. Returns
// everything the caller may want: summary, time series, decision log, per-request lifecycles, in total
// and per pool.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/cluster_model.hpp"
#include "gpuscale/json.hpp"
#include "kernel/decision_log.hpp"
#include "kernel/time.hpp"
#include "scenario/scenario.hpp"
#include "sim/budget.hpp"

namespace gpuscale {

// Why a request failed. A pod termination's cause is whoever deleted the pod: the ReplicaSet (the
// autoscaler lowered the count), Karpenter's consolidation (Empty or Underutilized), Cluster
// Autoscaler's scale-down, expiry (expireAfter), drift, a spot interruption; or any other node removal.
enum class FailureCause : std::uint8_t { ClientTimeout, ScaleDown, Consolidation, NodeScaleDown, Expiry, Drift, Spot, NodeRemoved, Preemption };
inline constexpr int kNumFailureCauses = 9;
inline constexpr Named<FailureCause> kFailureCauses[] = {
    {"client_timeout", FailureCause::ClientTimeout}, {"scale_down", FailureCause::ScaleDown},
    {"consolidation", FailureCause::Consolidation},  {"node_scale_down", FailureCause::NodeScaleDown},
    {"expiry", FailureCause::Expiry},                {"drift", FailureCause::Drift},
    {"spot", FailureCause::Spot},                    {"node_removed", FailureCause::NodeRemoved},
    {"preemption", FailureCause::Preemption}};
inline const char* to_string(FailureCause c) { return name_of(c, kFailureCauses); }
// A node removal's reason as the cause of the requests its pods' terminations fail.
FailureCause failure_cause_of(RemovalReason reason);
// Causes of an eviction: a node removal or a scheduler's preemption (every one but the client's timeout
// and the ReplicaSet's scale-down).
inline bool is_node_cause(FailureCause c) { return c != FailureCause::ClientTimeout && c != FailureCause::ScaleDown; }

// One request's lifecycle (times in seconds since the start; absent = never happened).
struct RequestRecord {
  std::uint32_t id = 0;
  double arrived_at = 0;
  std::optional<double> scheduled_at;    // handed by the router to a replica's engine
  std::optional<double> first_token_at;
  std::optional<double> completed_at;
  std::optional<double> dropped_at;      // the client gave up (no first token within timeout_s) or its replica went away
  FailureCause failed_by = FailureCause::ClientTimeout;  // why it was dropped (only with dropped_at)
  std::optional<double> rejected_at;     // the replica's server refused it at once: prompt + output > max_model_len (HTTP 400)
  std::int32_t pool = 0;                 // the pool serving its model (disaggregated: the one holding it now)
  std::int32_t replica = -1;             // the replica in that pool
  std::int32_t prompt_tokens = 0;        // the whole prompt, its shared prefix included
  std::int32_t output_tokens = 0;
  std::int32_t model = 0;                // the workload's model index
  std::uint32_t prefix_id = 0;           // the shared prefix it opens with (0: none)
  std::int32_t prefix_tokens = 0;
  // Disaggregated serving: where its prompt was computed, when its prefill engine sampled the one token
  // (PrefillDone), when a decode replica took it and when its KV had arrived there, the transfer's
  // length; while kv_held its prefill replica keeps its KV (until the decode side has read it).
  std::int32_t prefill_pool = -1, prefill_replica = -1;
  std::optional<double> prefill_done_at, decode_scheduled_at, kv_loaded_at;
  double kv_transfer_s = 0;
  bool kv_held = false;
};

// Every reported quantity is defined once, here.
struct Summary {
  std::int64_t num_requests = 0;     // arrivals within the run
  std::int64_t num_completed = 0;    // last token produced
  std::int64_t num_dropped = 0;      // given up by the client, or lost with a replica (Σ requests_failed_by_cause)
  std::int64_t requests_failed_by_cause[kNumFailureCauses] = {};  // num_dropped by FailureCause
  std::int64_t num_unfinished = 0;   // still in flight when the run ended
  std::int64_t num_rejected = 0;     // refused by the replica's server at once (HTTP 400: prompt + output > max_model_len)
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;  // over requests that got a first token (nearest rank)
  double itl_mean_s = 0;             // mean over completed requests of (completed - first token) / (output - 1)
  double e2e_p50_s = 0, e2e_p99_s = 0;  // arrival → last token, completed requests
  double slo_attainment = 0;         // completed within the TTFT and ITL SLO / all requests
  double goodput_rps = 0;            // completed within the SLO per second of run
  double gpu_hours = 0;              // GPUs held by replicas (created → gone), in hours
  double idle_gpu_minutes = 0;       // GPUs of Ready replicas with nothing waiting or running, in minutes
  double cost_usd = 0;               // gpu_hours × gpu_hour_usd; with a cluster model, the run's node cost
  std::int64_t peak_replicas = 0;    // most replicas existing at once (any state but gone)
  double mean_replicas = 0;          // time-weighted mean of the same
  std::int64_t num_preemptions = 0;  // vllm:num_preemptions summed over replicas
  std::int64_t num_scale_events = 0; // times an autoscaler changed the replica count
  std::int64_t num_replica_evictions = 0;            // replicas lost to node removals (each pays a full cold start)
  std::int64_t replica_evictions_by_reason[kNumRemovalReasons] = {};  // the same by the removal's reason (Underutilized, Expired, Interrupted …)
  std::int64_t num_requests_failed_by_eviction = 0;  // requests failed by node removals (Σ of the node causes of requests_failed_by_cause)
  double partial_group_gpu_hours = 0;  // GPU-hours held by the bound pods of LeaderWorkerSet groups not yet wholly placed
  double time_to_ready_mean_s = 0;   // replicas created during the run that became Ready: creation → Ready, mean
  double time_to_ready_max_s = 0;    // and the longest
  double ttft_spike_minutes = 0;     // scrape intervals whose windowed P99 TTFT was above 10 s, in minutes
  std::int64_t ttft_breach_hours = 0;  // clock hours whose P99 TTFT (requests arriving in the hour that got a first token, nearest rank) > 10 s
  ClusterTotals cluster;             // layer 1 (all 0 with fixed-delay nodes): node-hours, node cost, GPU-hours paid and used, ...
  // Disaggregated serving (reported when some request was handed from a prefill to a decode pool):
  // arrival → its prefill's one token, prefill done → its KV at the decode replica (waiting for
  // decode blocks, then the transfer), and the transfers alone.
  struct Handoffs {
    std::int64_t count = 0;
    double prefill_p50_s = 0, prefill_p99_s = 0, kv_wait_p50_s = 0, kv_wait_p99_s = 0, kv_transfer_mean_s = 0;
  } handoffs;
  // Shared prefixes (reported when the workload has them): vllm:prefix_cache_queries / hits, tokens.
  std::int64_t prefix_cache_queries = 0, prefix_cache_hits = 0;
};

// Columns sampled at every scrape.
struct Series {
  std::vector<double> t_s;
  std::vector<std::int32_t> desired_replicas, ready_replicas;
  std::vector<std::int32_t> num_requests_waiting, num_requests_running;  // summed over ready replicas
  std::vector<double> kv_cache_usage_perc;   // mean over ready replicas (fraction 0-1)
  std::vector<double> gpu_util;              // DCGM_FI_DEV_GPU_UTIL mean over replicas with GPUs (percent)
  std::vector<double> fb_used_mib;           // DCGM_FI_DEV_FB_USED mean over replicas with GPUs (MiB per GPU)
  std::vector<double> ttft_p99_s;            // p99 TTFT of first tokens in the last ttft_window_s
  std::vector<std::int64_t> num_dropped;     // cumulative drops
  std::vector<double> arrival_rate_rps;      // arrivals since the previous scrape / interval
  std::vector<std::int32_t> nodes;           // cluster mode: nodes not yet terminated (empty otherwise)
};

// Cluster mode with output.cluster_series: what an operator's dashboards show of the node and pod
// layers, one row per scrape (at the series' t_s). Defined here once; the diagnosis view reads it.
struct ClusterSeries {
  struct NodeColumn {
    std::uint32_t id = 0;
    std::string instance_type, capacity_type, zone, owner;  // owner: the NodePool or node group
    int gpus = 0;                                           // the type's GPUs
    std::vector<std::int32_t> gpus_free;  // allocatable − requested nvidia.com/gpu; -1: not in the cluster or no GPUs advertised yet
  };
  struct PoolColumn {
    std::string name;
    std::int64_t limit_gpus = -1;     // spec.limits nvidia.com/gpu; -1: none
    std::vector<std::int64_t> gpus;   // the pool's usage as Karpenter counts it (its nodes' capacity, in-flight included)
  };
  struct QueueColumn {
    std::string name;
    double quota = 0, limit = 0;      // spec.resources.gpu (-1: unlimited)
    std::vector<double> deserved, fair_share, allocated, requested;  // GPUs, as of KAI's last cycle
  };
  std::vector<NodeColumn> nodes;                // every node the run had, by id
  std::vector<std::int32_t> pods_pending;       // pods not bound (not deleted)
  std::vector<std::int32_t> pods_unschedulable; // of them, marked PodScheduled=False reason Unschedulable
  std::vector<std::int32_t> nodeclaims_launched;  // nodes launched so far (cumulative; the run's initial nodes are not launched)
  std::vector<std::int32_t> nodeclaims_pending;   // launched, not yet Initialized
  std::vector<PoolColumn> nodepools;            // Karpenter's NodePools
  std::vector<QueueColumn> kai_queues;          // KAI's queues (when a pod names kai-scheduler)
  std::size_t rows = 0;
};

// One pool's share of the run (the totals are over every pool).
struct PoolResult {
  std::string name;
  Summary summary;  // its requests and replicas (cluster totals stay in the run's summary)
  Series series;    // its replicas (no node column)
};

struct RunResult {
  Summary summary;
  Series series;
  std::vector<PoolResult> pools;         // per pool, in the scenario's order
  ClusterSeries cluster_series;          // only with output.cluster_series (cluster mode)
  std::vector<DecisionRecord> decisions;  // bounded: DecisionLog folds repeats, then stops keeping
  DecisionLogStats decision_log;          // what it folded or did not keep
  std::vector<RequestRecord> requests;   // always kept; exported only if output.requests
  std::int64_t num_events = 0;           // events processed (for benchmarks)
  WorkCounts work;                       // what the work budget counted (sim/budget.hpp; benchmarks, not in the JSON)
};

// Progress from inside a run: `at` is called with the simulated time (seconds) each time the clock
// passes a multiple of every_s (not at 0; at most 1,000 calls a run). Empty `at`: no reports. It
// observes only; the run is the same with or without it.
struct ProgressReport {
  double every_s = 0;
  std::function<void(double t_s)> at;
};

// Refuses (InputError) a scenario past the work budget, before and while it runs (sim/budget.hpp).
RunResult run_simulation(const Scenario& scenario, const WorkLimits& limits = {}, const ProgressReport& progress = {});
Json result_to_json(const RunResult& result, const Scenario& scenario);

}  // namespace gpuscale
