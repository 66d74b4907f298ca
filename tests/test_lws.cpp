// Multi-pod model servers (a LeaderWorkerSet per pool) in whole runs: placed pod by pod by
// kube-scheduler (the 7-of-8 trap) or all or nothing by KAI Scheduler, serving only once every member
// runs, and recreated as a group when one member goes. Plus the two cross-layer traps of a group: a
// Cluster Autoscaler scale-up that leaves it half placed (kubernetes/autoscaler#5170) and a Karpenter
// consolidation that moves one member and so restarts all of it; the KAI queue-limit scale-up
// (KAI-Scheduler#1615) and two tenants sharing a GPU pool.
#include <catch2/catch.hpp>

#include <string>

#include "gpuscale/errors.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::read_text;

namespace {

Json lws_doc() { return Json::parse(read_text("scenarios/golden-lws-7-of-8.json")); }

// The same scenario with the group's pods under KAI, in a queue whose quota covers both groups.
Json lws_kai_doc() {
  Json doc = lws_doc();
  Json& worker = doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"];
  worker["schedulerName"] = "kai-scheduler";
  worker["labels"] = Json{{"kai.scheduler/queue", "inference"}};
  doc["cluster"]["kai"] = Json::parse(R"({"queues": [
      {"name": "root", "resources": {"gpu": {"quota": -1, "limit": -1}, "cpu": {"quota": -1, "limit": -1}, "memory": {"quota": -1, "limit": -1}}},
      {"name": "inference", "parentQueue": "root",
       "resources": {"gpu": {"quota": 40, "limit": -1}, "cpu": {"quota": -1, "limit": -1}, "memory": {"quota": -1, "limit": -1}}}]})");
  return doc;
}

Json ca_doc() { return Json::parse(read_text("scenarios/golden-ca-half-placed-group.json")); }

// golden-lws-7-of-8 with one replica on five starting nodes and WhenEmptyOrUnderutilized: kube-scheduler
// spreads the group's 8 pods of 2 GPUs (LeastAllocated scores CPU and memory), so two nodes get one
// member each and the batch pod joins one of them; the other holds one member alone.
Json lws_consolidation_doc() {
  Json doc = lws_doc();
  doc["autoscaler"]["max_replicas"] = 1;  // one replica: nothing else serves while it restarts
  doc["cluster"]["initial_nodes"][0]["count"] = 5;
  doc["cluster"]["nodepools"][0]["spec"]["disruption"] = Json{{"consolidationPolicy", "WhenEmptyOrUnderutilized"}, {"consolidateAfter", "30m"}};
  return doc;
}

// The NodePool's GPU limit: 32 holds the four starting nodes and nothing more.
void limit_gpus(Json& doc, const std::string& gpus) { doc["cluster"]["nodepools"][0]["spec"]["limits"]["nvidia.com/gpu"] = gpus; }

const DecisionRecord* first(const RunResult& r, const std::string& controller, const std::string& part, double after_s = -1) {
  for (const auto& d : r.decisions) {
    if (d.t_s > after_s && d.controller == controller && d.explanation.find(part) != std::string::npos) return &d;
  }
  return nullptr;
}

std::int64_t count(const RunResult& r, const std::string& controller, const std::string& part, double from_s = -1, double to_s = 1e12) {
  std::int64_t n = 0;
  for (const auto& d : r.decisions) {
    n += d.t_s >= from_s && d.t_s <= to_s && d.controller == controller && d.explanation.find(part) != std::string::npos ? 1 : 0;
  }
  return n;
}

InputError parse_error(const Json& doc) {
  try {
    parse_scenario(doc);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("the scenario was accepted");
  return InputError("", "");
}

}  // namespace

