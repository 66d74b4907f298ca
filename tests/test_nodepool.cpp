// Tests of the Karpenter NodePool reader, Go durations and the GPU-pool lint (core/src/nodepool.cpp).
// The base document is the example GPU NodePool of real-systems.md §3.5, as JSON.
#include <catch2/catch.hpp>
#include <algorithm>
#include <string>
#include <vector>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "provisioning/karpenter/nodepool.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kMinute = 60 * kMicrosPerSecond;
constexpr Micros kHour = 60 * kMinute;

// real-systems.md §3.5, the NodePool document.
Json example() {
  return Json::parse(R"({
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "gpu-h100"},
    "spec": {
      "weight": 50,
      "limits": {"nvidia.com/gpu": "64"},
      "template": {
        "metadata": {"labels": {"workload": "llm-inference"}},
        "spec": {
          "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
          "requirements": [
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
          ],
          "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
          "expireAfter": "720h",
          "terminationGracePeriod": "2h"
        }
      },
      "disruption": {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "10m",
        "budgets": [
          {"nodes": "10%"},
          {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"}
        ]
      }
    }
  })");
}

// The smallest valid NodePool: everything else defaulted. Not a GPU pool.
Json minimal() {
  return Json::parse(R"({
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"},
    "spec": {"template": {"spec": {
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
      "requirements": []}}}
  })");
}

Json with(Json doc, const std::string& pointer, const Json& value) {
  doc[Json::json_pointer(pointer)] = value;
  return doc;
}

Json without(Json doc, const std::string& pointer) {
  Json::json_pointer p(pointer);
  doc[p.parent_pointer()].erase(p.back());
  return doc;
}

