// Exercise 1 (core/src/exercise_1.cpp, exercises/ex1-bursty.json): seeded variants without answers,
// a grader whose answers come from simulating the variant, its feedback, and malformed answers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gpuscale/errors.hpp"
#include "test_support.hpp"
#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"

using namespace gpuscale;

using gpuscale::testing::check_filled;

namespace {

using gpuscale::testing::read_text;

const Json& definition() {
  static const Json d = Json::parse(read_text("exercises/ex1-bursty.json"));
  return d;
}

// The same exercise on a 900 s day (300 s quiet, 300 s burst, 300 s tail) so that the graders'
// simulations stay fast; in the full-hour variants the drops also happen in the burst's first minutes.
const Json& short_definition() {
  static const Json d = [] {
    Json def = definition();
    def["base_scenario"]["duration_s"] = 900;
    def["variant"]["quiet_s"] = {{"min", 300}, {"max", 300}, {"step", 60}};
    def["variant"]["spike_s"] = {{"min", 300}, {"max", 300}, {"step", 60}};
    return def;
  }();
  return d;
}

// Seed 2 of the short exercise: both runs drop requests the other completes, and the totals differ.
constexpr std::uint64_t kSeed = 2;

struct Solved {
  Json variant, solution;
  Scenario duty, queue;      // the variant's two scenarios, as the learner receives them
  RunResult duty_run, queue_run;
};

// solve() plus an independent simulation of the variant's two scenarios, computed once.
const Solved& solved() {
  static const Solved s = [] {
    Solved out;
    out.variant = exercise1::variant(short_definition(), kSeed);
    out.solution = exercise1::solve(short_definition(), kSeed);
    out.duty = parse_scenario(out.variant.at("scenarios").at("gpu_util"));
    out.queue = parse_scenario(out.variant.at("scenarios").at("queue_depth"));
    out.duty_run = run_simulation(out.duty);
    out.queue_run = run_simulation(out.queue);
    return out;
  }();
  return s;
}

// Ids dropped in `dropping` that `serving` completed, counted from scratch by id.
std::vector<std::uint32_t> dropped_but_served(const RunResult& dropping, const RunResult& serving) {
  std::map<std::uint32_t, const RequestRecord*> served;
  for (const auto& q : serving.requests) served[q.id] = &q;
  std::vector<std::uint32_t> ids;
  for (const auto& q : dropping.requests) {
    auto it = served.find(q.id);
    if (q.dropped_at && it != served.end() && it->second->completed_at) ids.push_back(q.id);
  }
  return ids;
}

std::string whole(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

const Json& hint(const char* key) { return short_definition().at("hints").at(key); }

std::string label(const std::string& run) { return short_definition().at("runs").at(run).at("label").get<std::string>(); }

void check_grade_error(const Json& answer, const std::string& path) {
  testing::check_grade_error(exercise1::grade, definition(), answer, path);
}

}  // namespace

TEST_CASE("a variant is the same for the same seed and carries no answers", "[exercise1]") {
  const Json& def = definition();
  std::function<void(const Json&, const std::string&)> no_answers = [&](const Json& j, const std::string& at) {
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        INFO("key " << at << "/" << it.key());
        CHECK(it.key() != "answers");
        CHECK(it.key() != "hints");
        CHECK(it.key() != "mechanisms");
        no_answers(it.value(), at + "/" + it.key());
      }
    } else if (j.is_array()) {
      for (std::size_t i = 0; i < j.size(); ++i) no_answers(j[i], at + "/" + std::to_string(i));
    }
  };
  for (std::uint64_t seed : {std::uint64_t(0), std::uint64_t(1), std::uint64_t(2), std::uint64_t(12345), std::uint64_t(1) << 53}) {
    INFO("seed " << seed);
    const Json v = exercise1::variant(def, seed);
    CHECK(v.dump() == exercise1::variant(def, seed).dump());
    no_answers(v, "");
    CHECK(v.at("seed") == seed);
    CHECK(v.at("id") == "1");
    check_filled(v.at("text").get<std::string>());
    // The questions as asked, without anything that gives them away.
    const Json& qs = v.at("questions");
    REQUIRE(qs.size() == 3);
    CHECK(qs[0].at("id") == "a");
    CHECK(qs[1].at("id") == "b");
    CHECK(qs[2].at("id") == "c");
    for (const auto& q : qs) {
      for (auto it = q.begin(); it != q.end(); ++it) {
        CHECK(std::set<std::string>{"id", "type", "prompt", "choices"}.count(it.key()) == 1);
      }
    }
    REQUIRE(qs[1].at("choices").size() == def.at("questions")[1].at("choices").size());
    for (const auto& c : qs[1].at("choices")) CHECK(c.size() == 2);  // id and text only
    // Both runs see the same workload; only the autoscaler differs.
    const Json& sc = v.at("scenarios");
    REQUIRE(sc.size() == 2);
    CHECK(sc.at("gpu_util").at("workload") == sc.at("queue_depth").at("workload"));
    CHECK(sc.at("gpu_util").at("seed") == seed);
    CHECK(sc.at("gpu_util").at("autoscaler").at("strategy") == "gpu_util");
    CHECK(sc.at("queue_depth").at("autoscaler").at("strategy") == "queue_depth");
    CHECK_NOTHROW(parse_scenario(sc.at("gpu_util")));
    CHECK_NOTHROW(parse_scenario(sc.at("queue_depth")));
  }
  // Different seeds give different variants.
  std::set<std::string> distinct;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) distinct.insert(exercise1::variant(def, seed).at("params").dump());
  CHECK(distinct.size() >= 8);
}

