// Layer 1 in motion (see cluster_model.hpp).
#include "cluster/cluster_model.hpp"

#include <algorithm>
#include <cstdio>

#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "serving/engine_profiles.hpp"
#include "scheduling/kube_scheduler.hpp"
#include "provisioning/karpenter/nodepool.hpp"

namespace gpuscale {

namespace {

// Pods get this long to exit after an eviction before their node goes away (the Kubernetes default
// terminationGracePeriodSeconds); a spot instance goes 2 minutes after its interruption notice.
constexpr Micros kPodGrace = 30 * kMicrosPerSecond;
constexpr Micros kSpotNotice = 120 * kMicrosPerSecond;
// kube-scheduler moves unschedulable pods back to its active queue every 30 s
// (pkg/scheduler/internal/queue: flushUnschedulablePodsLeftover runs every 30 s).
constexpr Micros kSchedulerRetry = 30 * kMicrosPerSecond;
// Lab choice: a drain whose evictions the PodDisruptionBudget refuses (HTTP 429) tries again every 5 s
// (Karpenter's terminator and kubectl drain both retry evictions on a short backoff).
constexpr Micros kEvictionRetry = 5 * kMicrosPerSecond;

std::string fmt_s(Micros t) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", micros_to_seconds(t));
  return buf;
}

PodTemplate inference_template(const Scenario& s) {
  PodTemplate t;
  t.name = "vllm";
  t.gpus = engine_profile(s.engine.profile).tensor_parallel;
  t.cpu_milli = 8000 * t.gpus;        // 8 vCPU and 100 GiB of host memory per GPU: room for tokenizer,
  t.memory_mib = 100 * 1024 * t.gpus;  // detokenizer and the weights' page cache (a p5.48xlarge takes 4 TP2 pods)
  // The ExtendedResourceToleration admission plugin (on in EKS) gives every pod that requests
  // nvidia.com/gpu a toleration for taints keyed nvidia.com/gpu, so GPU pods pass a GPU pool's taint.
  t.tolerations.push_back(Toleration{"nvidia.com/gpu", "Exists", "", ""});
  if (!s.cluster.inference_pod.is_null()) t = parse_pod_template(s.cluster.inference_pod, "/cluster/inference_pod", "vllm", t);
  return t;
}

}  // namespace

ClusterModel::ClusterModel(const Scenario& scenario, std::unique_ptr<NodeProvisioner> provisioner)
    : scenario_(scenario), provisioner_(std::move(provisioner)), rng_(Rng::stream(scenario.seed, "cluster.nodes")) {
  state_.types = scenario.cluster.instance_types.is_null()
                     ? default_instance_types()
                     : parse_instance_types(scenario.cluster.instance_types, "/cluster/instance_types");
  state_.templates.push_back(inference_template(scenario));
  if (!scenario.cluster.inference_pdb.is_null()) state_.inference_pdb = parse_pdb(scenario.cluster.inference_pdb, "/cluster/inference_pdb");
  for (std::size_t i = 0; i < scenario.cluster.workloads.size(); ++i) {
    const auto& w = scenario.cluster.workloads[i];
    PodTemplate defaults;
    defaults.cpu_milli = 1000;
    defaults.memory_mib = 2048;
    state_.templates.push_back(parse_pod_template(w.pod.is_null() ? Json::object() : w.pod,
                                                  "/cluster/workloads/" + std::to_string(i) + "/pod", w.name, defaults));
  }
}

void ClusterModel::log(Micros t, const char* controller, std::string action, std::string reason, std::string explanation) {
  logs_.push_back(ClusterLog{t, controller, std::move(action), std::move(reason), std::move(explanation)});
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

std::uint32_t ClusterModel::new_pod(int template_index, std::int32_t owner, Micros now) {
  Pod p;
  p.id = static_cast<std::uint32_t>(state_.pods.size());
  p.template_index = template_index;
  p.owner = owner;
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
  n.labels[scenario_.cluster.provisioner == "karpenter" ? "karpenter.sh/nodepool" : "eks.amazonaws.com/nodegroup"] = l.owner;
  n.taints = l.taints;
  n.launched_at = now;
  n.expires_at = l.expire_after >= 0 ? now + l.expire_after : -1;
  n.price_usd_per_hour = n.capacity_type == "spot" ? type.spot_usd_per_hour : type.on_demand_usd_per_hour;
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
    queue_.push(now + boot, EventClass::kCompletion, Event{Kind::Registered, n.id, 0});
  }
  state_.nodes.push_back(std::move(n));
}

