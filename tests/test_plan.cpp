// The plan designer (core/src/plan/plan.cpp, docs/plan.md): its input's errors, the refusal, a topology
// that cannot run the model, the chosen plan recomputed from its candidates, every emitted object
// through the lab's validators, the chosen scenario reproducing its figures, a multi-node model's gang,
// and the same plan twice.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "autoscaling/hpa_json.hpp"
#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "plan/plan.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scheduling/snapshot.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

// A burst that needs several replicas on a small cluster, with a training tenant.
Json busy_input() {
  return Json::parse(R"({
    "topology": {"instance_types": ["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge"], "max_nodes": 3},
    "workload": {"average_rps": 1.0, "burst_factor": 5, "burst_s": 900, "prompt_tokens": 6000, "output_tokens": 400},
    "slo": {"ttft_p99_s": 3, "itl_s": 0.06, "attainment": 0.95},
    "tenants": {"training_gpus": 8}})");
}

Json plan_of(const Json& input) { return api::plan(dump_json(input)); }

}  // namespace

TEST_CASE("plan: the input is read strictly, each mistake at its path", "[plan]") {
  const auto path = [](const char* text) { return testing::input_error([&] { plan::parse_plan_input(Json::parse(text)); }).path(); };
  CHECK(path(R"({"topolgy": {}})") == "/topolgy");
  CHECK(path(R"({"topology": {"instance_types": ["p9.huge"]}})") == "/topology/instance_types/0");
  CHECK(path(R"({"topology": {"instance_types": ["m7i.4xlarge"]}})") == "/topology/instance_types/0");  // no GPU
  CHECK(path(R"({"topology": {"capacity_types": ["spot"]}})") == "/topology/spot_interruptions_per_node_hour");
  CHECK(path(R"({"topology": {"capacity_types": ["reserved"], "spot_interruptions_per_node_hour": 0}})") == "/topology/capacity_types/0");
  CHECK(path(R"({"topology": {"max_nodes": 0}})") == "/topology/max_nodes");
  CHECK(path(R"({"workload": {"average_rps": 0}})") == "/workload/average_rps");
  CHECK(path(R"({"workload": {"engine_profile": "gpt-5"}})") == "/engine/profile");
  CHECK(path(R"({"workload": {"serving": "split"}})") == "/workload/serving");
  CHECK(path(R"({"workload": {"average_rps": 5, "burst_factor": 6}})") == "/workload/burst_factor");
  CHECK(path(R"({"workload": {"average_rps": 6}})") == "/workload/average_rps");
  CHECK(path(R"({"slo": {"attainment": 1.5}})") == "/slo/attainment");
  CHECK(path(R"({"workload": {"average_rps": 1, "average_concurrency": 4}})") == "/workload/average_concurrency");
  CHECK(path(R"({"workload": {"average_concurrency": 0}})") == "/workload/average_concurrency");
  CHECK(path(R"({"topology": {"max_nodes": 2, "racks": 3}})") == "/topology/racks");
  CHECK(path(R"({"choices": {"signal": "cpu"}})") == "/choices/signal");
  CHECK(path(R"({"choices": {"decode_signal": "kv_cache"}})") == "/choices/decode_signal");  // aggregated
  CHECK(path(R"({"choices": {"gang": "no"}})") == "/choices/gang");
  CHECK(path(R"({"topology": {"max_nodes": 4, "racks": 2, "nvlink_domain_nodes": 3}})") == "/topology/nvlink_domain_nodes");
  CHECK_NOTHROW(plan::parse_plan_input(Json::object()));
}

TEST_CASE("plan: one node of one GPU type is refused with the lesson's reason", "[plan]") {
  const Json out = plan_of(Json::parse(R"({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 1}})"));
  CHECK(out.at("verdict") == "refused");
  CHECK(out.at("refusals").at(0).at("rule") == "single_node_single_gpu_type");
  CHECK(out.at("refusals").at(0).at("reason").get<std::string>().find("managed serverless") != std::string::npos);
}