TEST_CASE("variant parameters lie on the exercise file's grids and shape the scenarios", "[exercise1]") {
  const Json& def = definition();
  const Json& ranges = def.at("variant");
  std::map<std::string, std::set<double>> seen;
  for (std::uint64_t seed = 0; seed < 60; ++seed) {
    INFO("seed " << seed);
    const Json v = exercise1::variant(def, seed);
    const Json& p = v.at("params");
    for (auto it = ranges.begin(); it != ranges.end(); ++it) {
      INFO("param " << it.key());
      const double lo = it.value().at("min").get<double>(), hi = it.value().at("max").get<double>();
      const double step = it.value().at("step").get<double>();
      const double x = p.at(it.key()).get<double>();
      CHECK(x >= lo - 1e-9);
      CHECK(x <= hi + 1e-9);
      const double k = (x - lo) / step;
      CHECK(k == Approx(std::round(k)).margin(1e-6));
      seen[it.key()].insert(x);
    }
    const double quiet = p.at("quiet_s").get<double>(), spike = p.at("spike_s").get<double>();
    CHECK(p.at("spike_start_s").get<double>() == quiet);
    CHECK(p.at("spike_end_s").get<double>() == quiet + spike);
    // quiet, burst, then the tail to the end of the hour, at the drawn rates.
    const Json& w = v.at("scenarios").at("gpu_util").at("workload");
    REQUIRE(w.at("phases").size() == 3);
    CHECK(w.at("phases")[0] == Json{{"duration_s", quiet}, {"rate_rps", p.at("quiet_rps")}});
    CHECK(w.at("phases")[1] == Json{{"duration_s", spike}, {"rate_rps", p.at("spike_rps")}});
    CHECK(w.at("phases")[2] == Json{{"duration_s", 3600 - quiet - spike}, {"rate_rps", p.at("tail_rps")}});
    CHECK(w.at("timeout_s") == p.at("timeout_s"));
  }
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    INFO("param " << it.key());
    CHECK(seen[it.key()].size() >= 3);  // the draw does vary
  }
}

TEST_CASE("solve's counts are a recount from simulating the variant's two scenarios", "[exercise1]") {
  // The key property: the grader's numbers come from the simulation of exactly what the learner
  // runs, and count request ids, not the difference between totals.
  const Solved& s = solved();
  const auto a = dropped_but_served(s.duty_run, s.queue_run);
  const auto c = dropped_but_served(s.queue_run, s.duty_run);
  const Json& answers = s.solution.at("answers");
  CHECK(answers.at("a").get<std::int64_t>() == static_cast<std::int64_t>(a.size()));
  CHECK(answers.at("c").get<std::int64_t>() == static_cast<std::int64_t>(c.size()));
  CHECK(s.solution.at("dropped").at("gpu_util") == s.duty_run.summary.num_dropped);
  CHECK(s.solution.at("dropped").at("queue_depth") == s.queue_run.summary.num_dropped);
  // This seed is chosen so that the property is not trivial.
  REQUIRE(!a.empty());
  REQUIRE(!c.empty());
  CHECK(static_cast<std::int64_t>(a.size()) < s.duty_run.summary.num_dropped);  // some drops are shared
  // The first examples are the first such ids.
  std::vector<std::uint32_t> first_a(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(5, a.size())));
  CHECK(s.solution.at("example_request_ids").at("gpu_util").get<std::vector<std::uint32_t>>() == first_a);
  // Same seed, same arrivals: request i is the same request in both runs.
  REQUIRE(s.duty_run.requests.size() == s.queue_run.requests.size());
  for (std::size_t i = 0; i < s.duty_run.requests.size(); ++i) {
    CHECK(s.duty_run.requests[i].arrived_at == s.queue_run.requests[i].arrived_at);
    CHECK(s.duty_run.requests[i].prompt_tokens == s.queue_run.requests[i].prompt_tokens);
  }
  // The mechanism is one of the question's choices, and the worse run is the one with more.
  std::set<std::string> choices;
  for (const auto& ch : short_definition().at("questions")[1].at("choices")) choices.insert(ch.at("id").get<std::string>());
  CHECK(choices.count(answers.at("b").get<std::string>()) == 1);
  CHECK(s.solution.at("worse") == (a.size() >= c.size() ? "gpu_util" : "queue_depth"));
}

