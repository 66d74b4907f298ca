// Layer 1 in motion (see cluster_model.hpp).
#include "sim/cluster_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "provisioning/karpenter/karpenter.hpp"
#include "scheduling/fit.hpp"
#include "sim/simulation.hpp"

namespace gpuscale {

namespace {

// A spot instance goes 2 minutes after its interruption notice, whatever its pods' grace periods
// (EC2 Spot instance interruption notices).
constexpr Micros kSpotNotice = 120 * kMicrosPerSecond;
// Lab choice: a drain whose evictions the PodDisruptionBudget refuses (HTTP 429) tries again every 5 s
// (Karpenter's terminator and kubectl drain both retry evictions on a short backoff).
constexpr Micros kEvictionRetry = 5 * kMicrosPerSecond;
// Karpenter's pod controller requeues a provisionable pod every 10 s (see apply_cycle).
constexpr Micros kProvisionerPodRequeue = 10 * kMicrosPerSecond;

std::string fmt_s(Micros t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", micros_to_seconds(t));
  return buf;
}

// Without initial_nodes, the cluster starts with enough nodes for the starting replicas: of the cheapest
// offering (type and capacity type) the first NodePool allows that holds a replica's pod, or of the first
// node group's type.
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
        // Both capacity types the pool may allow, as Karpenter would price them (spot when it is cheaper).
        for (const CapacityType cap : {CapacityType::OnDemand, CapacityType::Spot}) {
          const double price = cap == CapacityType::Spot ? t.spot_usd_per_hour : t.on_demand_usd_per_hour;
          if (cap == CapacityType::Spot && price <= 0) continue;  // not offered as spot
          const Labels labels = instance_labels(t, cap, t.zones.front());
          if (!matches_all(np.requirements, labels) || !check_fit_type(pod, t, labels, np.taints).ok()) continue;
          if (best < 0 || price < best) {
            best = price;
            type = t.name;
            n.capacity_type = cap;
          }
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
    : scenario_(scenario), provisioner_(std::move(provisioner)), events_(events), rng_(Rng::stream(scenario.seed, "cluster.nodes")),
      ready_rng_(Rng::stream(scenario.seed, "cluster.node-ready")),
      capacity_(scenario.cluster.insufficient_capacity, scenario.seed) {
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
      schedulers_.push_back(make_scheduler(t.scheduler_name, scenario.seed, scenario.cluster.kube_scheduler, scenario.cluster.kai));
      scheduler_due_.push_back(false);
      scheduler_wake_at_.push_back(-1);
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

void ClusterModel::sample(ClusterSeries& out) const {
  const std::size_t row = out.rows++;
  for (const Node& n : state_.nodes) {
    if (n.id >= out.nodes.size()) {
      ClusterSeries::NodeColumn c;
      c.id = n.id;
      c.instance_type = state_.types[n.type_index].name;
      c.capacity_type = to_string(n.capacity_type);
      c.zone = n.zone;
      c.owner = n.owner;
      c.gpus = state_.types[n.type_index].gpus;
      c.gpus_free.assign(row, -1);
      out.nodes.push_back(std::move(c));
    }
    const bool advertised = n.phase == NodePhase::Initialized || n.phase == NodePhase::Terminating;
    out.nodes[n.id].gpus_free.push_back(advertised ? n.gpus_allocatable - n.gpus_requested : -1);
  }
  std::int32_t pending = 0, unschedulable = 0, launched = 0, in_flight = 0;
  for (const Pod& p : state_.pods) {
    if (p.deleted || p.phase != PodPhase::Pending) continue;
    ++pending;
    if (p.unschedulable_since >= 0) ++unschedulable;
  }
  for (const Node& n : state_.nodes) {
    // The run's initial nodes exist at once; every other node is a NodeClaim (or node group scale-up).
    if (n.initialized_at == n.launched_at) continue;
    ++launched;
    if (n.phase == NodePhase::Launched || n.phase == NodePhase::Registered) ++in_flight;
  }
  out.pods_pending.push_back(pending);
  out.pods_unschedulable.push_back(unschedulable);
  out.nodeclaims_launched.push_back(launched);
  out.nodeclaims_pending.push_back(in_flight);
  if (scenario_.cluster.provisioner == ProvisionerKind::Karpenter) {
    if (out.nodepools.empty()) {
      for (const NodePool& p : scenario_.cluster.nodepools) out.nodepools.push_back({p.name, p.limit_gpus.value_or(-1), {}});
    }
    for (std::size_t i = 0; i < out.nodepools.size(); ++i) out.nodepools[i].gpus.push_back(pool_usage(state_, scenario_.cluster.nodepools[i].name).gpus);
  }
  bool kai = false;
  for (const auto& sched : schedulers_) kai = kai || std::string(sched->name()) == kKaiScheduler;
  if (kai) {
    if (out.kai_queues.empty()) {
      for (const kai::Queue& q : scenario_.cluster.kai.queues) out.kai_queues.push_back({q.name, q.resources[0].deserved, q.resources[0].max_allowed, {}, {}, {}, {}});
    }
    for (auto& q : out.kai_queues) {
      const auto it = queue_gpus_.find(q.name);
      const QueueGpus f = it == queue_gpus_.end() ? QueueGpus{q.name, q.quota, 0, 0, 0} : it->second;
      q.deserved.push_back(f.deserved);
      q.fair_share.push_back(f.fair_share);
      q.allocated.push_back(f.allocated);
      q.requested.push_back(f.requested);
    }
  }
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
    n.registered_at = n.ready_at = n.initialized_at = now;
    n.gpus_allocatable = type.gpus;
    // A spot node that exists at the start is as exposed as one launched later.
    if (n.capacity_type == CapacityType::Spot && scenario_.cluster.spot_interruptions_per_node_hour > 0) {
      const double after_s = rng_.exponential(scenario_.cluster.spot_interruptions_per_node_hour / 3600.0);
      events_.file(now + seconds_to_micros(after_s), EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::SpotNotice, n.id, 0});
    }
  } else {
    n.taints.insert(n.taints.end(), l.startup_taints.begin(), l.startup_taints.end());
    n.startup_taints = static_cast<int>(l.startup_taints.size());
    const NodeStartup& st = scenario_.cluster.startup;
    const Micros boot = seconds_to_micros(rng_.uniform(st.launch_to_registered.min_s, st.launch_to_registered.max_s));
    events_.file(now + boot, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeRegistered, n.id, 0});
  }
  state_.nodes.push_back(std::move(n));
}

void ClusterModel::request_launch(const NodeLaunch& l, Micros now) {
  LaunchOutcome outcome;
  outcome.launch = l;
  std::vector<LaunchOption> tries;
  const InstanceType& first = state_.types.at(static_cast<std::size_t>(l.type_index));
  tries.push_back(LaunchOption{l.type_index, l.capacity_type, l.zone.empty() ? first.zones.front() : l.zone});
  tries.insert(tries.end(), l.fallbacks.begin(), l.fallbacks.end());
  const auto text = [&](const LaunchOption& o) {
    return state_.types[static_cast<std::size_t>(o.type_index)].name + " " + to_string(o.capacity_type) + " " + o.zone;
  };
  std::vector<std::string> refused;
  for (const LaunchOption& o : tries) {
    const InstanceType& t = state_.types.at(static_cast<std::size_t>(o.type_index));
    if (capacity_.insufficient_capacity(t.name, o.capacity_type, o.zone, now)) {
      outcome.refused.push_back(o);
      ++totals_.insufficient_capacity;
      char p[32];
      std::snprintf(p, sizeof p, "%.2f", capacity_.probability(t.name, o.capacity_type, o.zone, now));
      refused.push_back(text(o) + " (rate " + p + ")");
      continue;
    }
    NodeLaunch granted = l;
    granted.type_index = o.type_index;
    granted.capacity_type = o.capacity_type;
    granted.zone = o.zone;
    granted.fallbacks.clear();
    outcome.node = static_cast<std::int32_t>(state_.nodes.size());
    launch(granted, now, false);
    break;
  }
  if (outcome.refused.empty()) return;
  std::string what = "InsufficientInstanceCapacity for " + l.owner + ": " + refused.front();
  for (std::size_t i = 1; i < refused.size(); ++i) what += ", " + refused[i];
  what += outcome.node >= 0 ? "; launched " + text(tries[outcome.refused.size()]) + " instead (node " + std::to_string(outcome.node) + ")"
                            : "; no offering of the " + std::to_string(tries.size()) + " asked for was granted: nothing launched";
  log(now, "cloud", outcome.node >= 0 ? "launch-fallback" : "launch-failed", "InsufficientInstanceCapacity", what);
  provisioner_->on_insufficient_capacity(outcome, now);
  // The pods the launch was for stay Pending: the next scheduling pass marks them again.
  if (outcome.node < 0) reschedule_ = true;
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
    for (std::int32_t r = 0; r < starting_replicas[p]; ++r) new_replica_pods(static_cast<int>(p), r, 0);
  }
  const std::size_t pools = scenario_.pools.size();
  for (std::size_t w = 0; w < scenario_.cluster.workloads.size(); ++w) {
    for (std::int64_t k = 0; k < scenario_.cluster.workloads[w].replicas; ++k) new_pod(static_cast<int>(pools + w), -1, 0);
  }
  for (std::size_t i = 0; i < scenario_.cluster.spot_reclaims.size(); ++i) {
    events_.file(scenario_.cluster.spot_reclaims[i].at, EventClass::NodeLifecycle,
                 ClusterEvent{ClusterEvent::Kind::SpotReclaim, static_cast<std::uint32_t>(i), 0});
  }
  schedule_pending(0);
}

