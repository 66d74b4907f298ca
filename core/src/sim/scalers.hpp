// The registry of replica scalers: what runs a pool's replica count, from its autoscaler configuration.
#pragma once
#include <memory>
#include <vector>

#include "autoscaling/replica_scaler.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

// The HPA for every strategy but "fixed" (for the KEDA ones, the HPA the ScaledObject generates), then
// KEDA's operator when its minReplicaCount is 0. A "fixed" pool has none.
std::vector<std::unique_ptr<ReplicaScaler>> make_replica_scalers(const PoolConfig& pool);

}  // namespace gpuscale
