// kube-scheduler, pod by pod: filter the nodes a pod fits, score the rest, bind to the best.
// A pure function over the ClusterState; the explanation uses the scheduler's own FailedScheduling
// wording ("0/3 nodes are available: 2 Insufficient nvidia.com/gpu, ...").
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "cluster/cluster.hpp"

namespace gpuscale {

struct SchedulingResult {
  std::optional<std::uint32_t> node;  // the chosen node, or none (unschedulable)
  std::string explanation;            // why: the score of the winner, or the per-reason counts
};

// The default profile: filters NodeUnschedulable (Terminating / disrupted), TaintToleration,
// NodeAffinity (nodeSelector + required affinity), NodeResourcesFit; scores NodeResourcesFit
// LeastAllocated over cpu and memory (equal weights), ties to the lowest node id.
SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod);

}  // namespace gpuscale
