// The ReplicaSet controller's decision (see replica_set.hpp).
#include "k8s/replica_set.hpp"

#include <algorithm>

namespace gpuscale {

ReplicaSetPlan plan_replica_set(std::vector<ActivePod> active, std::int32_t spec_replicas) {
  ReplicaSetPlan plan;
  const auto have = static_cast<std::int32_t>(active.size());
  if (have < spec_replicas) {
    plan.create = spec_replicas - have;
    return plan;
  }
  // A pod sharing its node with more pods of the same ReplicaSet goes first (so scale-down spreads over
  // nodes), then the one Ready for less time, then the newer.
  std::stable_sort(active.begin(), active.end(), [](const ActivePod& a, const ActivePod& b) {
    if (a.readiness != b.readiness) return a.readiness < b.readiness;
    if (a.siblings != b.siblings) return a.siblings > b.siblings;
    if (a.ready_at != b.ready_at) return a.ready_at > b.ready_at;
    return a.created_at > b.created_at || (a.created_at == b.created_at && a.id > b.id);
  });
  for (std::int32_t k = 0; k < have - spec_replicas; ++k) plan.remove.push_back(active[static_cast<std::size_t>(k)].id);
  return plan;
}

}  // namespace gpuscale
