// The registry of replica scalers (see scalers.hpp).
#include "sim/scalers.hpp"

namespace gpuscale {

std::vector<std::unique_ptr<ReplicaScaler>> make_replica_scalers(const PoolConfig& pool) {
  const AutoscalerConfig& a = pool.autoscaler;
  std::vector<std::unique_ptr<ReplicaScaler>> out;
  if (a.hpa) {
    hpa::ControllerFlags flags;
    flags.tolerance = a.tolerance;
    flags.downscale_stabilization_s = a.downscale_stabilization_s;
    out.push_back(std::make_unique<HpaScaler>(*a.hpa, flags, seconds_to_micros(a.sync_period_s)));
  }
  if (is_keda(a.strategy) && a.keda.scales_to_zero()) {
    KedaSettings k;
    k.http_trigger = a.strategy == ScalerStrategy::HttpConcurrency;
    k.activation_threshold = a.keda.activation_threshold;
    k.polling_interval = seconds_to_micros(a.keda.polling_interval_s);
    k.cooldown_period = seconds_to_micros(a.keda.cooldown_period_s);
    out.push_back(std::make_unique<KedaOperator>(k));
  }
  return out;
}

}  // namespace gpuscale
