// Karpenter's scheduling simulation (shared by provisioning and consolidation) and the provisioning
// decision at a batch window's end (pkg/controllers/provisioning; see karpenter.hpp).
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include "k8s/cron.hpp"
#include "provisioning/karpenter/karpenter_detail.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

using namespace karpenter_detail;

namespace {

// One pool's answer for one pod needing a new NodeClaim: the offerings that can take it, or why none can.
struct PoolCheck {
  std::vector<Offering> options;
  std::string why;
};

// `all_cached`: the pool's requirements allow offerings, but the cloud refused each of them lately
// (InsufficientInstanceCapacity) and they wait out the unavailable-offerings cache.
PoolCheck check_pool(const ClusterState& cluster, const NodePool& pool, const std::vector<Offering>& offerings,
                     const PodTemplate& pod, const ResourceAmounts& usage, const ResourceAmounts& reserved, bool all_cached) {
  PoolCheck pc;
  // provisioner.go: a NodePool whose current usage already exceeds a limit is skipped.
  const std::string exceeded = limits_exceeded(pool, usage);
  if (!exceeded.empty()) {
    pc.why = "limits exceeded (" + exceeded + ")";
    return pc;
  }
  if (const Taint* t = first_untolerated(pod.tolerations, pool.taints)) {
    pc.why = "taint " + taint_text(*t) + " not tolerated";
    return pc;
  }
  if (offerings.empty()) {
    pc.why = all_cached ? "every offering its requirements allow was refused by the cloud (InsufficientInstanceCapacity) and is cached as unavailable"
                        : "requirements allow no offering of the catalogue";
    return pc;
  }
  std::vector<Offering> selected, roomy;
  for (const auto& o : offerings) {
    if (fits_node_affinity(pod, *o.labels)) selected.push_back(o);
  }
  if (selected.empty()) {
    pc.why = "pod's nodeSelector/affinity matches none of " + std::to_string(offerings.size()) + " allowed offerings";
    return pc;
  }
  for (const auto& o : selected) {
    if (check_fit_type(pod, cluster.types[o.type_index], *o.labels, {}).ok()) roomy.push_back(o);
  }
  if (roomy.empty()) {
    pc.why = "no allowed type has room for " + fmt_requests(pod.gpus, pod.cpu_milli, pod.memory_mib);
    return pc;
  }
  // filterByRemainingResources: drop types whose capacity would exceed what is left of the limits
  // (left = limit − usage − what earlier NodeClaims of this batch reserved).
  const ResourceAmounts used = add(usage, reserved);
  for (const auto& o : roomy) {
    if (within_limits(pool, used, type_capacity(cluster.types[o.type_index]))) pc.options.push_back(o);
  }
  if (pc.options.empty()) {
    pc.why = "limits: each of " + std::to_string(roomy.size()) + " fitting offerings would exceed what is left (" +
             fmt_remaining(pool, used) + ")";
  }
  return pc;
}

// Karpenter subtracts, per resource, the largest capacity among a new NodeClaim's options (subtractMax).
ResourceAmounts max_capacity(const ClusterState& cluster, const std::vector<Offering>& options) {
  ResourceAmounts m;
  for (const auto& o : options) {
    const ResourceAmounts c = type_capacity(cluster.types[o.type_index]);
    m.gpus = std::max(m.gpus, c.gpus);
    m.cpu_milli = std::max(m.cpu_milli, c.cpu_milli);
    m.memory_mib = std::max(m.memory_mib, c.memory_mib);
    m.nodes = std::max(m.nodes, c.nodes);
  }
  return m;
}

bool try_add_to_claim(const ClusterState& cluster, const std::vector<NodePool>& pools, SimClaim& claim, std::uint32_t pod_id,
                      const PodTemplate& pod) {
  const NodePool& pool = pools[claim.pool];
  if (!tolerates_all(pod.tolerations, pool.taints)) return false;
  PodTemplate together = pod;  // the pod's constraints with the claim's summed requests
  together.gpus = claim.gpus + pod.gpus;
  together.cpu_milli = claim.cpu_milli + pod.cpu_milli;
  together.memory_mib = claim.memory_mib + pod.memory_mib;
  std::vector<Offering> still;
  for (const auto& o : claim.options) {
    if (check_fit_type(together, cluster.types[o.type_index], *o.labels, {}).ok()) still.push_back(o);
  }
  if (still.empty()) return false;
  claim.options = std::move(still);
  claim.pods.push_back(pod_id);
  claim.gpus = together.gpus;
  claim.cpu_milli = together.cpu_milli;
  claim.memory_mib = together.memory_mib;
  return true;
}



}  // namespace

