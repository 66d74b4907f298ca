// KAI Scheduler's own unit-test fixtures, reproduced as snapshots (tests/data/kai/*.json, listed in
// tests/data/kai/index.json) and run through the same path as `gpuscale schedule`: every task's status
// and node must be what upstream's test expects (where upstream asserts only a pod's topology domain,
// its node's labels: expect.tasks.<pod>.nodeLabels).
#include <filesystem>
#include <set>

#include "gpuscale/api.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

Json load(const std::string& relative) { return Json::parse(testing::read_text(relative)); }

Json cycle(Json snapshot, const Json& fixture) {
  snapshot["kai"] = snapshot.value("kai", Json::object());
  if (fixture.contains("actions")) snapshot["kai"]["actions"] = fixture.at("actions");
  // Upstream's tests build their sessions with SchedulerParams left zero: no scheduling signatures
  // (the scheduler's flag defaults them on), and GlobalDefaultStalenessGracePeriod 0, so a gang is
  // evicted in the cycle it is first seen stale (stalegangeviction_test.go overrides it to 60 s: its
  // fixtures say so).
  if (!snapshot["kai"].contains("useSchedulingSignatures")) snapshot["kai"]["useSchedulingSignatures"] = false;
  if (!snapshot["kai"].contains("stalenessGracePeriodSeconds")) snapshot["kai"]["stalenessGracePeriodSeconds"] = 0;
  // test_utils CreateFakeSession: OverrideMaxNumberConsolidationPreemptees(-1), no restriction.
  if (!snapshot["kai"].contains("maxConsolidationPreemptees")) snapshot["kai"]["maxConsolidationPreemptees"] = -1;
  return api::schedule(snapshot.dump());
}

// integration_tests_utils.RunTests between rounds: a Releasing or Pipelined pod is re-created Pending
// (no node), a Binding one is Running on its node; any other keeps its status and node (Failed,
// Succeeded, Gated and StuckInReleasing pods stay as they are).
Json next_round(Json snapshot, const Json& out) {
  std::map<std::string, Json> by_task;
  for (const Json& job : out.at("jobs"))
    for (const Json& t : job.at("tasks")) by_task[t.at("name").get<std::string>()] = t;
  for (Json& job : snapshot.at("jobs"))
    for (Json& t : job.at("tasks")) {
      const Json& o = by_task.at(t.at("name").get<std::string>());
      const std::string st = o.at("status").get<std::string>();
      if (st == "Releasing" || st == "Pipelined" || st == "Pending") {
        t["state"] = "pending";
        t.erase("node");
      } else if (st == "Failed" || st == "Succeeded" || st == "Gated" || st == "StuckInReleasing") {
        t["state"] = st == "Failed" ? "failed" : st == "Succeeded" ? "succeeded" : st == "Gated" ? "gated" : "stuckInReleasing";
        if (o.at("node").is_null()) t.erase("node");
        else t["node"] = o.at("node");
      } else {
        t["state"] = "running";
        t["node"] = o.at("node");
      }
    }
  return snapshot;
}

// The snapshot's own pods as a result (what a freshly built session shows, no action run), with each
// job's fit error from the last cycle: upstream's prepareSessionForMatch keeps the jobs' JobFitErrors.
Json as_result(const Json& snapshot, const Json& last) {
  std::map<std::string, Json> errors;
  for (const Json& job : last.at("jobs")) errors[job.at("name").get<std::string>()] = job;
  Json jobs = Json::array();
  for (const Json& job : snapshot.at("jobs")) {
    Json tasks = Json::array();
    for (const Json& t : job.at("tasks")) {
      std::string st = t.value("state", "pending");
      st[0] = static_cast<char>(st[0] - 'a' + 'A');
      tasks.push_back({{"name", t.at("name")}, {"status", st}, {"node", t.value("node", Json(nullptr))}});
    }
    Json out = {{"name", job.at("name")}, {"tasks", tasks}};
    const auto e = errors.find(job.at("name").get<std::string>());
    if (e != errors.end())
      for (const char* key : {"reason", "message"})
        if (e->second.contains(key)) out[key] = e->second.at(key);
    jobs.push_back(std::move(out));
  }
  return {{"jobs", jobs}, {"log", Json::array()}};
}

std::vector<std::string> compare(const Json& fixture, const Json& out);

// Runs one fixture; returns the mismatches in words. A fixture with "rounds" is one of upstream's
// integration tests: rounds.untilMatch cycles, each followed by next_round, then the expectations on the
// result, then rounds.afterMatch more cycles that must each keep them.
std::vector<std::string> run_fixture(const Json& fixture) {
  if (!fixture.contains("rounds")) return compare(fixture, cycle(fixture.at("snapshot"), fixture));
  Json snapshot = fixture.at("snapshot");
  Json last = {{"jobs", Json::array()}};
  for (int i = 0; i < fixture.at("rounds").at("untilMatch").get<int>(); ++i) {
    last = cycle(snapshot, fixture);
    snapshot = next_round(snapshot, last);
  }
  std::vector<std::string> wrong = compare(fixture, as_result(snapshot, last));
  for (int i = 0; i < fixture.at("rounds").at("afterMatch").get<int>() && wrong.empty(); ++i) {
    const Json out = cycle(snapshot, fixture);
    for (std::string& w : compare(fixture, out)) wrong.push_back("after round " + std::to_string(i + 1) + ": " + w);
    snapshot = next_round(snapshot, out);
  }
  return wrong;
}

