// Karpenter: batched provisioning from NodePools, liveness, expiration and disruption (see karpenter.hpp).
// Sources are kubernetes-sigs/karpenter (pkg/controllers/provisioning, pkg/controllers/disruption,
// pkg/controllers/nodeclaim) as summarised in real-systems.md §3; each lab choice is marked "Lab choice".
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iterator>

#include "k8s/cron.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

namespace {

constexpr const char* kCapacityTypeLabel = "karpenter.sh/capacity-type";
constexpr const char* kNodePoolLabel = "karpenter.sh/nodepool";
constexpr std::int64_t kUnlimited = INT32_MAX;  // Karpenter's "no budget applies" (math.MaxInt32)

// ---- formatting from integers only, so logs are byte-identical natively and in WASM ----

std::string fmt_fraction(std::int64_t whole, std::int64_t frac, int digits, int min_digits) {
  std::string s = std::to_string(whole);
  if (frac == 0 && min_digits == 0) return s;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*lld", digits, static_cast<long long>(frac));
  std::string f = buf;
  while (static_cast<int>(f.size()) > min_digits && f.back() == '0') f.pop_back();
  return f.empty() ? s : s + "." + f;
}

std::string fmt_count(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "t=12.5 s"
std::string fmt_time(Micros t) {
  const bool neg = t < 0;
  const Micros a = neg ? -t : t;
  return std::string("t=") + (neg ? "-" : "") + fmt_fraction(a / kMicrosPerSecond, a % kMicrosPerSecond, 6, 0) + " s";
}

std::string fmt_duration(Micros d) { return fmt_fraction(d / kMicrosPerSecond, d % kMicrosPerSecond, 6, 0) + " s"; }

// "$55.04/h"
std::string fmt_price(std::int64_t micro) { return "$" + fmt_fraction(micro / 1000000, micro % 1000000, 6, 2) + "/h"; }

std::string fmt_ids(const std::vector<std::uint32_t>& ids, std::size_t max_shown = 24) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (i == max_shown) {
      s += ", … (" + std::to_string(ids.size()) + " in all)";
      break;
    }
    if (i) s += ", ";
    s += std::to_string(ids[i]);
  }
  return s + "]";
}


std::string fmt_offering(const ClusterState& cluster, const Offering& o) {
  return cluster.types[o.type_index].name + " " + to_string(o.capacity_type) + " " + o.zone + " at " + fmt_price(o.price_micro_usd);
}

