// No input can crash, hang or exhaust the lab: the strict JSON reader, the messages that quote what a
// user typed, the work budget (estimate and meter), the bounded decision log, and the data structures
// that keep long runs linear (engine aborts, the windowed P99).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "kernel/decision_log.hpp"
#include "kernel/rng.hpp"
#include "metrics/percentile.hpp"
#include "metrics/windowed_quantile.hpp"
#include "scenario/scenario.hpp"
#include "serving/engine.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/budget.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::input_error;
using gpuscale::testing::read_text;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

// ---- the JSON reader -------------------------------------------------------------------------------

TEST_CASE("JSON nesting is limited: 64 levels read, deeper refused at its path, 150,000 levels without a crash", "[bounds][json]") {
  CHECK(parse_json_text(nested(kMaxJsonDepth)).is_array());
  const InputError e = input_error([] { parse_json_text("{\"seed\": " + nested(kMaxJsonDepth) + "}"); });
  CHECK(contains(e.path(), "/seed/0/0"));
  CHECK(contains(e.message(), "nested more than 64 levels"));
  const InputError deep = input_error([] { api::run("{\"workload\": " + nested(150000) + "}"); });
  CHECK(deep.path().rfind("/workload/0/0", 0) == 0);
  CHECK(deep.path().size() < 200);  // the path is shortened, not 300 KB of "/0"
}

TEST_CASE("duplicate JSON keys are refused at the duplicate", "[bounds][json]") {
  const InputError e = input_error([] { api::run(R"({"seed": 1, "workload": {"timeout_s": 5, "timeout_s": 6}})"); });
  CHECK(e.path() == "/workload/timeout_s");
  CHECK(contains(e.message(), "duplicate key \"timeout_s\""));
  // Keys are JSON pointer tokens in paths: "/" and "~" escaped.
  const InputError slash = input_error([] { parse_json_text(R"({"a/b~c": 1, "a/b~c": 2})"); });
  CHECK(slash.path() == "/a~1b~0c");
}

TEST_CASE("numbers beyond a double are input errors at their path, not internal errors", "[bounds][json]") {
  const InputError e = input_error([] { api::run(R"({"duration_s": 1e400})"); });
  CHECK(e.path() == "/duration_s");
  CHECK(contains(e.message(), "\"1e400\" is beyond the range of a double"));
  CHECK(input_error([] { api::run(R"({"cost": {"gpu_hour_usd": -1e400}})"); }).path() == "/cost/gpu_hour_usd");
  // Whole-number bounds print as whole numbers.
  const InputError seed = input_error([] { api::run(R"({"seed": 1e17})"); });
  CHECK(contains(seed.message(), "between 0 and 9007199254740992"));
}

TEST_CASE("syntax errors name the line, the column and the field being read", "[bounds][json]") {
  const InputError e = input_error([] { api::run("{\n  \"workload\": {\"timeout_s\": tru}\n}"); });
  CHECK(e.path() == "/workload/timeout_s");
  CHECK(contains(e.message(), "line 2, column"));
  // After a complete field the error is about its object, not about that field.
  CHECK(input_error([] { api::run("{\"seed\": 1, oops}"); }).path() == "");
  CHECK(input_error([] { api::run("{\"workload\": {\"timeout_s\": 5,]}"); }).path() == "/workload");
  CHECK(input_error([] { api::run("[1, 2"); }).path() == "/2");
  // Invalid UTF-8 inside a string.
  CHECK(contains(input_error([] { api::run("{\"seed\": \"\xff\"}"); }).message(), "ill-formed UTF-8"));
}

// ---- messages that quote the user ------------------------------------------------------------------

