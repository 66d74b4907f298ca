// Layer 1 in motion (see cluster_model.hpp).
#include "sim/cluster_model.hpp"

#include <algorithm>
#include <cstdio>

#include "scheduling/fit.hpp"

namespace gpuscale {

namespace {

// Pods get this long to exit after an eviction before their node goes away (the Kubernetes default
// terminationGracePeriodSeconds); a spot instance goes 2 minutes after its interruption notice.
constexpr Micros kPodGrace = 30 * kMicrosPerSecond;
constexpr Micros kSpotNotice = 120 * kMicrosPerSecond;
// Lab choice: a drain whose evictions the PodDisruptionBudget refuses (HTTP 429) tries again every 5 s
// (Karpenter's terminator and kubectl drain both retry evictions on a short backoff).
constexpr Micros kEvictionRetry = 5 * kMicrosPerSecond;

std::string fmt_s(Micros t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", micros_to_seconds(t));
  return buf;
}

// Without initial_nodes, the cluster starts with enough nodes for the starting replicas: of the cheapest
// on-demand type the first NodePool allows that holds a replica's pod, or of the first node group's type.
// A NodePool that allows no type holding the pod starts with no node for it: the replicas then wait
// on Karpenter's own provisioning, which logs why it cannot launch (never a node the pool forbids).
std::vector<InitialNodes> derived_initial_nodes(const Scenario& s, const std::vector<std::int32_t>& starting) {
  const ClusterConfig& c = s.cluster;
  std::vector<InitialNodes> out;
  for (std::size_t p = 0; p < s.pools.size() && p < starting.size(); ++p) {
    const PodTemplate& pod = s.pools[p].pod;
    if (starting[p] <= 0) continue;
    std::string type;
    InitialNodes n;
    if (c.provisioner == ProvisionerKind::Karpenter) {
      const NodePool& np = c.nodepools.front();
      n.owner = np.name;
      double best = -1;
      for (const auto& t : c.instance_types) {
        const Labels labels = instance_labels(t, CapacityType::OnDemand, t.zones.front());
        if (!matches_all(np.requirements, labels) || !check_fit_type(pod, t, labels, np.taints).ok()) continue;
        if (best < 0 || t.on_demand_usd_per_hour < best) {
          best = t.on_demand_usd_per_hour;
          type = t.name;
        }
      }
    } else {
      const NodeGroup& g = c.cluster_autoscaler.node_groups.front();
      n.owner = g.name;
      type = g.instance_type;
      n.capacity_type = g.capacity_type;
    }
    if (type.empty()) continue;  // no type of the pool fits: no starting node
    const InstanceType* t = find_instance_type(c.instance_types, type);
    if (!t) throw InputError("/cluster/instance_types", "the starting replicas need a node, and no type of the catalogue fits the first NodePool");
    n.type_index = static_cast<int>(t - c.instance_types.data());
    const std::int64_t per_node = pod.gpus > 0 ? std::max(1, t->gpus / pod.gpus) : 1;
    n.count = (starting[p] + per_node - 1) / per_node;
    out.push_back(n);
  }
  return out;
}

}  // namespace

ClusterModel::ClusterModel(const Scenario& scenario, std::unique_ptr<NodeProvisioner> provisioner, ClusterEvents& events)
    : scenario_(scenario), provisioner_(std::move(provisioner)), events_(events), rng_(Rng::stream(scenario.seed, "cluster.nodes")) {
  state_.types = scenario.cluster.instance_types;
  for (const PoolConfig& pool : scenario.pools) {
    state_.templates.push_back(pool.pod);
    state_.pools.push_back(PoolBudget{pool.pdb, 0});
  }
  for (const WorkloadPods& w : scenario.cluster.workloads) state_.templates.push_back(w.pod);
  // One scheduler per schedulerName the templates use (parse_scenario checked each is known).
  std::vector<std::string> names;
  for (const PodTemplate& t : state_.templates) {
    auto it = std::find(names.begin(), names.end(), t.scheduler_name);
    if (it == names.end()) {
      names.push_back(t.scheduler_name);
      schedulers_.push_back(make_scheduler(t.scheduler_name));
      it = names.end() - 1;
    }
    template_scheduler_.push_back(static_cast<int>(it - names.begin()));
  }
}

void ClusterModel::log(Micros t, const char* controller, std::string action, std::string reason, std::string explanation) {
  logs_.push_back(ClusterLog{t, controller, std::move(action), std::move(reason), std::move(explanation)});
}

std::vector<ClusterNotice> ClusterModel::take_notices() {
  std::vector<ClusterNotice> out;
  out.swap(notices_);
  return out;
}

std::vector<ClusterLog> ClusterModel::take_logs() {
  std::vector<ClusterLog> out;
  out.swap(logs_);
  return out;
}

std::int32_t ClusterModel::nodes_in(NodePhase phase) const {
  std::int32_t n = 0;
  for (const auto& node : state_.nodes) n += node.phase == phase ? 1 : 0;
  return n;
}

void ClusterModel::account(Micros now) {
  if (now <= accounted_until_) return;
  const double hours = micros_to_seconds(now - accounted_until_) / 3600.0;
  for (const Node& n : state_.nodes) {
    if (n.phase == NodePhase::Terminated) continue;
    totals_.node_hours += hours;
    totals_.node_cost_usd += hours * n.price_usd_per_hour;
    totals_.gpu_hours_allocatable += hours * state_.types[static_cast<std::size_t>(n.type_index)].gpus;
    totals_.gpu_hours_requested += hours * n.gpus_requested;
  }
  accounted_until_ = now;
}

void ClusterModel::finish(Micros end) { account(end); }

std::uint32_t ClusterModel::new_pod(int template_index, std::int32_t replica, Micros now) {
  Pod p;
  p.id = static_cast<std::uint32_t>(state_.pods.size());
  p.template_index = template_index;
  p.replica = replica;
  p.created_at = now;
  state_.pods.push_back(p);
  pending_.push_back(p.id);
  return p.id;
}

void ClusterModel::launch(const NodeLaunch& l, Micros now, bool initialized) {
  const InstanceType& type = state_.types.at(static_cast<std::size_t>(l.type_index));
  Node n;
  n.id = static_cast<std::uint32_t>(state_.nodes.size());
  n.type_index = l.type_index;
  n.capacity_type = l.capacity_type;
  n.zone = l.zone.empty() ? type.zones.front() : l.zone;
  n.owner = l.owner;
  n.labels = instance_labels(type, n.capacity_type, n.zone);
  for (const auto& [k, v] : l.labels) n.labels[k] = v;
  n.labels[scenario_.cluster.provisioner == ProvisionerKind::Karpenter ? "karpenter.sh/nodepool" : "eks.amazonaws.com/nodegroup"] = l.owner;
  n.taints = l.taints;
  n.launched_at = now;
  n.expires_at = l.expire_after >= 0 ? now + l.expire_after : -1;
  n.price_usd_per_hour = hourly_price(type, n.capacity_type);
  n.cpu_allocatable_milli = allocatable_cpu_milli(type);
  n.memory_allocatable_mib = allocatable_memory_mib(type);
  ++totals_.nodes_launched;
  if (initialized) {
    n.phase = NodePhase::Initialized;
    n.registered_at = n.initialized_at = now;
    n.gpus_allocatable = type.gpus;
  } else {
    n.taints.insert(n.taints.end(), l.startup_taints.begin(), l.startup_taints.end());
    n.startup_taints = static_cast<int>(l.startup_taints.size());
    const NodeStartup& st = scenario_.cluster.startup;
    const Micros boot = seconds_to_micros(rng_.uniform(st.launch_to_registered.min_s, st.launch_to_registered.max_s));
    events_.file(now + boot, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeRegistered, n.id, 0});
  }
  state_.nodes.push_back(std::move(n));
}

