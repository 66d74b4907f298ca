// Layer 3 beyond the HPA presets, in runs: the strategies that read the lab's Prometheus rules
// (ttft_p99, goodput), the model-level autoscalers (planner, wva) wired to their pools, variants of a
// model behind one gateway, and (below) disaggregated prefill/decode serving.
#include <catch2/catch.hpp>

#include <set>

#include "gpuscale/api.hpp"
#include "scenario/scenario.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

Json run(const Json& scenario) { return api::run(dump_json(scenario)); }

std::vector<Json> decisions_of(const Json& result, const std::string& controller) {
  std::vector<Json> out;
  for (const Json& d : result.at("decisions"))
    if (d.at("controller") == controller) out.push_back(d);
  return out;
}

}  // namespace

TEST_CASE("strategies: ttft_p99 and goodput are HPAs on External metrics the lab's rules compute", "[disagg][strategies]") {
  const Scenario t = parse_scenario(Json{{"autoscaler", {{"strategy", "ttft_p99"}, {"target", 1.5}}}});
  REQUIRE(t.pools[0].autoscaler.hpa);
  const hpa::MetricSpec& m = t.pools[0].autoscaler.hpa->metrics.at(0);
  CHECK(m.type == hpa::MetricSourceType::External);
  CHECK(m.metric.name == kTtftP99Metric);
  CHECK(m.target.type == hpa::MetricTargetType::Value);
  CHECK(*m.target.value_milli == 1500);
  const Scenario g = parse_scenario(Json{{"autoscaler", {{"strategy", "goodput"}}}});
  CHECK(g.pools[0].autoscaler.hpa->metrics.at(0).metric.name == kSloViolationMetric);
  CHECK(*g.pools[0].autoscaler.hpa->metrics.at(0).target.average_value_milli == 50);
  // A custom HPA may read them too.
  CHECK_NOTHROW(parse_scenario(Json::parse(R"({"autoscaler": {"strategy": "custom", "hpa": {"maxReplicas": 4, "metrics": [
      {"type": "External", "external": {"metric": {"name": "slo_violations:rate1m"}, "target": {"type": "AverageValue", "averageValue": "100m"}}}]}}})")));
}

TEST_CASE("strategies: the P99 TTFT HPA scales a burst out from what the servers measure", "[disagg][strategies]") {
  // rag_burst's documents are shared prefixes: with the prefix cache one replica keeps its P99 TTFT
  // under a second at three times the preset's rate, so the burst here is six times it.
  const Json base = {{"duration_s", 1800}, {"workload", {{"preset", "rag_burst"}, {"rate_scale", 6}}},
                     {"autoscaler", {{"strategy", "ttft_p99"}, {"target", 1.0}, {"max_replicas", 8}}}, {"seed", 3}};
  const Json out = run(base);
  const std::vector<Json> syncs = decisions_of(out, "hpa");
  REQUIRE_FALSE(syncs.empty());
  // Each sync reads the metric: until a first token exists it is missing (FailedGetExternalMetric),
  // then its value and the ratio to the 1 s target appear in the arithmetic.
  bool read = false, up = false;
  for (const Json& d : syncs) {
    const std::string x = d.at("explanation");
    read = read || x.find("External vllm:time_to_first_token_seconds:p99_1m, Value 1)") != std::string::npos;
    up = up || d.at("desired_replicas").get<int>() > d.at("current_replicas").get<int>();
  }
  CHECK(read);
  CHECK(up);
  CHECK(out.at("summary").at("peak_replicas").get<int>() > 1);
}