// ---- the scheduling simulation -------------------------------------------------------------------------

const Labels& SimNode::labels() const {
  if (!merged_) {
    auto all = std::make_shared<Labels>(own ? *own : Labels{});
    if (well_known) all->insert(well_known->begin(), well_known->end());
    if (pool) all->emplace(kNodePoolLabel, *pool);
    merged_ = std::move(all);
  }
  return *merged_;
}

std::vector<SimNode> simulation_nodes(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                      const std::set<std::uint32_t>& exclude) {
  std::vector<SimNode> out;
  // The well-known labels of each (type, capacity type, zone) the nodes have, built once per pass: a
  // cluster's nodes share a few, and this runs at every provisioning and consolidation pass.
  struct TypeLabels {
    int type_index;
    CapacityType capacity_type;
    const std::string* zone;
    std::shared_ptr<const Labels> labels;
  };
  std::vector<TypeLabels> known;
  const auto labels_of = [&](const Node& n) -> const std::shared_ptr<const Labels>& {
    for (const TypeLabels& k : known) {
      if (k.type_index == n.type_index && k.capacity_type == n.capacity_type && *k.zone == n.zone) return k.labels;
    }
    known.push_back(TypeLabels{n.type_index, n.capacity_type, &n.zone,
                               std::make_shared<const Labels>(instance_labels(cluster.types[n.type_index], n.capacity_type, n.zone))});
    return known.back().labels;
  };
  for (const auto& n : cluster.nodes) {
    if (!alive_phase(n.phase) || n.disrupted || exclude.count(n.id)) continue;
    const InstanceType& type = cluster.types[n.type_index];
    const NodePool* pool = find_pool(pools, n.owner);
    SimNode s;
    s.id = n.id;
    s.initialized = n.phase == NodePhase::Initialized;
    s.own = &n.labels;
    s.well_known = labels_of(n);
    if (pool) s.pool = &pool->name;
    // In-flight capacity: a node not yet Initialized will advertise its type's GPUs; its startup and
    // not-ready taints will be gone (Karpenter's in-flight simulation ignores them).
    int gpus = n.gpus_allocatable;
    std::int64_t cpu = n.cpu_allocatable_milli, mem = n.memory_allocatable_mib;
    if (!s.initialized) {
      gpus = type.gpus;
      if (cpu <= 0) cpu = allocatable_cpu_milli(type);
      if (mem <= 0) mem = allocatable_memory_mib(type);
    }
    s.gpus_free = gpus - n.gpus_requested;
    s.cpu_free_milli = cpu - n.cpu_requested_milli;
    s.memory_free_mib = mem - n.memory_requested_mib;
    for (const auto& t : n.taints) {
      if (s.initialized || !ephemeral_taint(t, pool)) s.taints.push_back(t);
    }
    out.push_back(std::move(s));
  }
  // Lab choice: ready capacity before in-flight capacity, then by id.
  std::stable_sort(out.begin(), out.end(), [](const SimNode& a, const SimNode& b) { return a.initialized && !b.initialized; });
  return out;
}

