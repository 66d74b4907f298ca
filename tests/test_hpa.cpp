// Tests of the HPA algorithm (core/src/hpa.cpp) and its JSON front end (core/src/hpa_json.cpp).
// Cases named after kubernetes/kubernetes pkg/controller/podautoscaler replica_calculator_test.go and
// horizontal_test.go are ported with their numbers; a Go fixture's pod request of "1.0" per container
// with two containers is a 2000m pod request here, and its levels are per container (×2 per pod).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "gpuscale/errors.hpp"
#include "autoscaling/hpa.hpp"
#include "autoscaling/hpa_json.hpp"

using namespace gpuscale;
using namespace gpuscale::hpa;

namespace {

constexpr Micros kNow = 1'000'000 * kMicrosPerSecond;  // an arbitrary "now" for memory timestamps

Micros ago(double seconds) { return kNow - seconds_to_micros(seconds); }

// A Running, Ready pod that started an hour ago (past the cpu initialization period).
PodSnapshot pod(const std::string& name) {
  PodSnapshot p;
  p.name = name;
  return p;
}

PodSnapshot cpu_pod(const std::string& name, std::int64_t request_milli, std::optional<std::int64_t> usage_milli) {
  PodSnapshot p = pod(name);
  p.requests_milli["cpu"] = request_milli;
  if (usage_milli) p.metrics_milli["cpu"] = *usage_milli;
  return p;
}

// Ready=False since start: "never been ready" after the initialization period.
PodSnapshot never_ready(PodSnapshot p) {
  p.ready_condition = ConditionStatus::False;
  p.readiness_transition_age_s = p.start_age_s;
  return p;
}

// Started 10 s ago: inside the cpu initialization period, sample not a full window after the transition.
PodSnapshot hot_cpu(PodSnapshot p) {
  p.start_age_s = 10;
  p.readiness_transition_age_s = 10;
  return p;
}

PodSnapshot metric_pod(const std::string& name, const std::string& metric, std::optional<std::int64_t> value) {
  PodSnapshot p = pod(name);
  if (value) p.metrics_milli[metric] = *value;
  return p;
}

MetricSpec cpu_utilization(std::int32_t target) {
  MetricSpec m;
  m.type = MetricSourceType::Resource;
  m.resource_name = "cpu";
  m.target.type = MetricTargetType::Utilization;
  m.target.average_utilization = target;
  return m;
}

MetricSpec pods_metric(const std::string& name, std::int64_t target_milli) {
  MetricSpec m;
  m.type = MetricSourceType::Pods;
  m.metric.name = name;
  m.target.type = MetricTargetType::AverageValue;
  m.target.average_value_milli = target_milli;
  return m;
}

MetricSpec external_metric(const std::string& name, MetricTargetType type, std::int64_t target_milli) {
  MetricSpec m;
  m.type = MetricSourceType::External;
  m.metric.name = name;
  m.target.type = type;
  if (type == MetricTargetType::Value) {
    m.target.value_milli = target_milli;
  } else {
    m.target.average_value_milli = target_milli;
  }
  return m;
}

MetricSpec object_metric(const std::string& name, MetricTargetType type, std::int64_t target_milli) {
  MetricSpec m = external_metric(name, type, target_milli);
  m.type = MetricSourceType::Object;
  m.described_object = {"apps/v1", "Deployment", "some-deployment"};
  return m;
}

HorizontalPodAutoscalerSpec make_spec(std::int32_t min, std::int32_t max, std::vector<MetricSpec> metrics) {
  HorizontalPodAutoscalerSpec s;
  s.min_replicas = min;
  s.max_replicas = max;
  s.metrics = std::move(metrics);
  return s;
}

Observed observed(std::int32_t replicas, std::vector<PodSnapshot> pods) {
  Observed o;
  o.spec_replicas = replicas;
  o.status_replicas = replicas;
  o.pods = std::move(pods);
  return o;
}

// Memory of an HPA already seen long ago (the Go tests' non-nil empty history).
Memory seen_before() {
  Memory m;
  m.recommendations.push_back({ago(10000), 1});
  return m;
}

// One metric's proposal from a full reconcile with a wide-open spec.
MetricProposal propose(const MetricSpec& metric, const Observed& obs, const ControllerFlags& flags = {},
                       std::optional<HorizontalPodAutoscalerBehavior> behavior = std::nullopt) {
  auto spec = make_spec(0, 1000, {metric});
  spec.min_replicas = 1;
  spec.behavior = behavior;
  Memory mem = seen_before();
  Decision d = reconcile(spec, obs, mem, kNow, flags);
  REQUIRE(d.proposals.size() == 1);
  return d.proposals[0];
}

HorizontalPodAutoscalerBehavior behavior_with(std::optional<HPAScalingRules> up, std::optional<HPAScalingRules> down) {
  HorizontalPodAutoscalerBehavior b;
  b.scale_up = up;
  b.scale_down = down;
  return b;
}

HPAScalingRules rules(std::int32_t window, std::vector<HPAScalingPolicy> policies,
                      SelectPolicy select = SelectPolicy::Max) {
  HPAScalingRules r;
  r.stabilization_window_seconds = window;
  r.policies = policies;
  r.select_policy = select;
  return r;
}

// `current` ready pods whose Pods metric "load" (target 1 = 1000m) proposes `desired`: the pods carry
// desired × 1000m in total, so ceil(average / 1000m × current) = desired for the counts used here.
Observed wants(std::int32_t current, std::int32_t desired) {
  std::vector<PodSnapshot> pods;
  for (int i = 0; i < current; ++i) {
    pods.push_back(metric_pod("p" + std::to_string(i), "load", i == 0 ? std::int64_t(desired) * 1000 : 0));
  }
  return observed(current, pods);
}

InputError json_error(const std::string& text) {
  try {
    evaluate_hpa_document(text);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", "");
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Quantities
// ---------------------------------------------------------------------------------------------

TEST_CASE("tolerance band is inclusive at exactly 0.9 and 1.1", "[hpa]") {
  auto with_usage = [](std::int64_t usage) {
    std::vector<PodSnapshot> pods;
    for (int i = 0; i < 10; ++i) pods.push_back(cpu_pod("p" + std::to_string(i), 1000, usage));
    return observed(10, pods);
  };
  // utilization 110 % / target 100 = 1.1 exactly: within.
  MetricProposal at_up = propose(cpu_utilization(100), with_usage(1100));
  CHECK(at_up.ratio == 1.1);
  CHECK(at_up.replicas == 10);
  // 111 %: ceil(1.11 × 10) = 12.
  CHECK(propose(cpu_utilization(100), with_usage(1110)).replicas == 12);
  // 90 %: within.
  MetricProposal at_down = propose(cpu_utilization(100), with_usage(900));
  CHECK(at_down.ratio == 0.9);
  CHECK(at_down.replicas == 10);
  // 89 %: ceil(0.89 × 10) = 9.
  CHECK(propose(cpu_utilization(100), with_usage(890)).replicas == 9);
}

TEST_CASE("TestReplicaCalcTolerance: 102 % of target keeps 3", "[hpa]") {
  Observed o = observed(3, {cpu_pod("a", 1800, 2020), cpu_pod("b", 2000, 2060), cpu_pod("c", 2200, 2040)});
  MetricProposal p = propose(cpu_utilization(100), o);
  CHECK(*p.current_utilization == 102);
  CHECK(p.current_milli == 2040);
  CHECK(p.replicas == 3);
}

TEST_CASE("per-HPA tolerance from behavior (TestReplicaCalcConfigurableToleranceCM)", "[hpa]") {
  Observed o =
      observed(3, {metric_pod("a", "qps", 20000), metric_pod("b", "qps", 21000), metric_pod("c", "qps", 21000)});
  // Default 10 %: avg 20666m / 20 = 1.033 keeps 3.
  MetricProposal def = propose(pods_metric("qps", 20000), o);
  CHECK(def.current_milli == 20666);
  CHECK(def.replicas == 3);
  // scaleUp tolerance 1 %: ceil(1.033 × 3) = 4.
  HPAScalingRules up;
  up.tolerance = 0.01;
  CHECK(propose(pods_metric("qps", 20000), o, {}, behavior_with(up, std::nullopt)).replicas == 4);
  // Gate off: the flag applies again.
  ControllerFlags gate_off;
  gate_off.configurable_tolerance = false;
  CHECK(propose(pods_metric("qps", 20000), o, gate_off, behavior_with(up, std::nullopt)).replicas == 3);
  // Outside a 34 % scale-down tolerance, within 36 % (TestReplicaCalcConfigurableTolerance).
  Observed low = observed(3, {cpu_pod("a", 1800, 1320), cpu_pod("b", 2000, 1280), cpu_pod("c", 2200, 1300)});
  HPAScalingRules down;
  down.tolerance = 0.34;
  MetricProposal p34 = propose(cpu_utilization(100), low, {}, behavior_with(std::nullopt, down));
  CHECK(*p34.current_utilization == 65);
  CHECK(p34.replicas == 2);
  down.tolerance = 0.36;
  CHECK(propose(cpu_utilization(100), low, {}, behavior_with(std::nullopt, down)).replicas == 3);
}

// ---------------------------------------------------------------------------------------------
// Per-metric arithmetic
// ---------------------------------------------------------------------------------------------

TEST_CASE("utilization is truncated to a whole percent", "[hpa]") {
  // 2999m × 100 / 3000m = 99.97 → 99 %; 99/90 = 1.1 is within tolerance (1.111 would scale to 4).
  Observed o = observed(3, {cpu_pod("a", 1000, 1000), cpu_pod("b", 1000, 1000), cpu_pod("c", 1000, 999)});
  MetricProposal p = propose(cpu_utilization(90), o);
  CHECK(*p.current_utilization == 99);
  CHECK(p.ratio == 1.1);
  CHECK(p.replicas == 3);
  // TestReplicaCalcScaleDown: 2800m × 100 / 10000m = 28 %; ceil(0.56 × 5) = 3.
  Observed down = observed(5, {cpu_pod("a", 2000, 200), cpu_pod("b", 2000, 600), cpu_pod("c", 2000, 1000),
                               cpu_pod("d", 2000, 500), cpu_pod("e", 2000, 500)});
  MetricProposal pd = propose(cpu_utilization(50), down);
  CHECK(*pd.current_utilization == 28);
  CHECK(pd.current_milli == 560);
  CHECK(pd.replicas == 3);
}

TEST_CASE("scale-up with unready and hot-CPU pods scales less (TestReplicaCalcResourceScale)", "[hpa]") {
  // "scale up": util 50 % / 30 → 5.
  Observed base = observed(3, {cpu_pod("a", 2000, 600), cpu_pod("b", 2000, 1000), cpu_pod("c", 2000, 1400)});
  CHECK(propose(cpu_utilization(30), base).replicas == 5);
  // "unready pod scales less": ready pods 60 %, ratio 2; unready filled with 0 → 40 %, ceil(1.333 × 3) = 4.
  Observed unready = base;
  unready.pods[0] = never_ready(unready.pods[0]);
  MetricProposal p = propose(cpu_utilization(30), unready);
  CHECK(*p.current_utilization == 60);
  CHECK(p.unready_pods == 1);
  CHECK(p.ready_pods == 2);
  CHECK(*p.rebalanced_ratio == Approx(40.0 / 30.0));
  CHECK(p.replicas == 4);
  // "hot-CPU pod scales less": the same through the initialization period.
  Observed hot = base;
  hot.pods[0] = hot_cpu(hot.pods[0]);
  CHECK(propose(cpu_utilization(30), hot).replicas == 4);
  // "no scale: unready pods ignored": only pod a (40 %) is ready, ratio 1.333; fill → 3.
  Observed two_unready = observed(
      3, {cpu_pod("a", 2000, 800), never_ready(cpu_pod("b", 2000, 1000)), never_ready(cpu_pod("c", 2000, 1400))});
  MetricProposal q = propose(cpu_utilization(30), two_unready);
  CHECK(*q.current_utilization == 40);
  CHECK(q.replicas == 3);
}

TEST_CASE("failed and deleting pods are ignored entirely", "[hpa]") {
  // "scale up: failed pods ignored" and "pods being deleted are ignored": 60 % / 30 over 2 pods → 4.
  Observed failed = observed(2, {cpu_pod("a", 2000, 1000), cpu_pod("b", 2000, 1400), cpu_pod("c", 2000, std::nullopt),
                                 cpu_pod("d", 2000, std::nullopt)});
  failed.pods[2].phase = PodPhase::Failed;
  failed.pods[3].phase = PodPhase::Failed;
  MetricProposal p = propose(cpu_utilization(30), failed);
  CHECK(p.ignored_pods == 2);
  CHECK(p.missing_pods == 0);
  CHECK(p.replicas == 4);
  Observed deleting = failed;
  deleting.pods[2].phase = PodPhase::Running;
  deleting.pods[3].phase = PodPhase::Running;
  deleting.pods[2].deleting = true;
  deleting.pods[3].deleting = true;
  CHECK(propose(cpu_utilization(30), deleting).replicas == 4);
}

TEST_CASE("scale-down excludes unready and Pending pods", "[hpa]") {
  // "scale down: exclude unready pods": 30 % / 50 over 3 ready pods → ceil(0.6 × 3) = 2.
  Observed o = observed(5, {cpu_pod("a", 2000, 200), cpu_pod("b", 2000, 600), cpu_pod("c", 2000, 1000),
                            never_ready(cpu_pod("d", 2000, 500)), never_ready(cpu_pod("e", 2000, 500))});
  MetricProposal p = propose(cpu_utilization(50), o);
  CHECK(*p.current_utilization == 30);
  CHECK(p.replicas == 2);
  // "exclude unscheduled pods": 4 Pending pods → 10 % / 50 over 1 pod → 1.
  Observed pending = observed(5, {cpu_pod("a", 2000, 200)});
  for (const char* n : {"b", "c", "d", "e"}) {
    PodSnapshot q = cpu_pod(n, 2000, std::nullopt);
    q.phase = PodPhase::Pending;
    q.start_age_s.reset();
    pending.pods.push_back(q);
  }
  MetricProposal pp = propose(cpu_utilization(50), pending);
  CHECK(pp.unready_pods == 4);
  CHECK(pp.replicas == 1);
}

TEST_CASE("missing metrics: request fill on scale-down, zero on scale-up, direction flip", "[hpa]") {
  // TestReplicaCalcMissingMetrics: 24 % → fill missing with their request → 62 %, ceil(0.62 × 4) = 3.
  Observed m = observed(4, {cpu_pod("a", 2000, 800), cpu_pod("b", 2000, 190), cpu_pod("c", 2000, std::nullopt),
                            cpu_pod("d", 2000, std::nullopt)});
  MetricProposal p = propose(cpu_utilization(100), m);
  CHECK(*p.current_utilization == 24);
  CHECK(p.current_milli == 495);
  CHECK(p.missing_pods == 2);
  CHECK(*p.rebalanced_ratio == Approx(0.62));
  CHECK(p.replicas == 3);
  // TestReplicaCalcMissingMetricsScaleDownTargetOver100: missing pod counted at request × 300/100 → 2.
  Observed over = observed(4, {never_ready(cpu_pod("a", 2000, 400)), cpu_pod("b", 2000, 200), cpu_pod("c", 4000, 200),
                               cpu_pod("d", 4000, std::nullopt)});
  MetricProposal po = propose(cpu_utilization(300), over);
  CHECK(*po.current_utilization == 6);
  CHECK(po.replicas == 2);
  // TestReplicaCalcMissingMetricsUnreadyScaleUp: missing and unready counted at 0 → 66 %, ceil(1.32 × 3) = 4.
  Observed up =
      observed(3, {never_ready(cpu_pod("a", 2000, 200)), cpu_pod("b", 2000, 4000), cpu_pod("c", 2000, std::nullopt)});
  MetricProposal pu = propose(cpu_utilization(50), up);
  CHECK(*pu.current_utilization == 200);
  CHECK(pu.replicas == 4);
  // TestReplicaCalcMissingMetricsUnreadyChange: 45 % / 50 = 0.9, filling makes it 1.44: direction flip → 3.
  Observed flip =
      observed(3, {never_ready(cpu_pod("a", 2000, 200)), cpu_pod("b", 2000, 900), cpu_pod("c", 2000, std::nullopt)});
  MetricProposal pf = propose(cpu_utilization(50), flip);
  CHECK(*pf.rebalanced_ratio == Approx(1.44));
  CHECK(pf.replicas == 3);
  // TestReplicaCalcMissingMetricsNoChangeGt: 190 %, one missing pod at 0 → 95 % within → 2.
  Observed gt = observed(2, {cpu_pod("a", 2000, 3800), cpu_pod("b", 2000, std::nullopt)});
  CHECK(propose(cpu_utilization(100), gt).replicas == 2);
}

TEST_CASE("Pods metrics ignore readiness (ScaleUpCMUnreadyHotCpuNoLessScale)", "[hpa]") {
  // TestReplicaCalcScaleUpCMUnreadyHotCpuNoLessScale: avg 30 / 15 = 2 → ceil(2 × 3) = 6.
  Observed o = observed(3, {metric_pod("a", "qps", 50000), metric_pod("b", "qps", 10000),
                            hot_cpu(never_ready(metric_pod("c", "qps", 30000)))});
  MetricProposal p = propose(pods_metric("qps", 15000), o);
  CHECK(p.current_milli == 30000);
  CHECK(p.unready_pods == 0);
  CHECK(p.replicas == 6);
  // TestReplicaCalcScaleUpCMUnreadyHotCpuScaleWouldScaleDown: avg 31666m → ceil(2.111 × 3) = 7.
  Observed o2 = observed(3, {hot_cpu(never_ready(metric_pod("a", "qps", 50000))), metric_pod("b", "qps", 15000),
                             hot_cpu(never_ready(metric_pod("c", "qps", 30000)))});
  MetricProposal p2 = propose(pods_metric("qps", 15000), o2);
  CHECK(p2.current_milli == 31666);
  CHECK(p2.replicas == 7);
  // TestReplicaCalcScaleUpCM: avg 20 / 15 → 4.
  Observed o3 =
      observed(3, {metric_pod("a", "qps", 20000), metric_pod("b", "qps", 10000), metric_pod("c", "qps", 30000)});
  CHECK(propose(pods_metric("qps", 15000), o3).replicas == 4);
}

TEST_CASE("Pods metric explanation carries the numbers", "[hpa]") {
  Observed o = observed(
      2, {metric_pod("a", "vllm:num_requests_waiting", 170000), metric_pod("b", "vllm:num_requests_waiting", 190000)});
  MetricProposal p = propose(pods_metric("vllm:num_requests_waiting", 80000), o);
  CHECK(p.replicas == 5);
  CHECK(p.description == "pods metric vllm:num_requests_waiting");
  CHECK(p.explanation == "average = 360 / 2 = 180; ratio = 180 / 80 = 2.250; ready pods 2; ceil(2.250 × 2) = 5");
}

TEST_CASE("Pods metric with missing pods: target fill on scale-down, no fill at ratio 1", "[hpa]") {
  // avg 5 / 20 = 0.25; two missing pods at the target 20 → avg 12.5, ceil(0.625 × 4) = 3.
  Observed o = observed(4, {metric_pod("a", "qps", 5000), metric_pod("b", "qps", 5000),
                            metric_pod("c", "qps", std::nullopt), metric_pod("d", "qps", std::nullopt)});
  MetricProposal p = propose(pods_metric("qps", 20000), o);
  CHECK(*p.rebalanced_ratio == 0.625);
  CHECK(p.replicas == 3);
  // TestPlainMetricReplicaCalcMissingMetricsNoChangeEq: ratio exactly 1 → nothing filled → 5.
  Observed eq =
      observed(5, {metric_pod("a", "qps", 20000), metric_pod("b", "qps", 19000), metric_pod("c", "qps", 21000),
                   metric_pod("d", "qps", std::nullopt), metric_pod("e", "qps", std::nullopt)});
  CHECK(propose(pods_metric("qps", 20000), eq).replicas == 5);
}

TEST_CASE("CPU readiness uses start age, transition age and the metric window (TestGroupPods)", "[hpa]") {
  auto ready_count = [](PodSnapshot probe) {
    Observed o = observed(2, {cpu_pod("steady", 1000, 500), probe});
    return propose(cpu_utilization(50), o).ready_pods;
  };
  PodSnapshot fresh = cpu_pod("p", 1000, 500);
  fresh.start_age_s = 60;
  fresh.readiness_transition_age_s = 30;
  fresh.metric_window_s = 30;  // sample covers exactly [transition, now]
  CHECK(ready_count(fresh) == 2);
  PodSnapshot stale = fresh;
  stale.metric_window_s = 60;  // the window starts before the transition
  CHECK(ready_count(stale) == 1);
  PodSnapshot no_condition = cpu_pod("p", 1000, 500);
  no_condition.ready_condition.reset();
  CHECK(ready_count(no_condition) == 1);
  PodSnapshot was_ready = never_ready(cpu_pod("p", 1000, 500));  // Ready=False 9 min after start
  was_ready.start_age_s = 600;
  was_ready.readiness_transition_age_s = 540;
  CHECK(ready_count(was_ready) == 2);
  PodSnapshot never = was_ready;
  never.readiness_transition_age_s = 594;  // became unready 6 s after start: never ready
  CHECK(ready_count(never) == 1);
}

TEST_CASE("ContainerResource uses the container's usage and request", "[hpa]") {
  // "scale up: container metric": container2 at 300/500/700 of 1000m → 50 % / 30 → 5.
  std::vector<PodSnapshot> pods;
  std::int64_t usage[] = {300, 500, 700};
  for (int i = 0; i < 3; ++i) {
    PodSnapshot p = pod("p" + std::to_string(i));
    p.requests_milli = {{"cpu", 2000}, {"container1/cpu", 1000}, {"container2/cpu", 1000}};
    p.metrics_milli = {{"cpu", 1000 + usage[i]}, {"container1/cpu", 1000}, {"container2/cpu", usage[i]}};
    pods.push_back(p);
  }
  MetricSpec m = cpu_utilization(30);
  m.type = MetricSourceType::ContainerResource;
  m.container = "container2";
  MetricProposal p = propose(m, observed(3, pods));
  CHECK(*p.current_utilization == 50);
  CHECK(p.replicas == 5);
  CHECK(p.description == "cpu container resource utilization (percentage of request)");
}

TEST_CASE("External and Object metrics: AverageValue ignores pod counts, Value multiplies ready pods", "[hpa]") {
  // KEDA docs: queue 20, threshold 5, AverageValue → ceil(20/5) = 4 whatever the replica count.
  Observed one = observed(1, {pod("a")});
  one.external_metrics["queue"] = MetricValue{true, 20000, ""};
  MetricProposal avg = propose(external_metric("queue", MetricTargetType::AverageValue, 5000), one);
  CHECK(avg.replicas == 4);
  CHECK(avg.current_milli == 20000);
  // Value → 3 × 20/5 = 12.
  Observed three = observed(3, {pod("a"), pod("b"), pod("c")});
  three.external_metrics["queue"] = MetricValue{true, 20000, ""};
  MetricProposal val = propose(external_metric("queue", MetricTargetType::Value, 5000), three);
  CHECK(val.ready_pods == 3);
  CHECK(val.replicas == 12);
  // TestReplicaCalcScaleUpCMExternalIgnoresUnreadyPods: 8.6/4.4 × 1 ready pod → 2.
  Observed unready = observed(3, {never_ready(pod("a")), pod("b"), never_ready(pod("c"))});
  unready.external_metrics["qps"] = MetricValue{true, 8600, ""};
  CHECK(propose(external_metric("qps", MetricTargetType::Value, 4400), unready).replicas == 2);
  // TestReplicaCalcScaleUpPerPodCMExternal: 8.6 / (2.15 × 3) = 1.333 → ceil(8.6/2.15) = 4; status 2867m.
  Observed per = observed(3, {pod("a"), pod("b"), pod("c")});
  per.external_metrics["qps"] = MetricValue{true, 8600, ""};
  MetricProposal pp = propose(external_metric("qps", MetricTargetType::AverageValue, 2150), per);
  CHECK(pp.replicas == 4);
  CHECK(pp.current_milli == 2867);
  // TestReplicaCalcTolerancePerPodCMExternal: 8.6 / (2.9 × 3) = 0.989 → keep 3.
  CHECK(propose(external_metric("qps", MetricTargetType::AverageValue, 2900), per).replicas == 3);
  // TestReplicaCalcScaleUpCMObjectIgnoresUnreadyPods: 50/10 × 1 ready → 5.
  Observed obj = observed(3, {never_ready(pod("a")), pod("b"), never_ready(pod("c"))});
  obj.object_metrics["qps"] = MetricValue{true, 50000, ""};
  MetricProposal po = propose(object_metric("qps", MetricTargetType::Value, 10000), obj);
  CHECK(po.replicas == 5);
  CHECK(po.description == "Deployment metric qps");
  // TestReplicaCalcScaleUpCMPerPodObject: 20 / (5 × 3) → ceil(20/5) = 4, status 6667m.
  Observed objpp = observed(3, {pod("a"), pod("b"), pod("c")});
  objpp.object_metrics["qps"] = MetricValue{true, 20000, ""};
  MetricProposal opp = propose(object_metric("qps", MetricTargetType::AverageValue, 5000), objpp);
  CHECK(opp.replicas == 4);
  CHECK(opp.current_milli == 6667);
}

TEST_CASE("External Value with 0 replicas uses ceil(value/target) without pods", "[hpa]") {
  auto spec = make_spec(0, 10, {external_metric("queue", MetricTargetType::Value, 5000)});
  Observed o = observed(0, {});
  o.external_metrics["queue"] = MetricValue{true, 18000, ""};
  Memory mem;
  Decision d = reconcile(spec, o, mem, kNow);
  CHECK(d.path == "Metrics");
  CHECK(d.proposals[0].replicas == 4);  // ceil(3.6)
  CHECK(d.desired_replicas == 4);       // legacy limit max(2 × 0, 4) = 4
  // TestScaleDownToZeroCMExternal: value 0 → 0 replicas with minReplicas 0.
  Observed five = observed(5, {pod("a"), pod("b"), pod("c"), pod("d"), pod("e")});
  five.external_metrics["queue"] = MetricValue{true, 0, ""};
  Memory seen = seen_before();
  auto spec0 = make_spec(0, 6, {external_metric("queue", MetricTargetType::Value, 14400)});
  CHECK(reconcile(spec0, five, seen, kNow).desired_replicas == 0);
}

// ---------------------------------------------------------------------------------------------
// Reconcile skeleton, metric failures
// ---------------------------------------------------------------------------------------------

TEST_CASE("spec.replicas 0 with minReplicas 1 disables scaling", "[hpa]") {
  auto spec = make_spec(1, 10, {external_metric("queue", MetricTargetType::AverageValue, 5000)});
  Observed o = observed(0, {});
  o.external_metrics["queue"] = MetricValue{true, 100000, ""};
  Memory mem;
  Decision d = reconcile(spec, o, mem, kNow);
  CHECK(d.path == "ScalingDisabled");
  CHECK(d.desired_replicas == 0);
  CHECK_FALSE(d.rescale);
  REQUIRE(d.conditions.size() == 2);
  CHECK(d.conditions[1].type == "ScalingActive");
  CHECK(d.conditions[1].status == "False");
  CHECK(d.conditions[1].reason == "ScalingDisabled");
  CHECK(d.proposals.empty());
}

TEST_CASE("above maxReplicas or below minReplicas is corrected at once", "[hpa]") {
  auto spec = make_spec(2, 10, {pods_metric("load", 1000)});
  spec.behavior = HorizontalPodAutoscalerBehavior{};
  Memory mem;
  Decision above = reconcile(spec, wants(12, 40), mem, kNow);
  CHECK(above.path == "AboveMaxReplicas");
  CHECK(above.desired_replicas == 10);
  CHECK(above.proposals.empty());
  CHECK(above.rescale_reason == "Current number of replicas above Spec.MaxReplicas");
  CHECK(mem.recommendations.size() == 1);  // only the initial recommendation
  REQUIRE(mem.scale_down_events.size() == 1);
  CHECK(mem.scale_down_events[0].change == 2);
  Memory mem2;
  Decision below = reconcile(spec, wants(1, 1), mem2, kNow);
  CHECK(below.path == "BelowMinReplicas");
  CHECK(below.desired_replicas == 2);
}

TEST_CASE("partial metric failures: scale-up allowed, scale-down blocked, all failed", "[hpa]") {
  // TestScaleUpOneMetricEmpty-like: cpu 40 % / 30 → 4 while the External metric fails → scale to 4.
  std::vector<PodSnapshot> up_pods = {cpu_pod("a", 1000, 300), cpu_pod("b", 1000, 400), cpu_pod("c", 1000, 500)};
  auto spec = make_spec(2, 6, {cpu_utilization(30), external_metric("qps", MetricTargetType::Value, 1000)});
  Observed up = observed(3, up_pods);
  up.external_metrics["qps"] = MetricValue{false, 0, "the external metrics server timed out"};
  Memory mem = seen_before();
  Decision d = reconcile(spec, up, mem, kNow);
  CHECK(d.desired_replicas == 4);
  CHECK(d.rescale);
  CHECK(d.conditions[1].reason == "ValidMetricFound");
  CHECK(d.error.find("invalid metrics (1 invalid out of 2)") == 0);
  CHECK(d.proposals[1].failure_reason == "FailedGetExternalMetric");
  // TestNoScaleDownOneMetricInvalid-like: cpu 28 % / 50 → 3 < 5 with a failed metric → stays 5.
  auto spec2 = make_spec(2, 6, {cpu_utilization(50), external_metric("qps", MetricTargetType::Value, 1000)});
  Observed down = observed(5, {cpu_pod("a", 1000, 100), cpu_pod("b", 1000, 300), cpu_pod("c", 1000, 500),
                               cpu_pod("d", 1000, 250), cpu_pod("e", 1000, 250)});
  Memory mem2 = seen_before();
  std::size_t before = mem2.recommendations.size();
  Decision d2 = reconcile(spec2, down, mem2, kNow);
  CHECK(d2.proposals[0].replicas == 3);
  CHECK(d2.path == "MetricsFailed");
  CHECK(d2.desired_replicas == 5);
  CHECK_FALSE(d2.rescale);
  CHECK(d2.conditions[1].status == "False");
  CHECK(d2.conditions[1].reason == "FailedGetExternalMetric");
  CHECK(mem2.recommendations.size() == before);  // no recommendation is stored when metrics fail
  // Every metric failing: no scaling, the first failure's reason.
  Observed none = observed(3, {cpu_pod("a", 1000, std::nullopt)});
  none.pod_metric_errors["cpu"] = "metrics-server unavailable";
  Memory mem3 = seen_before();
  Decision d3 = reconcile(make_spec(1, 6, {cpu_utilization(50)}), none, mem3, kNow);
  CHECK(d3.path == "MetricsFailed");
  CHECK(d3.conditions[1].reason == "FailedGetResourceMetric");
  CHECK(d3.proposals[0].error ==
        "failed to get cpu utilization: unable to get metrics for resource cpu: metrics-server unavailable");
}

TEST_CASE("missing cpu request is an error of that metric", "[hpa]") {
  Observed o = observed(2, {cpu_pod("a", 1000, 500), metric_pod("b", "cpu", 500)});
  auto spec = make_spec(1, 6, {cpu_utilization(50)});
  Memory mem = seen_before();
  Decision d = reconcile(spec, o, mem, kNow);
  CHECK(d.path == "MetricsFailed");
  CHECK(d.proposals[0].error.find("missing request for cpu in Pod b") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Stabilization
// ---------------------------------------------------------------------------------------------

TEST_CASE("first sight records current replicas and holds scale-down (TestScaleDownStabilizeInitialSize)", "[hpa]") {
  auto spec = make_spec(2, 6, {cpu_utilization(50)});
  Observed o = observed(5, {cpu_pod("a", 1000, 100), cpu_pod("b", 1000, 300), cpu_pod("c", 1000, 500),
                            cpu_pod("d", 1000, 250), cpu_pod("e", 1000, 250)});
  Memory fresh;
  Decision d = reconcile(spec, o, fresh, kNow);
  CHECK(d.metric_desired_replicas == 3);
  CHECK(d.desired_replicas == 5);
  CHECK(d.stabilization_reason == "ScaleDownStabilized");
  REQUIRE(d.conditions.size() == 3);
  CHECK(d.conditions[0].reason == "ScaleDownStabilized");
  CHECK(d.conditions[1].reason == "ValidMetricFound");
  CHECK(d.conditions[2].reason == "DesiredWithinRange");
  CHECK(d.conditions[2].status == "False");
  REQUIRE(fresh.recommendations.size() == 2);
  CHECK(fresh.recommendations[0].replicas == 5);
  CHECK(fresh.recommendations[1].replicas == 3);
  // TestScaleDown: an HPA seen before (no recent recommendation) scales down to 3.
  Memory seen = seen_before();
  Decision d2 = reconcile(spec, o, seen, kNow);
  CHECK(d2.desired_replicas == 3);
  CHECK(d2.conditions[0].reason == "SucceededRescale");
  CHECK(seen.scale_down_events.empty());  // no behavior: no scale events
}

TEST_CASE("do not scale down when prenormalized rec goes up", "[hpa]") {
  // Current 5, a lower recommendation 4 inside the 60 s scale-up window, the metric now wants 7.
  // The direction-only code (1.18–1.20) applied min(7, 4) = 4 and scaled down; the clamp keeps 5.
  auto spec = make_spec(1, 20, {pods_metric("load", 1000)});
  spec.behavior =
      behavior_with(rules(60, {{ScalingPolicyType::Pods, 4, 15}}), rules(300, {{ScalingPolicyType::Percent, 100, 15}}));
  Memory mem;
  mem.recommendations = {{ago(30), 4}};
  Decision d = reconcile(spec, wants(5, 7), mem, kNow);
  CHECK(d.metric_desired_replicas == 7);
  CHECK(d.stabilized_replicas == 5);
  CHECK(d.stabilization_reason == "ScaleUpStabilized");
  CHECK(d.desired_replicas == 5);
  CHECK_FALSE(d.rescale);
}

TEST_CASE("scale-down window takes the max of recent recommendations and reuses old slots", "[hpa]") {
  auto spec = make_spec(1, 20, {pods_metric("load", 1000)});
  spec.behavior = HorizontalPodAutoscalerBehavior{};  // defaults; scaleDown window = flag 300 s
  Memory mem;
  mem.recommendations = {{ago(100), 8}, {ago(200), 6}, {ago(400), 9}};
  Decision d = reconcile(spec, wants(10, 4), mem, kNow);
  CHECK(d.stabilized_replicas == 8);  // max(4, 8, 6); 9 is older than 300 s
  CHECK(d.stabilization_reason == "ScaleDownStabilized");
  CHECK(d.desired_replicas == 8);
  REQUIRE(mem.recommendations.size() == 3);
  CHECK(mem.recommendations[2].replicas == 4);  // the 400 s slot now holds the new recommendation
  CHECK(mem.recommendations[2].time == kNow);
  // Scale-up window: min over the window raises the lower bound only.
  auto spec_up = spec;
  spec_up.behavior->scale_up = rules(60, {{ScalingPolicyType::Pods, 10, 15}});
  Memory mem_up;
  mem_up.recommendations = {{ago(30), 5}};
  Decision u = reconcile(spec_up, wants(3, 8), mem_up, kNow);
  CHECK(u.stabilized_replicas == 5);
  CHECK(u.stabilization_reason == "ScaleUpStabilized");
  CHECK(u.desired_replicas == 5);
}

// ---------------------------------------------------------------------------------------------
// Rate limits
// ---------------------------------------------------------------------------------------------

TEST_CASE("scaleUp with percent policy and previous scale up and down events", "[hpa]") {
  // period start = 6 − 4 added + 2 removed = 4; Percent 300 → ceil(4 × 4) = 16.
  auto spec = make_spec(1, 1000, {pods_metric("load", 1000)});
  spec.behavior = behavior_with(rules(0, {{ScalingPolicyType::Percent, 300, 300}}), std::nullopt);
  Memory mem = seen_before();
  mem.scale_up_events = {{ago(60), 4, false}};
  mem.scale_down_events = {{ago(90), 2, false}};
  Decision d = reconcile(spec, wants(6, 24), mem, kNow);
  CHECK(d.limited_replicas == 16);
  CHECK(d.limit_reason == "ScaleUpLimit");
  CHECK(d.desired_replicas == 16);
  REQUIRE(mem.scale_up_events.size() == 2);
  CHECK(mem.scale_up_events[1].change == 10);
}

TEST_CASE("default scale-up rules allow max(+4, ×2) per 15 s", "[hpa]") {
  auto spec = make_spec(1, 100, {pods_metric("load", 1000)});
  spec.behavior = HorizontalPodAutoscalerBehavior{};
  Memory mem = seen_before();
  Decision d = reconcile(spec, wants(3, 40), mem, kNow);
  CHECK(d.desired_replicas == 7);  // max(3 + 4, ceil(3 × 2))
  CHECK(d.limit_reason == "ScaleUpLimit");
  CHECK(d.conditions[2].status == "True");
  // 10 s later the 4 added pods are still inside the 15 s period: no further scale-up.
  Decision d2 = reconcile(spec, wants(7, 40), mem, kNow + 10 * kMicrosPerSecond);
  CHECK(d2.desired_replicas == 7);
  // 16 s after the first scale-up the period has passed: max(7 + 4, 14) = 14.
  Decision d3 = reconcile(spec, wants(7, 40), mem, kNow + 16 * kMicrosPerSecond);
  CHECK(d3.desired_replicas == 14);
}

TEST_CASE("Percent scale-down truncates the count that stays", "[hpa]") {
  auto spec = make_spec(1, 100, {pods_metric("load", 1000)});
  spec.behavior = behavior_with(std::nullopt, rules(0, {{ScalingPolicyType::Percent, 10, 60}}));
  Memory mem = seen_before();
  Decision d = reconcile(spec, wants(80, 10), mem, kNow);
  CHECK(d.desired_replicas == 72);  // int(80 × 0.9)
  CHECK(d.limit_reason == "ScaleDownLimit");
  // 30 s later the 8 removed pods still count: period start 80 → limit 72 = current.
  Decision d2 = reconcile(spec, wants(72, 10), mem, kNow + 30 * kMicrosPerSecond);
  CHECK(d2.desired_replicas == 72);
  // After the period: int(72 × 0.9) = int(64.8) = 64.
  Decision d3 = reconcile(spec, wants(72, 10), mem, kNow + 61 * kMicrosPerSecond);
  CHECK(d3.desired_replicas == 64);
  // int(15 × 0.9) = int(13.5) = 13.
  Memory mem4 = seen_before();
  CHECK(reconcile(spec, wants(15, 1), mem4, kNow).desired_replicas == 13);
}

TEST_CASE("scale-down periods count both directions of past events", "[hpa]") {
  auto spec = make_spec(1, 100, {pods_metric("load", 1000)});
  spec.behavior = behavior_with(std::nullopt, rules(0, {{ScalingPolicyType::Pods, 2, 60}}));
  Memory mem = seen_before();
  mem.scale_up_events = {{ago(30), 3, false}};
  mem.scale_down_events = {{ago(30), 1, false}, {ago(90), 5, false}};  // the 90 s one is outside the period
  Decision d = reconcile(spec, wants(10, 1), mem, kNow);
  CHECK(d.desired_replicas == 6);  // period start 10 − 3 + 1 = 8; 8 − 2
  REQUIRE(mem.scale_down_events.size() == 2);
  CHECK(mem.scale_down_events[1].change == 4);  // the outdated slot was reused
  CHECK(mem.scale_down_events[1].time == kNow);
}

TEST_CASE("selectPolicy Min, Max and Disabled", "[hpa]") {
  std::vector<HPAScalingPolicy> both = {{ScalingPolicyType::Pods, 4, 15}, {ScalingPolicyType::Percent, 100, 15}};
  auto spec = make_spec(1, 100, {pods_metric("load", 1000)});
  spec.behavior = behavior_with(rules(0, both, SelectPolicy::Min), std::nullopt);
  Memory m1 = seen_before();
  CHECK(reconcile(spec, wants(3, 40), m1, kNow).desired_replicas == 6);  // min(7, 6)
  spec.behavior = behavior_with(rules(0, both, SelectPolicy::Max), std::nullopt);
  Memory m2 = seen_before();
  CHECK(reconcile(spec, wants(3, 40), m2, kNow).desired_replicas == 7);
  spec.behavior = behavior_with(rules(0, both, SelectPolicy::Disabled), std::nullopt);
  Memory m3 = seen_before();
  Decision up = reconcile(spec, wants(3, 40), m3, kNow);
  CHECK(up.desired_replicas == 3);
  CHECK(up.limit_reason == "ScaleUpLimit");
  // scaleDown Min: Pods 1 vs Percent 50 → the smaller change max(4, 2) = 4.
  spec.behavior = behavior_with(
      std::nullopt,
      rules(0, {{ScalingPolicyType::Pods, 1, 60}, {ScalingPolicyType::Percent, 50, 60}}, SelectPolicy::Min));
  Memory m4 = seen_before();
  CHECK(reconcile(spec, wants(5, 1), m4, kNow).desired_replicas == 4);
  spec.behavior->scale_down->select_policy = SelectPolicy::Max;
  Memory m5 = seen_before();
  CHECK(reconcile(spec, wants(5, 1), m5, kNow).desired_replicas == 2);  // min(4, int(2.5))
  spec.behavior->scale_down->select_policy = SelectPolicy::Disabled;
  Memory m6 = seen_before();
  Decision down = reconcile(spec, wants(5, 1), m6, kNow);
  CHECK(down.desired_replicas == 5);
  CHECK(down.limit_reason == "ScaleDownLimit");
}

TEST_CASE("min/max clamps and their reasons", "[hpa]") {
  auto spec = make_spec(2, 5, {pods_metric("load", 1000)});
  spec.behavior = behavior_with(std::nullopt, rules(0, {{ScalingPolicyType::Percent, 100, 15}}));
  Memory m1 = seen_before();
  Decision many = reconcile(spec, wants(3, 8), m1, kNow);
  CHECK(many.desired_replicas == 5);
  CHECK(many.limit_reason == "TooManyReplicas");  // rate limit 7 ≥ maxReplicas 5
  Memory m2 = seen_before();
  Decision few = reconcile(spec, wants(4, 1), m2, kNow);
  CHECK(few.desired_replicas == 2);
  CHECK(few.limit_reason == "TooFewReplicas");
  Memory m3 = seen_before();
  Decision within = reconcile(spec, wants(3, 4), m3, kNow);
  CHECK(within.desired_replicas == 4);
  CHECK(within.limit_reason == "DesiredWithinRange");
  CHECK(within.rescale_reason == "pods metric load above target");
}

TEST_CASE("legacy path (no behavior): max(2×, 4) per sync, no scale events", "[hpa]") {
  auto spec = make_spec(2, 20, {pods_metric("load", 1000)});
  Memory m1 = seen_before();
  Decision d = reconcile(spec, wants(3, 10), m1, kNow);
  CHECK(d.desired_replicas == 6);
  CHECK(d.limit_reason == "ScaleUpLimit");
  CHECK(m1.scale_up_events.empty());
  Memory m2 = seen_before();
  CHECK(reconcile(make_spec(1, 20, {pods_metric("load", 1000)}), wants(1, 10), m2, kNow).desired_replicas == 4);
  Memory m3 = seen_before();
  Decision capped = reconcile(make_spec(1, 5, {pods_metric("load", 1000)}), wants(3, 10), m3, kNow);
  CHECK(capped.desired_replicas == 5);
  CHECK(capped.limit_reason == "TooManyReplicas");
  Memory m4 = seen_before();
  Decision floor = reconcile(spec, wants(3, 1), m4, kNow);
  CHECK(floor.desired_replicas == 2);
  CHECK(floor.limit_reason == "TooFewReplicas");
  // Legacy stabilization: max over the last 300 s including this proposal.
  Memory m5;
  m5.recommendations = {{ago(200), 7}, {ago(400), 9}};
  Decision st = reconcile(spec, wants(8, 3), m5, kNow);
  CHECK(st.stabilized_replicas == 7);
  CHECK(st.desired_replicas == 7);
  CHECK(st.stabilization_reason == "ScaleDownStabilized");
}

TEST_CASE("defaulting fills behavior rules field by field", "[hpa]") {
  HorizontalPodAutoscalerSpec s;
  s.max_replicas = 10;
  s.behavior = HorizontalPodAutoscalerBehavior{};
  HPAScalingRules down;
  down.stabilization_window_seconds = 60;
  s.behavior->scale_down = down;
  HorizontalPodAutoscalerSpec d = apply_defaults(s);
  CHECK(*d.min_replicas == 1);
  REQUIRE(d.metrics.size() == 1);
  CHECK(*d.metrics[0].target.average_utilization == 80);
  CHECK(*d.behavior->scale_up->stabilization_window_seconds == 0);
  CHECK(d.behavior->scale_up->policies->size() == 2);
  CHECK((*d.behavior->scale_up->policies)[0].period_seconds == 15);
  CHECK(*d.behavior->scale_down->stabilization_window_seconds == 60);
  CHECK(*d.behavior->scale_down->select_policy == SelectPolicy::Max);
  CHECK((*d.behavior->scale_down->policies)[0].value == 100);
  HorizontalPodAutoscalerSpec no_behavior;
  no_behavior.max_replicas = 3;
  CHECK_FALSE(apply_defaults(no_behavior).behavior.has_value());
}

// ---------------------------------------------------------------------------------------------
// JSON front end
// ---------------------------------------------------------------------------------------------

namespace {
const char* kKedaDoc = R"({
  "spec": {
    "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "llama"},
    "minReplicas": 1, "maxReplicas": 10,
    "metrics": [{"type": "External", "external": {
      "metric": {"name": "s0-prometheus", "selector": {"matchLabels": {"scaledobject.keda.sh/name": "llama"}}},
      "target": {"type": "AverageValue", "averageValue": "5"}}}],
    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}
  },
  "observed": {"specReplicas": 1, "statusReplicas": 1, "pods": [{"name": "llama-0"}],
               "externalMetrics": {"s0-prometheus": {"value": 20}}},
  "memory": {"recommendations": [{"replicas": 1, "ageSeconds": 900}]}
})";
}

TEST_CASE("gpuscale hpa document: KEDA example end to end", "[hpa]") {
  std::string out = evaluate_hpa_document(kKedaDoc);
  Json j = Json::parse(out);
  CHECK(j["desiredReplicas"] == 4);
  CHECK(j["currentReplicas"] == 1);
  CHECK(j["proposals"][0]["replicas"] == 4);
  CHECK(j["proposals"][0]["target"]["averageValue"] == "5");
  CHECK(j["proposals"][0]["current"]["averageValue"] == "20");
  CHECK(j["limitReason"] == "DesiredWithinRange");
  CHECK(j["conditions"][0]["reason"] == "SucceededRescale");
  CHECK(j["memory"]["scaleUpEvents"][0]["change"] == 3);
  CHECK(j["metricName"] ==
        "external metric s0-prometheus(&LabelSelector{MatchLabels:map[string]string{scaledobject.keda.sh/name: "
        "llama,},MatchExpressions:[]LabelSelectorRequirement{},})");
  CHECK(out == evaluate_hpa_document(kKedaDoc));  // deterministic text
}

TEST_CASE("gpuscale hpa document: errors name the JSON path", "[hpa]") {
  auto doc = [](const std::string& spec, const std::string& observed = R"({"specReplicas": 1})") {
    return R"({"spec": )" + spec + R"(, "observed": )" + observed + "}";
  };
  InputError unknown = json_error(
      doc(R"({"maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "targt": {}}}]})"));
  CHECK(unknown.path() == "/spec/metrics/0/resource/targt");
  CHECK(std::string(unknown.what()).find("unknown field") != std::string::npos);

  InputError type = json_error(doc(R"({"maxReplicas": "ten"})"));
  CHECK(type.path() == "/spec/maxReplicas");
  CHECK(std::string(type.what()).find("found a string") != std::string::npos);

  InputError quantity = json_error(doc(
      R"({"maxReplicas": 3, "metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "5x"}}}]})"));
  CHECK(quantity.path() == "/spec/metrics/0/external/target/averageValue");
  CHECK(std::string(quantity.what()).find("\"5x\" is not a valid quantity") != std::string::npos);

  CHECK(json_error(doc(R"({"minReplicas": 2})")).path() == "/spec/maxReplicas");
  CHECK(json_error(doc(R"({"minReplicas": 4, "maxReplicas": 3})")).path() == "/spec/maxReplicas");
  CHECK(json_error(doc(R"({"minReplicas": 0, "maxReplicas": 3})")).path() == "/spec/minReplicas");

  InputError mismatch =
      json_error(doc(R"({"maxReplicas": 3, "metrics": [{"type": "Pods", "resource": {"name": "cpu"}}]})"));
  CHECK(mismatch.path() == "/spec/metrics/0/resource");

  InputError target = json_error(doc(
      R"({"maxReplicas": 3, "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageValue": "1"}}}]})"));
  CHECK(target.path() == "/spec/metrics/0/resource/target/averageUtilization");

  InputError pods_type = json_error(doc(
      R"({"maxReplicas": 3, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "q"}, "target": {"type": "Value", "value": 1}}}]})"));
  CHECK(pods_type.path() == "/spec/metrics/0/pods/target/type");

  InputError policies = json_error(doc(R"({"maxReplicas": 3, "behavior": {"scaleUp": {"policies": []}}})"));
  CHECK(policies.path() == "/spec/behavior/scaleUp/policies");

  InputError period = json_error(doc(
      R"({"maxReplicas": 3, "behavior": {"scaleDown": {"policies": [{"type": "Percent", "value": 10, "periodSeconds": 3600}]}}})"));
  CHECK(period.path() == "/spec/behavior/scaleDown/policies/0/periodSeconds");

  InputError dup =
      json_error(doc(R"({"maxReplicas": 3})", R"({"specReplicas": 2, "pods": [{"name": "a"}, {"name": "a"}]})"));
  CHECK(dup.path() == "/observed/pods/1/name");

  InputError value = json_error(
      doc(R"({"maxReplicas": 3})", R"({"specReplicas": 1, "externalMetrics": {"q": {"value": 1, "error": "x"}}})"));
  CHECK(value.path() == "/observed/externalMetrics/q");

  InputError top = json_error(R"({"spec": {"maxReplicas": 3}, "observed": {"specReplicas": 1}, "extra": 1})");
  CHECK(top.path() == "/extra");
  CHECK(json_error(R"({"spec": {"maxReplicas": 3}})").path() == "/observed");
  CHECK(json_error("{not json").path() == "");
}