void ClusterModel::start(const std::vector<std::int32_t>& starting_replicas) {
  // Starting nodes carry their owner's template: a NodePool's labels, taints and expiry, or a node group's.
  const std::vector<InitialNodes> initial =
      scenario_.cluster.initial_nodes.empty() ? derived_initial_nodes(scenario_, starting_replicas) : scenario_.cluster.initial_nodes;
  for (const InitialNodes& in : initial) {
    NodeLaunch l;
    l.owner = in.owner;
    for (const NodePool& p : scenario_.cluster.nodepools) {
      if (p.name != in.owner) continue;
      l.labels = p.template_labels;
      l.taints = p.taints;
      l.expire_after = p.expire_after ? *p.expire_after : -1;
    }
    for (const NodeGroup& g : scenario_.cluster.cluster_autoscaler.node_groups) {
      if (g.name != in.owner) continue;
      l.labels = g.labels;
      l.taints = g.taints;
    }
    l.type_index = in.type_index;
    l.capacity_type = in.capacity_type;
    l.zone = in.zone;
    for (std::int64_t k = 0; k < in.count; ++k) launch(l, 0, true);
  }
  for (std::size_t p = 0; p < starting_replicas.size(); ++p) {
    state_.pools[p].expected_replicas = starting_replicas[p];
    for (std::int32_t r = 0; r < starting_replicas[p]; ++r) new_pod(static_cast<int>(p), r, 0);
  }
  const std::size_t pools = scenario_.pools.size();
  for (std::size_t w = 0; w < scenario_.cluster.workloads.size(); ++w) {
    for (std::int64_t k = 0; k < scenario_.cluster.workloads[w].replicas; ++k) new_pod(static_cast<int>(pools + w), -1, 0);
  }
  schedule_pending(0);
}