InputError error_of(const Json& doc) {
  try {
    parse_nodepool(doc, "");
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> codes(const Json& doc) {
  std::vector<std::string> out;
  for (const auto& w : lint_nodepool(parse_nodepool(doc, ""), doc)) out.push_back(w.code);
  return out;
}

bool fires(const Json& doc, const std::string& code) {
  auto c = codes(doc);
  return std::find(c.begin(), c.end(), code) != c.end();
}

const std::string kTps = "/spec/template/spec";

}  // namespace

TEST_CASE("the example GPU NodePool of real-systems.md 3.5 parses", "[nodepool]") {
  NodePool p = parse_nodepool(example(), "");
  CHECK(p.name == "gpu-h100");
  CHECK(p.weight == 50);
  REQUIRE(p.limit_gpus);
  CHECK(*p.limit_gpus == 64);
  CHECK_FALSE(p.limit_cpu_milli);
  CHECK_FALSE(p.limit_memory_mib);
  CHECK_FALSE(p.limit_nodes);
  CHECK(p.template_labels == Labels{{"workload", "llm-inference"}});
  CHECK(p.node_class_ref.group == "karpenter.k8s.aws");
  CHECK(p.node_class_ref.kind == "EC2NodeClass");
  CHECK(p.node_class_ref.name == "gpu");
  REQUIRE(p.requirements.size() == 4);
  CHECK(p.requirements[0].key == "node.kubernetes.io/instance-type");
  CHECK(p.requirements[0].op == SelectorOp::In);
  CHECK(p.requirements[0].values == std::vector<std::string>{"p5.48xlarge"});
  CHECK(p.requirements[2].op == SelectorOp::Gt);
  CHECK(p.requirements[2].values == std::vector<std::string>{"0"});
  REQUIRE(p.taints.size() == 1);
  CHECK(p.taints[0].key == "nvidia.com/gpu");
  CHECK(p.taints[0].value == "true");
  CHECK(p.taints[0].effect == TaintEffect::NoSchedule);
  CHECK(p.startup_taints.empty());
  CHECK(p.expire_after == 720 * kHour);
  CHECK(p.termination_grace_period == 2 * kHour);
  CHECK(p.consolidation_policy == ConsolidationPolicy::WhenEmpty);
  CHECK(p.consolidate_after == 10 * kMinute);
  REQUIRE(p.budgets.size() == 2);
  CHECK(p.budgets[0].nodes == "10%");
  CHECK(p.budgets[0].reasons.empty());
  CHECK(p.budgets[0].schedule.empty());
  CHECK_FALSE(p.budgets[0].duration);
  CHECK(p.budgets[1].nodes == "0");
  CHECK(p.budgets[1].reasons == std::vector<DisruptionReason>{DisruptionReason::Drifted});
  CHECK(p.budgets[1].schedule == "0 9 * * mon-fri");
  CHECK(p.budgets[1].duration == 8 * kHour);
  CHECK(selects_gpu_instances(p.requirements));
}

TEST_CASE("defaults are filled as the API server fills them", "[nodepool]") {
  NodePool p = parse_nodepool(minimal(), "");
  CHECK(p.weight == 0);
  CHECK_FALSE(p.limit_gpus);
  CHECK(p.limits.empty());
  CHECK(p.requirements.empty());
  CHECK(p.expire_after == 720 * kHour);
  CHECK_FALSE(p.termination_grace_period);
  CHECK(p.consolidation_policy == ConsolidationPolicy::WhenEmptyOrUnderutilized);
  CHECK(p.consolidate_after == Micros{0});
  REQUIRE(p.budgets.size() == 1);
  CHECK(p.budgets[0].nodes == "10%");

  Json out = check_nodepool_document(minimal());
  CHECK(out["valid"] == true);
  const Json& spec = out["nodepool"]["spec"];
  CHECK(spec["template"]["spec"]["expireAfter"] == "720h");
  CHECK_FALSE(spec["template"]["spec"].contains("terminationGracePeriod"));
  CHECK(spec["template"]["spec"]["taints"] == Json::array());
  CHECK(spec["disruption"] == Json::parse(R"({"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                               "consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]})"));
  CHECK_FALSE(spec.contains("weight"));
  CHECK_FALSE(spec.contains("limits"));
  // A CPU pool gets only the generic advice.
  REQUIRE(out["warnings"].size() == 1);
  CHECK(out["warnings"][0]["code"] == "no-limits");
  CHECK(out["warnings"][0]["path"] == "/spec/limits");
}

TEST_CASE("the normalised NodePool keeps the API's field names and canonical durations", "[nodepool]") {
  Json doc = with(example(), "/spec/disruption/consolidateAfter", "90m");
  doc = with(doc, "/metadata/labels", Json{{"team", "ml"}});
  doc = with(doc, "/spec/template/spec/expireAfter", "Never");
  Json out = check_nodepool_document(doc);
  const Json& np = out["nodepool"];
  CHECK(np["apiVersion"] == "karpenter.sh/v1");
  CHECK(np["kind"] == "NodePool");
  CHECK(np["metadata"] == Json::parse(R"({"name": "gpu-h100", "labels": {"team": "ml"}})"));
  CHECK(np["spec"]["weight"] == 50);
  CHECK(np["spec"]["limits"] == Json::parse(R"({"nvidia.com/gpu": "64"})"));
  CHECK(np["spec"]["disruption"]["consolidateAfter"] == "1h30m");
  CHECK(np["spec"]["template"]["spec"]["expireAfter"] == "Never");
  CHECK(np["spec"]["template"]["spec"]["terminationGracePeriod"] == "2h");
  CHECK(np["spec"]["disruption"]["budgets"][1] ==
        Json::parse(R"({"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"})"));
  CHECK(np["spec"]["template"]["spec"]["requirements"][2] ==
        Json::parse(R"({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]})"));
  // The normalised object is itself a valid NodePool that normalises to itself.
  CHECK(check_nodepool_document(np)["nodepool"] == np);
}

TEST_CASE("invalid NodePools name the exact path", "[nodepool]") {
  struct Case {
    const char* what;
    Json doc;
    const char* path;
    const char* says;
  };
  const Json ex = example();
  const std::vector<Case> cases = {
      {"unknown field", with(ex, kTps + "/foo", 1), "/spec/template/spec/foo", "allowed fields: expireAfter, nodeClassRef"},
      {"unknown top-level field", with(ex, "/status", Json::object()), "/status", "unknown field \"status\""},
      {"bad enum", with(ex, "/spec/disruption/consolidationPolicy", "Always"), "/spec/disruption/consolidationPolicy",
       "expected one of \"WhenEmpty\", \"WhenEmptyOrUnderutilized\", \"Balanced\""},
      {"v1beta1 policy", with(ex, "/spec/disruption/consolidationPolicy", "WhenUnderutilized"),
       "/spec/disruption/consolidationPolicy", "WhenEmptyOrUnderutilized in v1"},
      {"1hr", with(ex, "/spec/disruption/consolidateAfter", "1hr"), "/spec/disruption/consolidateAfter",
       "unknown unit \"hr\""},
      {"10 minutes", with(ex, "/spec/disruption/consolidateAfter", "10 minutes"), "/spec/disruption/consolidateAfter",
       "(ns, us, µs, ms, s, m, h)"},
      {"-5m", with(ex, "/spec/disruption/consolidateAfter", "-5m"), "/spec/disruption/consolidateAfter", "negative"},
      {"Go but not CRD", with(ex, "/spec/disruption/consolidateAfter", "1.5h"), "/spec/disruption/consolidateAfter",
       "write \"1h30m\""},
      {"milliseconds", with(ex, kTps + "/expireAfter", "500ms"), "/spec/template/spec/expireAfter",
       "whole numbers with the units s, m or h"},
      {"duration as a number", with(ex, kTps + "/terminationGracePeriod", 7200), "/spec/template/spec/terminationGracePeriod",
       "which has no unit"},
      {"Never where not allowed", with(ex, kTps + "/terminationGracePeriod", "Never"),
       "/spec/template/spec/terminationGracePeriod", "\"Never\" is not allowed here"},
      {"wrong operator", with(ex, kTps + "/requirements/3/operator", "Like"), "/spec/template/spec/requirements/3/operator",
       "\"Gte\", \"Lte\""},
      {"Gt with two values", with(ex, kTps + "/requirements/2/values", Json{"0", "1"}), "/spec/template/spec/requirements/2/values",
       "exactly one value"},
      {"Gt with a word", with(ex, kTps + "/requirements/2/values", Json{"many"}), "/spec/template/spec/requirements/2/values/0",
       "non-negative whole number"},
      {"Lt negative", with(ex, kTps + "/requirements/2", Json{{"key", "karpenter.k8s.aws/instance-gpu-count"}, {"operator", "Lt"}, {"values", {"-1"}}}),
       "/spec/template/spec/requirements/2/values/0", "non-negative whole number"},
      {"In without values", with(ex, kTps + "/requirements/0/values", Json::array()), "/spec/template/spec/requirements/0/values",
       "at least one value"},
      {"NotIn without values", with(with(ex, kTps + "/requirements/0/operator", "NotIn"), kTps + "/requirements/0/values", Json::array()),
       "/spec/template/spec/requirements/0/values", "at least one value"},
      {"Exists with values", with(ex, kTps + "/requirements/0/operator", "Exists"), "/spec/template/spec/requirements/0/values",
       "takes no values"},
      {"minValues above the values", with(ex, kTps + "/requirements/1/minValues", 3), "/spec/template/spec/requirements/1/minValues",
       "at least minValues"},
      {"hostname requirement", with(ex, kTps + "/requirements/3/key", "kubernetes.io/hostname"),
       "/spec/template/spec/requirements/3/key", "\"kubernetes.io/hostname\" is restricted"},
      {"karpenter.sh domain", with(ex, kTps + "/requirements/3/key", "karpenter.sh/nodepool"),
       "/spec/template/spec/requirements/3/key", "restricted"},
      {"kubernetes.io domain", with(ex, kTps + "/requirements/3/key", "kubernetes.io/role"),
       "/spec/template/spec/requirements/3/key", "label domain \"kubernetes.io\" is restricted"},
      {"unknown AWS label", with(ex, kTps + "/requirements/3/key", "karpenter.k8s.aws/instance-gpus"),
       "/spec/template/spec/requirements/3/key", "label domain \"karpenter.k8s.aws\" is restricted"},
      {"bad key syntax", with(ex, kTps + "/requirements/3/key", "Bad_Domain/arch"), "/spec/template/spec/requirements/3/key",
       "DNS-1123"},
      {"restricted template label", with(ex, "/spec/template/metadata/labels", Json{{"kubernetes.io/hostname", "x"}}),
       "/spec/template/metadata/labels/kubernetes.io~1hostname", "restricted"},
      {"weight 101", with(ex, "/spec/weight", 101), "/spec/weight", "between 1 and 100"},
      {"weight 0", with(ex, "/spec/weight", 0), "/spec/weight", "between 1 and 100"},
      {"budget 120%", with(ex, "/spec/disruption/budgets/0/nodes", "120%"), "/spec/disruption/budgets/0/nodes",
       "from \"0%\" to \"100%\""},
      {"budget nodes a number", with(ex, "/spec/disruption/budgets/0/nodes", 5), "/spec/disruption/budgets/0/nodes",
       "write \"5\""},
      {"budget nodes negative", with(ex, "/spec/disruption/budgets/0/nodes", "-1"), "/spec/disruption/budgets/0/nodes",
       "node count"},
      {"schedule without duration", without(ex, "/spec/disruption/budgets/1/duration"), "/spec/disruption/budgets/1/duration",
       "'schedule' must be set with 'duration'"},
      {"duration without schedule", without(ex, "/spec/disruption/budgets/1/schedule"), "/spec/disruption/budgets/1/schedule",
       "'schedule' must be set with 'duration'"},
      {"budget duration in seconds", with(ex, "/spec/disruption/budgets/1/duration", "30s"), "/spec/disruption/budgets/1/duration",
       "whole hours and/or minutes"},
      {"bad cron hour", with(ex, "/spec/disruption/budgets/1/schedule", "0 25 * * *"), "/spec/disruption/budgets/1/schedule",
       "outside 0-23"},
      {"six cron fields", with(ex, "/spec/disruption/budgets/1/schedule", "0 0 9 * * mon"), "/spec/disruption/budgets/1/schedule",
       "has 6 fields"},
      {"cron time zone", with(ex, "/spec/disruption/budgets/1/schedule", "TZ=Europe/Paris 0 9 * * *"),
       "/spec/disruption/budgets/1/schedule", "time zones are not supported"},
      {"bad reason", with(ex, "/spec/disruption/budgets/1/reasons", Json{"Expired"}), "/spec/disruption/budgets/1/reasons/0",
       "\"Underutilized\", \"Empty\", \"Drifted\""},
      {"missing nodeClassRef", without(ex, kTps + "/nodeClassRef"), "/spec/template/spec/nodeClassRef", "is required"},
      {"nodeClassRef without group", without(ex, kTps + "/nodeClassRef/group"), "/spec/template/spec/nodeClassRef/group",
       "is required"},
      {"v1beta1 nodeClassRef", with(ex, kTps + "/nodeClassRef/apiVersion", "karpenter.k8s.aws/v1"),
       "/spec/template/spec/nodeClassRef/apiVersion", "replaced by group"},
      {"missing requirements", without(ex, kTps + "/requirements"), "/spec/template/spec/requirements", "is required"},
      {"wrong apiVersion", with(ex, "/apiVersion", "karpenter.sh/v1beta1"), "/apiVersion", "expected \"karpenter.sh/v1\""},
      {"wrong kind", with(ex, "/kind", "NodeClaim"), "/kind", "expected \"NodePool\""},
      {"missing name", without(ex, "/metadata/name"), "/metadata/name", "is required"},
      {"bad name", with(ex, "/metadata/name", "GPU_Pool"), "/metadata/name", "DNS-1123"},
      {"disruption without consolidateAfter", without(ex, "/spec/disruption/consolidateAfter"),
       "/spec/disruption/consolidateAfter", "is required"},
      {"expireAfter in disruption (v1beta1)", with(ex, "/spec/disruption/expireAfter", "720h"), "/spec/disruption/expireAfter",
       "moved to spec.template.spec.expireAfter"},
      {"static NodePool", with(ex, "/spec/replicas", 2), "/spec/replicas", "not modelled"},
      {"bad taint effect", with(ex, kTps + "/taints/0/effect", "NoEntry"), "/spec/template/spec/taints/0/effect",
       "\"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""},
      {"duplicate taint", with(ex, kTps + "/startupTaints", Json::parse(R"([{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])")),
       "/spec/template/spec/startupTaints/0", "duplicate taint"},
      {"bad limit", with(ex, "/spec/limits/nvidia.com~1gpu", "64 GPUs"), "/spec/limits/nvidia.com~1gpu", "not a valid quantity"},
      {"label value a boolean", with(ex, "/spec/template/metadata/labels/workload", true),
       "/spec/template/metadata/labels/workload", "quote the value"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    InputError e = error_of(c.doc);
    CHECK(e.path() == c.path);
    INFO(e.message());
    CHECK(contains(e.message(), c.says));
  }
}

TEST_CASE("the API operation wraps the check and its errors", "[nodepool]") {
  Json ok = Json::parse(api::envelope([] { return api::nodepool_check(example().dump()); }));
  CHECK(ok["ok"] == true);
  CHECK(ok["result"]["valid"] == true);
  Json bad = Json::parse(api::envelope([] { return api::nodepool_check(with(example(), "/spec/weight", 101).dump()); }));
  CHECK(bad["ok"] == false);
  CHECK(bad["error"]["path"] == "/spec/weight");
  Json syntax = Json::parse(api::envelope([] { return api::nodepool_check("{\"apiVersion\": "); }));
  CHECK(syntax["ok"] == false);
  CHECK(syntax["error"]["path"] == "/apiVersion");  // where the text ended: its value is missing
}

TEST_CASE("limits: quantities in the simulator's units, other resources kept", "[nodepool]") {
  Json doc = with(minimal(), "/spec/limits",
                  Json::parse(R"({"cpu": "1000", "memory": "1000Gi", "nodes": 10, "nvidia.com/gpu": "1.5",
                                  "ephemeral-storage": "100Gi"})"));
  NodePool p = parse_nodepool(doc, "");
  CHECK(p.limit_cpu_milli == std::int64_t{1000000});
  CHECK(p.limit_memory_mib == std::int64_t{1000 * 1024});
  CHECK(p.limit_nodes == std::int64_t{10});
  CHECK(p.limit_gpus == std::int64_t{1});  // usage is whole GPUs: 1.5 admits at most 1
  CHECK(p.limits.at("ephemeral-storage") == "100Gi");
  CHECK(p.limits.at("nodes") == "10");
}

TEST_CASE("deprecated label aliases are normalised like Karpenter does", "[nodepool]") {
  Json doc = with(minimal(), kTps + "/requirements",
                  Json::parse(R"([{"key": "beta.kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                                  {"key": "failure-domain.beta.kubernetes.io/zone", "operator": "Exists"}])"));
  NodePool p = parse_nodepool(doc, "");
  CHECK(p.requirements[0].key == "kubernetes.io/arch");
  CHECK(p.requirements[1].key == "topology.kubernetes.io/zone");
  CHECK(p.requirements[1].values.empty());
}

TEST_CASE("GPU pools are recognised from their requirements", "[nodepool]") {
  auto reqs = [](const char* json) {
    Json doc = with(minimal(), kTps + "/requirements", Json::parse(json));
    return parse_nodepool(doc, "").requirements;
  };
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["8"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["p5", "p4d"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g6e"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g5.12xlarge"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["h100"]}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "Exists"}])")));
  CHECK(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["p"]}])")));

  CHECK_FALSE(selects_gpu_instances(reqs("[]")));
  CHECK_FALSE(selects_gpu_instances(reqs(R"([{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m7i.4xlarge", "c7i.2xlarge"]}])")));
  CHECK_FALSE(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Lt", "values": ["1"]}])")));
  CHECK_FALSE(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["0"]}])")));
  CHECK_FALSE(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["p5"]}])")));
  CHECK_FALSE(selects_gpu_instances(reqs(R"([{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m"]}])")));
}