TEST_CASE("gpuscale hpa document: memory ages round-trip and feed the next sync", "[hpa]") {
  const char* doc = R"({
    "spec": {"maxReplicas": 20, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "load"},
             "target": {"type": "AverageValue", "averageValue": 1}}}], "behavior": {}},
    "observed": {"specReplicas": 6, "pods": [
      {"name": "a", "metrics": {"load": 24}}, {"name": "b", "metrics": {"load": 0}}, {"name": "c", "metrics": {"load": 0}},
      {"name": "d", "metrics": {"load": 0}}, {"name": "e", "metrics": {"load": 0}}, {"name": "f", "metrics": {"load": 0}}]},
    "memory": {"recommendations": [{"replicas": 6, "ageSeconds": 500}],
               "scaleUpEvents": [{"change": 4, "ageSeconds": 10}],
               "scaleDownEvents": [{"change": 2, "ageSeconds": 5}]},
    "controller": {"tolerance": 0.1, "downscaleStabilizationSeconds": 300}
  })";
  Json j = Json::parse(evaluate_hpa_document(doc));
  // period start 6 − 4 + 2 = 4: max(4 + 4, ceil(4 × 2)) = 8.
  CHECK(j["desiredReplicas"] == 8);
  CHECK(j["limitReason"] == "ScaleUpLimit");
  CHECK(j["memory"]["scaleUpEvents"].size() == 2);
  CHECK(j["memory"]["scaleUpEvents"][0]["ageSeconds"] == 10.0);
  CHECK(j["memory"]["recommendations"][0]["replicas"] == 24);  // the 500 s slot was reused
  CHECK(j["memory"]["recommendations"][0]["ageSeconds"] == 0.0);
}

