// Cluster Autoscaler (kubernetes/autoscaler) as a NodeProvisioner: node groups of one instance type
// each (as ASGs are), a loop every --scan-interval that scales up for unschedulable pods through an
// expander and scales down unneeded nodes, with the real flag names and defaults (real-systems.md §4).
// The decisions are pure functions over a ClusterState, exposed for the tests; the class only keeps the
// timers (unneeded-since, last scale-up / delete, node-group backoff) between scans.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster_state.hpp"
#include "io/json_reader.hpp"
#include "provisioning/provisioner.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// --expander's strategies (expander/*), chained in the order given.
enum class Expander : std::uint8_t { LeastWaste, Random, MostPods, Price, Priority };
inline constexpr Named<Expander> kExpanders[] = {{"least-waste", Expander::LeastWaste},
                                                 {"random", Expander::Random},
                                                 {"most-pods", Expander::MostPods},
                                                 {"price", Expander::Price},
                                                 {"priority", Expander::Priority}};
inline const char* to_string(Expander e) { return name_of(e, kExpanders); }

// The flags the lab accepts, by their real names (docs/cluster-autoscaler.md). Durations in µs.
struct ClusterAutoscalerFlags {
  Micros scan_interval = 10 * kMicrosPerSecond;                       // --scan-interval
  std::vector<Expander> expanders = {Expander::LeastWaste};           // --expander (comma-separated chain)
  bool scale_down_enabled = true;                                     // --scale-down-enabled
  double scale_down_utilization_threshold = 0.5;                      // --scale-down-utilization-threshold (fraction)
  double scale_down_gpu_utilization_threshold = 0.5;                  // --scale-down-gpu-utilization-threshold (fraction)
  Micros scale_down_unneeded_time = 600 * kMicrosPerSecond;           // --scale-down-unneeded-time
  Micros scale_down_delay_after_add = 600 * kMicrosPerSecond;         // --scale-down-delay-after-add
  Micros scale_down_delay_after_delete = 0;                           // --scale-down-delay-after-delete
  Micros scale_down_delay_after_failure = 180 * kMicrosPerSecond;     // --scale-down-delay-after-failure
  Micros max_pod_eviction_time = 120 * kMicrosPerSecond;              // --max-pod-eviction-time: a drain gives up after this
  Micros scale_down_unready_time = 1200 * kMicrosPerSecond;           // --scale-down-unready-time
  Micros max_node_provision_time = 900 * kMicrosPerSecond;            // --max-node-provision-time
  int max_scale_down_parallelism = 10;                                // --max-scale-down-parallelism (nodes)
  int max_drain_parallelism = 1;                                      // --max-drain-parallelism (nodes)
  double max_total_unready_percentage = 45;                           // --max-total-unready-percentage (%)
  int ok_total_unready_count = 3;                                     // --ok-total-unready-count (nodes)
  int max_graceful_termination_sec = 600;                             // --max-graceful-termination-sec (seconds)
  Micros initial_node_group_backoff_duration = 300 * kMicrosPerSecond;  // --initial-node-group-backoff-duration
  Micros max_node_group_backoff_duration = 1800 * kMicrosPerSecond;     // --max-node-group-backoff-duration
  Micros node_group_backoff_reset_timeout = 3 * 3600 * kMicrosPerSecond;  // --node-group-backoff-reset-timeout
};

// One node group (an ASG): one instance type, one capacity type, one zone.
struct NodeGroup {
  std::string name;                    // the ASG / managed node group name; Node::owner of its nodes
  std::string instance_type;           // e.g. "p5.48xlarge" (must be in the catalogue)
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;                    // "" = the type's first zone
  int min_size = 0;                    // nodes
  int max_size = 1;                    // nodes
  Labels labels;                       // node template labels (ASG tag k8s.io/cluster-autoscaler/node-template/label/...)
  std::vector<Taint> taints;           // node template taints (ASG tag .../node-template/taint/...)
  int priority = 0;                    // for --expander=priority (stands in for the priority-expander ConfigMap)
};

struct ClusterAutoscalerConfig {
  ClusterAutoscalerFlags flags;
  std::vector<NodeGroup> node_groups;  // in this order everywhere (logs, ties)
};

