// KAI Scheduler as a Scheduler of the running cluster: every --schedule-period (1 s) it takes a
// snapshot of the cluster, opens a session and runs its actions (kai/session.hpp: allocate,
// consolidation, reclaim, preempt, stale gang eviction), then returns the bindings, the pods it
// pipelined or could not place with KAI's reason and message, and the victims it evicts.
//
// How the cluster becomes a snapshot (the pod-grouper's and the cache's part):
//  - every pod with spec.schedulerName kai-scheduler is one PodGroup of one pod, as the pod-grouper
//    makes for a Deployment's pods (docs/developer/pod-grouper.md), named pg-<pod> — or, for a
//    LeaderWorkerSet, one PodGroup per group with minMember its size (all or nothing); its queue is the
//    label kai.scheduler/queue (default-queue without it), its priority class the pod's, or inference
//    (125, non-preemptible) when the pod names none — the default-queue gotcha of real-systems.md §5.4;
//  - a node the API server has (registered, not yet terminated) is a node; a node not Initialized
//    advertises no GPUs; cordoned, Terminating and Karpenter-disrupted nodes are unschedulable;
//  - pods of other schedulers are not KAI's jobs: what they request is taken off their node's room;
//  - a bound pod is Running, a terminating one Releasing (its room is not free until it is gone).
// A victim is deleted (pkg/scheduler/cache/evictor/default_evictor.go: a plain Delete, so no
// PodDisruptionBudget is asked; the pod gets its grace period), with the DisruptionTarget condition's
// reason PreemptionByScheduler.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "scheduling/scheduler.hpp"
#include "scheduling/snapshot.hpp"

namespace gpuscale {

inline constexpr const char* kKaiScheduler = "kai-scheduler";
inline constexpr const char* kKaiQueueLabel = "kai.scheduler/queue";  // pkg/common/constants DefaultQueueLabel
// The top owner's annotations the pod-grouper turns into a PodGroup's topologyConstraint.
inline constexpr const char* kKaiTopologyAnnotation = "kai.scheduler/topology";
inline constexpr const char* kKaiTopologyRequiredAnnotation = "kai.scheduler/topology-required-placement";
inline constexpr const char* kKaiTopologyPreferredAnnotation = "kai.scheduler/topology-preferred-placement";
inline constexpr const char* kKaiDefaultQueue = "default-queue";

// KAI as a scenario sets it up (cluster.kai, docs/scenario.md).
struct KaiSchedulerConfig {
  KaiSettings settings;
  std::vector<kai::Queue> queues;             // the Queue CRs (default: the Helm chart's two queues)
  std::vector<SnapshotTopology> topologies;   // the Topology CRs
  double schedule_period_s = 1;               // --schedule-period (cmd/scheduler/app/options)
};

// The default install's queues (deployments/kai-scheduler/values.yaml): default-parent-queue →
// default-queue, each with quota 0, limit -1 and overQuotaWeight 1 for every resource.
std::vector<kai::Queue> default_kai_queues();

class KaiScheduler : public Scheduler {
 public:
  explicit KaiScheduler(const KaiSchedulerConfig& config) : config_(config) {}
  const char* name() const override { return kKaiScheduler; }
  Micros period() const override;
  const SchedulingCycle& schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) override;

  // The snapshot a cycle at `now` works on (also for tests and the diagnosis view). `pods_of_job`
  // receives, per job, its tasks' pod ids.
  Snapshot snapshot(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, std::vector<std::vector<std::uint32_t>>* pods_of_job,
                    std::vector<std::uint32_t>* node_ids) const;

  // What a cycle's snapshot is built from, as numbers: the pending pods, each node's phase, taints and
  // pods (with their terminating flag). Equal keys give equal snapshots, hence equal cycles.
  // Written into `key` (cleared first), so one buffer serves every cycle.
  static void cycle_key(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, std::vector<std::int64_t>& key);

 private:
  SchedulingCycle run(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now);
  const KaiSchedulerConfig& config_;
  // The last cycle, to answer again while nothing it read has changed (a pod left Pending keeps the
  // 1 s cycle running for the whole run; the session is a pure function of its snapshot).
  std::vector<std::int64_t> last_key_, key_;  // key_: this cycle's, built in place
  SchedulingCycle last_cycle_;
  bool has_last_ = false;
};

}  // namespace gpuscale