std::uint32_t ClusterModel::add_replica_pod(int pool, std::int32_t replica, Micros now) {
  account(now);
  const std::uint32_t id = new_pod(pool, replica, now);
  schedule_pending(now);
  return id;
}

void ClusterModel::unbind(Pod& pod, Micros now) {
  Node& node = state_.nodes[static_cast<std::size_t>(pod.node)];
  const PodTemplate& t = state_.template_of(pod);
  node.pods.erase(std::find(node.pods.begin(), node.pods.end(), pod.id));
  node.gpus_requested -= t.gpus;
  node.cpu_requested_milli -= t.cpu_milli;
  node.memory_requested_mib -= t.memory_mib;
  node.last_pod_event_at = now;
  pod.node = -1;
}

void ClusterModel::remove_pod(std::uint32_t id, Micros now) {
  account(now);
  Pod& pod = state_.pods.at(id);
  if (pod.deleted) return;
  if (pod.phase == PodPhase::Pending) {
    pending_.erase(std::find(pending_.begin(), pending_.end(), id));
  } else if (pod.node >= 0) {
    unbind(pod, now);
  }
  pod.deleted = true;
  schedule_pending(now);  // its room may let a pending pod in
}

void ClusterModel::set_pod_ready(std::uint32_t pod, bool ready) {
  if (pod < state_.pods.size()) state_.pods[pod].ready = ready;
}

void ClusterModel::set_expected_replicas(int pool, std::int32_t replicas) {
  state_.pools[static_cast<std::size_t>(pool)].expected_replicas = replicas;
}