// Parses {"flags": {"--scan-interval": "10s", ...}, "nodeGroups": [{"name", "instanceType",
// "capacityType", "zone", "minSize", "maxSize", "labels", "taints", "priority"}, ...]}. Durations are
// Go durations as CA takes them ("10m", "1m30s", "0"); numbers and booleans as JSON values or as the
// command-line text ("0.5", "true"). Unknown flags and fields are InputErrors naming the JSON path and
// listing what is accepted.
ClusterAutoscalerConfig parse_cluster_autoscaler(const Json& doc, const std::string& path);
// Checks every group's instanceType is in `types` and its zone is one the type is offered in
// (errors name path + "/nodeGroups/<i>/...").
void check_node_groups(const ClusterAutoscalerConfig& config, const std::vector<InstanceType>& types,
                       const std::string& path);

// ---- pure decisions -------------------------------------------------------------------------------

// How CA's cluster-state registry sees a node at `now`.
enum class CaNodeState : std::uint8_t {
  Ready,              // registered and ready (GPU nodes: GPUs advertised)
  Upcoming,           // launched, or registered with the GPU label and 0 allocatable GPUs (ResourceUnready),
                      // within --max-node-provision-time of its launch: counted as capacity on its way
  Unready,            // registered, still no GPUs after --max-node-provision-time
  LongUnregistered,   // still Launched after --max-node-provision-time: to be removed
  Deleting,           // Terminating
  Gone,               // Terminated
};
CaNodeState ca_node_state(const Node& node, const ClusterAutoscalerFlags& flags, Micros now);
// True if the node carries the cloud provider's GPU label (AWS: k8s.amazonaws.com/accelerator).
bool has_gpu_label(const Node& node);

// Scale-down utilisation: GPU nodes (GPU label) count only nvidia.com/gpu requested / allocatable
// against --scale-down-gpu-utilization-threshold; other nodes max(cpu, memory) requested /
// allocatable against --scale-down-utilization-threshold. Below the threshold (strictly) = underutilised.
struct NodeUtilization {
  bool gpu = false;
  std::string resource;     // "nvidia.com/gpu" | "cpu" | "memory": the one that decided
  double utilization = 0;   // fraction of allocatable requested
  double threshold = 0;
  bool underutilized = false;
  std::string explanation;  // "GPU 3/8 = 0.375 < 0.5"
};
NodeUtilization node_utilization(const Node& node, const ClusterAutoscalerFlags& flags);

// One node group's answer to the pending pods: how many new nodes first-fit needs, which pods they
// take, and the expander scores.
struct ScaleUpOption {
  int group = -1;                      // index into ClusterAutoscalerConfig::node_groups
  int type_index = -1;                 // into ClusterState::types
  int node_count = 0;                  // new nodes (≤ max_size − current size)
  std::vector<std::uint32_t> pods;     // pods placed on them
  int gpus_requested = 0;              // Σ requests of those pods
  std::int64_t cpu_requested_milli = 0, memory_requested_mib = 0;
  double waste = 0;                    // least-waste: idle cpu + idle memory (+ idle GPU) fractions
  double price_usd_per_hour = 0;       // node_count × the group's hourly price
};

struct ScaleUpPlan {
  int fit_existing = 0;                      // pending pods that fit registered nodes (the scheduler's to bind)
  int fit_upcoming = 0;                      // pending pods that fit nodes still coming up
  std::vector<std::uint32_t> pods_to_help;   // pending pods left after existing and upcoming nodes took theirs
  std::vector<ScaleUpOption> options;        // groups that can place at least one of them, nodeGroups order
  int chosen = -1;                           // index into options, -1: no scale-up
  std::string explanation;                   // per-group arithmetic and the expander's choice
};

// Pending pods → the scale-up CA would do. `backoff_until[g]` > now skips group g. `tie` breaks ties
// (and drives --expander=random): the (tie mod n)-th remaining option.
ScaleUpPlan plan_scale_up(const ClusterState& cluster, const ClusterAutoscalerConfig& config,
                          const std::vector<std::uint32_t>& pending, Micros now,
                          const std::vector<Micros>& backoff_until, std::uint64_t tie);
