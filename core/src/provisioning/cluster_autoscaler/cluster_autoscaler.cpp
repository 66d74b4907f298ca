// Cluster Autoscaler: flag parsing, scale-up through an expander, scale-down of unneeded nodes, and
// the loop that keeps their timers (see cluster_autoscaler.hpp, docs/cluster-autoscaler.md).
//
// The loop follows static_autoscaler.go RunOnce: remove long-unregistered nodes, stop if the cluster
// is unhealthy, scale up, and only if nothing scaled up, update the unneeded nodes and delete those
// unneeded long enough. Time comparisons keep Go's strictness: `since.Add(d).Before(now)` is
// since + d < now, `last.Add(d).After(now)` is last + d > now. All containers are vectors or ordered
// maps walked in index / key order; scores are + − × ÷ only (no libm), so runs are bit-identical.
#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "k8s/duration.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

namespace {

constexpr const char* kController = "cluster-autoscaler";
constexpr const char* kGpuLabel = "k8s.amazonaws.com/accelerator";
constexpr const char* kNodeGroupLabel = "eks.amazonaws.com/nodegroup";

std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string at(Micros t) { return fmt("t=%.1f s", micros_to_seconds(t)); }
std::string num(double x) { return fmt("%.4g", x); }

ProvisionerLog make_log(const char* action, const char* reason, std::string explanation) {
  return ProvisionerLog{kController, action, reason, std::move(explanation)};
}

std::string pod_text(const ClusterState& cluster, std::uint32_t id) {
  const PodTemplate& t = cluster.template_of(cluster.pods[id]);
  return fmt("pod %u (%s: %d GPU, %lldm CPU, %lld MiB)", id, t.name.c_str(), t.gpus,
             static_cast<long long>(t.cpu_milli), static_cast<long long>(t.memory_mib));
}

std::string node_text(const ClusterState& cluster, const Node& n) {
  const std::string type = n.type_index >= 0 && static_cast<std::size_t>(n.type_index) < cluster.types.size()
                               ? cluster.types[static_cast<std::size_t>(n.type_index)].name
                               : "?";
  return fmt("node %u (%s, %s)", n.id, type.c_str(), n.owner.c_str());
}

void add_requests(Node& n, const PodTemplate& t) {
  n.gpus_requested += t.gpus;
  n.cpu_requested_milli += t.cpu_milli;
  n.memory_requested_mib += t.memory_mib;
}

void remove_requests(Node& n, const PodTemplate& t) {
  n.gpus_requested -= t.gpus;
  n.cpu_requested_milli -= t.cpu_milli;
  n.memory_requested_mib -= t.memory_mib;
}

// First fit over simulated nodes (room accounted in their requested fields); the index used, or -1.
int place_first_fit(const PodTemplate& pod, std::vector<Node>& nodes) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (check_fit(pod, nodes[i]).ok()) {
      add_requests(nodes[i], pod);
      return static_cast<int>(i);
    }
  }
  return -1;
}

int group_of(const ClusterAutoscalerConfig& config, const std::string& owner) {
  for (std::size_t g = 0; g < config.node_groups.size(); ++g) {
    if (config.node_groups[g].name == owner) return static_cast<int>(g);
  }
  return -1;
}

// A node group resolved against the catalogue, with its current size.
struct GroupView {
  const InstanceType* type = nullptr;
  int type_index = -1;
  std::string zone;
  int size = 0;      // Ready + Upcoming + Unready nodes (the ASG's target size)
  int upcoming = 0;
};

std::vector<GroupView> view_groups(const ClusterState& cluster, const ClusterAutoscalerConfig& config, Micros now) {
  std::vector<GroupView> out(config.node_groups.size());
  for (std::size_t g = 0; g < out.size(); ++g) {
    const NodeGroup& group = config.node_groups[g];
    GroupView& v = out[g];
    v.type = find_instance_type(cluster.types, group.instance_type);
    if (v.type) {
      v.type_index = static_cast<int>(v.type - cluster.types.data());
      v.zone = group.zone.empty() && !v.type->zones.empty() ? v.type->zones.front() : group.zone;
    }
  }
  for (const Node& n : cluster.nodes) {
    const int g = group_of(config, n.owner);
    if (g < 0) continue;
    const CaNodeState st = ca_node_state(n, config.flags, now);
    if (st == CaNodeState::Ready || st == CaNodeState::Upcoming || st == CaNodeState::Unready) ++out[g].size;
    if (st == CaNodeState::Upcoming) ++out[g].upcoming;
  }
  return out;
}

// The node CA imagines for a group (its TemplateNodeInfo): the type's allocatable, the well-known
// labels plus the group's, the group's taints; Initialized so GPU pods may land on it.
Node template_node(const NodeGroup& group, const GroupView& v) {
  Node n;
  n.type_index = v.type_index;
  n.capacity_type = group.capacity_type;
  n.zone = v.zone;
  n.owner = group.name;
  n.labels = instance_labels(*v.type, group.capacity_type, v.zone);
  for (const auto& [k, val] : group.labels) n.labels[k] = val;
  n.labels[kNodeGroupLabel] = group.name;
  n.taints = group.taints;
  n.phase = NodePhase::Initialized;
  n.gpus_allocatable = v.type->gpus;
  n.cpu_allocatable_milli = allocatable_cpu_milli(*v.type);
  n.memory_allocatable_mib = allocatable_memory_mib(*v.type);
  return n;
}

