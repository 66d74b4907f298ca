// Builds the node provisioner a scenario names (see provisioner_factory.hpp).
#include "provisioning/provisioner_factory.hpp"

#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "provisioning/karpenter/karpenter.hpp"
#include "provisioning/karpenter/nodepool.hpp"

namespace gpuscale {

std::unique_ptr<NodeProvisioner> make_node_provisioner(const Scenario& s) {
  const ClusterConfig& c = s.cluster;
  if (c.provisioner == "karpenter") {
    std::vector<NodePool> pools;
    for (std::size_t i = 0; i < c.nodepools.size(); ++i) {
      pools.push_back(parse_nodepool(c.nodepools[i], "/cluster/nodepools/" + std::to_string(i)));
    }
    KarpenterSettings settings;
    settings.clock_start_unix_s = c.start_unix_s;
    return std::make_unique<Karpenter>(std::move(pools), settings);
  }
  if (c.provisioner == "cluster_autoscaler") {
    ClusterAutoscalerConfig config = parse_cluster_autoscaler(c.cluster_autoscaler, "/cluster/cluster_autoscaler");
    check_node_groups(config,
                      c.instance_types.is_null() ? default_instance_types()
                                                 : parse_instance_types(c.instance_types, "/cluster/instance_types"),
                      "/cluster/cluster_autoscaler");
    return std::make_unique<ClusterAutoscaler>(std::move(config));
  }
  throw InputError("/cluster/provisioner", "\"" + c.provisioner + "\" has no node provisioner");
}

}  // namespace gpuscale