TEST_CASE("kube-scheduler places a LeaderWorkerSet group pod by pod: 7 of 8 bind, and Karpenter launches a node for the 8th alone", "[lws]") {
  const RunResult r = run_simulation(parse_scenario(lws_doc()));
  // The second group (HPA scale-up) finds 14 free GPUs for its 8 pods of 2.
  const DecisionRecord* partial = first(r, "lifecycle", "7 of its 8 LeaderWorkerSet pods bound");
  REQUIRE(partial != nullptr);
  const double t = partial->t_s;
  CHECK(count(r, "kube-scheduler", "bound to node", t, t) == 7);
  CHECK(count(r, "kube-scheduler", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu", t, t) == 1);
  // Karpenter sees the one pending member and launches one NodeClaim for it.
  const DecisionRecord* launch = first(r, "karpenter.provisioner", "1 pending pods", t);
  REQUIRE(launch != nullptr);
  CHECK(launch->explanation.find("NodeClaim 1 of 1 for pods") != std::string::npos);
  // The 7 bound pods hold 14 GPUs for nothing until the 8th binds on the new node (at least its boot).
  const DecisionRecord* eighth = first(r, "kube-scheduler", "bound to node 4", t);
  REQUIRE(eighth != nullptr);
  CHECK(eighth->t_s - t > 180);  // real_world node startup: 3–6 min to register, then the GPU stack
  CHECK(r.summary.partial_group_gpu_hours == Approx(14 * (eighth->t_s - t) / 3600).epsilon(1e-9));
  // The group serves only after all of it runs: the longest start includes the wait, the load and warm-up.
  CHECK(r.summary.time_to_ready_max_s >= eighth->t_s - t + 300 + 60);
  // Deterministic.
  const RunResult again = run_simulation(parse_scenario(lws_doc()));
  CHECK(again.summary.partial_group_gpu_hours == r.summary.partial_group_gpu_hours);
  CHECK(again.summary.num_completed == r.summary.num_completed);
}

TEST_CASE("under KAI a LeaderWorkerSet group is one PodGroup with minMember its size: all of it binds in one cycle or none", "[lws][kai-sim]") {
  const RunResult r = run_simulation(parse_scenario(lws_kai_doc()));
  CHECK(r.summary.partial_group_gpu_hours == 0);
  CHECK(count(r, "lifecycle", "LeaderWorkerSet pods bound") == 0);
  const DecisionRecord* gang = first(r, "kai-scheduler", "required for gang scheduling");
  REQUIRE(gang != nullptr);
  CHECK(gang->explanation.find("PodGroup pg-vllm-group-1") != std::string::npos);
  // Karpenter still sees every member as unschedulable and provisions for the whole gang in one batch.
  const DecisionRecord* batch = first(r, "karpenter.provisioner", "8 pending pods", gang->t_s - 1);
  REQUIRE(batch != nullptr);
  // Every member of the second group binds at one instant.
  const DecisionRecord* bind = first(r, "kai-scheduler", "(PodGroup pg-vllm-group-1", gang->t_s);
  REQUIRE(bind != nullptr);
  CHECK(count(r, "kai-scheduler", "(PodGroup pg-vllm-group-1", bind->t_s, bind->t_s) == 8);
  CHECK(count(r, "kai-scheduler", "(PodGroup pg-vllm-group-1", bind->t_s + 0.5) == 0);
}

TEST_CASE("the 7-of-8 trap with the NodePool at its limit: kube-scheduler's 7 pods hold 14 GPUs to the end, KAI holds none", "[lws][kai-sim]") {
  Json kube = lws_doc();
  limit_gpus(kube, "32");
  const RunResult k = run_simulation(parse_scenario(kube));
  const DecisionRecord* partial = first(k, "lifecycle", "7 of its 8 LeaderWorkerSet pods bound");
  REQUIRE(partial != nullptr);
  CHECK(first(k, "kube-scheduler", "bound to node 4") == nullptr);  // no fifth node: the limit
  CHECK(k.summary.partial_group_gpu_hours == Approx(14 * (3600 - partial->t_s) / 3600).epsilon(1e-9));

  Json kai = lws_kai_doc();
  limit_gpus(kai, "32");
  const RunResult a = run_simulation(parse_scenario(kai));
  CHECK(a.summary.partial_group_gpu_hours == 0);
  CHECK(first(a, "kai-scheduler", "(PodGroup pg-vllm-group-1") == nullptr);  // nothing of the gang binds
  // What kube-scheduler's partial group burns is paid for: more GPU-hours requested than under KAI.
  CHECK(k.summary.cluster.gpu_hours_requested > a.summary.cluster.gpu_hours_requested + 14 * 0.5);
}

TEST_CASE("a LeaderWorkerSet group that loses one member is recreated whole (RecreateGroupOnPodRestart)", "[lws]") {
  Json doc = lws_doc();
  // The starting nodes are spot; at 1,500 s the cloud takes the oldest back (node 0, members of group 0 on it).
  doc["cluster"]["nodepools"][0]["spec"]["template"]["spec"]["requirements"][1]["values"] = Json::array({"spot", "on-demand"});
  doc["cluster"]["initial_nodes"][0]["capacity_type"] = "spot";
  doc["cluster"]["spot_reclaims"] = Json::parse(R"([{"at_s": 1500, "instance_type": "p5.48xlarge", "fraction": 0.25}])");
  const RunResult r = run_simulation(parse_scenario(doc));
  CHECK(r.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Interrupted)] >= 1);
  // Group 0 terminates as one: its members on the other nodes get their SIGTERM at the same time.
  const DecisionRecord* term = first(r, "lifecycle", "replica 0 (Ready) evicted (Interrupted)", 1499);
  REQUIRE(term != nullptr);
  CHECK(term->t_s == Approx(1500));
  // A new group replaces it and serves after a whole cold start.
  const DecisionRecord* rebound = first(r, "kube-scheduler", "(vllm) bound to node", term->t_s);
  REQUIRE(rebound != nullptr);
  CHECK(r.summary.time_to_ready_max_s >= 300 + 60);
}

