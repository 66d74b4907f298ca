// Layer 1 in motion: nodes that boot, register and initialize; pods the schedulers bind; a node
// provisioner (Karpenter or Cluster Autoscaler) that launches and removes nodes; evictions through the
// Eviction API and spot interruptions. The model has no clock of its own: it files its timers as
// ordinary events on the world's one queue (ClusterEvents) and handles them when the world dispatches
// them. What the pools need to hear (a replica's pod bound or evicted) and what it decided (the log)
// wait in its outbox until the world takes them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/launch_failures.hpp"

#include "cluster/cluster_state.hpp"
#include "kernel/kernel.hpp"
#include "kernel/rng.hpp"
#include "provisioning/provisioner.hpp"
#include "scenario/scenario.hpp"
#include "scheduling/scheduler.hpp"

namespace gpuscale {

struct ClusterSeries;  // sim/simulation.hpp

// One of the cluster's timers, as an event of the world's queue.
struct ClusterEvent {
  enum class Kind : std::uint8_t {
    NodeRegistered,   // EventClass::NodeLifecycle
    NodeReady,        // the kubelet reports Ready: the not-ready taint goes
    NodeInitialized,
    NodeTerminate,
    SpotNotice,
    SpotReclaim,      // the cloud takes back spot capacity (index: /cluster/spot_reclaims)
    EvictRetry,       // a drain tries its refused evictions again
    DrainDeadline,    // a NodePool's terminationGracePeriod: the drain deletes what is left, PDB or not
    PodGone,          // a terminating workload pod's containers have stopped (index: the pod)
    ProvisionerWake,  // EventClass::NodeControl
    SchedulerWake,
  };
  Kind kind = Kind::NodeRegistered;
  std::uint32_t index = 0;  // the node, or the scheduler
  std::uint32_t gen = 0;    // ProvisionerWake: superseded wake-ups are skipped
};

// Where the cluster files its timers: the world's event queue.
class ClusterEvents {
 public:
  virtual ~ClusterEvents() = default;
  virtual void file(Micros time, EventClass cls, const ClusterEvent& event) = 0;
};

// What the pools need to hear about their replicas' pods.
struct ClusterNotice {
  // ReplicaPodEvicted: the Eviction API deleted its pod (it terminates through the one path);
  // ReplicaPodKilled: its instance went away under it (nothing is graceful any more).
  enum class Kind : std::uint8_t { ReplicaPodBound, ReplicaPodEvicted, ReplicaPodKilled } kind;
  int pool = 0;
  std::int32_t replica = 0;
  std::uint32_t pod = 0;
  std::uint32_t node = 0;
  Micros time = 0;
  Micros container_start = 0;  // bound pods: when the container can start (after the image pull, if any)
  RemovalReason reason = RemovalReason::Empty;  // evictions
  Micros max_grace = -1;                        // evictions: the drain's cap on the grace period (-1: none)
};

// One logged layer-1 decision (scheduling, provisioning, disruption), with its arithmetic.
struct ClusterLog {
  Micros time;
  std::string controller;  // "kube-scheduler", "kai-scheduler", "karpenter.provisioner", "karpenter.disruption", "cluster-autoscaler", "cloud"
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
  std::int64_t pod_evictions = 0;      // pods evicted by node removals and interruptions
  std::int64_t replica_evictions = 0;  // of which model-serving replicas
  std::int64_t spot_interruptions = 0;
  std::int64_t insufficient_capacity = 0;  // launch attempts the cloud refused (InsufficientInstanceCapacity)
  std::int64_t non_gpu_pods_on_gpu_nodes = 0;  // bindings of GPU-less pods onto nodes with GPUs
};

class ClusterModel {
 public:
  ClusterModel(const Scenario& scenario, std::unique_ptr<NodeProvisioner> provisioner, ClusterEvents& events);

  const ClusterState& state() const { return state_; }
  const ClusterTotals& totals() const { return totals_; }

  // The starting cluster at t = 0: the scenario's initial nodes (Initialized), a pod per starting replica
  // (replicas 0 … n-1 of each pool get pods in pool order) and the other workloads' pods, then a scheduling pass.
  void start(const std::vector<std::int32_t>& starting_replicas);
  // A new replica's pod (Pending), or a LeaderWorkerSet group's pods (the leader's id returned, the
  // workers' following it); each bound now or later (ReplicaPodBound).
  std::uint32_t add_replica_pod(int pool, std::int32_t replica, Micros now);
  // The replica's pod is gone (its containers stopped, or it never ran): its node's room is free, and
  // a node being drained whose last pod this was is terminated.
  void remove_pod(std::uint32_t pod, Micros now);
  // The ReplicaSet deleted the replica but it is draining: the pod is terminating (deletionTimestamp set)
  // and keeps its room until remove_pod.
  void mark_pod_terminating(std::uint32_t pod, Micros now);
  // What a PodDisruptionBudget counts: a replica's pod turned Ready or stopped being Ready, and the
  // pool's Deployment spec.replicas.
  void set_pod_ready(std::uint32_t pod, bool ready);
  void set_expected_replicas(int pool, std::int32_t replicas);

