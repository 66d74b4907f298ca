// The registry of node provisioners: Karpenter with its NodePools or Cluster Autoscaler with its node
// groups and flags, as the scenario names them (null for fixed-delay nodes, which need no cluster model).
#pragma once
#include <memory>

#include "provisioning/provisioner.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

std::unique_ptr<NodeProvisioner> make_node_provisioner(const Scenario& scenario);

}  // namespace gpuscale