std::uint32_t ClusterModel::new_replica_pods(int pool, std::int32_t replica, Micros now) {
  // A LeaderWorkerSet with startupPolicy LeaderCreated creates the leader, then its workers'
  // StatefulSet at once: every member is Pending together, each scheduled on its own.
  const std::uint32_t leader = static_cast<std::uint32_t>(state_.pods.size());
  for (int m = 0; m < scenario_.pools[static_cast<std::size_t>(pool)].group_size; ++m) state_.pods[new_pod(pool, replica, now)].member = m;
  return leader;
}

std::uint32_t ClusterModel::add_replica_pod(int pool, std::int32_t replica, Micros now) {
  account(now);
  const std::uint32_t id = new_replica_pods(pool, replica, now);
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
  note_pod_event(node, now);
  pod.node = -1;
}

void ClusterModel::remove_pod(std::uint32_t id, Micros now) {
  account(now);
  Pod& pod = state_.pods.at(id);
  if (pod.deleted) return;
  const std::int32_t node = pod.node;
  if (pod.phase == PodPhase::Pending) {
    pending_.erase(std::find(pending_.begin(), pending_.end(), id));
  } else if (node >= 0) {
    unbind(pod, now);
  }
  pod.deleted = true;
  pod.deletion_timestamp = -1;
  if (node >= 0) terminate_if_drained(state_.nodes[static_cast<std::size_t>(node)], now);
  schedule_pending(now);  // its room may let a pending pod in
}

