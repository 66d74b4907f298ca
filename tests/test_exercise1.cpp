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
  CHECK(qa.at("feedback") == fill_template(hint("count_wrong").get<std::string>(),
                                           {{"dropping_label", label("gpu_util")}, {"serving_label", label("queue_depth")}}));
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

  // Too low is not told apart from too high: the exact count cannot be bisected.
  const Json low = exercise1::grade(short_definition(), kSeed, {{"a", a - 1}});
  CHECK(low.at("questions")[0].at("feedback") == qa.at("feedback"));
  CHECK(low.at("questions")[0].at("hint") == qa.at("hint"));
  for (const auto& key : {"count_wrong", "count_total", "count_difference_of_totals"}) {
    const std::string text = hint(key).get<std::string>();
    CHECK(text.find("oo high") == std::string::npos);
    CHECK(text.find("oo low") == std::string::npos);
  }
}

TEST_CASE("partly right: one count right, the other wrong; no part's feedback quotes another part's answer", "[exercise1]") {
  const Solved& s = solved();
  const Json& answers = s.solution.at("answers");
  const auto a = answers.at("a").get<std::int64_t>(), c = answers.at("c").get<std::int64_t>();
  REQUIRE(a != c);
  const Json g = exercise1::grade(short_definition(), kSeed, {{"a", a}, {"b", answers.at("b")}, {"c", c + 7}});
  CHECK(g.at("correct") == false);
  CHECK(g.at("score").get<double>() == Approx(2.0 / 3.0));
  CHECK(g.at("questions")[0].at("correct") == true);
  CHECK(g.at("questions")[1].at("correct") == true);
  CHECK(g.at("questions")[2].at("correct") == false);
  // A whole number as a word of the text.
  const auto quotes = [](const Json& q, std::int64_t n) {
    const std::regex word("(^|[^0-9.])" + std::to_string(n) + "($|[^0-9.])");
    return std::regex_search(q.value("feedback", std::string()), word) || std::regex_search(q.value("hint", std::string()), word);
  };
  CHECK_FALSE(quotes(g.at("questions")[0], c));
  CHECK_FALSE(quotes(g.at("questions")[1], a));
  CHECK_FALSE(quotes(g.at("questions")[1], c));
  CHECK_FALSE(quotes(g.at("questions")[2], a));
  CHECK_FALSE(quotes(g.at("questions")[2], c));
}

TEST_CASE("answering the difference of the drop totals gets its own feedback", "[exercise1]") {
  const Solved& s = solved();
  // The question whose run dropped more in total: its "difference of totals" is a positive count.
  const bool duty_more = s.duty_run.summary.num_dropped > s.queue_run.summary.num_dropped;
  const char* id = duty_more ? "a" : "c";
  const std::size_t index = duty_more ? 0 : 2;
  const auto count = s.solution.at("answers").at(id).get<std::int64_t>();
  const std::int64_t totals = duty_more ? s.duty_run.summary.num_dropped - s.queue_run.summary.num_dropped
                                        : s.queue_run.summary.num_dropped - s.duty_run.summary.num_dropped;
  REQUIRE(totals > 0);
  REQUIRE(totals != count);
  const Json g = exercise1::grade(short_definition(), kSeed, {{id, totals}});
  const Json& q = g.at("questions")[index];
  CHECK(q.at("correct") == false);
  CHECK(q.at("feedback") == fill_template(hint("count_difference_of_totals").get<std::string>(),
                                          {{"dropping_label", label(duty_more ? "gpu_util" : "queue_depth")},
                                           {"serving_label", label(duty_more ? "queue_depth" : "gpu_util")}}));
  check_filled(q.at("hint").get<std::string>());
  CHECK(g.at("questions")[1].at("feedback") == "No answer yet.");
  CHECK(g.at("questions")[2 - index].at("feedback") == "No answer yet.");
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
  has(") is " + s.solution.at("answers").at("b").get<std::string>());
}

