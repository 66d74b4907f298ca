// The registry of model-level autoscalers, and the helpers every one of them shares.
#include "autoscaling/service_scalers.hpp"

namespace gpuscale {

const char* service_role_name(ServiceRole role) {
  switch (role) {
    case ServiceRole::Aggregated: return "aggregated";
    case ServiceRole::Prefill: return "prefill";
    case ServiceRole::Decode: return "decode";
  }
  return "aggregated";
}

PoolCounts pool_counts(const ScalerSnapshot& snapshot) {
  PoolCounts c;
  c.spec = snapshot.spec_replicas;
  for (const ReplicaView& r : snapshot.replicas) {
    if (r.state == ReplicaView::State::Draining) {
      ++c.terminating;
      continue;
    }
    ++c.existing;
    if (r.state == ReplicaView::State::Ready) ++c.ready;
  }
  return c;
}

std::string service_scaler_config_error(const ServiceScalerConfig& config) {
  if (const auto* p = std::get_if<dynamo::PlannerConfig>(&config)) return dynamo::planner_config_error(*p);
  return wva::wva_config_error(std::get<wva::WvaConfig>(config));
}

std::unique_ptr<ServiceScaler> make_service_scaler(const ServiceScalerConfig& config) {
  if (const auto* p = std::get_if<dynamo::PlannerConfig>(&config)) return std::make_unique<dynamo::DynamoPlanner>(*p);
  return std::make_unique<wva::WvaScaler>(std::get<wva::WvaConfig>(config));
}

}  // namespace gpuscale