TEST_CASE("lint: consolidation policy on GPU pools", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "consolidation-evicts-replicas"));
  Json underutilized = with(ex, "/spec/disruption/consolidationPolicy", "WhenEmptyOrUnderutilized");
  CHECK(fires(underutilized, "consolidation-evicts-replicas"));
  CHECK(fires(with(ex, "/spec/disruption/consolidationPolicy", "Balanced"), "consolidation-evicts-replicas"));
  CHECK(fires(without(ex, "/spec/disruption"), "consolidation-evicts-replicas"));  // the v1 default policy
  // consolidateAfter Never switches consolidation off: nothing is evicted, but empty nodes are kept too.
  Json never = with(underutilized, "/spec/disruption/consolidateAfter", "Never");
  CHECK_FALSE(fires(never, "consolidation-evicts-replicas"));
  CHECK(fires(never, "consolidate-after-never"));
  CHECK_FALSE(fires(ex, "consolidate-after-never"));
  // A CPU pool may consolidate freely.
  CHECK_FALSE(fires(minimal(), "consolidation-evicts-replicas"));

  auto warnings = lint_nodepool(parse_nodepool(underutilized, ""), underutilized);
  auto w = std::find_if(warnings.begin(), warnings.end(), [](const NodePoolWarning& x) { return x.code == "consolidation-evicts-replicas"; });
  REQUIRE(w != warnings.end());
  CHECK(w->path == "/spec/disruption/consolidationPolicy");
  CHECK(contains(w->message, "WhenEmpty"));
  CHECK(contains(w->message, "weight load"));
}

