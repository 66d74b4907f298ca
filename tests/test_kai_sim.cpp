// KAI Scheduler inside a whole run (scheduling/kai_scheduler.hpp): the replicas' pods name
// kai-scheduler, and its 1 s cycle places them by the queues of cluster.kai.
#include <catch2/catch.hpp>

#include <string>

#include "gpuscale/errors.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::read_text;

namespace {

// The golden Karpenter trap, 30 minutes, its replicas' pods under KAI in queue `queue` ("" = no label).
Json kai_doc(const std::string& queue) {
  Json doc = Json::parse(read_text("scenarios/golden-karpenter-trap.json"));
  doc["duration_s"] = 1800;
  Json pod = doc["cluster"].value("inference_pod", Json::object());
  pod["schedulerName"] = "kai-scheduler";
  if (!queue.empty()) pod["labels"] = Json{{"kai.scheduler/queue", queue}};
  doc["cluster"]["inference_pod"] = pod;
  return doc;
}

std::int64_t count(const RunResult& r, const std::string& controller, const std::string& part) {
  std::int64_t n = 0;
  for (const auto& d : r.decisions) n += d.controller == controller && d.explanation.find(part) != std::string::npos ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("under KAI a Deployment's pods in the default queue stay Pending: inference is non-preemptible and the quota is 0", "[kai-sim]") {
  const RunResult r = run_simulation(parse_scenario(kai_doc("")));
  CHECK(r.summary.num_completed == 0);
  CHECK(count(r, "kai-scheduler", "NonPreemptibleOverQuota") > 0);
  CHECK(count(r, "kai-scheduler", "allocated by KAI Scheduler") == 0);
}

TEST_CASE("under KAI with an inference queue that has a GPU quota the replicas bind on the 1 s cycle and serve", "[kai-sim]") {
  Json doc = kai_doc("inference");
  doc["cluster"]["kai"] = Json::parse(R"({"queues": [
      {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "root"},
       "spec": {"resources": {"gpu": {"quota": -1, "limit": -1}, "cpu": {"quota": -1, "limit": -1}, "memory": {"quota": -1, "limit": -1}}}},
      {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "inference"},
       "spec": {"parentQueue": "root", "resources": {"gpu": {"quota": 64, "limit": -1}, "cpu": {"quota": -1, "limit": -1},
                                                     "memory": {"quota": -1, "limit": -1}}}}]})");
  const RunResult r = run_simulation(parse_scenario(doc));
  CHECK(r.summary.num_completed > 0);
  std::int64_t binds = 0;
  for (const auto& d : r.decisions) {
    if (d.controller != "kai-scheduler" || d.explanation.find("allocated by KAI Scheduler") == std::string::npos) continue;
    ++binds;
    CHECK(d.t_s == static_cast<double>(static_cast<std::int64_t>(d.t_s)));  // on the cycle's 1 s grid
  }
  CHECK(binds > 0);
  // Deterministic.
  CHECK(run_simulation(parse_scenario(doc)).summary.num_completed == r.summary.num_completed);
}

TEST_CASE("a KAI pod's queue must be a leaf queue of cluster.kai", "[kai-sim]") {
  try {
    parse_scenario(kai_doc("nowhere"));
    FAIL("accepted a queue that does not exist");
  } catch (const InputError& e) {
    CHECK(e.path() == "/cluster/inference_pod/labels/kai.scheduler~1queue");
  }
}
