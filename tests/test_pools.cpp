// Several model-serving pools in one run (core/src/sim/world.hpp): each request names its model and
// goes to the pool serving it, each pool scales with its own autoscaler, and the result reports each
// pool beside the totals. A single-service scenario is one pool with exactly its old result.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "gpuscale/api.hpp"
#include "k8s/pdb.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::read_text;

namespace {

// Two pools on a fixed-delay node layer: chat (queue depth, starts at 2) and code (KV cache, starts at 1).
Json two_pools(double chat_share = 3, double code_share = 1) {
  return Json::parse(R"({
    "seed": 5, "duration_s": 1800,
    "workload": {"preset": "custom", "phases": [{"duration_s": 600, "rate_rps": 2}, {"duration_s": 600, "rate_rps": 10},
                                                {"duration_s": 600, "rate_rps": 2}],
                 "models": [{"model": "chat-model", "share": )" + std::to_string(chat_share) + R"(},
                            {"model": "code-model", "share": )" + std::to_string(code_share) + R"(}]},
    "pools": [
      {"name": "chat", "model": "chat-model", "autoscaler": {"strategy": "queue_depth", "replicas": 2, "max_replicas": 6}},
      {"name": "code", "model": "code-model", "autoscaler": {"strategy": "kv_cache", "replicas": 1, "max_replicas": 4, "target": 0.15}}
    ],
    "output": {"requests": true}
  })");
}

RunResult run(const Json& doc) { return run_simulation(parse_scenario(doc)); }

}  // namespace

TEST_CASE("each request goes to the pool serving its model, in the workload's shares", "[pools]") {
  const Scenario s = parse_scenario(two_pools());
  REQUIRE(s.pools.size() == 2);
  CHECK(s.pools_declared);
  const RunResult r = run_simulation(s);
  std::map<int, std::int64_t> per_pool;
  for (const RequestRecord& q : r.requests) ++per_pool[q.pool];
  const double total = static_cast<double>(r.requests.size());
  CHECK(per_pool[0] / total == Approx(0.75).margin(0.02));
  CHECK(per_pool[1] / total == Approx(0.25).margin(0.02));
  CHECK(r.pools.at(0).summary.num_requests == per_pool[0]);
  CHECK(r.pools.at(1).summary.num_requests == per_pool[1]);

  // With no replica in the code pool, its requests wait at its gateway and time out; chat's are served.
  Json doc = two_pools();
  doc["pools"][1]["autoscaler"] = {{"strategy", "fixed"}, {"replicas", 0}};
  const RunResult z = run(doc);
  for (const RequestRecord& q : z.requests) {
    if (q.pool == 1) {
      CHECK_FALSE(q.scheduled_at);
      CHECK((q.dropped_at || q.arrived_at > 1800 - 30));  // the last 30 s are still waiting at the end
    }
  }
  CHECK(z.pools.at(1).summary.num_completed == 0);
  CHECK(z.pools.at(1).summary.num_dropped + z.pools.at(1).summary.num_unfinished == z.pools.at(1).summary.num_requests);
  CHECK(z.pools.at(0).summary.num_completed > 0);
}

TEST_CASE("the model mix draws from its own stream: arrivals and token counts do not change", "[pools]") {
  // The same workload served by one pool: request i arrives at the same time with the same tokens.
  Json one = two_pools();
  one.erase("pools");
  one["workload"].erase("models");
  one["autoscaler"] = {{"strategy", "fixed"}, {"replicas", 3}};
  const RunResult a = run(two_pools()), b = run(one);
  REQUIRE(a.requests.size() == b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) {
    INFO("request " << i);
    CHECK(a.requests[i].arrived_at == b.requests[i].arrived_at);
    CHECK(a.requests[i].prompt_tokens == b.requests[i].prompt_tokens);
    CHECK(a.requests[i].output_tokens == b.requests[i].output_tokens);
  }
  // And changing the shares changes who serves, not what arrives.
  const RunResult c = run(two_pools(1, 1));
  REQUIRE(c.requests.size() == a.requests.size());
  CHECK(c.requests.back().arrived_at == a.requests.back().arrived_at);
  CHECK(c.pools.at(1).summary.num_requests > a.pools.at(1).summary.num_requests);
}