SimResult simulate_scheduling(const ClusterState& cluster, const std::vector<NodePool>& pools, std::vector<SimNode> nodes,
                              std::vector<std::uint32_t> pods, const PoolOfferings* given) {
  // Lab choice: first-fit decreasing by GPUs, then CPU, then memory (Karpenter sorts by CPU and memory
  // descending; GPUs lead here because they are what this lab packs), ties by pod id.
  std::sort(pods.begin(), pods.end(), [&](std::uint32_t a, std::uint32_t b) {
    const PodTemplate& ta = cluster.templates[cluster.pods[a].template_index];
    const PodTemplate& tb = cluster.templates[cluster.pods[b].template_index];
    if (ta.gpus != tb.gpus) return ta.gpus > tb.gpus;
    if (ta.cpu_milli != tb.cpu_milli) return ta.cpu_milli > tb.cpu_milli;
    if (ta.memory_mib != tb.memory_mib) return ta.memory_mib > tb.memory_mib;
    return a < b;
  });
  const std::vector<int> order = pool_order(pools);
  const PoolOfferings offerings = given ? PoolOfferings() : all_pool_offerings(pools, cluster.types);
  const PoolOfferings& offer = given ? *given : offerings;
  std::optional<PoolOfferings> unfiltered;  // the given offerings before the cache took some: only to explain
  std::vector<ResourceAmounts> usage(pools.size()), reserved(pools.size());
  for (std::size_t i = 0; i < pools.size(); ++i) usage[i] = pool_usage(cluster, pools[i].name);

  SimResult r;
  for (std::uint32_t pod_id : pods) {
    const PodTemplate& pod = cluster.templates[cluster.pods[pod_id].template_index];
    bool placed = false;
    // 1. existing and in-flight nodes; what earlier pods of the batch took is already subtracted.
    for (auto& n : nodes) {
      if (pod.gpus <= n.gpus_free && pod.cpu_milli <= n.cpu_free_milli && pod.memory_mib <= n.memory_free_mib &&
          fits_node_affinity(pod, n.labels()) && tolerates_all(pod.tolerations, n.taints)) {
        n.gpus_free -= pod.gpus;
        n.cpu_free_milli -= pod.cpu_milli;
        n.memory_free_mib -= pod.memory_mib;
        r.on_existing.emplace_back(pod_id, n.id);
        placed = true;
        break;
      }
    }
    if (placed) continue;
    // 2. NodeClaims this simulation already opened.
    for (auto& c : r.claims) {
      if (try_add_to_claim(cluster, pools, c, pod_id, pod)) {
        placed = true;
        break;
      }
    }
    if (placed) continue;
    // 3. a new NodeClaim from the first pool, in weight order, that can take the pod.
    std::vector<std::string> tried;
    for (int pi : order) {
      if (offer[pi].empty() && given && !unfiltered) unfiltered = all_pool_offerings(pools, cluster.types);
      const bool all_cached = offer[pi].empty() && unfiltered && !(*unfiltered)[static_cast<std::size_t>(pi)].empty();
      PoolCheck pc = check_pool(cluster, pools[pi], offer[pi], pod, usage[pi], reserved[pi], all_cached);
      if (pc.options.empty()) {
        tried.push_back(pool_title(pools[pi]) + ": " + pc.why);
        continue;
      }
      tried.push_back(pool_title(pools[pi]) + ": " + std::to_string(pc.options.size()) + " offerings fit");
      reserved[pi] = add(reserved[pi], max_capacity(cluster, pc.options));
      SimClaim c;
      c.pool = pi;
      c.options = std::move(pc.options);
      c.pods.push_back(pod_id);
      c.gpus = pod.gpus;
      c.cpu_milli = pod.cpu_milli;
      c.memory_mib = pod.memory_mib;
      c.pools_tried = "NodePools by weight: " + join(tried, "; ");
      r.claims.push_back(std::move(c));
      placed = true;
      break;
    }
    if (!placed) {
      r.unplaced.emplace_back(pod_id, pools.empty() ? std::string("no NodePools") : "NodePools by weight: " + join(tried, "; "));
    }
  }
  return r;
}

// ---- provisioning ------------------------------------------------------------------------------------

std::vector<std::uint32_t> provisionable_pods(const ClusterState& cluster) {
  std::vector<std::uint32_t> out;
  for (const auto& p : cluster.pods) {
    if (p.phase == PodPhase::Pending && !p.deleted && p.unschedulable_since >= 0) out.push_back(p.id);
  }
  return out;
}