double group_price(const NodeGroup& group, const InstanceType& type) {
  return hourly_price(type, group.capacity_type);
}

}  // namespace

// ---- pure decisions -------------------------------------------------------------------------------

bool has_gpu_label(const Node& node) { return node.labels.count(kGpuLabel) > 0; }

CaNodeState ca_node_state(const Node& node, const ClusterAutoscalerFlags& flags, Micros now) {
  // clusterstate: a node not registered within --max-node-provision-time is LongUnregistered; a
  // registered GPU node without allocatable GPUs is ResourceUnready (gpu_processor.go) and, while its
  // scale-up is still within the provision time, an upcoming node.
  const bool provision_time_over = node.launched_at + flags.max_node_provision_time < now;
  switch (node.phase) {
    case NodePhase::Terminated: return CaNodeState::Gone;
    case NodePhase::Terminating: return CaNodeState::Deleting;
    case NodePhase::Launched: return provision_time_over ? CaNodeState::LongUnregistered : CaNodeState::Upcoming;
    case NodePhase::Registered:
      // Not Ready yet (the not-ready taint): clusterstate counts it NotStarted, i.e. still upcoming.
      if (node.ready_at < 0) return provision_time_over ? CaNodeState::Unready : CaNodeState::Upcoming;
      if (has_gpu_label(node) && node.gpus_allocatable == 0) {
        return provision_time_over ? CaNodeState::Unready : CaNodeState::Upcoming;
      }
      return CaNodeState::Ready;
    case NodePhase::Initialized: return CaNodeState::Ready;
  }
  return CaNodeState::Gone;
}

NodeUtilization node_utilization(const Node& node, const ClusterAutoscalerFlags& flags) {
  NodeUtilization u;
  if (has_gpu_label(node)) {
    // utilization.Calculate with a GPU config: only the GPU resource counts.
    u.gpu = true;
    u.resource = "nvidia.com/gpu";
    u.threshold = flags.scale_down_gpu_utilization_threshold;
    u.utilization = node.gpus_allocatable > 0 ? double(node.gpus_requested) / double(node.gpus_allocatable) : 0;
    u.underutilized = u.utilization < u.threshold;
    u.explanation = fmt("GPU %d/%d requested = %s %s --scale-down-gpu-utilization-threshold %s (GPU node: CPU and memory ignored)",
                        node.gpus_requested, node.gpus_allocatable, num(u.utilization).c_str(),
                        u.underutilized ? "<" : ">=", num(u.threshold).c_str());
    return u;
  }
  const double cpu = node.cpu_allocatable_milli > 0 ? double(node.cpu_requested_milli) / double(node.cpu_allocatable_milli) : 0;
  const double mem = node.memory_allocatable_mib > 0 ? double(node.memory_requested_mib) / double(node.memory_allocatable_mib) : 0;
  u.resource = cpu >= mem ? "cpu" : "memory";
  u.utilization = cpu >= mem ? cpu : mem;
  u.threshold = flags.scale_down_utilization_threshold;
  u.underutilized = u.utilization < u.threshold;
  u.explanation = fmt("max(CPU %lld/%lldm = %s, memory %lld/%lld MiB = %s) = %s %s --scale-down-utilization-threshold %s",
                      static_cast<long long>(node.cpu_requested_milli), static_cast<long long>(node.cpu_allocatable_milli),
                      num(cpu).c_str(), static_cast<long long>(node.memory_requested_mib),
                      static_cast<long long>(node.memory_allocatable_mib), num(mem).c_str(), num(u.utilization).c_str(),
                      u.underutilized ? "<" : ">=", num(u.threshold).c_str());
  return u;
}