TEST_CASE("each pool scales with its own HPA, logged under its name", "[pools]") {
  const Scenario s = parse_scenario(two_pools());
  const RunResult r = run_simulation(s);
  std::map<std::string, int> syncs;
  for (const DecisionRecord& d : r.decisions) {
    if (d.controller == "hpa") ++syncs[d.pool];
  }
  // One sync every 15 s per pool, for 1800 s.
  CHECK(syncs["chat"] == 119);
  CHECK(syncs["code"] == 119);
  CHECK(syncs.size() == 2);
  // The spike makes both scale up, each from its own signal and within its own bounds.
  const PoolResult& chat = r.pools.at(0);
  const PoolResult& code = r.pools.at(1);
  CHECK(chat.name == "chat");
  CHECK(code.name == "code");
  CHECK(chat.summary.num_scale_events > 0);
  CHECK(code.summary.num_scale_events > 0);
  CHECK(*std::max_element(chat.series.desired_replicas.begin(), chat.series.desired_replicas.end()) <= 6);
  CHECK(*std::max_element(code.series.desired_replicas.begin(), code.series.desired_replicas.end()) <= 4);
  // Each HPA names its own Deployment.
  CHECK(s.pools[0].autoscaler.hpa->scale_target_ref.name == "chat");
  CHECK(s.pools[1].autoscaler.hpa->scale_target_ref.name == "code");
  CHECK(s.pools[1].autoscaler.hpa->metrics.at(0).metric.name == "vllm:kv_cache_usage_perc");
}

TEST_CASE("the totals are the pools' sums, row by row", "[pools]") {
  const RunResult r = run(two_pools());
  const Summary& t = r.summary;
  const Summary& a = r.pools.at(0).summary;
  const Summary& b = r.pools.at(1).summary;
  CHECK(t.num_requests == a.num_requests + b.num_requests);
  CHECK(t.num_completed == a.num_completed + b.num_completed);
  CHECK(t.num_dropped == a.num_dropped + b.num_dropped);
  CHECK(t.num_scale_events == a.num_scale_events + b.num_scale_events);
  CHECK(t.gpu_hours == Approx(a.gpu_hours + b.gpu_hours));
  CHECK(t.mean_replicas == Approx(a.mean_replicas + b.mean_replicas));
  CHECK(t.peak_replicas <= a.peak_replicas + b.peak_replicas);
  REQUIRE(r.series.t_s.size() == r.pools.at(0).series.t_s.size());
  for (std::size_t i = 0; i < r.series.t_s.size(); ++i) {
    INFO("scrape " << i);
    CHECK(r.series.desired_replicas[i] == r.pools[0].series.desired_replicas[i] + r.pools[1].series.desired_replicas[i]);
    CHECK(r.series.ready_replicas[i] == r.pools[0].series.ready_replicas[i] + r.pools[1].series.ready_replicas[i]);
    CHECK(r.series.num_dropped[i] == r.pools[0].series.num_dropped[i] + r.pools[1].series.num_dropped[i]);
    CHECK(r.series.num_requests_waiting[i] ==
          r.pools[0].series.num_requests_waiting[i] + r.pools[1].series.num_requests_waiting[i]);
  }
}

TEST_CASE("the result reports each pool; requests and decisions name theirs", "[pools]") {
  const Json out = api::run(dump_json(two_pools()));
  REQUIRE(out.contains("pools"));
  for (const char* name : {"chat", "code"}) {
    INFO(name);
    const Json& p = out.at("pools").at(name);
    CHECK(p.at("summary").at("num_requests").get<std::int64_t>() > 0);
    CHECK(p.at("series").at("t_s").size() == out.at("series").at("t_s").size());
    CHECK(p.at("autoscaler").at("hpa").at("scaleTargetRef").at("name") == name);
  }
  CHECK(out.at("pools").at("chat").at("model") == "chat-model");
  for (const Json& q : out.at("requests")) CHECK((q.at("pool") == "chat" || q.at("pool") == "code"));
  for (const Json& d : out.at("decisions")) CHECK(d.contains("pool"));
  // A single-service scenario keeps its shape: no per-pool section, no pool fields.
  const Json single = api::run(R"({"duration_s": 120, "output": {"requests": true}})");
  CHECK_FALSE(single.contains("pools"));
  CHECK_FALSE(single.at("requests").at(0).contains("pool"));
  CHECK_FALSE(single.at("decisions").at(0).contains("pool"));
}