ProvisioningPlan plan_provisioning(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                   const std::vector<std::uint32_t>& pods, const std::set<std::uint32_t>& exclude,
                                   Micros window_start, Micros now, const PoolOfferings* offerings) {
  // Karpenter's provisioner schedules every provisionable pod each time a batch closes, not only the pods
  // that opened the window: so pods already covered by an in-flight NodeClaim are simulated onto it again
  // (their nomination) and are not launched for twice.
  std::set<std::uint32_t> batch;
  for (std::uint32_t id : pods) {
    if (id < cluster.pods.size() && cluster.pods[id].phase == PodPhase::Pending && !cluster.pods[id].deleted) batch.insert(id);
  }
  for (std::uint32_t id : provisionable_pods(cluster)) batch.insert(id);
  ProvisioningPlan plan;
  if (batch.empty()) return plan;
  const std::vector<std::uint32_t> ids(batch.begin(), batch.end());

  SimResult r = simulate_scheduling(cluster, pools, simulation_nodes(cluster, pools, exclude), ids, offerings);
  plan.on_existing = r.on_existing;

  const std::string header = "batch window " + fmt_time(window_start) + " to " + fmt_time(now) + ": " +
                             std::to_string(ids.size()) + " pending pods " + fmt_ids(ids);
  std::string existing;
  if (!r.on_existing.empty()) {
    std::map<std::uint32_t, std::vector<std::uint32_t>> by_node;
    for (const auto& [pod, node] : r.on_existing) by_node[node].push_back(pod);
    std::vector<std::string> parts;
    for (const auto& [node, ps] : by_node) {
      const Node& n = cluster.nodes[node];
      parts.push_back("node " + std::to_string(node) + (n.phase == NodePhase::Initialized ? "" : " (in flight)") + " ← pods " +
                      fmt_ids(ps));
    }
    existing = "; " + std::to_string(r.on_existing.size()) + " fit existing capacity: " + join(parts, ", ");
  }

  for (std::size_t k = 0; k < r.claims.size(); ++k) {
    const SimClaim& c = r.claims[k];
    const NodePool& pool = pools[c.pool];
    const Offering& best = c.options.front();
    plan.launches.push_back(launch_for(cluster, pool, best));
    plan.launches.back().fallbacks = fleet_fallbacks(c.options, best);
    plan.launch_pods.push_back(c.pods);
    std::string choice = "chose " + fmt_offering(cluster, best) + ", cheapest of " + std::to_string(c.options.size()) +
                         " offerings that fit all its pods";
    for (const auto& o : c.options) {
      if (o.type_index != best.type_index || o.capacity_type != best.capacity_type) {
        choice += " (next: " + fmt_offering(cluster, o) + ")";
        break;
      }
    }
    ProvisionerLog log;
    log.controller = "karpenter.provisioner";
    log.action = "launch";
    log.reason = "Unschedulable";
    log.explanation = header + existing + "; NodeClaim " + std::to_string(k + 1) + " of " + std::to_string(r.claims.size()) +
                      " for pods " + fmt_ids(c.pods) + " (" + fmt_requests(c.gpus, c.cpu_milli, c.memory_mib) + "): " +
                      c.pools_tried + "; " + choice;
    plan.log.push_back(std::move(log));
  }
  for (const auto& [pod, why] : r.unplaced) {
    plan.unplaced.push_back(pod);
    const PodTemplate& t = cluster.templates[cluster.pods[pod].template_index];
    ProvisionerLog log;
    log.controller = "karpenter.provisioner";
    log.action = "none";
    log.reason = "NoCompatibleNodePool";
    log.explanation = header + "; pod " + std::to_string(pod) + " (" + t.name + ", " +
                      fmt_requests(t.gpus, t.cpu_milli, t.memory_mib) + ") fits no NodePool: " + why +
                      "; it stays pending and is retried when marked again";
    plan.log.push_back(std::move(log));
  }
  if (r.claims.empty() && r.unplaced.empty()) {
    ProvisionerLog log;
    log.controller = "karpenter.provisioner";
    log.action = "none";
    log.reason = "FitsExistingCapacity";
    log.explanation = header + existing + "; no new NodeClaim";
    plan.log.push_back(std::move(log));
  }
  return plan;
}

}  // namespace gpuscale