void ClusterModel::bind(Pod& pod, Node& node, Micros now, const std::string& why) {
  const PodTemplate& t = state_.template_of(pod);
  node.pods.push_back(pod.id);
  node.gpus_requested += t.gpus;
  node.cpu_requested_milli += t.cpu_milli;
  node.memory_requested_mib += t.memory_mib;
  node.last_pod_event_at = now;
  pod.node = static_cast<std::int32_t>(node.id);
  pod.phase = PodPhase::Running;
  pod.unschedulable_since = -1;
  const InstanceType& type = state_.types[static_cast<std::size_t>(node.type_index)];
  const bool non_gpu_on_gpu = t.gpus == 0 && type.gpus > 0;
  if (non_gpu_on_gpu) ++totals_.non_gpu_pods_on_gpu_nodes;
  log(now, "kube-scheduler", "bind", non_gpu_on_gpu ? "NonGpuPodOnGpuNode" : "Scheduled",
      "pod " + std::to_string(pod.id) + " (" + t.name + ") " + why + ", a " + type.name + " (" + node.owner + ")");
  if (pod.replica >= 0) {
    notices_.push_back(ClusterNotice{ClusterNotice::Kind::ReplicaPodBound, state_.pool_of(pod), pod.replica, pod.id, node.id, now,
                                     RemovalReason::Empty});
  }
}

void ClusterModel::schedule_pending(Micros now) {
  for (std::size_t s = 0; s < schedulers_.size(); ++s) {
    std::vector<std::uint32_t> mine;
    for (std::uint32_t id : pending_) {
      if (template_scheduler_[static_cast<std::size_t>(state_.pods[id].template_index)] == static_cast<int>(s)) mine.push_back(id);
    }
    if (mine.empty()) continue;
    const SchedulingCycle cycle = schedulers_[s]->schedule(state_, mine, now);
    for (const PodOutcome& o : cycle.outcomes) {
      Pod& pod = state_.pods[o.pod];
      if (o.node) {
        bind(pod, state_.nodes[*o.node], now, o.message);
        pending_.erase(std::find(pending_.begin(), pending_.end(), o.pod));
        continue;
      }
      if (pod.unschedulable_since < 0) {
        pod.unschedulable_since = now;
        log(now, schedulers_[s]->name() == std::string(kDefaultScheduler) ? "kube-scheduler" : schedulers_[s]->name(), "unschedulable",
            "FailedScheduling", "pod " + std::to_string(o.pod) + " (" + state_.template_of(pod).name + "): " + o.message);
      }
      provisioner_->on_unschedulable(state_, o.pod, now);
    }
    if (cycle.next_wakeup >= 0) {
      events_.file(cycle.next_wakeup, EventClass::NodeControl, ClusterEvent{ClusterEvent::Kind::SchedulerWake, static_cast<std::uint32_t>(s), 0});
    }
  }
  rearm_provisioner();
}

void ClusterModel::rearm_provisioner() {
  const Micros t = provisioner_->next_wakeup();
  if (t < 0 || t == provisioner_wake_) return;
  provisioner_wake_ = t;
  events_.file(t, EventClass::NodeControl, ClusterEvent{ClusterEvent::Kind::ProvisionerWake, 0, ++wake_gen_});
}

std::size_t ClusterModel::evict_pods(Node& node, RemovalReason reason, bool respect_pdb, Micros now, std::string* blocked_why) {
  std::size_t stay = 0;
  const std::vector<std::uint32_t> pods = node.pods;
  for (std::uint32_t id : pods) {
    Pod& pod = state_.pods[id];
    // The Eviction API refuses (429) what a PodDisruptionBudget does not allow; the drain retries.
    if (respect_pdb && !eviction_allowed(state_, pod, stay == 0 ? blocked_why : nullptr)) {
      ++stay;
      continue;
    }
    unbind(pod, now);
    pod.deleted = true;
    pod.ready = false;
    ++totals_.pod_evictions;
    if (pod.replica >= 0) {
      ++totals_.replica_evictions;
      notices_.push_back(ClusterNotice{ClusterNotice::Kind::ReplicaPodEvicted, state_.pool_of(pod), pod.replica, id, node.id, now, reason});
    } else {
      new_pod(pod.template_index, -1, now);  // its ReplicaSet makes a new one
    }
  }
  return stay;
}