TEST_CASE("without explain, reconcile decides exactly the same and only skips the text", "[hpa]") {
  // One sync of each kind: every metric source and target, missing / unready / hot pods, failures,
  // the behavior path with rate limits both ways and the legacy path, clamps and ScalingDisabled.
  struct Case {
    HorizontalPodAutoscalerSpec spec;
    Observed obs;
    Memory mem;
  };
  std::vector<Case> cases;
  auto add = [&](HorizontalPodAutoscalerSpec spec, Observed obs, Memory mem = seen_before()) {
    cases.push_back({std::move(spec), std::move(obs), std::move(mem)});
  };
  add(make_spec(1, 10, {cpu_utilization(50)}),
      observed(4, {cpu_pod("a", 1000, 900), never_ready(cpu_pod("b", 1000, 100)), hot_cpu(cpu_pod("c", 1000, 950)),
                   cpu_pod("d", 1000, std::nullopt)}));
  add(make_spec(1, 10, {cpu_utilization(50)}),
      observed(3, {cpu_pod("a", 1000, 100), cpu_pod("b", 1000, 200), cpu_pod("c", 1000, std::nullopt)}));
  add(make_spec(1, 10, {pods_metric("load", 1000)}),
      observed(3, {metric_pod("a", "load", 4000), metric_pod("b", "load", std::nullopt), metric_pod("c", "load", 500)}));
  add(make_spec(1, 20, {external_metric("q", MetricTargetType::AverageValue, 5000)}), wants(2, 2));
  Case ext = {make_spec(1, 20, {external_metric("q", MetricTargetType::AverageValue, 5000),
                                object_metric("o", MetricTargetType::Value, 2000)}),
              wants(3, 3), seen_before()};
  ext.obs.external_metrics["q"] = MetricValue{true, 47000, ""};
  ext.obs.object_metrics["o"] = MetricValue{true, 9000, ""};
  cases.push_back(ext);
  Case failing = {make_spec(1, 20, {external_metric("q", MetricTargetType::Value, 5000)}), wants(3, 3), seen_before()};
  failing.obs.external_metrics["q"] = MetricValue{false, 0, "timeout"};
  cases.push_back(failing);
  auto up_down = make_spec(1, 30, {pods_metric("load", 1000)});
  up_down.behavior = behavior_with(rules(0, {{ScalingPolicyType::Pods, 2, 60}, {ScalingPolicyType::Percent, 50, 60}}),
                                   rules(120, {{ScalingPolicyType::Percent, 20, 60}}, SelectPolicy::Min));
  Memory busy = seen_before();
  busy.recommendations.push_back({ago(30), 9});
  busy.scale_up_events.push_back({ago(20), 2, false});
  busy.scale_down_events.push_back({ago(200), 1, false});
  add(up_down, wants(4, 12), busy);
  add(up_down, wants(10, 2), busy);
  add(make_spec(1, 30, {pods_metric("load", 1000)}), wants(4, 12));  // legacy
  add(make_spec(2, 5, {pods_metric("load", 1000)}), wants(7, 7));
  add(make_spec(2, 5, {pods_metric("load", 1000)}), wants(1, 1));
  add(make_spec(1, 5, {pods_metric("load", 1000)}), wants(0, 0), Memory{});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i);
    Memory with_mem = cases[i].mem, without_mem = cases[i].mem;
    ControllerFlags quiet;
    quiet.explain = false;
    const Decision with = reconcile(cases[i].spec, cases[i].obs, with_mem, kNow);
    const Decision without = reconcile(cases[i].spec, cases[i].obs, without_mem, kNow, quiet);
    CHECK_FALSE(with.explanation.empty());
    CHECK(without.explanation.empty());
    Json a = decision_to_json(with), b = decision_to_json(without);
    a.erase("explanation");
    b.erase("explanation");
    for (Json* j : {&a, &b}) {
      for (auto& p : (*j)["proposals"]) {
        if (p.value("ok", true)) p.erase("explanation");  // (a failed metric keeps its error text)
      }
    }
    CHECK(a.dump() == b.dump());
    CHECK(memory_to_json(with_mem, kNow).dump() == memory_to_json(without_mem, kNow).dump());
  }
}

