// The node provisioner a scenario names (Karpenter with its NodePools, or Cluster Autoscaler with its
// node groups and flags).
#pragma once
#include <memory>

#include "provisioning/provisioner.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

std::unique_ptr<NodeProvisioner> make_node_provisioner(const Scenario& scenario);

}  // namespace gpuscale
