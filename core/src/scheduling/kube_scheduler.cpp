// kube-scheduler's filter and score (see kube_scheduler.hpp).
#include "scheduling/kube_scheduler.hpp"

#include <map>

#include "scheduling/fit.hpp"

namespace gpuscale {

namespace {

constexpr Micros kUnschedulableFlush = 30 * kMicrosPerSecond;

// NodeResourcesFit LeastAllocated: mean over cpu and memory of free-after-binding / allocatable, 0–100.
std::int64_t least_allocated_score(const PodTemplate& pod, const Node& node, const AssumedRoom& taken) {
  const auto part = [](std::int64_t alloc, std::int64_t requested) -> std::int64_t {
    if (alloc <= 0 || requested > alloc) return 0;
    return (alloc - requested) * 100 / alloc;  // integer arithmetic, as the plugin's int64 scores
  };
  return (part(node.cpu_allocatable_milli, node.cpu_requested_milli + taken.cpu_milli + pod.cpu_milli) +
          part(node.memory_allocatable_mib, node.memory_requested_mib + taken.memory_mib + pod.memory_mib)) / 2;
}

}  // namespace

SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod, const std::vector<AssumedRoom>& assumed, Rng* ties) {
  SchedulingResult result;
  std::map<std::string, int> reasons;  // reason → nodes (std::map: the message lists them sorted, like the scheduler)
  int considered = 0, infeasible = 0;
  std::int64_t best_score = -1;
  std::uint64_t num_best = 0;  // feasible nodes with best_score so far
  const AssumedRoom none;
  for (const Node& node : cluster.nodes) {
    if (node.phase == NodePhase::Terminated) continue;
    ++considered;
    const AssumedRoom& taken = node.id < assumed.size() ? assumed[node.id] : none;
    NodeFit f = node_fit(node);
    f.gpus_free -= taken.gpus;
    f.cpu_free_milli -= taken.cpu_milli;
    f.memory_free_mib -= taken.memory_mib;
    const Fit fit = check_fit(pod, f);
    if (!fit.ok()) {
      ++reasons[fit_message(fit)];
      ++infeasible;
      continue;
    }
    const std::int64_t score = least_allocated_score(pod, node, taken);
    // selectHost (kubernetes/kubernetes pkg/scheduler/schedule_one.go): reservoir sampling over the
    // nodes with the highest score, in the order they were scored: the k-th node found with the top
    // score replaces the candidate with probability 1/k (rand.Intn(cntOfMaxScore) == 0), so each of
    // them is chosen with equal probability. The draw here comes from the seeded stream.
    if (score > best_score) {
      best_score = score;
      result.node = node.id;
      num_best = 1;
    } else if (score == best_score) {
      ++num_best;
      if (ties && ties->uniform_int(num_best) == 0) result.node = node.id;
    }
  }
  if (result.node) {
    result.explanation = "bound to node " + std::to_string(*result.node) + " (LeastAllocated score " + std::to_string(best_score) +
                         " of 100; " + std::to_string(considered - infeasible) + "/" + std::to_string(considered) + " nodes feasible" +
                         (num_best > 1 ? ", picked at random among " + std::to_string(num_best) + " with that score" : "") + ")";
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

SchedulingCycle KubeScheduler::schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) {
  SchedulingCycle cycle;
  std::vector<AssumedRoom> assumed;
  bool unschedulable = false;
  // Pods in creation order, as kube-scheduler's queue pops equal-priority pods.
  for (std::uint32_t id : pending) {
    const PodTemplate& t = cluster.template_of(cluster.pods[id]);
    SchedulingResult r = schedule_pod(cluster, t, assumed, &ties_);
    PodOutcome o;
    o.pod = id;
    o.node = r.node;
    o.reason = r.node ? "Scheduled" : "Unschedulable";
    o.message = std::move(r.explanation);
    if (r.node) {
      if (assumed.size() < cluster.nodes.size()) assumed.resize(cluster.nodes.size());
      AssumedRoom& a = assumed[*r.node];
      a.gpus += t.gpus;
      a.cpu_milli += t.cpu_milli;
      a.memory_mib += t.memory_mib;
    } else {
      unschedulable = true;
    }
    cycle.outcomes.push_back(std::move(o));
  }
  if (unschedulable && retry_at_ < 0) {
    retry_at_ = now + kUnschedulableFlush;
    cycle.next_wakeup = retry_at_;
  }
  return cycle;
}

void KubeScheduler::on_wakeup(Micros now) {
  (void)now;
  retry_at_ = -1;
}

}  // namespace gpuscale