TEST_CASE("messages quote user text safely: NUL and controls escaped, long runs shortened", "[bounds][messages]") {
  CHECK(sanitize_for_message(std::string("a\0b\nc\x7f", 6)) == "a\\u0000b\\nc\\u007f");
  CHECK(sanitize_for_message("caf\xc3\xa9") == "caf\xc3\xa9");            // valid UTF-8 kept
  CHECK(sanitize_for_message("bad \xc3( byte") == "bad \\xc3( byte");      // invalid bytes shown
  CHECK(sanitize_for_message("\xed\xa0\x80") == "\\xed\\xa0\\x80");       // a UTF-16 surrogate is not UTF-8
  const std::string shortened = sanitize_for_message("key " + std::string(5000, 'k') + " end");
  CHECK(shortened.size() < 300);
  CHECK(contains(shortened, "(5000 bytes)"));
  CHECK(contains(shortened, " end"));
  CHECK(quote_for_message("abc") == "\"abc\"");
  CHECK(quote_for_message(std::string(100, 'x'), 10) == "\"xxxxxxxxxx…\" (100 bytes)");

  const InputError nul = input_error([] { api::run(std::string("{\"workload\": {\"preset\": \"a\\u0000b\"}}")); });
  CHECK(contains(nul.what(), "\"a\\u0000b\" is not allowed"));  // what() is not cut at the NUL
  const InputError big = input_error([] { api::run("{\"" + std::string(3'000'000, 'k') + "\": 1}"); });
  CHECK(std::string(big.what()).size() < 2000);
  CHECK(contains(big.message(), "unknown field"));
}

// ---- caps the scenario puts on what the HPA and the pods may ask for ---------------------------------

TEST_CASE("a custom HPA is capped at the lab's 256 replicas and may only read metrics the simulation serves", "[bounds][scenario]") {
  const auto custom = [](const std::string& hpa) {
    return "{\"autoscaler\": {\"strategy\": \"custom\", \"hpa\": " + hpa + "}}";
  };
  const InputError min = input_error([&] { parse_scenario_text(custom(R"({"minReplicas": 1000000, "maxReplicas": 1000000, "metrics": []})")); });
  CHECK(min.path() == "/autoscaler/hpa/minReplicas");
  CHECK(contains(min.message(), "at most 256"));
  CHECK(input_error([&] { parse_scenario_text(custom(R"({"maxReplicas": 300})")); }).path() == "/autoscaler/hpa/maxReplicas");

  const std::string pods = R"({"maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "requests_per_second"},
                              "target": {"type": "AverageValue", "averageValue": "10"}}}]})";
  const InputError metric = input_error([&] { parse_scenario_text(custom(pods)); });
  CHECK(metric.path() == "/autoscaler/hpa/metrics/0/pods/metric/name");
  CHECK(contains(metric.message(), "FailedGetPodsMetric"));
  CHECK(contains(metric.message(), "vllm:num_requests_waiting"));
  const std::string cpu = R"({"maxReplicas": 4, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                             "target": {"type": "Utilization", "averageUtilization": 60}}}]})";
  CHECK(input_error([&] { parse_scenario_text(custom(cpu)); }).path() == "/autoscaler/hpa/metrics/0/type");
  // A served one is fine.
  const std::string ok = R"({"maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"},
                            "target": {"type": "AverageValue", "averageValue": "10"}}}]})";
  CHECK(parse_scenario_text(custom(ok)).pools[0].autoscaler.hpa->max_replicas == 4);
}

TEST_CASE("pods request zero or more CPU and memory", "[bounds][scenario]") {
  const auto workload = [](const std::string& pod) {
    return R"({"cluster": {"preset": "karpenter_when_empty", "workloads": [{"name": "web", "replicas": 1, "pod": )" + pod + "}]}}";
  };
  CHECK(input_error([&] { parse_scenario_text(workload(R"({"cpu": "-500m"})")); }).path() == "/cluster/workloads/0/pod/cpu");
  CHECK(input_error([&] { parse_scenario_text(workload(R"({"memory": "-1"})")); }).path() == "/cluster/workloads/0/pod/memory");
  CHECK(parse_scenario_text(workload(R"({"cpu": "0", "memory": "0"})")).cluster.workloads[0].pod.cpu_milli == 0);
}

// ---- the work budget -------------------------------------------------------------------------------