TEST_CASE("one pool written with \"pools\" runs exactly as the single-service form", "[pools]") {
  const Json single = Json::parse(R"({"seed": 3, "duration_s": 900, "workload": {"rate_scale": 20},
                                      "autoscaler": {"strategy": "kv_cache", "replicas": 2, "max_replicas": 6}})");
  const Json listed = Json::parse(R"({"seed": 3, "duration_s": 900, "workload": {"rate_scale": 20},
                                      "pools": [{"name": "vllm", "model": "m",
                                                 "autoscaler": {"strategy": "kv_cache", "replicas": 2, "max_replicas": 6}}]})");
  Json a = api::run(dump_json(single)), b = api::run(dump_json(listed));
  b.erase("pools");
  for (Json& d : b.at("decisions")) d.erase("pool");
  CHECK(dump_json(a) == dump_json(b));
}

TEST_CASE("pools share one cluster, each under its own PodDisruptionBudget", "[pools]") {
  Json doc = two_pools();
  doc["cluster"] = {{"preset", "karpenter_underutilized"}};
  doc["pools"][1]["pdb"] = {{"minAvailable", "100%"}};
  const Scenario s = parse_scenario(doc);
  REQUIRE(s.pools[1].pdb);
  CHECK_FALSE(s.pools[0].pdb);
  const RunResult r = run_simulation(s);
  // The code pool's budget allows no voluntary eviction; the chat pool's replicas may be consolidated.
  CHECK(r.pools.at(1).summary.num_replica_evictions == 0);
  CHECK(r.summary.num_replica_evictions == r.pools.at(0).summary.num_replica_evictions);
  CHECK(r.summary.cluster.nodes_launched > 0);
  // Pods of both pools on the nodes: the pods carry their pool's template.
  CHECK(s.pools[0].pod.owner.kind == PodOwner::Kind::Pool);
  CHECK(s.pools[1].pod.owner.index == 1);
  CHECK(s.pools[1].pod.name == "code");
}

TEST_CASE("pools and models must name each other", "[pools]") {
  auto error_path = [](Json doc) {
    try {
      parse_scenario(doc);
    } catch (const InputError& e) {
      return e.path();
    }
    return std::string("accepted");
  };
  Json doc = two_pools();
  doc["workload"]["models"][1]["model"] = "nobody-serves-this";
  CHECK(error_path(doc) == "/workload/models/1/model");
  doc = two_pools();
  doc["workload"].erase("models");
  CHECK(error_path(doc) == "/workload/models");
  doc = two_pools();
  doc["pools"][1]["name"] = "chat";
  CHECK(error_path(doc) == "/pools/1/name");
  // Two pools of one model are its variants (e.g. on other GPUs): then no pool serves the second model.
  doc = two_pools();
  doc["pools"][1]["model"] = "chat-model";
  CHECK(error_path(doc) == "/workload/models/1/model");
  doc["workload"]["models"].erase(1);
  CHECK(error_path(doc) == "accepted");
  // A model is served aggregated or disaggregated, not both.
  doc["pools"][1]["role"] = "decode";
  CHECK(error_path(doc) == "/pools/1/role");
  doc = two_pools();
  doc["engine"] = {{"max_num_seqs", 64}};
  CHECK(error_path(doc) == "/engine");
  doc = two_pools();
  doc["pools"][0]["role"] = "prefill";
  CHECK(error_path(doc) == "/pools/0/role");
  doc = two_pools();
  doc["pools"][0]["name"] = "Chat Pool";
  CHECK(error_path(doc) == "/pools/0/name");
  doc = two_pools();
  doc["cluster"] = {{"preset", "karpenter_when_empty"}, {"inference_pod", {{"cpu", "8"}}}};
  CHECK(error_path(doc) == "/cluster/inference_pod");
  CHECK(error_path(Json::parse(R"({"workload": {"models": [{"model": "m"}]}})")) == "/workload/models");
  CHECK(error_path(Json::parse(R"({"pools": []})")) == "/pools");
}

TEST_CASE("the two-pool example scenario runs and both pools serve", "[pools]") {
  const Json out = api::run(read_text("scenarios/golden-two-pools.json"));
  const Json& pools = out.at("pools");
  CHECK(pools.at("chat").at("summary").at("num_completed").get<std::int64_t>() > 0);
  CHECK(pools.at("code").at("summary").at("num_completed").get<std::int64_t>() > 0);
  CHECK(pools.at("code").at("summary").at("num_scale_events").get<std::int64_t>() > 0);
  CHECK(out.at("summary").at("cluster").at("nodes_launched").get<std::int64_t>() > 0);
}
