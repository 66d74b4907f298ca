// Layer 1 in motion: nodes that boot, register and initialize; pods that kube-scheduler binds; a node
// provisioner (Karpenter or Cluster Autoscaler) that launches and removes nodes; evictions and spot
// interruptions. The simulation owns one ClusterModel in cluster mode, tells it about replica pods and
// hears back when a replica's pod is bound or evicted.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster.hpp"
#include "kernel/kernel.hpp"
#include "provisioning/provisioner.hpp"
#include "kernel/rng.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

// What the simulation needs to hear about its replicas' pods.
struct ClusterNotice {
  enum Kind : std::uint8_t { ReplicaPodBound, ReplicaPodEvicted } kind;
  std::int32_t replica;
  std::uint32_t pod;
  std::uint32_t node;
  Micros time;
  std::string reason;  // evictions: "Empty" | "Underutilized" | "Expired" | "Interrupted" | ...
};

// One logged layer-1 decision (scheduling, provisioning, disruption), with its arithmetic.
struct ClusterLog {
  Micros time;
  std::string controller;  // "kube-scheduler", "karpenter.provisioner", "karpenter.disruption", "cluster-autoscaler", "cloud"
  std::string action;
  std::string reason;
  std::string explanation;
};

// Layer-1 totals for the summary (defined once here).
struct ClusterTotals {
  double node_hours = 0;               // hours nodes existed (launch → termination)
  double node_cost_usd = 0;            // Σ node-hours × that node's price (by capacity type)
  double gpu_hours_allocatable = 0;    // Σ GPUs of existing nodes × hours (paid for)
  double gpu_hours_requested = 0;      // Σ GPUs requested by bound pods × hours (used by pods)
  std::int64_t nodes_launched = 0;
  std::int64_t nodes_removed = 0;
  std::int64_t evictions = 0;          // pods evicted by node removals and interruptions
  std::int64_t replica_evictions = 0;  // of which inference replicas
  std::int64_t spot_interruptions = 0;
  std::int64_t non_gpu_pods_on_gpu_nodes = 0;  // bindings of GPU-less pods onto nodes with GPUs
};

class ClusterModel {
 public:
  ClusterModel(const Scenario& scenario, std::unique_ptr<NodeProvisioner> provisioner);

  const ClusterState& state() const { return state_; }
  const ClusterTotals& totals() const { return totals_; }

  // The starting cluster at t = 0: the scenario's initial nodes (Initialized) and its other workloads.
  void start(std::int32_t initial_replicas, std::vector<ClusterNotice>& out);
  // A new replica's pod (Pending); bound now or later (ReplicaPodBound).
  std::uint32_t add_replica_pod(std::int32_t replica, Micros now, std::vector<ClusterNotice>& out);
  // The ReplicaSet deleted the replica: its pod goes away, freeing its node's room.
  void remove_pod(std::uint32_t pod, Micros now, std::vector<ClusterNotice>& out);
  // What the PodDisruptionBudget counts: a replica's pod turned Ready or stopped being Ready, and the
  // Deployment's spec.replicas.
  void set_pod_ready(std::uint32_t pod, bool ready);
  void set_expected_replicas(std::int32_t replicas) { state_.expected_replicas = replicas; }
  // When the model next needs to run (node phase changes, provisioner wake-ups, interruptions); -1: none.
  Micros next_event_time() const;
  // Runs everything due at `now`.
  void advance(Micros now, std::vector<ClusterNotice>& out);
  // Ends the accounting at the end of the run.
  void finish(Micros end);
  // Logs since the last call, in time order.
  std::vector<ClusterLog> take_logs();

  std::int32_t nodes_in(NodePhase phase) const;

 private:
  enum class Kind : std::uint8_t { Registered, Initialized, Terminate, SpotNotice, Wake, EvictRetry };
  struct Event {
    Kind kind;
    std::uint32_t node;
    std::uint32_t gen;
  };

  void schedule_pending(Micros now, std::vector<ClusterNotice>& out);
  void bind(Pod& pod, Node& node, Micros now, const std::string& why, std::vector<ClusterNotice>& out);
  void unbind(Pod& pod, Micros now);
  void launch(const NodeLaunch& launch, Micros now, bool initialized);
  void remove_node(Node& node, const std::string& reason, bool drain, Micros now, std::vector<ClusterNotice>& out,
                   Micros give_up_after = -1);
  // Evicts the node's pods, those the PodDisruptionBudget lets go if `respect_pdb`; returns how many stay.
  std::size_t evict_pods(Node& node, const std::string& reason, bool respect_pdb, Micros now, std::vector<ClusterNotice>& out,
                         std::string* blocked_why = nullptr);
  void apply(ProvisionerActions& actions, Micros now, std::vector<ClusterNotice>& out);
  void rearm_provisioner();
  void account(Micros now);
  void log(Micros t, const char* controller, std::string action, std::string reason, std::string explanation);
  std::uint32_t new_pod(int template_index, std::int32_t owner, Micros now);

  const Scenario& scenario_;
  ClusterState state_;
  std::unique_ptr<NodeProvisioner> provisioner_;
  EventQueue<Event> queue_;
  Rng rng_;
  std::vector<std::uint32_t> pending_;  // pod ids waiting to be bound, oldest first
  std::vector<ClusterLog> logs_;
  ClusterTotals totals_;
  Micros accounted_until_ = 0;
  Micros provisioner_wake_ = -1;
  Micros retry_at_ = -1;  // kube-scheduler's next flush of unschedulable pods (-1: none pending)
  std::uint32_t wake_gen_ = 0;
  std::map<std::uint32_t, Micros> drain_give_up_at_;  // node → when its held-up drain is abandoned
};

}  // namespace gpuscale