TEST_CASE("lint: consolidateAfter 0s churns GPU nodes", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "consolidate-after-zero"));
  CHECK(fires(with(ex, "/spec/disruption/consolidateAfter", "0s"), "consolidate-after-zero"));
  CHECK(fires(without(ex, "/spec/disruption"), "consolidate-after-zero"));  // defaulted to 0s
  CHECK_FALSE(fires(minimal(), "consolidate-after-zero"));
}

TEST_CASE("lint: GPU nodes need a NoSchedule taint", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "no-gpu-taint"));
  CHECK(fires(without(ex, kTps + "/taints"), "no-gpu-taint"));
  CHECK(fires(with(ex, kTps + "/taints/0/effect", "PreferNoSchedule"), "no-gpu-taint"));
  // A startup taint is removed once the node initialises: it does not keep other pods away.
  Json startup_only = with(without(ex, kTps + "/taints"), kTps + "/startupTaints", ex["spec"]["template"]["spec"]["taints"]);
  CHECK(fires(startup_only, "no-gpu-taint"));
  CHECK_FALSE(fires(with(ex, kTps + "/taints/0", Json{{"key", "dedicated"}, {"value", "llm"}, {"effect", "NoExecute"}}), "no-gpu-taint"));
  CHECK_FALSE(fires(minimal(), "no-gpu-taint"));
}

