// The registry of node provisioners: the one a scenario names (see provisioners.hpp).
#include "sim/provisioners.hpp"

#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "provisioning/karpenter/karpenter.hpp"

namespace gpuscale {

std::unique_ptr<NodeProvisioner> make_node_provisioner(const Scenario& s) {
  const ClusterConfig& c = s.cluster;
  switch (c.provisioner) {
    case ProvisionerKind::Karpenter: {
      KarpenterSettings settings;
      settings.clock_start_unix_s = c.start_unix_s;
      return std::make_unique<Karpenter>(c.nodepools, settings);
    }
    case ProvisionerKind::ClusterAutoscaler: return std::make_unique<ClusterAutoscaler>(c.cluster_autoscaler);
    case ProvisionerKind::FixedDelay: break;
  }
  return nullptr;  // fixed-delay nodes need no cluster model
}

}  // namespace gpuscale