TEST_CASE("Cluster Autoscaler adds the one node its group's maxSize allows and leaves a LeaderWorkerSet group half placed (kubernetes/autoscaler#5170)", "[lws]") {
  const Json doc = ca_doc();
  const Json& group = doc["cluster"]["cluster_autoscaler"]["nodeGroups"][0];
  const int max_size = group["maxSize"].get<int>();
  const int initial = doc["cluster"]["initial_nodes"][0]["count"].get<int>();
  const int gpus = doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["gpus"].get<int>();
  REQUIRE(max_size - initial == 1);  // room for one of the second group's two nodes
  const RunResult r = run_simulation(parse_scenario(doc));
  // The HPA's second group: both members unschedulable, CA's binpacking wants a node for each and the
  // group's max size caps it at one; CA has no notion of the group, so it scales up anyway.
  const DecisionRecord* up = first(r, "cluster-autoscaler", "2 to help");
  REQUIRE(up != nullptr);
  CHECK(up->reason == "TriggeredScaleUp");
  CHECK(up->explanation.find("first fit: 1 new node(s) for 1 pods (1 left: max size " + std::to_string(max_size) + ")") != std::string::npos);
  CHECK(r.summary.cluster.nodes_launched == max_size);
  // Once it is on its way, and after, the other member is at max size: no further scale-up.
  const DecisionRecord* at_max = first(r, "cluster-autoscaler", "the group is at max size", up->t_s);
  REQUIRE(at_max != nullptr);
  CHECK(at_max->reason == "NotTriggerScaleUp");
  std::int64_t scale_ups = 0;
  for (const auto& d : r.decisions) scale_ups += d.controller == "cluster-autoscaler" && d.reason == "TriggeredScaleUp" ? 1 : 0;
  CHECK(scale_ups == 1);
  // The new node comes up (boot and GPU stack: minutes), one member binds, the other stays Pending.
  const DecisionRecord* partial = first(r, "lifecycle", "1 of its 2 LeaderWorkerSet pods bound", up->t_s);
  REQUIRE(partial != nullptr);
  CHECK(partial->t_s - up->t_s > 180);
  CHECK(count(r, "kube-scheduler", "(vllm) bound to node " + std::to_string(initial) + " (", partial->t_s, partial->t_s) == 1);
  CHECK(count(r, "kube-scheduler", "(vllm) bound to node", partial->t_s + 0.5) == 0);
  CHECK(first(r, "cluster-autoscaler", "1 pods fit the template but the group is at max size", partial->t_s) != nullptr);
  // The bound member holds its node's GPUs to the end serving nothing: the group is never Ready, and the
  // full node is not a scale-down candidate (GPU 8/8 requested).
  CHECK(r.summary.partial_group_gpu_hours == Approx(gpus * (3600 - partial->t_s) / 3600).epsilon(1e-9));
  CHECK(r.summary.time_to_ready_max_s == 0);  // no replica created during the run became Ready
  for (std::size_t i = 0; i < r.series.t_s.size(); ++i) CHECK(r.series.ready_replicas[i] <= 1);
  CHECK(first(r, "cluster-autoscaler", "scale-down:") == nullptr);

  // With room for both nodes the same scale-up makes the group whole: it is partly placed only between
  // the two nodes' boots.
  Json room = doc;
  room["cluster"]["cluster_autoscaler"]["nodeGroups"][0]["maxSize"] = max_size + 1;
  const RunResult w = run_simulation(parse_scenario(room));
  const DecisionRecord* up2 = first(w, "cluster-autoscaler", "2 to help");
  REQUIRE(up2 != nullptr);
  CHECK(up2->explanation.find("first fit: 2 new node(s) for 2 pods;") != std::string::npos);
  CHECK(w.summary.partial_group_gpu_hours > 0);
  CHECK(w.summary.partial_group_gpu_hours < r.summary.partial_group_gpu_hours / 10);
  CHECK(w.summary.time_to_ready_max_s >= 300 + 60);  // the group served, after its cold start
  CHECK(w.summary.num_completed > r.summary.num_completed);
}

