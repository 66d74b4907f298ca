// The scenario: everything one simulation run needs, as plain structs with defaults and units.
// Loaded from JSON by parse_scenario (unknown keys rejected, errors name the JSON path);
// documented field by field in docs/scenario.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/json_reader.hpp"

namespace gpuscale {

// Size limits that keep any input from hanging the page or exhausting memory.
struct Limits {
  static constexpr double kMaxDurationS = 8 * 24 * 3600.0;      // seconds (a week plus a day)
  static constexpr double kMaxRateRps = 500.0;                 // requests/s in any phase
  static constexpr std::int64_t kMaxRequests = 2'000'000;      // expected arrivals over the run
  static constexpr std::int64_t kMaxReplicas = 256;            // replicas at once
  static constexpr std::int64_t kMaxTokens = 131'072;          // tokens per prompt or output
  static constexpr std::int64_t kMaxPhases = 1000;
  static constexpr std::int64_t kMaxRequestRecords = 200'000;  // per-request lifecycle rows returned
};

// A token-count distribution. Values outside [min, max] are redrawn (not clipped), up to 64 times,
// after which the bound is used; the schema says so.
struct TokenDistribution {
  std::string kind = "lognormal";  // "fixed" | "uniform" | "lognormal"
  double mean = 1000;              // tokens (fixed: the value; uniform: ignored)
  double cv = 0.5;                 // coefficient of variation (lognormal)
  std::int64_t min = 1;            // tokens
  std::int64_t max = 8192;         // tokens
};

struct Phase {
  double duration_s = 600;  // seconds
  double rate_rps = 0.1;    // requests/s (Poisson)
};

struct WorkloadConfig {
  std::string preset = "lesson_burst";  // "lesson_burst" | "steady" | "custom" (phases given)
  double rate_scale = 1.0;              // multiplies every phase's rate
  std::vector<Phase> phases;            // piecewise-constant Poisson rate; repeats to fill duration
  TokenDistribution prompt_tokens{"lognormal", 2000, 0.5, 32, 16384};
  TokenDistribution output_tokens{"lognormal", 300, 0.5, 8, 4096};
  double timeout_s = 30;  // seconds: a client that has no first token by then gives up (dropped)
};

struct EngineSettings {
  std::string profile = "llama-3.3-70b-fp8-tp2-h100-sxm5";
  std::int64_t max_num_seqs = 1024;            // sequences (vLLM default on H100, vllm serve)
  std::int64_t max_num_batched_tokens = 8192;  // tokens per step
  double gpu_memory_utilization = 0.9;         // fraction of GPU memory vLLM claims
  bool step_coalescing = true;                 // speed only: run runs of pure-decode steps as one event (same results)
};

struct ColdStartConfig {
  double node_provisioning_s = 60;  // seconds from Pending to a node with GPUs advertised
  double model_load_s = 90;         // seconds to load weights onto the GPUs
  double warmup_s = 30;             // seconds of engine init / CUDA-graph capture before Ready
  bool warm_nodes = false;          // true: a replica's node already exists (no provisioning wait)
};

struct MetricsConfig {
  double scrape_interval_s = 15;      // seconds between Prometheus scrapes
  double dcgm_sample_period_s = 1;    // seconds over which DCGM_FI_DEV_GPU_UTIL is measured
  double ttft_window_s = 60;          // seconds: window of the windowed TTFT p99 series
};

// The replica autoscaler. `strategy` picks a preset that expands into a real autoscaling/v2 HPA
// spec (or a KEDA ScaledObject's generated HPA); "custom" takes the spec as written.
struct AutoscalerConfig {
  std::string strategy = "queue_depth";  // "fixed" | "gpu_util" | "gpu_memory" | "queue_depth" | "kv_cache" | "custom"
  std::int64_t replicas = 1;             // replicas at start (and always, for "fixed")
  std::int64_t min_replicas = 1;         // replicas
  std::int64_t max_replicas = 16;        // replicas
  double target = 0;                     // strategy's target; 0 = the strategy's default (see docs)
  double sync_period_s = 15;             // seconds: --horizontal-pod-autoscaler-sync-period
  double tolerance = 0.1;                // --horizontal-pod-autoscaler-tolerance
  double downscale_stabilization_s = 300;  // seconds: --horizontal-pod-autoscaler-downscale-stabilization
  Json hpa_spec;                         // "custom": an autoscaling/v2 HorizontalPodAutoscalerSpec
  Json behavior;                         // optional HPA behavior for the presets (null = legacy path)
  // queue_depth only: the KEDA ScaledObject's own settings (real-systems.md §2). With minReplicaCount 0
  // the KEDA operator scales 0 ↔ 1 on activation; the HPA it generates scales 1 ↔ N.
  struct Keda {
    bool set = false;                    // an autoscaler.keda object was given
    std::int64_t min_replica_count = 1;  // minReplicaCount (the generated HPA gets max(1, this))
    double activation_threshold = 0;     // activationThreshold: active only if the value is strictly above
    double polling_interval_s = 30;      // pollingInterval: how often the operator checks activity
    double cooldown_period_s = 300;      // cooldownPeriod: inactive this long → scale to 0
  } keda;
};

// One range a startup phase's duration is drawn from (uniformly), seconds.
struct DurationRange {
  double min_s = 0;
  double max_s = 0;
};

// How long a new node takes: launch → registered (the instance boots and joins), registered →
// initialized (driver, device plugin: the GPUs are advertised). Presets: "lesson_karpenter" (45–60 s
// in all, the lesson's Karpenter figure), "lesson_cluster_autoscaler" (90–120 s, the lesson's CA
// figure), "real_world" (3–6 min boot and join plus 1–2 min for the GPU stack, real-systems.md §3.2).
struct NodeStartup {
  std::string preset = "lesson_karpenter";
  DurationRange launch_to_registered{35, 45};
  DurationRange registered_to_initialized{10, 15};
};

// A non-inference workload (e.g. a CPU web tier) that lives beside the replicas and can land on
// GPU nodes unless taints keep it off.
struct WorkloadPods {
  std::string name = "web";
  std::int64_t replicas = 0;
  Json pod;  // {cpu, memory, tolerations, nodeSelector, affinity} (validated at parse time)
};

struct InitialNodes {
  std::string instance_type = "p5.48xlarge";
  std::string capacity_type = "on-demand";
  std::string zone;      // "" = the type's first zone
  std::string owner;     // NodePool / node group; "" = the first one
  std::int64_t count = 1;
};

// Layer 1. "fixed" keeps the simple per-replica node delay of cold_start.node_provisioning_s (no
// cluster model); "karpenter" and "cluster_autoscaler" run nodes, pods and kube-scheduler.
struct ClusterConfig {
  std::string provisioner = "fixed";   // "fixed" | "karpenter" | "cluster_autoscaler"
  Json instance_types;                 // null = the default catalogue (data/instance-types.json)
  Json nodepools;                      // karpenter: an array of karpenter.sh/v1 NodePool objects
  Json cluster_autoscaler;             // cluster_autoscaler: {"flags": {...}, "nodeGroups": [...]}
  NodeStartup startup;
  std::vector<InitialNodes> initial_nodes;  // empty: enough of the first pool's/group's type for the starting replicas
  std::vector<WorkloadPods> workloads;
  Json inference_pod;                  // the replicas' pod: {cpu, memory, tolerations, nodeSelector, affinity, doNotDisrupt}
  Json inference_pdb;                  // a PodDisruptionBudget over the replicas' pods: {minAvailable|maxUnavailable} (null: none)
  bool retry_evicted_requests = false; // requests on an evicted replica: lost (false) or sent back to the gateway
  double spot_interruptions_per_node_hour = 0;  // rate of 2-minute spot interruption notices, per spot node-hour
  std::int64_t start_unix_s = 1767571200;  // wall clock (UTC) at t = 0, for budget schedules: 2026-01-05T00:00:00Z, a Monday
};

struct SloConfig {
  double ttft_s = 2.0;  // seconds: a request meets the SLO if TTFT <= this ...
  double itl_s = 0.1;   // seconds: ... and its mean inter-token latency <= this
};

struct CostConfig {
  double gpu_hour_usd = 6.88;  // USD per GPU-hour (p5.48xlarge on-demand $55.04/h ÷ 8, us-east-1)
};

struct OutputConfig {
  bool requests = false;   // include the per-request lifecycle
  bool decisions = true;   // include the decision log
  bool decision_detail = false;  // add each HPA sync's full structured decision (as `gpuscale hpa` prints it)
  std::string hpa_syncs = "all";  // "all" | "changes" (only syncs that changed the replica count) — long runs
};

struct Scenario {
  std::uint64_t seed = 1;
  double duration_s = 3600;  // seconds of simulated time
  std::string router = "least_outstanding";  // "least_outstanding" | "round_robin"
  WorkloadConfig workload;
  EngineSettings engine;
  ColdStartConfig cold_start;
  MetricsConfig metrics;
  AutoscalerConfig autoscaler;
  ClusterConfig cluster;
  SloConfig slo;
  CostConfig cost;
  OutputConfig output;
};

// Strict parse: unknown keys rejected, every value range-checked; throws InputError(path, message).
Scenario parse_scenario(const Json& doc);
Scenario parse_scenario_text(const std::string& text);
// The mean number of requests the workload sends over the run (rate × time over its phases).
double expected_arrivals(const Scenario& s);

// The workload's phases after the preset and rate_scale are applied.
std::vector<Phase> effective_phases(const WorkloadConfig& w);

// The knobs the page's playground builds controls from (path, label, type, default, range, unit).
Json scenario_schema();

}  // namespace gpuscale
