// kube-scheduler, pod by pod: filter the nodes a pod fits (the one fit predicate, fit.hpp), score the
// rest, bind to the best. The explanation uses the scheduler's own FailedScheduling wording
// ("0/3 nodes are available: 2 Insufficient nvidia.com/gpu, ...").
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kernel/rng.hpp"
#include "scheduling/scheduler.hpp"

namespace gpuscale {

struct SchedulingResult {
  std::optional<std::uint32_t> node;  // the chosen node, or none (unschedulable)
  std::string explanation;            // why: the score of the winner, or the per-reason counts
};

// What a cycle's earlier bindings took from each node (the assumed pods), by node id.
struct AssumedRoom {
  int gpus = 0;
  std::int64_t cpu_milli = 0, memory_mib = 0;
};

// The default profile for one pod: filters NodeUnschedulable (Terminating / disrupted), NodeAffinity
// (nodeSelector + required affinity), TaintToleration (a node that is not Ready yet carries
// node.kubernetes.io/not-ready:NoSchedule), NodeResourcesFit; scores NodeResourcesFit LeastAllocated
// over cpu and memory (equal weights). Among the nodes with the top score it picks one at random, as
// selectHost does, drawing from `ties` (nullptr: the lowest node id, for callers that want no draw).
// `assumed` (by node id, or empty) is what pods bound earlier in the cycle took.
SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod, const std::vector<AssumedRoom>& assumed = {},
                              Rng* ties = nullptr);

class KubeScheduler : public Scheduler {
 public:
  // Its tie-break draws come from the stream "kube-scheduler" of the scenario seed.
  explicit KubeScheduler(std::uint64_t seed) : ties_(Rng::stream(seed, "kube-scheduler")) {}
  const char* name() const override { return kDefaultScheduler; }
  SchedulingCycle schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) override;
  void on_wakeup(Micros now) override;

 private:
  // kube-scheduler moves unschedulable pods back to its active queue every 30 s
  // (pkg/scheduler/internal/queue: flushUnschedulablePodsLeftover runs every 30 s); one timer at a time.
  Micros retry_at_ = -1;
  Rng ties_;
};

}  // namespace gpuscale