void ClusterModel::start(std::int32_t initial_replicas, std::vector<ClusterNotice>& out) {
  // The starting nodes: as the scenario lists them, or enough of the first pool's / group's type to
  // hold the starting replicas.
  std::vector<InitialNodes> initial = scenario_.cluster.initial_nodes;
  const PodTemplate& pod = state_.templates[0];
  if (initial.empty() && initial_replicas > 0) {
    InitialNodes n;
    if (scenario_.cluster.provisioner == "karpenter") {
      const NodePool pool = parse_nodepool(scenario_.cluster.nodepools.at(0), "/cluster/nodepools/0");
      n.owner = pool.name;
      // The cheapest on-demand type the pool allows that holds the replica's pod.
      double best = -1;
      for (const auto& t : state_.types) {
        Labels labels = instance_labels(t, "on-demand", t.zones.front());
        if (!matches_all(pool.requirements, labels) || !pod_fits_type(pod, t, labels, pool.taints)) continue;
        if (best < 0 || t.on_demand_usd_per_hour < best) {
          best = t.on_demand_usd_per_hour;
          n.instance_type = t.name;
        }
      }
    } else {
      const ClusterAutoscalerConfig ca = parse_cluster_autoscaler(scenario_.cluster.cluster_autoscaler, "/cluster/cluster_autoscaler");
      if (!ca.node_groups.empty()) {
        n.owner = ca.node_groups.front().name;
        n.instance_type = ca.node_groups.front().instance_type;
        n.capacity_type = ca.node_groups.front().capacity_type;
      }
    }
    const InstanceType* t = find_instance_type(state_.types, n.instance_type);
    const int per_node = t && pod.gpus > 0 ? std::max(1, t->gpus / pod.gpus) : 1;
    n.count = (initial_replicas + per_node - 1) / per_node;
    initial.push_back(n);
  }
  // Starting nodes carry their owner's template: a NodePool's labels and taints, or a node group's.
  std::vector<NodePool> pools;
  std::vector<NodeGroup> groups;
  if (scenario_.cluster.provisioner == "karpenter") {
    for (std::size_t i = 0; i < scenario_.cluster.nodepools.size(); ++i) {
      pools.push_back(parse_nodepool(scenario_.cluster.nodepools[i], "/cluster/nodepools/" + std::to_string(i)));
    }
  } else {
    groups = parse_cluster_autoscaler(scenario_.cluster.cluster_autoscaler, "/cluster/cluster_autoscaler").node_groups;
  }
  for (std::size_t i = 0; i < initial.size(); ++i) {
    InitialNodes in = initial[i];
    const std::string path = "/cluster/initial_nodes/" + std::to_string(i);
    if (in.owner.empty()) in.owner = !pools.empty() ? pools.front().name : !groups.empty() ? groups.front().name : "";
    const InstanceType* t = find_instance_type(state_.types, in.instance_type);
    if (!t) throw InputError(path + "/instance_type", "\"" + in.instance_type + "\" is not in the instance catalogue");
    NodeLaunch l;
    l.owner = in.owner;
    bool owner_found = false;
    for (const NodePool& p : pools) {
      if (p.name != in.owner) continue;
      l.labels = p.template_labels;
      l.taints = p.taints;
      l.expire_after = p.expire_after ? *p.expire_after : -1;
      owner_found = true;
    }
    for (const NodeGroup& g : groups) {
      if (g.name != in.owner) continue;
      l.labels = g.labels;
      l.taints = g.taints;
      owner_found = true;
    }
    if (!owner_found) throw InputError(path + "/owner", "\"" + in.owner + "\" is not a NodePool or node group of this scenario");
    l.type_index = static_cast<int>(t - state_.types.data());
    l.capacity_type = in.capacity_type;
    l.zone = in.zone;
    for (std::int64_t k = 0; k < in.count; ++k) launch(l, 0, true);
  }
  for (std::int32_t r = 0; r < initial_replicas; ++r) new_pod(0, r, 0);
  for (std::size_t w = 1; w < state_.templates.size(); ++w) {
    for (std::int64_t k = 0; k < scenario_.cluster.workloads[w - 1].replicas; ++k) new_pod(static_cast<int>(w), -1, 0);
  }
  schedule_pending(0, out);
}