TEST_CASE("plan: what the lesson rejects or refuses is refused when the input asks for it, every such ask named", "[plan]") {
  const auto refused = [](const char* text) {
    const Json out = plan_of(Json::parse(text));
    REQUIRE(out.at("verdict") == "refused");
    std::vector<std::string> rules;
    for (const Json& r : out.at("refusals")) rules.push_back(r.at("rule").get<std::string>() + " " + r.at("field").get<std::string>());
    return rules;
  };
  CHECK(refused(R"({"choices": {"signal": "gpu_util"}})") == std::vector<std::string>{"no_gpu_util_hpa /choices/signal"});
  CHECK(refused(R"({"choices": {"signal": "gpu_memory"}})") == std::vector<std::string>{"no_gpu_memory_signal /choices/signal"});
  CHECK(refused(R"({"choices": {"consolidation_policy": "WhenEmptyOrUnderutilized"}})") == std::vector<std::string>{"when_empty_on_gpu_pool /choices/consolidation_policy"});
  CHECK(refused(R"({"workload": {"engine_profile": "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5"}, "choices": {"gang": false}})") ==
        std::vector<std::string>{"gang_for_tp_pp /choices/gang"});
  CHECK(refused(R"({"topology": {"max_nodes": 1}, "workload": {"serving": "disaggregated"}, "choices": {"signal": "queue_depth", "decode_signal": "gpu_memory"}})") ==
        std::vector<std::string>{"single_node_single_gpu_type /topology", "no_gpu_memory_signal /choices/decode_signal"});
  // A one-pod replica needs no gang: declining it changes nothing there.
  CHECK(plan_of(Json::parse(R"({"topology": {"max_nodes": 2}, "workload": {"average_rps": 0.2, "burst_factor": 2}, "slo": {"attainment": 0.9}, "choices": {"gang": false}})"))
            .at("verdict") != "refused");
}

TEST_CASE("plan: a pinned signal narrows the search to it (the duty cycle still runs to check its rule)", "[plan]") {
  const Json out = plan_of(Json::parse(R"({"topology": {"max_nodes": 2}, "workload": {"average_rps": 0.3, "burst_factor": 3},
    "slo": {"ttft_p99_s": 3, "itl_s": 0.06, "attainment": 0.9}, "choices": {"signal": "kv_cache"}})"));
  REQUIRE(out.at("verdict") == "plan");
  CHECK(out.at("chosen").at("signal") == "kv_cache");
  for (const Json& c : out.at("candidates")) CHECK((c.at("signal") == "kv_cache" || c.at("signal") == "gpu_util"));
  CHECK(out.at("input").at("choices").at("signal") == "kv_cache");
}

TEST_CASE("plan: a topology whose GPUs cannot run the model has no plan, with vLLM's reason", "[plan]") {
  const Json out = plan_of(Json::parse(R"({"topology": {"instance_types": ["p4d.24xlarge"], "max_nodes": 2}})"));
  CHECK(out.at("verdict") == "no_plan");
  CHECK(out.at("failed_layer") == "nodes");
  const std::string why = out.at("candidates").at(0).at("rejected").at(0);
  CHECK(why.find("fp8 kv-cache") != std::string::npos);
}

