// `gpuscale schedule`: one cycle over a snapshot, kube-scheduler vs KAI Scheduler (real-systems.md §5),
// and the snapshot's input errors.
#include <set>

#include "gpuscale/api.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

// A queue as KAI's Helm chart writes the defaults: everything unlimited but what is given.
Json queue(const std::string& name, double gpu_quota, const std::string& parent = "", double gpu_limit = -1, int priority = 100) {
  Json q = {{"name", name},
            {"priority", priority},
            {"resources",
             {{"gpu", {{"quota", gpu_quota}, {"limit", gpu_limit}, {"overQuotaWeight", 1}}},
              {"cpu", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}},
              {"memory", {{"quota", -1}, {"limit", -1}, {"overQuotaWeight", 1}}}}}};
  if (!parent.empty()) q["parentQueue"] = parent;
  return q;
}

Json node(const std::string& name, int gpus, Json labels = Json::object()) {
  return {{"name", name}, {"gpus", gpus}, {"cpu", "192"}, {"memory", "2000Gi"}, {"labels", labels}};
}

Json pending(int gpus) { return {{"gpus", gpus}, {"state", "pending"}}; }
Json running(int gpus, const std::string& on) { return {{"gpus", gpus}, {"state", "running"}, {"node", on}}; }

Json job(const std::string& name, const std::string& q, Json tasks, int priority = 50) {
  return {{"name", name}, {"queue", q}, {"priority", priority}, {"tasks", std::move(tasks)}};
}

Json schedule(const Json& snapshot) { return api::schedule(snapshot.dump()); }

const Json& job_of(const Json& out, const std::string& name) {
  for (const Json& j : out.at("jobs"))
    if (j.at("name") == name) return j;
  throw std::runtime_error("no job " + name);
}

int count_status(const Json& job, const std::string& status) {
  int n = 0;
  for (const Json& t : job.at("tasks")) n += t.at("status") == status ? 1 : 0;
  return n;
}

// Eight 1-GPU pods of one model server; the cluster has 7 free GPUs.
Json seven_of_eight(const std::string& scheduler) {
  Json tasks = Json::array();
  for (int i = 0; i < 8; ++i) tasks.push_back(pending(1));
  Json other = Json::array({running(1, "p5-a")});
  return {{"scheduler", scheduler},
          {"nodes", {node("p5-a", 8)}},
          {"queues", {queue("root", -1), queue("inference", 8, "root")}},
          {"jobs", {job("llama-405b", "inference", tasks, 50), job("other", "inference", other, 50)}}};
}

}  // namespace