TEST_CASE("the right answers score 1", "[exercise1]") {
  const Solved& s = solved();
  const Json& answers = s.solution.at("answers");
  const Json g = exercise1::grade(short_definition(), kSeed, answers);
  CHECK(g.at("correct") == true);
  CHECK(g.at("score").get<double>() == 1.0);
  REQUIRE(g.at("questions").size() == 3);
  for (const auto& q : g.at("questions")) {
    INFO(q.dump());
    CHECK(q.at("correct") == true);
    check_filled(q.at("feedback").get<std::string>());
    CHECK_FALSE(q.contains("hint"));
  }
  const Json expected_a = fill_template(hint("count_correct").get<std::string>(),
                                        {{"count", answers.at("a")},
                                         {"dropping_label", label("gpu_util")},
                                         {"dropping_total", s.duty_run.summary.num_dropped},
                                         {"serving_label", label("queue_depth")},
                                         {"serving_total", s.queue_run.summary.num_dropped}});
  CHECK(g.at("questions")[0].at("feedback") == expected_a);
}

TEST_CASE("wrong answers are marked wrong with feedback and a hint", "[exercise1]") {
  const Solved& s = solved();
  const auto a = s.solution.at("answers").at("a").get<std::int64_t>();
  const auto mechanism = s.solution.at("answers").at("b").get<std::string>();
  // A choice that the decision log does not show at all.
  std::string absent;
  for (const auto& ch : short_definition().at("questions")[1].at("choices")) {
    const auto id = ch.at("id").get<std::string>();
    if (id != mechanism && !s.solution.at("evidence").contains(id) && id != "no_difference") {
      absent = id;
      break;
    }
  }
  REQUIRE(!absent.empty());
  const Json g = exercise1::grade(short_definition(), kSeed, {{"a", a + 1}, {"b", absent}});
  CHECK(g.at("correct") == false);
  CHECK(g.at("score").get<double>() == 0.0);
  const Json& qa = g.at("questions")[0];
  const Json& qb = g.at("questions")[1];
  const Json& qc = g.at("questions")[2];

  CHECK(qa.at("correct") == false);
  CHECK(qa.at("feedback") == hint("count_too_high"));
  // The hint points at the first request the duty-cycle run lost that the other run served.
  double first_drop = 1e300;
  for (std::uint32_t id : dropped_but_served(s.duty_run, s.queue_run)) {
    first_drop = std::min(first_drop, *s.duty_run.requests[id].dropped_at);
  }
  CHECK(qa.at("hint") == fill_template(hint("count_where").get<std::string>(), {{"first_drop_t", whole(first_drop)}}));
  REQUIRE(qa.at("decision_refs").size() == 1);
  CHECK(qa.at("decision_refs")[0].at("run") == "gpu_util");
  CHECK(qa.at("decision_refs")[0].at("t_s").get<double>() == first_drop);

  CHECK(qb.at("correct") == false);
  const Json& window = s.solution.at("window_s");
  CHECK(qb.at("feedback") == fill_template(hint("b_absent").get<std::string>(),
                                           {{"worse_label", label(s.solution.at("worse").get<std::string>())},
                                            {"window_start", whole(window[0].get<double>())},
                                            {"window_end", whole(window[1].get<double>())}}));
  check_filled(qb.at("hint").get<std::string>());
  // Its references point at syncs of the worse run inside the window.
  const RunResult& worse = s.solution.at("worse") == "gpu_util" ? s.duty_run : s.queue_run;
  REQUIRE(!qb.at("decision_refs").empty());
  for (const auto& ref : qb.at("decision_refs")) {
    const auto index = ref.at("index").get<std::size_t>();
    REQUIRE(index < worse.decisions.size());
    CHECK(worse.decisions[index].t_s == ref.at("t_s").get<double>());
    CHECK(ref.at("t_s").get<double>() >= window[0].get<double>());
    CHECK(ref.at("t_s").get<double>() <= window[1].get<double>());
  }

  CHECK(qc.at("correct") == false);
  CHECK(qc.at("feedback") == "No answer yet.");

  // Too low is told apart from too high.
  const Json low = exercise1::grade(short_definition(), kSeed, {{"a", 0}});
  CHECK(low.at("questions")[0].at("feedback") == hint("count_too_low"));
}