TEST_CASE("lint: spot capacity on a GPU pool serving a latency SLO", "[nodepool]") {
  const Json ex = example();
  auto warnings = lint_nodepool(parse_nodepool(ex, ""), ex);
  REQUIRE(warnings.size() == 1);  // the §3.5 example allows spot; nothing else to say
  CHECK(warnings[0].code == "spot-for-latency-slo");
  CHECK(warnings[0].path == "/spec/template/spec/requirements/1");
  CHECK(contains(warnings[0].message, "2-minute"));

  CHECK_FALSE(fires(with(ex, kTps + "/requirements/1/values", Json{"on-demand"}), "spot-for-latency-slo"));
  CHECK_FALSE(fires(with(ex, kTps + "/requirements/1/values", Json{"on-demand", "reserved"}), "spot-for-latency-slo"));
  // No capacity-type requirement: the AWS provider defaults the pool to on-demand.
  Json no_requirement = ex;
  no_requirement["spec"]["template"]["spec"]["requirements"].erase(1);
  CHECK_FALSE(fires(no_requirement, "spot-for-latency-slo"));
  CHECK(fires(with(ex, kTps + "/requirements/1", Json{{"key", "karpenter.sh/capacity-type"}, {"operator", "NotIn"}, {"values", {"on-demand"}}}),
              "spot-for-latency-slo"));
  CHECK(fires(with(no_requirement, "/spec/template/metadata/labels/karpenter.sh~1capacity-type", "spot"), "spot-for-latency-slo"));
  // A second requirement on the same key narrows the first (requirements intersect).
  Json narrowed = ex;
  narrowed["spec"]["template"]["spec"]["requirements"].push_back(
      {{"key", "karpenter.sh/capacity-type"}, {"operator", "NotIn"}, {"values", {"spot"}}});
  CHECK_FALSE(fires(narrowed, "spot-for-latency-slo"));
}