// Applies the --expander chain to options (each expander keeps its best, ties kept); the index chosen.
int choose_option(const std::vector<ScaleUpOption>& options, const ClusterAutoscalerConfig& config,
                  std::uint64_t tie, std::string& explanation);

// One scale-down candidate (a Ready or Unready node of a node group) and whether it is unneeded now.
struct ScaleDownCandidate {
  std::uint32_t node = 0;
  int group = -1;
  bool ready = true;        // false: Unready (the --scale-down-unready-time clock applies)
  bool empty = true;        // no pods to move
  NodeUtilization utilization;
  bool unneeded = false;    // underutilised and every pod can move
  std::string reason;       // when not unneeded: "NotUnderutilized" | "NotSafeToEvictAnnotation" | "NoPlaceToMovePods"
  std::string explanation;
};
// Every candidate in node-id order. A node found unneeded stops being a destination for later ones.
std::vector<ScaleDownCandidate> find_unneeded_nodes(const ClusterState& cluster, const ClusterAutoscalerConfig& config,
                                                    Micros now);

// ---- the controller -------------------------------------------------------------------------------

class ClusterAutoscaler : public NodeProvisioner {
 public:
  explicit ClusterAutoscaler(ClusterAutoscalerConfig config);

  const char* name() const override { return "cluster-autoscaler"; }
  void on_unschedulable(const ClusterState& cluster, std::uint32_t pod, Micros now) override;
  // The next scan: 0 before the first, then last scan + --scan-interval.
  Micros next_wakeup() const override { return next_scan_; }
  // One RunOnce: registration timeouts, the health check, scale-up, then (if nothing scaled up)
  // scale-down.
  void wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) override;
  // RegisterFailedScaleDown: scale-down pauses for --scale-down-delay-after-failure.
  void on_drain_failed(std::uint32_t node, Micros now) override;
  // The ASG could not launch (InsufficientInstanceCapacity, an OutOfResources instance error): the scale-up
  // failed and the node group backs off (RegisterFailedScaleUp) at the next scan, when CA sees it.
  void on_insufficient_capacity(const LaunchOutcome& outcome, Micros now) override;

  const ClusterAutoscalerConfig& config() const { return config_; }
  const std::vector<std::uint32_t>& unschedulable_pods() const { return pending_; }
  const std::map<std::uint32_t, Micros>& unneeded_since() const { return unneeded_since_; }
  Micros last_scale_up_at() const { return last_scale_up_; }               // -1: never
  Micros last_scale_down_delete_at() const { return last_scale_down_delete_; }  // -1: never
  Micros backoff_until(int group) const { return backoff_until_.at(static_cast<std::size_t>(group)); }

 private:
  void back_off(int group, Micros now, const std::string& reason, const std::string& why, std::vector<ProvisionerLog>& log);
  void scale_down(const ClusterState& cluster, Micros now, ProvisionerActions& out);
  void note(std::uint32_t node, const std::string& status, ProvisionerLog log, ProvisionerActions& out);

  ClusterAutoscalerConfig config_;
  std::map<std::string, int> group_index_;
  Micros next_scan_ = 0;
  std::vector<std::uint32_t> pending_;             // pods marked unschedulable and not yet bound, by id
  std::map<std::uint32_t, Micros> unneeded_since_;
  Micros last_scale_up_ = -1;
  Micros last_scale_down_delete_ = -1;
  Micros last_scale_down_failure_ = -1;
  std::uint64_t scale_ups_ = 0;
  std::vector<Micros> backoff_until_;              // per group
  std::vector<Micros> backoff_duration_;           // per group: the last backoff's length
  std::vector<Micros> last_failure_;               // per group, -1: none
  std::vector<std::uint32_t> timed_out_;           // nodes whose provision time already ran out
  std::map<std::uint32_t, std::string> node_status_;  // last logged scale-down status per node
  std::string last_scale_up_log_;
  std::vector<int> failed_groups_;                 // groups whose launch the cloud refused since the last scan
  bool halted_ = false;
};

}  // namespace gpuscale
