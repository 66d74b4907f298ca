// The metric pipeline (core/src/metrics/pipeline.cpp and its use in sim/measure.cpp): each target's
// scrape phase, dcgm-exporter's collections, what an instant query returns, the ages the HPA's
// decision log shows, and the ideal pipeline kept beside it.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "metrics/pipeline.hpp"
#include "sim/simulation.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kS = kMicrosPerSecond;

PipelineTiming timing(Micros delay = 0) {
  PipelineTiming t;
  t.scrape_interval = 15 * kS;
  t.collect_interval = 30 * kS;
  t.query_delay = delay;
  return t;
}

// Three replicas held busy by a steady load under a DCGM HPA, every sync logged in detail.
Scenario busy_scenario(const Json& metrics, std::uint64_t seed = 5) {
  Json doc = Json::parse(R"({
    "duration_s": 600,
    "workload": {"preset": "custom", "phases": [{"duration_s": 600, "rate_rps": 3}], "timeout_s": 60},
    "cold_start": {"node_provisioning_s": 20, "model_load_s": 30, "warmup_s": 10},
    "autoscaler": {"strategy": "gpu_util", "replicas": 3, "min_replicas": 3, "max_replicas": 6},
    "output": {"decision_detail": true}
  })");
  doc["seed"] = seed;
  doc["metrics"] = metrics;
  return parse_scenario(doc);
}

std::vector<const DecisionRecord*> hpa_syncs(const RunResult& r) {
  std::vector<const DecisionRecord*> out;
  for (const DecisionRecord& d : r.decisions) {
    if (d.controller == "hpa") out.push_back(&d);
  }
  return out;
}

}  // namespace

TEST_CASE("metrics pipeline: every target scrapes at its own phase, drawn from the scenario seed", "[metrics]") {
  const Micros interval = 15 * kS;
  std::set<Micros> phases;
  for (const char* target : {"metrics.scrape/vllm-0/vllm", "metrics.scrape/vllm-0/dcgm-exporter", "metrics.scrape/vllm-1/vllm",
                             "metrics.scrape/vllm-1/dcgm-exporter", "metrics.scrape/vllm-2/vllm"}) {
    const Micros p = loop_phase(7, target, interval);
    CHECK(p >= 0);
    CHECK(p < interval);
    CHECK(loop_phase(7, target, interval) == p);  // the same target, the same phase
    phases.insert(p);
  }
  CHECK(phases.size() == 5);  // five targets, five phases
  CHECK(loop_phase(8, "metrics.scrape/vllm-0/vllm", interval) != loop_phase(7, "metrics.scrape/vllm-0/vllm", interval));

  // In a run, the replicas' samples are as old as their own phases make them: at one sync the three
  // replicas' vLLM-free DCGM values were scraped at different times, and another seed moves them.
  const auto scrape_ages = [](std::uint64_t seed) {
    const RunResult r = run_simulation(busy_scenario(Json::object(), seed));
    const DecisionRecord* d = hpa_syncs(r).at(2);
    const Json& a = d->detail.at("metric_ages").at(0);
    REQUIRE(a.at("pods") == 3);
    return std::make_pair(a.at("since_scrape_s").at("min").get<double>(), a.at("since_scrape_s").at("max").get<double>());
  };
  const auto five = scrape_ages(5), six = scrape_ages(6);
  CHECK(five.first < five.second);
  CHECK(five != six);
}

TEST_CASE("metrics pipeline: offsets pin every target's loop on the grid", "[metrics]") {
  CHECK(last_tick(20 * kS, 3 * kS, 15 * kS) == 18 * kS);
  CHECK(last_tick(18 * kS, 3 * kS, 15 * kS) == 18 * kS);
  CHECK(last_tick(2 * kS, 3 * kS, 15 * kS) == -12 * kS);  // the grid goes on before the run
  CHECK(next_tick(19 * kS, 3 * kS, 15 * kS) == 33 * kS);
  CHECK(next_tick(18 * kS, 3 * kS, 15 * kS) == 18 * kS);
}

TEST_CASE("metrics pipeline: a DCGM value stays what was collected until the next collection", "[metrics]") {
  // The exporter is scraped at 3, 18, 33, 48 s; it collects at 7 s and 37 s.
  TargetSeries t(0, 3 * kS, 7 * kS);
  const PipelineTiming pt = timing();
  t.collect({7 * kS, true, 40, 70000}, pt);
  // Scrapes at 18 and 33 re-read the 7 s collection, whatever the GPU did since.
  for (Micros now : {18 * kS, 25 * kS, 33 * kS, 36 * kS}) {
    const ScrapedReplica s = t.query(0, now, pt);
    REQUIRE(s.has_gpu_metrics);
    CHECK(s.gpu_util == 40);
    CHECK(s.dcgm_collected_at == 7 * kS);
    CHECK(s.dcgm_scraped_at == last_tick(now, 3 * kS, 15 * kS));
  }
  t.collect({37 * kS, true, 90, 70000}, pt);
  CHECK(t.query(0, 40 * kS, pt).gpu_util == 40);  // collected, not yet scraped
  const ScrapedReplica later = t.query(0, 48 * kS, pt);
  CHECK(later.gpu_util == 90);
  CHECK(later.dcgm_collected_at == 37 * kS);
  // A sample before any collection of the pod's GPUs is no sample (the HPA counts the pod missing).
  TargetSeries fresh(0, 3 * kS, 7 * kS);
  CHECK_FALSE(fresh.query(0, 5 * kS, pt).has_gpu_metrics);
}