TEST_CASE("plan: the cheapest candidate that meets the SLO, its objects through the validators", "[plan]") {
  const Json out = plan_of(busy_input());
  REQUIRE(out.at("verdict") == "plan");
  const Json& chosen = out.at("chosen");
  CHECK(chosen.at("meets_slo") == true);
  CHECK(chosen.at("signal") != "gpu_util");
  // Recomputed from the table: no acceptable candidate is cheaper.
  double cheapest = 1e18;
  int acceptable = 0, rejected_util = 0, a100 = 0;
  for (const Json& c : out.at("candidates")) {
    if (c.at("signal") == "gpu_util") rejected_util += c.at("rejected").empty() ? 0 : 1;
    if (c.at("instance_type") == "p4d.24xlarge") ++a100;
    if (!c.at("simulated").get<bool>() || !c.at("rejected").empty()) continue;
    ++acceptable;
    CHECK(c.at("meets_slo") == true);
    cheapest = std::min(cheapest, c.at("node_cost_usd_per_hour").get<double>());
  }
  REQUIRE(acceptable > 0);
  CHECK(chosen.at("node_cost_usd_per_hour").get<double>() == cheapest);
  CHECK(rejected_util > 0);  // the duty-cycle HPA runs, and is rejected by the rule
  // The replica's shape is searched: the model at TP4 and TP8 ran beside TP2.
  std::vector<int> tps;
  for (const Json& c : out.at("candidates"))
    if (c.at("simulated").get<bool>() && std::find(tps.begin(), tps.end(), c.at("tensor_parallel").get<int>()) == tps.end()) tps.push_back(c.at("tensor_parallel"));
  std::sort(tps.begin(), tps.end());
  CHECK(tps == std::vector<int>{2, 4, 8});
  CHECK(a100 > 0);           // the A100 is a rejected row, with its reason
  // Every object passes the lab's validators.
  const Json& p = out.at("plan");
  const NodePool pool = parse_nodepool(p.at("nodepools").at(0), "/nodepools/0");
  CHECK(pool.consolidation_policy == ConsolidationPolicy::WhenEmpty);
  CHECK(p.at("nodepools").at(0).at("spec").at("template").at("spec").at("taints").at(0).at("key") == "nvidia.com/gpu");
  REQUIRE(p.at("autoscalers").size() == 1);
  const Json& a = p.at("autoscalers").at(0);
  if (a.at("kind") == "HorizontalPodAutoscaler") {
    CHECK_NOTHROW(hpa::parse_hpa_spec(a.at("spec"), "/autoscaler/spec"));
    CHECK(a.at("spec").at("minReplicas") == chosen.at("warm_replicas"));
  } else {
    CHECK(a.at("kind") == "ScaledObject");
    CHECK(a.at("spec").at("minReplicaCount") == chosen.at("warm_replicas"));
  }
  const std::vector<kai::Queue> queues = read_queues(p.at("kai").at("queues"), "/kai/queues");
  CHECK(queues.size() == 3);  // the pool, inference and the training tenant
  // The model server: a Deployment of the chosen warm replicas, placed by KAI in the inference queue.
  REQUIRE(p.at("workloads").size() == 1);
  const Json& w = p.at("workloads").at(0);
  CHECK(w.at("kind") == "Deployment");
  CHECK(w.at("spec").at("replicas") == chosen.at("warm_replicas"));
  CHECK(w.at("spec").at("template").at("spec").at("schedulerName") == "kai-scheduler");
  CHECK(w.at("spec").at("template").at("metadata").at("labels").at("kai.scheduler/queue") == "inference");
  const int tp = chosen.at("tensor_parallel");
  CHECK(w.at("spec").at("template").at("spec").at("containers").at(0).at("resources").at("limits").at("nvidia.com/gpu") == std::to_string(tp));
  const Json& args = w.at("spec").at("template").at("spec").at("containers").at(0).at("args");
  const auto tp_arg = std::find(args.begin(), args.end(), Json("--tensor-parallel-size"));
  REQUIRE(tp_arg != args.end());
  CHECK(*(tp_arg + 1) == std::to_string(tp));
  CHECK(p.at("scenario").at("engine").at("profile") == chosen.at("engine_profile"));
  // The input as read, defaults filled in.
  CHECK(out.at("input").at("workload").at("timeout_s") == 60.0);
  // The warm pool's reason quotes the runs' cold start.
  CHECK(p.at("warm_pool").at("cold_start_s").get<double>() > 60);
  // Every rule is checked by a run, and says whether the simulation agrees.
  std::vector<std::string> ids;
  for (const Json& r : out.at("rules")) {
    ids.push_back(r.at("rule"));
    CHECK(r.contains("simulation_disagrees"));
  }
  CHECK(ids == std::vector<std::string>{"no_gpu_util_hpa", "when_empty_on_gpu_pool", "no_gpu_memory_signal"});
  // The chosen scenario reproduces the chosen row.
  const Json run = api::run(dump_json(p.at("scenario")));
  CHECK(run.at("summary").at("slo_attainment").get<double>() == chosen.at("slo_attainment").get<double>());
  CHECK(run.at("summary").at("ttft_p99_s").get<double>() == chosen.at("ttft_p99_s").get<double>());
}

TEST_CASE("plan: a model larger than a node is a LeaderWorkerSet placed as one gang", "[plan]") {
  const Json out = plan_of(Json::parse(R"({
    "topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 4},
    "workload": {"engine_profile": "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5", "average_rps": 0.2, "burst_factor": 2, "prompt_tokens": 2000, "output_tokens": 200},
    "slo": {"ttft_p99_s": 5, "itl_s": 0.2, "attainment": 0.9}})"));
  REQUIRE(out.at("verdict") == "plan");
  const Json& p = out.at("plan");
  CHECK(p.at("scenario").contains("leaderWorkerSet"));
  CHECK(p.at("workloads").at(0).at("kind") == "LeaderWorkerSet");
  CHECK(p.at("workloads").at(0).at("spec").at("leaderWorkerTemplate").at("size") == 2);
  CHECK(p.at("kai").at("podgroup").at("minMember") == 2);
  CHECK(p.at("kai").contains("topology"));
  bool gang_rule = false;
  for (const Json& r : out.at("rules")) gang_rule = gang_rule || r.at("rule") == "gang_for_tp_pp";
  CHECK(gang_rule);
}

