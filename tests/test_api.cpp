// The JSON operations every front end offers (core/src/api.cpp): the error envelope, seed parsing,
// malformed input, and the documented examples.
#include <catch2/catch.hpp>

#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "test_support.hpp"
#include "exercises/exercise.hpp"
#include "scenario/scenario.hpp"

using namespace gpuscale;

namespace {

using gpuscale::testing::input_error;
using gpuscale::testing::read_text;

// A one-minute scenario on one fixed replica: enough to produce every part of a result.
const char* kSmallScenario = R"({
  "duration_s": 60,
  "workload": {"preset": "custom", "phases": [{"duration_s": 60, "rate_rps": 1}]},
  "autoscaler": {"strategy": "fixed", "replicas": 1}
})";

}  // namespace

TEST_CASE("envelope wraps results and turns every exception into an error object", "[api]") {
  SECTION("success") {
    const Json out = Json::parse(api::envelope([] { return Json{{"x", 1}}; }));
    CHECK(out == Json{{"ok", true}, {"result", {{"x", 1}}}});
  }
  SECTION("input errors keep their path and message") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw InputError("/autoscaler/hpa/maxReplicas", "is 0"); }));
    CHECK(out == Json{{"ok", false}, {"error", {{"path", "/autoscaler/hpa/maxReplicas"}, {"message", "is 0"}}}});
  }
  SECTION("internal errors become a message at the root") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw std::logic_error("boom"); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("path") == "");
    CHECK(out.at("error").at("message") == "internal error: boom");
  }
  SECTION("running out of memory is reported, not propagated") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw std::bad_alloc(); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("message") == "out of memory");
  }
  SECTION("a real operation's error") {
    const Json out = Json::parse(api::envelope([] { return api::run(R"({"colour": "red"})"); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("path") == "/colour");
    CHECK_THAT(out.at("error").at("message").get<std::string>(), Catch::Contains("unknown field"));
  }
}

TEST_CASE("parse_seed accepts whole numbers from 0 to 2^53 and nothing else", "[api]") {
  CHECK(api::parse_seed("0") == 0);
  CHECK(api::parse_seed("42") == 42);
  CHECK(api::parse_seed("007") == 7);
  CHECK(api::parse_seed("9007199254740992") == (std::uint64_t(1) << 53));
  for (const char* bad : {"", "-1", "+1", "1.5", "abc", "1e3", " 1", "1 ", "0x10", "9007199254740993",
                          "18446744073709551616", "99999999999999999999"}) {
    INFO("seed text \"" << bad << "\"");
    const InputError e = input_error([&] { api::parse_seed(bad); });
    CHECK(e.path() == "/seed");
    CHECK_FALSE(e.message().empty());
  }
}

TEST_CASE("malformed JSON is an input error that says where", "[api]") {
  const InputError e = input_error([] { api::run("{\n  \"seed\": 1,\n  oops\n}"); });
  CHECK(e.path() == "");
  CHECK_THAT(e.message(), Catch::Contains("malformed JSON"));
  CHECK_THAT(e.message(), Catch::Contains("line 3"));
  CHECK_THAT(e.message(), Catch::Contains("column"));
  CHECK_THAT(input_error([] { api::run(""); }).message(), Catch::Contains("line 1"));
  CHECK(input_error([] { api::hpa("{"); }).path() == "");
  CHECK(input_error([] { api::run("[1, 2]"); }).path() == "");
}

TEST_CASE("run returns the documented parts of a result", "[api]") {
  const Json r = api::run(kSmallScenario);
  for (const char* key : {"summary", "series", "autoscaler", "decisions", "num_events"}) CHECK(r.contains(key));
  CHECK_FALSE(r.contains("requests"));  // only on request
  CHECK(r.at("autoscaler").at("strategy") == "fixed");
  CHECK(r.at("autoscaler").at("hpa").is_null());
  CHECK(r.at("series").at("t_s").size() == 5);  // scrapes at 0, 15, 30, 45, 60 s
  CHECK(r.at("series").contains("DCGM_FI_DEV_GPU_UTIL"));
  CHECK(r.at("series").contains("kv_cache_usage_perc"));

  Json with_requests = Json::parse(kSmallScenario);
  with_requests["output"] = {{"requests", true}, {"decisions", false}};
  const Json r2 = api::run(with_requests.dump());
  CHECK_FALSE(r2.contains("decisions"));
  CHECK(r2.at("requests").size() == r2.at("summary").at("num_requests").get<std::size_t>());
  CHECK(r2.at("requests_truncated") == false);
  CHECK(r2.at("summary") == r.at("summary"));  // what is reported does not change what happens
}

TEST_CASE("hpa evaluates the documented KEDA example to 4 replicas", "[api]") {
  const Json d = api::hpa(read_text("docs/examples/hpa-keda.json"));
  CHECK(d.at("currentReplicas") == 1);
  CHECK(d.at("desiredReplicas") == 4);
  CHECK(d.at("metricDesiredReplicas") == 4);  // ceil(20 / 5)
  Json doc = Json::parse(read_text("docs/examples/hpa-keda.json"));
  doc["spec"]["maxReplicas"] = 3;
  CHECK(api::hpa(doc.dump()).at("desiredReplicas") == 3);
  doc["spec"]["colour"] = "red";
  CHECK(input_error([&] { api::hpa(doc.dump()); }).path() == "/spec/colour");
}

TEST_CASE("exercise operations load the definition and check its id and the answer text", "[api]") {
  const std::string text = read_text("exercises/ex1-bursty.json");
  CHECK(api::exercise(text, 5) == exercise1::variant(Json::parse(text), 5));

  Json other = Json::parse(text);
  other["id"] = "99";
  CHECK(input_error([&] { api::exercise(other.dump(), 1); }).path() == "/id");
  // A definition that does not fit its grader is an input error, not an internal one.
  other["id"] = "2";
  const InputError misfit = input_error([&] { api::exercise(other.dump(), 1); });
  // Exercise 1's file read as exercise 2's: the first field exercise 2's grader needs and it lacks.
  CHECK(misfit.path() == "/variant/slo_kind");
  CHECK_THAT(misfit.message(), Catch::Contains("is required"));
  other.erase("id");
  CHECK(input_error([&] { api::exercise(other.dump(), 1); }).path() == "/id");
  CHECK(input_error([] { api::exercise("[]", 1); }).path() == "");
  CHECK(input_error([] { api::explain("{", 1); }).path() == "");

  // Answers are checked before anything is simulated.
  const InputError bad = input_error([&] { api::grade(text, 1, "{\"a\": "); });
  CHECK(bad.path() == "/a");  // the value of "a" is missing
  CHECK_THAT(bad.message(), Catch::Contains("malformed JSON"));
  CHECK(input_error([&] { api::grade(text, 1, R"({"a": "twelve"})"); }).path() == "/a");
  const InputError big = input_error([&] { api::grade(text, 1, "\"" + std::string(70000, 'x') + "\""); });
  CHECK_THAT(big.message(), Catch::Contains("bytes"));
}

TEST_CASE("schema and version", "[api]") {
  CHECK(api::schema() == scenario_schema());
  CHECK(std::string(api::version()).size() > 0);
}

namespace {

// Exercise 1 on a 900 s day (fast to grade), with the given reveal policy.
std::string short_ex1(const Json& policy) {
  Json def = Json::parse(read_text("exercises/ex1-bursty.json"));
  def["base_scenario"]["duration_s"] = 900;
  def["variant"]["quiet_s"] = {{"min", 300}, {"max", 300}, {"step", 60}};
  def["variant"]["spike_s"] = {{"min", 300}, {"max", 300}, {"step", 60}};
  def["policy"] = policy;
  return def.dump();
}

Json history(std::initializer_list<double> scores, std::uint64_t seed = 2) {
  Json attempts = Json::array();
  for (double s : scores) {
    attempts.push_back({{"at", "2025-01-01T10:00:00Z"}, {"answer", {{"a", 1}}}, {"score", s}, {"revealed_before", false}});
  }
  return {{"format", "gpuscale-attempts/1"}, {"exercise", "1"}, {"seed", seed}, {"lab_version", api::version()}, {"attempts", attempts}};
}

std::string context(const Json& h, const Json& simulated = nullptr) { return Json{{"history", h}, {"simulated", simulated}}.dump(); }

}  // namespace

TEST_CASE("the policy gates the explanation: after an attempt, after N attempts or a correct one, after a correct one", "[api][policy]") {
  const std::string first = short_ex1({{"reveal", "after_attempt"}});
  const Json locked = api::explain(first, 2);
  CHECK(locked == Json{{"locked", true}, {"unlocks", "The explanation and the answers open after your first attempt."}});
  CHECK(api::explain(first, 2, "{}").at("locked") == true);
  const Json open = api::explain(first, 2, context(history({0.0})));
  CHECK(open.at("locked") == false);
  CHECK(open.contains("answers"));
  // A grade says whether, counting itself, the policy now reveals.
  const Json g = api::grade(first, 2, R"({"a": 1})");
  CHECK(g.at("revealed") == true);

  const std::string three = short_ex1({{"reveal", "after_attempts"}, {"attempts", 3}});
  CHECK(api::explain(three, 2, context(history({0.0, 0.33}))).at("locked") == true);
  CHECK_THAT(api::explain(three, 2, context(history({0.0, 0.33}))).at("unlocks").get<std::string>(), Catch::Contains("(1 more)"));
  CHECK(api::grade(three, 2, R"({"a": 1})", context(history({0.0}))).at("revealed") == false);
  CHECK(api::grade(three, 2, R"({"a": 1})", context(history({0.0, 0.0}))).at("revealed") == true);
  CHECK(api::explain(three, 2, context(history({0.0, 0.0, 0.0}))).at("locked") == false);
  CHECK(api::explain(three, 2, context(history({1.0}))).at("locked") == false);  // solved

  const std::string correct = short_ex1({{"reveal", "after_correct"}});
  CHECK(api::explain(correct, 2, context(history({0.0, 0.33, 0.67}))).at("locked") == true);
  CHECK(api::explain(correct, 2, context(history({0.0, 1.0}))).at("locked") == false);

  // Every shipped exercise states its policy, and a bad one is refused with its path.
  for (const char* f : {"exercises/ex1-bursty.json", "exercises/ex2-nodepool.json", "exercises/ex5-consolidation.json"}) {
    CHECK_NOTHROW(parse_policy(Json::parse(read_text(f))));
  }
  CHECK(input_error([] { api::exercise(short_ex1({{"reveal", "never"}}), 2); }).path() == "/policy/reveal");
  CHECK(input_error([] { api::exercise(short_ex1({{"reveal", "after_attempts"}}), 2); }).path() == "/policy/attempts");
  CHECK(input_error([] { api::exercise(short_ex1({{"reveal", "after_attempt"}, {"attempts", 2}}), 2); }).path() == "/policy/attempts");
}

TEST_CASE("the context is read strictly; simulated figures of another variant are set aside", "[api][policy]") {
  const std::string def = short_ex1({{"reveal", "after_attempt"}});
  const Json g = api::grade(def, 2, R"({"a": 1})");
  const Json& sim = g.at("simulated");
  CHECK(sim.at("exercise") == "1");
  CHECK(sim.at("seed") == 2);
  CHECK(sim.at("lab_version") == api::version());
  CHECK(api::grade(def, 2, R"({"a": 1})", context(nullptr, sim)) == g);
  Json other = sim;
  other["seed"] = 3;
  other["data"] = "not even figures";  // another variant's: ignored, simulated anew
  CHECK(api::grade(def, 2, R"({"a": 1})", context(nullptr, other)) == g);
  CHECK(input_error([&] { api::grade(def, 2, "{}", R"({"histroy": null})"); }).path() == "/context/histroy");
  CHECK(input_error([&] { api::grade(def, 2, "{}", "{oops"); }).path() == "");
  Json h = history({0.5});
  h["attempts"][0]["score"] = 2;
  CHECK(input_error([&] { api::explain(def, 2, context(h)); }).path() == "/context/history/attempts/0/score");
  CHECK(input_error([&] { api::explain(def, 2, context(history({0.5}, 7))); }).path() == "/context/history/seed");
  h = history({0.5});
  h["format"] = "attempts/2";
  CHECK(input_error([&] { api::explain(def, 2, context(h)); }).path() == "/context/history/format");
  Json s2 = sim;
  s2.erase("data");
  CHECK(input_error([&] { api::grade(def, 2, "{}", context(nullptr, s2)); }).path() == "/context/simulated/data");
}

TEST_CASE("a call that simulates nothing hands back the figures it was given", "[api][policy]") {
  // Exercise 2's explain simulates nothing: given the reference day, it returns it, so a page that
  // keeps the newest "simulated" does not lose it; given nothing, it returns no "simulated".
  const std::string def = read_text("exercises/ex2-nodepool.json");
  Json sim = {{"exercise", "2"}, {"seed", 4}, {"lab_version", api::version()},
              {"data", {{"reference", {{"node_cost_usd", 1000.0}, {"slo_attainment", 0.99}}}}}};
  const Json h = Json{{"format", "gpuscale-attempts/1"}, {"exercise", "2"}, {"seed", 4}, {"lab_version", api::version()},
                      {"attempts", Json::array({{{"at", "2026-01-01T10:00:00Z"}, {"answer", {{"nodepool", Json::object()}}}, {"score", 0.1},
                                                 {"revealed_before", false}}})}};
  const Json with = api::explain(def, 4, context(h, sim));
  REQUIRE(with.at("locked") == false);
  CHECK(with.at("simulated") == sim);
  CHECK_FALSE(api::explain(def, 4, context(h)).contains("simulated"));
}

TEST_CASE("grade_history re-grades every attempt and never trusts the recorded scores", "[api][policy]") {
  const std::string def = short_ex1({{"reveal", "after_attempt"}});
  const Json solved = api::solve(def, 2).at("answers");
  Json h = history({});
  h["attempts"].push_back({{"at", "2025-01-01T10:00:00Z"}, {"answer", {{"a", 0}}}, {"score", 0.0}, {"revealed_before", false}});
  h["attempts"].push_back({{"at", "2025-01-01T10:05:00Z"}, {"answer", solved}, {"score", 0.5}, {"revealed_before", false}});
  h["attempts"].push_back({{"at", "2025-01-01T10:09:00Z"}, {"answer", solved}, {"score", 1.0}, {"revealed_before", true}});
  const Json r = api::grade_history(def, 2, h.dump());
  REQUIRE(r.at("attempts").size() == 3);
  CHECK(r.at("attempts")[0].at("matches") == true);
  CHECK(r.at("attempts")[0].at("policy_revealed_before") == false);
  CHECK(r.at("attempts")[1].at("score") == 1.0);
  CHECK(r.at("attempts")[1].at("matches") == false);  // the recorded 0.5 is not what it earns
  CHECK(r.at("attempts")[1].at("policy_revealed_before") == true);
  CHECK(r.at("attempts")[2].at("revealed_before") == true);
  CHECK(r.at("attempts")[2].at("credit") == 0.0);
  CHECK(r.at("all_match") == false);
  // Malformed files name the path: the file's own, or an attempt's answer.
  h["attempts"][1]["answer"] = {{"a", "twelve"}};
  CHECK(input_error([&] { api::grade_history(def, 2, h.dump()); }).path() == "/attempts/1/answer/a");
  CHECK(input_error([&] { api::grade_history(def, 3, history({0.0}).dump()); }).path() == "/seed");
  CHECK(input_error([&] { api::grade_history(def, 2, R"({"format": "gpuscale-attempts/1"})"); }).path() == "/exercise");
}

TEST_CASE("run reports progress from inside the simulation, at most about 20 times", "[api][policy]") {
  std::vector<double> fractions;
  std::string last;
  const Json r = api::run(kSmallScenario, [&](double f, const std::string& label) {
    fractions.push_back(f);
    last = label;
  });
  CHECK(r == api::run(kSmallScenario));  // it observes only
  REQUIRE(fractions.size() >= 19);
  CHECK(fractions.size() <= 20);
  CHECK(fractions.back() == Approx(1.0));
  CHECK(last == "simulating: minute 1 of 1");
}