TEST_CASE("Karpenter consolidates the node holding one member of a LeaderWorkerSet group, and the whole group restarts", "[lws]") {
  const Json doc = lws_consolidation_doc();
  const int size = doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["size"].get<int>();
  const RunResult r = run_simulation(parse_scenario(doc));
  // consolidateAfter runs from the last pod event (the t = 0 bindings): 30 min later the node with one
  // pod has the best savings ratio (price / (1 + 1)); its pod fits elsewhere, so it is a delete.
  const DecisionRecord* d = first(r, "karpenter.disruption", "SingleNodeConsolidation: node ");
  REQUIRE(d != nullptr);
  CHECK(d->reason == "Underutilized");
  CHECK(d->t_s >= 1800);
  const std::size_t at = d->explanation.find("SingleNodeConsolidation: node ") + std::string("SingleNodeConsolidation: node ").size();
  const std::string node = d->explanation.substr(at, d->explanation.find(' ', at) - at);
  CHECK(d->explanation.find("node " + node + " ($55.04/h, 1 pod): every pod fits on other nodes") != std::string::npos);
  // That node held one member of the group and nothing else.
  CHECK(count(r, "kube-scheduler", "(vllm) bound to node " + node + " (", 0, 0) == 1);
  CHECK(count(r, "kube-scheduler", "bound to node " + node + " (", 0, 0) == 1);
  // Its drain evicts that one pod, and the group goes as one: replica 0 is evicted (Underutilized), the
  // requests it held fail, and a new group of every member is placed.
  const DecisionRecord* removed = first(r, "karpenter", "node " + node + " (p5.48xlarge, on-demand, gpu-h100) removed: Underutilized; 1 pods evicted");
  REQUIRE(removed != nullptr);
  CHECK(r.summary.cluster.pod_evictions == 1);
  CHECK(r.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Underutilized)] == 1);
  const DecisionRecord* evicted = first(r, "lifecycle", "replica 0 (Ready) evicted (Underutilized)");
  REQUIRE(evicted != nullptr);
  CHECK(evicted->t_s == removed->t_s);
  CHECK(r.summary.requests_failed_by_cause[static_cast<int>(FailureCause::Consolidation)] > 0);
  CHECK(count(r, "kube-scheduler", "(vllm) bound to node", evicted->t_s) == size);
  // The serving gap: no Ready replica from the eviction until the new group has loaded and warmed up.
  CHECK(r.summary.time_to_ready_max_s >= 300 + 60);
  double back = -1;
  for (std::size_t i = 0; i < r.series.t_s.size(); ++i) {
    if (r.series.t_s[i] <= evicted->t_s) continue;
    if (r.series.ready_replicas[i] > 0) {
      back = r.series.t_s[i];
      break;
    }
  }
  CHECK(back - evicted->t_s >= 300 + 60);

  // What it cost against the same run with karpenter.sh/do-not-disrupt on the workerTemplate, which
  // keeps every node a member runs on out of consolidation: one node-hour's fraction saved, paid for in
  // failed requests and a cold start.
  Json kept = doc;
  kept["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["annotations"] = Json{{"karpenter.sh/do-not-disrupt", "true"}};
  const RunResult k = run_simulation(parse_scenario(kept));
  const DecisionRecord* skipped = first(k, "karpenter.disruption", "do-not-disrupt pod", 1799);
  REQUIRE(skipped != nullptr);
  CHECK(skipped->explanation.find("candidates: none") != std::string::npos);
  CHECK(first(k, "karpenter.disruption", "SingleNodeConsolidation: node ") == nullptr);
  CHECK(k.summary.num_replica_evictions == 0);
  CHECK(k.summary.requests_failed_by_cause[static_cast<int>(FailureCause::Consolidation)] == 0);
  CHECK(k.summary.cluster.node_hours > r.summary.cluster.node_hours);
  CHECK(k.summary.cluster.node_cost_usd > r.summary.cluster.node_cost_usd);
  CHECK(k.summary.num_completed > r.summary.num_completed);
  CHECK(k.summary.num_dropped < r.summary.num_dropped);
}