ScaleUpPlan plan_scale_up(const ClusterState& cluster, const ClusterAutoscalerConfig& config,
                          const std::vector<std::uint32_t>& pending, Micros now,
                          const std::vector<Micros>& backoff_until, std::uint64_t tie) {
  ScaleUpPlan plan;
  const std::vector<GroupView> views = view_groups(cluster, config, now);

  // The pods still pending, highest priority first (filter_out_schedulable sorts by priority).
  std::vector<std::uint32_t> pods;
  for (std::uint32_t id : pending) {
    if (id < cluster.pods.size() && cluster.pods[id].phase == PodPhase::Pending && !cluster.pods[id].deleted) pods.push_back(id);
  }
  std::stable_sort(pods.begin(), pods.end(), [&](std::uint32_t a, std::uint32_t b) {
    return cluster.template_of(cluster.pods[a]).priority > cluster.template_of(cluster.pods[b]).priority;
  });

  // The snapshot: registered nodes as they are, and each upcoming node of a group replaced by its
  // group's template node (RunOnce's addUpcomingNodesToClusterSnapshot), so pods that will land on
  // nodes already on their way do not trigger another scale-up.
  std::vector<Node> existing, upcoming;
  for (const Node& n : cluster.nodes) {
    const int g = group_of(config, n.owner);
    const CaNodeState st = ca_node_state(n, config.flags, now);
    if (st == CaNodeState::Upcoming && g >= 0) {
      if (!views[g].type) continue;
      Node t = template_node(config.node_groups[g], views[g]);
      t.id = n.id;
      t.gpus_requested = n.gpus_requested;
      t.cpu_requested_milli = n.cpu_requested_milli;
      t.memory_requested_mib = n.memory_requested_mib;
      upcoming.push_back(std::move(t));
    } else if (n.phase == NodePhase::Registered || n.phase == NodePhase::Initialized) {
      existing.push_back(n);
    }
  }
  std::vector<std::uint32_t> upcoming_used;
  for (std::uint32_t id : pods) {
    const PodTemplate& t = cluster.template_of(cluster.pods[id]);
    if (place_first_fit(t, existing) >= 0) {
      ++plan.fit_existing;
      continue;
    }
    const int u = place_first_fit(t, upcoming);
    if (u >= 0) {
      ++plan.fit_upcoming;
      const std::uint32_t nid = upcoming[static_cast<std::size_t>(u)].id;
      if (std::find(upcoming_used.begin(), upcoming_used.end(), nid) == upcoming_used.end()) upcoming_used.push_back(nid);
      continue;
    }
    plan.pods_to_help.push_back(id);
  }
  std::string text = fmt("%zu unschedulable pods: %d fit existing nodes, %d fit upcoming nodes", pods.size(),
                         plan.fit_existing, plan.fit_upcoming);
  if (!upcoming_used.empty()) {
    text += " (";
    for (std::size_t i = 0; i < upcoming_used.size(); ++i) {
      const Node& n = cluster.nodes[upcoming_used[i]];
      text += (i ? ", " : "") + node_text(cluster, n) + (n.phase == NodePhase::Launched ? " launched" : " registered, 0 GPUs yet");
    }
    text += ")";
  }
  text += fmt(", %zu to help", plan.pods_to_help.size());
  if (plan.pods_to_help.empty()) {
    plan.explanation = text;
    return plan;
  }

  // One expansion option per group: first fit of the pods to help onto new template nodes, bounded
  // by max_size (the binpacking estimator). Upstream estimates the whole count and caps it when it
  // balances the scale-up (kubernetes/autoscaler cluster-autoscaler/core/scaleup/orchestrator/
  // orchestrator.go ScaleUp: "Can only add %d nodes due to node group limits"); it gives up only with
  // allOrNothing (a ProvisioningRequest's atomic scale-up), which the lab does not model. For one group
  // the nodes added are the same: CA scales up for the pods the cap leaves room for, whether or not they
  // belong to a group that can only serve whole (kubernetes/autoscaler#5170).
  for (std::size_t g = 0; g < config.node_groups.size(); ++g) {
    const NodeGroup& group = config.node_groups[g];
    const GroupView& v = views[g];
    if (!v.type) {
      text += "\n" + group.name + ": instance type \"" + group.instance_type + "\" is not in the catalogue";
      continue;
    }
    std::string head = fmt("%s (%s %s %s; size %d of max %d, %d upcoming)", group.name.c_str(), v.type->name.c_str(),
                           to_string(group.capacity_type), v.zone.c_str(), v.size, group.max_size, v.upcoming);
    if (g < backoff_until.size() && backoff_until[g] > now) {
      text += "\n" + head + ": backed off until " + at(backoff_until[g]);
      continue;
    }
    const int headroom = group.max_size - v.size;
    const Node tmpl = template_node(group, v);
    std::vector<Node> fresh;
    ScaleUpOption o;
    o.group = static_cast<int>(g);
    o.type_index = v.type_index;
    int fits_template = 0, left_at_max = 0;
    for (std::uint32_t id : plan.pods_to_help) {
      const PodTemplate& t = cluster.template_of(cluster.pods[id]);
      if (!check_fit(t, tmpl).ok()) continue;
      ++fits_template;
      bool placed = place_first_fit(t, fresh) >= 0;
      if (!placed && static_cast<int>(fresh.size()) < headroom) {
        fresh.push_back(tmpl);
        add_requests(fresh.back(), t);
        placed = true;
      }
      if (!placed) {
        ++left_at_max;
        continue;
      }
      o.pods.push_back(id);
      o.gpus_requested += t.gpus;
      o.cpu_requested_milli += t.cpu_milli;
      o.memory_requested_mib += t.memory_mib;
    }
    o.node_count = static_cast<int>(fresh.size());
    if (fits_template == 0) {
      text += "\n" + head + ": no pod fits its template node (resources, taints or selectors)";
      continue;
    }
    if (o.node_count == 0) {
      text += "\n" + head + fmt(": %d pods fit the template but the group is at max size", fits_template);
      continue;
    }
    // least-waste (cluster-autoscaler/expander/waste/waste.go): the idle fraction of the new nodes' CPU
    // plus that of their memory after the pods are placed, against the template node's capacity
    // (Status.Capacity, not allocatable). GPUs do not count, so a 1-GPU pod on an 8-GPU node can win.
    const std::int64_t avail_cpu = std::int64_t(o.node_count) * v.type->vcpu * 1000;
    const std::int64_t avail_mem = std::int64_t(o.node_count) * static_cast<std::int64_t>(v.type->memory_gib * 1024);
    const double waste_cpu = avail_cpu > 0 ? double(avail_cpu - o.cpu_requested_milli) / double(avail_cpu) : 0;
    const double waste_mem = avail_mem > 0 ? double(avail_mem - o.memory_requested_mib) / double(avail_mem) : 0;
    o.waste = waste_cpu + waste_mem;
    std::string waste_text;
    waste_text += fmt("CPU (%lld-%lld)/%lld = %s + memory (%lld-%lld)/%lld = %s", static_cast<long long>(avail_cpu),
                      static_cast<long long>(o.cpu_requested_milli), static_cast<long long>(avail_cpu), num(waste_cpu).c_str(),
                      static_cast<long long>(avail_mem), static_cast<long long>(o.memory_requested_mib),
                      static_cast<long long>(avail_mem), num(waste_mem).c_str());
    o.price_usd_per_hour = o.node_count * group_price(group, *v.type);
    text += "\n" + head +
            fmt(": %d of %zu pods fit the template; first fit: %d new node(s) for %zu pods", fits_template,
                plan.pods_to_help.size(), o.node_count, o.pods.size());
    if (left_at_max > 0) text += fmt(" (%d left: max size %d)", left_at_max, group.max_size);
    text += "; waste = " + waste_text + " = " + num(o.waste) +
            fmt("; price %d × %s = %s USD/h (%s per pod)", o.node_count, num(group_price(group, *v.type)).c_str(),
                num(o.price_usd_per_hour).c_str(), num(o.price_usd_per_hour / double(o.pods.size())).c_str());
    plan.options.push_back(std::move(o));
  }
  if (plan.options.empty()) {
    text += "\nno node group can help: no scale-up (NotTriggerScaleUp)";
    plan.explanation = text;
    return plan;
  }
  std::string why;
  plan.chosen = choose_option(plan.options, config, tie, why);
  const ScaleUpOption& c = plan.options[static_cast<std::size_t>(plan.chosen)];
  text += "\n" + why + fmt("\nscale-up: %s +%d node(s) for %zu pods", config.node_groups[c.group].name.c_str(),
                             c.node_count, c.pods.size());
  plan.explanation = text;
  return plan;
}

