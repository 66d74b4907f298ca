// Pod scheduling behind one interface. A scheduler serves the pods that name it in spec.schedulerName:
// given the cluster and its pending pods it returns, pod by pod in its queue order, where each goes or
// why it cannot, and when it wants to run again. The cluster model applies the bindings and marks the
// rest Unschedulable; a scheduler never mutates the cluster. Implementations: kube-scheduler
// (kube_scheduler.hpp) and KAI Scheduler (kai_scheduler.hpp); the registry below maps a schedulerName to one.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster_state.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// One pending pod's outcome of a cycle.
struct PodOutcome {
  std::uint32_t pod = 0;
  std::optional<std::uint32_t> node;  // bound to this node; nullopt: not bound
  // The PodScheduled condition's reason: "Scheduled" | "Unschedulable"; or "Pipelined" (KAI: placed onto
  // room still being released; not bound yet, and not unschedulable either).
  std::string reason;
  std::string message;                // the winner's score, or FailedScheduling's per-reason counts
};

// A running pod the scheduler deletes to make room (KAI's reclaim, preempt, consolidation, stale gang eviction).
struct PodEviction {
  std::uint32_t pod = 0;
  std::string action;                 // the action that chose it
  std::string message;                // why, in the scheduler's words
};

// One queue's GPUs as a scheduler with queues (KAI) divided them in its cycle (devices).
struct QueueGpus {
  std::string name;
  double deserved = 0, fair_share = 0, allocated = 0, requested = 0;  // -1: unlimited
};

struct SchedulingCycle {
  std::vector<PodOutcome> outcomes;   // one per pending pod it looked at, in its queue order
  std::vector<PodEviction> evictions; // in the order it chose them
  std::vector<std::string> notes;     // the cycle's arithmetic (fair shares, …) for the decision log
  std::vector<QueueGpus> queues;      // KAI: every queue's GPUs after the cycle (for the diagnosis view)
  Micros next_wakeup = -1;            // a timer it wants (e.g. the unschedulable-pod flush); -1: none new
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual const char* name() const = 0;  // the spec.schedulerName it serves
  // > 0: it runs on its own clock, every period while it has pending pods (KAI's --schedule-period),
  // not at once when the cluster changes; 0: at once (kube-scheduler's event-driven queue).
  virtual Micros period() const { return 0; }
  // One cycle over `pending` (its pods, oldest first) against the cluster at `now`. Each binding sees the
  // room the cycle's earlier bindings took, as the scheduler's assumed-pod cache does. The result is the
  // scheduler's own, valid until its next call (so a cycle it answers again is not copied).
  virtual const SchedulingCycle& schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) = 0;
  // The timer it asked for fired.
  virtual void on_wakeup(Micros now) { (void)now; }
};

// The registry: the schedulers a pod may name.
bool find_scheduler(const std::string& scheduler_name);
struct KaiSchedulerConfig;
struct KubeSchedulerConfig;
// `seed`: the scenario's, for the scheduler's own random stream (kube-scheduler's tie-break); `kube`:
// kube-scheduler's profile; `kai`: KAI Scheduler's queues and settings (it must outlive the scheduler).
std::unique_ptr<Scheduler> make_scheduler(const std::string& scheduler_name, std::uint64_t seed, const KubeSchedulerConfig& kube,
                                          const KaiSchedulerConfig& kai);
std::string scheduler_names();  // for messages: "\"default-scheduler\", \"kai-scheduler\""

}  // namespace gpuscale
