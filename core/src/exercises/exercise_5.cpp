// Exercise 5: the cost of Karpenter's consolidation trap. The same week of a 24×7 service runs under
// WhenEmptyOrUnderutilized / consolidateAfter 0s and under WhenEmpty / 1h; the learner prices the
// difference with the variant's economics. Every count comes from the two simulations.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cluster/cluster_state.hpp"
#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::exercise5 {

namespace {

constexpr double kDaysPerMonth = 30.0;

std::string usd(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

Json params_for(const Json& def, std::uint64_t seed) {
  // Seed 0 is the lesson's baseline; every other seed draws its economics.
  Json p = seed == 0 ? def.at("baseline").at("params") : draw_variant_params(def, seed);
  p["node_hour_usd"] = usd(p.at("gpu_hour_usd").get<double>() * 8);
  const Json& phases = def.at("base_scenario").at("workload").at("phases");
  double lo = 1e300, hi = 0;
  for (const auto& ph : phases) {
    lo = std::min(lo, ph.at("rate_rps").get<double>());
    hi = std::max(hi, ph.at("rate_rps").get<double>());
  }
  const double scale = p.at("rate_scale").get<double>();
  p["night_rps"] = std::round(lo * scale * 100) / 100;
  p["peak_rps"] = std::round(hi * scale * 100) / 100;
  return p;
}

Json scenario_for(const Json& def, const Json& params, std::uint64_t seed, const std::string& run) {
  Json sc = def.at("base_scenario");
  sc["seed"] = seed;
  sc["workload"]["rate_scale"] = params.at("rate_scale");
  sc["cold_start"]["model_load_s"] = params.at("model_load_s");
  // The variant's GPU price: every GPU type of the catalogue at that price per GPU-hour, spot at the
  // catalogue's spot/on-demand ratio.
  Json types = default_instance_types_json();
  const double gpu_hour = params.at("gpu_hour_usd").get<double>();
  for (auto& t : types) {
    const int gpus = t.at("gpus").get<int>();
    if (gpus == 0) continue;
    const double ratio = t.at("spot_usd_per_hour").get<double>() / t.at("on_demand_usd_per_hour").get<double>();
    t["on_demand_usd_per_hour"] = gpu_hour * gpus;
    t["spot_usd_per_hour"] = std::round(gpu_hour * gpus * ratio * 10000) / 10000;
  }
  sc["cluster"]["instance_types"] = types;
  sc["cluster"]["nodepools"][0]["spec"]["disruption"] = def.at("runs").at(run).at("disruption");
  return sc;
}

struct RunCounts {
  std::int64_t failed = 0;        // requests dropped (timeouts and evictions)
  std::int64_t breach_hours = 0;  // hours with P99 TTFT > 10 s
  std::int64_t evictions = 0;     // replicas evicted by node removals
  double node_cost_usd = 0;       // GPU and CPU nodes, launch → termination
  double gpu_hours = 0;
};

struct Analysis {
  Json params;
  RunCounts trap, safe;
  double days = 7;
  double daily_usd = 0, monthly_usd = 0;
  double failed_cost_day = 0, sla_cost_day = 0, node_cost_day = 0;
};

RunCounts run_counts(const Json& scenario, const ProgressReport& progress) {
  Scenario s = parse_scenario(scenario);
  s.output.decisions = false;  // the counts do not need the log
  const RunResult r = run_simulation(s, {}, progress);
  RunCounts c;
  c.failed = r.summary.num_dropped;
  c.breach_hours = r.summary.ttft_breach_hours;
  c.evictions = r.summary.num_replica_evictions;
  c.node_cost_usd = r.summary.cluster.node_cost_usd;
  c.gpu_hours = r.summary.cluster.gpu_hours_allocatable;
  return c;
}

Json counts_json(const RunCounts& c) {
  return {{"failed_requests", c.failed}, {"breach_hours", c.breach_hours}, {"replica_evictions", c.evictions},
          {"node_cost_usd", c.node_cost_usd}, {"gpu_hours", c.gpu_hours}};
}

// One week's figures as counts_json wrote them (a "simulated" object given back; docs/wasm-api.md).
RunCounts read_counts(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  RunCounts c;
  c.failed = r.require_int("failed_requests", 0, 100'000'000);
  c.breach_hours = r.require_int("breach_hours", 0, 100'000);
  c.evictions = r.require_int("replica_evictions", 0, 100'000'000);
  if (!r.has("node_cost_usd") || !r.has("gpu_hours")) throw InputError(path, "needs node_cost_usd and gpu_hours");
  c.node_cost_usd = r.get_number("node_cost_usd", 0, 0, 1e12);
  c.gpu_hours = r.get_number("gpu_hours", 0, 0, 1e9);
  r.finish();
  return c;
}

Analysis analyse(const Json& def, std::uint64_t seed, const GradeContext& context) {
  Analysis an;
  an.params = params_for(def, seed);
  const double duration = def.at("base_scenario").at("duration_s").get<double>();
  if (context.simulated) {
    // Both weeks' figures from an earlier grade of this variant: nothing to simulate.
    ObjectReader r(*context.simulated, "/context/simulated/data");
    const Json* trap = r.raw("trap");
    const Json* safe = r.raw("safe");
    r.finish();
    if (!trap || !safe) throw InputError("/context/simulated/data", "needs both weeks' figures, trap and safe");
    an.trap = read_counts(*trap, "/context/simulated/data/trap");
    an.safe = read_counts(*safe, "/context/simulated/data/safe");
  } else {
    // Progress once a simulated day, within each week.
    const auto report = [&](int index, const char* week) {
      return progress_share(context.progress, index, 2, duration, 86400,
                            [week, duration](double t) { return std::string(week) + ": " + clock_text(t, duration); });
    };
    an.trap = run_counts(scenario_for(def, an.params, seed, "trap"), report(0, "trap week"));
    an.safe = run_counts(scenario_for(def, an.params, seed, "safe"), report(1, "safe week"));
  }
  an.days = duration / 86400.0;
  const double fr = an.params.at("failed_request_usd").get<double>();
  const double credit = an.params.at("sla_credit_usd").get<double>();
  an.failed_cost_day = static_cast<double>(an.trap.failed - an.safe.failed) * fr / an.days;
  an.sla_cost_day = static_cast<double>(an.trap.breach_hours - an.safe.breach_hours) * credit / an.days;
  an.node_cost_day = (an.trap.node_cost_usd - an.safe.node_cost_usd) / an.days;
  an.daily_usd = an.failed_cost_day + an.sla_cost_day + an.node_cost_day;
  an.monthly_usd = an.daily_usd * kDaysPerMonth;
  return an;
}

Json text_params(const Analysis& an) {
  Json p = an.params;
  const auto per_day = [&](double v) { return usd(v / an.days); };
  p["failed_trap_day"] = per_day(static_cast<double>(an.trap.failed));
  p["failed_safe_day"] = per_day(static_cast<double>(an.safe.failed));
  p["breach_trap_day"] = per_day(static_cast<double>(an.trap.breach_hours));
  p["breach_safe_day"] = per_day(static_cast<double>(an.safe.breach_hours));
  p["node_cost_trap_day"] = per_day(an.trap.node_cost_usd);
  p["node_cost_safe_day"] = per_day(an.safe.node_cost_usd);
  p["failed_cost_day"] = usd(an.failed_cost_day);
  p["sla_cost_day"] = usd(an.sla_cost_day);
  p["node_cost_day"] = usd(an.node_cost_day);
  p["daily_usd"] = usd(an.daily_usd);
  p["monthly_usd"] = usd(an.monthly_usd);
  p["evictions_trap"] = an.trap.evictions;
  p["evictions_trap_day"] = usd(static_cast<double>(an.trap.evictions) / an.days);
  p["gpu_hours_trap"] = usd(an.trap.gpu_hours);
  p["gpu_hours_safe"] = usd(an.safe.gpu_hours);
  return p;
}

Json simulated_json(const Analysis& an) { return {{"trap", counts_json(an.trap)}, {"safe", counts_json(an.safe)}}; }

}  // namespace

Json variant(const Json& def, std::uint64_t seed) {
  Json params = params_for(def, seed);
  Json scenarios = Json::object(), labels = Json::object();
  for (auto it = def.at("runs").begin(); it != def.at("runs").end(); ++it) {
    scenarios[it.key()] = scenario_for(def, params, seed, it.key());
    parse_scenario(scenarios[it.key()]);
    labels[it.key()] = it.value().at("label");
  }
  Json qs = Json::array();
  for (const auto& q : def.at("questions")) qs.push_back({{"id", q.at("id")}, {"type", q.at("type")}, {"prompt", q.at("prompt")}});
  return {{"id", def.at("id")},   {"seed", seed},          {"title", def.at("title")},
          {"text", fill_template(def.at("text").get<std::string>(), params)},
          {"params", params},     {"runs", labels},        {"scenarios", scenarios},
          {"questions", qs},      {"tolerance", def.at("tolerance")}};
}

Json solve(const Json& def, std::uint64_t seed) {
  Analysis an = analyse(def, seed, {});
  return {{"answers", {{"daily_usd", an.daily_usd}, {"monthly_usd", an.monthly_usd}}},
          {"trap", counts_json(an.trap)},
          {"safe", counts_json(an.safe)},
          {"days", an.days}};
}

Answer parse_answer(const Json& answer) {
  Answer out;
  ObjectReader r(answer, "");
  out.daily_usd = r.get_optional_number("daily_usd", -1e9, 1e9);
  out.monthly_usd = r.get_optional_number("monthly_usd", -1e11, 1e11);
  r.finish();
  return out;
}

Json grade(const Json& def, std::uint64_t seed, const Json& answer, const GradeContext& context) {
  const Answer given = parse_answer(answer);
  const std::optional<double>& daily = given.daily_usd;
  const std::optional<double>& monthly = given.monthly_usd;
  Analysis an = analyse(def, seed, context);
  const Json& hints = def.at("hints");
  const Json params = text_params(an);
  const double tol = def.at("tolerance").get<double>();
  // Relative tolerance, with a dollar's floor so a trap that costs ~0 can still be answered.
  const auto grade_one = [&](const char* id, std::optional<double> given, double truth) {
    Json q{{"id", id}};
    if (!given) {
      q["correct"] = false;
      q["feedback"] = "No answer yet.";
      return q;
    }
    const double err = std::fabs(*given - truth);
    const double allowed = std::max(1.0, tol * std::fabs(truth));
    q["correct"] = err <= allowed;
    q["feedback"] = fill_template(hints.at(err <= allowed ? "correct" : err <= 4 * allowed ? "close" : "wrong").get<std::string>(), params);
    if (err > allowed) q["hint"] = fill_template(hints.at("wrong").get<std::string>(), params);
    return q;
  };
  Json qd = grade_one("daily_usd", daily, an.daily_usd);
  Json qm = grade_one("monthly_usd", monthly, an.monthly_usd);
  if (daily && monthly && !qm["correct"].get<bool>() &&
      std::fabs(*monthly - *daily * kDaysPerMonth) > std::max(1.0, tol * std::fabs(*daily * kDaysPerMonth))) {
    qm["hint"] = fill_template(hints.at("monthly_vs_daily").get<std::string>(), params);
  }
  const int right = (qd["correct"].get<bool>() ? 1 : 0) + (qm["correct"].get<bool>() ? 1 : 0);
  Json out{{"score", right / 2.0}, {"correct", right == 2}, {"questions", Json::array({qd, qm})}, {"simulated", simulated_json(an)}};
  // After solving, the formula with this variant's simulated inputs.
  if (right == 2) out["formula"] = fill_template(def.at("explanation").get<std::string>(), params);
  return out;
}

Json explain(const Json& def, std::uint64_t seed, const GradeContext& context) {
  Analysis an = analyse(def, seed, context);
  return {{"text", fill_template(def.at("explanation").get<std::string>(), text_params(an))},
          {"answers", {{"daily_usd", an.daily_usd}, {"monthly_usd", an.monthly_usd}}},
          {"trap", counts_json(an.trap)},
          {"safe", counts_json(an.safe)},
          {"simulated", simulated_json(an)}};
}

}  // namespace gpuscale::exercise5
