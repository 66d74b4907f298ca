// kube-scheduler's filter and score for one pod (see kube_scheduler.hpp).
#include "scheduling/kube_scheduler.hpp"

#include <map>

namespace gpuscale {

namespace {

// The first filter a node fails, in the default plugin order, as kube-scheduler words it.
std::string first_failure(const PodTemplate& pod, const Node& node) {
  if (node.disrupted || node.phase == NodePhase::Terminating) return "node(s) were unschedulable";
  if (node.phase == NodePhase::Launched) return "node(s) had not joined the cluster yet";
  for (const auto& [k, v] : pod.node_selector) {
    auto it = node.labels.find(k);
    if (it == node.labels.end() || it->second != v) return "node(s) didn't match Pod's node affinity/selector";
  }
  if (!matches_all(pod.required_affinity, node.labels)) return "node(s) didn't match Pod's node affinity/selector";
  for (const Taint& t : node.taints) {
    if (t.effect == "PreferNoSchedule") continue;
    if (!tolerates_all(pod.tolerations, {t})) {
      return "node(s) had untolerated taint {" + t.key + (t.value.empty() ? "" : ": " + t.value) + "}";
    }
  }
  if (pod.gpus > 0 && node.phase != NodePhase::Initialized) return "Insufficient nvidia.com/gpu";
  if (pod.gpus > node.gpus_allocatable - node.gpus_requested) return "Insufficient nvidia.com/gpu";
  if (pod.cpu_milli > node.cpu_allocatable_milli - node.cpu_requested_milli) return "Insufficient cpu";
  if (pod.memory_mib > node.memory_allocatable_mib - node.memory_requested_mib) return "Insufficient memory";
  return "";
}

// NodeResourcesFit LeastAllocated: mean over cpu and memory of free-after-binding / allocatable, 0–100.
std::int64_t least_allocated_score(const PodTemplate& pod, const Node& node) {
  const auto part = [](std::int64_t alloc, std::int64_t requested) -> std::int64_t {
    if (alloc <= 0 || requested > alloc) return 0;
    return (alloc - requested) * 100 / alloc;  // integer arithmetic, as the plugin's int64 scores
  };
  return (part(node.cpu_allocatable_milli, node.cpu_requested_milli + pod.cpu_milli) +
          part(node.memory_allocatable_mib, node.memory_requested_mib + pod.memory_mib)) / 2;
}

}  // namespace

SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod) {
  SchedulingResult result;
  std::map<std::string, int> reasons;  // reason → nodes (std::map: the message lists them sorted, like the scheduler)
  int considered = 0;
  std::int64_t best_score = -1;
  for (const Node& node : cluster.nodes) {
    if (node.phase == NodePhase::Terminated) continue;
    ++considered;
    const std::string why = first_failure(pod, node);
    if (!why.empty()) {
      ++reasons[why];
      continue;
    }
    const std::int64_t score = least_allocated_score(pod, node);
    if (score > best_score) {
      best_score = score;
      result.node = node.id;
    }
  }
  if (result.node) {
    result.explanation = "bound to node " + std::to_string(*result.node) + " (LeastAllocated score " +
                         std::to_string(best_score) + " of 100; " + std::to_string(considered - [&] {
                           int n = 0;
                           for (const auto& [k, v] : reasons) n += v;
                           return n;
                         }()) + "/" + std::to_string(considered) + " nodes feasible)";
    return result;
  }
  std::string msg = "0/" + std::to_string(considered) + " nodes are available";
  bool first = true;
  for (const auto& [why, n] : reasons) {
    msg += (first ? ": " : ", ") + std::to_string(n) + " " + why;
    first = false;
  }
  result.explanation = msg + ".";
  return result;
}

}  // namespace gpuscale