  // One of its events, dispatched by the world.
  void on_event(const ClusterEvent& event, Micros now);
  // The end of an instant that had cluster events: the scheduling pass they asked for, then the
  // provisioner's next wake-up.
  void settle(Micros now);
  // The outbox: notices and logs since the last call, in the order they happened.
  std::vector<ClusterNotice> take_notices();
  // Appends one row of the dashboards' view (output.cluster_series) to `out`.
  void sample(ClusterSeries& out) const;
  std::vector<ClusterLog> take_logs();
  bool has_news() const { return !notices_.empty() || !logs_.empty(); }

  // Ends the accounting at the end of the run.
  void finish(Micros end);
  std::int32_t nodes_in(NodePhase phase) const;

 private:
  // Each scheduler's cycle over its pending pods: event-driven ones now, periodic ones (KAI) when due.
  void schedule_pending(Micros now);
  void apply_cycle(std::size_t scheduler, const SchedulingCycle& cycle, Micros now);
  void file_scheduler_wake(std::size_t scheduler, Micros at);
  const char* scheduler_log_name(std::size_t scheduler) const;
  void bind(Pod& pod, Node& node, Micros now, const std::string& why, const char* scheduler);
  // Deletes a bound pod: a replica's terminates in the world (ReplicaPodEvicted); another workload's
  // stops after its preStop sleep and its ReplicaSet makes a new one. `max_grace`: a drain's cap (-1: none).
  void delete_pod(Pod& pod, Node& node, RemovalReason reason, Micros max_grace, Micros now);
  void unbind(Pod& pod, Micros now);
  std::uint32_t new_replica_pods(int pool, std::int32_t replica, Micros now);
  // When the pod's container can start on the node: now if the node has its image, else after the pull.
  Micros pull_image(Node& node, const Pod& pod, double pull_s, Micros now);
  void launch(const NodeLaunch& launch, Micros now, bool initialized);
  // A provisioner's launch through the cloud: its offering, then its fallbacks, each refused at the
  // scenario's InsufficientInstanceCapacity rate; the first one granted is launched.
  void request_launch(const NodeLaunch& launch, Micros now);
  void remove_node(Node& node, RemovalReason reason, bool drain, Micros now, Micros give_up_after = -1, Micros max_grace = -1);
  // Evicts the node's pods, those the PodDisruptionBudgets let go if `respect_pdb`; returns how many stay.
  std::size_t evict_pods(Node& node, RemovalReason reason, bool respect_pdb, Micros now, std::string* blocked_why = nullptr);
  // The instance goes: pods still on it die with it.
  void terminate_node(Node& node, Micros now);
  // A drained node (every pod evicted) whose pods have all stopped is terminated.
  void terminate_if_drained(Node& node, Micros now);
  void apply(ProvisionerActions& actions, Micros now);
  void rearm_provisioner();
  void account(Micros now);
  void log(Micros t, const char* controller, std::string action, std::string reason, std::string explanation);
  std::uint32_t new_pod(int template_index, std::int32_t replica, Micros now);
  void on_node_event(const ClusterEvent& e, Micros now);
  // The NodePool a Karpenter node belongs to, or null (a node group's node, or no such pool).
  const NodePool* owner_pool(const Node& node) const;

  const Scenario& scenario_;
  ClusterState state_;
  std::unique_ptr<NodeProvisioner> provisioner_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;  // by name, for the pods that name them
  std::vector<int> template_scheduler_;                  // templates → index into schedulers_
  std::vector<bool> scheduler_due_;                      // a periodic scheduler's cycle is due at this settle
  std::vector<Micros> scheduler_wake_at_;                // a periodic scheduler's filed cycle (-1: none)
  ClusterEvents& events_;
  Rng rng_;
  Rng ready_rng_;  // registered → Ready, its own stream so the other node draws stay where they were
  LaunchFailures capacity_;             // the cloud's InsufficientInstanceCapacity answers
  std::vector<std::uint32_t> pending_;  // pod ids waiting to be bound, oldest first
  std::vector<ClusterNotice> notices_;
  std::vector<ClusterLog> logs_;
  ClusterTotals totals_;
  Micros accounted_until_ = 0;
  Micros provisioner_wake_ = -1;
  std::uint32_t wake_gen_ = 0;
  bool reschedule_ = false;  // an event of this instant made room or nodes: schedule again at settle()
  std::map<std::uint32_t, Micros> drain_give_up_at_;  // node → when its held-up drain is abandoned
  struct Removal {
    RemovalReason reason = RemovalReason::Empty;
    Micros max_grace = -1;   // the drain's cap on each pod's grace period
    bool evicting = false;   // some pods still wait for the Eviction API (a PDB)
    Micros force_at = -1;    // a NodePool's terminationGracePeriod: the instance goes then (-1: none)
  };
  std::map<std::uint32_t, Removal> removals_;  // node → why it is going (Terminating nodes)
  std::map<std::string, QueueGpus> queue_gpus_;  // each KAI queue's GPUs as of the last cycle that ran
};

}  // namespace gpuscale
