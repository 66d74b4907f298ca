// Exercise 5 (core/src/exercise_5.cpp, exercises/ex5-consolidation.json): the baseline variant, the trap's
// daily cost recomputed from two independent simulations, the grader's tolerance, hints and formula, and
// malformed answers.
#include <catch2/catch.hpp>

#include <chrono>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "gpuscale/errors.hpp"
#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;

using gpuscale::testing::check_filled;

namespace {

using gpuscale::testing::read_text;

const Json& definition() {
  static const Json d = Json::parse(read_text("exercises/ex5-consolidation.json"));
  return d;
}

// The exercise's week cut to one day (the daily cycle once) so that its pair of simulations stays
// fast; solve() and grade() then divide by 1 day instead of 7.
const Json& short_definition() {
  static const Json d = [] {
    Json def = definition();
    def["base_scenario"]["duration_s"] = 86400;
    return def;
  }();
  return d;
}

// Clock hours (by arrival) whose P99 TTFT, nearest rank over requests that got a first token, is above 10 s.
std::int64_t breach_hours(const RunResult& r, double duration_s) {
  std::vector<std::vector<double>> hours(static_cast<std::size_t>(std::ceil(duration_s / 3600)));
  for (const auto& q : r.requests) {
    if (q.first_token_at) hours.at(static_cast<std::size_t>(q.arrived_at / 3600)).push_back(*q.first_token_at - q.arrived_at);
  }
  std::int64_t n = 0;
  for (auto& v : hours) {
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const std::size_t rank = (99 * v.size() + 99) / 100;  // ceil(0.99 n), in integers
    n += v[rank - 1] > 10.0 ? 1 : 0;
  }
  return n;
}

struct Solved {
  Json variant, solution;
  RunResult trap, safe;
  double daily = 0, monthly = 0;
};

// Seed 0 of the one-day exercise: solve() and an independent run of the variant's two scenarios.
const Solved& solved() {
  static const Solved s = [] {
    Solved out;
    out.variant = exercise5::variant(short_definition(), 0);
    out.solution = exercise5::solve(short_definition(), 0);
    out.trap = run_simulation(parse_scenario(out.variant.at("scenarios").at("trap")));
    out.safe = run_simulation(parse_scenario(out.variant.at("scenarios").at("safe")));
    out.daily = out.solution.at("answers").at("daily_usd").get<double>();
    out.monthly = out.solution.at("answers").at("monthly_usd").get<double>();
    return out;
  }();
  return s;
}

Json grade(double daily, double monthly) {
  return exercise5::grade(short_definition(), 0, {{"daily_usd", daily}, {"monthly_usd", monthly}});
}

std::string hint(const char* key) {
  return fill_template(definition().at("hints").at(key).get<std::string>(), {{"days_per_month", 30}, {"days", 1}});
}

// Money as the texts write it: −$430.51.
std::string money(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s$%.2f", v < 0 ? "\u2212" : "", std::fabs(v));
  return buf;
}

void check_grade_error(const Json& answer, const std::string& path) {
  try {
    exercise5::grade(definition(), 0, answer);
    FAIL("grade accepted " << answer.dump());
  } catch (const InputError& e) {
    INFO(answer.dump() << " → " << e.what());
    CHECK(e.path() == path);
    CHECK_FALSE(e.message().empty());
  }
}

}  // namespace

TEST_CASE("seed 0 is the lesson's baseline; other seeds draw their economics", "[exercise5]") {
  const Json v = exercise5::variant(definition(), 0);
  const Json& p = v.at("params");
  for (const auto& [key, value] : definition().at("baseline").at("params").items()) {
    INFO(key);
    CHECK(p.at(key) == value);
  }
  CHECK(p.at("node_hour_usd") == "55.04");
  check_filled(v.at("text").get<std::string>());
  CHECK_THAT(v.at("text").get<std::string>(), Catch::Contains("a GPU-hour costs $6.88 (so a p5.48xlarge $55.04/h)"));
  CHECK_FALSE(v.contains("answers"));

  // The two scenarios differ only in the GPU pool's disruption block.
  const Json& trap = v.at("scenarios").at("trap");
  Json safe = v.at("scenarios").at("safe");
  CHECK(trap.at("cluster").at("nodepools")[0].at("spec").at("disruption") == definition().at("runs").at("trap").at("disruption"));
  CHECK(safe.at("cluster").at("nodepools")[0].at("spec").at("disruption") == definition().at("runs").at("safe").at("disruption"));
  safe["cluster"]["nodepools"][0]["spec"]["disruption"] = trap.at("cluster").at("nodepools")[0].at("spec").at("disruption");
  CHECK(safe == trap);
  CHECK(trap.at("workload").at("rate_scale") == 1.0);
  // The replicas' pod terminates as the common chart has it: a 30 s preStop sleep in the 30 s grace period.
  CHECK(parse_scenario(trap).pools[0].pod.prestop_sleep_s == 30);
  CHECK(parse_scenario(trap).pools[0].pod.termination_grace_period_s == 30);
  CHECK(trap.at("cold_start").at("model_load_s") == 120);
  for (const auto& t : trap.at("cluster").at("instance_types")) {
    if (t.at("name") == "p5.48xlarge") CHECK(t.at("on_demand_usd_per_hour").get<double>() == Approx(55.04));
  }

  const Json other = exercise5::variant(definition(), 1).at("params");
  CHECK(other != p);
  for (const char* key : {"gpu_hour_usd", "failed_request_usd", "sla_credit_usd", "model_load_s", "rate_scale"}) {
    const Json& range = definition().at("variant").at(key);
    INFO(key);
    CHECK(other.at(key).get<double>() >= range.at("min").get<double>());
    CHECK(other.at(key).get<double>() <= range.at("max").get<double>());
  }
}

