// Karpenter's disruption: budgets, candidates, the validation of a command, and one disruption pass in
// Karpenter's order (pkg/controllers/disruption; see karpenter.hpp).
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <iterator>

#include "k8s/cron.hpp"
#include "provisioning/karpenter/karpenter_detail.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

using namespace karpenter_detail;

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

std::int64_t eviction_cost_units(const PodTemplate& t) {
  // disruption.go EvictionCost: 1 + priority / 2^25, clamped to [−10, 10].
  return std::clamp<std::int64_t>(kEvictionCostUnit + t.priority, -10 * kEvictionCostUnit, 10 * kEvictionCostUnit);
}

std::vector<Candidate> sort_candidates(std::vector<Candidate> v) {
  // kubernetes-sigs/karpenter v1.14 pkg/controllers/disruption/consolidation.go sortCandidates:
  // SavingsRatio() descending (types.go: Price / RescheduleDisruptionCost). Before v1.14 it was
  // DisruptionCost ascending. The lab breaks ties by node id (Go's sort.Slice is not stable).
  std::sort(v.begin(), v.end(), [](const Candidate& a, const Candidate& b) {
    const double ra = a.savings_ratio(), rb = b.savings_ratio();
    if (ra != rb) return ra > rb;
    return a.node < b.node;
  });
  return v;
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
    std::int32_t blocking = -1;
    for (std::uint32_t pid : n.pods) {
      const Pod& p = cluster.pods[pid];
      // pod.IsReschedulable: active pods only; a terminating pod (deletionTimestamp set) is not
      // rescheduled, so a node whose last pod is terminating is empty.
      if (p.phase != PodPhase::Running || p.terminating()) continue;
      const PodTemplate& t = cluster.templates[p.template_index];
      if (t.do_not_disrupt && blocking < 0) blocking = static_cast<std::int32_t>(pid);
      c.pods.push_back(pid);
      c.reschedule_cost += std::max<std::int64_t>(0, eviction_cost_units(t));
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
    c.price_micro_usd = node_price(cluster, n);
    scan.candidates.push_back(std::move(c));
  }
  return scan;
}