TEST_CASE("lint: limits", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "no-limits"));
  CHECK(fires(without(ex, "/spec/limits"), "no-limits"));
  CHECK(fires(with(ex, "/spec/limits", Json::object()), "no-limits"));
  CHECK_FALSE(fires(with(ex, "/spec/limits", Json{{"nodes", "8"}}), "no-limits"));
  CHECK(fires(minimal(), "no-limits"));
  CHECK(fires(with(ex, "/spec/limits/nvidia.com~1gpu", "0"), "limit-blocks-launches"));
  CHECK_FALSE(fires(ex, "limit-blocks-launches"));
}

TEST_CASE("lint: short expireAfter forces drains on GPU pools", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "expire-after-short"));
  CHECK_FALSE(fires(with(ex, kTps + "/expireAfter", "Never"), "expire-after-short"));
  CHECK_FALSE(fires(with(ex, kTps + "/expireAfter", "24h"), "expire-after-short"));
  CHECK(fires(with(ex, kTps + "/expireAfter", "23h59m"), "expire-after-short"));
  CHECK(fires(with(ex, kTps + "/expireAfter", "12h"), "expire-after-short"));
  CHECK_FALSE(fires(with(minimal(), kTps + "/expireAfter", "12h"), "expire-after-short"));
}

TEST_CASE("lint: budgets that allow 100% disruption", "[nodepool]") {
  const Json ex = example();
  CHECK_FALSE(fires(ex, "budget-allows-all"));
  CHECK_FALSE(fires(minimal(), "budget-allows-all"));  // the default 10%
  CHECK(fires(with(ex, "/spec/disruption/budgets", Json::parse(R"([{"nodes": "100%"}])")), "budget-allows-all"));
  CHECK(fires(with(ex, "/spec/disruption/budgets", Json::array()), "budget-allows-all"));  // no budget = no bound
  // Only a scheduled budget: outside its window nothing bounds drift.
  CHECK(fires(with(ex, "/spec/disruption/budgets",
                   Json::parse(R"([{"nodes": "0", "schedule": "@daily", "duration": "1h"}])")),
              "budget-allows-all"));
  // 100% for empty nodes only is harmless: empty nodes run no replicas.
  CHECK_FALSE(fires(with(ex, "/spec/disruption/budgets",
                         Json::parse(R"([{"nodes": "100%", "reasons": ["Empty"]}, {"nodes": "1", "reasons": ["Drifted"]}])")),
                    "budget-allows-all"));
  // With WhenEmptyOrUnderutilized, Underutilized needs a bound too.
  Json consolidating = with(ex, "/spec/disruption/consolidationPolicy", "WhenEmptyOrUnderutilized");
  CHECK(fires(with(consolidating, "/spec/disruption/budgets",
                   Json::parse(R"([{"nodes": "100%", "reasons": ["Empty"]}, {"nodes": "1", "reasons": ["Drifted"]}])")),
              "budget-allows-all"));
}

