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

// ---- disaggregated prefill/decode ---------------------------------------------------------------

namespace {

// One model served by a prefill and a decode pool; `extra` is merged over the scenario.
Json pd_scenario(const Json& extra) {
  Json s = Json::parse(R"({
    "duration_s": 600, "seed": 21, "output": {"requests": true},
    "workload": {"preset": "steady", "models": [{"model": "llama", "share": 1}]},
    "pools": [
      {"name": "prefill", "model": "llama", "role": "prefill", "autoscaler": {"strategy": "fixed", "replicas": 1}},
      {"name": "decode", "model": "llama", "role": "decode", "autoscaler": {"strategy": "fixed", "replicas": 1}}
    ]})");
  s.merge_patch(extra);
  return s;
}

// The KV of the default profile (Llama 3.3 70B FP8): 2 (K and V) × 80 layers × 8 KV heads × 128 × 1 byte.
constexpr double kLlama70bKvBytesPerToken = 2.0 * 80 * 8 * 128;

// A Karpenter cluster of p5s (on demand unless `capacity` says otherwise) starting with `initial` nodes.
Json p5_cluster(const Json& initial, const std::string& capacity = "on-demand") {
  Json c = Json::parse(R"({"provisioner": "karpenter",
    "nodepools": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"}, "spec": {"template": {"spec": {
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
      "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                       {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]}}}}]})");
  c["nodepools"][0]["spec"]["template"]["spec"]["requirements"][0]["values"][0] = capacity;
  if (!initial.is_null()) c["initial_nodes"] = initial;
  return c;
}

// Requests that reached the decode pool with a transfer.
std::vector<Json> handed_off(const Json& out) {
  std::vector<Json> v;
  for (const Json& q : out.at("requests"))
    if (!q.at("kv_loaded_at").is_null() && q.at("kv_transfer_s").get<double>() > 0) v.push_back(q);
  return v;
}

}  // namespace

TEST_CASE("disagg: a request's KV moves in latency + bytes / (link per GPU × the prefill's GPUs)", "[disagg]") {
  const int gpus = parse_scenario(pd_scenario(Json::object())).pools[0].pod.gpus;
  REQUIRE(gpus == 2);  // TP2: two GPUs each send their shard at once
  auto expect = [&](const Json& q, double gb_per_s, double latency) {
    // The decode side loads the prompt's KV but its last token's (the prefill engine computes it for the
    // one token it returns; the decode engine recomputes that token), with no shared prefix here.
    const double tokens = q.at("prompt_tokens").get<double>() - 1;
    return latency + tokens * kLlama70bKvBytesPerToken / (gb_per_s * 1e9 * gpus);
  };
  SECTION("without a cluster model: the network figure, 50 GB/s per GPU unless given") {
    const Json out = run(pd_scenario(Json::object()));
    const std::vector<Json> qs = handed_off(out);
    REQUIRE(qs.size() > 50);
    for (const Json& q : qs) CHECK(q.at("kv_transfer_s").get<double>() == Approx(expect(q, 50, 0.001)).epsilon(1e-9));
    const Json slow = run(pd_scenario({{"kv_transfer", {{"network_gb_per_s", 5}, {"latency_s", 0.01}}}}));
    for (const Json& q : handed_off(slow)) CHECK(q.at("kv_transfer_s").get<double>() == Approx(expect(q, 5, 0.01)).epsilon(1e-9));
  }
  SECTION("on one node NVLink; across nodes the node's network shared by its GPUs") {
    // Both pods on the one p5 (8 GPUs): NVLink at 450 GB/s per GPU.
    const Json one = run(pd_scenario({{"cluster", p5_cluster(Json::array({{{"instance_type", "p5.48xlarge"}, {"count", 1}}}))}}));
    const std::vector<Json> near = handed_off(one);
    REQUIRE(near.size() > 50);
    for (const Json& q : near) CHECK(q.at("kv_transfer_s").get<double>() == Approx(expect(q, 450, 0.001)).epsilon(1e-9));
    // Each pool pinned to its own zone's p5: 3,200 Gbps of EFA over 8 GPUs = 50 GB/s per GPU.
    Json apart = pd_scenario({{"cluster", p5_cluster(Json::array({{{"instance_type", "p5.48xlarge"}, {"zone", "us-east-1a"}},
                                                                  {{"instance_type", "p5.48xlarge"}, {"zone", "us-east-1b"}}}))}});
    apart["pools"][0]["pod"] = {{"gpus", 2}, {"nodeSelector", {{"topology.kubernetes.io/zone", "us-east-1a"}}}};
    apart["pools"][1]["pod"] = {{"gpus", 2}, {"nodeSelector", {{"topology.kubernetes.io/zone", "us-east-1b"}}}};
    const std::vector<Json> far = handed_off(run(apart));
    REQUIRE(far.size() > 50);
    for (const Json& q : far) CHECK(q.at("kv_transfer_s").get<double>() == Approx(expect(q, 50, 0.001)).epsilon(1e-9));
  }
}

