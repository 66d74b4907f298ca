// Node provisioning behind one interface. The simulation tells a provisioner when pods become
// unschedulable and wakes it when it asks; the provisioner reads the ClusterState and returns
// launches and removals with the reasons, which the simulation applies and logs. Implementations:
// FixedDelayProvisioner (below), Karpenter (karpenter.hpp), Cluster Autoscaler (cluster_autoscaler.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster_state.hpp"
#include "io/json_reader.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// One launchable offering: what the cloud is asked for.
struct LaunchOption {
  int type_index = 0;  // into ClusterState::types
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;
};

struct NodeLaunch {
  std::string owner;                 // NodePool or node group
  int type_index = 0;                // into ClusterState::types
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;
  Labels labels;                     // template labels (well-known labels are added by the simulation)
  std::vector<Taint> taints;
  std::vector<Taint> startup_taints; // removed when the node is initialized
  Micros expire_after = -1;          // µs after launch; -1: never
  std::int32_t replaces = -1;        // the node this launch replaces (consolidation), -1: none
  // Further offerings the cloud may launch instead, in order, when it refuses the one above with
  // InsufficientInstanceCapacity (Karpenter's CreateFleet overrides: the NodeClaim's other options of the
  // same capacity type). Empty: this offering or nothing (a Cluster Autoscaler node group).
  std::vector<LaunchOption> fallbacks;
};

// What the cloud did with a launch: the offerings it refused (InsufficientInstanceCapacity), in the order
// tried, and whether some offering was launched (node: its id) or none (node -1).
struct LaunchOutcome {
  NodeLaunch launch;
  std::vector<LaunchOption> refused;
  std::int32_t node = -1;
};

// Why a node goes (Karpenter's disruption reasons and the others that remove a node), or, Preempted, why a
// scheduler deleted one pod to make room (KAI's evictions: the DisruptionTarget reason PreemptionByScheduler).
enum class RemovalReason : std::uint8_t { Empty, Underutilized, Drifted, Expired, Interrupted, ScaleDown, RegistrationTimeout, Drain, Preempted };
inline constexpr int kNumRemovalReasons = 9;
inline constexpr Named<RemovalReason> kRemovalReasons[] = {
    {"Empty", RemovalReason::Empty},         {"Underutilized", RemovalReason::Underutilized},
    {"Drifted", RemovalReason::Drifted},     {"Expired", RemovalReason::Expired},
    {"Interrupted", RemovalReason::Interrupted}, {"ScaleDown", RemovalReason::ScaleDown},
    {"RegistrationTimeout", RemovalReason::RegistrationTimeout}, {"Drain", RemovalReason::Drain},
    {"Preempted", RemovalReason::Preempted}};
inline const char* to_string(RemovalReason r) { return name_of(r, kRemovalReasons); }

struct NodeRemoval {
  std::uint32_t node = 0;
  RemovalReason reason = RemovalReason::Empty;
  bool drain = true;     // evict pods first (they get their grace period); false: terminate at once
  // A drain that a PodDisruptionBudget still holds up this long after it began is abandoned and the
  // node put back in service (Cluster Autoscaler's --max-pod-eviction-time); -1: keep trying.
  Micros give_up_after = -1;
  // The drain's eviction caps each pod's grace period at this (Cluster Autoscaler's
  // --max-graceful-termination-sec, DeleteOptions.GracePeriodSeconds); -1: the pod's own.
  Micros max_pod_grace = -1;
};

// One logged decision, with its inputs and arithmetic.
struct ProvisionerLog {
  std::string controller;   // "karpenter.provisioner", "karpenter.disruption", "cluster-autoscaler", ...
  std::string action;       // "launch", "delete", "replace", "none", ...
  std::string reason;
  std::string explanation;
};

struct ProvisionerActions {
  std::vector<NodeLaunch> launches;
  std::vector<NodeRemoval> removals;
  // Nodes to taint karpenter.sh/disrupted:NoSchedule (no new pods; what runs stays) and to untaint.
  std::vector<std::uint32_t> cordons, uncordons;
  std::vector<ProvisionerLog> log;
};

class NodeProvisioner {
 public:
  virtual ~NodeProvisioner() = default;
  virtual const char* name() const = 0;
  // A pod was marked PodScheduled=False, reason Unschedulable, at `now`.
  virtual void on_unschedulable(const ClusterState& cluster, std::uint32_t pod, Micros now) = 0;
  // When to call wake() next (a batch window's end, the disruption poll, the scan interval); -1: no need.
  virtual Micros next_wakeup() const = 0;
  // Decide at `now` (== next_wakeup()); only reads the cluster.
  virtual void wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) = 0;
  // The cloud refused some offering of a launch at `now` (outcome.node >= 0: a later one was launched).
  virtual void on_insufficient_capacity(const LaunchOutcome& outcome, Micros now) {
    (void)outcome;
    (void)now;
  }
  // A removal with give_up_after was abandoned at `now` (the node is back in service).
  virtual void on_drain_failed(std::uint32_t node, Micros now) {
    (void)node;
    (void)now;
  }
};

// The lab's simplest node layer, used when a scenario names no provisioner: every replica gets a
// node of its own after the same delay (0 when nodes are kept warm), with no cluster model.
struct FixedDelayDecision {
  Micros node_ready_at = 0;  // when the replica's container can start
  std::string explanation;   // the inputs and arithmetic, for the decision log
};

class FixedDelayNodes {
 public:
  explicit FixedDelayNodes(Micros delay) : delay_(delay) {}
  FixedDelayDecision provision(std::uint32_t replica, int gpus, Micros now) const;

 private:
  Micros delay_;
};

}  // namespace gpuscale