TEST_CASE("a well-configured GPU pool gets no warnings", "[nodepool]") {
  Json good = with(example(), kTps + "/requirements/1/values", Json{"on-demand"});
  good = with(good, "/spec/limits/nodes", "8");
  Json out = check_nodepool_document(good);
  CHECK(out["valid"] == true);
  CHECK(out["warnings"] == Json::array());
}

TEST_CASE("karpenter.sh/capacity-type values are checked against on-demand, spot and reserved", "[nodepool]") {
  // nodeclaim_validation.go validateWellKnownValues: only invalid values is a validation error naming
  // the allowed values; a mix is logged and the invalid ones ignored (a lint warning here).
  const Json ex = example();
  const std::string path = kTps + "/requirements/1/values";
  InputError e = error_of(with(ex, path, Json{"ondemand"}));
  CHECK(e.path() == path);
  CHECK(contains(e.message(), "\"ondemand\""));
  CHECK(contains(e.message(), "allowed: \"on-demand\", \"spot\", \"reserved\""));

  const Json mixed = with(ex, path, Json{"on-demand", "ondemand"});
  const NodePool pool = parse_nodepool(mixed, "");
  CHECK(pool.requirements[1].values.size() == 2);
  bool warned = false;
  for (const auto& w : lint_nodepool(pool, mixed)) {
    if (w.code != "unknown-requirement-value") continue;
    warned = true;
    CHECK(w.path == path + "/1");
    CHECK(contains(w.message, "on-demand, spot, reserved"));
  }
  CHECK(warned);
  CHECK_FALSE(fires(ex, "unknown-requirement-value"));
  CHECK_NOTHROW(parse_nodepool(with(ex, path, Json{"reserved"}), ""));

  // minValues counts the valid values only.
  Json two = with(ex, kTps + "/requirements/1", Json{{"key", "karpenter.sh/capacity-type"}, {"operator", "In"},
                                                     {"values", {"spot", "ondemand"}}, {"minValues", 2}});
  e = error_of(two);
  CHECK(e.path() == kTps + "/requirements/1/minValues");
  // NotIn takes any value (nothing to select).
  CHECK_NOTHROW(parse_nodepool(with(ex, kTps + "/requirements/1/operator", "NotIn"), ""));
}