TEST_CASE("the work estimate counts arrivals, prefill steps, periodic wake-ups and series rows", "[bounds][budget]") {
  Scenario s = parse_scenario_text(R"({"duration_s": 3600, "workload": {"preset": "steady", "rate_scale": 5,
      "prompt_tokens": {"kind": "fixed", "mean": 4096, "min": 1, "max": 8192}},
      "engine": {"max_num_batched_tokens": 1024}, "metrics": {"scrape_interval_s": 10}, "autoscaler": {"sync_period_s": 20}})");
  const WorkEstimate e = estimate_work(s);
  CHECK(e.requests == Approx(0.2 * 5 * 3600));
  CHECK(e.prefill_steps == Approx(e.requests * 4));
  // The realistic metric pipeline: the 360 series rows, and per replica (one at the start) 360 scrapes of
  // its vLLM server and 120 dcgm-exporter collections, each with its sample window; 180 HPA syncs.
  CHECK(e.periodic == Approx(360 + 1 * (360 + 2 * 120) + 180));
  CHECK(e.series_rows == 361);
  CHECK(e.events == Approx(3 * e.requests + e.prefill_steps + e.periodic));
  // The ideal one: a scrape of every replica and its DCGM window per interval.
  s.metrics.pipeline = MetricsPipeline::Ideal;
  CHECK(estimate_work(s).periodic == Approx(2 * 360 + 180));
}

TEST_CASE("a scenario past the budget is refused before it runs, naming the field and what fits", "[bounds][budget]") {
  const InputError rows = input_error([] {
    run_simulation(parse_scenario_text(R"({"duration_s": 691200, "workload": {"preset": "steady"}, "metrics": {"scrape_interval_s": 1},
                                           "output": {"decisions": false}})"));
  });
  CHECK(rows.path() == "/metrics/scrape_interval_s");
  CHECK(contains(rows.message(), "691,201 rows"));
  CHECK(contains(rows.message(), "at least 3.5 s"));

  const InputError steps = input_error([] {
    run_simulation(parse_scenario_text(R"({"duration_s": 86400, "workload": {"preset": "steady", "rate_scale": 100,
        "prompt_tokens": {"kind": "fixed", "mean": 16384, "min": 1, "max": 16384}}, "engine": {"max_num_batched_tokens": 16},
        "autoscaler": {"strategy": "fixed", "replicas": 256}})"));
  });
  CHECK(steps.path() == "/engine/max_num_batched_tokens");
  CHECK(contains(steps.message(), "mostly prefill steps"));
  CHECK(contains(steps.message(), "Raise max_num_batched_tokens"));

  // A run just inside a small budget passes the estimate.
  Scenario small = parse_scenario_text(R"({"duration_s": 60, "workload": {"preset": "steady"}})");
  CHECK_NOTHROW(check_work_budget(small, WorkLimits{1000, 2000, 100}));
  CHECK_THROWS_AS(check_work_budget(small, WorkLimits{1000, 2000, 2}), InputError);
}