void ClusterModel::remove_node(Node& node, RemovalReason reason, bool drain, Micros now, Micros give_up_after) {
  if (node.phase == NodePhase::Terminating || node.phase == NodePhase::Terminated) return;
  const bool had_pods = !node.pods.empty();
  const std::size_t before = node.pods.size();
  const bool interrupted = reason == RemovalReason::Interrupted;
  node.phase = NodePhase::Terminating;
  node.disrupted = true;
  // A drain evicts through the Eviction API, which honours the PodDisruptionBudget; a node that never
  // registered has nothing to drain, and a spot instance goes at the end of its notice whatever is left.
  std::string blocked;
  const std::size_t stay = evict_pods(node, reason, drain, now, &blocked);
  const std::string type = state_.types[static_cast<std::size_t>(node.type_index)].name;
  std::string what = "node " + std::to_string(node.id) + " (" + type + ", " + to_string(node.capacity_type) + ", " + node.owner +
                     ") removed: " + to_string(reason) + "; " + std::to_string(before - stay) + " pods evicted";
  if (stay > 0 && !interrupted) {
    events_.file(now + kEvictionRetry, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::EvictRetry, node.id, 0});
    what += "; " + std::to_string(stay) + " wait (" + blocked + "), the drain retries every " + fmt_s(kEvictionRetry);
    if (give_up_after >= 0) {
      drain_give_up_at_[node.id] = now + give_up_after;
      what += " for at most " + fmt_s(give_up_after);
    }
  } else {
    const Micros end = interrupted ? now + kSpotNotice : (drain && had_pods ? now + kPodGrace : now);
    events_.file(end, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
    what += "; the instance goes at t = " + fmt_s(end);
  }
  log(now, interrupted ? "cloud" : provisioner_->name(), "delete", to_string(reason), what);
  if (before > stay) schedule_pending(now);
}

void ClusterModel::apply(ProvisionerActions& actions, Micros now) {
  for (const auto& l : actions.log) log(now, l.controller.c_str(), l.action, l.reason, l.explanation);
  // Uncordons first: a pass may abandon a command and start a new one on the same node.
  for (std::uint32_t id : actions.uncordons) {
    Node& n = state_.nodes.at(id);
    if (n.phase != NodePhase::Terminating && n.phase != NodePhase::Terminated) n.disrupted = false;
  }
  for (std::uint32_t id : actions.cordons) state_.nodes.at(id).disrupted = true;
  for (const auto& l : actions.launches) launch(l, now, false);
  for (const auto& r : actions.removals) {
    if (r.node < state_.nodes.size()) remove_node(state_.nodes[r.node], r.reason, r.drain, now, r.give_up_after);
  }
}

void ClusterModel::on_event(const ClusterEvent& e, Micros now) {
  account(now);
  switch (e.kind) {
    case ClusterEvent::Kind::SchedulerWake:  // e.g. kube-scheduler's periodic flush of unschedulable pods
      schedulers_[e.index]->on_wakeup(now);
      reschedule_ = true;
      return;
    case ClusterEvent::Kind::ProvisionerWake: {
      if (e.gen != wake_gen_) return;  // superseded
      provisioner_wake_ = -1;
      ProvisionerActions actions;
      provisioner_->wake(state_, now, actions);
      apply(actions, now);
      return;
    }
    default: on_node_event(e, now);
  }
}