TEST_CASE("schedule: the 7-of-8 trap — kube-scheduler places 7 pods of the group, KAI none", "[schedule][kai]") {
  const Json kube = schedule(seven_of_eight("default-scheduler"));
  const Json& kj = job_of(kube, "llama-405b");
  CHECK(count_status(kj, "Binding") == 7);
  CHECK(count_status(kj, "Pending") == 1);
  CHECK(kj.at("status") == "partly placed");
  CHECK(kj.at("message") == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  REQUIRE(kube.at("warnings").size() == 1);
  CHECK(kube.at("warnings")[0].get<std::string>().find("7 of 8 pods placed") != std::string::npos);

  const Json kai = schedule(seven_of_eight("kai-scheduler"));
  const Json& gj = job_of(kai, "llama-405b");
  CHECK(count_status(gj, "Pending") == 8);  // all or nothing
  CHECK(gj.at("status") == "pending");
  CHECK(gj.at("reason") == "PodSchedulingErrors");
  CHECK(gj.at("message") ==
        "Resources were found for 7 pods while 8 are required for gang scheduling. Additional pods cannot be scheduled due to: "
        "no nodes with enough resources were found: 1 node(s) didn't have enough resources: GPUs.");
}

TEST_CASE("schedule: a node that advertises no GPUs (not yet initialized, or a CPU node) takes no GPU task", "[schedule][kai]") {
  // A gang of 8 × 2 GPUs: 6 GPUs free on one node, the other's device plugin not up yet. Room for 3, not 8.
  Json snap = {{"scheduler", "kai-scheduler"},
               {"nodes", Json::array({node("a", 6), node("b", 0)})},
               {"queues", Json::array({queue("root", -1), queue("inference", 40, "root")})},
               {"jobs", Json::array({job("gang", "inference", Json::array({pending(2), pending(2), pending(2), pending(2),
                                                                             pending(2), pending(2), pending(2), pending(2)}), 125)})}};
  snap["jobs"][0]["minMember"] = 8;
  const Json out = schedule(snap);
  const Json& g = job_of(out, "gang");
  CHECK(count_status(g, "Pending") == 8);
  CHECK(g.at("message").get<std::string>().find("Resources were found for 3 pods while 8 are required") == 0);
}

TEST_CASE("schedule: a plain Deployment (inference, non-preemptible) in a queue with quota 0 stays Pending", "[schedule][kai]") {
  Json s = {{"nodes", {node("n1", 8)}},
            {"queues", {queue("default-parent-queue", 0), queue("default-queue", 0, "default-parent-queue")}},
            {"jobs", {{{"name", "vllm-0"}, {"queue", "default-queue"}, {"priorityClassName", "inference"}, {"tasks", Json::array({pending(2)})}}}}};
  const Json out = schedule(s);
  const Json& j = job_of(out, "vllm-0");
  CHECK(j.at("status") == "pending");
  CHECK(j.at("reason") == "NonPreemptibleOverQuota");
  CHECK(j.at("message") ==
        "Non-preemptible workload is over quota. Workload requested 2 GPUs, but default-queue quota is 0 GPUs, while 0 GPUs are already "
        "allocated for non-preemptible pods. Use a preemptible workload to go over quota.");
  // The fix: a GPU quota for the inference queue.
  s["queues"] = Json::array({queue("default-parent-queue", -1), queue("default-queue", 2, "default-parent-queue")});
  CHECK(job_of(schedule(s), "vllm-0").at("status") == "allocated");
}

TEST_CASE("schedule: a queue limit refuses the job on every level of the chain (OverLimit)", "[schedule][kai]") {
  const Json s = {{"nodes", {node("n1", 8)}},
                  {"queues", {queue("dept", -1, "", 4), queue("team", -1, "dept")}},
                  {"jobs", {job("train", "team", {pending(4), pending(2)})}}};
  const Json out = schedule(s);
  const Json& j = job_of(out, "train");
  CHECK(j.at("reason") == "OverLimit");
  CHECK(j.at("message").get<std::string>().rfind("dept quota has reached the allowable limit of GPUs. Limit is 4 GPUs", 0) == 0);
}

TEST_CASE("schedule: reclaim takes over-quota GPUs back from a training queue for inference", "[schedule][kai]") {
  // Training holds all 8 GPUs (quota 4, so 4 over); inference (quota 4) needs 4.
  Json train = Json::array();
  for (int i = 0; i < 8; ++i) train.push_back(running(1, "n1"));
  Json train_jobs = Json::array();
  for (int i = 0; i < 8; ++i) train_jobs.push_back(job("train-" + std::to_string(i), "training", Json::array({running(1, "n1")}), 50));
  Json jobs = train_jobs;
  jobs.push_back({{"name", "vllm"}, {"queue", "inference"}, {"priorityClassName", "inference"}, {"minMember", 4},
                  {"tasks", {pending(1), pending(1), pending(1), pending(1)}}});
  const Json s = {{"nodes", {node("n1", 8)}},
                  {"queues", {queue("root", -1), queue("inference", 4, "root"), queue("training", 4, "root")}},
                  {"jobs", jobs}};
  const Json out = schedule(s);
  const Json& v = job_of(out, "vllm");
  CHECK(v.at("status") == "pipelined");
  CHECK(count_status(v, "Pipelined") == 4);
  // Exactly the over-quota four are reclaimed, the newest first.
  REQUIRE(out.at("victims").size() == 4);
  for (const Json& victim : out.at("victims")) {
    CHECK(victim.at("action") == "reclaim");
    CHECK(victim.at("for") == "vllm");
  }
  int releasing = 0;
  for (int i = 0; i < 8; ++i) releasing += count_status(job_of(out, "train-" + std::to_string(i)), "Releasing");
  CHECK(releasing == 4);
  CHECK(count_status(job_of(out, "train-0"), "Running") == 1);  // the oldest keep running
  // In-quota resources are never reclaimed: with training at its quota, nothing is taken.
  Json at_quota = s;
  at_quota["jobs"] = Json::array();
  for (int i = 0; i < 4; ++i) at_quota["jobs"].push_back(job("train-" + std::to_string(i), "training", Json::array({running(1, "n1")}), 50));
  at_quota["jobs"].push_back({{"name", "vllm"}, {"queue", "inference"}, {"priorityClassName", "inference"}, {"minMember", 5},
                              {"tasks", {pending(1), pending(1), pending(1), pending(1), pending(1)}}});
  const Json none = schedule(at_quota);
  CHECK(none.at("victims").empty());
  CHECK(job_of(none, "vllm").at("status") == "pending");
}

TEST_CASE("schedule: scheduling signatures skip a job no easier than one of the same constraints that failed", "[schedule][kai]") {
  // Training holds all four 2-GPU nodes, 4 GPUs over its quota. Inference (quota 4) asks first for
  // one 4-GPU pod (no node has 4: no victims can make room), then for the same again, then for one GPU.
  Json jobs = Json::array();
  for (int i = 0; i < 8; ++i) jobs.push_back(job("train-" + std::to_string(i), "training", Json::array({running(1, "n" + std::to_string(i / 2))})));
  jobs.push_back(job("a", "inference", Json::array({pending(4)}), 125));
  jobs.push_back(job("b", "inference", Json::array({pending(4)}), 125));
  jobs.push_back(job("c", "inference", Json::array({pending(1)}), 125));
  for (std::size_t k = 8; k < 11; ++k) jobs[k]["createdOrder"] = static_cast<int>(k);
  Json s = {{"nodes", {node("n0", 2), node("n1", 2), node("n2", 2), node("n3", 2)}},
            {"queues", {queue("root", -1), queue("inference", 4, "root"), queue("training", 4, "root")}},
            {"jobs", jobs}};
  const auto logged = [](const Json& out, const std::string& text) {
    for (const Json& line : out.at("log"))
      if (line.get<std::string>().find(text) != std::string::npos) return true;
    return false;
  };
  const Json on = schedule(s);  // the scheduler's default
  CHECK(logged(on, "reclaim: b skipped: no easier to place than a job of queue inference"));
  CHECK_FALSE(logged(on, "reclaim: a skipped"));
  CHECK(job_of(on, "c").at("status") == "pipelined");  // smaller, so easier: tried, and placed
  s["kai"] = {{"useSchedulingSignatures", false}};
  const Json off = schedule(s);
  CHECK_FALSE(logged(off, "skipped: no easier"));
  CHECK(job_of(off, "c").at("status") == "pipelined");
}

TEST_CASE("schedule: preempt evicts only strictly lower priority in the same queue", "[schedule][kai]") {
  const auto snapshot = [](int victim_priority) {
    return Json{{"nodes", {node("n1", 4)}},
                {"queues", {queue("root", -1), queue("q", -1, "root")}},
                {"jobs", {job("low", "q", Json::array({running(4, "n1")}), victim_priority), job("high", "q", Json::array({pending(4)}), 75)}}};
  };
  const Json out = schedule(snapshot(50));
  REQUIRE(out.at("victims").size() == 1);
  CHECK(out.at("victims")[0].at("action") == "preempt");
  CHECK(job_of(out, "high").at("status") == "pipelined");
  const Json equal = schedule(snapshot(75));
  CHECK(equal.at("victims").empty());
  CHECK(job_of(equal, "high").at("status") == "pending");
}

TEST_CASE("schedule: a task lands on room being released as Pipelined", "[schedule][kai]") {
  const Json s = {{"nodes", {node("n1", 4)}},
                  {"queues", {queue("root", -1), queue("q", -1, "root")}},
                  {"jobs",
                   {job("old", "q", Json::array({{{"gpus", 4}, {"state", "releasing"}, {"node", "n1"}}})),
                    job("new", "q", Json::array({pending(2)}))}}};
  const Json out = schedule(s);
  CHECK(job_of(out, "new").at("status") == "pipelined");
  CHECK(job_of(out, "new").at("tasks")[0].at("node") == "n1");
}

TEST_CASE("schedule: consolidation makes room only for a preemptible job (FilterNonPreemptible)", "[schedule][kai]") {
  // As below: moving one 2-GPU training pod beside the other would free a node for a 4-GPU job. With
  // allocate and consolidation only, a preemptible job gets it; a non-preemptible one is not considered.
  const auto snapshot = [](bool preemptible) {
    Json big = job("big", "q", Json::array({pending(4)}), preemptible ? 50 : 125);
    big["preemptibility"] = preemptible ? "preemptible" : "non-preemptible";
    return Json{{"kai", {{"actions", {"allocate", "consolidation"}}}},
                {"nodes", {node("n0", 4), node("n1", 4)}},
                {"queues", {queue("root", -1), queue("q", -1, "root")}},
                {"jobs", {job("train-a", "q", Json::array({running(2, "n0")})), job("train-b", "q", Json::array({running(2, "n1")})), big}}};
  };
  const Json moved = schedule(snapshot(true));
  REQUIRE(moved.at("victims").size() == 1);
  CHECK(moved.at("victims")[0].at("action") == "consolidation");
  CHECK(job_of(moved, "big").at("status") == "pipelined");
  const Json kept = schedule(snapshot(false));
  CHECK(kept.at("victims").empty());
  CHECK(job_of(kept, "big").at("status") == "pending");
}

TEST_CASE("schedule: consolidation moves a pod only if its job is placed again within its queue's limit", "[schedule][kai]") {
  // Two 4-GPU nodes, each half taken by a 2-GPU training pod of queue q; a 4-GPU job of q waits.
  // Consolidation can move one pod beside the other and free a whole node, but the moved pod is
  // allocated again through AllocateJob (common/action.go TryToVirtuallyAllocatePreemptorAndGetVictims),
  // so its queue's limit counts it once more: with a limit of 6 the job (4) and the two pods (2 + 2)
  // are over it, and nothing moves.
  const auto snapshot = [](double limit) {
    return Json{{"nodes", {node("n0", 4), node("n1", 4)}},
                {"queues", {queue("root", -1), queue("q", -1, "root", limit)}},
                {"jobs",
                 {job("train-a", "q", Json::array({running(2, "n0")})), job("train-b", "q", Json::array({running(2, "n1")})),
                  job("big", "q", Json::array({pending(4)}))}}};
  };
  const auto queue_allocated = [](const Json& out) {
    for (const Json& q : out.at("queues"))
      if (q.at("name") == "q") return q.at("allocated").at("gpu").get<double>();
    throw std::runtime_error("no queue q");
  };
  const Json moved = schedule(snapshot(8));
  REQUIRE(moved.at("victims").size() == 1);
  CHECK(moved.at("victims")[0].at("action") == "consolidation");
  CHECK(job_of(moved, "big").at("status") == "pipelined");
  const std::string from = moved.at("victims")[0].at("node");
  const std::string victim = moved.at("victims")[0].at("job");
  CHECK(job_of(moved, victim).at("tasks")[0].at("status") == "Pipelined");
  CHECK(job_of(moved, victim).at("tasks")[0].at("node") != from);
  CHECK(queue_allocated(moved) == 8);

  const Json held = schedule(snapshot(6));
  CHECK(held.at("victims").empty());
  CHECK(job_of(held, "big").at("status") == "pending");
  CHECK(job_of(held, "big").at("reason") == "OverLimit");
  CHECK(queue_allocated(held) == 4);
  CHECK(queue_allocated(held) <= 6);
}

TEST_CASE("schedule: required topology keeps a gang inside one rack, or pending", "[schedule][kai]") {
  const auto snapshot = [](int free_per_node) {
    Json jobs = Json::array();
    Json tasks = Json::array();
    for (int i = 0; i < 4; ++i) tasks.push_back(pending(4));
    jobs.push_back({{"name", "pp"}, {"queue", "q"}, {"tasks", tasks},
                    {"topologyConstraint", {{"topology", "dc"}, {"requiredTopologyLevel", "rack"}}}});
    Json nodes = Json::array();
    int used = 0;
    for (const char* rack : {"r1", "r2"})
      for (int i = 0; i < 4; ++i) {
        const std::string name = std::string(rack) + "-n" + std::to_string(i);
        nodes.push_back(node(name, 8, {{"rack", rack}}));
        if (8 - free_per_node > 0 && std::string(rack) == "r1")
          jobs.push_back(job("busy-" + std::to_string(used++), "q", Json::array({running(8 - free_per_node, name)})));
      }
    return Json{{"nodes", nodes}, {"queues", {queue("root", -1), queue("q", -1, "root")}},
                {"topologies", {{{"name", "dc"}, {"levels", {{{"nodeLabel", "rack"}}, {{"nodeLabel", "kubernetes.io/hostname"}}}}}}},
                {"jobs", jobs}};
  };
  // r1 has 4 free per node (16), r2 32: both hold the 16 GPUs; bin packing picks the fuller r1.
  const Json out = schedule(snapshot(4));
  const Json& pp = job_of(out, "pp");
  CHECK(pp.at("status") == "allocated");
  for (const Json& t : pp.at("tasks")) CHECK(t.at("node").get<std::string>().rfind("r1-", 0) == 0);
}

// plugins/topology job_filtering.go sortTree: a domain's children are ordered by the largest ratio of the
// job's request to their free room over every resource, fullest first; not by free GPUs alone.
TEST_CASE("schedule: topology packs the domain the job would fill most over every resource (sortTree)", "[schedule][kai]") {
  Json cpu_bound = node("r1-n0", 8, {{"rack", "r1"}});
  cpu_bound["cpu"] = "48";
  const Json task = {{"gpus", 1}, {"cpu", "40"}, {"state", "pending"}};
  const Json snap = {{"nodes", {cpu_bound, node("r2-n0", 2, {{"rack", "r2"}})}},
                     {"queues", {queue("root", -1), queue("q", -1, "root")}},
                     {"topologies", {{{"name", "dc"}, {"levels", {{{"nodeLabel", "rack"}}}}}}},
                     {"jobs", {{{"name", "j"}, {"queue", "q"}, {"tasks", {task}},
                                {"topologyConstraint", {{"topology", "dc"}, {"requiredTopologyLevel", "rack"}}}}}}};
  // r1: max(1/8 GPUs, 40/48 cores) = 0.83; r2: max(1/2, 40/192) = 0.5. Free GPUs alone would pick r2.
  const Json out = schedule(snap);
  CHECK(job_of(out, "j").at("tasks").at(0).at("node") == "r1-n0");
}

// getJobAllocatableDomains: with a preferred level only, every level from it up to the root is tried,
// deepest first; a spine that holds the gang comes before the whole cluster.
TEST_CASE("schedule: a preferred rack that cannot hold the gang falls back to its spine before the cluster", "[schedule][kai]") {
  const auto n = [](const std::string& name, const char* spine, const char* rack) { return node(name, 8, {{"spine", spine}, {"rack", rack}}); };
  Json tasks = Json::array({pending(8), pending(8)});
  const Json snap = {{"nodes", {n("a-r3", "s2", "r3"), n("b-r1", "s1", "r1"), n("c-r2", "s1", "r2"), n("d-r4", "s2", "r4")}},
                     {"queues", {queue("root", -1), queue("q", -1, "root")}},
                     {"topologies", {{{"name", "dc"}, {"levels", {{{"nodeLabel", "spine"}}, {{"nodeLabel", "rack"}}}}}}},
                     {"jobs", {{{"name", "gang"}, {"queue", "q"}, {"minMember", 2}, {"tasks", tasks},
                                {"topologyConstraint", {{"topology", "dc"}, {"preferredTopologyLevel", "rack"}}}},
                               job("busy", "q", Json::array({running(8, "d-r4")}))}}};
  const Json out = schedule(snap);
  const Json& gang = job_of(out, "gang");
  CHECK(gang.at("status") == "allocated");
  std::set<std::string> nodes;
  for (const Json& t : gang.at("tasks")) nodes.insert(t.at("node").get<std::string>());
  // No rack holds two pods; spine s1 does (s2 has one free node), so a-r3, first by name, is not used.
  CHECK(nodes == std::set<std::string>{"b-r1", "c-r2"});
}

// common.go isNodePartOfTopology: a node without a label of every level is outside the topology, so a
// job with a topology constraint never lands there, not even with a preferred level only.
TEST_CASE("schedule: a node missing a topology label takes no job with a topology constraint", "[schedule][kai]") {
  const Json snap = {{"kai", {{"actions", {"allocate"}}}},
                     {"nodes", {node("racked", 8, {{"rack", "r1"}}), node("unracked", 8)}},
                     {"queues", {queue("root", -1), queue("q", -1, "root")}},
                     {"topologies", {{{"name", "dc"}, {"levels", {{{"nodeLabel", "rack"}}}}}}},
                     {"jobs", {{{"name", "j"}, {"namespace", "ml"}, {"queue", "q"}, {"tasks", {pending(4)}},
                                {"topologyConstraint", {{"topology", "dc"}, {"preferredTopologyLevel", "rack"}}}},
                               job("busy", "q", Json::array({running(8, "racked")}))}}};
  const Json out = schedule(snap);
  const Json& j = job_of(out, "j");
  CHECK(j.at("status") == "pending");
  CHECK(j.at("reason") == "PodSchedulingErrors");
  CHECK(j.at("message") == "topology dc, requirement  couldn't be satisfied for job <ml/j>: not enough resources in r1 to allocate the job");
  // (r1: the lowest domain holding every node inside the topology.) Without the constraint the same job
  // takes the unlabelled node.
  Json plain = snap;
  plain["jobs"][0].erase("topologyConstraint");
  CHECK(job_of(schedule(plain), "j").at("tasks").at(0).at("node") == "unracked");
}

TEST_CASE("schedule: stale gang eviction evicts a gang below minMember after the grace period", "[schedule][kai]") {
  // Two of four pods run, the other two were recreated and wait (job_info.go IsStale: a pod set whose
  // active used pods, Releasing included, are fewer than its minMember).
  Json s = {{"nodes", {node("n1", 8)}},
            {"queues", {queue("root", -1), queue("q", -1, "root")}},
            {"jobs", {{{"name", "gang"}, {"queue", "q"}, {"minMember", 4}, {"staleForSeconds", 61},
                       {"tasks", {running(1, "n1"), running(1, "n1"), {{"gpus", 1}, {"state", "pending"}}, {{"gpus", 1}, {"state", "pending"}}}}}}}};
  s["kai"] = {{"actions", {"stalegangeviction"}}};
  const Json out = schedule(s);
  CHECK(out.at("victims").size() == 2);
  CHECK(count_status(job_of(out, "gang"), "Releasing") == 2);
  CHECK(out.at("log").back().get<std::string>().find("is below its minMember 4 with 2 pods active") != std::string::npos);
  s["jobs"][0]["staleForSeconds"] = 30;
  CHECK(schedule(s).at("victims").empty());
  // Pods still being released count as used: two running and two releasing are not stale.
  s["jobs"][0]["staleForSeconds"] = 61;
  s["jobs"][0]["tasks"][2] = {{"gpus", 1}, {"state", "releasing"}, {"node", "n1"}};
  s["jobs"][0]["tasks"][3] = {{"gpus", 1}, {"state", "releasing"}, {"node", "n1"}};
  CHECK(schedule(s).at("victims").empty());
}

TEST_CASE("schedule: the snapshot's errors name the field", "[schedule][errors]") {
  const auto error_of = [](const Json& s) { return testing::input_error([&] { schedule(s); }); };
  Json s = seven_of_eight("kai-scheduler");
  s["jobs"][0]["tasks"][0]["node"] = "nowhere";
  s["jobs"][0]["tasks"][0]["state"] = "running";
  CHECK(error_of(s).path() == "/jobs/0/tasks/0/node");
  s = seven_of_eight("kai-scheduler");
  s["jobs"][0]["minMember"] = 9;
  CHECK(error_of(s).path() == "/jobs/0/minMember");
  s = seven_of_eight("kai-scheduler");
  s["jobs"][0]["queue"] = "root";
  CHECK(error_of(s).message().find("only leaf queues hold workloads") != std::string::npos);
  s = seven_of_eight("kai-scheduler");
  s["queues"][0]["parentQueue"] = "inference";
  CHECK(error_of(s).message().find("cycle") != std::string::npos);
  s = seven_of_eight("kai-scheduler");
  s["nodes"][0]["gpu"] = 8;
  CHECK(error_of(s).path() == "/nodes/0/gpu");
  s = seven_of_eight("kai-scheduler");
  s["scheduler"] = "volcano";
  CHECK(error_of(s).path() == "/scheduler");
}

TEST_CASE("schedule: the same snapshot gives the same bytes", "[schedule][determinism]") {
  const Json s = seven_of_eight("kai-scheduler");
  CHECK(dump_json(schedule(s)) == dump_json(schedule(s)));
}

TEST_CASE("a kube-scheduler snapshot takes a KubeSchedulerConfiguration: MostAllocated over GPUs packs a small pod onto the fuller node", "[schedule]") {
  const char* const base = R"({"scheduler": "default-scheduler",
    "nodes": [{"name": "a", "gpus": 8, "cpu": "64", "memory": "512Gi"}, {"name": "b", "gpus": 8, "cpu": "64", "memory": "512Gi"}],
    "jobs": [{"name": "running", "tasks": [{"name": "r0", "gpus": 6, "cpu": "8", "memory": "64Gi", "state": "running", "node": "b"}]},
             {"name": "small", "tasks": [{"name": "s0", "gpus": 1, "cpu": "8", "memory": "64Gi"}]}]})";
  const auto node_of_small = [](const Json& doc) { return job_of(schedule(doc), "small").at("tasks")[0].at("node").get<std::string>(); };
  Json doc = Json::parse(base);
  CHECK(node_of_small(doc) == "a");  // LeastAllocated over cpu and memory: the emptier node
  doc["kubeScheduler"] = Json::parse(R"({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated",
      "resources": [{"name": "nvidia.com/gpu", "weight": 1}]}}}]}]})");
  CHECK(node_of_small(doc) == "b");
  doc["scheduler"] = "kai-scheduler";
  CHECK(testing::input_error([&] { schedule(doc); }).path() == "/kubeScheduler");
}