TEST_CASE("plan: disaggregated serving is planned per role, each pool with its own autoscaler and server", "[plan]") {
  const Json out = plan_of(Json::parse(R"({
    "topology": {"instance_types": ["p5.48xlarge", "p5en.48xlarge"], "max_nodes": 3},
    "workload": {"serving": "disaggregated", "average_rps": 1.0, "burst_factor": 4, "prompt_tokens": 6000, "output_tokens": 300},
    "slo": {"ttft_p99_s": 3, "itl_s": 0.06, "attainment": 0.95}})"));
  REQUIRE(out.at("verdict") == "plan");
  const Json& chosen = out.at("chosen");
  REQUIRE(chosen.contains("decode"));
  CHECK(chosen.at("meets_slo") == true);
  // Every simulated candidate names both pools' autoscalers; the chosen one is the cheapest acceptable.
  double cheapest = 1e18;
  for (const Json& c : out.at("candidates")) {
    if (!c.at("simulated").get<bool>()) continue;
    CHECK(c.contains("decode"));
    if (c.at("rejected").empty()) cheapest = std::min(cheapest, c.at("node_cost_usd_per_hour").get<double>());
  }
  CHECK(chosen.at("node_cost_usd_per_hour").get<double>() == cheapest);
  const Json& p = out.at("plan");
  // Two pools in the scenario, of one model, prefill and decode, and the plan's objects per role.
  const Json& pools = p.at("scenario").at("pools");
  REQUIRE(pools.size() == 2);
  CHECK(pools.at(0).at("role") == "prefill");
  CHECK(pools.at(1).at("role") == "decode");
  CHECK(pools.at(0).at("autoscaler").at("strategy") == chosen.at("signal"));
  CHECK(pools.at(1).at("autoscaler").at("strategy") == chosen.at("decode").at("signal"));
  REQUIRE(p.at("autoscalers").size() == 2);
  REQUIRE(p.at("workloads").size() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    const Json& a = p.at("autoscalers").at(k);
    const Json& w = p.at("workloads").at(k);
    const std::string name = w.at("metadata").at("name");
    CHECK(name == (k == 0 ? "vllm-prefill" : "vllm-decode"));
    CHECK(w.at("kind") == "Deployment");
    CHECK(w.at("spec").at("template").at("metadata").at("labels").at("llm-d.ai/role") == (k == 0 ? "prefill" : "decode"));
    const Json& args = w.at("spec").at("template").at("spec").at("containers").at(0).at("args");
    CHECK(std::find(args.begin(), args.end(), Json("--kv-transfer-config")) != args.end());
    if (a.at("kind") == "HorizontalPodAutoscaler") {
      CHECK(a.at("spec").at("scaleTargetRef").at("name") == name);
      CHECK_NOTHROW(hpa::parse_hpa_spec(a.at("spec"), "/autoscaler/spec"));
    } else {
      CHECK(a.at("spec").at("scaleTargetRef").at("name") == name);
    }
  }
  CHECK(p.at("warm_pool").at("roles").at("prefill") == chosen.at("warm_replicas"));
  CHECK(p.at("warm_pool").at("roles").at("decode") == chosen.at("decode").at("warm_replicas"));
  // The lesson's per-role rule is checked against the grid.
  bool role_rule = false;
  for (const Json& r : out.at("rules")) role_rule = role_rule || r.at("rule") == "per_role_signals";
  CHECK(role_rule);
  // The chosen scenario reproduces the chosen row.
  const Json run = api::run(dump_json(p.at("scenario")));
  CHECK(run.at("summary").at("slo_attainment").get<double>() == chosen.at("slo_attainment").get<double>());
}

TEST_CASE("plan: a disaggregated model larger than a node has no plan, with the reason", "[plan]") {
  const Json out = plan_of(Json::parse(R"({
    "topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 4},
    "workload": {"serving": "disaggregated", "engine_profile": "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5", "average_rps": 0.2}})"));
  CHECK(out.at("verdict") == "no_plan");
  const std::string why = out.at("candidates").at(0).at("rejected").at(0);
  CHECK(why.find("Deployments") != std::string::npos);
}