TEST_CASE("metrics pipeline: a query sees the last scrape before it, later with a query delay, none once stale", "[metrics]") {
  const PipelineTiming none = timing(), delayed = timing(4 * kS);
  TargetSeries t(2 * kS, 0, 0), d(2 * kS, 0, 0);  // read without and with a 4 s query delay
  for (TargetSeries* x : {&t, &d}) x->scrape_vllm({2 * kS, true, 5, 3, 0.25}, x == &t ? none : delayed);
  CHECK(t.query(0, 16 * kS, none).waiting == 5);
  t.scrape_vllm({17 * kS, true, 9, 4, 0.5}, none);
  d.scrape_vllm({17 * kS, true, 9, 4, 0.5}, delayed);
  CHECK(t.query(0, 17 * kS, none).waiting == 9);  // the scrape at this instant already landed
  CHECK(d.query(0, 17 * kS, delayed).waiting == 5);
  CHECK(d.query(0, 17 * kS, delayed).vllm_scraped_at == 2 * kS);
  CHECK(d.query(0, 21 * kS, delayed).waiting == 9);
  // The server went away (connection refused): the series is stale, the query returns nothing.
  t.scrape_vllm({32 * kS, false, 0, 0, 0}, none);
  CHECK_FALSE(t.query(0, 32 * kS, none).has_vllm_metrics);
  // Older than the lookback delta (5 min): nothing either.
  TargetSeries old(2 * kS, 0, 0);
  old.scrape_vllm({2 * kS, true, 5, 3, 0.25}, none);
  CHECK(old.query(0, 301 * kS, none).has_vllm_metrics);
  CHECK_FALSE(old.query(0, 302 * kS, none).has_vllm_metrics);
}

TEST_CASE("metrics pipeline: the age the decision log shows is now minus the collection and the scrape", "[metrics]") {
  for (double delay : {0.0, 5.0}) {
    INFO("query_delay_s " << delay);
    Json m = {{"scrape_offset_s", 4}, {"dcgm_collect_offset_s", 10}, {"query_delay_s", delay}};
    const RunResult r = run_simulation(busy_scenario(m));
    const auto syncs = hpa_syncs(r);
    REQUIRE(syncs.size() >= 30);
    for (const DecisionRecord* d : syncs) {
      const Micros now = seconds_to_micros(d->t_s);
      const Micros scraped = last_tick(now - seconds_to_micros(delay), 4 * kS, 15 * kS);
      const Micros collected = last_tick(scraped, 10 * kS, 30 * kS);
      const Json& a = d->detail.at("metric_ages").at(0);
      CHECK(a.at("metric") == "DCGM_FI_DEV_GPU_UTIL");
      if (a.at("pods") == 0) continue;
      CHECK(a.at("since_collection_s").at("min").get<double>() == micros_to_seconds(now - collected));
      CHECK(a.at("since_collection_s").at("max").get<double>() == micros_to_seconds(now - collected));
      CHECK(a.at("since_scrape_s").at("max").get<double>() == micros_to_seconds(now - scraped));
      CHECK(d->explanation.find("collected " + std::to_string(static_cast<int>(micros_to_seconds(now - collected)))) != std::string::npos);
    }
  }
}

TEST_CASE("metrics pipeline: lag changes what the HPA decides; ideal logs no ages", "[metrics]") {
  const RunResult real = run_simulation(busy_scenario(Json::object()));
  const RunResult ideal = run_simulation(busy_scenario({{"pipeline", "ideal"}}));
  for (const DecisionRecord* d : hpa_syncs(ideal)) {
    CHECK_FALSE(d->detail.contains("metric_ages"));
    CHECK(d->explanation.find("ages of the values used") == std::string::npos);
  }
  for (const DecisionRecord* d : hpa_syncs(real)) CHECK(d->detail.contains("metric_ages"));
  // The ideal pipeline sees the DCGM value of the scrape at the sync itself, the realistic one an
  // older one: the values the HPA averaged differ at some sync.
  const auto a = hpa_syncs(real), b = hpa_syncs(ideal);
  REQUIRE(a.size() == b.size());
  bool differ = false;
  for (std::size_t i = 0; i < a.size(); ++i) differ = differ || a[i]->metric_value != b[i]->metric_value;
  CHECK(differ);
}
