// Karpenter's prices, NodePool capacity and limits, and the offerings a NodePool allows (see karpenter.hpp).
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <iterator>

#include "k8s/cron.hpp"
#include "provisioning/karpenter/karpenter_detail.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

using namespace karpenter_detail;

// ---- prices, capacity, limits ----------------------------------------------------------------------

std::int64_t price_micro_usd(double usd_per_hour) {
  if (!(usd_per_hour > 0)) return 0;
  return static_cast<std::int64_t>(usd_per_hour * 1e6 + 0.5);
}

ResourceAmounts type_capacity(const InstanceType& type) {
  ResourceAmounts r;
  r.gpus = type.gpus;
  r.cpu_milli = static_cast<std::int64_t>(type.vcpu) * 1000;
  r.memory_mib = static_cast<std::int64_t>(type.memory_gib * 1024);
  r.nodes = 1;
  return r;
}

ResourceAmounts pool_usage(const ClusterState& cluster, const std::string& pool) {
  // Karpenter's NodePool counter sums the capacity of every NodeClaim of the pool that still exists,
  // launching and draining ones included.
  ResourceAmounts u;
  for (const auto& n : cluster.nodes) {
    if (n.owner != pool || n.phase == NodePhase::Terminated) continue;
    u = add(u, type_capacity(cluster.types[n.type_index]));
  }
  return u;
}

std::string limits_exceeded(const NodePool& pool, const ResourceAmounts& used) {
  std::vector<std::string> over;
  auto check = [&](const std::optional<std::int64_t>& limit, std::int64_t have, const char* name, const char* unit) {
    if (limit && have > *limit) {
      over.push_back(std::string(name) + ": " + std::to_string(have) + unit + " in use > limit " + std::to_string(*limit) + unit);
    }
  };
  check(pool.limit_gpus, used.gpus, "nvidia.com/gpu", "");
  check(pool.limit_cpu_milli, used.cpu_milli, "cpu", "m");
  check(pool.limit_memory_mib, used.memory_mib, "memory", " MiB");
  check(pool.limit_nodes, used.nodes, "nodes", "");
  return join(over, ", ");
}

bool within_limits(const NodePool& pool, const ResourceAmounts& used, const ResourceAmounts& extra) {
  const ResourceAmounts t = add(used, extra);
  return (!pool.limit_gpus || t.gpus <= *pool.limit_gpus) && (!pool.limit_cpu_milli || t.cpu_milli <= *pool.limit_cpu_milli) &&
         (!pool.limit_memory_mib || t.memory_mib <= *pool.limit_memory_mib) && (!pool.limit_nodes || t.nodes <= *pool.limit_nodes);
}

Labels pool_node_labels(const NodePool& pool, const Labels& well_known) {
  Labels l = pool.template_labels;
  l[kNodePoolLabel] = pool.name;
  // A requirement on a label Karpenter does not know becomes a node label (NodeClaim template requirements).
  // One on a well-known key only selects among the instance types' labels: a type without the label does
  // not match an In on it (the AWS provider's DoesNotExist requirement does not intersect it). Treating
  // every key the type lacks as a custom label let `instance-category In [m, c]` match a p4d.24xlarge.
  for (const auto& r : pool.requirements) {
    if (r.op == SelectorOp::In && !r.values.empty() && !well_known.count(r.key) && !is_well_known_label(r.key)) {
      l.emplace(r.key, r.values[0]);
    }
  }
  return l;
}

std::vector<Offering> pool_offerings(const NodePool& pool, const std::vector<InstanceType>& types) {
  // Lab choice (aws docs, nodepools.md: "If not included, ... will default to on-demand"): a pool with no
  // karpenter.sh/capacity-type requirement launches on-demand only.
  bool capacity_required = false;
  for (const auto& r : pool.requirements) capacity_required = capacity_required || r.key == kCapacityTypeLabel;
  std::vector<Offering> out;
  for (std::size_t ti = 0; ti < types.size(); ++ti) {
    const InstanceType& t = types[ti];
    for (CapacityType cap : {CapacityType::OnDemand, CapacityType::Spot}) {
      const std::int64_t price = catalogue_price(t, cap);
      if (price <= 0) continue;  // not offered
      if (!capacity_required && cap != CapacityType::OnDemand) continue;
      for (const auto& zone : t.zones) {
        Labels labels = instance_labels(t, cap, zone);
        for (const auto& kv : pool_node_labels(pool, labels)) labels.insert(kv);  // never overrides a well-known label
        if (!matches_all(pool.requirements, labels)) continue;
        out.push_back(Offering{static_cast<int>(ti), cap, zone, price, std::make_shared<const Labels>(std::move(labels))});
      }
    }
  }
  // Cheapest first (on-demand: lowest-price; spot: price-capacity-optimized, approximated by lowest price).
  // Equal prices: spot first (the AWS provider launches spot whenever the NodeClaim allows it), then catalogue
  // and zone order (stable sort).
  std::stable_sort(out.begin(), out.end(), [](const Offering& a, const Offering& b) {
    if (a.price_micro_usd != b.price_micro_usd) return a.price_micro_usd < b.price_micro_usd;
    return a.capacity_type == CapacityType::Spot && b.capacity_type != CapacityType::Spot;
  });
  return out;
}

PoolOfferings all_pool_offerings(const std::vector<NodePool>& pools, const std::vector<InstanceType>& types) {
  PoolOfferings out;
  for (const auto& p : pools) out.push_back(pool_offerings(p, types));
  return out;
}

std::vector<int> pool_order(const std::vector<NodePool>& pools) {
  std::vector<int> order(pools.size());
  for (std::size_t i = 0; i < pools.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (pools[a].weight != pools[b].weight) return pools[a].weight > pools[b].weight;
    return pools[a].name < pools[b].name;
  });
  return order;
}

}  // namespace gpuscale
