// Karpenter's consolidation commands: a scheduling simulation of the candidates' pods onto the other
// nodes plus at most one replacement, and Balanced's score (pkg/controllers/disruption/consolidation.go;
// see karpenter.hpp).
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <iterator>

#include "k8s/cron.hpp"
#include "provisioning/karpenter/karpenter_detail.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

using namespace karpenter_detail;

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
      const Pod& p = cluster.pods[pid];
      if (p.phase == PodPhase::Running && !p.terminating()) deleting_pods.insert(pid);
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
  l.fallbacks = fleet_fallbacks(cheaper, best);  // only strictly cheaper offerings may replace
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
  std::int64_t cost = kEvictionCostUnit;
  for (std::uint32_t pid : n.pods) {
    const Pod& p = cluster.pods[pid];
    if (p.phase != PodPhase::Running || p.terminating()) continue;
    cost += std::max<std::int64_t>(0, eviction_cost_units(cluster.templates[p.template_index]));
  }
  return static_cast<double>(cost) / static_cast<double>(kEvictionCostUnit);
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

}  // namespace

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


}  // namespace gpuscale