std::uint32_t ClusterModel::add_replica_pod(std::int32_t replica, Micros now, std::vector<ClusterNotice>& out) {
  account(now);
  const std::uint32_t id = new_pod(0, replica, now);
  schedule_pending(now, out);
  return id;
}

void ClusterModel::unbind(Pod& pod, Micros now) {
  Node& node = state_.nodes[static_cast<std::size_t>(pod.node)];
  const PodTemplate& t = state_.templates[static_cast<std::size_t>(pod.template_index)];
  node.pods.erase(std::find(node.pods.begin(), node.pods.end(), pod.id));
  node.gpus_requested -= t.gpus;
  node.cpu_requested_milli -= t.cpu_milli;
  node.memory_requested_mib -= t.memory_mib;
  node.last_pod_event_at = now;
  pod.node = -1;
}

void ClusterModel::remove_pod(std::uint32_t id, Micros now, std::vector<ClusterNotice>& out) {
  account(now);
  Pod& pod = state_.pods.at(id);
  if (pod.phase == PodPhase::Gone) return;
  if (pod.phase == PodPhase::Pending) {
    pending_.erase(std::find(pending_.begin(), pending_.end(), id));
  } else if (pod.node >= 0) {
    unbind(pod, now);
  }
  pod.phase = PodPhase::Gone;
  schedule_pending(now, out);  // its room may let a pending pod in
}

void ClusterModel::bind(Pod& pod, Node& node, Micros now, const std::string& why, std::vector<ClusterNotice>& out) {
  const PodTemplate& t = state_.templates[static_cast<std::size_t>(pod.template_index)];
  node.pods.push_back(pod.id);
  node.gpus_requested += t.gpus;
  node.cpu_requested_milli += t.cpu_milli;
  node.memory_requested_mib += t.memory_mib;
  node.last_pod_event_at = now;
  pod.node = static_cast<std::int32_t>(node.id);
  pod.phase = PodPhase::Bound;
  pod.unschedulable_since = -1;
  const InstanceType& type = state_.types[static_cast<std::size_t>(node.type_index)];
  if (t.gpus == 0 && type.gpus > 0) ++totals_.non_gpu_pods_on_gpu_nodes;
  log(now, "kube-scheduler", "bind", t.gpus == 0 && type.gpus > 0 ? "NonGpuPodOnGpuNode" : "Scheduled",
      "pod " + std::to_string(pod.id) + " (" + t.name + ") " + why + ", a " + type.name + " (" + node.owner + ")");
  if (pod.owner >= 0) out.push_back(ClusterNotice{ClusterNotice::ReplicaPodBound, pod.owner, pod.id, node.id, now, ""});
}

void ClusterModel::schedule_pending(Micros now, std::vector<ClusterNotice>& out) {
  std::vector<std::uint32_t> still;
  bool retry_needed = false;
  // Pods in creation order, as kube-scheduler's queue pops equal-priority pods.
  for (std::uint32_t id : pending_) {
    Pod& pod = state_.pods[id];
    const PodTemplate& t = state_.templates[static_cast<std::size_t>(pod.template_index)];
    SchedulingResult r = schedule_pod(state_, t);
    if (r.node) {
      bind(pod, state_.nodes[*r.node], now, r.explanation, out);
      continue;
    }
    still.push_back(id);
    retry_needed = true;
    if (pod.unschedulable_since < 0) {
      pod.unschedulable_since = now;
      log(now, "kube-scheduler", "unschedulable", "FailedScheduling", "pod " + std::to_string(id) + " (" + t.name + "): " + r.explanation);
    }
    provisioner_->on_unschedulable(state_, id, now);
  }
  pending_.swap(still);
  // One retry timer at a time, whatever triggered this pass.
  if (retry_needed && retry_at_ < 0) {
    retry_at_ = now + kSchedulerRetry;
    queue_.push(retry_at_, EventClass::kControl, Event{Kind::Wake, 0, ~0u});
  }
  rearm_provisioner();
}

