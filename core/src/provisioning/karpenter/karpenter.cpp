// Karpenter: batched provisioning from NodePools, liveness, expiration and disruption (see karpenter.hpp).
// Sources are kubernetes-sigs/karpenter (pkg/controllers/provisioning, pkg/controllers/disruption,
// pkg/controllers/nodeclaim) as summarised in real-systems.md §3; each lab choice is marked "Lab choice".
#include "provisioning/karpenter/karpenter.hpp"

#include <algorithm>
#include <iterator>

#include "k8s/cron.hpp"
#include "provisioning/karpenter/karpenter_detail.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

using namespace karpenter_detail;

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
  ProvisioningPlan plan = plan_provisioning(cluster, pools_, batch_pods_, marked_nodes(), batch_start_, now, &available_offerings(cluster, now));
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
    if (r.refused) {
      // The replacement NodeClaim could not launch: the command fails and its nodes stay.
      log.action = "abandon";
      log.explanation = "replacement for nodes " + fmt_ids(r.old_nodes) +
                        " was refused by the cloud (InsufficientInstanceCapacity for every offering); the command is abandoned";
      out.log.push_back(std::move(log));
      out.uncordons.insert(out.uncordons.end(), r.old_nodes.begin(), r.old_nodes.end());
      continue;
    }
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
  for (const Pod& p : cluster.pods) {
    if (!p.deleted && p.terminating()) mix(p.id ^ 0x9e3779b97f4a7c15ULL);
  }
  mix(replacements_.size());
  mix(unavailable_.size());
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
    std::vector<std::string> dropped;
    const std::string why = command_invalidation(d, cluster, pools_, settings_, marked_nodes(), nominated_until_, now,
                                                 &available_offerings(cluster, now), &dropped);
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
    if (!dropped.empty()) d.log.explanation += "; still valid: nodes " + fmt_ids(d.nodes) + ", no longer: " + join(dropped, "; ");
    execute(std::move(d), cluster, now, out);
    return;
  }
  const std::uint64_t state = disruption_state(cluster, now);
  if (consolidated_ && state == consolidated_state_ && now - consolidated_at_ < kConsolidatedFor) return;
  DisruptionDecision d = decide_disruption(cluster, pools_, settings_, marked_nodes(), nominated_until_, now,
                                            &available_offerings(cluster, now));
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

const PoolOfferings& Karpenter::available_offerings(const ClusterState& cluster, Micros now) {
  for (auto it = unavailable_.begin(); it != unavailable_.end();) {
    if (it->second <= now) {
      it = unavailable_.erase(it);
      available_stale_ = true;
    } else {
      ++it;
    }
  }
  if (unavailable_.empty()) return offerings(cluster);
  if (available_stale_) {
    available_ = offerings(cluster);
    for (auto& pool : available_) {
      pool.erase(std::remove_if(pool.begin(), pool.end(),
                                [&](const Offering& o) { return unavailable_.count({o.type_index, o.capacity_type, o.zone}) > 0; }),
                 pool.end());
    }
    available_stale_ = false;
  }
  return available_;
}

void Karpenter::on_insufficient_capacity(const LaunchOutcome& outcome, Micros now) {
  // instance.go: every offering CreateFleet reports InsufficientInstanceCapacity for is marked unavailable
  // (MarkUnavailable extends the TTL of one already cached).
  for (const LaunchOption& o : outcome.refused) {
    unavailable_[{o.type_index, o.capacity_type, o.zone}] = now + settings_.unavailable_offerings_ttl;
  }
  available_stale_ = true;
  if (outcome.launch.replaces < 0) return;
  for (auto& r : replacements_) {
    if (r.node >= 0 || r.refused || r.launch.replaces != outcome.launch.replaces) continue;
    if (outcome.node >= 0) {
      r.node = outcome.node;  // a fallback offering of the replacement was launched
    } else {
      r.refused = true;
    }
    break;
  }
}

}  // namespace gpuscale