TEST_CASE("classify: a not-Ready pod's 0 % pulling the duty-cycle average down is cold_start_zero", "[exercise1]") {
  // Three Ready pods at 100 % and one loading pod at 0 %: average 75, ratio 0.9375 (inside ±10 %).
  DecisionRecord d;
  d.controller = "hpa";
  d.current_replicas = d.desired_replicas = 4;
  d.metric_value = 75;
  d.ratio = 75.0 / 80.0;
  d.metric_proposal = 4;
  d.ready_pods = 4;
  d.not_ready_in_average = 1;
  d.not_ready_sum = 0;
  CHECK(exercise1::classify(d, "DCGM_FI_DEV_GPU_UTIL", 0.1) == "cold_start_zero");
  // The same average from four Ready pods is the tolerance band.
  d.not_ready_in_average = 0;
  CHECK(exercise1::classify(d, "DCGM_FI_DEV_GPU_UTIL", 0.1) == "within_tolerance");
  // A loading pod whose removal would not lift the ratio out of the band is not the cause: 4 pods at
  // 66 + one loading at 0 → 52.8 average; the Ready ones alone 66 / 80 = 0.825.
  d.ready_pods = 5;
  d.metric_value = 52.8;
  d.ratio = 52.8 / 80;
  d.not_ready_in_average = 1;
  CHECK(exercise1::classify(d, "DCGM_FI_DEV_GPU_UTIL", 0.1) == "low_duty_cycle");
}

TEST_CASE("classify: a queue-depth sync with requests waiting is not empty_queue", "[exercise1]") {
  DecisionRecord d;
  d.controller = "hpa";
  d.current_replicas = d.desired_replicas = 4;
  d.metric_proposal = 4;
  d.metric_value = 0;
  d.ratio = 0;
  CHECK(exercise1::classify(d, "vllm:num_requests_waiting", 0.1) == "empty_queue");
  d.metric_value = 6;  // 6 waiting over 4 replicas at a target of 5 each: ratio 0.3
  d.ratio = 6.0 / 20.0;
  CHECK(exercise1::classify(d, "vllm:num_requests_waiting", 0.1) == "short_queue");
  d.metric_value = 19;
  d.ratio = 19.0 / 20.0;
  CHECK(exercise1::classify(d, "vllm:num_requests_waiting", 0.1) == "within_tolerance");
}

TEST_CASE("the former seed-2 variant (t = 390–465 s) is graded cold_start_zero, with the loading pod in the log", "[exercise1]") {
  // The variant space before it was narrowed: seed 2 is a burst the duty-cycle HPA lost.
  Json def = definition();
  def["variant"]["quiet_s"] = {{"min", 300}, {"max", 900}, {"step", 60}};
  def["variant"]["spike_rps"] = {{"min", 2.0}, {"max", 5.0}, {"step", 0.25}};
  const Json sol = exercise1::solve(def, 2);
  CHECK(sol.at("worse") == "gpu_util");
  CHECK(sol.at("accepted").at("b") == Json::array({"cold_start_zero"}));
  const Json g = exercise1::grade(def, 2, {{"b", "within_tolerance"}});
  CHECK(g.at("questions")[1].at("correct") == false);
  // Syncs in t = 390 … 465 s average in a loading replica's 0 % (which ones moves with the metric
  // pipeline's lag: the value each sync reads is up to a collection interval old).
  const Json ex = exercise1::explain(def, 2);
  const Json& ev = ex.at("simulated").at("evidence").at("cold_start_zero");
  int in_window = 0;
  for (const auto& e : ev) in_window += e[1].get<double>() >= 390.0 && e[1].get<double>() <= 465.0 ? 1 : 0;
  CHECK(in_window >= 3);
}

