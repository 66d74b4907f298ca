// KAI Scheduler's own unit-test fixtures, reproduced as snapshots (tests/data/kai/*.json, listed in
// tests/data/kai/index.json) and run through the same path as `gpuscale schedule`: every task's status
// and node must be what upstream's test expects.
#include <filesystem>
#include <set>

#include "gpuscale/api.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

Json load(const std::string& relative) { return Json::parse(testing::read_text(relative)); }

// Runs one fixture; returns the mismatches in words.
std::vector<std::string> run_fixture(const Json& fixture) {
  Json snapshot = fixture.at("snapshot");
  if (fixture.contains("actions")) {
    snapshot["kai"] = snapshot.value("kai", Json::object());
    snapshot["kai"]["actions"] = fixture.at("actions");
  }
  const Json out = api::schedule(snapshot.dump());
  std::map<std::string, Json> by_task, by_job;
  for (const Json& job : out.at("jobs")) {
    by_job[job.at("name").get<std::string>()] = job;
    for (const Json& t : job.at("tasks")) by_task[t.at("name").get<std::string>()] = t;
  }
  std::vector<std::string> wrong;
  const Json expect = fixture.at("expect");
  for (const auto& [name, want] : expect.value("tasks", Json::object()).items()) {
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
  }
  for (const auto& [name, want] : expect.value("jobs", Json::object()).items()) {
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
      for (const std::string& w : wrong) INFO(w);
      std::string all;
      for (const std::string& w : wrong) all += w + "\n";
      INFO(all);
      CHECK(wrong.empty());
      ++ran;
    }
  }
  CHECK(ran > 0);
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