void ClusterModel::rearm_provisioner() {
  const Micros t = provisioner_->next_wakeup();
  if (t < 0 || t == provisioner_wake_) return;
  provisioner_wake_ = t;
  queue_.push(t, EventClass::kControl, Event{Kind::Wake, 0, ++wake_gen_});
}

void ClusterModel::set_pod_ready(std::uint32_t pod, bool ready) {
  if (pod < state_.pods.size()) state_.pods[pod].ready = ready;
}

std::size_t ClusterModel::evict_pods(Node& node, const std::string& reason, bool respect_pdb, Micros now,
                                     std::vector<ClusterNotice>& out, std::string* blocked_why) {
  std::size_t stay = 0;
  const std::vector<std::uint32_t> pods = node.pods;
  for (std::uint32_t id : pods) {
    Pod& pod = state_.pods[id];
    // The Eviction API refuses (429) what the PodDisruptionBudget does not allow; the drain retries.
    if (respect_pdb && !pdb_allows_eviction(state_, pod, stay == 0 ? blocked_why : nullptr)) {
      ++stay;
      continue;
    }
    unbind(pod, now);
    pod.phase = PodPhase::Gone;
    pod.ready = false;
    ++totals_.evictions;
    if (pod.owner >= 0) {
      ++totals_.replica_evictions;
      out.push_back(ClusterNotice{ClusterNotice::ReplicaPodEvicted, pod.owner, id, node.id, now, reason});
    } else {
      new_pod(pod.template_index, -1, now);  // its ReplicaSet makes a new one
    }
  }
  return stay;
}

void ClusterModel::remove_node(Node& node, const std::string& reason, bool drain, Micros now, std::vector<ClusterNotice>& out,
                               Micros give_up_after) {
  if (node.phase == NodePhase::Terminating || node.phase == NodePhase::Terminated) return;
  const bool had_pods = !node.pods.empty();
  const std::size_t before = node.pods.size();
  node.phase = NodePhase::Terminating;
  node.disrupted = true;
  // A drain evicts through the Eviction API, which honours the PodDisruptionBudget; a node that never
  // registered has nothing to drain, and a spot instance goes at the end of its notice whatever is left.
  std::string blocked;
  const std::size_t stay = evict_pods(node, reason, drain, now, out, &blocked);
  const std::string type = state_.types[static_cast<std::size_t>(node.type_index)].name;
  std::string what = "node " + std::to_string(node.id) + " (" + type + ", " + node.capacity_type + ", " + node.owner +
                     ") removed: " + reason + "; " + std::to_string(before - stay) + " pods evicted";
  if (stay > 0 && reason != "Interrupted") {
    queue_.push(now + kEvictionRetry, EventClass::kCompletion, Event{Kind::EvictRetry, node.id, 0});
    what += "; " + std::to_string(stay) + " wait (" + blocked + "), the drain retries every " + fmt_s(kEvictionRetry);
    if (give_up_after >= 0) {
      drain_give_up_at_[node.id] = now + give_up_after;
      what += " for at most " + fmt_s(give_up_after);
    }
  } else {
    const Micros end = reason == "Interrupted" ? now + kSpotNotice : (drain && had_pods ? now + kPodGrace : now);
    queue_.push(end, EventClass::kCompletion, Event{Kind::Terminate, node.id, 0});
    what += "; the instance goes at t = " + fmt_s(end);
  }
  log(now, reason == "Interrupted" ? "cloud" : provisioner_->name(), "delete", reason, what);
  if (before > stay) schedule_pending(now, out);
}

void ClusterModel::apply(ProvisionerActions& actions, Micros now, std::vector<ClusterNotice>& out) {
  for (const auto& l : actions.log) log(now, l.controller.c_str(), l.action, l.reason, l.explanation);
  // Uncordons first: a pass may abandon a command and start a new one on the same node.
  for (std::uint32_t id : actions.uncordons) {
    Node& n = state_.nodes.at(id);
    if (n.phase != NodePhase::Terminating && n.phase != NodePhase::Terminated) n.disrupted = false;
  }
  for (std::uint32_t id : actions.cordons) state_.nodes.at(id).disrupted = true;
  for (const auto& l : actions.launches) launch(l, now, false);
  for (const auto& r : actions.removals) {
    if (r.node < state_.nodes.size()) remove_node(state_.nodes[r.node], r.reason, r.drain, now, out, r.give_up_after);
  }
}