TEST_CASE("answering the difference of the drop totals gets its own feedback", "[exercise1]") {
  const Solved& s = solved();
  // Question c counts what the queue-depth run dropped and the duty-cycle run served.
  const auto c = s.solution.at("answers").at("c").get<std::int64_t>();
  const std::int64_t totals = s.queue_run.summary.num_dropped - s.duty_run.summary.num_dropped;
  REQUIRE(totals >= 0);
  REQUIRE(totals != c);
  const Json g = exercise1::grade(short_definition(), kSeed, {{"c", totals}});
  const Json& qc = g.at("questions")[2];
  CHECK(qc.at("correct") == false);
  CHECK(qc.at("feedback") == fill_template(hint("count_difference_of_totals").get<std::string>(),
                                           {{"dropping_label", label("queue_depth")}, {"serving_label", label("gpu_util")}}));
  check_filled(qc.at("hint").get<std::string>());
  CHECK(g.at("questions")[0].at("feedback") == "No answer yet.");
  CHECK(g.at("questions")[1].at("feedback") == "No answer yet.");
  CHECK(g.at("score").get<double>() == 0.0);
}

TEST_CASE("malformed answers are rejected with the path of the bad field", "[exercise1]") {
  check_grade_error({{"a", "twelve"}}, "/a");
  check_grade_error({{"a", -1}}, "/a");
  check_grade_error({{"a", 1.5}}, "/a");
  check_grade_error({{"c", nullptr}}, "/c");
  check_grade_error({{"b", "nope"}}, "/b");
  check_grade_error({{"b", 3}}, "/b");
  check_grade_error({{"a", 1}, {"zzz", 1}}, "/zzz");
  check_grade_error(Json::array({1, 2}), "");
  check_grade_error(Json(5), "");
  check_grade_error(Json("a"), "");
  // The message for a bad choice lists the choices.
  try {
    exercise1::grade(definition(), 1, {{"b", "nope"}});
    FAIL("grade accepted b = \"nope\"");
  } catch (const InputError& e) {
    CHECK_THAT(e.message(), Catch::Contains("\"saturated_signal\""));
    CHECK_THAT(e.message(), Catch::Contains("\"no_difference\""));
  }
}

TEST_CASE("the explanation states the variant's numbers", "[exercise1]") {
  const Solved& s = solved();
  const Json e = exercise1::explain(short_definition(), kSeed);
  CHECK(e.at("answers") == s.solution.at("answers"));
  const auto text = e.at("text").get<std::string>();
  check_filled(text);
  const auto has = [&](const std::string& part) {
    INFO("looking for: " << part);
    CHECK_THAT(text, Catch::Contains(part));
  };
  has("Both runs saw the same " + std::to_string(s.duty_run.summary.num_requests) + " requests.");
  has(label("gpu_util") + " dropped " + std::to_string(s.duty_run.summary.num_dropped) + " of them");
  has(label("queue_depth") + " " + std::to_string(s.queue_run.summary.num_dropped) + ".");
  has(std::to_string(s.solution.at("answers").at("a").get<std::int64_t>()) + " were dropped by the duty-cycle run");
  has(std::to_string(s.solution.at("answers").at("c").get<std::int64_t>()) + " the other way round");
  has("Peak replicas " + std::to_string(s.duty_run.summary.peak_replicas) + " vs " +
      std::to_string(s.queue_run.summary.peak_replicas));
  has("The dominant one is " + s.solution.at("answers").at("b").get<std::string>());
}