TEST_CASE("a LeaderWorkerSet is read in its real shape and checked with field paths", "[lws]") {
  const Json base = lws_doc();
  Json doc = base;
  doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["size"] = 3;
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/spec/leaderWorkerTemplate/size");
  doc = base;
  doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["gpus"] = 4;
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/spec/leaderWorkerTemplate/workerTemplate/gpus");
  doc = base;
  doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["restartPolicy"] = "None";
  CHECK(parse_error(doc).message().find("RecreateGroupOnPodRestart") != std::string::npos);
  doc = base;
  doc["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["leaderTemplate"] = Json::object();
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/spec/leaderWorkerTemplate/leaderTemplate");
  doc = base;
  doc["leaderWorkerSet"]["spec"]["replicas"] = 2;
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/spec/replicas");
  doc = base;
  doc["leaderWorkerSet"]["apiVersion"] = "leaderworkerset.x-k8s.io/v1beta1";
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/apiVersion");
  doc = base;
  doc["leaderWorkerSet"]["spec"]["startupPolicy"] = "LeaderReady";
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/spec/startupPolicy");
  doc = base;
  doc["cluster"]["inference_pod"] = Json{{"gpus", 2}};
  CHECK(parse_error(doc).path() == "/cluster/inference_pod");
  // The 405B profile needs 16 GPUs: as one pod it fits no p5 (8 GPUs), and says so at scheduling time.
  doc = base;
  doc.erase("leaderWorkerSet");
  const Scenario s = parse_scenario(doc);
  CHECK(s.pools[0].pod.gpus == 16);
}

TEST_CASE("pods a KAI queue limit holds back still look unschedulable, and Karpenter launches nodes they never use (KAI-Scheduler#1615)", "[kai-sim]") {
  Json doc = Json::parse(read_text("scenarios/golden-kai-two-tenants.json"));
  doc["cluster"]["workloads"] = Json::array();
  doc["cluster"]["nodepools"][0]["spec"]["limits"]["nvidia.com/gpu"] = "64";
  doc["cluster"]["kai"]["queues"][1]["spec"]["resources"]["gpu"]["limit"] = 8;  // inference: 4 replicas of 2 GPUs at most
  const RunResult r = run_simulation(parse_scenario(doc));
  const DecisionRecord* held = first(r, "kai-scheduler", "OverLimit");
  REQUIRE(held != nullptr);
  // Karpenter launches for the held-back pod: the four starting nodes had room, so nothing needed it.
  const DecisionRecord* launch = first(r, "karpenter.provisioner", "NodeClaim", held->t_s - 1);
  REQUIRE(launch != nullptr);
  CHECK(r.summary.cluster.nodes_launched > 4);
  // No inference pod beyond the limit ever binds: at most 4 replicas.
  CHECK(r.summary.peak_replicas > 4);  // the HPA asked for more
  std::int64_t binds = count(r, "kai-scheduler", "allocated by KAI Scheduler");
  CHECK(binds == 4);
}

TEST_CASE("two tenants on one GPU pool: training borrows idle GPUs over its quota and is reclaimed when inference scales up, at a cost in start time", "[kai-sim]") {
  const Json doc = Json::parse(read_text("scenarios/golden-kai-two-tenants.json"));
  const RunResult r = run_simulation(parse_scenario(doc));
  // At t = 0 the training pods (quota 0) take the GPUs inference does not use.
  CHECK(count(r, "kai-scheduler", "(training) allocated by KAI Scheduler", 0, 0) == 3);
  // Inference scales up past the free GPUs: KAI reclaims a training pod for it.
  const DecisionRecord* reclaim = first(r, "kai-scheduler", "evicted by reclaim for pg-vllm-");
  REQUIRE(reclaim != nullptr);
  const std::string job = reclaim->explanation.substr(reclaim->explanation.rfind("pg-vllm-"));
  // The inference pod binds only once the training pod has stopped: its preStop (checkpoint) 90 s.
  const DecisionRecord* bind = first(r, "kai-scheduler", "(PodGroup " + job + ",", reclaim->t_s - 1);
  REQUIRE(bind != nullptr);
  CHECK(bind->t_s - reclaim->t_s >= 90);
  CHECK(bind->t_s - reclaim->t_s <= 92);
  CHECK(r.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Preempted)] == 0);  // no inference replica lost
  // Against the same pool without training, new replicas take longer to become Ready.
  Json alone = doc;
  alone["cluster"]["workloads"] = Json::array();
  const RunResult b = run_simulation(parse_scenario(alone));
  CHECK(first(b, "kai-scheduler", "evicted by reclaim") == nullptr);
  CHECK(r.summary.time_to_ready_mean_s > b.summary.time_to_ready_mean_s + 10);
}

