// The ReplicaSet controller's decision as a pure function: how many pods to create to reach
// spec.replicas, or which to delete, in its order (kubernetes/kubernetes pkg/controller/
// controller_utils.go ActivePodsWithRanks: unscheduled before scheduled, not ready before ready,
// doubled-up before alone, ready for less time before more, newer before older).
#pragma once
#include <cstdint>
#include <vector>

#include "kernel/time.hpp"

namespace gpuscale {

// One active pod (not being deleted) as the controller ranks it.
struct ActivePod {
  std::uint32_t id = 0;        // the replica
  int readiness = 0;           // 0 unscheduled, 1 scheduled but not Ready, 2 Ready
  std::int32_t siblings = 1;   // pods of this ReplicaSet on its node (itself included)
  Micros ready_at = -1;        // when it turned Ready (-1: never)
  Micros created_at = 0;
};

struct ReplicaSetPlan {
  std::int32_t create = 0;            // new pods
  std::vector<std::uint32_t> remove;  // pods to delete, in this order
};

// `active` in creation order.
ReplicaSetPlan plan_replica_set(std::vector<ActivePod> active, std::int32_t spec_replicas);

}  // namespace gpuscale
