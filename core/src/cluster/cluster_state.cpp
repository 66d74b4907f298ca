// Layer 1's world as data (see cluster_state.hpp).
#include "cluster/cluster_state.hpp"

namespace gpuscale {

int ClusterState::pool_of(const Pod& pod) const {
  const PodOwner& o = template_of(pod).owner;
  return o.kind == PodOwner::Kind::Pool ? o.index : -1;
}

PdbStatus pool_pdb_status(const ClusterState& state, int pool) {
  std::int64_t pods = 0, healthy = 0;
  for (const auto& p : state.pods) {
    if (p.deleted || state.pool_of(p) != pool) continue;
    ++pods;
    if (p.ready && p.phase == PodPhase::Running) ++healthy;
  }
  const PoolBudget& b = state.pools[static_cast<std::size_t>(pool)];
  return pdb_status(*b.pdb, pods, healthy, b.expected_replicas);
}

bool eviction_allowed(const ClusterState& state, const Pod& pod, std::string* why) {
  const int pool = state.pool_of(pod);
  if (pool < 0 || static_cast<std::size_t>(pool) >= state.pools.size() || !state.pools[static_cast<std::size_t>(pool)].pdb) return true;
  const PdbSpec& pdb = *state.pools[static_cast<std::size_t>(pool)].pdb;
  return pdb_allows_eviction(pdb, pool_pdb_status(state, pool), pod.ready, why);
}

}  // namespace gpuscale