namespace {

// Two groups of the 405B model, each 2 pods of 8 GPUs (TP8 in a node, PP2 across two), under KAI, on
// four p5s: two in us-east-1a, one in us-east-1b, one in us-east-1c. The LeaderWorkerSet's
// annotations ask KAI to keep a group inside one zone (`placement`: required or preferred).
Json zoned_kai_doc(const char* placement) {
  Json doc = lws_kai_doc();
  Json& lws = doc["leaderWorkerSet"];
  lws["spec"]["leaderWorkerTemplate"]["size"] = 2;
  lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["gpus"] = 8;
  lws["metadata"]["annotations"] = Json{{"kai.scheduler/topology", "zones"},
                                        {std::string("kai.scheduler/topology-") + placement + "-placement", "topology.kubernetes.io/zone"}};
  doc["cluster"]["kai"]["topologies"] = Json::parse(R"([{"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology", "metadata": {"name": "zones"},
      "spec": {"levels": [{"nodeLabel": "topology.kubernetes.io/zone"}, {"nodeLabel": "kubernetes.io/hostname"}]}}])");
  doc["cluster"]["initial_nodes"] = Json::parse(R"([
      {"instance_type": "p5.48xlarge", "owner": "gpu-h100", "zone": "us-east-1a", "count": 2},
      {"instance_type": "p5.48xlarge", "owner": "gpu-h100", "zone": "us-east-1b", "count": 1},
      {"instance_type": "p5.48xlarge", "owner": "gpu-h100", "zone": "us-east-1c", "count": 1}])");
  doc["cluster"].erase("workloads");
  doc["autoscaler"] = Json{{"strategy", "fixed"}, {"replicas", 2}};
  doc["duration_s"] = 1200;
  return doc;
}

}  // namespace

