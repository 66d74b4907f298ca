// Karpenter's private pieces shared by its files (offerings.cpp, scheduling.cpp, disruption.cpp,
// consolidation.cpp, karpenter.cpp): integer-only formatting, so logs are byte-identical natively and in
// WASM, and small predicates. Not part of karpenter.hpp's API.
#pragma once
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "provisioning/karpenter/karpenter.hpp"

namespace gpuscale::karpenter_detail {


constexpr const char* kCapacityTypeLabel = "karpenter.sh/capacity-type";
constexpr const char* kNodePoolLabel = "karpenter.sh/nodepool";
constexpr std::int64_t kUnlimited = INT32_MAX;  // Karpenter's "no budget applies" (math.MaxInt32)

// ---- formatting from integers only, so logs are byte-identical natively and in WASM ----

inline std::string fmt_fraction(std::int64_t whole, std::int64_t frac, int digits, int min_digits) {
  std::string s = std::to_string(whole);
  if (frac == 0 && min_digits == 0) return s;
  char buf[16];
  std::snprintf(buf, sizeof buf, "%0*lld", digits, static_cast<long long>(frac));
  std::string f = buf;
  while (static_cast<int>(f.size()) > min_digits && f.back() == '0') f.pop_back();
  return f.empty() ? s : s + "." + f;
}

inline std::string fmt_count(std::size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// "t=12.5 s"
inline std::string fmt_time(Micros t) {
  const bool neg = t < 0;
  const Micros a = neg ? -t : t;
  return std::string("t=") + (neg ? "-" : "") + fmt_fraction(a / kMicrosPerSecond, a % kMicrosPerSecond, 6, 0) + " s";
}

inline std::string fmt_duration(Micros d) { return fmt_fraction(d / kMicrosPerSecond, d % kMicrosPerSecond, 6, 0) + " s"; }

// "$55.04/h"
inline std::string fmt_price(std::int64_t micro) { return "$" + fmt_fraction(micro / 1000000, micro % 1000000, 6, 2) + "/h"; }

inline std::string fmt_ids(const std::vector<std::uint32_t>& ids, std::size_t max_shown = 24) {
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


inline std::string fmt_offering(const ClusterState& cluster, const Offering& o) {
  return cluster.types[o.type_index].name + " " + to_string(o.capacity_type) + " " + o.zone + " at " + fmt_price(o.price_micro_usd);
}

inline std::string fmt_requests(int gpus, std::int64_t cpu_milli, std::int64_t memory_mib) {
  return fmt_count(static_cast<std::size_t>(gpus), "GPU") + ", " + std::to_string(cpu_milli) + "m CPU, " + std::to_string(memory_mib) + " MiB";
}

inline std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

// ---- small predicates ----

inline bool alive_phase(NodePhase p) { return p == NodePhase::Launched || p == NodePhase::Registered || p == NodePhase::Initialized; }

inline const NodePool* find_pool(const std::vector<NodePool>& pools, const std::string& name) {
  for (const auto& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

inline int find_pool_index(const std::vector<NodePool>& pools, const std::string& name) {
  for (std::size_t i = 0; i < pools.size(); ++i) {
    if (pools[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// Taints a node sheds before it is Initialized: Karpenter ignores them when it simulates against in-flight
// capacity (the pool's startupTaints and the well-known ephemeral not-ready taints).
inline bool ephemeral_taint(const Taint& t, const NodePool* pool) {
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

inline std::int64_t catalogue_price(const InstanceType& type, CapacityType capacity_type) {
  return price_micro_usd(hourly_price(type, capacity_type));
}

inline std::int64_t node_price(const ClusterState& cluster, const Node& node) {
  if (node.price_usd_per_hour > 0) return price_micro_usd(node.price_usd_per_hour);
  return catalogue_price(cluster.types[node.type_index], node.capacity_type);
}

inline ResourceAmounts add(ResourceAmounts a, const ResourceAmounts& b) {
  a.gpus += b.gpus;
  a.cpu_milli += b.cpu_milli;
  a.memory_mib += b.memory_mib;
  a.nodes += b.nodes;
  return a;
}

inline std::string fmt_remaining(const NodePool& pool, const ResourceAmounts& used) {
  std::vector<std::string> parts;
  if (pool.limit_gpus) parts.push_back("nvidia.com/gpu " + std::to_string(*pool.limit_gpus - used.gpus));
  if (pool.limit_cpu_milli) parts.push_back("cpu " + std::to_string(*pool.limit_cpu_milli - used.cpu_milli) + "m");
  if (pool.limit_memory_mib) parts.push_back("memory " + std::to_string(*pool.limit_memory_mib - used.memory_mib) + " MiB");
  if (pool.limit_nodes) parts.push_back("nodes " + std::to_string(*pool.limit_nodes - used.nodes));
  return join(parts, ", ");
}

inline std::string pool_title(const NodePool& pool) { return pool.name + " (weight " + std::to_string(pool.weight) + ")"; }

inline std::string budget_text(const NodePool& pool, DisruptionReason reason, const BudgetCount& b, std::int64_t now_unix_us) {
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


// The offerings after the first that one launch may fall back through: the AWS provider sends a NodeClaim's
// instance types (at most 60, pkg/providers/instance/instance.go maxInstanceTypes) to CreateFleet for one
// capacity type (spot when the NodeClaim allows it and has spot offerings, else on-demand), and EC2 launches
// one it has capacity for. Lab choice: the fleet tries them cheapest first (lowest-price; price-capacity-
// optimized approximated by price, as for the first choice).
constexpr std::size_t kMaxFleetOptions = 60;
inline std::vector<LaunchOption> fleet_fallbacks(const std::vector<Offering>& options, const Offering& chosen) {
  std::vector<LaunchOption> out;
  std::size_t seen = 1;
  for (const Offering& o : options) {
    if (o.capacity_type != chosen.capacity_type || (o.type_index == chosen.type_index && o.zone == chosen.zone)) continue;
    if (++seen > kMaxFleetOptions) break;
    out.push_back(LaunchOption{o.type_index, o.capacity_type, o.zone});
  }
  return out;
}

// The NodeClaim a pool launches for an offering: the pool's template labels, taints, startup taints and expiry.
inline NodeLaunch launch_for(const ClusterState& cluster, const NodePool& pool, const Offering& o) {
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

}  // namespace gpuscale::karpenter_detail