void ClusterModel::on_node_event(const ClusterEvent& e, Micros now) {
  Node& node = state_.nodes[e.index];
  const InstanceType& type = state_.types[static_cast<std::size_t>(node.type_index)];
  switch (e.kind) {
    case ClusterEvent::Kind::NodeRegistered: {
      if (node.phase != NodePhase::Launched) return;
      node.phase = NodePhase::Registered;
      node.registered_at = now;
      const NodeStartup& st = scenario_.cluster.startup;
      const Micros init = seconds_to_micros(rng_.uniform(st.registered_to_initialized.min_s, st.registered_to_initialized.max_s));
      events_.file(now + init, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeInitialized, node.id, 0});
      reschedule_ = true;
      return;
    }
    case ClusterEvent::Kind::NodeInitialized: {
      if (node.phase != NodePhase::Registered) return;
      node.phase = NodePhase::Initialized;
      node.initialized_at = now;
      node.gpus_allocatable = type.gpus;  // the device plugin has advertised nvidia.com/gpu
      // Startup taints are gone once the node is initialized (some agent removed them).
      node.taints.resize(node.taints.size() - static_cast<std::size_t>(node.startup_taints));
      node.startup_taints = 0;
      log(now, "cloud", "initialized", "NodeInitialized",
          "node " + std::to_string(node.id) + " (" + type.name + ") initialized " + fmt_s(now - node.launched_at) +
              " after launch (registered after " + fmt_s(node.registered_at - node.launched_at) + ")");
      if (node.capacity_type == CapacityType::Spot && scenario_.cluster.spot_interruptions_per_node_hour > 0) {
        const double after_s = rng_.exponential(scenario_.cluster.spot_interruptions_per_node_hour / 3600.0);
        events_.file(now + seconds_to_micros(after_s), EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::SpotNotice, node.id, 0});
      }
      reschedule_ = true;
      return;
    }
    case ClusterEvent::Kind::EvictRetry: {
      if (node.phase != NodePhase::Terminating) return;
      std::string blocked;
      const std::size_t before = node.pods.size();
      const std::size_t stay = evict_pods(node, RemovalReason::Drain, true, now, &blocked);
      if (stay < before) {
        log(now, provisioner_->name(), "evict", "Drain",
            "node " + std::to_string(node.id) + ": the drain evicted " + std::to_string(before - stay) + " more pods" +
                (stay ? "; " + std::to_string(stay) + " still wait (" + blocked + ")" : "; the node is empty"));
        reschedule_ = true;
      }
      const auto give_up = drain_give_up_at_.find(node.id);
      if (stay > 0 && give_up != drain_give_up_at_.end() && now >= give_up->second) {
        // Cluster Autoscaler's drain gives up (--max-pod-eviction-time): the node goes back into service,
        // what was evicted stays evicted, and scale-down pauses (RegisterFailedScaleDown).
        drain_give_up_at_.erase(give_up);
        node.phase = NodePhase::Initialized;
        node.disrupted = false;
        log(now, provisioner_->name(), "drain-failed", "ScaleDownFailed",
            "node " + std::to_string(node.id) + ": " + std::to_string(stay) + " pods could not be evicted in time (" + blocked +
                "); the scale-down is abandoned and the node is back in service");
        provisioner_->on_drain_failed(node.id, now);
        reschedule_ = true;
      } else if (stay > 0) {
        events_.file(now + kEvictionRetry, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::EvictRetry, node.id, 0});
      } else {
        drain_give_up_at_.erase(node.id);
        events_.file(now + kPodGrace, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
      }
      return;
    }
    case ClusterEvent::Kind::NodeTerminate:
      if (node.phase == NodePhase::Terminated) return;
      // A spot instance reclaimed at the end of its notice takes whatever pods are still on it.
      if (!node.pods.empty()) {
        evict_pods(node, RemovalReason::Interrupted, false, now);
        reschedule_ = true;
      }
      node.phase = NodePhase::Terminated;
      node.terminated_at = now;
      ++totals_.nodes_removed;
      return;
    case ClusterEvent::Kind::SpotNotice:
      if (node.phase == NodePhase::Terminating || node.phase == NodePhase::Terminated) return;
      ++totals_.spot_interruptions;
      remove_node(node, RemovalReason::Interrupted, true, now);
      return;
    default: return;
  }
}

void ClusterModel::settle(Micros now) {
  if (reschedule_) {
    reschedule_ = false;
    schedule_pending(now);
  }
  rearm_provisioner();
}

}  // namespace gpuscale