// ---------------------------------------------------------------------------------------------
// Samples for pods the pod list does not hold (observed.unlistedPodMetrics)
// ---------------------------------------------------------------------------------------------
// Upstream's replica_calculator_test.go builds the metrics API's answer from `levels` (pods test-pod-0,
// 1, …, or `podNames`) and the pod lister's answer from currentReplicas / podPhase, so a test can
// return samples for pods the lister does not hold. Its pods have two containers, each requesting the
// `requests` value and using the `levels` value: here a pod requests and uses twice as much.
namespace {

// One sync of a cpu Utilization HPA on `pods` (JSON), with `unlisted` as the extra samples.
Json cpu_sync(std::int32_t current, const char* pods, const char* unlisted, std::int32_t target) {
  Json doc = Json::parse(R"({"spec": {"maxReplicas": 100, "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                               "target": {"type": "Utilization"}}}]},
                             "memory": {"recommendations": [{"replicas": 1, "ageSeconds": 10000}]}})");
  doc["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"] = target;
  doc["observed"] = {{"specReplicas", current}, {"pods", Json::parse(pods)}, {"unlistedPodMetrics", Json::parse(unlisted)}};
  return Json::parse(evaluate_hpa_document(doc.dump()));
}

}  // namespace

TEST_CASE("unlisted pods' samples: upstream TestReplicaCalcSuperfluousMetrics and TestReplicaCalcDisjointResourcesMetrics", "[hpa]") {
  // TestReplicaCalcSuperfluousMetrics: 4 pods, samples for 6 (test-pod-4 and -5 are not listed). The
  // utilization skips the two (no request): int(47000m × 100 / 8000m) = 587 %, raw value 2 × 5875m, and
  // ceil(5.87 × 4 ready pods) = 24.
  const Json super = cpu_sync(4, R"([
      {"name": "test-pod-0", "requests": {"cpu": "2"}, "metrics": {"cpu": "8000m"}},
      {"name": "test-pod-1", "requests": {"cpu": "2"}, "metrics": {"cpu": "19000m"}},
      {"name": "test-pod-2", "requests": {"cpu": "2"}, "metrics": {"cpu": "6000m"}},
      {"name": "test-pod-3", "requests": {"cpu": "2"}, "metrics": {"cpu": "14000m"}}])",
                              R"({"test-pod-4": {"cpu": "6400m"}, "test-pod-5": {"cpu": "4000m"}})", 100);
  const Json& p = super.at("proposals").at(0);
  INFO(p.dump());
  CHECK(p.at("replicas") == 24);
  CHECK(p.at("current").at("averageUtilization") == 587);
  CHECK(p.at("current").at("averageValue") == "11750m");
  // TestReplicaCalcDisjointResourcesMetrics: the one sample is for "an-older-pod-name", the one pod
  // has none: "no metrics returned matched known pods".
  const Json disjoint = cpu_sync(1, R"([{"name": "test-pod-0", "requests": {"cpu": "2"}}])", R"({"an-older-pod-name": {"cpu": "200m"}})", 100);
  INFO(disjoint.dump());
  CHECK(disjoint.at("proposals").at(0).at("error").get<std::string>().find("no metrics returned matched known pods") != std::string::npos);
  CHECK(disjoint.at("desiredReplicas") == 1);
}

