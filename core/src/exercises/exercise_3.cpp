// Exercise 3: a Deployment stuck in Pending. Each variant builds a cluster in which one modelled
// mechanism of one layer (Karpenter, kube-scheduler, KAI Scheduler) holds a pod back; the simulation
// of that cluster produces the events and metrics the learner reads, the grader reads the same run
// (the root cause it grades against is diagnosed from that run's evidence), and the learner's fix is
// applied to the same scenario and simulated again.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::exercise3 {

namespace {

constexpr int kPodGpus = 2;   // TP2: the engine profile's GPUs per replica
constexpr int kNodeGpus = 8;  // p5.48xlarge
const char* const kZones[] = {"us-east-1a", "us-east-1b", "us-east-1c"};
const char* const kWrongGpus[] = {"h200", "a100"};
const char* const kTaint = "dedicated";
// The topology cause: Llama 3.1 405B as a LeaderWorkerSet, each group 2 pods of 8 GPUs (TP8 inside a
// node, PP2 across two), which the LeaderWorkerSet's annotations keep inside one zone.
constexpr int kGroupPods = 2;
constexpr int kGroupPodGpus = 8;
const char* const kGroupProfile = "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5";
const char* const kZoneLabel = "topology.kubernetes.io/zone";
// The fragmentation cause: a platform service's 1-GPU pods, one per node, scheduled first (a higher
// PriorityClass), so spreading leaves each node one GPU short of a replica.
const char* const kSmallPods = "embeddings";
constexpr int kSmallPriority = 1000;
const char* const kTaintValue = "llm-inference";

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string gpus_text(double v) { return v < 0 ? std::string("unlimited") : num(v); }

// "Node Provisioning" → "nodeprovisioning": how answers are compared with ids and aliases.
std::string normal(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// The id of `entries` (an object of {aliases}, or an array of {id, aliases}) that `given` names, or "".
std::string match_id(const Json& entries, const std::string& given) {
  const std::string g = normal(given);
  if (g.empty()) return "";
  const auto matches = [&](const std::string& id, const Json& e) {
    if (normal(id) == g) return true;
    if (e.contains("aliases")) {
      for (const auto& a : e.at("aliases")) {
        if (normal(a.get<std::string>()) == g) return true;
      }
    }
    return false;
  };
  if (entries.is_array()) {
    for (const auto& e : entries) {
      if (matches(e.at("id").get<std::string>(), e)) return e.at("id").get<std::string>();
    }
  } else {
    for (auto it = entries.begin(); it != entries.end(); ++it) {
      if (matches(it.key(), it.value())) return it.key();
    }
  }
  return "";
}

// ---- the variant ---------------------------------------------------------------------------------

Json params_for(const Json& def, std::uint64_t seed) {
  Json p = draw_variant_params(def, seed);
  const Json& order = def.at("cause_order");
  const auto index = static_cast<std::size_t>(p.at("cause").get<double>());
  if (index >= order.size()) throw InputError("/variant/cause", "draws " + std::to_string(index) + "; cause_order has " + std::to_string(order.size()) + " causes");
  const std::string cause = order.at(index).get<std::string>();
  const std::string layer = def.at("causes").at(cause).at("layer").get<std::string>();
  const int nodes = static_cast<int>(p.at("nodes").get<double>());
  const int extra = static_cast<int>(p.at("extra").get<double>());
  p["cause_id"] = cause;
  p["layer_id"] = layer;
  p["deployment"] = "vllm";
  p["nodepool"] = "gpu-h100";
  p["zone_name"] = kZones[static_cast<int>(p.at("zone").get<double>()) % 3];
  p["wrong_gpu"] = kWrongGpus[static_cast<int>(p.at("gpu_typo").get<double>()) % 2];
  p["taint"] = std::string(kTaint) + "=" + kTaintValue + ":NoSchedule";
  p["allowed_types"] = "p5.4xlarge";
  int initial = nodes, replicas = 0;
  p["workload_kind"] = "Deployment";
  p["workload_text"] = "Llama 3.3 70B FP8 on H100, tensor parallel 2: every replica's pod requests 2 nvidia.com/gpu";
  if (cause == "topology_required") {
    // Two groups: the first fills the two nodes of one zone; the second finds its 16 free GPUs as one
    // node in each of the other zones.
    replicas = 2;
    initial = 4;
    p["workload_kind"] = "LeaderWorkerSet";
    p["workload_text"] = "Llama 3.1 405B BF16 on H100, tensor parallel 8 inside a node and pipeline parallel 2 across two: every replica is a group of " +
                         std::to_string(kGroupPods) + " pods of " + std::to_string(kGroupPodGpus) + " nvidia.com/gpu";
    p["quota"] = initial * kNodeGpus;
    p["queue_limit"] = -1;
  } else if (layer == "karpenter") {
    replicas = nodes * (kNodeGpus / kPodGpus) + extra;  // the nodes are full; `extra` pods need a new one
    p["limit"] = nodes * kNodeGpus;
  } else if (cause == "fragmented_gpus") {
    // Each node: one small pod (1 GPU) and three replicas (6): one GPU free per node, and the NodePool
    // at its limit. The replicas over that fit the cluster's free GPUs once packed (at most n / 2 more).
    initial = nodes + 2;
    replicas = 3 * initial + std::min(extra, initial / 2);
    p["limit"] = initial * kNodeGpus;
  } else if (layer == "kube-scheduler") {
    replicas = 1 + extra;  // none of them fits any node
  } else {
    const int quota = kPodGpus * (nodes + 1);
    replicas = quota / kPodGpus + extra;
    initial = quota + kPodGpus * extra <= kNodeGpus ? 1 : 2;
    p["quota"] = cause == "queue_limit" ? replicas * kPodGpus : quota;
    p["queue_limit"] = cause == "queue_limit" ? quota : -1;
  }
  p["initial_nodes"] = initial;
  p["replicas"] = replicas;
  p["duration_min"] = def.at("base_scenario").at("duration_s").get<double>() / 60;
  p["nodes_text"] = std::to_string(initial) + (initial == 1 ? " node of it runs" : " nodes of it run") + " when the team scales up.";
  p["scheduler_text"] = layer == "kai-scheduler"
                            ? "The " + p.at("workload_kind").get<std::string>() +
                                  "'s pods name schedulerName: kai-scheduler and the KAI queue inference (label kai.scheduler/queue), a leaf queue under team-a."
                            : std::string("The pods are placed by the default kube-scheduler.");
  if (cause == "fragmented_gpus") {
    p["nodes_text"] = p.at("nodes_text").get<std::string>() + " The platform team's " + kSmallPods +
                      " service runs one pod of 1 nvidia.com/gpu on each (PriorityClass platform-high).";
  }
  p["pending_text"] = layer == "kube-scheduler" && cause != "fragmented_gpus" ? std::string("None of its pods has started.") : std::string("Some replicas run; the newest pods do not start.");
  return p;
}

Json resources(double gpu_quota, double gpu_limit) {
  const Json open{{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}};
  return {{"gpu", {{"quota", gpu_quota}, {"limit", gpu_limit}, {"overQuotaWeight", 1}}}, {"cpu", open}, {"memory", open}};
}

// The replicas' pod spec in a variant's scenario: the Deployment's, or the LeaderWorkerSet's workerTemplate.
Json& pod_spec(Json& sc) {
  if (sc.contains("leaderWorkerSet")) return sc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"];
  return sc["cluster"]["inference_pod"];
}

// The variant's cluster: the base scenario with the one mechanism of its cause in place.
Json scenario_for(const Json& def, const Json& p, std::uint64_t seed) {
  Json sc = def.at("base_scenario");
  sc["seed"] = seed;
  sc["autoscaler"]["replicas"] = p.at("replicas");
  const std::string cause = p.at("cause_id").get<std::string>();
  const std::string zone = p.at("zone_name").get<std::string>();
  Json& cluster = sc["cluster"];
  cluster["initial_nodes"] = Json::array({{{"instance_type", "p5.48xlarge"}, {"capacity_type", "on-demand"}, {"zone", zone},
                                           {"owner", p.at("nodepool")}, {"count", p.at("initial_nodes")}}});
  if (cause == "topology_required") {
    // Two nodes in the variant's zone, one in each of the others; the pod spec becomes the group's.
    cluster["initial_nodes"][0]["count"] = 2;
    for (const char* other : kZones) {
      if (zone != other) cluster["initial_nodes"].push_back({{"instance_type", "p5.48xlarge"}, {"capacity_type", "on-demand"}, {"zone", other},
                                                            {"owner", p.at("nodepool")}, {"count", 1}});
    }
    sc["engine"] = {{"profile", kGroupProfile}};
    Json worker = cluster["inference_pod"];
    worker["gpus"] = kGroupPodGpus;
    cluster.erase("inference_pod");
    sc["leaderWorkerSet"] = {{"apiVersion", "leaderworkerset.x-k8s.io/v1"}, {"kind", "LeaderWorkerSet"},
                             {"metadata", {{"name", p.at("deployment")},
                                           {"annotations", {{"kai.scheduler/topology", "zones"}, {"kai.scheduler/topology-required-placement", kZoneLabel}}}}},
                             {"spec", {{"leaderWorkerTemplate", {{"size", kGroupPods}, {"workerTemplate", worker}}}}}};
  }
  Json& spec = cluster["nodepools"][0]["spec"];
  Json& requirements = spec["template"]["spec"]["requirements"];
  Json& pod = pod_spec(sc);
  if (cause == "fragmented_gpus") {
    spec["limits"] = {{"nvidia.com/gpu", std::to_string(p.at("limit").get<int>())}};
    cluster["workloads"] = Json::array({{{"name", kSmallPods}, {"replicas", p.at("initial_nodes")},
                                         {"pod", {{"gpus", 1}, {"cpu", "4"}, {"memory", "32Gi"}, {"priorityClassName", "platform-high"}, {"priority", kSmallPriority},
                                                  {"tolerations", Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})}}}}});
  } else if (cause == "nodepool_limit") {
    spec["limits"] = {{"nvidia.com/gpu", std::to_string(p.at("limit").get<int>())}};
  } else if (cause == "no_instance_type") {
    requirements[0]["values"] = Json::array({p.at("allowed_types")});
  } else if (cause == "capacity_unavailable") {
    requirements.push_back({{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", Json::array({zone})}});
    cluster["insufficient_capacity"] = Json::array({{{"instance_type", "p5.48xlarge"}, {"capacity_type", "on-demand"}, {"zone", zone}, {"probability", 1.0}}});
  } else if (cause == "untolerated_taint") {
    spec["template"]["spec"]["taints"].push_back({{"key", kTaint}, {"value", kTaintValue}, {"effect", "NoSchedule"}});
  } else if (cause == "node_selector_mismatch") {
    pod["nodeSelector"]["karpenter.k8s.aws/instance-gpu-name"] = p.at("wrong_gpu");
  }
  if (p.at("layer_id") == "kai-scheduler") {
    pod["schedulerName"] = "kai-scheduler";
    pod["labels"] = {{"kai.scheduler/queue", "inference"}};
    Json queues = def.at("kai_queues");
    for (auto& q : queues) {
      if (q.at("name") == "inference") q["resources"] = resources(p.at("quota").get<double>(), p.at("queue_limit").get<double>());
    }
    cluster["kai"] = {{"queues", queues}};
    if (cause == "topology_required") {
      cluster["kai"]["topologies"] = Json::array({{{"apiVersion", "kai.scheduler/v1alpha1"}, {"kind", "Topology"}, {"metadata", {{"name", "zones"}}},
                                                   {"spec", {{"levels", Json::array({{{"nodeLabel", kZoneLabel}}, {{"nodeLabel", "kubernetes.io/hostname"}}})}}}}});
    }
  }
  return sc;
}

// ---- what a run shows ------------------------------------------------------------------------------

// The pod id a scheduler's log line is about ("unschedulable: pod 4 (vllm): …", "bind: pod 4 (vllm) …").
long pod_of(const std::string& text) {
  const auto at = text.find("pod ");
  if (at == std::string::npos || at > 20) return -1;
  std::size_t i = at + 4, end = i;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  return end > i ? std::stol(text.substr(i, end - i)) : -1;
}

// Whether a Karpenter log line names `pod`: "pod 4 (" or a list "[2, 4]".
bool mentions_pod(const std::string& text, long pod) {
  const std::string id = std::to_string(pod);
  if (text.find("pod " + id + " (") != std::string::npos) return true;
  for (std::size_t open = text.find('['); open != std::string::npos; open = text.find('[', open + 1)) {
    const auto close = text.find(']', open);
    if (close == std::string::npos) break;
    std::string list = ", " + text.substr(open + 1, close - open - 1) + ",";
    if (list.find(" " + id + ",") != std::string::npos) return true;
  }
  return false;
}

// What the grader reads of one run: the stuck pod, each layer's signal about it, the metrics at the end.
struct Observation {
  bool all_bound = true;        // every pod bound by the end (no pod Pending)
  long pod = -1;                // the first pod that stayed Pending
  std::string pod_name, scheduler, scheduling_message;
  double failed_at_s = -1;
  std::string karpenter_reason, karpenter_text;
  double karpenter_at_s = -1;
  std::int64_t insufficient_capacity = 0;
  std::string cloud_text;
  int nodeclaims_launched = 0, nodeclaims_pending = 0, pods_pending = 0, pods_unschedulable = 0;
  std::string pool;
  std::int64_t pool_gpus = 0, pool_limit = -1;
  Json nodes = Json::array();   // [{name, instance_type, owner, gpus, free}] at the end
  std::string queue;
  double queue_deserved = 0, queue_fair_share = 0, queue_allocated = 0, queue_requested = 0, queue_quota = 0, queue_limit = -1;
  // Fix runs: when the stuck pods were bound.
  double bound_at_s = -1;
  std::string bound_text;
};

Json observation_json(const Observation& o) {
  return {{"all_bound", o.all_bound}, {"pod", o.pod}, {"pod_name", o.pod_name}, {"scheduler", o.scheduler},
          {"scheduling_message", o.scheduling_message}, {"failed_at_s", o.failed_at_s}, {"karpenter_reason", o.karpenter_reason},
          {"karpenter_text", o.karpenter_text}, {"karpenter_at_s", o.karpenter_at_s}, {"insufficient_capacity", o.insufficient_capacity},
          {"cloud_text", o.cloud_text}, {"nodeclaims_launched", o.nodeclaims_launched}, {"nodeclaims_pending", o.nodeclaims_pending},
          {"pods_pending", o.pods_pending}, {"pods_unschedulable", o.pods_unschedulable}, {"pool", o.pool}, {"pool_gpus", o.pool_gpus},
          {"pool_limit", o.pool_limit}, {"nodes", o.nodes}, {"queue", o.queue}, {"queue_deserved", o.queue_deserved},
          {"queue_fair_share", o.queue_fair_share}, {"queue_allocated", o.queue_allocated}, {"queue_requested", o.queue_requested},
          {"queue_quota", o.queue_quota}, {"queue_limit", o.queue_limit}, {"bound_at_s", o.bound_at_s}, {"bound_text", o.bound_text}};
}

// Reads an observation given back in the context (strictly: every field, its type).
Observation observation_from(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  Observation o;
  const auto str = [&](const char* key, std::string& out) {
    if (!r.has(key)) throw InputError(r.child_path(key), "is required");
    out = r.get_string(key, "", 4000);
  };
  const auto number = [&](const char* key, double lo, double hi) {
    if (!r.has(key)) throw InputError(r.child_path(key), "is required");
    return r.get_number(key, 0, lo, hi);
  };
  if (!r.has("all_bound")) throw InputError(r.child_path("all_bound"), "is required");
  o.all_bound = r.get_bool("all_bound", true);
  o.pod = static_cast<long>(number("pod", -1, 1e9));
  str("pod_name", o.pod_name);
  str("scheduler", o.scheduler);
  str("scheduling_message", o.scheduling_message);
  o.failed_at_s = number("failed_at_s", -1, 1e9);
  str("karpenter_reason", o.karpenter_reason);
  str("karpenter_text", o.karpenter_text);
  o.karpenter_at_s = number("karpenter_at_s", -1, 1e9);
  o.insufficient_capacity = static_cast<std::int64_t>(number("insufficient_capacity", 0, 1e9));
  str("cloud_text", o.cloud_text);
  o.nodeclaims_launched = static_cast<int>(number("nodeclaims_launched", 0, 1e6));
  o.nodeclaims_pending = static_cast<int>(number("nodeclaims_pending", 0, 1e6));
  o.pods_pending = static_cast<int>(number("pods_pending", 0, 1e6));
  o.pods_unschedulable = static_cast<int>(number("pods_unschedulable", 0, 1e6));
  str("pool", o.pool);
  o.pool_gpus = static_cast<std::int64_t>(number("pool_gpus", 0, 1e9));
  o.pool_limit = static_cast<std::int64_t>(number("pool_limit", -1, 1e9));
  const Json& nodes = r.require("nodes", "the nodes at the end");
  if (!nodes.is_array()) throw InputError(r.child_path("nodes"), "expected an array");
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string np = r.child_path("nodes") + "/" + std::to_string(i);
    ObjectReader nr(nodes[i], np);
    Json n{{"name", nr.require_string("name", "the node's name", 64)}, {"instance_type", nr.require_string("instance_type", "its type", 64)},
           {"zone", nr.require_string("zone", "its zone", 64)}, {"owner", nr.require_string("owner", "its NodePool", 64)},
           {"gpus", nr.get_int("gpus", 0, 0, 1024)}, {"free", nr.get_int("free", 0, 0, 1024)}};
    nr.finish();
    o.nodes.push_back(std::move(n));
  }
  str("queue", o.queue);
  o.queue_deserved = number("queue_deserved", -1, 1e9);
  o.queue_fair_share = number("queue_fair_share", -1, 1e9);
  o.queue_allocated = number("queue_allocated", -1, 1e9);
  o.queue_requested = number("queue_requested", -1, 1e9);
  o.queue_quota = number("queue_quota", -1, 1e9);
  o.queue_limit = number("queue_limit", -1, 1e9);
  o.bound_at_s = number("bound_at_s", -1, 1e9);
  str("bound_text", o.bound_text);
  r.finish();
  return o;
}

Observation observe(const RunResult& r, const Scenario& s) {
  Observation o;
  std::map<long, const DecisionRecord*> failed;  // pod → its FailedScheduling event
  std::map<long, const DecisionRecord*> bound;   // pod → its binding
  for (const DecisionRecord& d : r.decisions) {
    if (d.controller != "kube-scheduler" && d.controller != "kai-scheduler") continue;
    const long pod = pod_of(d.explanation);
    if (pod < 0) continue;
    if (d.reason == "FailedScheduling" && !failed.count(pod)) failed[pod] = &d;
    if (d.reason == "Scheduled") bound[pod] = &d;
  }
  const ClusterSeries& c = r.cluster_series;
  o.all_bound = c.pods_pending.empty() || c.pods_pending.back() == 0;
  o.pods_pending = c.pods_pending.empty() ? 0 : c.pods_pending.back();
  o.pods_unschedulable = c.pods_unschedulable.empty() ? 0 : c.pods_unschedulable.back();
  for (const auto& [pod, d] : failed) {
    const auto b = bound.find(pod);
    if (b != bound.end() && b->second->t_s >= d->t_s) {
      // A pod that waited and then got a node: in a fix run, the moment it did.
      if (b->second->t_s > o.bound_at_s) {
        o.bound_at_s = b->second->t_s;
        o.bound_text = b->second->explanation;
      }
      continue;
    }
    if (o.pod >= 0) continue;
    o.pod = pod;
    o.scheduler = d->controller;
    o.failed_at_s = d->t_s;
    // "unschedulable: pod 4 (vllm): 0/1 nodes are available: …" → the scheduler's message.
    const std::string& e = d->explanation;
    const auto open = e.find(" (");
    const auto close = e.find("): ");
    o.pod_name = open != std::string::npos && close != std::string::npos && close > open ? e.substr(open + 2, close - open - 2) + "-" + std::to_string(pod) : "pod " + std::to_string(pod);
    o.scheduling_message = close != std::string::npos ? e.substr(close + 3) : e;
  }
  if (o.pod >= 0) o.all_bound = false;
  if (o.pod >= 0) {
    for (const DecisionRecord& d : r.decisions) {
      if (d.controller != "karpenter.provisioner" || !mentions_pod(d.explanation, o.pod)) continue;
      o.karpenter_reason = d.reason;
      o.karpenter_at_s = d.repeats > 0 ? d.last_t_s : d.t_s;
      const std::string& e = d.explanation;
      std::string text = e;
      if (const auto fits = e.find("fits no NodePool: "); fits != std::string::npos) {
        text = e.substr(fits + 18);
        if (const auto tail = text.find("; it stays pending"); tail != std::string::npos) text.resize(tail);
      } else if (const auto head = e.find("]; "); head != std::string::npos) {
        text = e.substr(head + 3);
      }
      o.karpenter_text = text;
    }
  }
  o.insufficient_capacity = r.summary.cluster.insufficient_capacity;
  for (const DecisionRecord& d : r.decisions) {
    if (d.controller == "cloud" && d.reason == "InsufficientInstanceCapacity") {
      o.cloud_text = d.explanation;
      break;
    }
  }
  if (!c.nodeclaims_launched.empty()) {
    o.nodeclaims_launched = c.nodeclaims_launched.back();
    o.nodeclaims_pending = c.nodeclaims_pending.back();
  }
  if (!c.nodepools.empty() && !c.nodepools.front().gpus.empty()) {
    o.pool = c.nodepools.front().name;
    o.pool_gpus = c.nodepools.front().gpus.back();
    o.pool_limit = c.nodepools.front().limit_gpus;
  }
  for (const auto& n : c.nodes) {
    if (n.gpus_free.empty() || n.gpus_free.back() < 0) continue;
    o.nodes.push_back({{"name", "node-" + std::to_string(n.id)}, {"instance_type", n.instance_type}, {"zone", n.zone}, {"owner", n.owner}, {"gpus", n.gpus},
                       {"free", n.gpus_free.back()}});
  }
  // The queue the stuck pod's PodGroup is in ("PodGroup pg-vllm-2 (queue inference): …"), else the pods' label.
  std::string queue;
  if (const auto q = o.scheduling_message.find("(queue "); q != std::string::npos) {
    const auto end = o.scheduling_message.find(')', q);
    queue = o.scheduling_message.substr(q + 7, end - q - 7);
  } else if (!s.pools.empty()) {
    const auto& labels = s.pools.front().pod.labels;
    if (const auto l = labels.find("kai.scheduler/queue"); l != labels.end()) queue = l->second;
  }
  for (const auto& q : c.kai_queues) {
    if (q.name != queue || q.allocated.empty()) continue;
    o.queue = q.name;
    o.queue_quota = q.quota;
    o.queue_limit = q.limit;
    o.queue_deserved = q.deserved.back();
    o.queue_fair_share = q.fair_share.back();
    o.queue_allocated = q.allocated.back();
    o.queue_requested = q.requested.back();
  }
  return o;
}

Observation simulate(const Json& scenario, const ProgressReport& progress = {}) {
  Scenario s = parse_scenario(scenario);
  s.output.decisions = true;
  s.output.cluster_series = true;
  return observe(run_simulation(s, {}, progress), s);
}

// ---- the root cause and its evidence, read from the run ----------------------------------------------

bool has(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

// Enough GPUs free over the nodes for a replica, but no node with a replica's GPUs free.
bool gpus_fragmented(const Observation& o) {
  double total = 0, most = 0;
  for (const auto& n : o.nodes) {
    const double free = n.at("free").get<double>();
    total += free;
    most = std::max(most, free);
  }
  return total >= kPodGpus && most < kPodGpus;
}

// The root cause the run shows, from its evidence alone ("" when no pod stayed Pending).
std::string diagnose(const Observation& o) {
  if (o.pod < 0) return "";
  const std::string& m = o.scheduling_message;
  if (o.scheduler == "kai-scheduler") {
    if (has(m, "NonPreemptibleOverQuota")) return "nonpreemptible_over_quota";
    if (has(m, "OverLimit")) return "queue_limit";
    if (has(m, "couldn't be satisfied for job")) return "topology_required";
  }
  if (has(m, "untolerated taint")) return "untolerated_taint";
  if (o.scheduler == "kube-scheduler" && has(m, "Insufficient nvidia.com/gpu") && gpus_fragmented(o)) return "fragmented_gpus";
  if (has(m, "didn't match Pod's node affinity/selector")) return "node_selector_mismatch";
  const std::string& k = o.karpenter_text;
  if (has(k, "InsufficientInstanceCapacity")) return "capacity_unavailable";
  if (has(k, "limits")) return "nodepool_limit";
  if (has(k, "no allowed type has room") || has(k, "requirements allow no offering")) return "no_instance_type";
  return "unknown";
}

bool node_has_room(const Observation& o) {
  for (const auto& n : o.nodes) {
    if (n.at("free").get<double>() >= kPodGpus) return true;
  }
  return false;
}

// Free GPUs enough for a whole group, but no zone holding them all.
bool group_room_split_by_zone(const Observation& o) {
  std::map<std::string, double> by_zone;
  double total = 0;
  for (const auto& n : o.nodes) {
    const double free = n.at("free").get<double>();
    total += free;
    by_zone[n.at("zone").get<std::string>()] += free;
  }
  for (const auto& [zone, free] : by_zone) {
    if (free >= kGroupPods * kGroupPodGpus) return false;
  }
  return total >= kGroupPods * kGroupPodGpus;
}

// Whether the run's signal `item` confirms `cause`: checked on what the run produced, never assumed.
bool confirms(const std::string& cause, const std::string& item, const Observation& o) {
  const std::string& m = o.scheduling_message;
  const std::string& k = o.karpenter_text;
  if (cause == "nodepool_limit") {
    if (item == "karpenter_event") return has(k, "limits");
    if (item == "nodepool_usage") return o.pool_limit >= 0 && o.pool_gpus + kNodeGpus > o.pool_limit;
  } else if (cause == "no_instance_type") {
    if (item == "karpenter_event") return has(k, "no allowed type has room") || has(k, "requirements allow no offering");
    if (item == "nodeclaims") return o.nodeclaims_launched == 0;
  } else if (cause == "capacity_unavailable") {
    if (item == "karpenter_event") return has(k, "InsufficientInstanceCapacity");
    if (item == "launch_failures") return o.insufficient_capacity > 0;
  } else if (cause == "untolerated_taint") {
    if (item == "failed_scheduling") return o.scheduler == "kube-scheduler" && has(m, "untolerated taint");
    if (item == "free_gpus") return node_has_room(o);
  } else if (cause == "node_selector_mismatch") {
    if (item == "failed_scheduling") return o.scheduler == "kube-scheduler" && has(m, "didn't match Pod's node affinity/selector");
    if (item == "free_gpus") return node_has_room(o);
  } else if (cause == "nonpreemptible_over_quota") {
    if (item == "podgroup_condition") return o.scheduler == "kai-scheduler" && has(m, "NonPreemptibleOverQuota");
    if (item == "kai_queue") return !o.queue.empty() && o.queue_quota >= 0 && o.queue_allocated + kPodGpus > o.queue_quota;
  } else if (cause == "queue_limit") {
    if (item == "podgroup_condition") return o.scheduler == "kai-scheduler" && has(m, "OverLimit");
    if (item == "kai_queue") return !o.queue.empty() && o.queue_limit >= 0 && o.queue_allocated + kPodGpus > o.queue_limit;
  } else if (cause == "fragmented_gpus") {
    if (item == "failed_scheduling") return o.scheduler == "kube-scheduler" && has(m, "Insufficient nvidia.com/gpu");
    if (item == "free_gpus") return gpus_fragmented(o);
  } else if (cause == "topology_required") {
    if (item == "podgroup_condition") return o.scheduler == "kai-scheduler" && has(m, "couldn't be satisfied for job");
    if (item == "free_gpus") return group_room_split_by_zone(o);
  }
  return false;
}

// The run's signals, as the learner's evidence choices: [{id, label, text}] in the definition's order.
Json evidence_items(const Json& def, const Observation& o) {
  Json out = Json::array();
  const auto add = [&](const char* id, const std::string& text) {
    out.push_back({{"id", id}, {"label", def.at("evidence").at(id).at("label")}, {"text", text}});
  };
  const std::string when = o.failed_at_s >= 0 ? " (t = " + num(o.failed_at_s) + " s)" : "";
  if (o.scheduler == "kai-scheduler") {
    add("podgroup_condition", "pod/" + o.pod_name + when + ": PodScheduled=False, Unschedulable. " + o.scheduling_message);
  } else {
    add("failed_scheduling", "Warning FailedScheduling pod/" + o.pod_name + when + ": " + o.scheduling_message);
  }
  add("karpenter_event", o.karpenter_reason.empty() ? std::string("Karpenter logged nothing about the pod.")
                                                     : o.karpenter_reason + " (last at t = " + num(o.karpenter_at_s) + " s): " + o.karpenter_text);
  add("launch_failures", o.insufficient_capacity > 0 ? std::to_string(o.insufficient_capacity) + " launch attempts refused. " + o.cloud_text
                                                     : std::string("No launch attempt was refused by the cloud."));
  add("nodeclaims", "NodeClaims launched: " + std::to_string(o.nodeclaims_launched) + "; still pending (launched, not initialized): " +
                        std::to_string(o.nodeclaims_pending) + ".");
  add("nodepool_usage", "NodePool " + o.pool + ": " + std::to_string(o.pool_gpus) + " nvidia.com/gpu in use" +
                            (o.pool_limit >= 0 ? " of a limit of " + std::to_string(o.pool_limit) : std::string(", no limit")) + ".");
  std::string free;
  for (const auto& n : o.nodes) {
    free += (free.empty() ? "" : "; ") + n.at("name").get<std::string>() + " (" + n.at("instance_type").get<std::string>() + ", " +
            n.at("zone").get<std::string>() + ", " + n.at("owner").get<std::string>() + "): " + num(n.at("free").get<double>()) + " of " + num(n.at("gpus").get<double>()) + " free";
  }
  add("free_gpus", free.empty() ? std::string("No node advertises GPUs.") : free + ".");
  add("pending_pods", "Pending pods: " + std::to_string(o.pods_pending) + ", of which " + std::to_string(o.pods_unschedulable) + " marked Unschedulable.");
  if (o.scheduler == "kai-scheduler" && !o.queue.empty()) {
    add("kai_queue", "Queue " + o.queue + ": allocated " + num(o.queue_allocated) + " GPUs, deserved " + gpus_text(o.queue_deserved) + " (quota " +
                         gpus_text(o.queue_quota) + "), fair share " + gpus_text(o.queue_fair_share) + ", limit " + gpus_text(o.queue_limit) +
                         ", requested " + num(o.queue_requested) + ".");
  }
  return out;
}

std::vector<std::string> key_evidence(const Json& def, const std::string& cause, const Observation& o) {
  std::vector<std::string> out;
  if (!def.at("causes").contains(cause)) return out;
  for (const auto& id : def.at("causes").at(cause).at("evidence")) {
    if (confirms(cause, id.get<std::string>(), o)) out.push_back(id.get<std::string>());
  }
  return out;
}

// ---- the fix ---------------------------------------------------------------------------------------

struct Fix {
  std::string given;  // as the learner wrote it
  std::string id;     // the fix it names ("" when none does)
  std::optional<double> value;
};

// Applies a fix to the variant's scenario; returns the change in words.
std::string apply_fix(Json& sc, const Fix& f, const Json& p) {
  Json& cluster = sc["cluster"];
  Json& spec = cluster["nodepools"][0]["spec"];
  Json& reqs = spec["template"]["spec"]["requirements"];
  Json& pod = pod_spec(sc);
  const bool group = sc.contains("leaderWorkerSet");
  const int need = p.at("replicas").get<int>() * (group ? kGroupPods * kGroupPodGpus : kPodGpus);
  if (f.id == "raise_nodepool_limit") {
    const double current = p.contains("limit") ? p.at("limit").get<double>() : 0;
    // Karpenter counts a node's whole capacity: enough for every replica, in whole nodes.
    const double v = f.value ? *f.value : std::max(current + kNodeGpus, double((need + kNodeGpus - 1) / kNodeGpus * kNodeGpus));
    spec["limits"] = {{"nvidia.com/gpu", num(v)}};
    return "spec.limits nvidia.com/gpu: \"" + num(v) + "\" on NodePool " + p.at("nodepool").get<std::string>();
  }
  if (f.id == "widen_instance_types") {
    for (auto& q : reqs) {
      if (q.at("key") == "node.kubernetes.io/instance-type") {
        auto& v = q["values"];
        if (std::find(v.begin(), v.end(), Json("p5.48xlarge")) == v.end()) v.push_back("p5.48xlarge");
      }
    }
    return "node.kubernetes.io/instance-type In " + [&] {
      for (auto& q : reqs) {
        if (q.at("key") == "node.kubernetes.io/instance-type") return q.at("values").dump();
      }
      return std::string("[]");
    }();
  }
  if (f.id == "widen_zones") {
    Json kept = Json::array();
    for (auto& q : reqs) {
      if (q.at("key") != "topology.kubernetes.io/zone") kept.push_back(q);
    }
    const bool had = kept.size() != reqs.size();
    reqs = kept;
    return had ? "removed the topology.kubernetes.io/zone requirement" : "no zone requirement to remove (the NodePool already allows every zone)";
  }
  if (f.id == "allow_spot") {
    for (auto& q : reqs) {
      if (q.at("key") == "karpenter.sh/capacity-type") q["values"] = Json::array({"on-demand", "spot"});
    }
    return "karpenter.sh/capacity-type In [\"on-demand\", \"spot\"]";
  }
  if (f.id == "add_toleration") {
    Json tol = pod.contains("tolerations") ? pod["tolerations"] : Json::array();
    std::string added;
    for (const auto& t : spec["template"]["spec"]["taints"]) {
      tol.push_back({{"key", t.at("key")}, {"operator", "Equal"}, {"value", t.value("value", "")}, {"effect", t.at("effect")}});
      added += (added.empty() ? "" : ", ") + t.at("key").get<std::string>() + "=" + t.value("value", "") + ":" + t.at("effect").get<std::string>();
    }
    pod["tolerations"] = tol;
    return "tolerations for " + added + " on the pod";
  }
  if (f.id == "fix_node_selector") {
    pod["nodeSelector"]["karpenter.k8s.aws/instance-gpu-name"] = "h100";
    return "nodeSelector karpenter.k8s.aws/instance-gpu-name: h100 on the pod";
  }
  if (f.id == "raise_queue_quota" || f.id == "raise_queue_limit") {
    const bool quota = f.id == "raise_queue_quota";
    const double v = f.value ? *f.value : quota ? need : -1;
    if (!cluster.contains("kai")) return "no KAI queue in this cluster: nothing changed";
    for (auto& q : cluster["kai"]["queues"]) {
      if (q.at("name") == "inference") q["resources"]["gpu"][quota ? "quota" : "limit"] = v;
    }
    return std::string("queue inference: resources.gpu.") + (quota ? "quota" : "limit") + " " + num(v);
  }
  if (f.id == "bin_pack_scheduler") {
    cluster["kube_scheduler"] = {
        {"apiVersion", "kubescheduler.config.k8s.io/v1"},
        {"kind", "KubeSchedulerConfiguration"},
        {"profiles", Json::array({{{"schedulerName", "default-scheduler"},
                                   {"pluginConfig", Json::array({{{"name", "NodeResourcesFit"},
                                                                  {"args", {{"scoringStrategy", {{"type", "MostAllocated"},
                                                                                                 {"resources", Json::array({{{"name", "cpu"}, {"weight", 1}},
                                                                                                                            {{"name", "memory"}, {"weight", 1}},
                                                                                                                            {{"name", "nvidia.com/gpu"}, {"weight", 1}}})}}}}}}})}}})}};
    return "kube-scheduler profile default-scheduler: NodeResourcesFit scoringStrategy MostAllocated over cpu, memory and nvidia.com/gpu (bin-packing)";
  }
  if (f.id == "relax_topology") {
    if (!group) return "no topology annotation on this Deployment: nothing changed";
    Json& ann = sc["leaderWorkerSet"]["metadata"]["annotations"];
    if (!ann.contains("kai.scheduler/topology-required-placement")) return "no required placement to relax: nothing changed";
    ann["kai.scheduler/topology-preferred-placement"] = ann["kai.scheduler/topology-required-placement"];
    ann.erase("kai.scheduler/topology-required-placement");
    return "kai.scheduler/topology-preferred-placement: " + ann["kai.scheduler/topology-preferred-placement"].get<std::string>() +
           " instead of topology-required-placement on the LeaderWorkerSet";
  }
  if (f.id == "make_preemptible") {
    pod["priorityClassName"] = "build-preemptible";
    return "priorityClassName: build-preemptible (75, preemptible) on the pod";
  }
  return "";
}

// ---- the answer ------------------------------------------------------------------------------------

}  // namespace

Answer parse_answer(const Json& answer) {
  ObjectReader r(answer, "");
  Answer a;
  if (r.has("layer")) a.layer = r.require_string("layer", "a layer id", 100);
  if (r.has("cause")) a.cause = r.require_string("cause", "a cause id", 200);
  if (const Json* e = r.raw("evidence")) {
    if (!e->is_array()) throw InputError("/evidence", std::string("expected an array of signal ids, found ") + type_name(*e));
    if (e->size() > 20) throw InputError("/evidence", "holds " + std::to_string(e->size()) + " items; at most 20");
    std::vector<std::string> ids;
    for (std::size_t i = 0; i < e->size(); ++i) {
      if (!(*e)[i].is_string()) throw InputError("/evidence/" + std::to_string(i), std::string("expected a signal id, found ") + type_name((*e)[i]));
      const std::string s = (*e)[i].get<std::string>();
      if (s.size() > 200) throw InputError("/evidence/" + std::to_string(i), "is longer than 200 characters");
      ids.push_back(s);
    }
    a.evidence = ids;
  }
  if (const Json* f = r.raw("fix")) {
    if (f->is_string()) {
      a.fix = f->get<std::string>();
      if (a.fix->size() > 200) throw InputError("/fix", "is longer than 200 characters");
    } else if (f->is_object()) {
      ObjectReader fr(*f, "/fix");
      a.fix = fr.require_string("id", "the fix's id", 200);
      a.fix_value = fr.get_optional_number("value", -1, 100000);
      fr.finish();
    } else {
      throw InputError("/fix", std::string("expected a fix id or {\"id\", \"value\"}, found ") + type_name(*f));
    }
  }
  r.finish();
  return a;
}

namespace {

struct Variant {
  Json params;
  Json scenario;
  Observation run;
  std::string cause;  // diagnosed from the run
  std::vector<std::string> key;
};

Variant load(const Json& def, std::uint64_t seed, const GradeContext& context, const ProgressReport& progress = {}) {
  Variant v;
  v.params = params_for(def, seed);
  v.scenario = scenario_for(def, v.params, seed);
  const Json* given = nullptr;
  if (context.simulated) {
    ObjectReader r(*context.simulated, "/context/simulated/data");
    given = r.raw("observation");
    r.finish();
  }
  v.run = given ? observation_from(*given, "/context/simulated/data/observation") : simulate(v.scenario, progress);
  v.cause = diagnose(v.run);
  v.key = key_evidence(def, v.cause, v.run);
  return v;
}

Json choices_of(const Json& def, const Observation& run) {
  Json layers = Json::array();
  for (const auto& l : def.at("layers")) layers.push_back({{"id", l.at("id")}, {"text", l.at("text")}});
  Json causes = Json::array();
  for (const auto& id : def.at("cause_order")) {
    const Json& c = def.at("causes").at(id.get<std::string>());
    causes.push_back({{"id", id}, {"text", c.at("text")}, {"layer", c.at("layer")}});
  }
  Json fixes = Json::array();
  for (auto it = def.at("fixes").begin(); it != def.at("fixes").end(); ++it) {
    Json f{{"id", it.key()}, {"text", it.value().at("text")}};
    if (it.value().contains("value")) f["value_unit"] = it.value().at("value");
    fixes.push_back(std::move(f));
  }
  Json qs = Json::array();
  for (const auto& q : def.at("questions")) {
    Json out{{"id", q.at("id")}, {"type", q.at("type")}, {"prompt", q.at("prompt")}};
    const std::string id = q.at("id").get<std::string>();
    if (id == "layer") out["choices"] = layers;
    if (id == "cause") out["choices"] = causes;
    if (id == "evidence") out["choices"] = evidence_items(def, run);
    if (id == "fix") out["choices"] = fixes;
    qs.push_back(std::move(out));
  }
  return qs;
}

Json verdict(const Json& def, const char* id, double fraction, const std::string& feedback, const std::string& hint = "") {
  const double max = def.at("points").at(id).get<double>();
  Json q{{"id", id}, {"correct", fraction >= 1}, {"points", max * fraction}, {"max_points", max}, {"feedback", feedback}};
  if (!hint.empty()) q["hint"] = hint;
  return q;
}

std::string layer_text(const Json& def, const std::string& id) {
  for (const auto& l : def.at("layers")) {
    if (l.at("id") == id) return l.at("text").get<std::string>();
  }
  return id;
}

std::string item_text(const Json& items, const std::string& id) {
  for (const auto& i : items) {
    if (i.at("id") == id) return i.at("text").get<std::string>();
  }
  return "";
}

// What a layer's own signal in this run says, for a learner who named that layer.
std::string layer_signal(const Json& def, const std::string& layer, const Json& items) {
  const char* id = layer == "karpenter" ? "karpenter_event" : layer == "kai-scheduler" ? "podgroup_condition" : "failed_scheduling";
  const std::string text = item_text(items, id);
  if (text.empty()) {
    return layer == "kai-scheduler" ? "No pod of this Deployment is KAI's: its pods name no kai-scheduler, so KAI never saw them."
                                    : "The pod is not kube-scheduler's: its schedulerName is kai-scheduler.";
  }
  return def.at("evidence").at(id).at("label").get<std::string>() + " says: " + text;
}

// The definition's partial credit for naming `given` when the cause is `truth` (causes.<truth>.<key>.<given>:
// {fraction, feedback}), or nullptr.
const Json* partial_credit(const Json& def, const std::string& truth, const char* key, const std::string& given) {
  if (!def.at("causes").contains(truth)) return nullptr;
  const Json& c = def.at("causes").at(truth);
  if (!c.contains(key) || !c.at(key).contains(given)) return nullptr;
  return &c.at(key).at(given);
}

std::string cause_explain(const Json& def, const std::string& cause, const Variant& v) {
  if (!def.at("causes").contains(cause)) return "";
  Json p = v.params;
  p["usage"] = v.run.pool_gpus;
  return fill_template(def.at("causes").at(cause).at("explain").get<std::string>(), p);
}

// The fix that removes the cause's mechanism (others may work too: the grader judges a fix by its re-run).
std::string working_fix(const std::string& cause) {
  static const std::map<std::string, const char*> kFix = {
      {"nodepool_limit", "raise_nodepool_limit"},         {"no_instance_type", "widen_instance_types"}, {"capacity_unavailable", "widen_zones"},
      {"untolerated_taint", "add_toleration"},            {"node_selector_mismatch", "fix_node_selector"},
      {"nonpreemptible_over_quota", "raise_queue_quota"}, {"queue_limit", "raise_queue_limit"},  {"topology_required", "relax_topology"},
      {"fragmented_gpus", "bin_pack_scheduler"}};
  const auto it = kFix.find(cause);
  return it == kFix.end() ? std::string() : it->second;
}

}  // namespace

Json variant(const Json& def, std::uint64_t seed) {
  Variant v = load(def, seed, {});
  Json params = v.params;
  for (const char* hidden : {"cause", "cause_id", "layer_id", "gpu_typo", "zone", "extra", "nodes", "limit", "quota", "queue_limit", "wrong_gpu",
                             "taint", "allowed_types", "zone_name"}) {
    params.erase(hidden);  // what the scenario shows, the learner reads there; the cause is never sent
  }
  Json sc = v.scenario;
  return {{"id", def.at("id")},
          {"seed", seed},
          {"title", def.at("title")},
          {"text", fill_template(def.at("text").get<std::string>(), v.params)},
          {"params", params},
          {"scenario", sc},
          {"pod", v.run.pod_name},
          {"questions", choices_of(def, v.run)},
          {"lesson_note", def.at("lesson_note")}};
}

Json solve(const Json& def, std::uint64_t seed) {
  Variant v = load(def, seed, {});
  return {{"answers", {{"layer", def.at("causes").at(v.cause).at("layer")}, {"cause", v.cause}, {"evidence", v.key}, {"fix", working_fix(v.cause)}}}};
}

Json grade(const Json& def, std::uint64_t seed, const Json& answer, const GradeContext& context) {
  const Answer given = parse_answer(answer);
  const double duration = def.at("base_scenario").at("duration_s").get<double>();
  const bool simulate_variant = context.simulated == nullptr;
  const int runs = simulate_variant ? 2 : 1;
  const auto report = [&](int index, const char* what) {
    return progress_share(context.progress, index, runs, duration, duration / 10,
                          [what, duration](double t) { return std::string(what) + ": " + clock_text(t, duration); });
  };
  Variant v = load(def, seed, context, report(0, "the variant's cluster"));
  const Json items = evidence_items(def, v.run);
  const std::string truth_layer = def.at("causes").contains(v.cause) ? def.at("causes").at(v.cause).at("layer").get<std::string>() : "";
  Json questions = Json::array();

  // Layer.
  std::string layer;
  if (!given.layer) {
    questions.push_back(verdict(def, "layer", 0, "No answer yet."));
  } else if ((layer = match_id(def.at("layers"), *given.layer)).empty()) {
    questions.push_back(verdict(def, "layer", 0, "\"" + *given.layer + "\" is not one of the layers: Karpenter, kube-scheduler or KAI Scheduler."));
  } else if (layer == truth_layer) {
    questions.push_back(verdict(def, "layer", 1, "Yes: " + layer_text(def, layer) + ". " + layer_signal(def, layer, items)));
  } else if (const Json* partial = partial_credit(def, v.cause, "partial_layers", layer)) {
    // A layer that is part of the story, not the one that keeps the pod off the free GPUs.
    questions.push_back(verdict(def, "layer", partial->at("fraction").get<double>(),
                                "Partly: " + fill_template(partial->at("feedback").get<std::string>(), v.params) + " " + layer_signal(def, layer, items),
                                "Which layer decides that the free GPUs are not enough for this pod?"));
  } else {
    questions.push_back(verdict(def, "layer", 0,
                                "Not " + layer_text(def, layer) + ". " + layer_signal(def, layer, items),
                                "Read each layer's own signal in the diagnosis view, in the order the pod meets them: its scheduler first, then the node provisioner."));
  }

  // Cause.
  std::string cause;
  if (!given.cause) {
    questions.push_back(verdict(def, "cause", 0, "No answer yet."));
  } else if ((cause = match_id(def.at("causes"), *given.cause)).empty()) {
    questions.push_back(verdict(def, "cause", 0, "\"" + *given.cause + "\" is not one of the causes this exercise lists."));
  } else if (cause == v.cause) {
    questions.push_back(verdict(def, "cause", 1, cause_explain(def, cause, v)));
  } else if (const Json* partial = partial_credit(def, v.cause, "partial_causes", cause)) {
    questions.push_back(verdict(def, "cause", partial->at("fraction").get<double>(),
                                "Partly: " + fill_template(partial->at("feedback").get<std::string>(), v.params),
                                "The cause to name is the one that keeps the pod off the GPUs that are free."));
  } else {
    const Json& c = def.at("causes").at(cause);
    std::string fb = "The run does not show \"" + c.at("text").get<std::string>() + "\".";
    const auto own = key_evidence(def, cause, v.run);
    for (const auto& id : def.at("causes").at(cause).at("evidence")) {
      const std::string i = id.get<std::string>();
      if (std::find(own.begin(), own.end(), i) != own.end()) continue;
      const std::string t = item_text(items, i);
      if (!t.empty()) fb += " " + def.at("evidence").at(i).at("label").get<std::string>() + ": " + t;
    }
    questions.push_back(verdict(def, "cause", 0, fb,
                                layer == truth_layer ? "Right layer: now read that layer's message word by word; it names the filter or the check that failed."
                                                              : "Find the layer first: which controller's message names a reason that is not about room?"));
  }

  // Evidence: each pick is judged on what the run produced.
  if (!given.evidence) {
    questions.push_back(verdict(def, "evidence", 0, "No answer yet."));
  } else {
    std::set<std::string> picked;
    std::string fb;
    int hits = 0, wrong = 0;
    for (const std::string& g : *given.evidence) {
      const std::string id = match_id(def.at("evidence"), g);
      const std::string text = id.empty() ? "" : item_text(items, id);
      if (id.empty() || text.empty()) {
        ++wrong;
        fb += "\"" + g + "\": not a signal this run produced. ";
        continue;
      }
      if (!picked.insert(id).second) continue;
      const Json& e = def.at("evidence").at(id);
      const bool key = std::find(v.key.begin(), v.key.end(), id) != v.key.end();
      hits += key ? 1 : 0;
      wrong += key ? 0 : 1;
      fb += (key ? "✓ " : "✗ ") + e.at("label").get<std::string>() + " — " + e.at("shows").get<std::string>() + " Here: " + text +
            (key ? " This confirms the cause. " : " This does not single out the cause. ");
    }
    const int missed = static_cast<int>(v.key.size()) - hits;
    if (missed > 0) {
      fb += std::to_string(missed) + " of the " + std::to_string(v.key.size()) + " signals that confirm the cause " + (missed == 1 ? "is" : "are") + " missing";
      if (cause == v.cause) {
        std::string names;
        for (const auto& k : v.key) {
          if (!picked.count(k)) names += (names.empty() ? "" : "; ") + def.at("evidence").at(k).at("label").get<std::string>();
        }
        fb += ": " + names;
      }
      fb += ".";
    }
    const double fraction = v.key.empty() ? 0 : std::clamp((hits - 0.5 * wrong) / static_cast<double>(v.key.size()), 0.0, 1.0);
    questions.push_back(verdict(def, "evidence", fraction, fb,
                                fraction < 1 ? "Pick the signals that name the cause, not the ones every Pending pod shows." : ""));
  }

  // Fix: applied to the same scenario and simulated.
  Json fix_run = nullptr;
  Json fix_scenario = nullptr;
  if (!given.fix) {
    questions.push_back(verdict(def, "fix", 0, "No answer yet."));
  } else {
    Fix f{*given.fix, match_id(def.at("fixes"), *given.fix), given.fix_value};
    if (f.id.empty()) {
      questions.push_back(verdict(def, "fix", 0, "\"" + *given.fix + "\" is not one of the fixes the lab can apply."));
    } else {
      Json sc = v.scenario;
      const std::string change = apply_fix(sc, f, v.params);
      const Observation after = simulate(sc, report(simulate_variant ? 1 : 0, "your fix"));
      std::string fb = "Applied: " + change + ". Simulated again: ";
      if (after.all_bound) {
        fb += "every pod of the " + v.params.at("workload_kind").get<std::string>() + " is bound" +
              (after.bound_at_s >= 0 ? " (the last waiting pod at t = " + num(after.bound_at_s) + " s: " + after.bound_text + ")" : std::string()) + ".";
      } else {
        fb += "pod " + after.pod_name + " still stays Pending. " +
              (after.scheduler == "kai-scheduler" ? "KAI Scheduler: " : "kube-scheduler: ") + after.scheduling_message +
              (after.karpenter_reason.empty() ? std::string() : " Karpenter: " + after.karpenter_reason + ": " + after.karpenter_text);
      }
      questions.push_back(verdict(def, "fix", after.all_bound ? 1 : 0, fb,
                                  after.all_bound ? "" : "Fix the mechanism your diagnosis names; the re-run's messages say what still holds the pod."));
      fix_run = {{"fix", f.id}, {"change", change}, {"scheduled", after.all_bound}, {"pod", after.pod_name},
                 {"bound_at_s", after.bound_at_s}, {"pods_pending", after.pods_pending}};
      fix_scenario = sc;
    }
  }

  double points = 0, max_points = 0;
  bool all = true;
  for (const auto& q : questions) {
    points += q.at("points").get<double>();
    max_points += q.at("max_points").get<double>();
    all = all && q.at("correct").get<bool>();
  }
  Json out{{"score", max_points > 0 ? points / max_points : 0.0},
           {"correct", all},
           {"questions", questions},
           {"fix_run", fix_run},
           {"simulated", {{"observation", observation_json(v.run)}}}};
  if (!fix_scenario.is_null()) out["fix_scenario"] = fix_scenario;
  return out;
}

Json explain(const Json& def, std::uint64_t seed, const GradeContext& context) {
  Variant v = load(def, seed, context);
  const Json items = evidence_items(def, v.run);
  const Json& c = def.at("causes").at(v.cause);
  std::string text = "Layer: " + layer_text(def, c.at("layer").get<std::string>()) + ". Root cause: " + c.at("text").get<std::string>() + ". " +
                     cause_explain(def, v.cause, v) + "\n\nThe signals that confirm it in this run:";
  for (const auto& k : v.key) {
    text += "\n- " + def.at("evidence").at(k).at("label").get<std::string>() + ": " + item_text(items, k) + " (" +
            def.at("evidence").at(k).at("shows").get<std::string>() + ")";
  }
  text += "\n\nEvery Pending pod shows some signals whatever the cause: the pending count, kube-scheduler's 'Insufficient nvidia.com/gpu' when the nodes are full. They say the pod waits, not why. " +
          def.at("lesson_note").get<std::string>();
  const std::string fix = working_fix(v.cause);
  return {{"text", text},
          {"answers", {{"layer", c.at("layer")}, {"cause", v.cause}, {"evidence", v.key}, {"fix", fix}}},
          {"simulated", {{"observation", observation_json(v.run)}}}};
}

}  // namespace gpuscale::exercise3