void ClusterModel::mark_pod_terminating(std::uint32_t id, Micros now) {
  if (id >= state_.pods.size()) return;
  account(now);
  Pod& pod = state_.pods[id];
  pod.ready = false;
  if (pod.deleted || pod.terminating() || pod.node < 0) return;
  pod.deletion_timestamp = now;
  note_pod_event(state_.nodes[static_cast<std::size_t>(pod.node)], now);
}

void ClusterModel::set_pod_ready(std::uint32_t pod, bool ready) {
  if (pod < state_.pods.size()) state_.pods[pod].ready = ready;
}

void ClusterModel::set_expected_replicas(int pool, std::int32_t replicas) {
  state_.pools[static_cast<std::size_t>(pool)].expected_replicas = replicas;
}

void ClusterModel::bind(Pod& pod, Node& node, Micros now, const std::string& why, const char* scheduler) {
  const PodTemplate& t = state_.template_of(pod);
  node.pods.push_back(pod.id);
  node.gpus_requested += t.gpus;
  node.cpu_requested_milli += t.cpu_milli;
  node.memory_requested_mib += t.memory_mib;
  note_pod_event(node, now);
  pod.node = static_cast<std::int32_t>(node.id);
  pod.phase = PodPhase::Running;
  pod.unschedulable_since = -1;
  pod.reported_unschedulable_at = -1;
  const InstanceType& type = state_.types[static_cast<std::size_t>(node.type_index)];
  const bool non_gpu_on_gpu = t.gpus == 0 && type.gpus > 0;
  if (non_gpu_on_gpu) ++totals_.non_gpu_pods_on_gpu_nodes;
  log(now, scheduler, "bind", non_gpu_on_gpu ? "NonGpuPodOnGpuNode" : "Scheduled",
      "pod " + std::to_string(pod.id) + " (" + t.name + ") " + why + ", a " + type.name + " (" + node.owner + ")");
  if (pod.replica >= 0) {
    const int pool = state_.pool_of(pod);
    notices_.push_back(ClusterNotice{ClusterNotice::Kind::ReplicaPodBound, pool, pod.replica, pod.id, node.id, now,
                                     pull_image(node, pod, scenario_.pools[static_cast<std::size_t>(pool)].image_pull_s, now),
                                     RemovalReason::Empty});
  }
}