TEST_CASE("a group whose required topology no domain can hold stays Pending beside free GPUs, and Karpenter sees room", "[lws][kai-sim]") {
  const RunResult r = run_simulation(parse_scenario(zoned_kai_doc("required")));
  // Group 0 takes the only zone with 16 free GPUs; group 1's 16 GPUs are free only across two zones.
  CHECK(count(r, "kai-scheduler", "(PodGroup pg-vllm-group-0", 0, 0) == 2);
  CHECK(first(r, "kai-scheduler", "(PodGroup pg-vllm-group-1, queue") == nullptr);
  // KAI's own words (job_filtering.go, job_errors.go): each zone's room in pods, then the requirement.
  const DecisionRecord* held = first(r, "kai-scheduler", "topology zones, requirement topology.kubernetes.io/zone couldn't be satisfied for job");
  REQUIRE(held != nullptr);
  INFO(held->explanation);
  CHECK(held->explanation.find("pg-vllm-group-1>") != std::string::npos);
  CHECK(held->explanation.find("<us-east-1a>: node-group us-east-1a can allocate only 0 of 2 required pods") != std::string::npos);
  CHECK(held->explanation.find("<us-east-1b>: node-group us-east-1b can allocate only 1 of 2 required pods") != std::string::npos);
  // Karpenter does not read KAI's topology: to its simulation the pending members fit the nodes in
  // us-east-1b and us-east-1c, so it launches nothing, and the group waits to the end.
  const DecisionRecord* karpenter = first(r, "karpenter.provisioner", "2 fit existing capacity: node 2 ← pods [2], node 3 ← pods [3]; no new NodeClaim");
  REQUIRE(karpenter != nullptr);
  CHECK(karpenter->reason == "FitsExistingCapacity");
  CHECK(r.summary.cluster.nodes_launched == 4);  // the starting four only
  CHECK(first(r, "karpenter.provisioner", "NodeClaim 1 of") == nullptr);
  // Nor does consolidation free the two nodes: Karpenter keeps them for the pods it nominated there.
  CHECK(first(r, "karpenter.disruption", "node 2: nominated for pending pods") != nullptr);
  CHECK(r.summary.partial_group_gpu_hours == 0);  // the gang holds nothing while it waits

  // Preferred placement: no zone holds the group, so KAI places it across two (at once, on the free nodes).
  const RunResult p = run_simulation(parse_scenario(zoned_kai_doc("preferred")));
  CHECK(count(p, "kai-scheduler", "(PodGroup pg-vllm-group-1", 0, 0) == 2);
  // kube-scheduler ignores KAI's annotations: the same required document binds both groups at once.
  Json kube = zoned_kai_doc("required");
  kube["leaderWorkerSet"]["spec"]["leaderWorkerTemplate"]["workerTemplate"]["schedulerName"] = "default-scheduler";
  const RunResult k = run_simulation(parse_scenario(kube));
  CHECK(count(k, "kube-scheduler", "(vllm) bound to node", 0, 0) == 4);
}

TEST_CASE("a LeaderWorkerSet's topology annotations name a Topology of cluster.kai and its levels", "[lws]") {
  Json doc = zoned_kai_doc("required");
  doc["leaderWorkerSet"]["metadata"]["annotations"]["kai.scheduler/topology"] = "racks";
  InputError e = parse_error(doc);
  CHECK(e.path() == "/leaderWorkerSet/metadata/annotations/kai.scheduler~1topology");
  CHECK(e.message().find("not a topology of /cluster/kai/topologies") != std::string::npos);
  doc = zoned_kai_doc("required");
  doc["leaderWorkerSet"]["metadata"]["annotations"]["kai.scheduler/topology-required-placement"] = "example.com/rack";
  e = parse_error(doc);
  CHECK(e.path() == "/leaderWorkerSet/metadata/annotations/kai.scheduler~1topology-required-placement");
  CHECK(e.message().find("topology.kubernetes.io/zone, kubernetes.io/hostname") != std::string::npos);
  doc = zoned_kai_doc("required");
  doc["leaderWorkerSet"]["metadata"]["annotations"].erase("kai.scheduler/topology");
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/metadata/annotations/kai.scheduler~1topology");
  doc = zoned_kai_doc("required");
  doc["leaderWorkerSet"]["metadata"]["annotations"]["kai.scheduler/topology"] = 3;
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/metadata/annotations/kai.scheduler~1topology");
  doc = zoned_kai_doc("required");
  doc["leaderWorkerSet"]["metadata"]["owner"] = "me";
  CHECK(parse_error(doc).path() == "/leaderWorkerSet/metadata/owner");
}