std::string fmt_requests(int gpus, std::int64_t cpu_milli, std::int64_t memory_mib) {
  return fmt_count(static_cast<std::size_t>(gpus), "GPU") + ", " + std::to_string(cpu_milli) + "m CPU, " + std::to_string(memory_mib) + " MiB";
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

// ---- small predicates ----

bool alive_phase(NodePhase p) { return p == NodePhase::Launched || p == NodePhase::Registered || p == NodePhase::Initialized; }

const NodePool* find_pool(const std::vector<NodePool>& pools, const std::string& name) {
  for (const auto& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

int find_pool_index(const std::vector<NodePool>& pools, const std::string& name) {
  for (std::size_t i = 0; i < pools.size(); ++i) {
    if (pools[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Taints a node sheds before it is Initialized: Karpenter ignores them when it simulates against in-flight
// capacity (the pool's startupTaints and the well-known ephemeral not-ready taints).
bool ephemeral_taint(const Taint& t, const NodePool* pool) {
  if (t.key == "node.kubernetes.io/not-ready" || t.key == "node.kubernetes.io/unreachable" ||
      t.key == "node.cloudprovider.kubernetes.io/uninitialized" || t.key == "karpenter.sh/unregistered") {
    return true;
  }
  if (!pool) return false;
  for (const Taint& s : pool->startup_taints) {
    if (s.key == t.key && s.effect == t.effect) return true;
  }
  return false;
}

std::int64_t catalogue_price(const InstanceType& type, CapacityType capacity_type) {
  return price_micro_usd(hourly_price(type, capacity_type));
}

std::int64_t node_price(const ClusterState& cluster, const Node& node) {
  if (node.price_usd_per_hour > 0) return price_micro_usd(node.price_usd_per_hour);
  return catalogue_price(cluster.types[node.type_index], node.capacity_type);
}

ResourceAmounts add(ResourceAmounts a, const ResourceAmounts& b) {
  a.gpus += b.gpus;
  a.cpu_milli += b.cpu_milli;
  a.memory_mib += b.memory_mib;
  a.nodes += b.nodes;
  return a;
}

std::string fmt_remaining(const NodePool& pool, const ResourceAmounts& used) {
  std::vector<std::string> parts;
  if (pool.limit_gpus) parts.push_back("nvidia.com/gpu " + std::to_string(*pool.limit_gpus - used.gpus));
  if (pool.limit_cpu_milli) parts.push_back("cpu " + std::to_string(*pool.limit_cpu_milli - used.cpu_milli) + "m");
  if (pool.limit_memory_mib) parts.push_back("memory " + std::to_string(*pool.limit_memory_mib - used.memory_mib) + " MiB");
  if (pool.limit_nodes) parts.push_back("nodes " + std::to_string(*pool.limit_nodes - used.nodes));
  return join(parts, ", ");
}

// One pool's answer for one pod needing a new NodeClaim: the offerings that can take it, or why none can.
struct PoolCheck {
  std::vector<Offering> options;
  std::string why;
};

PoolCheck check_pool(const ClusterState& cluster, const NodePool& pool, const std::vector<Offering>& offerings,
                     const PodTemplate& pod, const ResourceAmounts& usage, const ResourceAmounts& reserved) {
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
    pc.why = "requirements allow no offering of the catalogue";
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

NodeLaunch launch_for(const ClusterState& cluster, const NodePool& pool, const Offering& o) {
  NodeLaunch l;
  l.owner = pool.name;
  l.type_index = o.type_index;
  l.capacity_type = o.capacity_type;
  l.zone = o.zone;
  l.labels = pool_node_labels(pool, instance_labels(cluster.types[o.type_index], o.capacity_type, o.zone));
  l.taints = pool.taints;
  l.startup_taints = pool.startup_taints;
  l.expire_after = pool.expire_after ? *pool.expire_after : -1;
  return l;
}

std::string pool_title(const NodePool& pool) { return pool.name + " (weight " + std::to_string(pool.weight) + ")"; }

std::string budget_text(const NodePool& pool, DisruptionReason reason, const BudgetCount& b, std::int64_t now_unix_us) {
  std::vector<std::string> budgets;
  for (const auto& bd : pool.budgets) {
    std::string s = "nodes " + bd.nodes;
    if (!bd.reasons.empty()) {
      std::vector<std::string> r;
      for (DisruptionReason x : bd.reasons) r.push_back(to_string(x));
      s += " for " + join(r, "/");
    }
    if (bd.cron && bd.duration) {
      s += " at \"" + bd.schedule + "\" for " + fmt_duration(*bd.duration) +
           (budget_active(bd, now_unix_us) ? " (active now)" : " (not active now)");
    }
    budgets.push_back(s);
  }
  return "budget " + pool.name + "/" + to_string(reason) + ": {" + join(budgets, "; ") + "} over " + fmt_count(static_cast<std::size_t>(b.total), "node") + ", " + std::to_string(b.disrupting) + " disrupting → " +
         (b.allowed >= kUnlimited ? std::string("unlimited") : std::to_string(b.allowed)) + " allowed";
}

}  // namespace

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
  for (const auto& r : pool.requirements) {
    if (r.op == SelectorOp::In && !r.values.empty() && !well_known.count(r.key)) l.emplace(r.key, r.values[0]);
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

// ---- the scheduling simulation -------------------------------------------------------------------------

std::vector<SimNode> simulation_nodes(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                      const std::set<std::uint32_t>& exclude) {
  std::vector<SimNode> out;
  for (const auto& n : cluster.nodes) {
    if (!alive_phase(n.phase) || n.disrupted || exclude.count(n.id)) continue;
    const InstanceType& type = cluster.types[n.type_index];
    const NodePool* pool = find_pool(pools, n.owner);
    SimNode s;
    s.id = n.id;
    s.initialized = n.phase == NodePhase::Initialized;
    s.labels = n.labels;
    for (const auto& kv : instance_labels(type, n.capacity_type, n.zone)) s.labels.insert(kv);
    if (pool) s.labels.emplace(kNodePoolLabel, pool->name);
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
  std::vector<ResourceAmounts> usage(pools.size()), reserved(pools.size());
  for (std::size_t i = 0; i < pools.size(); ++i) usage[i] = pool_usage(cluster, pools[i].name);

  SimResult r;
  for (std::uint32_t pod_id : pods) {
    const PodTemplate& pod = cluster.templates[cluster.pods[pod_id].template_index];
    bool placed = false;
    // 1. existing and in-flight nodes; what earlier pods of the batch took is already subtracted.
    for (auto& n : nodes) {
      if (pod.gpus <= n.gpus_free && pod.cpu_milli <= n.cpu_free_milli && pod.memory_mib <= n.memory_free_mib &&
          fits_node_affinity(pod, n.labels) && tolerates_all(pod.tolerations, n.taints)) {
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
      PoolCheck pc = check_pool(cluster, pools[pi], offer[pi], pod, usage[pi], reserved[pi]);
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

// ---- disruption --------------------------------------------------------------------------------------

std::int64_t allowed_disruptions(const std::string& nodes, std::int64_t total, std::int64_t disrupting) {
  std::string digits = nodes;
  const bool percent = !digits.empty() && digits.back() == '%';
  if (percent) digits.pop_back();
  if (digits.empty() || digits.size() > 9) return 0;
  std::int64_t v = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return 0;
    v = v * 10 + (ch - '0');
  }
  // nodepool.go GetAllowedDisruptions: intstr.GetScaledValueFromIntOrPercent(..., roundUp=true).
  const std::int64_t raw = percent ? (v * std::max<std::int64_t>(total, 0) + 99) / 100 : v;
  return std::max<std::int64_t>(0, raw - disrupting);
}

bool budget_active(const DisruptionBudget& budget, std::int64_t now_unix_us) {
  // nodepool.go Budget.IsActive: no schedule → always; else Next(now − duration) ≤ now.
  if (!budget.cron || !budget.duration) return true;
  return cron_window_active(*budget.cron, *budget.duration, now_unix_us);
}

std::int64_t pool_allowed_disruptions(const NodePool& pool, DisruptionReason reason, std::int64_t total,
                                      std::int64_t disrupting, std::int64_t now_unix_us) {
  std::int64_t best = kUnlimited;
  for (const auto& b : pool.budgets) {
    const bool applies = b.reasons.empty() || std::find(b.reasons.begin(), b.reasons.end(), reason) != b.reasons.end();
    if (applies && budget_active(b, now_unix_us)) best = std::min(best, allowed_disruptions(b.nodes, total, 0));
  }
  return std::max<std::int64_t>(0, best - disrupting);
}

BudgetCount pool_budget(const ClusterState& cluster, const NodePool& pool, DisruptionReason reason,
                        const std::set<std::uint32_t>& marked, std::int64_t now_unix_us) {
  // helpers.go BuildDisruptionBudgetMapping: count the pool's initialized nodes whose instance is not yet
  // terminated; a draining node (lab phase Terminating) still counts, and counts as disrupting, as do nodes
  // marked for deletion (disrupted, or in a command of ours). Lab nodes are never NotReady once Initialized.
  BudgetCount b;
  for (const auto& n : cluster.nodes) {
    if (n.owner != pool.name || n.initialized_at < 0) continue;
    if (n.phase != NodePhase::Initialized && n.phase != NodePhase::Terminating) continue;
    ++b.total;
    if (n.phase == NodePhase::Terminating || n.disrupted || marked.count(n.id)) ++b.disrupting;
  }
  b.allowed = pool_allowed_disruptions(pool, reason, b.total, b.disrupting, now_unix_us);
  return b;
}

Micros consolidatable_at(const Node& node, const NodePool& pool) {
  // nodeclaim/disruption/consolidation.go: measured from the last pod event, else from Initialized.
  if (!pool.consolidate_after || node.initialized_at < 0) return -1;
  const Micros since = node.last_pod_event_at >= 0 ? node.last_pod_event_at : node.initialized_at;
  return since + *pool.consolidate_after;
}

CandidateScan disruption_candidates(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                    const std::set<std::uint32_t>& marked, const std::map<std::uint32_t, Micros>& nominated_until,
                                    Micros now) {
  CandidateScan scan;
  for (const auto& n : cluster.nodes) {
    const int pi = find_pool_index(pools, n.owner);
    if (pi < 0 || n.phase != NodePhase::Initialized || n.disrupted || marked.count(n.id)) continue;
    const NodePool& pool = pools[pi];
    const std::string who = "node " + std::to_string(n.id);
    if (!pool.consolidate_after) {
      scan.skipped.push_back(who + ": NodePool " + pool.name + " has consolidateAfter Never");
      continue;
    }
    const Micros at = consolidatable_at(n, pool);
    if (now < at) {
      scan.skipped.push_back(who + ": not consolidatable until " + fmt_time(at) + " (consolidateAfter " +
                             fmt_duration(*pool.consolidate_after) + " after " +
                             (n.last_pod_event_at >= 0 ? "the last pod event" : "initialization") + ")");
      continue;
    }
    if (n.do_not_disrupt) {
      scan.skipped.push_back(who + ": karpenter.sh/do-not-disrupt on the node");
      continue;
    }
    Candidate c;
    c.node = n.id;
    c.pool = pi;
    std::int64_t priority = 0;
    std::int32_t blocking = -1;
    for (std::uint32_t pid : n.pods) {
      const Pod& p = cluster.pods[pid];
      if (p.phase != PodPhase::Running) continue;  // terminating pods are not rescheduled
      const PodTemplate& t = cluster.templates[p.template_index];
      if (t.do_not_disrupt && blocking < 0) blocking = static_cast<std::int32_t>(pid);
      c.pods.push_back(pid);
      priority += t.priority;
    }
    if (blocking >= 0) {
      scan.skipped.push_back(who + ": do-not-disrupt pod " + std::to_string(blocking));
      continue;
    }
    // pdb.go CanEvictPods: a pod whose PodDisruptionBudget allows no disruption now blocks its node.
    std::string pdb_why;
    const auto pdb_blocked = std::find_if(c.pods.begin(), c.pods.end(), [&](std::uint32_t pid) {
      return !eviction_allowed(cluster, cluster.pods[pid], &pdb_why);
    });
    if (pdb_blocked != c.pods.end()) {
      scan.skipped.push_back(who + ": pod " + std::to_string(*pdb_blocked) + " is protected by " + pdb_why);
      continue;
    }
    auto nom = nominated_until.find(n.id);
    if (nom != nominated_until.end() && now < nom->second) {
      scan.skipped.push_back(who + ": nominated for pending pods");
      continue;
    }
    // Lab choice: disruption cost = 1 per pod (scaled by 2^25) + pod priority, as Karpenter's
    // ReschedulingCost without pod-deletion-cost and without the remaining-lifetime factor; candidates are
    // sorted by it ascending (Karpenter ≤ v1.13; v1.14's savings/disruption ordering is not modelled).
    c.cost = static_cast<std::int64_t>(c.pods.size()) * (std::int64_t(1) << 25) + priority;
    c.price_micro_usd = node_price(cluster, n);
    scan.candidates.push_back(std::move(c));
  }
  return scan;
}

ConsolidationOption compute_consolidation(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                          const std::vector<Candidate>& candidates, const std::set<std::uint32_t>& marked,
                                          const KarpenterSettings& settings, bool multi_node,
                                          const PoolOfferings* offerings) {
  ConsolidationOption opt;
  std::set<std::uint32_t> exclude = marked;
  std::set<std::uint32_t> candidate_pods;
  for (const auto& c : candidates) {
    opt.nodes.push_back(c.node);
    opt.candidates_price += c.price_micro_usd;
    exclude.insert(c.node);
    candidate_pods.insert(c.pods.begin(), c.pods.end());
  }
  const std::string subject = (candidates.size() == 1 ? "node " : "nodes ") +
                              (candidates.size() == 1 ? std::to_string(opt.nodes[0]) : fmt_ids(opt.nodes)) + " (" +
                              fmt_price(opt.candidates_price) + ", " + fmt_count(candidate_pods.size(), "pod") + ")";

  // helpers.go SimulateScheduling: pending pods + the candidates' pods + pods of deleting nodes, onto the
  // active nodes other than the candidates.
  std::vector<std::uint32_t> pods = provisionable_pods(cluster);
  pods.insert(pods.end(), candidate_pods.begin(), candidate_pods.end());
  std::set<std::uint32_t> deleting_pods;
  for (const auto& n : cluster.nodes) {
    if (exclude.count(n.id) && !marked.count(n.id)) continue;  // a candidate
    if (n.phase != NodePhase::Terminating && !marked.count(n.id)) continue;
    for (std::uint32_t pid : n.pods) {
      if (cluster.pods[pid].phase == PodPhase::Running) deleting_pods.insert(pid);
    }
  }
  pods.insert(pods.end(), deleting_pods.begin(), deleting_pods.end());
  const std::vector<SimNode> nodes = simulation_nodes(cluster, pools, exclude);
  std::set<std::uint32_t> uninitialized;
  for (const auto& n : nodes) {
    if (!n.initialized) uninitialized.insert(n.id);
  }
  SimResult r = simulate_scheduling(cluster, pools, nodes, pods, offerings);

  // AllNonPendingPodsScheduled: a pod that was pending may stay pending; every other pod must land.
  for (const auto& [pod, why] : r.unplaced) {
    if (candidate_pods.count(pod) || deleting_pods.count(pod)) {
      opt.why = subject + ": pod " + std::to_string(pod) + " would not schedule (" + why + ")";
      return opt;
    }
  }
  std::vector<std::string> moves;
  for (const auto& [pod, node] : r.on_existing) {
    if (!candidate_pods.count(pod)) continue;
    if (uninitialized.count(node)) {
      opt.why = subject + ": pod " + std::to_string(pod) + " would schedule against uninitialized node " + std::to_string(node);
      return opt;
    }
    moves.push_back(std::to_string(pod) + "→node " + std::to_string(node));
  }
  if (r.claims.empty()) {
    opt.action = DisruptionAction::Delete;
    opt.why = subject + ": every pod fits on other nodes (" + (moves.empty() ? std::string("none to move") : join(moves, ", ")) + ")";
    return opt;
  }
  if (r.claims.size() > 1) {
    opt.why = subject + ": would need " + std::to_string(r.claims.size()) + " new NodeClaims (at most 1)";
    return opt;
  }

  const SimClaim& claim = r.claims.front();
  const std::vector<Offering>& all = claim.options;  // cheapest first
  bool all_spot = true;
  for (const auto& c : candidates) all_spot = all_spot && cluster.nodes[c.node].capacity_type == CapacityType::Spot;
  bool allows_spot = false;
  for (const auto& o : all) allows_spot = allows_spot || o.capacity_type == CapacityType::Spot;
  const std::string need = subject + ": needs one new NodeClaim for pods " + fmt_ids(claim.pods) + " (" +
                           fmt_requests(claim.gpus, claim.cpu_milli, claim.memory_mib) + ") from " + pools[claim.pool].name;

  std::vector<Offering> cheaper;
  if (all_spot && allows_spot) {
    // computeSpotToSpotConsolidation.
    if (!settings.spot_to_spot_consolidation) {
      opt.why = need + "; SpotToSpotConsolidation is disabled: a spot node is not replaced by a spot node";
      return opt;
    }
    for (const auto& o : all) {
      if (o.capacity_type == CapacityType::Spot && o.price_micro_usd < opt.candidates_price) cheaper.push_back(o);
    }
    std::vector<int> types;  // distinct instance types, cheapest first
    for (const auto& o : cheaper) {
      if (std::find(types.begin(), types.end(), o.type_index) == types.end()) types.push_back(o.type_index);
    }
    if (cheaper.empty()) {
      opt.why = need + "; no spot offering is strictly cheaper than " + fmt_price(opt.candidates_price);
      return opt;
    }
    if (!multi_node && static_cast<int>(types.size()) < settings.min_spot_to_spot_options) {
      opt.why = need + "; spot-to-spot needs " + std::to_string(settings.min_spot_to_spot_options) +
                " cheaper instance types, found " + std::to_string(types.size());
      return opt;
    }
    // Launch only among the cheapest 15 types, so the result is not itself immediately replaceable.
    if (static_cast<int>(types.size()) > settings.min_spot_to_spot_options) types.resize(settings.min_spot_to_spot_options);
    std::vector<Offering> kept;
    for (const auto& o : cheaper) {
      if (std::find(types.begin(), types.end(), o.type_index) != types.end()) kept.push_back(o);
    }
    cheaper = std::move(kept);
  } else {
    // RemoveInstanceTypeOptionsByPriceAndMinValues: strictly cheaper than the candidates' summed price.
    for (const auto& o : all) {
      if (o.price_micro_usd < opt.candidates_price) cheaper.push_back(o);
    }
    if (cheaper.empty()) {
      opt.why = need + "; cheapest replacement " + fmt_offering(cluster, all.front()) + " is not strictly cheaper than " +
                fmt_price(opt.candidates_price);
      return opt;
    }
    // On-demand → [on-demand, spot]: prices were filtered assuming spot launches, so require spot.
    bool has_spot = false, has_od = false;
    for (const auto& o : cheaper) (o.capacity_type == CapacityType::Spot ? has_spot : has_od) = true;
    if (has_spot && has_od) {
      std::vector<Offering> spot_only;
      for (const auto& o : cheaper) {
        if (o.capacity_type == CapacityType::Spot) spot_only.push_back(o);
      }
      cheaper = std::move(spot_only);
    }
  }
  if (multi_node) {
    // filterOutSameType: if a replacement option is a type being removed, it must be cheaper than the
    // cheapest candidate of that type (otherwise deleting the others is the better command).
    std::int64_t max_price = INT64_MAX;
    for (const auto& o : cheaper) {
      for (const auto& c : candidates) {
        if (cluster.nodes[c.node].type_index == o.type_index) max_price = std::min(max_price, c.price_micro_usd);
      }
    }
    std::vector<Offering> kept;
    for (const auto& o : cheaper) {
      if (o.price_micro_usd < max_price) kept.push_back(o);
    }
    if (kept.empty()) {
      opt.why = need + "; every cheaper option is a type being removed (filterOutSameType)";
      return opt;
    }
    cheaper = std::move(kept);
  }
  const Offering& best = cheaper.front();
  NodeLaunch l = launch_for(cluster, pools[claim.pool], best);
  l.replaces = static_cast<std::int32_t>(candidates.front().node);
  opt.action = DisruptionAction::Replace;
  opt.replacement = l;
  opt.replacement_price = best.price_micro_usd;
  opt.why = need + "; replace with " + fmt_offering(cluster, best) + " < " + fmt_price(opt.candidates_price) + " (saves " +
            fmt_price(opt.candidates_price - best.price_micro_usd) + ")" + (moves.empty() ? "" : "; others: " + join(moves, ", "));
  return opt;
}

namespace {

// consolidationPolicy Balanced (v1.14; kubernetes-sigs/karpenter designs/balanced-consolidation.md):
// a consolidation move is approved when score = savings fraction / disruption fraction >= 1/k, k = 2.
//   savings fraction    = (candidates' price − replacement's price) / the NodePool's summed node price
//   disruption fraction = the candidates' disruption cost / the NodePool's summed disruption cost
// A node's disruption cost is 1 (per-node baseline) + Σ max(0, EvictionCost(pod)) over its bound pods,
// EvictionCost = clamp(1 + priority / 2^25 + pod-deletion-cost / 2^27, −10, 10) (pkg/utils/disruption).
// Lab choices: pod-deletion-cost is not modelled (0); a multi-node move across several NodePools is
// scored against their combined totals; the design's worked examples leave out the per-node baseline,
// its definition and edge cases (a single-node pool's delete scores exactly 1) include it, as here.
// Pools with another policy are not scored (WhenEmptyOrUnderutilized approves any strict saving).
struct BalancedScore {
  bool scored = false;  // a candidate's pool has policy Balanced
  double savings_fraction = 0, disruption_fraction = 0, score = 0;
  bool approved = true;
  std::string text;
};

double node_disruption_cost(const ClusterState& cluster, const Node& n) {
  double cost = 1.0;
  for (std::uint32_t pid : n.pods) {
    const Pod& p = cluster.pods[pid];
    if (p.phase != PodPhase::Running) continue;
    const double eviction = std::clamp(1.0 + cluster.templates[p.template_index].priority / 33554432.0, -10.0, 10.0);
    cost += std::max(0.0, eviction);
  }
  return cost;
}

BalancedScore balanced_score(const ClusterState& cluster, const std::vector<NodePool>& pools, const ConsolidationOption& o) {
  constexpr double kBalancedK = 2.0;
  BalancedScore b;
  std::set<std::string> source_pools;
  double move_disruption = 0;
  for (std::uint32_t id : o.nodes) {
    const Node& n = cluster.nodes[id];
    source_pools.insert(n.owner);
    const int pi = find_pool_index(pools, n.owner);
    b.scored = b.scored || (pi >= 0 && pools[pi].consolidation_policy == ConsolidationPolicy::Balanced);
    move_disruption += node_disruption_cost(cluster, n);
  }
  if (!b.scored) return b;
  std::int64_t pool_price = 0;
  double pool_disruption = 0;
  for (const auto& n : cluster.nodes) {
    if (!alive_phase(n.phase) || !source_pools.count(n.owner)) continue;
    pool_price += node_price(cluster, n);
    pool_disruption += node_disruption_cost(cluster, n);
  }
  const std::int64_t savings = o.candidates_price - (o.action == DisruptionAction::Replace ? o.replacement_price : 0);
  b.savings_fraction = pool_price > 0 ? static_cast<double>(savings) / static_cast<double>(pool_price) : 0;
  b.disruption_fraction = pool_disruption > 0 ? move_disruption / pool_disruption : 1;
  b.score = savings > 0 ? b.savings_fraction / b.disruption_fraction : 0;
  b.approved = savings > 0 && b.score >= 1.0 / kBalancedK;
  char buf[200];
  std::snprintf(buf, sizeof buf, "Balanced: score %.2f %s threshold %.2f (consolidationThreshold: %.1f, savings %.1f%%, disruption %.1f%%)",
                b.score, b.approved ? ">=" : "<", 1.0 / kBalancedK, kBalancedK, 100 * b.savings_fraction,
                100 * b.disruption_fraction);
  b.text = buf;
  return b;
}

// compute_consolidation, then, for a Balanced pool, the score: a rejected move is no action.
ConsolidationOption scored_consolidation(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                         const std::vector<Candidate>& candidates, const std::set<std::uint32_t>& marked,
                                         const KarpenterSettings& settings, bool multi_node, const PoolOfferings* offerings) {
  ConsolidationOption o = compute_consolidation(cluster, pools, candidates, marked, settings, multi_node, offerings);
  if (o.action == DisruptionAction::None) return o;
  const BalancedScore b = balanced_score(cluster, pools, o);
  if (!b.scored) return o;
  if (b.approved) {
    o.why += "; " + b.text;
  } else {
    o.action = DisruptionAction::None;
    o.replacement.reset();
    o.why += "; rejected by " + b.text;
  }
  return o;
}

}  // namespace

std::string command_invalidation(const DisruptionDecision& d, const ClusterState& cluster, const std::vector<NodePool>& pools,
                                 const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                 const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                 const PoolOfferings* offerings) {
  // ValidateCandidates: still candidates (Initialized, consolidateAfter elapsed, no do-not-disrupt, not
  // nominated for pending pods), and within the budgets, counted one by one.
  const CandidateScan scan = disruption_candidates(cluster, pools, marked, nominated_until, now);
  std::vector<Candidate> current;
  for (std::uint32_t id : d.nodes) {
    auto it = std::find_if(scan.candidates.begin(), scan.candidates.end(), [&](const Candidate& c) { return c.node == id; });
    if (it == scan.candidates.end()) {
      std::string why = "node " + std::to_string(id) + " is no longer a candidate";
      for (const auto& skipped : scan.skipped) {
        if (skipped.rfind("node " + std::to_string(id) + ":", 0) == 0) why = skipped;
      }
      return why;
    }
    current.push_back(*it);
  }
  const std::int64_t now_unix_us = settings.clock_start_unix_s * kMicrosPerSecond + now;
  std::map<int, std::int64_t> left;
  for (const auto& c : current) {
    if (!left.count(c.pool)) left[c.pool] = pool_budget(cluster, pools[c.pool], d.reason, marked, now_unix_us).allowed;
    if (left[c.pool]-- <= 0) return "a candidate can no longer be disrupted without violating budgets (" + pools[c.pool].name + ")";
  }
  if (d.method == DisruptionMethod::Emptiness) {
    for (const auto& c : current) {
      if (!c.pods.empty()) return "node " + std::to_string(c.node) + " is no longer empty (" + fmt_count(c.pods.size(), "pod") + ")";
    }
    return "";
  }
  // ValidateCommand: the scheduling simulation of the candidates' pods must give the same command.
  const ConsolidationOption o =
      scored_consolidation(cluster, pools, current, marked, settings, d.method == DisruptionMethod::MultiNodeConsolidation, offerings);
  if (o.action != d.action) return "the scheduling simulation now gives " + (o.action == DisruptionAction::None ? "no action: " + o.why : std::string(to_string(o.action)));
  if (d.action == DisruptionAction::Replace && (!o.replacement || o.replacement->type_index != d.replacement->type_index ||
                                o.replacement->capacity_type != d.replacement->capacity_type)) {
    return "the scheduling simulation now needs a different replacement: " + o.why;
  }
  return "";
}

DisruptionDecision decide_disruption(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                     const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                     const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                     const PoolOfferings* offerings) {
  DisruptionDecision d;
  d.log.controller = "karpenter.disruption";
  d.log.action = "none";
  const std::int64_t now_unix_us = settings.clock_start_unix_s * kMicrosPerSecond + now;  // for budget schedules
  CandidateScan scan = disruption_candidates(cluster, pools, marked, nominated_until, now);
  d.had_candidates = !scan.candidates.empty() || !scan.skipped.empty();
  std::vector<std::string> text;
  {
    std::vector<std::string> c;
    for (const auto& cand : scan.candidates) {
      c.push_back(std::to_string(cand.node) + " (" + pools[cand.pool].name + ", " + fmt_count(cand.pods.size(), "pod") + ", " +
                  fmt_price(cand.price_micro_usd) + ")");
    }
    text.push_back("candidates: " + (c.empty() ? std::string("none") : "nodes " + join(c, ", ")));
    if (!scan.skipped.empty()) text.push_back("skipped: " + join(scan.skipped, "; "));
  }
  auto by_cost = [](std::vector<Candidate> v) {
    std::stable_sort(v.begin(), v.end(), [](const Candidate& a, const Candidate& b) {
      if (a.cost != b.cost) return a.cost < b.cost;
      return a.node < b.node;
    });
    return v;
  };
  auto budgets = [&](DisruptionReason reason) {
    std::vector<BudgetCount> b(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) b[i] = pool_budget(cluster, pools[i], reason, marked, now_unix_us);
    return b;
  };
  auto finish = [&](DisruptionMethod method, DisruptionAction action, DisruptionReason reason) {
    d.method = method;
    d.action = action;
    d.reason = reason;
    d.log.action = to_string(action);
    d.log.reason = method == DisruptionMethod::None ? "" : to_string(reason);
    d.log.explanation = join(text, "; ");
    return d;
  };

  // 1. Emptiness (every policy): delete all empty candidates the budgets allow, as one command.
  std::vector<Candidate> empty;
  for (const auto& c : scan.candidates) {
    if (c.pods.empty()) empty.push_back(c);
  }
  if (!empty.empty()) {
    std::vector<BudgetCount> b = budgets(DisruptionReason::Empty);
    std::vector<std::int64_t> left(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) left[i] = b[i].allowed;
    std::vector<std::uint32_t> chosen, blocked;
    std::set<int> pools_seen;
    for (const auto& c : by_cost(empty)) {
      pools_seen.insert(c.pool);
      if (left[c.pool] <= 0) {
        blocked.push_back(c.node);
        continue;
      }
      --left[c.pool];
      chosen.push_back(c.node);
    }
    std::vector<std::string> bt;
    for (int pi : pools_seen) bt.push_back(budget_text(pools[pi], DisruptionReason::Empty, b[pi], now_unix_us));
    if (!chosen.empty()) {
      d.nodes = chosen;
      text.push_back("Emptiness: delete empty nodes " + fmt_ids(chosen) + (blocked.empty() ? "" : ", budget holds back " + fmt_ids(blocked)) +
                     " (" + join(bt, "; ") + ")");
      return finish(DisruptionMethod::Emptiness, DisruptionAction::Delete, DisruptionReason::Empty);
    }
    text.push_back("Emptiness: empty nodes " + fmt_ids(blocked) + " held back by budgets (" + join(bt, "; ") + ")");
  }

  // 2. Consolidation candidates: not empty, policy WhenEmptyOrUnderutilized or Balanced (whose moves must
  //    also pass the score, balanced_score).
  std::vector<Candidate> cons;
  std::vector<std::string> when_empty;
  for (const auto& c : scan.candidates) {
    if (c.pods.empty()) continue;
    if (pools[c.pool].consolidation_policy == ConsolidationPolicy::WhenEmpty) {
      when_empty.push_back(std::to_string(c.node));
      continue;
    }
    cons.push_back(c);
  }
  if (!when_empty.empty()) text.push_back("not empty under consolidationPolicy WhenEmpty: nodes " + join(when_empty, ", "));
  if (cons.empty()) {
    text.push_back("no action");
    return finish(DisruptionMethod::None, DisruptionAction::None, DisruptionReason::Empty);
  }
  cons = by_cost(cons);

  // 3. MultiNodeConsolidation: budget-filtered prefix of at most 100, binary search for the largest prefix
  //    (of at least 2) that works.
  {
    std::vector<BudgetCount> b = budgets(DisruptionReason::Underutilized);
    std::vector<std::int64_t> left(pools.size());
    for (std::size_t i = 0; i < pools.size(); ++i) left[i] = b[i].allowed;
    std::vector<Candidate> disruptable;
    for (const auto& c : cons) {
      if (left[c.pool] <= 0) continue;
      --left[c.pool];
      disruptable.push_back(c);
    }
    const int max_parallel = std::min<int>(static_cast<int>(disruptable.size()), settings.max_multi_node_candidates);
    if (disruptable.size() >= 2) {
      int lo = 1, hi = max_parallel;
      if (static_cast<int>(disruptable.size()) <= hi) hi = static_cast<int>(disruptable.size()) - 1;
      ConsolidationOption saved;
      std::string last_fail;
      while (lo <= hi) {
        const int mid = (lo + hi) / 2;
        std::vector<Candidate> prefix(disruptable.begin(), disruptable.begin() + mid + 1);
        ConsolidationOption o = scored_consolidation(cluster, pools, prefix, marked, settings, true, offerings);
        if (o.action != DisruptionAction::None) {
          saved = std::move(o);
          lo = mid + 1;
        } else {
          last_fail = o.why;
          hi = mid - 1;
        }
      }
      if (saved.action != DisruptionAction::None) {
        std::set<int> ps;
        for (std::uint32_t id : saved.nodes) ps.insert(find_pool_index(pools, cluster.nodes[id].owner));
        std::vector<std::string> bt;
        for (int pi : ps) bt.push_back(budget_text(pools[pi], DisruptionReason::Underutilized, b[pi], now_unix_us));
        text.push_back("MultiNodeConsolidation: " + saved.why + " (" + join(bt, "; ") + ")");
        d.nodes = saved.nodes;
        d.replacement = saved.replacement;
        return finish(DisruptionMethod::MultiNodeConsolidation, saved.action, DisruptionReason::Underutilized);
      }
      text.push_back("MultiNodeConsolidation: no prefix of " + std::to_string(disruptable.size()) + " candidates works (" + last_fail + ")");
    } else {
      text.push_back("MultiNodeConsolidation: " + fmt_count(disruptable.size(), "candidate") + " within budgets (needs 2)");
    }
  }

  // 4. SingleNodeConsolidation: candidates one by one, interleaved across NodePools (weight order).
  {
    std::vector<BudgetCount> b = budgets(DisruptionReason::Underutilized);
    std::vector<std::vector<Candidate>> per_pool(pools.size());
    for (const auto& c : cons) per_pool[c.pool].push_back(c);
    std::vector<Candidate> order;
    for (std::size_t i = 0;; ++i) {
      bool any = false;
      for (int pi : pool_order(pools)) {
        if (i < per_pool[pi].size()) {
          order.push_back(per_pool[pi][i]);
          any = true;
        }
      }
      if (!any) break;
    }
    std::vector<std::string> fails;
    for (const auto& c : order) {
      if (b[c.pool].allowed <= 0) {
        fails.push_back("node " + std::to_string(c.node) + ": " + budget_text(pools[c.pool], DisruptionReason::Underutilized, b[c.pool], now_unix_us));
        continue;
      }
      ConsolidationOption o = scored_consolidation(cluster, pools, {c}, marked, settings, false, offerings);
      if (o.action == DisruptionAction::None) {
        fails.push_back(o.why);
        continue;
      }
      text.push_back("SingleNodeConsolidation: " + o.why + " (" + budget_text(pools[c.pool], DisruptionReason::Underutilized, b[c.pool], now_unix_us) + ")");
      d.nodes = o.nodes;
      d.replacement = o.replacement;
      return finish(DisruptionMethod::SingleNodeConsolidation, o.action, DisruptionReason::Underutilized);
    }
    text.push_back("SingleNodeConsolidation: " + join(fails, "; "));
  }
  text.push_back("no action");
  return finish(DisruptionMethod::None, DisruptionAction::None, DisruptionReason::Empty);
}

// ---- the controller ----------------------------------------------------------------------------------

Karpenter::Karpenter(std::vector<NodePool> pools, KarpenterSettings settings) : settings_(settings) {
  for (int i : pool_order(pools)) pools_.push_back(pools[i]);
  next_poll_ = settings_.disruption_poll;
}

Micros Karpenter::batch_end() const {
  if (batch_start_ < 0) return -1;
  return std::min(batch_last_ + settings_.batch_idle, batch_start_ + settings_.batch_max);
}

std::set<std::uint32_t> Karpenter::marked_nodes() const {
  std::set<std::uint32_t> m = removed_;
  for (const auto& r : replacements_) m.insert(r.old_nodes.begin(), r.old_nodes.end());
  return m;
}

bool Karpenter::owns(const Node& node) const { return find_pool(pools_, node.owner) != nullptr; }

void Karpenter::on_unschedulable(const ClusterState& cluster, std::uint32_t pod, Micros now) {
  (void)cluster;
  // Batcher: the window opens with the first pod and is extended by each new pod; a pod marked again within
  // the same window is the same trigger and does not extend it.
  if (batch_start_ < 0) {
    batch_start_ = batch_last_ = now;
    batch_pods_.assign(1, pod);
    return;
  }
  if (std::find(batch_pods_.begin(), batch_pods_.end(), pod) != batch_pods_.end()) return;
  batch_pods_.push_back(pod);
  batch_last_ = now;
}

Micros Karpenter::next_wakeup() const {
  Micros t = -1;
  for (Micros c : {batch_end(), next_poll_, next_deadline_}) {
    if (c >= 0 && (t < 0 || c < t)) t = c;
  }
  return t;
}

void Karpenter::wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  const std::size_t launches_before = out.launches.size();
  forceful(cluster, now, out);
  progress_replacements(cluster, now, out);
  if (batch_start_ >= 0 && now >= batch_end()) provision(cluster, now, out);
  if (next_poll_ >= 0 && now >= next_poll_) {
    disrupt(cluster, now, out);
    // A command waits for its validation; otherwise the next pass is one poll later, even after an action
    // (lab choice: Karpenter re-runs at once, and finds its next command 15 s later at the earliest).
    next_poll_ = pending_ ? pending_until_ : now + settings_.disruption_poll;
  }

  for (auto it = nominated_until_.begin(); it != nominated_until_.end();) {
    it = it->second <= now ? nominated_until_.erase(it) : std::next(it);
  }
  // Timers: liveness and expiry deadlines wake us exactly; the poll sleeps while the pools own no node.
  bool alive = false;
  next_deadline_ = -1;
  auto consider = [&](Micros t) {
    if (t > now && (next_deadline_ < 0 || t < next_deadline_)) next_deadline_ = t;
  };
  for (const auto& n : cluster.nodes) {
    if (!owns(n) || !alive_phase(n.phase)) continue;
    alive = true;
    if (removed_.count(n.id)) continue;
    if (n.phase == NodePhase::Launched) consider(n.launched_at + settings_.registration_timeout);
    if (n.expires_at >= 0) consider(n.expires_at);
  }
  if (!alive && replacements_.empty() && out.launches.size() == launches_before) {
    next_poll_ = -1;
  } else if (next_poll_ < 0) {
    next_poll_ = now + settings_.disruption_poll;
  }
}

void Karpenter::provision(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  ProvisioningPlan plan = plan_provisioning(cluster, pools_, batch_pods_, marked_nodes(), batch_start_, now, &offerings(cluster));
  // Nodes the batch counted on are nominated: disruption leaves them alone for the nomination window.
  for (const auto& [pod, node] : plan.on_existing) nominated_until_[node] = now + settings_.nomination_window;
  for (auto& l : plan.launches) out.launches.push_back(std::move(l));
  for (auto& l : plan.log) out.log.push_back(std::move(l));
  batch_start_ = batch_last_ = -1;
  batch_pods_.clear();
}

void Karpenter::forceful(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  for (const auto& n : cluster.nodes) {
    const bool unregistered = n.phase == NodePhase::Launched && now - n.launched_at >= settings_.registration_timeout;
    const bool expired = n.expires_at >= 0 && now >= n.expires_at && alive_phase(n.phase);
    if (!(unregistered || expired) || !owns(n) || removed_.count(n.id)) continue;
    ProvisionerLog log;
    log.controller = "karpenter.disruption";
    log.action = "delete";
    // liveness.go: a NodeClaim not registered within the registration TTL is deleted outright.
    if (unregistered) {
      out.removals.push_back(NodeRemoval{n.id, RemovalReason::RegistrationTimeout, false});
      log.controller = "karpenter.liveness";
      log.reason = "RegistrationTimeout";
      log.explanation = "node " + std::to_string(n.id) + " launched at " + fmt_time(n.launched_at) + " has not registered after " +
                        fmt_duration(now - n.launched_at) + " (registration timeout " + fmt_duration(settings_.registration_timeout) +
                        "): delete the NodeClaim";
    } else {
      // Expiration is forceful: drain at once, no replacement first, budgets and do-not-disrupt do not apply.
      out.removals.push_back(NodeRemoval{n.id, RemovalReason::Expired, true});
      log.reason = "Expired";
      log.explanation = "node " + std::to_string(n.id) + " reached expireAfter at " + fmt_time(n.expires_at) +
                        ": drain and delete (no replacement first; budgets do not apply)";
    }
    removed_.insert(n.id);
    out.log.push_back(std::move(log));
  }
}

void Karpenter::progress_replacements(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  // Lab choice: the replacement is recognised as the first node created after the decision with the same
  // NodePool, type, capacity type and zone (the NodeProvisioner interface does not return node ids).
  std::set<std::int32_t> claimed;
  for (const auto& r : replacements_) {
    if (r.node >= 0) claimed.insert(r.node);
  }
  std::vector<PendingReplacement> keep;
  for (auto& r : replacements_) {
    if (r.node < 0) {
      for (std::size_t i = r.nodes_before; i < cluster.nodes.size(); ++i) {
        const Node& n = cluster.nodes[i];
        if (claimed.count(static_cast<std::int32_t>(n.id)) || n.owner != r.launch.owner || n.type_index != r.launch.type_index ||
            n.capacity_type != r.launch.capacity_type || n.zone != r.launch.zone || n.launched_at < r.decided_at) {
          continue;
        }
        r.node = static_cast<std::int32_t>(n.id);
        claimed.insert(r.node);
        break;
      }
    }
    ProvisionerLog log;
    log.controller = "karpenter.disruption";
    log.reason = "Underutilized";
    if (r.node < 0) {
      if (now - r.decided_at <= settings_.registration_timeout + settings_.disruption_poll) {
        keep.push_back(std::move(r));
        continue;
      }
      log.action = "abandon";
      log.explanation = "replacement for nodes " + fmt_ids(r.old_nodes) + " never appeared; the command is abandoned";
      out.log.push_back(std::move(log));
      out.uncordons.insert(out.uncordons.end(), r.old_nodes.begin(), r.old_nodes.end());
      continue;
    }
    const Node& repl = cluster.nodes[r.node];
    if (repl.phase == NodePhase::Initialized) {
      std::vector<std::uint32_t> removing;
      for (std::uint32_t old : r.old_nodes) {
        const Node& o = cluster.nodes[old];
        if (!alive_phase(o.phase) || removed_.count(old)) continue;
        out.removals.push_back(NodeRemoval{old, RemovalReason::Underutilized, true});
        removed_.insert(old);
        removing.push_back(old);
      }
      log.action = "delete";
      log.explanation = "replacement node " + std::to_string(r.node) + " is Initialized at " + fmt_time(now) + ": drain and delete nodes " +
                        fmt_ids(removing);
      out.log.push_back(std::move(log));
      continue;
    }
    if (!alive_phase(repl.phase)) {
      log.action = "abandon";
      log.explanation = "replacement node " + std::to_string(r.node) + " terminated before it was Initialized; nodes " +
                        fmt_ids(r.old_nodes) + " stay";
      out.log.push_back(std::move(log));
      out.uncordons.insert(out.uncordons.end(), r.old_nodes.begin(), r.old_nodes.end());
      continue;
    }
    keep.push_back(std::move(r));
  }
  replacements_ = std::move(keep);
}

// What a disruption pass depends on: every node's phase, pods, disruption marks and whether its
// consolidateAfter has elapsed, plus every pod's phase and node. Karpenter's disruption controller skips
// consolidation while the cluster is "consolidated" — unchanged since a pass that found nothing
// (kubernetes-sigs/karpenter pkg/controllers/disruption/consolidation.go IsConsolidated, with the state
// forced stale after 5 minutes in pkg/controllers/state/cluster.go ConsolidationState).
std::uint64_t Karpenter::disruption_state(const ClusterState& cluster, Micros now) const {
  std::uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ULL;
  };
  for (const Node& n : cluster.nodes) {
    if (n.phase == NodePhase::Terminated) continue;
    mix(n.id);
    mix(static_cast<std::uint64_t>(n.phase));
    mix(static_cast<std::uint64_t>(n.last_pod_event_at));
    mix(n.pods.size());
    mix(n.disrupted ? 1 : 0);
    mix(n.expires_at >= 0 && now >= n.expires_at ? 1 : 0);
    for (const NodePool& pool : pools_) {
      if (pool.name == n.owner) mix(now >= consolidatable_at(n, pool) ? 1 : 0);
    }
  }
  for (const Pod& p : cluster.pods) {
    if (p.deleted) continue;
    mix(p.id);
    mix(static_cast<std::uint64_t>(p.phase));
    mix(static_cast<std::uint64_t>(p.node));
  }
  mix(replacements_.size());
  for (const auto& [node, until] : nominated_until_) mix(now < until ? node : 0);
  return h;
}

void Karpenter::disrupt(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  constexpr Micros kConsolidatedFor = 5 * 60 * kMicrosPerSecond;
  if (pending_) {
    // controller.go: the loop waits out the command's validation period, then re-validates and executes.
    if (now < pending_until_) return;
    DisruptionDecision d = std::move(*pending_);
    pending_.reset();
    const std::string why = command_invalidation(d, cluster, pools_, settings_, marked_nodes(), nominated_until_, now,
                                                 &offerings(cluster));
    if (!why.empty()) {
      ProvisionerLog log;
      log.controller = "karpenter.disruption";
      log.action = "abandon";
      log.reason = to_string(d.reason);
      log.explanation = std::string(to_string(d.method)) + " " + to_string(d.action) + " of nodes " + fmt_ids(d.nodes) + " decided " +
                        fmt_duration(settings_.command_validation) + " ago is no longer valid: " + why;
      out.log.push_back(std::move(log));
      consolidated_ = false;
      return;
    }
    d.log.explanation = "validated after " + fmt_duration(settings_.command_validation) + ": " + d.log.explanation;
    execute(std::move(d), cluster, now, out);
    return;
  }
  const std::uint64_t state = disruption_state(cluster, now);
  if (consolidated_ && state == consolidated_state_ && now - consolidated_at_ < kConsolidatedFor) return;
  DisruptionDecision d = decide_disruption(cluster, pools_, settings_, marked_nodes(), nominated_until_, now, &offerings(cluster));
  consolidated_ = d.action == DisruptionAction::None;
  consolidated_state_ = state;
  consolidated_at_ = now;
  if (d.action != DisruptionAction::None && settings_.command_validation > 0) {
    pending_ = std::move(d);
    pending_until_ = now + settings_.command_validation;
    return;
  }
  execute(std::move(d), cluster, now, out);
}

void Karpenter::execute(DisruptionDecision d, const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  if (d.action == DisruptionAction::Delete) {
    for (std::uint32_t id : d.nodes) {
      out.removals.push_back(NodeRemoval{id, d.reason == DisruptionReason::Empty ? RemovalReason::Empty : RemovalReason::Underutilized, true});
      removed_.insert(id);
    }
  } else if (d.action == DisruptionAction::Replace) {
    // The old nodes stay until the replacement is Initialized (progress_replacements); meanwhile they count
    // as disrupting and are not offered to the provisioner's simulation.
    PendingReplacement r;
    r.old_nodes = d.nodes;
    r.launch = *d.replacement;
    r.nodes_before = cluster.nodes.size();
    r.decided_at = now;
    // The command starts by tainting the old nodes karpenter.sh/disrupted:NoSchedule, so nothing new
    // lands on them while the replacement boots (pkg/controllers/disruption/queue.go).
    out.cordons.insert(out.cordons.end(), d.nodes.begin(), d.nodes.end());
    replacements_.push_back(r);
    out.launches.push_back(*d.replacement);
  } else {
    if (!d.had_candidates || d.log.explanation == last_none_) return;
    last_none_ = d.log.explanation;
    out.log.push_back(std::move(d.log));
    return;
  }
  last_none_.clear();
  out.log.push_back(std::move(d.log));
}

const PoolOfferings& Karpenter::offerings(const ClusterState& cluster) {
  if (offerings_.size() != pools_.size()) offerings_ = all_pool_offerings(pools_, cluster.types);
  return offerings_;
}

}  // namespace gpuscale