Micros ClusterModel::pull_image(Node& node, const Pod& pod, double pull_s, Micros now) {
  // The kubelet pulls an image a node does not have (imagePullPolicy IfNotPresent, the default for a
  // tagged image) and keeps it; with serialized pulls (the kubelet default) a second pod of the same image
  // waits for the pull under way instead of pulling again.
  const int image = pod.template_index;
  for (const auto& [img, ready_at] : node.images) {
    if (img != image) continue;
    if (pull_s > 0 && now > 0) {
      log(now, "kubelet", ready_at > now ? "pull-wait" : "pulled", ready_at > now ? "Pulling" : "Pulled",
          "pod " + std::to_string(pod.id) + " on node " + std::to_string(node.id) + ": image of " + state_.template_of(pod).name +
              (ready_at > now ? " is being pulled, ready at t = " + fmt_s(ready_at) : " already present: no pull"));
    }
    return std::max(now, ready_at);
  }
  // Lab choice: the starting cluster (t = 0) already holds its starting replicas' image.
  const Micros ready_at = now == 0 ? 0 : now + seconds_to_micros(pull_s);
  node.images.emplace_back(image, ready_at);
  if (pull_s > 0 && ready_at > now) {
    log(now, "kubelet", "pull", "Pulling",
        "pod " + std::to_string(pod.id) + " on node " + std::to_string(node.id) + ": pulling the image of " +
            state_.template_of(pod).name + " (cold_start.image_pull_s " + fmt_s(ready_at - now) + "), container starts at t = " +
            fmt_s(ready_at));
  }
  return ready_at;
}

// A scheduler's name in the decision log: kube-scheduler for default-scheduler, else its own.
const char* ClusterModel::scheduler_log_name(std::size_t s) const {
  return schedulers_[s]->name() == std::string(kDefaultScheduler) ? "kube-scheduler" : schedulers_[s]->name();
}

void ClusterModel::schedule_pending(Micros now) {
  for (std::size_t s = 0; s < schedulers_.size(); ++s) {
    std::vector<std::uint32_t> mine;
    for (std::uint32_t id : pending_) {
      if (template_scheduler_[static_cast<std::size_t>(state_.pods[id].template_index)] == static_cast<int>(s)) mine.push_back(id);
    }
    const Micros period = schedulers_[s]->period();
    if (period > 0 && !scheduler_due_[s] && now > 0) {
      // A scheduler on its own clock sees the change at its next cycle, on the period's grid (the
      // starting cluster at t = 0 is already scheduled: its cycle runs then).
      if (!mine.empty() && scheduler_wake_at_[s] < 0) file_scheduler_wake(s, (now / period + 1) * period);
      continue;
    }
    scheduler_due_[s] = false;
    if (mine.empty()) continue;
    const SchedulingCycle& cycle = schedulers_[s]->schedule(state_, mine, now);
    apply_cycle(s, cycle, now);
    if (cycle.next_wakeup >= 0 && (period <= 0 || scheduler_wake_at_[s] < 0)) file_scheduler_wake(s, cycle.next_wakeup);
  }
  rearm_provisioner();
}

void ClusterModel::file_scheduler_wake(std::size_t s, Micros at) {
  if (schedulers_[s]->period() > 0) scheduler_wake_at_[s] = at;
  events_.file(at, EventClass::NodeControl, ClusterEvent{ClusterEvent::Kind::SchedulerWake, static_cast<std::uint32_t>(s), 0});
}