int choose_option(const std::vector<ScaleUpOption>& options, const ClusterAutoscalerConfig& config, std::uint64_t tie,
                  std::string& explanation) {
  std::vector<int> keep;
  for (std::size_t i = 0; i < options.size(); ++i) keep.push_back(static_cast<int>(i));
  const auto names = [&](const std::vector<int>& idx) {
    std::string s;
    for (int i : idx) s += (s.empty() ? "" : ", ") + config.node_groups[options[i].group].name;
    return s;
  };
  explanation.clear();
  for (const Expander e : config.flags.expanders) {
    if (keep.size() <= 1) break;
    if (e == Expander::Random) {
      // Deterministic stand-in for the random pick: round-robin by the number of scale-ups so far.
      const int pick = keep[tie % keep.size()];
      explanation += fmt("expander random (deterministic: option %llu mod %zu of [%s]) → %s; ",
                         static_cast<unsigned long long>(tie), keep.size(), names(keep).c_str(),
                         config.node_groups[options[pick].group].name.c_str());
      keep = {pick};
      break;
    }
    // Each expander keeps its best options (ties kept for the next one), as CA's filter chain does.
    const auto score = [&](int i) {
      const ScaleUpOption& o = options[i];
      if (e == Expander::LeastWaste) return -o.waste;
      if (e == Expander::Price) return -(o.price_usd_per_hour / double(o.pods.size()));
      if (e == Expander::MostPods) return double(o.pods.size());
      return double(config.node_groups[o.group].priority);  // priority
    };
    double best = score(keep[0]);
    for (int i : keep) best = std::max(best, score(i));
    std::vector<int> next;
    for (int i : keep) {
      if (score(i) == best) next.push_back(i);
    }
    const char* what = e == Expander::LeastWaste ? "least waste" : e == Expander::Price ? "lowest USD/h per pod" : e == Expander::MostPods ? "most pods" : "highest priority";
    const bool lower_is_better = e == Expander::LeastWaste || e == Expander::Price;
    explanation += fmt("expander %s (%s %s) keeps [%s]; ", to_string(e), what, num(lower_is_better ? -best : best).c_str(),
                       names(next).c_str());
    keep.swap(next);
  }
  int chosen = keep[0];
  if (keep.size() > 1) {
    chosen = keep[tie % keep.size()];
    explanation += fmt("tie between [%s]: option %llu mod %zu → %s", names(keep).c_str(), static_cast<unsigned long long>(tie),
                       keep.size(), config.node_groups[options[chosen].group].name.c_str());
  } else {
    explanation += "chosen: " + config.node_groups[options[chosen].group].name;
  }
  return chosen;
}