std::string command_invalidation(DisruptionDecision& d, const ClusterState& cluster, const std::vector<NodePool>& pools,
                                 const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                 const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                 const PoolOfferings* offerings, std::vector<std::string>* dropped) {
  // ValidateCandidates: still candidates (Initialized, consolidateAfter elapsed, no do-not-disrupt, not
  // nominated for pending pods), and within the budgets, counted one by one.
  const CandidateScan scan = disruption_candidates(cluster, pools, marked, nominated_until, now);
  const std::int64_t now_unix_us = settings.clock_start_unix_s * kMicrosPerSecond + now;
  const auto why_not = [&](std::uint32_t id) {
    std::string why = "node " + std::to_string(id) + " is no longer a candidate";
    for (const auto& skipped : scan.skipped) {
      if (skipped.rfind("node " + std::to_string(id) + ":", 0) == 0) why = skipped;
    }
    return why;
  };
  const auto find = [&](std::uint32_t id) {
    return std::find_if(scan.candidates.begin(), scan.candidates.end(), [&](const Candidate& c) { return c.node == id; });
  };
  if (d.method == DisruptionMethod::Emptiness) {
    // validation.go EmptinessValidator: the candidates that are still empty candidates and fit the budgets
    // stay in the command; the command is abandoned only when none is left.
    std::vector<std::uint32_t> keep;
    std::vector<std::string> gone;
    std::map<int, std::int64_t> left;
    for (std::uint32_t id : d.nodes) {
      auto it = find(id);
      if (it == scan.candidates.end()) {
        gone.push_back(why_not(id));
        continue;
      }
      if (!it->empty()) {
        gone.push_back("node " + std::to_string(id) + " is no longer empty (" + fmt_count(it->pods.size(), "pod") + ")");
        continue;
      }
      if (!left.count(it->pool)) left[it->pool] = pool_budget(cluster, pools[it->pool], d.reason, marked, now_unix_us).allowed;
      if (left[it->pool] <= 0) {
        gone.push_back("node " + std::to_string(id) + " would violate the budget of " + pools[it->pool].name);
        continue;
      }
      --left[it->pool];
      keep.push_back(id);
    }
    if (keep.empty()) return join(gone, "; ");
    d.nodes = keep;
    if (dropped) *dropped = gone;
    return "";
  }
  std::vector<Candidate> current;
  for (std::uint32_t id : d.nodes) {
    auto it = find(id);
    if (it == scan.candidates.end()) return why_not(id);
    current.push_back(*it);
  }
  std::map<int, std::int64_t> left;
  for (const auto& c : current) {
    if (!left.count(c.pool)) left[c.pool] = pool_budget(cluster, pools[c.pool], d.reason, marked, now_unix_us).allowed;
    if (left[c.pool]-- <= 0) return "a candidate can no longer be disrupted without violating budgets (" + pools[c.pool].name + ")";
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

namespace {

// One disruption pass (disruption/controller.go): the methods in Karpenter's order, each returning true
// when it found a command. `text` gathers what each method saw, for the log.
class DisruptionPass {
 public:
  DisruptionPass(const ClusterState& cluster, const std::vector<NodePool>& pools, const KarpenterSettings& settings,
                 const std::set<std::uint32_t>& marked, const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                 const PoolOfferings* offerings)
      : cluster_(cluster), pools_(pools), settings_(settings), marked_(marked), offerings_(offerings),
        now_unix_us_(settings.clock_start_unix_s * kMicrosPerSecond + now) {  // budget schedules are wall-clock
    d_.log.controller = "karpenter.disruption";
    d_.log.action = "none";
    scan_ = disruption_candidates(cluster, pools, marked, nominated_until, now);
    d_.had_candidates = !scan_.candidates.empty() || !scan_.skipped.empty();
    std::vector<std::string> c;
    for (const auto& cand : scan_.candidates) {
      c.push_back(std::to_string(cand.node) + " (" + pools[cand.pool].name + ", " + fmt_count(cand.pods.size(), "pod") + ", " +
                  fmt_price(cand.price_micro_usd) + ", savings ratio " + fmt_price(cand.price_micro_usd * kEvictionCostUnit / cand.reschedule_cost) +
                  " / " + fmt_fraction(cand.reschedule_cost / kEvictionCostUnit, (cand.reschedule_cost % kEvictionCostUnit) * 100 / kEvictionCostUnit, 2, 0) + ")");
    }
    text_.push_back("candidates: " + (c.empty() ? std::string("none") : "nodes " + join(c, ", ")) +
                    (c.empty() ? "" : " (savings ratio = price / (1 + Σ pod eviction cost), highest first)"));
    if (!scan_.skipped.empty()) text_.push_back("skipped: " + join(scan_.skipped, "; "));
  }

  DisruptionDecision run() {
    if (emptiness()) return finish(DisruptionMethod::Emptiness, DisruptionAction::Delete, DisruptionReason::Empty);
    if (!consolidation_candidates()) return finish(DisruptionMethod::None, DisruptionAction::None, DisruptionReason::Empty);
    if (multi_node()) return finish(DisruptionMethod::MultiNodeConsolidation, d_.action, DisruptionReason::Underutilized);
    if (single_node()) return finish(DisruptionMethod::SingleNodeConsolidation, d_.action, DisruptionReason::Underutilized);
    text_.push_back("no action");
    return finish(DisruptionMethod::None, DisruptionAction::None, DisruptionReason::Empty);
  }

 private:
  std::vector<BudgetCount> budgets(DisruptionReason reason) const {
    std::vector<BudgetCount> b(pools_.size());
    for (std::size_t i = 0; i < pools_.size(); ++i) b[i] = pool_budget(cluster_, pools_[i], reason, marked_, now_unix_us_);
    return b;
  }

  DisruptionDecision finish(DisruptionMethod method, DisruptionAction action, DisruptionReason reason) {
    d_.method = method;
    d_.action = action;
    d_.reason = reason;
    d_.log.action = to_string(action);
    d_.log.reason = method == DisruptionMethod::None ? "" : to_string(reason);
    d_.log.explanation = join(text_, "; ");
    return d_;
  }

  // 1. Emptiness (every policy): delete all empty candidates the budgets allow, as one command.
  bool emptiness() {
    std::vector<Candidate> empty;
    for (const auto& c : scan_.candidates) {
      if (c.empty()) empty.push_back(c);
    }
    if (empty.empty()) return false;
    std::vector<BudgetCount> b = budgets(DisruptionReason::Empty);
    std::vector<std::int64_t> left(pools_.size());
    for (std::size_t i = 0; i < pools_.size(); ++i) left[i] = b[i].allowed;
    std::vector<std::uint32_t> chosen, blocked;
    std::set<int> pools_seen;
    for (const auto& c : sort_candidates(empty)) {
      pools_seen.insert(c.pool);
      if (left[c.pool] <= 0) {
        blocked.push_back(c.node);
        continue;
      }
      --left[c.pool];
      chosen.push_back(c.node);
    }
    std::vector<std::string> bt;
    for (int pi : pools_seen) bt.push_back(budget_text(pools_[pi], DisruptionReason::Empty, b[pi], now_unix_us_));
    if (!chosen.empty()) {
      d_.nodes = chosen;
      text_.push_back("Emptiness: delete empty nodes " + fmt_ids(chosen) + (blocked.empty() ? "" : ", budget holds back " + fmt_ids(blocked)) +
                      " (" + join(bt, "; ") + ")");
      return true;
    }
    text_.push_back("Emptiness: empty nodes " + fmt_ids(blocked) + " held back by budgets (" + join(bt, "; ") + ")");
    return false;
  }

  // 2. Consolidation candidates: not empty, policy WhenEmptyOrUnderutilized or Balanced (whose moves must
  //    also pass the score, balanced_score). False when there are none.
  bool consolidation_candidates() {
    std::vector<std::string> when_empty;
    for (const auto& c : scan_.candidates) {
      if (c.empty()) continue;
      if (pools_[c.pool].consolidation_policy == ConsolidationPolicy::WhenEmpty) {
        when_empty.push_back(std::to_string(c.node));
        continue;
      }
      cons_.push_back(c);
    }
    if (!when_empty.empty()) text_.push_back("not empty under consolidationPolicy WhenEmpty: nodes " + join(when_empty, ", "));
    if (cons_.empty()) {
      text_.push_back("no action");
      return false;
    }
    cons_ = sort_candidates(cons_);
    return true;
  }

  // 3. MultiNodeConsolidation: budget-filtered prefix of at most 100, binary search for the largest prefix
  //    (of at least 2) that works.
  bool multi_node() {
    std::vector<BudgetCount> b = budgets(DisruptionReason::Underutilized);
    std::vector<std::int64_t> left(pools_.size());
    for (std::size_t i = 0; i < pools_.size(); ++i) left[i] = b[i].allowed;
    std::vector<Candidate> disruptable;
    for (const auto& c : cons_) {
      if (left[c.pool] <= 0) continue;
      --left[c.pool];
      disruptable.push_back(c);
    }
    if (disruptable.size() < 2) {
      text_.push_back("MultiNodeConsolidation: " + fmt_count(disruptable.size(), "candidate") + " within budgets (needs 2)");
      return false;
    }
    const int max_parallel = std::min<int>(static_cast<int>(disruptable.size()), settings_.max_multi_node_candidates);
    int lo = 1, hi = max_parallel;
    if (static_cast<int>(disruptable.size()) <= hi) hi = static_cast<int>(disruptable.size()) - 1;
    ConsolidationOption saved;
    std::string last_fail;
    while (lo <= hi) {
      const int mid = (lo + hi) / 2;
      std::vector<Candidate> prefix(disruptable.begin(), disruptable.begin() + mid + 1);
      ConsolidationOption o = scored_consolidation(cluster_, pools_, prefix, marked_, settings_, true, offerings_);
      if (o.action != DisruptionAction::None) {
        saved = std::move(o);
        lo = mid + 1;
      } else {
        last_fail = o.why;
        hi = mid - 1;
      }
    }
    if (saved.action == DisruptionAction::None) {
      text_.push_back("MultiNodeConsolidation: no prefix of " + std::to_string(disruptable.size()) + " candidates works (" + last_fail + ")");
      return false;
    }
    std::set<int> ps;
    for (std::uint32_t id : saved.nodes) ps.insert(find_pool_index(pools_, cluster_.nodes[id].owner));
    std::vector<std::string> bt;
    for (int pi : ps) bt.push_back(budget_text(pools_[pi], DisruptionReason::Underutilized, b[pi], now_unix_us_));
    text_.push_back("MultiNodeConsolidation: " + saved.why + " (" + join(bt, "; ") + ")");
    d_.nodes = saved.nodes;
    d_.replacement = saved.replacement;
    d_.action = saved.action;
    return true;
  }

  // 4. SingleNodeConsolidation: candidates one by one, interleaved across NodePools (weight order).
  bool single_node() {
    std::vector<BudgetCount> b = budgets(DisruptionReason::Underutilized);
    std::vector<std::vector<Candidate>> per_pool(pools_.size());
    for (const auto& c : cons_) per_pool[c.pool].push_back(c);
    std::vector<Candidate> order;
    for (std::size_t i = 0;; ++i) {
      bool any = false;
      for (int pi : pool_order(pools_)) {
        if (i < per_pool[pi].size()) {
          order.push_back(per_pool[pi][i]);
          any = true;
        }
      }
      if (!any) break;
    }
    std::vector<std::string> fails;
    for (const auto& c : order) {
      const auto budget = [&] { return budget_text(pools_[c.pool], DisruptionReason::Underutilized, b[c.pool], now_unix_us_); };
      if (b[c.pool].allowed <= 0) {
        fails.push_back("node " + std::to_string(c.node) + ": " + budget());
        continue;
      }
      ConsolidationOption o = scored_consolidation(cluster_, pools_, {c}, marked_, settings_, false, offerings_);
      if (o.action == DisruptionAction::None) {
        fails.push_back(o.why);
        continue;
      }
      text_.push_back("SingleNodeConsolidation: " + o.why + " (" + budget() + ")");
      d_.nodes = o.nodes;
      d_.replacement = o.replacement;
      d_.action = o.action;
      return true;
    }
    text_.push_back("SingleNodeConsolidation: " + join(fails, "; "));
    return false;
  }

  const ClusterState& cluster_;
  const std::vector<NodePool>& pools_;
  const KarpenterSettings& settings_;
  const std::set<std::uint32_t>& marked_;
  const PoolOfferings* offerings_;
  const std::int64_t now_unix_us_;
  CandidateScan scan_;
  std::vector<Candidate> cons_;  // consolidation candidates, by savings ratio
  std::vector<std::string> text_;
  DisruptionDecision d_;
};

}  // namespace

DisruptionDecision decide_disruption(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                     const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                     const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                     const PoolOfferings* offerings) {
  return DisruptionPass(cluster, pools, settings, marked, nominated_until, now, offerings).run();
}

}  // namespace gpuscale
