// The registry of model-level autoscalers (ServiceScaler, service_scaler.hpp): what runs a pool group
// from its typed configuration. The scenario parser fills the configuration; the world asks here.
#pragma once
#include <memory>
#include <string>
#include <variant>

#include "autoscaling/dynamo_planner.hpp"
#include "autoscaling/service_scaler.hpp"
#include "autoscaling/wva.hpp"

namespace gpuscale {

// A pool group's model-level autoscaler: Dynamo's planner or llm-d's WVA.
using ServiceScalerConfig = std::variant<dynamo::PlannerConfig, wva::WvaConfig>;

// "" if the configuration can run, else "<field>: <why>" (the parser prefixes its JSON path).
std::string service_scaler_config_error(const ServiceScalerConfig& config);

// The scaler for a group. Precondition: service_scaler_config_error(config) is "".
std::unique_ptr<ServiceScaler> make_service_scaler(const ServiceScalerConfig& config);

}  // namespace gpuscale
