// kube-scheduler, pod by pod: filter the nodes a pod fits (the one fit predicate, fit.hpp), score the
// rest, bind to the best. The explanation uses the scheduler's own FailedScheduling wording
// ("0/3 nodes are available: 2 Insufficient nvidia.com/gpu, ...").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/json_reader.hpp"
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

// NodeResourcesFit's scoringStrategy (KubeSchedulerConfiguration profiles[].pluginConfig, NodeResourcesFitArgs):
// LeastAllocated (the default: spread) or MostAllocated (bin-pack), over weighted resources (default cpu
// and memory, weight 1 each; nvidia.com/gpu counts only for pods that request it, as upstream skips an
// extended resource the pod does not request: pkg/scheduler/framework/plugins/noderesources/
// resource_allocation.go, least_allocated.go, most_allocated.go).
struct NodeResourcesFitScoring {
  enum class Type : std::uint8_t { LeastAllocated, MostAllocated } type = Type::LeastAllocated;
  struct Resource {
    std::string name;  // "cpu", "memory" or "nvidia.com/gpu"
    std::int64_t weight = 1;
  };
  std::vector<Resource> resources{{"cpu", 1}, {"memory", 1}};
};
inline const char* to_string(NodeResourcesFitScoring::Type t) { return t == NodeResourcesFitScoring::Type::MostAllocated ? "MostAllocated" : "LeastAllocated"; }

// The default-scheduler profile of /cluster/kube_scheduler (a KubeSchedulerConfiguration).
struct KubeSchedulerConfig {
  NodeResourcesFitScoring scoring;
};

// Reads a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) with field-path errors: one
// profile, default-scheduler, whose pluginConfig may set NodeResourcesFit's scoringStrategy.
KubeSchedulerConfig read_kube_scheduler_config(const Json& v, const std::string& path);

// The default profile for one pod: filters NodeUnschedulable (Terminating / disrupted), NodeAffinity
// (nodeSelector + required affinity), TaintToleration (a node that is not Ready yet carries
// node.kubernetes.io/not-ready:NoSchedule), NodeResourcesFit; scores NodeResourcesFit by `scoring`
// (LeastAllocated over cpu and memory, equal weights, by default). Among the nodes with the top score it picks one at random, as
// selectHost does, drawing from `ties` (nullptr: the lowest node id, for callers that want no draw).
// `assumed` (by node id, or empty) is what pods bound earlier in the cycle took.
SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod, const std::vector<AssumedRoom>& assumed = {},
                              Rng* ties = nullptr, const NodeResourcesFitScoring& scoring = {});

class KubeScheduler : public Scheduler {
 public:
  // Its tie-break draws come from the stream "kube-scheduler" of the scenario seed.
  explicit KubeScheduler(std::uint64_t seed, KubeSchedulerConfig config = {}) : ties_(Rng::stream(seed, "kube-scheduler")), config_(std::move(config)) {}
  const char* name() const override { return kDefaultScheduler; }
  const SchedulingCycle& schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) override;
  void on_wakeup(Micros now) override;

 private:
  // kube-scheduler moves unschedulable pods back to its active queue every 30 s
  // (pkg/scheduler/internal/queue: flushUnschedulablePodsLeftover runs every 30 s); one timer at a time.
  Micros retry_at_ = -1;
  SchedulingCycle cycle_;  // the last call's result (schedule returns it by reference)
  Rng ties_;
  KubeSchedulerConfig config_;
};

}  // namespace gpuscale
