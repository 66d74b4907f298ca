// The scenario: everything one simulation run needs, as plain typed structs with defaults and units,
// parsed once at the boundary (parse_scenario: unknown keys rejected, every value range-checked, errors
// naming the JSON path). Nothing downstream reads JSON or compares domain strings. docs/scenario.md
// documents every field.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoscaling/hpa.hpp"
#include "autoscaling/service_scalers.hpp"
#include "autoscaling/strategies.hpp"
#include "cluster/instance_types.hpp"
#include "cluster/launch_failures.hpp"
#include "io/json_reader.hpp"
#include "k8s/pdb.hpp"
#include "k8s/pod.hpp"
#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scheduling/kai_scheduler.hpp"
#include "scheduling/kube_scheduler.hpp"
#include "serving/router.hpp"
#include "serving/workload.hpp"

namespace gpuscale {

// Size limits that keep any input from hanging the page or exhausting memory.
struct Limits {
  static constexpr double kMaxDurationS = 8 * 24 * 3600.0;      // seconds (a week plus a day)
  static constexpr double kMaxRateRps = 500.0;                 // requests/s in any phase
  static constexpr std::int64_t kMaxRequests = 2'000'000;      // expected arrivals over the run
  static constexpr std::int64_t kMaxReplicas = 256;            // replicas at once, per pool
  static constexpr std::int64_t kMaxTokens = 131'072;          // tokens per prompt or output
  static constexpr std::int64_t kMaxPhases = 1000;
  static constexpr std::int64_t kMaxRequestRecords = 200'000;  // per-request lifecycle rows returned
  static constexpr std::int64_t kMaxPools = 16;                // model-serving pools
};

// ---- a model-serving pool ----------------------------------------------------------------------------

struct EngineSettings {
  std::string profile = "llama-3.3-70b-fp8-tp2-h100-sxm5";  // a name of engine_profile_names()
  std::int64_t max_num_seqs = 1024;  // sequences (vLLM default on H100, vllm serve)
  std::int64_t max_num_batched_tokens = 8192;  // tokens per step
  double gpu_memory_utilization = 0.9;  // fraction of GPU memory vLLM claims
  bool step_coalescing = true;                 // speed only: run runs of pure-decode steps as one event (same results)
  // vLLM's --shutdown-timeout: on SIGTERM, 0 aborts every in-flight request at once (the default, and
  // all vLLM before it existed); N > 0 stops taking requests and lets those in flight finish for up to N s.
  double shutdown_timeout_s = 0;
};

struct ColdStartConfig {
  double node_provisioning_s = 60;  // seconds from Pending to a node with GPUs advertised (fixed-delay nodes)
  double model_load_s = 90;  // seconds to load weights onto the GPUs
  // Seconds the kubelet takes to pull the serving image onto a node that does not have it (cluster mode;
  // 0: the image is on every node, or its pull is part of model_load_s). A node keeps what it pulled.
  double image_pull_s = 0;
  double warmup_s = 30;         // seconds of engine init / CUDA-graph capture before Ready
  bool warm_nodes = false;          // true: a replica's node already exists (no provisioning wait)
};

// The KEDA ScaledObject's own settings (real-systems.md §2). With minReplicaCount 0 the KEDA operator
// scales 0 ↔ 1 on activation; the HPA it generates scales 1 ↔ N.
struct KedaConfig {
  bool set = false;                    // an autoscaler.keda object was given
  std::int64_t min_replica_count = 1;  // minReplicaCount (the generated HPA gets max(1, this))
  double activation_threshold = 0;     // activationThreshold: active only if the value is strictly above
  double polling_interval_s = 30;      // pollingInterval: how often the operator checks activity
  double cooldown_period_s = 300;      // cooldownPeriod: inactive this long → scale to 0
  bool scales_to_zero() const { return set && min_replica_count == 0; }
};

// The replica autoscaler. `strategy` picks a preset that expands into a real autoscaling/v2 HPA spec (or
// a KEDA ScaledObject's generated HPA); "custom" takes the spec as written.
struct AutoscalerConfig {
  ScalerStrategy strategy = ScalerStrategy::QueueDepth;
  std::int64_t replicas = 1;  // replicas at start (and always, for "fixed")
  std::int64_t min_replicas = 1;  // replicas
  std::int64_t max_replicas = 16;  // replicas
  double target = 0;     // strategy's target; 0 = the strategy's default (see docs)
  double sync_period_s = 15;  // seconds: --horizontal-pod-autoscaler-sync-period
  double tolerance = 0.1;                  // --horizontal-pod-autoscaler-tolerance
  double downscale_stabilization_s = 300;  // seconds: --horizontal-pod-autoscaler-downscale-stabilization
  // The HPA the strategy stands for (every strategy but "fixed"; "custom": the spec as written).
  std::optional<hpa::HorizontalPodAutoscalerSpec> hpa;
  KedaConfig keda;                         // the KEDA strategies only
  // Strategy "planner" / "wva": the model-level autoscaler's settings (autoscaler.planner /
  // autoscaler.wva), given on one pool of the model (the others of the model take the same).
  std::optional<ServiceScalerConfig> service;
};

enum class PoolRole : std::uint8_t { Aggregated, Prefill, Decode };
inline constexpr Named<PoolRole> kPoolRoles[] = {
    {"aggregated", PoolRole::Aggregated}, {"prefill", PoolRole::Prefill}, {"decode", PoolRole::Decode}};

// One model-serving Deployment: its role, engine, pod template, replica set, PodDisruptionBudget and scaler.
struct PoolConfig {
  std::string name = "vllm";      // the Deployment's name (its HPA's scaleTargetRef, its pods' prefix)
  std::string model;              // the served model name requests ask for ("" with a single pool)
  PoolRole role = PoolRole::Aggregated;  // prefill / decode: one half of a disaggregated model
  EngineSettings engine;
  double model_load_s = 90;       // seconds to load weights onto the GPUs
  double image_pull_s = 0;        // seconds to pull the image onto a node without it (ColdStartConfig)
  double warmup_s = 30;           // seconds of engine init / CUDA-graph capture before Ready
  AutoscalerConfig autoscaler;
  PodTemplate pod;                // the replicas' pod (its gpus = the engine profile's GPUs; with a LeaderWorkerSet, each member's)
  std::optional<PdbSpec> pdb;     // a PodDisruptionBudget over the pool's pods
  // Served by a LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) instead of a Deployment: each replica is a
  // group of group_size pods (the leader, then its workers), all from `pod`. It serves once every member
  // is Ready; with RecreateGroupOnPodRestart (LWS's default) losing one member recreates the group.
  bool leader_worker_set = false;
  int group_size = 1;
};

// ---- layer 1 -----------------------------------------------------------------------------------------

enum class ProvisionerKind : std::uint8_t { FixedDelay, Karpenter, ClusterAutoscaler };
inline constexpr Named<ProvisionerKind> kProvisionerKinds[] = {
    {"fixed", ProvisionerKind::FixedDelay}, {"karpenter", ProvisionerKind::Karpenter}, {"cluster_autoscaler", ProvisionerKind::ClusterAutoscaler}};

// One range a startup phase's duration is drawn from (uniformly), seconds.
struct DurationRange {
  double min_s = 0;
  double max_s = 0;
};

enum class StartupPreset : std::uint8_t { LessonKarpenter, LessonClusterAutoscaler, RealWorld, Custom };
inline constexpr Named<StartupPreset> kStartupPresets[] = {{"lesson_karpenter", StartupPreset::LessonKarpenter},
                                                           {"lesson_cluster_autoscaler", StartupPreset::LessonClusterAutoscaler},
                                                           {"real_world", StartupPreset::RealWorld},
                                                           {"custom", StartupPreset::Custom}};

// How long a new node takes: launch → registered (the instance boots and joins), registered → ready
// (the kubelet reports Ready once the runtime and CNI are up: the node.kubernetes.io/not-ready taint
// goes), registered → initialized (driver, device plugin: the GPUs are advertised; never before Ready). Presets: "lesson_karpenter" (45–60 s
// in all, the lesson's Karpenter figure), "lesson_cluster_autoscaler" (90–120 s, the lesson's CA
// figure), "real_world" (3–6 min boot and join plus 1–2 min for the GPU stack, real-systems.md §3.2).
struct NodeStartup {
  StartupPreset preset = StartupPreset::LessonKarpenter;
  DurationRange launch_to_registered{35, 45};
  DurationRange registered_to_ready{5, 10};
  DurationRange registered_to_initialized{10, 15};
};

// A non-inference workload (e.g. a CPU web tier) that lives beside the replicas and can land on GPU
// nodes unless taints keep it off.
struct WorkloadPods {
  std::string name = "web";
  std::int64_t replicas = 0;
  PodTemplate pod;  // defaults 1 CPU, 2 GiB
};

// Nodes that exist at t = 0 (Initialized), with their owner's template labels and taints.
struct InitialNodes {
  int type_index = 0;  // into ClusterConfig::instance_types
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;    // "" = the type's first zone
  std::string owner;   // the NodePool or node group
  std::int64_t count = 1;
};

// The cloud takes back spot capacity (/cluster/spot_reclaims): at `at`, ceil(fraction × n) of the n
// spot instances of the type (every type if empty), oldest first, get their 2-minute interruption notice.
struct SpotReclaim {
  Micros at = 0;
  std::string instance_type;
  double fraction = 1;
};

// Layer 1. kFixedDelay keeps the simple per-replica node delay of cold_start.node_provisioning_s (no
// cluster model); Karpenter and Cluster Autoscaler run nodes, pods and kube-scheduler.
struct ClusterConfig {
  ProvisionerKind provisioner = ProvisionerKind::FixedDelay;
  std::vector<InstanceType> instance_types;    // the default catalogue (data/instance-types.json) unless given
  std::vector<NodePool> nodepools;             // Karpenter: the NodePools as given
  ClusterAutoscalerConfig cluster_autoscaler;  // Cluster Autoscaler: flags and node groups
  NodeStartup startup;
  std::vector<InitialNodes> initial_nodes;     // as given (empty: enough of the first pool's/group's type for the starting replicas)
  std::vector<WorkloadPods> workloads;
  bool retry_evicted_requests = false;         // requests on an evicted replica: lost (false) or sent back to the gateway
  double spot_interruptions_per_node_hour = 0;  // rate of 2-minute spot interruption notices, per spot node-hour
  // Per offering, the probability that a launch attempt is refused with InsufficientInstanceCapacity
  // (/cluster/insufficient_capacity; empty: every launch succeeds).
  std::vector<InsufficientCapacityRate> insufficient_capacity;
  std::vector<SpotReclaim> spot_reclaims;
  // KAI Scheduler, for the pods whose schedulerName is kai-scheduler (/cluster/kai): its settings, Queue
  // and Topology CRs and cycle period. Without queues, the default install's two.
  KaiSchedulerConfig kai{KaiSettings{}, default_kai_queues(), {}, 1.0};
  // kube-scheduler's default-scheduler profile (/cluster/kube_scheduler, a KubeSchedulerConfiguration).
  KubeSchedulerConfig kube_scheduler;
  std::int64_t start_unix_s = 1767571200;      // wall clock (UTC) at t = 0, for budget schedules: 2026-01-05T00:00:00Z, a Monday
};

// ---- measurement and output --------------------------------------------------------------------------

// How a metric reaches a query (docs/scenario.md, "The metric pipeline"). Realistic: dcgm-exporter
// collects on its own clock, Prometheus scrapes each target at its own phase, an instant query returns
// the last scraped sample. Ideal: every replica read at one scrape that the syncs at that instant see
// with no lag (the lab before the pipeline was modelled; kept to compare against).
enum class MetricsPipeline : std::uint8_t { Realistic, Ideal };
inline constexpr Named<MetricsPipeline> kMetricsPipelines[] = {{"realistic", MetricsPipeline::Realistic}, {"ideal", MetricsPipeline::Ideal}};

struct MetricsConfig {
  double scrape_interval_s = 15;  // seconds between Prometheus scrapes (of each target; the series' row period)
  double dcgm_sample_period_s = 1;  // seconds over which DCGM_FI_DEV_GPU_UTIL is measured
  double ttft_window_s = 60;        // seconds: window of the windowed TTFT p99 series
  MetricsPipeline pipeline = MetricsPipeline::Realistic;
  // Realistic only:
  double dcgm_collect_interval_s = 30;         // seconds: dcgm-exporter's -c / --collect-interval (default 30000 ms)
  std::optional<double> scrape_offset_s;       // seconds into each interval every target is scraped at; unset: seeded per target
  std::optional<double> dcgm_collect_offset_s;  // seconds into each collect interval of every exporter; unset: seeded per exporter
  double query_delay_s = 0;                    // seconds from a sample's scrape until a query can see it
};

struct SloConfig {
  double ttft_s = 2.0;  // seconds: a request meets the SLO if TTFT <= this ...
  double itl_s = 0.1;   // seconds: ... and its mean inter-token latency <= this
};

struct CostConfig {
  double gpu_hour_usd = 6.88;  // USD per GPU-hour (p5.48xlarge on-demand $55.04/h ÷ 8, us-east-1)
};

enum class HpaSyncLog : std::uint8_t { All, Changes };
inline constexpr Named<HpaSyncLog> kHpaSyncLogs[] = {{"all", HpaSyncLog::All}, {"changes", HpaSyncLog::Changes}};

struct OutputConfig {
  bool requests = false;         // include the per-request lifecycle
  bool decisions = true;         // include the decision log
  bool decision_detail = false;  // add each HPA sync's full structured decision (as `gpuscale hpa` prints it)
  bool cluster_series = false;   // cluster mode: add the per-scrape cluster columns (free GPUs per node, NodePool usage, KAI queues)
  HpaSyncLog hpa_syncs = HpaSyncLog::All;  // Changes: only syncs that changed the replica count (long runs)
};

// How the gateway picks a replica among the Ready ones of the pools that serve a request's model in
// its role: least outstanding requests, round robin, or an llm-d-like endpoint picker (serving/router.hpp).
enum class Router : std::uint8_t { LeastOutstanding, RoundRobin, Epp };
inline constexpr Named<Router> kRouters[] = {
    {"least_outstanding", Router::LeastOutstanding}, {"round_robin", Router::RoundRobin}, {"epp", Router::Epp}};

// How a request's KV cache moves from its prefill replica to its decode replica (NIXL): over NVLink
// when both are on one node, else over the node's network (RDMA: EFA on AWS), each of the sender's
// GPUs sending its shard in parallel; plus a fixed latency per transfer.
struct KvTransferConfig {
  double nvlink_gb_per_s = 450;   // GB/s per GPU, one direction: H100 NVLink 4, 18 links of 25 GB/s
  // GB/s per GPU across nodes; 0: the node's network bandwidth (the instance catalogue's) shared by
  // its GPUs (p5.48xlarge: 3,200 Gbps EFA over 8 GPUs = 50 GB/s), or 50 without a cluster model.
  double network_gb_per_s = 0;
  double latency_s = 0.001;       // seconds per transfer: the request and completion notification round trip
};

// A model-level autoscaler and the pools it decides for: a Dynamo-like planner over a model's pools
// whose strategy is "planner" (its mode from their roles: disagg, prefill, decode or agg), or a WVA over
// the pools of a model in one role whose strategy is "wva" (its variants).
struct ServiceGroupConfig {
  std::string model;
  std::vector<int> pools;  // in the scenario's order
  ServiceScalerConfig config;
};

struct Scenario {
  std::uint64_t seed = 1;
  double duration_s = 3600;  // seconds of simulated time
  Router router = Router::LeastOutstanding;
  EppConfig epp;                  // router "epp": its EndpointPickerConfig
  KvTransferConfig kv_transfer;   // disaggregated pools: prefill → decode
  WorkloadConfig workload;
  ColdStartConfig cold_start;   // node_provisioning_s and warm_nodes: the fixed-delay node layer
  std::vector<PoolConfig> pools;  // at least one; a scenario without "pools" is one aggregated pool
  std::vector<ServiceGroupConfig> service_groups;  // from the pools' strategies "planner" and "wva"
  bool pools_declared = false;  // the scenario listed "pools": results report each pool
  MetricsConfig metrics;
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
// Per pool, the fraction of the requests it serves: its model's share, split evenly among the pools of
// the model in one role (variants); a request goes through a prefill pool and a decode pool.
std::vector<double> pool_request_shares(const Scenario& s);
// The pools that serve `model` in `role`, in the scenario's order.
std::vector<int> pools_serving(const Scenario& s, const std::string& model, PoolRole role);
// Whether the model is served disaggregated (prefill and decode pools).
bool disaggregated(const Scenario& s, const std::string& model);

// The named layer-1 setups of `cluster.preset` (data/cluster-presets.json, embedded): an array of
// {name, label, cluster}, where `cluster` is a scenario's cluster object.
const Json& cluster_presets();

// The knobs the page's playground builds controls from (path, label, type, default, range, unit): the
// same table the parser's ranges come from.
Json scenario_schema();

}  // namespace gpuscale