std::vector<ScaleDownCandidate> find_unneeded_nodes(const ClusterState& cluster, const ClusterAutoscalerConfig& config,
                                                    Micros now) {
  std::vector<ScaleDownCandidate> out;
  // Pod destinations: registered nodes that are not upcoming (RunOnce drops registered upcoming nodes
  // from the snapshot). Copies, so moves can be simulated and reverted.
  std::vector<Node> snap = cluster.nodes;
  std::vector<bool> destination(snap.size(), false);
  for (std::size_t i = 0; i < snap.size(); ++i) {
    const CaNodeState st = ca_node_state(snap[i], config.flags, now);
    destination[i] = st == CaNodeState::Ready || st == CaNodeState::Unready;
  }
  for (const Node& n : cluster.nodes) {
    const int g = group_of(config, n.owner);
    if (g < 0 || n.id >= snap.size() || !destination[n.id] || n.disrupted) continue;
    ScaleDownCandidate c;
    c.node = n.id;
    c.group = g;
    c.ready = ca_node_state(n, config.flags, now) == CaNodeState::Ready;
    std::vector<std::uint32_t> to_move;
    for (std::uint32_t id : n.pods) {
      if (id < cluster.pods.size() && cluster.pods[id].phase == PodPhase::Running && !cluster.pods[id].deleted) to_move.push_back(id);
    }
    c.empty = to_move.empty();
    c.utilization = node_utilization(n, config.flags);
    c.explanation = c.utilization.explanation;
    if (!c.utilization.underutilized) {
      c.reason = "NotUnderutilized";
      out.push_back(std::move(c));
      continue;
    }
    for (std::uint32_t id : to_move) {
      if (cluster.template_of(cluster.pods[id]).do_not_disrupt) {
        c.reason = "NotSafeToEvictAnnotation";
        c.explanation += "; " + pod_text(cluster, id) + " is not safe to evict (do-not-disrupt)";
        break;
      }
      // simulator/drain: a pod whose PodDisruptionBudget allows no disruption blocks the node (NotEnoughPdb).
      std::string why;
      if (!eviction_allowed(cluster, cluster.pods[id], &why)) {
        c.reason = "NotEnoughPdb";
        c.explanation += "; " + pod_text(cluster, id) + ": " + why;
        break;
      }
    }
    if (c.reason.empty()) {
      // SimulateNodeRemoval: every pod must fit some other destination, room accounted; reverted after.
      std::vector<std::pair<std::size_t, const PodTemplate*>> moves;
      std::string where;
      for (std::uint32_t id : to_move) {
        const PodTemplate& t = cluster.template_of(cluster.pods[id]);
        std::size_t dest = snap.size();
        for (std::size_t j = 0; j < snap.size(); ++j) {
          if (j == n.id || !destination[j]) continue;
          if (check_fit(t, snap[j]).ok()) {
            dest = j;
            break;
          }
        }
        if (dest == snap.size()) {
          c.reason = "NoPlaceToMovePods";
          c.explanation += "; " + pod_text(cluster, id) + " fits no other node";
          break;
        }
        add_requests(snap[dest], t);
        moves.emplace_back(dest, &t);
        where += fmt("%spod %u → node %zu", where.empty() ? "" : ", ", id, dest);
      }
      for (const auto& [j, t] : moves) remove_requests(snap[j], *t);
      if (c.reason.empty()) {
        c.unneeded = true;
        c.explanation += c.empty ? "; empty" : "; its pods can move: " + where;
        destination[n.id] = false;  // a removable node is no destination for the next ones
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

// ---- the controller -------------------------------------------------------------------------------

ClusterAutoscaler::ClusterAutoscaler(ClusterAutoscalerConfig config)
    : config_(std::move(config)),
      backoff_until_(config_.node_groups.size(), -1),
      backoff_duration_(config_.node_groups.size(), 0),
      last_failure_(config_.node_groups.size(), -1) {
  for (std::size_t g = 0; g < config_.node_groups.size(); ++g) group_index_[config_.node_groups[g].name] = static_cast<int>(g);
}

void ClusterAutoscaler::on_unschedulable(const ClusterState& cluster, std::uint32_t pod, Micros now) {
  (void)cluster;
  (void)now;  // CA does not react at once: the next scan picks the pod up
  auto it = std::lower_bound(pending_.begin(), pending_.end(), pod);
  if (it == pending_.end() || *it != pod) pending_.insert(it, pod);
}

void ClusterAutoscaler::back_off(int group, Micros now, const std::string& reason, const std::string& why,
                                 std::vector<ProvisionerLog>& log) {
  // utils/backoff/exponential_backoff.go Backoff: the initial duration, doubled from the last one (up to
  // the max) only if that backoff is over ("multiple concurrent scale-ups failing shouldn't cause backoff
  // duration to increase"); RemoveStaleBackoffData forgets a group whose last failure is older than the
  // reset timeout, so its next backoff starts at the initial duration again.
  const ClusterAutoscalerFlags& f = config_.flags;
  const std::size_t g = static_cast<std::size_t>(group);
  Micros d = f.initial_node_group_backoff_duration;
  const bool known = last_failure_[g] >= 0 && last_failure_[g] + f.node_group_backoff_reset_timeout >= now;
  if (known) d = backoff_until_[g] < now ? std::min(2 * backoff_duration_[g], f.max_node_group_backoff_duration) : backoff_duration_[g];
  backoff_duration_[g] = d;
  last_failure_[g] = now;
  backoff_until_[g] = now + d;
  log.push_back(make_log("backoff", reason.c_str(),
                         why + "; node group " + config_.node_groups[g].name + " backed off for " + format_duration(d) + ", until " +
                             at(backoff_until_[g]) + " (--initial-node-group-backoff-duration " +
                             format_duration(f.initial_node_group_backoff_duration) + ", doubling up to " +
                             format_duration(f.max_node_group_backoff_duration) + ")"));
}

void ClusterAutoscaler::on_insufficient_capacity(const LaunchOutcome& outcome, Micros now) {
  (void)now;
  if (outcome.node >= 0) return;  // a node group has no fallbacks; kept for symmetry
  auto g = group_index_.find(outcome.launch.owner);
  if (g == group_index_.end()) return;
  // CA learns of the failed instances at its next loop (the AWS provider reports them with their
  // OutOfResources error through Nodes(); clusterstate handleInstanceCreationErrors → RegisterFailedScaleUp).
  if (std::find(failed_groups_.begin(), failed_groups_.end(), g->second) == failed_groups_.end()) failed_groups_.push_back(g->second);
}

void ClusterAutoscaler::note(std::uint32_t node, const std::string& status, ProvisionerLog log, ProvisionerActions& out) {
  auto it = node_status_.find(node);
  // Busy nodes stay quiet until they have been unneeded or blocked once.
  if (it == node_status_.end() && status == "NotUnderutilized") return;
  if (it != node_status_.end() && it->second == status) return;
  node_status_[node] = status;
  out.log.push_back(std::move(log));
}

void ClusterAutoscaler::wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  const ClusterAutoscalerFlags& f = config_.flags;
  next_scan_ = now + f.scan_interval;
  for (int g : failed_groups_) {
    back_off(g, now, "FailedScaleUp",
             "scale-up of " + config_.node_groups[static_cast<std::size_t>(g)].name +
                 " failed: the ASG could not launch an instance (InsufficientInstanceCapacity, an OutOfResources error)",
             out.log);
  }
  failed_groups_.clear();
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](std::uint32_t id) { return id >= cluster.pods.size() || cluster.pods[id].phase != PodPhase::Pending || cluster.pods[id].deleted; }),
                 pending_.end());

  // 1. Nodes that did not come up within --max-node-provision-time: the unregistered ones are
  //    deleted (no drain: nothing runs there); either way the scale-up failed and the group backs off.
  for (const Node& n : cluster.nodes) {
    auto g = group_index_.find(n.owner);
    if (g == group_index_.end()) continue;
    const CaNodeState st = ca_node_state(n, f, now);
    if (st != CaNodeState::LongUnregistered && st != CaNodeState::Unready) continue;
    if (std::find(timed_out_.begin(), timed_out_.end(), n.id) != timed_out_.end()) continue;
    timed_out_.push_back(n.id);
    std::string why;
    if (st == CaNodeState::LongUnregistered) {
      out.removals.push_back(NodeRemoval{n.id, RemovalReason::RegistrationTimeout, false});
      why = node_text(cluster, n) + " launched at " + at(n.launched_at) + " has not registered after --max-node-provision-time " +
            format_duration(f.max_node_provision_time) + ": deleted without drain";
      out.log.push_back(make_log("timeout", "RegistrationTimeout", why));
    } else {
      why = node_text(cluster, n) + " registered but still advertises 0 nvidia.com/gpu " + format_duration(f.max_node_provision_time) +
            " after launch: Unready (removable after --scale-down-unready-time " + format_duration(f.scale_down_unready_time) + ")";
      out.log.push_back(make_log("timeout", "ScaleUpTimedOut", why));
    }
    back_off(g->second, now, "ScaleUpTimedOut", "scale-up of " + n.owner + " timed out", out.log);
  }

  // 2. IsClusterHealthy: stop when unready > --ok-total-unready-count and > --max-total-unready-percentage
  //    of the registered nodes.
  int unready = 0, registered = 0;
  for (const Node& n : cluster.nodes) {
    if (n.phase != NodePhase::Registered && n.phase != NodePhase::Initialized) continue;
    ++registered;
    if (ca_node_state(n, f, now) == CaNodeState::Unready) ++unready;
  }
  if (unready > f.ok_total_unready_count && double(unready) * 100.0 > f.max_total_unready_percentage * double(registered)) {
    if (!halted_) {
      out.log.push_back(make_log(
          "halt", "ClusterUnhealthy",
          fmt("%d of %d registered nodes unready > max(--ok-total-unready-count %d, --max-total-unready-percentage %s%% × %d = %s): "
              "cluster is not ready for autoscaling; no scale-up or scale-down, unneeded timers reset",
              unready, registered, f.ok_total_unready_count, num(f.max_total_unready_percentage).c_str(), registered,
              num(f.max_total_unready_percentage * registered / 100.0).c_str())));
    }
    halted_ = true;
    unneeded_since_.clear();
    node_status_.clear();
    return;
  }
  if (halted_) {
    halted_ = false;
    out.log.push_back(make_log("resume", "ClusterHealthy", fmt("%d of %d registered nodes unready: autoscaling resumes", unready, registered)));
  }

  // 3. Scale-up.
  if (!pending_.empty()) {
    ScaleUpPlan plan = plan_scale_up(cluster, config_, pending_, now, backoff_until_, scale_ups_);
    if (plan.chosen >= 0) {
      const ScaleUpOption& o = plan.options[static_cast<std::size_t>(plan.chosen)];
      const NodeGroup& g = config_.node_groups[static_cast<std::size_t>(o.group)];
      const InstanceType& type = cluster.types[static_cast<std::size_t>(o.type_index)];
      for (int k = 0; k < o.node_count; ++k) {
        NodeLaunch l;
        l.owner = g.name;
        l.type_index = o.type_index;
        l.capacity_type = g.capacity_type;
        l.zone = g.zone.empty() && !type.zones.empty() ? type.zones.front() : g.zone;
        l.labels = g.labels;
        l.labels[kNodeGroupLabel] = g.name;
        l.taints = g.taints;
        out.launches.push_back(std::move(l));
      }
      out.log.push_back(make_log("scale-up", "TriggeredScaleUp", plan.explanation));
      last_scale_up_ = now;
      ++scale_ups_;
      last_scale_up_log_.clear();
      return;  // RunOnce: no scale-down in a loop that scaled up
    }
    if (plan.explanation != last_scale_up_log_) {
      last_scale_up_log_ = plan.explanation;
      const char* reason = !plan.pods_to_help.empty() ? "NotTriggerScaleUp"
                           : plan.fit_upcoming > 0    ? "PodsFitUpcomingNodes"
                                                      : "PodsFitExistingNodes";
      out.log.push_back(make_log("no-scale-up", reason, plan.explanation));
    }
  } else {
    last_scale_up_log_.clear();
  }

  // 4. Scale-down.
  if (f.scale_down_enabled) scale_down(cluster, now, out);
}