TEST_CASE("service scalers: planner and wva pools form their model's groups", "[disagg][strategies]") {
  const Json pools = Json::parse(R"({
    "workload": {"models": [{"model": "llama", "share": 1}]},
    "pools": [
      {"name": "h100", "model": "llama", "autoscaler": {"strategy": "wva", "max_replicas": 6, "wva": {"kvCacheThreshold": 0.7}}},
      {"name": "h200", "model": "llama", "engine": {"profile": "llama-3.3-70b-fp8-tp2-h100-sxm5"}, "autoscaler": {"strategy": "wva", "max_replicas": 4}}
    ]})");
  const Scenario s = parse_scenario(pools);
  REQUIRE(s.service_groups.size() == 1);
  CHECK(s.service_groups[0].pools == std::vector<int>{0, 1});
  CHECK(std::get<wva::WvaConfig>(s.service_groups[0].config).kv_cache_threshold == 0.7);
  // Each variant's HPA reads wva_desired_replicas, with its own bounds.
  CHECK(s.pools[1].autoscaler.hpa->metrics.at(0).metric.name == "wva_desired_replicas");
  CHECK(s.pools[1].autoscaler.hpa->max_replicas == 4);
  // The settings once per model.
  Json twice = pools;
  twice["pools"][1]["autoscaler"]["wva"] = {{"kvCacheThreshold", 0.9}};
  CHECK(testing::input_error([&] { parse_scenario(twice); }).path() == "/pools/1/autoscaler/wva");
  // The planner's mode follows the roles of its pools.
  const Scenario agg = parse_scenario(Json{{"autoscaler", {{"strategy", "planner"}, {"planner", {{"optimization_target", "load"},
                                                            {"prefill_scale_up_queue_tokens", 8192}, {"prefill_scale_down_queue_tokens", 1024},
                                                            {"decode_scale_up_kv_rate", 80}, {"decode_scale_down_kv_rate", 40}}}}}});
  REQUIRE(agg.service_groups.size() == 1);
  CHECK(std::get<dynamo::PlannerConfig>(agg.service_groups[0].config).mode == dynamo::PlannerMode::Agg);
  CHECK_FALSE(agg.pools[0].autoscaler.hpa);  // the planner sets the replicas; no HPA
  // ARIMA and Prophet are not ported (their fits are numerical optimisers): refused where the predictor
  // would run (throughput-based scaling, target sla).
  CHECK(testing::input_error([] {
          parse_scenario(Json{{"autoscaler", {{"strategy", "planner"}, {"planner", {{"optimization_target", "sla"}, {"load_predictor", "arima"}}}}}});
        }).path() == "/autoscaler/planner/load_predictor");
  CHECK(testing::input_error([] { parse_scenario(Json{{"autoscaler", {{"strategy", "hpa"}}}}); }).path() == "/autoscaler/strategy");
  CHECK(testing::input_error([] { parse_scenario(Json{{"autoscaler", {{"strategy", "gpu_util"}, {"wva", Json::object()}}}}); }).path() ==
        "/autoscaler/wva");
}

TEST_CASE("service scalers: WVA publishes what the variants' HPAs follow; the gateway spreads over the variants", "[disagg][strategies]") {
  Json s = Json::parse(R"({
    "duration_s": 1800, "seed": 5,
    "workload": {"preset": "rag_burst", "rate_scale": 3, "models": [{"model": "llama", "share": 1}]},
    "pools": [
      {"name": "cheap", "model": "llama", "autoscaler": {"strategy": "wva", "max_replicas": 6}},
      {"name": "dear", "model": "llama", "autoscaler": {"strategy": "wva", "max_replicas": 6}}
    ]})");
  const Json out = run(s);
  const std::vector<Json> wva = decisions_of(out, "wva");
  REQUIRE_FALSE(wva.empty());
  const std::vector<Json> hpa = decisions_of(out, "hpa");
  bool follows = false;
  for (const Json& d : hpa) follows = follows || d.at("explanation").get<std::string>().find("External wva_desired_replicas, AverageValue 1)") != std::string::npos;
  CHECK(follows);
  // Both variants took requests: the router's candidates span them.
  const Json& per_pool = out.at("pools");
  const int cheap = per_pool.at("cheap").at("summary").at("num_requests").get<int>(), dear = per_pool.at("dear").at("summary").at("num_requests").get<int>();
  CHECK(cheap > 0);
  CHECK(dear > 0);
  CHECK(cheap + dear == out.at("summary").at("num_requests").get<int>());
}