TEST_CASE("solve's daily cost is a recount from the variant's two simulations", "[exercise5]") {
  const Solved& s = solved();
  const Json& p = s.variant.at("params");
  const double days = 1;  // the shortened definition
  CHECK(s.solution.at("days").get<double>() == days);
  const std::int64_t failed_trap = s.trap.summary.num_dropped, failed_safe = s.safe.summary.num_dropped;
  const std::int64_t breach_trap = breach_hours(s.trap, 86400), breach_safe = breach_hours(s.safe, 86400);
  CHECK(s.solution.at("trap").at("failed_requests") == failed_trap);
  CHECK(s.solution.at("safe").at("failed_requests") == failed_safe);
  CHECK(s.solution.at("trap").at("breach_hours") == breach_trap);
  CHECK(s.solution.at("safe").at("breach_hours") == breach_safe);
  CHECK(s.solution.at("trap").at("replica_evictions") == s.trap.summary.num_replica_evictions);
  CHECK(s.solution.at("safe").at("replica_evictions") == 0);
  CHECK(s.trap.summary.num_replica_evictions > 0);

  const double daily = (static_cast<double>(failed_trap - failed_safe) * p.at("failed_request_usd").get<double>() +
                        static_cast<double>(breach_trap - breach_safe) * p.at("sla_credit_usd").get<double>() +
                        (s.trap.summary.cluster.node_cost_usd - s.safe.summary.cluster.node_cost_usd)) /
                       days;
  CHECK(s.daily == Approx(daily).margin(1e-6));
  CHECK(s.monthly == Approx(30 * daily).margin(1e-6));
}

TEST_CASE("exact answers are correct and unlock the formula", "[exercise5]") {
  const Solved& s = solved();
  const Json g = grade(s.daily, s.monthly);
  CHECK(g.at("score").get<double>() == 1.0);
  CHECK(g.at("correct").get<bool>());
  for (const auto& q : g.at("questions")) {
    CHECK(q.at("correct").get<bool>());
    CHECK_FALSE(q.contains("hint"));
    check_filled(q.at("feedback").get<std::string>());
  }
  REQUIRE(g.contains("formula"));
  const std::string formula = g.at("formula").get<std::string>();
  check_filled(formula);
  CHECK_THAT(formula, Catch::Contains(money(s.daily) + " per day"));
  CHECK(formula.find("$\u2212") == std::string::npos);  // never "$−430.51"
  // Each part's feedback states its own figure only.
  CHECK(g.at("questions")[0].at("feedback") == "Right: " + money(s.daily) + " a day.");
  CHECK(g.at("questions")[1].at("feedback") == "Right: " + money(s.monthly) + " per 30-day month.");
}

TEST_CASE("within 5 % is correct; 10 % off is not, with a hint; a monthly that is not 30 × daily gets its own hint",
          "[exercise5]") {
  const Solved& s = solved();
  REQUIRE(std::fabs(s.daily) > 20);  // well above the $1 floor of the tolerance

  // Daily 4 % off (correct); monthly 10 % off and not 30 × that daily.
  Json g = grade(s.daily * 1.04, s.monthly * 1.10);
  CHECK(g.at("score").get<double>() == 0.5);
  CHECK_FALSE(g.at("correct").get<bool>());
  CHECK_FALSE(g.contains("formula"));
  const Json& qd = g.at("questions")[0];
  const Json& qm = g.at("questions")[1];
  CHECK(qd.at("id") == "daily_usd");
  CHECK(qd.at("correct").get<bool>());
  CHECK(qm.at("id") == "monthly_usd");
  CHECK_FALSE(qm.at("correct").get<bool>());
  CHECK(qm.at("hint") == hint("monthly_vs_daily"));
  CHECK_THAT(qm.at("feedback").get<std::string>(), Catch::StartsWith("Within 20 %"));

  // Both 10 % off, consistently (monthly = 30 × daily): the general hint, no monthly one.
  g = grade(s.daily * 1.10, s.daily * 1.10 * 30);
  CHECK(g.at("score").get<double>() == 0.0);
  CHECK_FALSE(g.contains("formula"));
  for (const auto& q : g.at("questions")) {
    CHECK_FALSE(q.at("correct").get<bool>());
    REQUIRE(q.contains("hint"));
    CHECK(q.at("hint") == hint("wrong"));
  }

  // A missing answer is not correct, and the other is graded alone.
  const Json only = exercise5::grade(short_definition(), 0, {{"daily_usd", s.daily}});
  CHECK(only.at("questions")[0].at("correct").get<bool>());
  CHECK(only.at("questions")[1].at("feedback") == "No answer yet.");
  CHECK(only.at("score").get<double>() == 0.5);
  CHECK_FALSE(only.contains("formula"));
}