void ClusterAutoscaler::scale_down(const ClusterState& cluster, Micros now, ProvisionerActions& out) {
  const ClusterAutoscalerFlags& f = config_.flags;
  const std::vector<ScaleDownCandidate> cands = find_unneeded_nodes(cluster, config_, now);

  // The unneeded set: timestamps kept for nodes still unneeded (unneeded/nodes.go Update).
  std::map<std::uint32_t, Micros> since;
  for (const auto& c : cands) {
    if (!c.unneeded) continue;
    auto it = unneeded_since_.find(c.node);
    since[c.node] = it == unneeded_since_.end() ? now : it->second;
  }
  unneeded_since_.swap(since);
  std::map<std::uint32_t, std::string> still;
  for (const auto& c : cands) {
    auto it = node_status_.find(c.node);
    if (it != node_status_.end()) still.insert(*it);
  }
  node_status_.swap(still);

  // isScaleDownInCooldown.
  std::string cooldown;
  if (last_scale_up_ >= 0 && last_scale_up_ + f.scale_down_delay_after_add > now) {
    cooldown = "last scale-up at " + at(last_scale_up_) + " + --scale-down-delay-after-add " + format_duration(f.scale_down_delay_after_add) +
               " = " + at(last_scale_up_ + f.scale_down_delay_after_add);
  } else if (last_scale_down_delete_ >= 0 && last_scale_down_delete_ + f.scale_down_delay_after_delete > now) {
    cooldown = "last scale-down at " + at(last_scale_down_delete_) + " + --scale-down-delay-after-delete " +
               format_duration(f.scale_down_delay_after_delete) + " = " + at(last_scale_down_delete_ + f.scale_down_delay_after_delete);
  } else if (last_scale_down_failure_ >= 0 && last_scale_down_failure_ + f.scale_down_delay_after_failure > now) {
    cooldown = "failed scale-down at " + at(last_scale_down_failure_) + " + --scale-down-delay-after-failure " +
               format_duration(f.scale_down_delay_after_failure) + " = " + at(last_scale_down_failure_ + f.scale_down_delay_after_failure);
  }

  // Deletions in progress (our Terminating nodes) use up the parallelism budgets.
  int in_progress = 0, draining = 0;
  std::vector<int> size(config_.node_groups.size(), 0);
  for (const Node& n : cluster.nodes) {
    auto g = group_index_.find(n.owner);
    if (g == group_index_.end()) continue;
    const CaNodeState st = ca_node_state(n, f, now);
    if (st == CaNodeState::Deleting) {
      ++in_progress;
      if (!n.pods.empty()) ++draining;
    }
    if (st == CaNodeState::Ready || st == CaNodeState::Upcoming || st == CaNodeState::Unready) ++size[g->second];
  }

  std::vector<const ScaleDownCandidate*> empty, drain;
  for (const auto& c : cands) {
    const Node& n = cluster.nodes[c.node];
    const NodeGroup& g = config_.node_groups[static_cast<std::size_t>(c.group)];
    if (!c.unneeded) {
      note(c.node, c.reason,
           make_log(c.reason == "NotUnderutilized" ? "needed" : "blocked", c.reason.c_str(), node_text(cluster, n) + ": " + c.explanation),
           out);
      continue;
    }
    const Micros s = unneeded_since_[c.node];
    const Micros limit = c.ready ? f.scale_down_unneeded_time : f.scale_down_unready_time;
    const char* limit_flag = c.ready ? "--scale-down-unneeded-time" : "--scale-down-unready-time";
    if (!(s + limit < now)) {
      note(c.node, "unneeded",
           make_log("unneeded", c.ready ? "ScaleDownCandidate" : "ScaleDownCandidateUnready",
                    node_text(cluster, n) + " unneeded since " + at(s) + ": " + c.explanation + "; removable once " +
                        limit_flag + " " + format_duration(limit) + " has passed (after " + at(s + limit) + ")"),
           out);
      continue;
    }
    if (!cooldown.empty()) {
      note(c.node, "cooldown", make_log("blocked", "ScaleDownInCooldown", node_text(cluster, n) + " unneeded for " + format_duration(now - s) +
                                                                             " but scale-down is in cooldown: " + cooldown),
           out);
      continue;
    }
    if (size[c.group] <= g.min_size) {
      note(c.node, "NodeGroupMinSizeReached",
           make_log("blocked", "NodeGroupMinSizeReached",
                    node_text(cluster, n) + fmt(" unneeded for %s but %s has %d nodes, minSize %d", format_duration(now - s).c_str(), g.name.c_str(),
                                                size[c.group], g.min_size)),
           out);
      continue;
    }
    --size[c.group];
    (c.empty ? empty : drain).push_back(&c);
  }

  // Budgets: empty nodes in bulk up to --max-scale-down-parallelism, nodes to drain up to
  // --max-drain-parallelism, both less the deletions already in progress.
  const int budget = std::max(0, f.max_scale_down_parallelism - in_progress);
  const int n_empty = std::min(static_cast<int>(empty.size()), budget);
  const int drain_budget = std::max(0, std::min(budget - n_empty, f.max_drain_parallelism - draining));
  const int n_drain = std::min(static_cast<int>(drain.size()), drain_budget);
  const auto remove = [&](const ScaleDownCandidate& c, bool is_empty) {
    const Node& n = cluster.nodes[c.node];
    // The drain evicts with GracePeriodSeconds = min(the pod's, --max-graceful-termination-sec)
    // (kubernetes/autoscaler cluster-autoscaler/core/scaledown/actuation/drain.go, evictPod).
    out.removals.push_back(NodeRemoval{c.node, RemovalReason::ScaleDown, true, f.max_pod_eviction_time,
                                       static_cast<Micros>(f.max_graceful_termination_sec) * kMicrosPerSecond});
    const Micros s = unneeded_since_[c.node];
    out.log.push_back(make_log(
        "scale-down", is_empty ? "ScaleDownEmpty" : "ScaleDown",
        node_text(cluster, n) + " removed after " + format_duration(now - s) + " unneeded (" +
            (c.ready ? "--scale-down-unneeded-time " + format_duration(f.scale_down_unneeded_time) : "--scale-down-unready-time " + format_duration(f.scale_down_unready_time)) +
            "): " + c.explanation +
            (is_empty ? fmt("; empty nodes deleted in bulk (--max-scale-down-parallelism %d)", f.max_scale_down_parallelism)
                      : fmt("; drained one at a time (--max-drain-parallelism %d), pods get up to --max-graceful-termination-sec %d",
                            f.max_drain_parallelism, f.max_graceful_termination_sec))));
    unneeded_since_.erase(c.node);
    node_status_.erase(c.node);
  };
  for (int i = 0; i < n_empty; ++i) remove(*empty[static_cast<std::size_t>(i)], true);
  for (int i = 0; i < n_drain; ++i) remove(*drain[static_cast<std::size_t>(i)], false);
  if (n_empty + n_drain > 0) last_scale_down_delete_ = now;
}

void ClusterAutoscaler::on_drain_failed(std::uint32_t node, Micros now) {
  (void)node;
  last_scale_down_failure_ = now;
}

}  // namespace gpuscale