std::vector<std::string> compare(const Json& fixture, const Json& out) {
  std::map<std::string, Json> by_task, by_job;
  for (const Json& job : out.at("jobs")) {
    by_job[job.at("name").get<std::string>()] = job;
    for (const Json& t : job.at("tasks")) by_task[t.at("name").get<std::string>()] = t;
  }
  std::vector<std::string> wrong;
  const Json expect = fixture.at("expect");
  const Json want_tasks = expect.value("tasks", Json::object());
  const Json want_jobs = expect.value("jobs", Json::object());
  for (const auto& [name, want] : want_tasks.items()) {
    const auto it = by_task.find(name);
    if (it == by_task.end()) {
      wrong.push_back("no task " + name);
      continue;
    }
    const Json& got = it->second;
    if (want.contains("status") && got.at("status") != want.at("status"))
      wrong.push_back(name + ": status " + got.at("status").dump() + ", upstream " + want.at("status").dump());
    if (want.contains("node") && !want.at("node").get<std::string>().empty() && got.at("node") != want.at("node"))
      wrong.push_back(name + ": node " + got.at("node").dump() + ", upstream " + want.at("node").dump());
    // Where upstream asserts only a task's topology domain (allocate_multi_topology_test.go
    // assertDomainCount): its node must carry these label values.
    const Json labels = want.value("nodeLabels", Json::object());
    for (const auto& [key, value] : labels.items()) {
      const Json* has = nullptr;
      for (const Json& n : fixture.at("snapshot").at("nodes"))
        if (got.at("node") == n.at("name") && n.contains("labels") && n.at("labels").contains(key)) has = &n.at("labels").at(key);
      if (!has || *has != value)
        wrong.push_back(name + ": node " + got.at("node").dump() + " has " + key + "=" + (has ? has->dump() : "(none)") + ", upstream " + value.dump());
    }
  }
  for (const auto& [name, want] : want_jobs.items()) {
    const auto it = by_job.find(name);
    if (it == by_job.end()) {
      wrong.push_back("no job " + name);
      continue;
    }
    // Upstream's tests compare common_info.JobFitErrorsToDetailedMessage: "\n<reason>.\n<message>." for one error.
    const std::string rendered = "\n" + it->second.value("reason", "") + ".\n" + it->second.value("message", "") + ".";
    if (want.contains("message") && rendered != want.at("message").get<std::string>())
      wrong.push_back(name + ": message " + Json(rendered).dump() + ", upstream " + want.at("message").dump());
  }
  if (!wrong.empty()) wrong.push_back("log: " + out.at("log").dump());
  return wrong;
}

}  // namespace

TEST_CASE("KAI fixtures: upstream's unit tests through gpuscale schedule", "[kai][fixtures]") {
  const Json index = load("tests/data/kai/index.json");
  REQUIRE(index.is_array());
  REQUIRE(index.size() >= 10);
  std::size_t ran = 0;
  for (const Json& entry : index) {
    const std::string file = entry.get<std::string>();
    const Json fixture = load("tests/data/kai/" + file);
    DYNAMIC_SECTION(file) {
      INFO(fixture.value("source", file));
      const std::vector<std::string> wrong = run_fixture(fixture);
      std::string all;
      for (const std::string& w : wrong) all += w + "\n";
      INFO(all);
      if (fixture.contains("lab_differs")) {
        // A known difference, explained in the fixture (docs/schedule.md, "Where the lab differs").
        WARN(file + ": the lab differs from upstream: " + fixture.at("lab_differs").get<std::string>() + "\n" + all);
      } else {
        CHECK(wrong.empty());
      }
      ++ran;
    }
  }
  CHECK(ran > 0);
  std::size_t differs = 0;
  for (const Json& entry : index) differs += load("tests/data/kai/" + entry.get<std::string>()).contains("lab_differs") ? 1 : 0;
  CHECK(differs == 0);  // a known difference must be explained in its fixture and counted here
}

#ifndef __EMSCRIPTEN__
TEST_CASE("KAI fixtures: the index lists every fixture file", "[kai][fixtures]") {
  std::set<std::string> files, listed;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(GPUSCALE_SOURCE_DIR) + "/tests/data/kai"))
    if (entry.path().extension() == ".json" && entry.path().filename() != "index.json") files.insert(entry.path().filename().string());
  for (const Json& e : load("tests/data/kai/index.json")) listed.insert(e.get<std::string>());
  CHECK(files == listed);
}
#endif