TEST_CASE("plan: an average concurrency becomes a rate through a closed-loop run", "[plan]") {
  const auto plan_with = [](int clients) {
    Json in = Json::parse(R"({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 2},
      "workload": {"burst_factor": 2, "prompt_tokens": 2000, "output_tokens": 300}, "slo": {"ttft_p99_s": 3, "itl_s": 0.06, "attainment": 0.9}})");
    in["workload"]["average_concurrency"] = clients;
    return plan_of(in);
  };
  const Json few = plan_with(4), many = plan_with(16);
  for (const Json* out : {&few, &many}) {
    const Json& load = out->at("load_from_concurrency");
    // Little's law over the run: rate = requests / duration, latency = concurrency / rate.
    CHECK(load.at("average_rps").get<double>() == load.at("requests").get<double>() / load.at("duration_s").get<double>());
    CHECK(load.at("mean_latency_s").get<double>() == load.at("concurrency").get<double>() / load.at("average_rps").get<double>());
    CHECK(out->at("input").at("workload").contains("average_concurrency"));
    CHECK_FALSE(out->at("input").at("workload").contains("average_rps"));
    // The searched workload runs at that rate outside the burst.
    if (out->at("verdict") == "plan") {
      CHECK(out->at("plan").at("scenario").at("workload").at("phases").at(0).at("rate_rps") == load.at("average_rps"));
    }
  }
  // Four times the clients send more (not necessarily four times: each waits longer in a busier pool).
  const double r4 = few.at("load_from_concurrency").at("average_rps"), r16 = many.at("load_from_concurrency").at("average_rps");
  CHECK(r16 > 2 * r4);
  CHECK(r16 <= 4 * r4 * 1.05);
}

TEST_CASE("plan: with a training tenant the inference queue's quota is searched, and the rest guaranteed to training", "[plan]") {
  const Json out = plan_of(Json::parse(R"({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 3},
    "workload": {"average_rps": 0.5, "burst_factor": 3, "prompt_tokens": 2000, "output_tokens": 300},
    "slo": {"ttft_p99_s": 3, "itl_s": 0.06, "attainment": 0.95}, "tenants": {"training_gpus": 8}})"));
  REQUIRE(out.at("verdict") == "plan");
  // The quota row: the chosen plan with inference's quota at the larger burst's peak.
  const Json* quota_row = nullptr;
  for (const Json& c : out.at("candidates"))
    if (c.contains("inference_quota_gpus")) quota_row = &c;
  REQUIRE(quota_row);
  const int quota = quota_row->at("inference_quota_gpus");
  const int gpus_per_replica = 2;
  CHECK(quota == std::max(quota_row->at("peak_replicas").get<int>(), out.at("what_if").at("peak_replicas").get<int>()) * gpus_per_replica);
  CHECK(quota < quota_row->at("max_replicas").get<int>() * gpus_per_replica);
  const Json& chosen = out.at("chosen");
  if (quota_row->at("rejected").empty()) {
    // Kept: the plan's queues say so, training is guaranteed what is left (up to its own limit).
    CHECK(chosen.at("inference_quota_gpus") == quota);
    int inference = -1, training = -1;
    for (const Json& q : out.at("plan").at("kai").at("queues")) {
      if (q.at("metadata").at("name") == "inference") inference = q.at("spec").at("resources").at("gpu").at("quota");
      if (q.at("metadata").at("name") == "training") training = q.at("spec").at("resources").at("gpu").at("quota");
    }
    CHECK(inference == quota);
    CHECK(training == std::min(8, 24 - quota));
    CHECK_NOTHROW(read_queues(out.at("plan").at("kai").at("queues"), "/kai/queues"));
    const Json run = api::run(dump_json(out.at("plan").at("scenario")));
    CHECK(run.at("summary").at("slo_attainment").get<double>() == chosen.at("slo_attainment").get<double>());
  } else {
    CHECK_FALSE(chosen.contains("inference_quota_gpus"));
  }
}