Micros ClusterModel::next_event_time() const { return queue_.empty() ? -1 : queue_.top().time; }

void ClusterModel::advance(Micros now, std::vector<ClusterNotice>& out) {
  account(now);
  bool reschedule = false;
  while (!queue_.empty() && queue_.top().time <= now) {
    const Event e = queue_.pop().payload;
    if (e.kind == Kind::Wake) {
      if (e.gen == ~0u) {  // kube-scheduler's periodic retry
        retry_at_ = -1;
        reschedule = true;
        continue;
      }
      if (e.gen != wake_gen_) continue;  // superseded
      provisioner_wake_ = -1;
      ProvisionerActions actions;
      provisioner_->wake(state_, now, actions);
      apply(actions, now, out);
      continue;
    }
    Node& node = state_.nodes[e.node];
    const InstanceType& type = state_.types[static_cast<std::size_t>(node.type_index)];
    if (e.kind == Kind::Registered && node.phase == NodePhase::Launched) {
      node.phase = NodePhase::Registered;
      node.registered_at = now;
      const NodeStartup& st = scenario_.cluster.startup;
      const Micros init = seconds_to_micros(rng_.uniform(st.registered_to_initialized.min_s, st.registered_to_initialized.max_s));
      queue_.push(now + init, EventClass::kCompletion, Event{Kind::Initialized, node.id, 0});
      reschedule = true;
    } else if (e.kind == Kind::Initialized && node.phase == NodePhase::Registered) {
      node.phase = NodePhase::Initialized;
      node.initialized_at = now;
      node.gpus_allocatable = type.gpus;  // the device plugin has advertised nvidia.com/gpu
      // Startup taints are gone once the node is initialized (some agent removed them).
      node.taints.resize(node.taints.size() - static_cast<std::size_t>(node.startup_taints));
      node.startup_taints = 0;
      log(now, "cloud", "initialized", "NodeInitialized",
          "node " + std::to_string(node.id) + " (" + type.name + ") initialized " + fmt_s(now - node.launched_at) +
              " after launch (registered after " + fmt_s(node.registered_at - node.launched_at) + ")");
      if (node.capacity_type == "spot" && scenario_.cluster.spot_interruptions_per_node_hour > 0) {
        const double after_s = rng_.exponential(scenario_.cluster.spot_interruptions_per_node_hour / 3600.0);
        queue_.push(now + seconds_to_micros(after_s), EventClass::kCompletion, Event{Kind::SpotNotice, node.id, 0});
      }
      reschedule = true;
    } else if (e.kind == Kind::EvictRetry && node.phase == NodePhase::Terminating) {
      std::string blocked;
      const std::size_t before = node.pods.size();
      const std::size_t stay = evict_pods(node, "Drain", true, now, out, &blocked);
      if (stay < before) {
        log(now, provisioner_->name(), "evict", "Drain",
            "node " + std::to_string(node.id) + ": the drain evicted " + std::to_string(before - stay) + " more pods" +
                (stay ? "; " + std::to_string(stay) + " still wait (" + blocked + ")" : "; the node is empty"));
        reschedule = true;
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
        reschedule = true;
      } else if (stay > 0) {
        queue_.push(now + kEvictionRetry, EventClass::kCompletion, Event{Kind::EvictRetry, node.id, 0});
      } else {
        drain_give_up_at_.erase(node.id);
        queue_.push(now + kPodGrace, EventClass::kCompletion, Event{Kind::Terminate, node.id, 0});
      }
    } else if (e.kind == Kind::Terminate && node.phase != NodePhase::Terminated) {
      // A spot instance reclaimed at the end of its notice takes whatever pods are still on it.
      if (!node.pods.empty()) {
        evict_pods(node, "Interrupted", false, now, out);
        reschedule = true;
      }
      node.phase = NodePhase::Terminated;
      node.terminated_at = now;
      ++totals_.nodes_removed;
    } else if (e.kind == Kind::SpotNotice && node.phase != NodePhase::Terminating && node.phase != NodePhase::Terminated) {
      ++totals_.spot_interruptions;
      remove_node(node, "Interrupted", true, now, out);
    }
  }
  if (reschedule) schedule_pending(now, out);
  rearm_provisioner();
}

}  // namespace gpuscale