TEST_CASE("disagg: each request's times in order, and the hand-off's waits in the summary", "[disagg]") {
  const Json out = run(pd_scenario({{"workload", {{"preset", "rag_burst"}, {"rate_scale", 0.5}}}, {"duration_s", 1200}}));
  int completed = 0;
  for (const Json& q : out.at("requests")) {
    if (q.at("completed_at").is_null()) continue;
    ++completed;
    const double arrived = q.at("arrived_at"), scheduled = q.at("scheduled_at"), prefilled = q.at("prefill_done_at"),
                 to_decode = q.at("decode_scheduled_at"), loaded = q.at("kv_loaded_at"), first = q.at("first_token_at"), done = q.at("completed_at");
    CHECK(arrived <= scheduled);
    CHECK(scheduled < prefilled);
    CHECK(prefilled <= to_decode);  // routed to the decode pool the moment its prefill returned
    CHECK(to_decode + q.at("kv_transfer_s").get<double>() <= loaded + 1e-6);
    CHECK(loaded < first);
    CHECK(first < done);
    CHECK(q.at("pool") == "decode");
    CHECK(q.at("prefill_pool") == "prefill");
  }
  REQUIRE(completed > 100);
  const Json& h = out.at("summary").at("handoffs");
  CHECK(h.at("count").get<int>() >= completed);
  CHECK(h.at("kv_wait_p50_s").get<double>() >= h.at("kv_transfer_mean_s").get<double>() * 0.5);
  // rag_burst shares documents: the decode engine's own prefix cache holds some prompts' leading blocks,
  // so their transfers are shorter than the whole prompt's.
  int shorter = 0;
  for (const Json& q : handed_off(out)) {
    const double whole = 0.001 + (q.at("prompt_tokens").get<double>() - 1) * kLlama70bKvBytesPerToken / (50e9 * 2);
    if (q.at("kv_transfer_s").get<double>() < whole - 1e-9) ++shorter;
  }
  CHECK(shorter > 10);
}

TEST_CASE("disagg: per-role metrics: the prefill pool's TTFT is its one token, the decode pool's from the hand-off", "[disagg]") {
  const Json out = run(pd_scenario({{"workload", {{"rate_scale", 2}}}}));
  const Json& prefill = out.at("pools").at("prefill").at("summary");
  const Json& decode = out.at("pools").at("decode").at("summary");
  CHECK(prefill.at("itl_mean_s").get<double>() == 0.0);  // a prefill server returns one token
  CHECK(decode.at("itl_mean_s").get<double>() > 0.0);
  // Recomputed from the records: nearest-rank P50 of each role's own interval.
  std::vector<double> p, d, whole;
  for (const Json& q : out.at("requests")) {
    if (q.at("first_token_at").is_null()) continue;
    p.push_back(q.at("prefill_done_at").get<double>() - q.at("scheduled_at").get<double>());
    d.push_back(q.at("first_token_at").get<double>() - q.at("decode_scheduled_at").get<double>());
    whole.push_back(q.at("first_token_at").get<double>() - q.at("arrived_at").get<double>());
  }
  REQUIRE(p.size() > 100);
  auto p50 = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[static_cast<std::size_t>(std::ceil(0.5 * static_cast<double>(v.size()))) - 1];
  };
  // The pools' figures are over every request that reached each server (a few more than reached the
  // decode side's first token), so compare within a small tolerance.
  CHECK(prefill.at("ttft_p50_s").get<double>() == Approx(p50(p)).epsilon(0.05));
  CHECK(decode.at("ttft_p50_s").get<double>() == Approx(p50(d)).epsilon(0.05));
  // The run's TTFT is the client's: from arrival to the decode pool's first token.
  CHECK(out.at("summary").at("ttft_p50_s").get<double>() == Approx(p50(whole)).epsilon(0.05));
  CHECK(out.at("summary").at("ttft_p50_s").get<double>() > prefill.at("ttft_p50_s").get<double>());
}