TEST_CASE("plan: racks and NVLink domains are NodePools whose nodes KAI places a gang within", "[plan]") {
  const auto plan_on = [](const char* topology) {
    Json in = Json::parse(R"({"workload": {"engine_profile": "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5", "average_rps": 0.2, "burst_factor": 2,
      "prompt_tokens": 2000, "output_tokens": 200}, "slo": {"ttft_p99_s": 5, "itl_s": 0.2, "attainment": 0.9}})");
    in["topology"] = Json::parse(topology);
    return plan_of(in);
  };
  const auto labels_of = [](const Json& pools) {
    std::vector<std::string> out;
    for (const Json& p : pools) {
      const Json& l = p.at("spec").at("template").at("metadata").at("labels");
      out.push_back(l.value("rack", std::string("-")) + "/" + l.value("nvidia.com/gpu.clique", std::string("-")) + "/" +
                    p.at("spec").at("limits").at("nvidia.com/gpu").get<std::string>());
    }
    return out;
  };
  const auto level_of = [](const Json& out) {
    return out.at("plan").at("workloads").at(0).at("metadata").at("annotations").at("kai.scheduler/topology-required-placement").get<std::string>();
  };
  // Two racks of two p5 nodes: a pool per rack, the gang within a rack, in the runs as in the objects.
  const Json racks = plan_on(R"({"instance_types": ["p5.48xlarge"], "max_nodes": 4, "racks": 2})");
  REQUIRE(racks.at("verdict") == "plan");
  CHECK(labels_of(racks.at("plan").at("nodepools")) == std::vector<std::string>{"rack-1/-/16", "rack-2/-/16"});
  CHECK(level_of(racks) == "rack");
  const Json& sc = racks.at("plan").at("scenario");
  CHECK(sc.at("cluster").at("nodepools").size() == 2);
  CHECK(sc.at("leaderWorkerSet").at("metadata").at("annotations").at("kai.scheduler/topology-required-placement") == "rack");
  const std::vector<SnapshotTopology> topologies = read_topologies(racks.at("plan").at("kai").at("topologies"), "/kai/topologies");
  REQUIRE(topologies.size() == 1);
  CHECK(read_topologies(sc.at("cluster").at("kai").at("topologies"), "/t").size() == 1);
  for (std::size_t k = 0; k < 2; ++k) CHECK_NOTHROW(parse_nodepool(racks.at("plan").at("nodepools").at(k), "/nodepools"));
  const Json run = api::run(dump_json(sc));
  CHECK(run.at("summary").at("slo_attainment").get<double>() == racks.at("chosen").at("slo_attainment").get<double>());
  // Five nodes over two racks: 3 and 2; NVLink domains of two nodes inside them, the gang within one.
  const Json nvl = plan_on(R"({"instance_types": ["p5.48xlarge"], "max_nodes": 5, "racks": 2, "nvlink_domain_nodes": 2})");
  REQUIRE(nvl.at("verdict") == "plan");
  // rack-1's second NVLink domain is one node: it cannot hold a 2-node replica, so it has no NodePool.
  CHECK(labels_of(nvl.at("plan").at("nodepools")) == std::vector<std::string>{"rack-1/rack-1.1/16", "rack-2/rack-2.1/16"});
  CHECK(nvl.at("chosen").at("max_replicas") == 2);
  // Five nodes over two racks without NVLink domains: rack-1's 3 nodes hold one 2-node replica, so its
  // NodePool may launch 2 (a third node could only take half a gang, which KAI would never bind).
  const Json odd = plan_on(R"({"instance_types": ["p5.48xlarge"], "max_nodes": 5, "racks": 2})");
  REQUIRE(odd.at("verdict") == "plan");
  CHECK(labels_of(odd.at("plan").at("nodepools")) == std::vector<std::string>{"rack-1/-/16", "rack-2/-/16"});
  CHECK(odd.at("chosen").at("max_replicas") == 2);
  // The warm replicas' nodes exist when the hour starts, whole replicas inside a domain.
  int initial = 0;
  for (const Json& n : odd.at("plan").at("scenario").at("cluster").at("initial_nodes")) initial += n.at("count").get<int>();
  CHECK(initial == 2 * odd.at("chosen").at("warm_replicas").get<int>());
  // A LeaderWorkerSet's leader starts Ray's head and serves; its workers join it; the autoscaler scales it.
  const Json& lws = odd.at("plan").at("workloads").at(0);
  CHECK(lws.at("spec").at("leaderWorkerTemplate").contains("leaderTemplate"));
  CHECK(lws.at("spec").at("leaderWorkerTemplate").at("workerTemplate").at("spec").at("containers").at(0).at("command").at(2).get<std::string>().find("worker --ray_address") != std::string::npos);
  const Json& target = odd.at("plan").at("autoscalers").at(0).at("spec").at("scaleTargetRef");
  CHECK(target.at("kind") == "LeaderWorkerSet");
  CHECK(target.at("apiVersion") == "leaderworkerset.x-k8s.io/v1");
  CHECK(level_of(nvl) == "nvidia.com/gpu.clique");
  // Without racks or NVLink domains: one pool, the gang within a zone.
  const Json flat = plan_on(R"({"instance_types": ["p5.48xlarge"], "max_nodes": 4})");
  CHECK(flat.at("plan").at("nodepools").size() == 1);
  CHECK(level_of(flat) == "topology.kubernetes.io/zone");
}