TEST_CASE("unlisted pods' samples: a Pods metric averages them, as calcPlainMetricReplicas does", "[hpa]") {
  // calcPlainMetricReplicas removes only ignored and unready pods' samples before GetMetricUsageRatio,
  // so a sample of a pod the lister does not hold is in the average and in len(metrics).
  Json doc = Json::parse(R"({"spec": {"maxReplicas": 10, "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"},
                               "target": {"type": "AverageValue", "averageValue": "15"}}}]},
                             "observed": {"specReplicas": 2, "pods": [{"name": "a", "metrics": {"qps": "20"}}, {"name": "b", "metrics": {"qps": "10"}}],
                                          "unlistedPodMetrics": {"old-0": {"qps": "30"}}},
                             "memory": {"recommendations": [{"replicas": 2, "ageSeconds": 10000}]}})");
  const Json with = Json::parse(evaluate_hpa_document(doc.dump()));
  INFO(with.dump());
  CHECK(with.at("proposals").at(0).at("current").at("averageValue") == "20");  // (20 + 10 + 30) / 3
  CHECK(with.at("proposals").at(0).at("replicas") == 3);                         // ceil(1.333 × 2 ready pods)
  doc["observed"].erase("unlistedPodMetrics");
  const Json without = Json::parse(evaluate_hpa_document(doc.dump()));
  CHECK(without.at("proposals").at(0).at("current").at("averageValue") == "15");
  CHECK(without.at("proposals").at(0).at("replicas") == 2);  // 15 / 15: within tolerance
  // A listed pod's samples go in its own "metrics", never here.
  doc["observed"]["unlistedPodMetrics"] = {{"a", {{"qps", "5"}}}};
  const InputError e = json_error(doc.dump());
  CHECK(e.path() == "/observed/unlistedPodMetrics/a");
  CHECK(std::string(e.what()).find("in observed.pods") != std::string::npos);
}