void ClusterModel::apply_cycle(std::size_t s, const SchedulingCycle& cycle, Micros now) {
  const char* who = scheduler_log_name(s);
  for (const QueueGpus& q : cycle.queues) queue_gpus_[q.name] = q;
  bool acted = false;
  for (const PodEviction& e : cycle.evictions) {
    Pod& pod = state_.pods[e.pod];
    if (pod.deleted || pod.terminating() || pod.node < 0) continue;
    Node& node = state_.nodes[static_cast<std::size_t>(pod.node)];
    log(now, who, "evict", e.action, "pod " + std::to_string(e.pod) + " (" + state_.template_of(pod).name + ") on node " + std::to_string(node.id) + ": " + e.message);
    delete_pod(pod, node, RemovalReason::Preempted, -1, now);
    acted = true;
  }
  for (const PodOutcome& o : cycle.outcomes) {
    Pod& pod = state_.pods[o.pod];
    if (o.node) {
      bind(pod, state_.nodes[*o.node], now, o.message, who);
      pending_.erase(std::find(pending_.begin(), pending_.end(), o.pod));
      acted = true;
      continue;
    }
    if (o.reason == "Pipelined") continue;  // placed onto room being released: it binds at a later cycle
    if (pod.unschedulable_since < 0) {
      pod.unschedulable_since = now;
      log(now, who, "unschedulable", "FailedScheduling", "pod " + std::to_string(o.pod) + " (" + state_.template_of(pod).name + "): " + o.message);
    }
    // Pods another scheduler holds back still look unschedulable to the node provisioner
    // (kai-scheduler/KAI-Scheduler#1615: a queue's limit makes Karpenter launch nodes). A scheduler on
    // its own clock re-marks a pod that stays unschedulable every cycle without changing it, so the
    // provisioner hears of it again only on its pod controller's requeue (kubernetes-sigs/karpenter
    // pkg/controllers/provisioning/controller.go: RequeueAfter 10 s while the pod is provisionable).
    if (schedulers_[s]->period() > 0 && pod.reported_unschedulable_at >= 0 && now - pod.reported_unschedulable_at < kProvisionerPodRequeue) continue;
    pod.reported_unschedulable_at = now;
    provisioner_->on_unschedulable(state_, o.pod, now);
  }
  if (acted && !cycle.notes.empty()) {
    std::string text;
    for (const std::string& line : cycle.notes) text += (text.empty() ? "" : "; ") + line;
    log(now, who, "cycle", "Session", std::move(text));
  }
}

void ClusterModel::rearm_provisioner() {
  const Micros t = provisioner_->next_wakeup();
  if (t < 0 || t == provisioner_wake_) return;
  provisioner_wake_ = t;
  events_.file(t, EventClass::NodeControl, ClusterEvent{ClusterEvent::Kind::ProvisionerWake, 0, ++wake_gen_});
}

// The Eviction API: a pod the PodDisruptionBudgets allow is deleted (respect_pdb false: every pod). A
// deleted pod is not gone: it terminates (preStop, SIGTERM, SIGKILL at its grace period) while still
// bound; a replica's pod terminates in the world (sim/replicas.cpp), another workload's pod, which holds
// no requests, stops at SIGTERM, after its preStop sleep. Its ReplicaSet makes a new pod at once (a
// terminating pod is not active, kubernetes pkg/controller/controller_utils.go FilterActivePods).
std::size_t ClusterModel::evict_pods(Node& node, RemovalReason reason, bool respect_pdb, Micros now, std::string* blocked_why) {
  const auto removal = removals_.find(node.id);
  const Micros cap = removal == removals_.end() ? -1 : removal->second.max_grace;
  std::size_t stay = 0;
  const std::vector<std::uint32_t> pods = node.pods;
  for (std::uint32_t id : pods) {
    Pod& pod = state_.pods[id];
    if (pod.terminating()) continue;  // already going (a scale-down, or an earlier pass of this drain)
    // The Eviction API refuses (429) what a PodDisruptionBudget does not allow; the drain retries.
    if (respect_pdb && !eviction_allowed(state_, pod, stay == 0 ? blocked_why : nullptr)) {
      ++stay;
      continue;
    }
    delete_pod(pod, node, reason, cap, now);
  }
  return stay;
}

void ClusterModel::delete_pod(Pod& pod, Node& node, RemovalReason reason, Micros max_grace, Micros now) {
  pod.deletion_timestamp = now;
  pod.ready = false;
  note_pod_event(node, now);  // the pod-event clock moves when a pod starts terminating
  ++totals_.pod_evictions;
  if (pod.replica >= 0) {
    ++totals_.replica_evictions;
    notices_.push_back(ClusterNotice{ClusterNotice::Kind::ReplicaPodEvicted, state_.pool_of(pod), pod.replica, pod.id, node.id, now, now, reason, max_grace});
    return;
  }
  const PodTemplate& t = state_.template_of(pod);
  Micros grace = t.termination_grace_period_s * kMicrosPerSecond;
  if (max_grace >= 0) grace = std::min(grace, max_grace);
  const Micros prestop = std::min(t.prestop_sleep_s * kMicrosPerSecond, grace);
  if (prestop > 0) {
    events_.file(now + prestop, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::PodGone, pod.id, 0});
  } else {
    unbind(pod, now);
    pod.deleted = true;
  }
  new_pod(pod.template_index, -1, now);  // its ReplicaSet makes a new one
}

