// kube-scheduler's filter and score (see kube_scheduler.hpp).
#include "scheduling/kube_scheduler.hpp"

#include <algorithm>
#include <map>

#include "gpuscale/errors.hpp"
#include "k8s/names.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

namespace {

constexpr Micros kUnschedulableFlush = 30 * kMicrosPerSecond;

// NodeResourcesFit's score, 0–100: per resource (allocatable, requested with this pod), LeastAllocated
// (allocatable − requested) × 100 / allocatable (0 when over), MostAllocated requested × 100 /
// allocatable (requested capped at allocatable); their weighted mean, in the plugin's int64 arithmetic.
// A resource the node lacks is skipped, and so is nvidia.com/gpu for a pod that requests none
// (pkg/scheduler/framework/plugins/noderesources: resource_allocation.go calculateResourceAllocatableRequest,
// least_allocated.go leastResourceScorer, most_allocated.go mostResourceScorer).
std::int64_t fit_score(const NodeResourcesFitScoring& scoring, const PodTemplate& pod, const Node& node, const AssumedRoom& taken) {
  std::int64_t score = 0, weights = 0;
  for (const NodeResourcesFitScoring::Resource& r : scoring.resources) {
    std::int64_t alloc = 0, requested = 0;
    if (r.name == "cpu") {
      alloc = node.cpu_allocatable_milli;
      requested = node.cpu_requested_milli + taken.cpu_milli + pod.cpu_milli;
    } else if (r.name == "memory") {
      alloc = node.memory_allocatable_mib;
      requested = node.memory_requested_mib + taken.memory_mib + pod.memory_mib;
    } else {
      if (pod.gpus == 0) continue;
      alloc = node.gpus_allocatable;
      requested = node.gpus_requested + taken.gpus + pod.gpus;
    }
    if (alloc <= 0) continue;
    std::int64_t part = 0;
    if (scoring.type == NodeResourcesFitScoring::Type::MostAllocated) {
      part = std::min(requested, alloc) * 100 / alloc;
    } else {
      part = requested > alloc ? 0 : (alloc - requested) * 100 / alloc;
    }
    score += part * r.weight;
    weights += r.weight;
  }
  return weights == 0 ? 0 : score / weights;
}

}  // namespace