TEST_CASE("the meter stops a run past the budget and says what took the work", "[bounds][budget]") {
  // Thousands of pods that fit no NodePool: every retry explains every one of them.
  Json sc = parse_json_text(read_text("scenarios/golden-karpenter-trap.json"));
  sc["duration_s"] = 86400;
  sc["cluster"]["workloads"] = Json::array();
  for (int i = 0; i < 4; ++i) {
    sc["cluster"]["workloads"].push_back({{"name", "web" + std::to_string(i)}, {"replicas", 1000}, {"pod", {{"cpu", "500"}}}});
  }
  const Scenario s = parse_scenario(sc);
  const InputError e = input_error([&] { run_simulation(s, WorkLimits{2'000'000, 400'000, 200'000}); });
  CHECK(e.path() == "/cluster");
  CHECK(contains(e.message(), "the run stopped at t = "));
  CHECK(contains(e.message(), "check that every pod fits a NodePool"));

  // The same budget is enough for the scenario as it was.
  const Scenario golden = parse_scenario_text(read_text("scenarios/golden-karpenter-trap.json"));
  CHECK_NOTHROW(run_simulation(golden, WorkLimits{2'000'000, 4'000'000, 200'000}));
}

TEST_CASE("every scenario of scenarios/ and the benchmarks fit the budget with room to spare", "[bounds][budget]") {
  for (const char* f : {"scenarios/bench-24h.json", "scenarios/bench-7d-consolidation.json", "scenarios/golden-two-pools.json"}) {
    INFO(f);
    const Scenario s = parse_scenario_text(read_text(f));
    CHECK(estimate_work(s).events < WorkBudget::kMaxEvents / 2);
    CHECK(estimate_work(s).series_rows < double(WorkBudget::kMaxSeriesRows) / 2);
  }
}

// ---- the decision log ------------------------------------------------------------------------------

TEST_CASE("the decision log keeps everything up to its folding point, then folds repeats and stops at its size", "[bounds][decisions]") {
  DecisionLog log;
  const auto record = [](double t, const std::string& text) {
    DecisionRecord r;
    r.t_s = t;
    r.controller = "karpenter.provisioner";
    r.reason = "NoCompatibleNodePool";
    r.explanation = text;
    return r;
  };
  for (std::size_t i = 0; i < DecisionLog::kFoldAfter; ++i) log.add(record(double(i), "pod web-1 fits no NodePool"));
  CHECK(log.records().size() == DecisionLog::kFoldAfter);  // identical, yet all kept: below the folding point
  CHECK_FALSE(log.stats().any());

  log.add(record(1e6, "pod web-1 fits no NodePool"));
  log.add(record(1e6 + 10, "pod web-1 fits no NodePool"));
  CHECK(log.records().size() == DecisionLog::kFoldAfter);
  const DecisionRecord& latest = log.records().back();  // folded into the latest kept one with that content
  CHECK(latest.repeats == 2);
  CHECK(latest.last_t_s == 1e6 + 10);
  CHECK(log.records()[0].repeats == 0);
  CHECK(log.stats().folded == 2);

  for (std::size_t i = 0; log.records().size() < DecisionLog::kMaxRecords; ++i) log.add(record(2e6, "pod " + std::to_string(i)));
  log.add(record(3e6, "something new"));
  log.add(record(3e6, "pod 0"));  // still folds
  CHECK(log.records().size() == DecisionLog::kMaxRecords);
  CHECK(log.stats().dropped == 1);
  CHECK(log.stats().folded == 3);
  CHECK(log.stats().recorded == std::int64_t(DecisionLog::kMaxRecords) + 4);
}

TEST_CASE("a run whose log was bounded says so in its result", "[bounds][decisions]") {
  // An HPA sync every second for 8 hours: 28,800 syncs, most of them alike.
  Scenario s = parse_scenario_text(R"({"duration_s": 28800, "workload": {"preset": "steady"}, "metrics": {"scrape_interval_s": 1},
                                       "autoscaler": {"sync_period_s": 1}})");
  const RunResult r = run_simulation(s);
  REQUIRE(r.decision_log.any());
  CHECK(r.decisions.size() <= DecisionLog::kMaxRecords);
  const Json j = result_to_json(r, s);
  CHECK(j["decision_log"]["recorded"] == r.decision_log.recorded);
  CHECK(j["decision_log"]["folded"].get<std::int64_t>() > 0);
  std::int64_t counted = 0;
  for (const auto& d : j["decisions"]) counted += 1 + d.value("repeats", std::int64_t(0));
  CHECK(counted + j["decision_log"]["not_kept"].get<std::int64_t>() == r.decision_log.recorded);
  // A short run's result has no such field.
  Scenario brief = parse_scenario_text(R"({"duration_s": 600, "workload": {"preset": "steady"}})");
  CHECK_FALSE(result_to_json(run_simulation(brief), brief).contains("decision_log"));
}

// ---- linear-time structures ------------------------------------------------------------------------

TEST_CASE("the windowed percentile equals the nearest-rank percentile of the window", "[bounds][metrics]") {
  // A short window (selected over at each query) and a long one that grows past the size where the
  // window is kept sorted in blocks, then shrinks back below it.
  // And a short one kept sorted from the start (a window of many scrapes).
  for (const auto& [span, sorted] : {std::pair<Micros, bool>{600, false}, {30000, false}, {600, true}}) {
    INFO("window " << span << (sorted ? ", kept sorted" : ""));
    Rng rng = Rng::stream(7, "test.window");
    WindowedQuantile w;
    if (sorted) w.keep_sorted();
    std::vector<std::pair<Micros, double>> ref;
    std::size_t front = 0;
    Micros t = 0;
    std::size_t largest = 0;
    for (int i = 0; i < 40000; ++i) {
      t += static_cast<Micros>(rng.uniform_int(4));
      // Many ties (a coarse grid) and some spread.
      const double v = i % 3 == 0 ? double(rng.uniform_int(21)) : rng.uniform() * 100;
      w.push(t, v);
      ref.emplace_back(t, v);
      if (i % 7 == 0) {
        const Micros cutoff = t - (i < 30000 ? span : span / 20);  // the window shrinks at the end
        w.expire(cutoff);
        while (front < ref.size() && ref[front].first <= cutoff) ++front;
        std::vector<double> vals;
        for (std::size_t k = front; k < ref.size(); ++k) vals.push_back(ref[k].second);
        REQUIRE(w.size() == vals.size());
        largest = std::max(largest, vals.size());
        for (double p : {0.5, 0.9, 0.99, 1.0}) {
          std::vector<double> copy = vals;
          REQUIRE(w.percentile(p) == percentile(copy, p));
        }
      }
    }
    if (span > 600) CHECK(largest > 10000);  // it was kept sorted for a while
    CHECK(WindowedQuantile::sorted_pays(60, 1));
    CHECK_FALSE(WindowedQuantile::sorted_pays(60, 15));
    w.expire(t);
    CHECK(w.size() == 0);
    CHECK(w.percentile(0.99) == 0);
  }
}

TEST_CASE("aborting a waiting request is immediate and it is never admitted", "[bounds][engine]") {
  EngineConfig cfg;
  cfg.profile = engine_profile("llama-3.3-70b-fp8-tp2-h100-sxm5");
  cfg.max_num_seqs = 1;
  Engine e(cfg);
  for (std::uint32_t id = 0; id < 5000; ++id) REQUIRE(e.add_request(id, 100, 10, 0));
  CHECK(e.num_requests_waiting() == 5000);
  // The clients give up oldest first, as timeouts do; each abort is O(1).
  for (std::uint32_t id = 1; id < 4999; ++id) REQUIRE(e.abort_request(id));
  CHECK_FALSE(e.abort_request(7));  // already gone
  CHECK(e.num_requests_waiting() == 2);
  std::vector<EngineEvent> out;
  Micros now = 0;
  std::vector<std::uint32_t> finished;
  while (e.has_work()) {
    now += e.begin_step(now);
    out.clear();
    e.end_step(now, out);
    for (const auto& ev : out) {
      if (ev.kind == EngineEvent::Finished) finished.push_back(ev.request_id);
    }
  }
  CHECK(finished == std::vector<std::uint32_t>{0, 4999});
  CHECK(e.num_requests_waiting() == 0);
}

// ---- calibration (a tool, not a test: `core_tests "[.calibration]"`) --------------------------------
// Runs every scenario of $GPUSCALE_CALIBRATE (a folder) without a budget and prints, per scenario, the
// best of three wall times and the work counts, as CSV for fitting WorkCounts' weights
// (scripts/calibrate-budget.py, docs/limits.md).
TEST_CASE("calibration: wall time against the work counts", "[.calibration]") {
  const char* dir = std::getenv("GPUSCALE_CALIBRATE");
  REQUIRE(dir);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::printf("scenario,ms,events,scrapes,syncs,cluster,rows,sequences,router_visits,replica_visits,pod_views,decisions,detailed,fits\n");
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    const Scenario s = parse_scenario_text(text.str());
    const WorkLimits unbounded{std::int64_t(1) << 50, std::int64_t(1) << 50, std::int64_t(1) << 40};
    double best = 1e300;
    WorkCounts w;
    for (int k = 0; k < 3; ++k) {
      const auto t0 = std::chrono::steady_clock::now();
      w = run_simulation(s, unbounded).work;
      best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%s,%.1f,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld\n", std::filesystem::path(f).filename().string().c_str(), best,
                (long long)w.events, (long long)w.scrapes, (long long)w.syncs, (long long)w.cluster, (long long)w.rows, (long long)w.sequences, (long long)w.router_visits, (long long)w.replica_visits,
                (long long)w.pod_views, (long long)w.decisions, (long long)w.detailed, (long long)w.fits);
  }
}