void ClusterModel::terminate_if_drained(Node& node, Micros now) {
  const auto removal = removals_.find(node.id);
  if (node.phase != NodePhase::Terminating || removal == removals_.end() || removal->second.evicting || !node.pods.empty()) return;
  events_.file(now, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
}

void ClusterModel::terminate_node(Node& node, Micros now) {
  if (node.phase == NodePhase::Terminated) return;
  const auto removal = removals_.find(node.id);
  const RemovalReason reason = removal == removals_.end() ? RemovalReason::Interrupted : removal->second.reason;
  // Pods still on the instance die with it: nothing graceful is left.
  const std::vector<std::uint32_t> pods = node.pods;
  for (std::uint32_t id : pods) {
    Pod& pod = state_.pods[id];
    const bool was_terminating = pod.terminating();
    unbind(pod, now);
    pod.deleted = true;
    pod.ready = false;
    pod.deletion_timestamp = -1;
    if (!was_terminating) ++totals_.pod_evictions;
    if (pod.replica >= 0) {
      if (!was_terminating) ++totals_.replica_evictions;
      notices_.push_back(ClusterNotice{ClusterNotice::Kind::ReplicaPodKilled, state_.pool_of(pod), pod.replica, id, node.id, now, now, reason});
    } else if (!was_terminating) {
      new_pod(pod.template_index, -1, now);
    }
  }
  if (!pods.empty()) {
    log(now, "cloud", "terminate", to_string(reason),
        "node " + std::to_string(node.id) + ": the instance terminated with " + std::to_string(pods.size()) + " pods still on it");
    reschedule_ = true;
  }
  node.phase = NodePhase::Terminated;
  node.terminated_at = now;
  ++totals_.nodes_removed;
  if (removal != removals_.end()) removals_.erase(removal);
  drain_give_up_at_.erase(node.id);
}

void ClusterModel::remove_node(Node& node, RemovalReason reason, bool drain, Micros now, Micros give_up_after, Micros max_grace) {
  const bool interrupted = reason == RemovalReason::Interrupted;
  if (node.phase == NodePhase::Terminated) return;
  if (node.phase == NodePhase::Terminating) {
    // A spot notice for a node already being drained: EC2 takes it at the end of the notice anyway.
    if (interrupted) {
      removals_[node.id].reason = reason;
      events_.file(now + kSpotNotice, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
      log(now, "cloud", "delete", to_string(reason),
          "node " + std::to_string(node.id) + " (already draining) interrupted: the instance goes at t = " + fmt_s(now + kSpotNotice));
    }
    return;
  }
  const std::size_t before = node.pods.size();
  node.phase = NodePhase::Terminating;
  node.disrupted = true;
  removals_[node.id] = Removal{reason, max_grace, false};
  const std::string type = state_.types[static_cast<std::size_t>(node.type_index)].name;
  std::string what = "node " + std::to_string(node.id) + " (" + type + ", " + to_string(node.capacity_type) + ", " + node.owner +
                     ") removed: " + to_string(reason);
  if (!drain) {
    // Never registered: nothing to drain, the instance goes at once.
    log(now, provisioner_->name(), "delete", to_string(reason), what + "; not drained, the instance goes now");
    events_.file(now, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
    return;
  }
  // A drain evicts through the Eviction API, which honours the PodDisruptionBudget; the instance goes
  // once every pod has stopped, and a spot instance at the end of its notice whatever is left.
  std::string blocked;
  const std::size_t stay = evict_pods(node, reason, true, now, &blocked);
  what += "; " + std::to_string(before - stay) + " pods evicted";
  if (max_grace >= 0) what += " (grace period at most " + fmt_s(max_grace) + ")";
  if (stay > 0) {
    removals_[node.id].evicting = true;
    events_.file(now + kEvictionRetry, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::EvictRetry, node.id, 0});
    what += "; " + std::to_string(stay) + " wait (" + blocked + "), the drain retries every " + fmt_s(kEvictionRetry);
    if (give_up_after >= 0) {
      drain_give_up_at_[node.id] = now + give_up_after;
      what += " for at most " + fmt_s(give_up_after);
    }
  }
  if (interrupted) {
    events_.file(now + kSpotNotice, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
    what += "; EC2 reclaims the instance at t = " + fmt_s(now + kSpotNotice) + " whatever is still on it";
  } else if (const NodePool* pool = owner_pool(node); pool && pool->termination_grace_period && stay > 0) {
    // The NodePool's terminationGracePeriod (karpenter.sh/v1 NodeClaim spec; disruption.md "Termination
    // Grace Period"): the drain waits on PodDisruptionBudgets at most this long. Each pod still left is
    // deleted, PDB or not, early enough that its own terminationGracePeriodSeconds ends with the
    // node's, and then the instance goes whatever is on it.
    const Micros deadline = now + *pool->termination_grace_period;
    Micros longest = 0;  // the longest grace period among the pods
    for (std::uint32_t id : node.pods) longest = std::max(longest, state_.template_of(state_.pods[id]).termination_grace_period_s * kMicrosPerSecond);
    removals_[node.id].force_at = deadline;
    events_.file(std::max(now, deadline - longest), EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::DrainDeadline, node.id, 0});
    events_.file(deadline, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeTerminate, node.id, 0});
    what += "; terminationGracePeriod " + fmt_s(*pool->termination_grace_period) + ": what is left is deleted from t = " +
            fmt_s(std::max(now, deadline - longest)) + " and the instance goes at t = " + fmt_s(deadline);
  }
  what += before ? "; the instance goes once its pods have stopped" : "; the instance goes now";
  log(now, interrupted ? "cloud" : provisioner_->name(), "delete", to_string(reason), what);
  if (before > stay) schedule_pending(now);
  terminate_if_drained(node, now);
}

const NodePool* ClusterModel::owner_pool(const Node& node) const {
  if (scenario_.cluster.provisioner != ProvisionerKind::Karpenter) return nullptr;
  for (const NodePool& p : scenario_.cluster.nodepools) {
    if (p.name == node.owner) return &p;
  }
  return nullptr;
}

void ClusterModel::apply(ProvisionerActions& actions, Micros now) {
  for (const auto& l : actions.log) log(now, l.controller.c_str(), l.action, l.reason, l.explanation);
  // Uncordons first: a pass may abandon a command and start a new one on the same node.
  for (std::uint32_t id : actions.uncordons) {
    Node& n = state_.nodes.at(id);
    if (n.phase != NodePhase::Terminating && n.phase != NodePhase::Terminated) n.disrupted = false;
  }
  for (std::uint32_t id : actions.cordons) state_.nodes.at(id).disrupted = true;
  for (const auto& l : actions.launches) request_launch(l, now);
  for (const auto& r : actions.removals) {
    if (r.node < state_.nodes.size()) remove_node(state_.nodes[r.node], r.reason, r.drain, now, r.give_up_after, r.max_pod_grace);
  }
}

void ClusterModel::on_event(const ClusterEvent& e, Micros now) {
  account(now);
  switch (e.kind) {
    case ClusterEvent::Kind::SchedulerWake:  // kube-scheduler's periodic flush of unschedulable pods; KAI's cycle
      schedulers_[e.index]->on_wakeup(now);
      if (schedulers_[e.index]->period() > 0) {
        if (scheduler_wake_at_[e.index] != now) return;  // superseded
        scheduler_wake_at_[e.index] = -1;
        scheduler_due_[e.index] = true;
      }
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
    case ClusterEvent::Kind::PodGone: {
      Pod& pod = state_.pods[e.index];
      if (pod.deleted || pod.node < 0) return;
      Node& node = state_.nodes[static_cast<std::size_t>(pod.node)];
      unbind(pod, now);
      pod.deleted = true;
      pod.deletion_timestamp = -1;
      reschedule_ = true;
      terminate_if_drained(node, now);
      return;
    }
    case ClusterEvent::Kind::SpotReclaim: {
      const SpotReclaim& reclaim = scenario_.cluster.spot_reclaims[e.index];
      std::vector<std::uint32_t> spot;  // the instances still running, oldest (lowest id) first
      for (const Node& node : state_.nodes) {
        const std::string& type = state_.types[static_cast<std::size_t>(node.type_index)].name;
        if (node.phase != NodePhase::Terminated && node.capacity_type == CapacityType::Spot &&
            (reclaim.instance_type.empty() || reclaim.instance_type == type)) {
          spot.push_back(node.id);
        }
      }
      const auto taken = static_cast<std::size_t>(std::ceil(reclaim.fraction * static_cast<double>(spot.size()) - 1e-9));
      char share[32];
      std::snprintf(share, sizeof share, "%g", reclaim.fraction);
      std::string ids;
      for (std::size_t i = 0; i < taken && i < spot.size(); ++i) ids += (ids.empty() ? "" : ", ") + std::to_string(spot[i]);
      const std::string of = reclaim.instance_type.empty() ? "spot instances" : "spot " + reclaim.instance_type + " instances";
      log(now, "cloud", "spot-reclaim", "Interrupted",
          "EC2 reclaims " + std::to_string(taken) + " of the " + std::to_string(spot.size()) + " running " + of +
              (taken ? " (ceil(" + std::string(share) + " × " + std::to_string(spot.size()) + ")): nodes " + ids +
                           " get their 2-minute interruption notice"
                     : ": none to take"));
      for (std::size_t i = 0; i < taken && i < spot.size(); ++i) {
        ++totals_.spot_interruptions;
        remove_node(state_.nodes[spot[i]], RemovalReason::Interrupted, true, now);
      }
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
      // The node joins NotReady, so it carries node.kubernetes.io/not-ready:NoSchedule (cluster_state.hpp)
      // until its kubelet reports Ready; it goes in front of the startup taints, which stay last.
      node.taints.insert(node.taints.end() - node.startup_taints, Taint{kNotReadyTaint, "", TaintEffect::NoSchedule});
      const NodeStartup& st = scenario_.cluster.startup;
      const Micros init = seconds_to_micros(rng_.uniform(st.registered_to_initialized.min_s, st.registered_to_initialized.max_s));
      const Micros ready = seconds_to_micros(ready_rng_.uniform(st.registered_to_ready.min_s, st.registered_to_ready.max_s));
      events_.file(now + ready, EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeReady, node.id, 0});
      // Karpenter's Initialized needs Ready first (nodeclaim/lifecycle/initialization.go).
      events_.file(now + std::max(init, ready), EventClass::NodeLifecycle, ClusterEvent{ClusterEvent::Kind::NodeInitialized, node.id, 0});
      reschedule_ = true;  // a pod that tolerates the taint may land already
      return;
    }
    case ClusterEvent::Kind::NodeReady: {
      if (node.phase != NodePhase::Registered || node.ready_at >= 0) return;
      node.ready_at = now;
      node.taints.erase(std::find_if(node.taints.begin(), node.taints.end(), [](const Taint& t) { return t.key == kNotReadyTaint; }));
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
      const auto removal = removals_.find(node.id);
      if (node.phase != NodePhase::Terminating || removal == removals_.end()) return;
      std::string blocked;
      std::size_t before = 0;  // pods still waiting for the Eviction API
      for (std::uint32_t id : node.pods) before += state_.pods[id].terminating() ? 0 : 1;
      const std::size_t stay = evict_pods(node, removal->second.reason, true, now, &blocked);
      if (stay < before) {
        log(now, provisioner_->name(), "evict", to_string(removal->second.reason),
            "node " + std::to_string(node.id) + ": the drain evicted " + std::to_string(before - stay) + " more pods" +
                (stay ? "; " + std::to_string(stay) + " still wait (" + blocked + ")" : "; none waits any more"));
        reschedule_ = true;
      }
      const auto give_up = drain_give_up_at_.find(node.id);
      if (stay > 0 && give_up != drain_give_up_at_.end() && now >= give_up->second) {
        // Cluster Autoscaler's drain gives up (--max-pod-eviction-time): the node goes back into service,
        // what was evicted stays evicted, and scale-down pauses (RegisterFailedScaleDown).
        drain_give_up_at_.erase(give_up);
        removals_.erase(removal);
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
        removal->second.evicting = false;
        terminate_if_drained(node, now);
      }
      return;
    }
    case ClusterEvent::Kind::DrainDeadline: {
      const auto removal = removals_.find(node.id);
      if (node.phase != NodePhase::Terminating || removal == removals_.end()) return;
      // Past the PodDisruptionBudgets: each pod gets what is left of the node's grace period.
      removal->second.max_grace = removal->second.max_grace >= 0 ? std::min(removal->second.max_grace, removal->second.force_at - now)
                                                                 : removal->second.force_at - now;
      std::size_t before = 0;
      for (std::uint32_t id : node.pods) before += state_.pods[id].terminating() ? 0 : 1;
      evict_pods(node, removal->second.reason, false, now);
      removal->second.evicting = false;
      log(now, provisioner_->name(), "delete", to_string(removal->second.reason),
          "node " + std::to_string(node.id) + ": the NodePool's terminationGracePeriod runs out at t = " + fmt_s(removal->second.force_at) +
              ": " + std::to_string(before) + " pods the drain still waited for are deleted now, PodDisruptionBudget or not");
      reschedule_ = true;
      terminate_if_drained(node, now);
      return;
    }
    case ClusterEvent::Kind::NodeTerminate:
      terminate_node(node, now);
      return;
    case ClusterEvent::Kind::SpotNotice:
      if (node.phase == NodePhase::Terminated) return;
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