TEST_CASE("malformed exercise 5 answers are InputErrors with the path", "[exercise5]") {
  check_grade_error({{"daily_usd", "100"}}, "/daily_usd");
  check_grade_error({{"daily_usd", 100}, {"monthly_usd", "3000"}}, "/monthly_usd");
  check_grade_error({{"daily_usd", true}}, "/daily_usd");
  check_grade_error({{"daily", 100}}, "/daily");
  check_grade_error(Json("100"), "");
  check_grade_error(Json::array({100, 3000}), "");
}

TEST_CASE("a sign error and a missing cost term get their own hints", "[exercise5]") {
  const Solved& s = solved();
  const Json& trap = s.solution.at("trap");
  const Json& safe = s.solution.at("safe");
  const Json& p = s.variant.at("params");
  const double failed = (trap.at("failed_requests").get<double>() - safe.at("failed_requests").get<double>()) * p.at("failed_request_usd").get<double>();
  const double node = trap.at("node_cost_usd").get<double>() - safe.at("node_cost_usd").get<double>();
  REQUIRE(std::fabs(node) > 20);
  // Wrong: the sign turned round.
  Json g = grade(-s.daily, -s.monthly);
  CHECK(g.at("score").get<double>() == 0.0);
  CHECK(g.at("questions")[0].at("feedback") == hint("sign"));
  CHECK(g.at("questions")[1].at("feedback") == hint("sign"));
  // Partly right: the daily figure right, the monthly one without the node-cost term.
  g = grade(s.daily, s.monthly - 30 * node);
  CHECK(g.at("score").get<double>() == 0.5);
  CHECK(g.at("questions")[1].at("feedback") == hint("missing_node"));
  // Without the failed-request term: a term inside the tolerance is no slip worth naming.
  g = grade(s.daily - failed, s.monthly);
  CHECK(g.at("questions")[0].at("correct") == (std::fabs(failed) <= 0.05 * std::fabs(s.daily)));
  // Nothing said bisects: the hint for a figure off in either direction is the same.
  const double off = 3 * std::fabs(s.daily) + 1000;  // far from the answer and from its negation
  const Json hi = grade(s.daily + off, s.monthly);
  const Json lo = grade(s.daily - off, s.monthly);
  CHECK(hi.at("questions")[0].at("feedback") == lo.at("questions")[0].at("feedback"));
  // The texts state the month's length.
  CHECK_THAT(hint("wrong"), Catch::Contains("a month here is 30 days"));
}

TEST_CASE("money is written with a real minus sign and two decimals", "[exercise5]") {
  const Solved& s = solved();
  const Json e = exercise5::explain(short_definition(), 0);
  const std::string text = e.at("text").get<std::string>();
  CHECK_THAT(text, Catch::Contains(money(s.daily) + " per day"));
  CHECK_THAT(text, Catch::Contains(money(s.monthly) + " per month"));
  CHECK(text.find("$-") == std::string::npos);
  CHECK(text.find("$\u2212") == std::string::npos);
}

TEST_CASE("given both weeks' figures back, a grade does not simulate and agrees; progress comes once a simulated day", "[exercise5]") {
  std::vector<std::pair<double, std::string>> seen;
  GradeContext ctx;
  ctx.progress = [&](double f, const std::string& label) { seen.emplace_back(f, label); };
  const Json answer{{"daily_usd", 10}, {"monthly_usd", 300}};
  const Json fresh = exercise5::grade(definition(), 3, answer, ctx);
  // 7 days of each week, reported from inside the simulation loop.
  REQUIRE(seen.size() == 14);
  CHECK(seen[0].second == "trap week: day 1 of 7");
  CHECK(seen[0].first == Approx(1.0 / 14));
  CHECK(seen[6].second == "trap week: day 7 of 7");
  CHECK(seen[9].second == "safe week: day 3 of 7");
  CHECK(seen[13].first == Approx(1.0));
  seen.clear();
  const Json data = fresh.at("simulated");
  ctx.simulated = &data;
  const auto t0 = std::chrono::steady_clock::now();
  const Json again = exercise5::grade(definition(), 3, answer, ctx);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(again == fresh);
  CHECK(seen.empty());
  CHECK(ms < 100);
  // Malformed figures are refused with their path.
  Json bad = data;
  bad["trap"]["failed_requests"] = -1;
  ctx.simulated = &bad;
  CHECK(testing::input_error([&] { exercise5::grade(definition(), 3, answer, ctx); }).path() == "/context/simulated/data/trap/failed_requests");
  bad = data;
  bad.erase("safe");
  CHECK(testing::input_error([&] { exercise5::grade(definition(), 3, answer, ctx); }).path() == "/context/simulated/data");
}