TEST_CASE("disagg: a decode pool without KV room holds transfers until blocks free", "[disagg]") {
  // reasoning: long outputs fill the decode engine's KV; at the lowest memory fraction few requests fit
  // (its second phase, 0.5 req/s of 2,500-token answers).
  const Json shape = {{"workload", {{"preset", "reasoning"}, {"rate_scale", 2}}}, {"duration_s", 2400}};
  Json tight = pd_scenario(shape);
  tight["pools"][1]["engine"] = {{"gpu_memory_utilization", 0.5}};
  const Json out = run(tight);
  const Json& h = out.at("summary").at("handoffs");
  // The wait from reaching the decode engine to having the KV is far longer than the link's time.
  CHECK(h.at("kv_wait_p99_s").get<double>() > 1000 * h.at("kv_transfer_mean_s").get<double>());
  // Running requests are preempted there too when their next block does not fit (vLLM's recompute).
  CHECK(out.at("pools").at("decode").at("summary").at("num_preemptions").get<int>() > 0);
  CHECK(out.at("pools").at("prefill").at("summary").at("num_preemptions").get<int>() == 0);
  // With the default 0.9 the KV never fills: the wait is the link's time and one decode step.
  const Json roomy = run(pd_scenario(shape));
  const Json& r = roomy.at("summary").at("handoffs");
  CHECK(r.at("kv_wait_p99_s").get<double>() < 0.1);
  CHECK(roomy.at("pools").at("decode").at("summary").at("num_preemptions").get<int>() == 0);
}

TEST_CASE("disagg: spot interruptions lose requests in either role; with retries they are sent again", "[disagg]") {
  Json spot = {{"duration_s", 1800}, {"seed", 11}, {"workload", {{"rate_scale", 3}}}, {"cluster", p5_cluster(nullptr, "spot")}};
  spot["cluster"]["spot_interruptions_per_node_hour"] = 10;
  const Json out = run(pd_scenario(spot));
  const Json& s = out.at("summary");
  CHECK(s.at("cluster").at("spot_interruptions").get<int>() > 0);
  CHECK(s.at("requests_failed_by_cause").at("spot").get<int>() > 0);
  CHECK(s.at("replica_evictions_by_reason").at("Interrupted").get<int>() > 0);
  // Both pools lost replicas.
  CHECK(out.at("pools").at("prefill").at("summary").at("num_replica_evictions").get<int>() > 0);
  CHECK(out.at("pools").at("decode").at("summary").at("num_replica_evictions").get<int>() > 0);
  // An initial spot node is as exposed as a launched one.
  // An initial spot node is as exposed as a launched one.
  Json initial = pd_scenario({{"duration_s", 3600}, {"seed", 4}, {"cluster", p5_cluster(Json::array({{{"capacity_type", "spot"}}}), "spot")}});
  initial["cluster"]["spot_interruptions_per_node_hour"] = 10;
  const Json hit = run(initial);
  bool initial_node_hit = false;
  for (const Json& d : decisions_of(hit, "cloud"))
    initial_node_hit = initial_node_hit || (d.at("reason") == "Interrupted" && d.at("explanation").get<std::string>().rfind("delete: node 0 (p5.48xlarge, spot", 0) == 0);
  CHECK(initial_node_hit);

}

TEST_CASE("disagg: the planner reads each ready worker's ForwardPassMetrics", "[disagg][strategies]") {
  Json s = pd_scenario(Json::parse(R"({"duration_s": 900, "workload": {"preset": "rag_burst", "rate_scale": 1}})"));
  s["pools"][0]["autoscaler"] = {{"strategy", "planner"}, {"max_replicas", 4}, {"planner", {{"optimization_target", "latency"}}}};
  s["pools"][1]["autoscaler"] = {{"strategy", "planner"}, {"max_replicas", 4}};
  const Json out = run(s);
  const std::vector<Json> log = decisions_of(out, "dynamo-planner");
  REQUIRE(log.size() > 100);  // every 5 s, one per pool
  int loaded_decode = 0;
  for (const Json& d : log) {
    const std::string x = d.at("explanation");
    // Once the first replicas are Ready (the cold start ends within 400 s), each adjustment has metrics.
    if (d.at("t_s").get<double>() > 400) CHECK(d.at("reason") != "no_fpm_data");
    // Each engine's value from its newest iteration: the decode workers' KV tokens over their capacity.
    const std::size_t at = x.find("queued KV tokens) / ");
    if (d.at("pool") == "decode" && at != std::string::npos) {
      const std::size_t open = x.find("= [", at);
      REQUIRE(open != std::string::npos);
      loaded_decode += std::stod(x.substr(open + 3)) > 0;
    }
  }
  CHECK(loaded_decode > 10);
}
