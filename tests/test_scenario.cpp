// The scenario loader (core/src/scenario.cpp): defaults, strict keys, types, ranges, cross-field
// rules, the arrival limit and the playground's knob schema.
#include <catch2/catch.hpp>

#include "autoscaling/hpa_json.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "gpuscale/errors.hpp"
#include "scenario/scenario.hpp"

using namespace gpuscale;

namespace {

// Parses `doc` expecting an InputError; returns it so the caller can check path and message.
InputError parse_error(const Json& doc) {
  try {
    parse_scenario(doc);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("parse_scenario accepted " << doc.dump());
  return InputError("", "");
}

void check_error(const Json& doc, const std::string& path, const std::string& message_part) {
  InputError e = parse_error(doc);
  INFO(doc.dump() << " → " << e.what());
  CHECK(e.path() == path);
  CHECK_THAT(e.message(), Catch::Contains(message_part));
}

}  // namespace

TEST_CASE("an empty scenario takes every documented default", "[scenario]") {
  const Scenario s = parse_scenario(Json::object());
  CHECK(s.seed == 1);
  CHECK(s.duration_s == 3600);
  CHECK(s.router == Router::LeastOutstanding);
  CHECK(s.workload.preset == WorkloadPreset::LessonBurst);
  CHECK(s.workload.rate_scale == 1);
  CHECK(s.workload.phases.empty());
  CHECK(s.workload.prompt_tokens.kind == TokenDistributionKind::Lognormal);
  CHECK(s.workload.prompt_tokens.mean == 2000);
  CHECK(s.workload.prompt_tokens.cv == 0.5);
  CHECK(s.workload.prompt_tokens.min == 32);
  CHECK(s.workload.prompt_tokens.max == 16384);
  CHECK(s.workload.output_tokens.mean == 300);
  CHECK(s.workload.output_tokens.min == 8);
  CHECK(s.workload.output_tokens.max == 4096);
  CHECK(s.workload.timeout_s == 30);
  CHECK(s.pools[0].engine.profile == "llama-3.3-70b-fp8-tp2-h100-sxm5");
  CHECK(s.pools[0].engine.max_num_seqs == 1024);
  CHECK(s.pools[0].engine.max_num_batched_tokens == 8192);
  CHECK(s.pools[0].engine.gpu_memory_utilization == 0.9);
  CHECK(s.pools[0].engine.step_coalescing);
  CHECK(s.cold_start.node_provisioning_s == 60);
  CHECK(s.cold_start.model_load_s == 90);
  CHECK(s.cold_start.warmup_s == 30);
  CHECK_FALSE(s.cold_start.warm_nodes);
  CHECK(s.metrics.scrape_interval_s == 15);
  CHECK(s.metrics.dcgm_sample_period_s == 1);
  CHECK(s.metrics.ttft_window_s == 60);
  CHECK(s.pools[0].autoscaler.strategy == ScalerStrategy::QueueDepth);
  CHECK(s.pools[0].autoscaler.replicas == 1);
  CHECK(s.pools[0].autoscaler.min_replicas == 1);
  CHECK(s.pools[0].autoscaler.max_replicas == 16);
  CHECK(s.pools[0].autoscaler.target == 0);
  CHECK(s.pools[0].autoscaler.sync_period_s == 15);
  CHECK(s.pools[0].autoscaler.tolerance == 0.1);
  CHECK(s.pools[0].autoscaler.downscale_stabilization_s == 300);
  // The queue-depth preset stands for KEDA's generated HPA on sum(vllm:num_requests_waiting), no behavior.
  REQUIRE(s.pools[0].autoscaler.hpa);
  CHECK(s.pools[0].autoscaler.hpa->metrics.at(0).metric.name == "vllm:num_requests_waiting");
  CHECK_FALSE(s.pools[0].autoscaler.hpa->behavior);
  CHECK(s.pools.size() == 1);
  CHECK_FALSE(s.pools_declared);
  CHECK(s.slo.ttft_s == 2.0);
  CHECK(s.slo.itl_s == 0.1);
  CHECK(s.cost.gpu_hour_usd == 6.88);
  CHECK_FALSE(s.output.requests);
  CHECK(s.output.decisions);
  CHECK_FALSE(s.output.decision_detail);
}

TEST_CASE("presets expand to the documented phases and rate_scale multiplies every rate", "[scenario]") {
  auto rates = [](const std::vector<Phase>& phases) {
    std::vector<std::pair<double, double>> out;
    for (const auto& p : phases) out.emplace_back(p.duration_s, p.rate_rps);
    return out;
  };
  using V = std::vector<std::pair<double, double>>;
  CHECK(rates(effective_phases(parse_scenario(Json::object()).workload)) == V{{600, 0.05}, {1200, 0.4}, {1800, 0.12}});
  CHECK(rates(effective_phases(parse_scenario({{"workload", {{"preset", "steady"}}}}).workload)) == V{{3600, 0.2}});
  const Scenario scaled = parse_scenario(
      {{"workload", {{"preset", "custom"}, {"rate_scale", 2}, {"phases", {{{"duration_s", 10}, {"rate_rps", 1.5}}, {{"duration_s", 20}, {"rate_rps", 0}}}}}}});
  CHECK(rates(effective_phases(scaled.workload)) == V{{10, 3.0}, {20, 0.0}});
  // The stored phases stay as written: only effective_phases applies the scale.
  CHECK(scaled.workload.phases[0].rate_rps == 1.5);
}

TEST_CASE("fields that are given replace the defaults", "[scenario]") {
  const Scenario s = parse_scenario(Json::parse(R"({
    "seed": 9007199254740992, "duration_s": 120, "router": "round_robin",
    "workload": {"preset": "steady", "timeout_s": 5, "output_tokens": {"kind": "fixed", "mean": 100, "min": 1, "max": 200}},
    "cold_start": {"warm_nodes": true, "model_load_s": 0},
    "autoscaler": {"strategy": "fixed", "replicas": 0, "behavior": null},
    "output": {"requests": true, "decisions": false}
  })"));
  CHECK(s.seed == (std::uint64_t(1) << 53));
  CHECK(s.duration_s == 120);
  CHECK(s.router == Router::RoundRobin);
  CHECK(s.workload.timeout_s == 5);
  CHECK(s.workload.output_tokens.kind == TokenDistributionKind::Fixed);
  CHECK(s.workload.output_tokens.max == 200);
  CHECK(s.workload.prompt_tokens.mean == 2000);  // a sibling left alone keeps its default
  CHECK(s.cold_start.warm_nodes);
  CHECK(s.cold_start.model_load_s == 0);
  CHECK(s.cold_start.warmup_s == 30);
  CHECK(s.pools[0].autoscaler.strategy == ScalerStrategy::Fixed);
  CHECK(s.pools[0].autoscaler.replicas == 0);
  CHECK_FALSE(s.pools[0].autoscaler.hpa);  // fixed: no HPA
  CHECK(s.output.requests);
  CHECK_FALSE(s.output.decisions);
}

TEST_CASE("unknown keys are rejected with their path and the allowed fields", "[scenario]") {
  check_error({{"colour", "red"}}, "/colour", "unknown field \"colour\"");
  check_error({{"colour", "red"}}, "/colour", "duration_s");  // the message lists what is allowed
  check_error({{"workload", {{"foo", 1}}}}, "/workload/foo", "timeout_s");
  check_error({{"workload", {{"preset", "custom"}, {"phases", {{{"duration_s", 5}, {"rps", 1}}}}}}},
              "/workload/phases/0/rps", "rate_rps");
  check_error({{"workload", {{"prompt_tokens", {{"median", 5}}}}}}, "/workload/prompt_tokens/median", "unknown field");
  check_error({{"autoscaler", {{"strategy", "fixed"}, {"behaviour", Json::object()}}}}, "/autoscaler/behaviour",
              "behavior");
  check_error({{"cost", {{"usd", 1}}}}, "/cost/usd", "gpu_hour_usd");
  check_error({{"output", {{"series", false}}}}, "/output/series", "decisions");
}

TEST_CASE("values of the wrong type name the path and the type found", "[scenario]") {
  check_error({{"duration_s", "long"}}, "/duration_s", "found a string");
  check_error({{"seed", true}}, "/seed", "found a boolean");
  check_error({{"workload", Json::array()}}, "/workload", "expected an object, found an array");
  check_error({{"workload", {{"preset", "custom"}, {"phases", Json::object()}}}}, "/workload/phases",
              "expected an array");
  check_error({{"workload", {{"preset", "custom"}, {"phases", {1}}}}}, "/workload/phases/0", "expected an object");
  check_error({{"cold_start", {{"warm_nodes", 1}}}}, "/cold_start/warm_nodes", "true or false");
  check_error({{"autoscaler", {{"strategy", 5}}}}, "/autoscaler/strategy", "\"queue_depth\"");
  check_error({{"autoscaler", {{"replicas", 1.5}}}}, "/autoscaler/replicas", "whole number");
  check_error({{"autoscaler", {{"behavior", "fast"}}}}, "/autoscaler/behavior", "expected an object");
  check_error({{"router", "random"}}, "/router", "\"least_outstanding\", \"round_robin\"");
  check_error(Json::array(), "", "expected an object");
}

TEST_CASE("out-of-range values name the allowed range", "[scenario]") {
  check_error({{"duration_s", 0}}, "/duration_s", "between 1 and 691200");
  check_error({{"duration_s", 691201}}, "/duration_s", "between 1 and 691200");
  check_error({{"seed", -1}}, "/seed", "between 0 and");
  check_error({{"seed", 9007199254740994ULL}}, "/seed", "between 0 and");
  check_error({{"workload", {{"timeout_s", 0.05}}}}, "/workload/timeout_s", "between 0.1 and 3600");
  check_error({{"workload", {{"rate_scale", -1}}}}, "/workload/rate_scale", "between 0 and 1000");
  check_error({{"workload", {{"preset", "custom"}, {"phases", {{{"rate_rps", 501}}}}}}},
              "/workload/phases/0/rate_rps", "between 0 and 500");
  check_error({{"workload", {{"prompt_tokens", {{"max", 131073}}}}}}, "/workload/prompt_tokens/max",
              "between 1 and 131072");
  check_error({{"engine", {{"gpu_memory_utilization", 0.99}}}}, "/engine/gpu_memory_utilization",
              "between 0.5 and 0.98");
  check_error({{"autoscaler", {{"max_replicas", 257}}}}, "/autoscaler/max_replicas", "between 1 and 256");
  check_error({{"autoscaler", {{"min_replicas", 0}}}}, "/autoscaler/min_replicas", "between 1 and 256");
  check_error({{"autoscaler", {{"tolerance", 1.5}}}}, "/autoscaler/tolerance", "between 0 and 1");
  check_error({{"metrics", {{"scrape_interval_s", 0.5}}}}, "/metrics/scrape_interval_s", "between 1 and 600");
  check_error({{"cost", {{"gpu_hour_usd", 1001}}}}, "/cost/gpu_hour_usd", "between 0 and 1000");
  // The limits themselves are allowed.
  CHECK_NOTHROW(parse_scenario({{"duration_s", 691200}, {"workload", {{"rate_scale", 0}}}}));
  CHECK_NOTHROW(parse_scenario({{"autoscaler", {{"max_replicas", 256}, {"min_replicas", 256}}}}));
}

TEST_CASE("cross-field rules name the field to fix", "[scenario]") {
  SECTION("token distribution bounds") {
    check_error({{"workload", {{"prompt_tokens", {{"min", 100}, {"max", 50}, {"mean", 60}}}}}},
                "/workload/prompt_tokens/min", "above max (50)");
    check_error({{"workload", {{"output_tokens", {{"mean", 5000}}}}}}, "/workload/output_tokens/mean",
                "between min and max");
    // A uniform distribution ignores its mean, so a mean outside [min, max] is fine there.
    CHECK_NOTHROW(parse_scenario({{"workload", {{"output_tokens", {{"kind", "uniform"}, {"mean", 5000}}}}}}));
  }
  SECTION("DCGM sample period within the scrape interval") {
    check_error({{"metrics", {{"scrape_interval_s", 5}, {"dcgm_sample_period_s", 6}}}},
                "/metrics/dcgm_sample_period_s", "scrape_interval_s");
    CHECK_NOTHROW(parse_scenario({{"metrics", {{"scrape_interval_s", 5}, {"dcgm_sample_period_s", 5}}}}));
  }
  SECTION("nodes, interruptions and schedulers need the cluster model, not the fixed-delay provisioner") {
    check_error({{"cluster", {{"initial_nodes", {{{"count", 1}}}}}}}, "/cluster/initial_nodes", "provisioner");
    check_error({{"cluster", {{"provisioner", "fixed"}, {"spot_interruptions_per_node_hour", 2}}}}, "/cluster/spot_interruptions_per_node_hour",
                "needs the cluster model");
    CHECK_NOTHROW(parse_scenario({{"cluster", {{"preset", "karpenter_when_empty"}, {"spot_interruptions_per_node_hour", 2}}}}));
  }
}

TEST_CASE("preset custom needs phases and phases need preset custom", "[scenario]") {
  check_error({{"workload", {{"preset", "custom"}}}}, "/workload/phases", "at least one phase");
  check_error({{"workload", {{"preset", "custom"}, {"phases", Json::array()}}}}, "/workload/phases",
              "at least one phase");
  check_error({{"workload", {{"phases", {{{"duration_s", 10}, {"rate_rps", 1}}}}}}}, "/workload/phases",
              "only used with preset \"custom\"");
  const Scenario s = parse_scenario({{"workload", {{"preset", "custom"}, {"phases", {{{"duration_s", 10}}}}}}});
  REQUIRE(s.workload.phases.size() == 1);
  CHECK(s.workload.phases[0].duration_s == 10);
  CHECK(s.workload.phases[0].rate_rps == 0.1);  // a phase's own default
}

TEST_CASE("min_replicas above max_replicas is rejected at min_replicas", "[scenario]") {
  check_error({{"autoscaler", {{"min_replicas", 5}, {"max_replicas", 4}}}}, "/autoscaler/min_replicas",
              "above max_replicas (4)");
  check_error({{"autoscaler", {{"min_replicas", 17}}}}, "/autoscaler/min_replicas", "above max_replicas (16)");
  const Scenario s = parse_scenario({{"autoscaler", {{"min_replicas", 4}, {"max_replicas", 4}}}});
  CHECK(s.pools[0].autoscaler.min_replicas == 4);
  CHECK(s.pools[0].autoscaler.max_replicas == 4);
}

TEST_CASE("the expected number of arrivals is bounded, counting repeated phases", "[scenario]") {
  auto doc = [](double duration, Json phases) {
    return Json{{"duration_s", duration}, {"workload", {{"preset", "custom"}, {"phases", std::move(phases)}}}};
  };
  const Json full = {{{"duration_s", 4000}, {"rate_rps", 500}}};
  CHECK_NOTHROW(parse_scenario(doc(4000, full)));  // exactly 2,000,000 expected: allowed
  check_error(doc(4001, full), "/workload", "at most 2000000");
  check_error(doc(4001, full), "/workload", "about 2000500");

  // 100 s idle then 100 s at 500 req/s, repeated: 8000 s hold 40 busy phases = 2,000,000.
  const Json off_on = {{{"duration_s", 100}, {"rate_rps", 0}}, {{"duration_s", 100}, {"rate_rps", 500}}};
  CHECK_NOTHROW(parse_scenario(doc(8000, off_on)));
  CHECK_NOTHROW(parse_scenario(doc(8099, off_on)));  // the extra 99 s fall in an idle phase
  check_error(doc(8101, off_on), "/workload", "about 2000500");

  // rate_scale counts too: the steady preset (0.2 req/s) × 500 = 100 req/s.
  CHECK_NOTHROW(parse_scenario({{"duration_s", 19999}, {"workload", {{"preset", "steady"}, {"rate_scale", 500}}}}));
  check_error({{"duration_s", 20001}, {"workload", {{"preset", "steady"}, {"rate_scale", 500}}}}, "/workload",
              "rate_scale");
}

TEST_CASE("strategy custom takes an HPA spec, and only custom does", "[scenario]") {
  check_error({{"autoscaler", {{"strategy", "custom"}}}}, "/autoscaler/hpa", "HorizontalPodAutoscalerSpec");
  check_error({{"autoscaler", {{"strategy", "gpu_util"}, {"hpa", Json::object()}}}}, "/autoscaler/hpa",
              "only used with strategy \"custom\"");
  check_error({{"autoscaler", {{"strategy", "custom"}, {"hpa", "min 1 max 3"}}}}, "/autoscaler/hpa",
              "expected an object");
  check_error({{"autoscaler", {{"strategy", "custom"}, {"hpa", {{"maxReplicas", 3}}}}}}, "/autoscaler/hpa/metrics", "no Resource metric");
  const Json spec = {{"minReplicas", 1}, {"maxReplicas", 3}, {"metrics", Json::parse(R"([{"type": "Pods", "pods": {"metric": {"name": "vllm:num_requests_waiting"}, "target": {"type": "AverageValue", "averageValue": "5"}}}])")}};
  const Scenario s = parse_scenario({{"autoscaler", {{"strategy", "custom"}, {"hpa", spec}}}});
  REQUIRE(s.pools[0].autoscaler.hpa);
  CHECK(hpa::hpa_spec_to_json(*s.pools[0].autoscaler.hpa) == spec);
}

TEST_CASE("schema knobs have defaults inside their ranges that the parser accepts", "[scenario]") {
  const Json knobs = scenario_schema();
  REQUIRE(knobs.is_array());
  REQUIRE(knobs.size() >= 10);
  std::set<std::string> paths;
  for (const auto& k : knobs) {
    const std::string path = k.at("path").get<std::string>();
    INFO("knob " << path);
    CHECK(paths.insert(path).second);  // each path once
    CHECK_FALSE(k.at("label").get<std::string>().empty());
    CHECK(k.contains("unit"));
    const std::string type = k.at("type").get<std::string>();
    const Json knob_default = k.at("default");
    if (type == "enum") {
      // A choice is a value, or {value, label} for the page's menu.
      std::vector<Json> values;
      for (const auto& c : k.at("choices")) {
        values.push_back(c.is_object() ? c.at("value") : c);
        if (c.is_object()) CHECK_FALSE(c.at("label").get<std::string>().empty());
      }
      CHECK(std::find(values.begin(), values.end(), knob_default) != values.end());
      for (const auto& v : values) {
        Json doc = Json::object();
        doc[Json::json_pointer(path)] = v;
        INFO("choice " << v.dump());
        CHECK_NOTHROW(parse_scenario(doc));
      }
      continue;
    }
    REQUIRE((type == "number" || type == "integer"));
    const double lo = k.at("min").get<double>(), hi = k.at("max").get<double>();
    CHECK(lo <= hi);
    CHECK(k.at("step").get<double>() > 0);
    CHECK(knob_default.get<double>() >= lo);
    CHECK(knob_default.get<double>() <= hi);
    if (type == "integer") CHECK(knob_default.is_number_integer());
    // Every value the page's control can produce must be accepted by the parser.
    // The playground's starting value, where it is not the default (a livelier arrival rate), too.
    std::vector<Json> values = {knob_default, k.at("min"), k.at("max")};
    if (k.contains("start")) {
      CHECK(k.at("start").get<double>() >= lo);
      CHECK(k.at("start").get<double>() <= hi);
      values.push_back(k.at("start"));
    }
    for (const Json& v : values) {
      Json doc = Json::object();
      doc[Json::json_pointer(path)] = v;
      if (path == "/autoscaler/min_replicas") doc["autoscaler"]["max_replicas"] = 256;  // the max_replicas knob's max
      if (k.contains("requires")) doc[Json::json_pointer(k.at("requires").get<std::string>())] = 1;  // as the page sends it
      INFO("value " << v.dump());
      CHECK_NOTHROW(parse_scenario(doc));
    }
    // The knob's default is the scenario's default (one table gives the parser's ranges and the knobs).
    {
      Json doc = Json::object();
      doc[Json::json_pointer(path)] = knob_default;
      const Scenario with = parse_scenario(doc), without = parse_scenario(Json::object());
      // Setting the knob to its default must leave the parsed scenario unchanged.
      CHECK(with.pools[0].autoscaler.target == without.pools[0].autoscaler.target);
      CHECK(with.pools[0].autoscaler.replicas == without.pools[0].autoscaler.replicas);
      CHECK(with.pools[0].autoscaler.min_replicas == without.pools[0].autoscaler.min_replicas);
      CHECK(with.pools[0].autoscaler.max_replicas == without.pools[0].autoscaler.max_replicas);
      CHECK(with.pools[0].autoscaler.sync_period_s == without.pools[0].autoscaler.sync_period_s);
      CHECK(with.workload.timeout_s == without.workload.timeout_s);
      CHECK(with.workload.rate_scale == without.workload.rate_scale);
      CHECK(with.cold_start.node_provisioning_s == without.cold_start.node_provisioning_s);
      CHECK(with.cold_start.model_load_s == without.cold_start.model_load_s);
      CHECK(with.cold_start.warmup_s == without.cold_start.warmup_s);
      CHECK(with.metrics.scrape_interval_s == without.metrics.scrape_interval_s);
      CHECK(with.pools[0].engine.max_num_seqs == without.pools[0].engine.max_num_seqs);
      CHECK(with.pools[0].engine.gpu_memory_utilization == without.pools[0].engine.gpu_memory_utilization);
      CHECK(with.slo.ttft_s == without.slo.ttft_s);
      CHECK(with.seed == without.seed);
    }
  }
  CHECK(paths.count("/autoscaler/strategy") == 1);
  CHECK(paths.count("/seed") == 1);
}

TEST_CASE("cluster.kube_scheduler is a KubeSchedulerConfiguration whose default-scheduler profile sets NodeResourcesFit's scoringStrategy", "[scenario]") {
  const auto with = [](const Json& kube) {
    Json doc = Json::parse(R"({"cluster": {"preset": "karpenter_when_empty"}})");
    doc["cluster"]["kube_scheduler"] = kube;
    return doc;
  };
  const Json ok = Json::parse(R"({"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
      "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy":
        {"type": "MostAllocated", "resources": [{"name": "nvidia.com/gpu", "weight": 3}, {"name": "cpu", "weight": 1}]}}}]}]})");
  const Scenario s = parse_scenario(with(ok));
  CHECK(s.cluster.kube_scheduler.scoring.type == NodeResourcesFitScoring::Type::MostAllocated);
  REQUIRE(s.cluster.kube_scheduler.scoring.resources.size() == 2);
  CHECK(s.cluster.kube_scheduler.scoring.resources[0].name == "nvidia.com/gpu");
  CHECK(s.cluster.kube_scheduler.scoring.resources[0].weight == 3);
  // Without it: LeastAllocated over cpu and memory, the upstream default.
  const Scenario d = parse_scenario(Json::parse(R"({"cluster": {"preset": "karpenter_when_empty"}})"));
  CHECK(d.cluster.kube_scheduler.scoring.type == NodeResourcesFitScoring::Type::LeastAllocated);
  CHECK(d.cluster.kube_scheduler.scoring.resources.size() == 2);
  const auto error_at = [&](const char* pointer, const Json& value) {
    Json k = ok;
    k[Json::json_pointer(pointer)] = value;
    try {
      parse_scenario(with(k));
    } catch (const InputError& e) {
      return e.path();
    }
    return std::string("accepted");
  };
  const std::string st = "/cluster/kube_scheduler/profiles/0/pluginConfig/0/args/scoringStrategy";
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/resources/0/weight", 0) == st + "/resources/0/weight");
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/resources/0/weight", 101) == st + "/resources/0/weight");
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/resources/1/name", "nvidia.com/gpu") == st + "/resources/1/name");
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/resources/0/name", "ephemeral-storage") == st + "/resources/0/name");
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/type", "RequestedToCapacityRatio") == st + "/type");
  CHECK(error_at("/profiles/0/pluginConfig/0/args/scoringStrategy/type", "Packed") == st + "/type");
  CHECK(error_at("/profiles/0/pluginConfig/0/name", "PodTopologySpread") == "/cluster/kube_scheduler/profiles/0/pluginConfig/0/name");
  CHECK(error_at("/profiles/0/schedulerName", "gpu-scheduler") == "/cluster/kube_scheduler/profiles/0/schedulerName");
  CHECK(error_at("/apiVersion", "kubescheduler.config.k8s.io/v1beta3") == "/cluster/kube_scheduler/apiVersion");
}