// ---- sub-groups: upstream's SubGroupSet tree (subgroup_info, allocation_info.go, eviction_info.go) ----

namespace {

// A PodGroup of two sub-groups of `per` pods of 4 GPUs each, with the given minSubGroup (< 0: unset).
Json two_replicas(int min_sub_group, int per = 1) {
  Json tasks = Json::array();
  for (const char* g : {"replica-a", "replica-b"})
    for (int i = 0; i < per; ++i) tasks.push_back({{"gpus", 4}, {"subGroup", g}});
  Json j = {{"name", "disagg"}, {"queue", "q"}, {"priority", 50}, {"tasks", tasks},
            {"subGroups", {{{"name", "replica-a"}, {"minMember", per}}, {{"name", "replica-b"}, {"minMember", per}}}}};
  if (min_sub_group >= 0) j["minSubGroup"] = min_sub_group;
  return j;
}

}  // namespace

TEST_CASE("schedule: minSubGroup — a PodGroup needs only that many of its sub-groups, the rest come elastically", "[schedule][kai]") {
  // Room for one replica of 4 GPUs: with every sub-group required the gang waits whole; with
  // minSubGroup 1 one replica binds and the other waits as an elastic member.
  Json s = {{"nodes", {node("n1", 4)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", {two_replicas(-1)}}};
  const Json all = schedule(s);
  CHECK(count_status(job_of(all, "disagg"), "Pending") == 2);
  // (isGangScheduling: no pod set asks for more than one pod, so KAI words it as a pod's failure.)
  CHECK(job_of(all, "disagg").at("message").get<std::string>().rfind("Resources were not found for pod default/disagg-1 due to: ", 0) == 0);
  s["jobs"][0] = two_replicas(1);
  const Json one = schedule(s);
  CHECK(count_status(job_of(one, "disagg"), "Binding") == 1);
  CHECK(count_status(job_of(one, "disagg"), "Pending") == 1);
  CHECK(job_of(one, "disagg").at("tasks").at(0).at("status") == "Binding");  // replica-a: the name decides between equals
  // With room for both, both bind in one cycle (the second in the elastic phase).
  s["nodes"] = Json::array({node("n1", 8)});
  CHECK(count_status(job_of(schedule(s), "disagg"), "Binding") == 2);
}

TEST_CASE("schedule: nested sub-groups — each replica inside one rack, the PodGroup inside one zone", "[schedule][kai]") {
  // Two racks of two 4-GPU nodes in zone z1, one rack in z2. A replica is a SubGroupSet (parent of a
  // leader and a worker PodSet) that requires a rack; the PodGroup requires a zone.
  Json nodes = Json::array();
  const std::pair<const char*, const char*> where[] = {{"r1", "z1"}, {"r1", "z1"}, {"r2", "z1"}, {"r2", "z1"}, {"r3", "z2"}, {"r3", "z2"}};
  for (int i = 0; i < 6; ++i) nodes.push_back(node("n" + std::to_string(i), 4, {{"rack", where[i].first}, {"zone", where[i].second}}));
  const Json rack = {{"topology", "dc"}, {"requiredTopologyLevel", "rack"}};
  Json sub_groups = Json::array();
  Json tasks = Json::array();
  for (const char* r : {"replica-1", "replica-2"}) {
    sub_groups.push_back({{"name", r}, {"topologyConstraint", rack}});
    for (const char* role : {"leader", "worker"}) {
      const std::string name = std::string(r) + "-" + role;
      sub_groups.push_back({{"name", name}, {"parent", r}, {"minMember", 1}});
      tasks.push_back({{"name", name + "-0"}, {"gpus", 4}, {"subGroup", name}});
    }
  }
  Json s = {{"nodes", nodes},
            {"queues", {queue("root", -1), queue("q", -1, "root")}},
            {"topologies", {{{"name", "dc"}, {"levels", {{{"nodeLabel", "zone"}}, {{"nodeLabel", "rack"}}}}}}},
            {"jobs", {{{"name", "pd"}, {"queue", "q"}, {"topologyConstraint", {{"topology", "dc"}, {"requiredTopologyLevel", "zone"}}},
                       {"subGroups", sub_groups}, {"tasks", tasks}}}}};
  const Json out = schedule(s);
  REQUIRE(out.at("warnings").empty());
  const Json& pd = job_of(out, "pd");
  REQUIRE(count_status(pd, "Binding") == 4);
  std::map<std::string, std::string> rack_of = {{"n0", "r1"}, {"n1", "r1"}, {"n2", "r2"}, {"n3", "r2"}, {"n4", "r3"}, {"n5", "r3"}};
  std::map<std::string, std::string> node_of;
  for (const Json& t : pd.at("tasks")) node_of[t.at("name").get<std::string>()] = t.at("node").get<std::string>();
  CHECK(rack_of[node_of["replica-1-leader-0"]] == rack_of[node_of["replica-1-worker-0"]]);
  CHECK(rack_of[node_of["replica-2-leader-0"]] == rack_of[node_of["replica-2-worker-0"]]);
  for (const auto& [task, n] : node_of) CHECK(rack_of[n] != "r3");  // zone z1 is the only zone that holds both
  // A pod that names the replica itself (a SubGroupSet) belongs to no PodSet: refused.
  Json bad = s;
  bad["jobs"][0]["tasks"][0]["subGroup"] = "replica-1";
  CHECK(testing::input_error([&] { schedule(bad); }).path() == "/jobs/0/tasks/0/subGroup");
  // A parent no sub-group is named, or a loop of parents: refused at the parent.
  bad = s;
  bad["jobs"][0]["subGroups"][1]["parent"] = "replica-9";
  CHECK(testing::input_error([&] { schedule(bad); }).path() == "/jobs/0/subGroups/1/parent");
  bad = s;
  bad["jobs"][0]["subGroups"][0]["parent"] = "replica-1-leader";
  CHECK(testing::input_error([&] { schedule(bad); }).path().find("/parent") != std::string::npos);
}

TEST_CASE("schedule: an optional sub-group (minMember 0) never holds the others back", "[schedule][kai]") {
  Json j = two_replicas(-1);
  j["subGroups"][1]["minMember"] = 0;
  Json s = {{"nodes", {node("n1", 4)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", {j}}};
  const Json out = schedule(s);
  CHECK(job_of(out, "disagg").at("tasks").at(0).at("status") == "Binding");
  CHECK(job_of(out, "disagg").at("tasks").at(1).at("status") == "Pending");
  CHECK(out.at("warnings").empty());
  // Left unset, minMember is 0 to the scheduler too, and the webhook's refusal becomes a warning.
  s["jobs"][0]["subGroups"][1].erase("minMember");
  const Json unset = schedule(s);
  CHECK(job_of(unset, "disagg").at("tasks").at(0).at("status") == "Binding");
  REQUIRE(unset.at("warnings").size() == 1);
  CHECK(unset.at("warnings")[0].get<std::string>().find("subgroup \"replica-b\": minMember is required") != std::string::npos);
}

TEST_CASE("schedule: the webhook's refusals — minMember beside minSubGroup", "[schedule][kai][errors]") {
  Json s = {{"nodes", {node("n1", 8)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", {two_replicas(1)}}};
  s["jobs"][0]["minMember"] = 2;
  const InputError e = testing::input_error([&] { schedule(s); });
  CHECK(e.path() == "/jobs/0/minSubGroup");
  CHECK(std::string(e.what()).find("mutually exclusive") != std::string::npos);
  s = {{"nodes", {node("n1", 8)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", {two_replicas(-1)}}};
  s["jobs"][0]["subGroups"][0]["minSubGroup"] = 1;
  CHECK(testing::input_error([&] { schedule(s); }).path() == "/jobs/0/subGroups/0/minSubGroup");
  // minSubGroup above the children: the webhook warns, the PodGroup can never be ready.
  s = {{"nodes", {node("n1", 8)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", {two_replicas(3)}}};
  const Json out = schedule(s);
  CHECK(count_status(job_of(out, "disagg"), "Pending") == 2);
  CHECK(job_of(out, "disagg").at("reason") == "NotReady");
  REQUIRE(out.at("warnings").size() == 1);
  CHECK(out.at("warnings")[0].get<std::string>().find("minSubGroup (3) exceeds the number of direct child SubGroups (2)") != std::string::npos);
}

TEST_CASE("schedule: preemption takes a whole surplus sub-group, not the whole job (GetTasksToEvict)", "[schedule][kai]") {
  // A train job (priority 50) holds 8 GPUs as two 4-GPU replicas; a build job (100) in the same queue
  // wants 4. With minSubGroup 1 the victim keeps a replica; with both required it loses both.
  const auto snapshot = [](int min_sub_group) {
    Json victim = two_replicas(min_sub_group);
    victim["tasks"][0] = {{"gpus", 4}, {"subGroup", "replica-a"}, {"state", "running"}, {"node", "n1"}};
    victim["tasks"][1] = {{"gpus", 4}, {"subGroup", "replica-b"}, {"state", "running"}, {"node", "n1"}};
    Json s = {{"nodes", {node("n1", 8)}},
              {"queues", {queue("root", -1), queue("q", -1, "root")}},
              {"jobs", {victim, job("build", "q", Json::array({pending(4)}), 100)}}};
    s["kai"] = {{"actions", {"allocate", "preempt"}}};
    return s;
  };
  const Json elastic = schedule(snapshot(1));
  CHECK(elastic.at("victims").size() == 1);
  CHECK(count_status(job_of(elastic, "disagg"), "Running") == 1);
  CHECK(job_of(elastic, "build").at("status") == "pipelined");
  // The last member in reverse SubGroupOrderFn order goes: with equal ratios, the later name.
  CHECK(elastic.at("victims")[0].at("task") == "disagg-1");
  const Json gang = schedule(snapshot(-1));
  CHECK(gang.at("victims").size() == 2);
  CHECK(count_status(job_of(gang, "disagg"), "Releasing") == 2);
}

TEST_CASE("schedule: stale gang eviction — its own grace period, a finished pod, failed pods", "[schedule][kai]") {
  // A gang of two whose second pod failed: 1 of minMember 2 active (stalegangeviction_test.go).
  const auto snapshot = [](double stale_for) {
    Json gang = job("gang", "q", Json::array({running(1, "n1"), {{"gpus", 1}, {"state", "failed"}, {"node", "n1"}}}));
    gang["minMember"] = 2;
    gang["staleForSeconds"] = stale_for;
    Json s = {{"nodes", {node("n1", 8)}}, {"queues", {queue("root", -1), queue("q", -1, "root")}}, {"jobs", Json::array({gang})}};
    s["kai"] = {{"actions", {"stalegangeviction"}}};
    return s;
  };
  const Json evicted = schedule(snapshot(61));
  CHECK(evicted.at("victims").size() == 1);
  CHECK(job_of(evicted, "gang").at("tasks").at(1).at("status") == "Failed");
  CHECK(schedule(snapshot(30)).at("victims").empty());   // the scheduler's 60 s grace
  Json own = snapshot(30);
  own["jobs"][0]["stalenessGracePeriod"] = "10s";           // the PodGroup's own, shorter
  CHECK(schedule(own).at("victims").size() == 1);
  own["jobs"][0]["stalenessGracePeriod"] = "-1s";           // negative: never
  own["jobs"][0]["staleForSeconds"] = 1e6;
  CHECK(schedule(own).at("victims").empty());
  own["jobs"][0]["stalenessGracePeriod"] = "1 minute";
  CHECK(testing::input_error([&] { schedule(own); }).path() == "/jobs/0/stalenessGracePeriod");
  // A Succeeded pod means the gang finished its work: never stale.
  Json done = snapshot(61);
  done["jobs"][0]["tasks"][1]["state"] = "succeeded";
  CHECK(schedule(done).at("victims").empty());
  // Seen stale for the first time (no staleForSeconds): stale for 0 s, evicted only with a 0 s grace.
  Json fresh = snapshot(-1);
  CHECK(schedule(fresh).at("victims").empty());
  fresh["kai"]["stalenessGracePeriodSeconds"] = 0;
  CHECK(schedule(fresh).at("victims").size() == 1);
}

TEST_CASE("schedule: a pod of another scheduler, pod-level topology annotations, a null node", "[schedule][kai][errors]") {
  Json s = seven_of_eight("kai-scheduler");
  s["jobs"][0]["tasks"][0]["schedulerName"] = "default-scheduler";
  CHECK(testing::input_error([&] { schedule(s); }).path() == "/jobs/0/tasks/0/schedulerName");
  s = seven_of_eight("kai-scheduler");
  s["jobs"][1]["tasks"][0]["schedulerName"] = "default-scheduler";  // running: it only takes room
  CHECK(count_status(job_of(schedule(s), "other"), "Running") == 1);
  s = seven_of_eight("kai-scheduler");
  s["jobs"][0]["tasks"][0]["annotations"] = {{"kai.scheduler/topology-required-placement", "rack"}};
  s["jobs"][0]["tasks"][0]["node"] = nullptr;
  const Json out = schedule(s);
  REQUIRE(out.at("warnings").size() == 1);
  CHECK(out.at("warnings")[0].get<std::string>().find("the scheduler reads only the PodGroup") != std::string::npos);
}