TEST_CASE("plan: what did not run shows no figures; a failed search names what failed", "[plan]") {
  // A row that was not run (a shape or a type that cannot hold the replica) carries no run's figures.
  const Json out = plan_of(busy_input());
  for (const Json& c : out.at("candidates")) {
    if (c.at("simulated").get<bool>()) continue;
    CHECK_FALSE(c.contains("slo_attainment"));
    CHECK_FALSE(c.at("rejected").empty());
  }
  // The budget, not a layer: the cheapest candidate that met the SLO costs more than it.
  const Json poor = plan_of(Json::parse(R"({"topology": {"max_nodes": 2}, "workload": {"average_rps": 0.3, "burst_factor": 2},
    "slo": {"attainment": 0.9}, "budget_usd_per_hour": 10})"));
  CHECK(poor.at("verdict") == "no_plan");
  CHECK(poor.at("failed_layer") == "budget");
  // A tensor-parallel group larger than the node: the type is rejected with that reason, not simulated.
  const Json small = plan_of(Json::parse(R"({"topology": {"instance_types": ["p5.4xlarge"], "max_nodes": 4}})"));
  CHECK(small.at("verdict") == "no_plan");
  CHECK(small.at("candidates").at(0).at("rejected").at(0).get<std::string>().find("tensor-parallel group") != std::string::npos);
}

TEST_CASE("plan: when nothing meets the SLO at the input's TP degree, stage 1 runs at the others", "[plan]") {
  // 8,000-token prompts against a 1 s P99 TTFT: TP2's prefill is too slow, TP8's is not.
  const Json out = plan_of(Json::parse(R"({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 2},
    "workload": {"average_rps": 0.3, "burst_factor": 2, "prompt_tokens": 8000}, "slo": {"ttft_p99_s": 1, "itl_s": 0.015, "attainment": 0.9}})"));
  REQUIRE(out.at("verdict") == "plan");
  CHECK(out.at("chosen").at("tensor_parallel") != 2);
  bool tp2_met = false;
  for (const Json& c : out.at("candidates")) tp2_met = tp2_met || (c.at("tensor_parallel") == 2 && c.value("meets_slo", false));
  CHECK_FALSE(tp2_met);
}

TEST_CASE("plan: a pinned disaggregated pair leaves the lesson's per-role rule unchecked, and says so", "[plan]") {
  const Json out = plan_of(Json::parse(R"({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 2},
    "workload": {"serving": "disaggregated", "average_rps": 0.3, "burst_factor": 2}, "slo": {"ttft_p99_s": 3, "attainment": 0.9},
    "choices": {"signal": "kv_cache", "decode_signal": "queue_depth"}})"));
  REQUIRE(out.at("verdict") == "plan");
  for (const Json& r : out.at("rules")) {
    if (r.at("rule") != "per_role_signals") continue;
    CHECK(r.at("reason").get<std::string>().rfind("not checked", 0) == 0);
    CHECK(r.at("simulation_disagrees") == false);
  }
}

TEST_CASE("plan: the same input gives the same plan, with progress up to the end", "[plan]") {
  const std::string input = dump_json(busy_input());
  std::vector<double> fractions;
  const Json a = api::plan(input, [&](double f, const std::string&) { fractions.push_back(f); });
  const Json b = api::plan(input);
  CHECK(dump_json(a) == dump_json(b));
  REQUIRE(fractions.size() > 20);
  CHECK(std::is_sorted(fractions.begin(), fractions.end()));
  CHECK(fractions.back() == 1.0);
}