TEST_CASE("a tie accepts each tied mechanism, and the feedback counts what it says", "[exercise1]") {
  const Json first = exercise1::grade(short_definition(), kSeed, Json::object());
  // The same figures with two mechanisms seen equally often (14 each of 43 decisive entries).
  Json data = first.at("simulated");
  Json evidence = Json::object();
  Json a = Json::array(), b = Json::array(), c = Json::array();
  for (int i = 0; i < 14; ++i) a.push_back({i, 400.0 + i});
  for (int i = 0; i < 14; ++i) b.push_back({100 + i, 500.0 + i});
  for (int i = 0; i < 15; ++i) c.push_back({200 + i, 600.0 + i});
  evidence["empty_queue"] = a;
  evidence["short_queue"] = b;
  evidence["scale_down_drain"] = Json::array();
  evidence["within_tolerance"] = Json::array({c[0]});
  Json ten = Json::array();
  for (int i = 0; i < 14; ++i) ten.push_back(c[i]);
  evidence["scale_up_limit"] = ten;
  data["evidence"] = evidence;
  GradeContext ctx;
  ctx.simulated = &data;
  for (const char* m : {"empty_queue", "short_queue", "scale_up_limit"}) {
    INFO(m);
    const Json g = exercise1::grade(short_definition(), kSeed, {{"b", m}}, ctx);
    CHECK(g.at("questions")[1].at("correct") == true);
    CHECK_THAT(g.at("questions")[1].at("feedback").get<std::string>(), Catch::Contains("Of the 43 decisive entries"));
    CHECK_THAT(g.at("questions")[1].at("feedback").get<std::string>(), Catch::Contains("14 show it"));
  }
  const Json w = exercise1::grade(short_definition(), kSeed, {{"b", "within_tolerance"}}, ctx);
  CHECK(w.at("questions")[1].at("correct") == false);
  CHECK_THAT(w.at("questions")[1].at("feedback").get<std::string>(), Catch::Contains("1 of the 43 decisive entries"));
}

TEST_CASE("graded from its simulated figures, a variant grades and explains as when simulated", "[exercise1]") {
  const Json answer{{"a", 3}, {"b", "empty_queue"}, {"c", 5}};
  const Json fresh = exercise1::grade(short_definition(), kSeed, answer);
  const Json data = fresh.at("simulated");
  GradeContext ctx;
  ctx.simulated = &data;
  int reports = 0;
  ctx.progress = [&](double, const std::string&) { ++reports; };
  CHECK(exercise1::grade(short_definition(), kSeed, answer, ctx) == fresh);
  CHECK(exercise1::explain(short_definition(), kSeed, ctx) == exercise1::explain(short_definition(), kSeed));
  CHECK(reports == 0);  // nothing simulated
  // Malformed figures are refused with their path.
  Json bad = data;
  bad["first"]["exclusive"] = "many";
  ctx.simulated = &bad;
  CHECK(testing::input_error([&] { exercise1::grade(short_definition(), kSeed, answer, ctx); }).path() ==
        "/context/simulated/data/first/exclusive");
  bad = data;
  bad["evidence"]["magic"] = Json::array();
  CHECK(testing::input_error([&] { exercise1::grade(short_definition(), kSeed, answer, ctx); }).path() == "/context/simulated/data/evidence/magic");
}

TEST_CASE("progress is reported from inside both runs, in order, at most ~20 times", "[exercise1]") {
  std::vector<std::pair<double, std::string>> seen;
  GradeContext ctx;
  ctx.progress = [&](double f, const std::string& label) { seen.emplace_back(f, label); };
  exercise1::grade(short_definition(), kSeed, Json::object(), ctx);
  REQUIRE(seen.size() >= 10);
  CHECK(seen.size() <= 22);
  for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].first >= seen[i - 1].first);
  CHECK(seen.back().first == Approx(1.0));
  CHECK_THAT(seen.front().second, Catch::Contains(label("gpu_util")));
  CHECK_THAT(seen.back().second, Catch::Contains(label("queue_depth")));
  CHECK_THAT(seen.back().second, Catch::Contains("minute 15 of 15"));
}

TEST_CASE("over seeds 0–19 no variant gives its counts away in the summary totals", "[exercise1]") {
  for (std::uint64_t seed = 0; seed < 20; ++seed) {
    INFO("seed " << seed);
    const Json sol = exercise1::solve(definition(), seed);
    const auto a = sol.at("answers").at("a").get<std::int64_t>(), c = sol.at("answers").at("c").get<std::int64_t>();
    const auto da = sol.at("dropped").at("gpu_util").get<std::int64_t>(), dc = sol.at("dropped").at("queue_depth").get<std::int64_t>();
    CHECK(da > 0);  // both runs drop requests: neither count is 0-by-totals
    CHECK(dc > 0);
    CHECK_FALSE((a == da && c == dc));  // some requests are dropped by both runs
  }
}