SchedulingResult schedule_pod(const ClusterState& cluster, const PodTemplate& pod, const std::vector<AssumedRoom>& assumed, Rng* ties,
                              const NodeResourcesFitScoring& scoring) {
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
    const std::int64_t score = fit_score(scoring, pod, node, taken);
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
    // The node by its kubernetes.io/hostname label where it has one (a snapshot's nodes), else its id.
    const Labels& labels = cluster.nodes[*result.node].labels;
    const auto host = labels.find("kubernetes.io/hostname");
    result.explanation = "bound to node " + (host != labels.end() ? host->second : std::to_string(*result.node)) + " (" + to_string(scoring.type) + " score " + std::to_string(best_score) +
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

const SchedulingCycle& KubeScheduler::schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) {
  SchedulingCycle& cycle = cycle_;
  cycle = SchedulingCycle();
  std::vector<AssumedRoom> assumed;
  bool unschedulable = false;
  // The scheduling queue pops by priority, then by creation (the PrioritySort plugin's Less,
  // kubernetes pkg/scheduler/framework/plugins/queuesort/priority_sort.go), as the snapshot tool's
  // kube-scheduler does (snapshot_schedule.cpp). `pending` comes in creation order.
  std::vector<std::uint32_t> order(pending);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return cluster.template_of(cluster.pods[a]).priority > cluster.template_of(cluster.pods[b]).priority;
  });
  for (std::uint32_t id : order) {
    const PodTemplate& t = cluster.template_of(cluster.pods[id]);
    SchedulingResult r = schedule_pod(cluster, t, assumed, &ties_, config_.scoring);
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

// A KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) whose one
// profile, default-scheduler, may configure NodeResourcesFit's scoringStrategy; the lab's kube-scheduler
// runs the default plugins, so other plugin configuration is refused rather than ignored. Checked as
// upstream's ValidateNodeResourcesFitArgs does (pkg/scheduler/apis/config/validation/validation_pluginargs.go:
// a weight in 1 … 100, each resource once).
KubeSchedulerConfig read_kube_scheduler_config(const Json& v, const std::string& path) {
  ObjectReader r(v, path);
  r.only_keys({"apiVersion", "kind", "profiles"});
  const std::string api = r.require_string("apiVersion", "\"kubescheduler.config.k8s.io/v1\"");
  if (api != "kubescheduler.config.k8s.io/v1") throw InputError(r.child_path("apiVersion"), shown(api) + " is not allowed; expected \"kubescheduler.config.k8s.io/v1\"");
  const std::string kind = r.require_string("kind", "\"KubeSchedulerConfiguration\"");
  if (kind != "KubeSchedulerConfiguration") throw InputError(r.child_path("kind"), shown(kind) + " is not allowed; expected \"KubeSchedulerConfiguration\"");
  KubeSchedulerConfig config;
  const Json* profiles = r.raw("profiles");
  r.finish();
  if (!profiles) return config;
  expect_array(*profiles, path + "/profiles", 1);
  if (profiles->empty()) return config;
  const std::string pp = path + "/profiles/0";
  ObjectReader pr((*profiles)[0], pp);
  pr.only_keys({"schedulerName", "pluginConfig"});
  const std::string name = pr.get_string("schedulerName", kDefaultScheduler, 253);
  if (name != kDefaultScheduler) {
    throw InputError(pr.child_path("schedulerName"), shown(name) + " is not modelled: the lab's kube-scheduler runs one profile, \"default-scheduler\"");
  }
  if (const Json* plugins = pr.raw("pluginConfig")) {
    expect_array(*plugins, pp + "/pluginConfig", 16);
    for (std::size_t i = 0; i < plugins->size(); ++i) {
      const std::string cp = pp + "/pluginConfig/" + std::to_string(i);
      ObjectReader cr((*plugins)[i], cp);
      cr.only_keys({"name", "args"});
      const std::string plugin = cr.require_string("name", "the plugin's name, e.g. \"NodeResourcesFit\"");
      if (plugin != "NodeResourcesFit") {
        throw InputError(cr.child_path("name"), shown(plugin) + " is not configurable here: the lab models NodeResourcesFit's scoringStrategy only");
      }
      const Json& args = cr.require("args", "NodeResourcesFitArgs: {\"scoringStrategy\": {\"type\": ..., \"resources\": [...]}}");
      ObjectReader ar(args, cr.child_path("args"));
      ar.only_keys({"apiVersion", "kind", "scoringStrategy", "ignoredResources", "ignoredResourceGroups"});
      for (const char* ignored : {"ignoredResources", "ignoredResourceGroups"}) {
        if (ar.has(ignored)) throw InputError(ar.child_path(ignored), "is not modelled: the lab's pods request cpu, memory and nvidia.com/gpu only");
      }
      ar.get_string("apiVersion", "kubescheduler.config.k8s.io/v1", 100);
      ar.get_string("kind", "NodeResourcesFitArgs", 100);
      if (const Json* st = ar.raw("scoringStrategy")) {
        const std::string sp = ar.child_path("scoringStrategy");
        ObjectReader sr(*st, sp);
        sr.only_keys({"type", "resources", "requestedToCapacityRatio"});
        const std::string type = sr.get_enum("type", "LeastAllocated", {"LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"});
        if (type == "RequestedToCapacityRatio") {
          throw InputError(sr.child_path("type"), "\"RequestedToCapacityRatio\" is not modelled; use \"MostAllocated\" to bin-pack or \"LeastAllocated\" to spread");
        }
        if (sr.has("requestedToCapacityRatio")) throw InputError(sr.child_path("requestedToCapacityRatio"), "goes with type RequestedToCapacityRatio, which is not modelled");
        config.scoring.type = type == "MostAllocated" ? NodeResourcesFitScoring::Type::MostAllocated : NodeResourcesFitScoring::Type::LeastAllocated;
        if (const Json* res = sr.raw("resources")) {
          expect_array(*res, sp + "/resources", 3);
          config.scoring.resources.clear();
          for (std::size_t k = 0; k < res->size(); ++k) {
            const std::string rp = sp + "/resources/" + std::to_string(k);
            ObjectReader rr((*res)[k], rp);
            rr.only_keys({"name", "weight"});
            NodeResourcesFitScoring::Resource spec;
            spec.name = rr.require_string("name", "\"cpu\", \"memory\" or \"nvidia.com/gpu\"");
            if (spec.name != "cpu" && spec.name != "memory" && spec.name != "nvidia.com/gpu") {
              throw InputError(rr.child_path("name"), shown(spec.name) + " is not a resource the lab's pods request; expected \"cpu\", \"memory\" or \"nvidia.com/gpu\"");
            }
            for (const auto& seen : config.scoring.resources) {
              if (seen.name == spec.name) throw InputError(rr.child_path("name"), shown(spec.name) + " is listed twice");
            }
            spec.weight = rr.get_int("weight", 1, 1, 100);
            rr.finish();
            config.scoring.resources.push_back(spec);
          }
          if (config.scoring.resources.empty()) throw InputError(sp + "/resources", "is empty; list at least one resource, or leave it out for cpu and memory");
        }
        sr.finish();
      }
      ar.finish();
      cr.finish();
    }
  }
  pr.finish();
  return config;
}

}  // namespace gpuscale
