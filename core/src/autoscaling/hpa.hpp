// The Kubernetes HorizontalPodAutoscaler (autoscaling/v2) as pure functions: one reconcile over a
// snapshot returns the decision and the arithmetic behind it (real-systems.md §1).
//
// Ported from kubernetes/kubernetes pkg/controller/podautoscaler (horizontal.go, replica_calculator.go,
// metrics/utilization.go) and pkg/apis/autoscaling/v2/defaults.go, the code after per-HPA tolerances
// (KEP-4951). Values are int64 milli-units like resource.Quantity.MilliValue(); ratios are double;
// replica counts are int32 and every rounding is the controller's (ceil, or truncation where it truncates).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/pod.hpp"
#include "kernel/time.hpp"

namespace gpuscale::hpa {

// ---------------------------------------------------------------------------------------------
// Spec: autoscaling/v2 HorizontalPodAutoscalerSpec (real field names in the comments)
// ---------------------------------------------------------------------------------------------

enum class MetricSourceType { Resource, ContainerResource, Pods, Object, External };
enum class MetricTargetType { Utilization, Value, AverageValue };
enum class ScalingPolicyType { Pods, Percent };
enum class SelectPolicy { Max, Min, Disabled };

struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // "operator": In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

// Carried for the metric description only; the snapshot already holds the selected values.
struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
};

struct MetricIdentifier {
  std::string name;                       // e.g. "vllm:num_requests_waiting"
  std::optional<LabelSelector> selector;  // nullopt = nil selector
};

struct CrossVersionObjectReference {
  std::string api_version;  // "apiVersion"
  std::string kind;         // e.g. "Deployment"
  std::string name;
};

struct MetricTarget {
  MetricTargetType type = MetricTargetType::Utilization;
  std::optional<std::int64_t> value_milli;          // "value" (milli-units)
  std::optional<std::int64_t> average_value_milli;  // "averageValue" (milli-units)
  std::optional<std::int32_t> average_utilization;  // "averageUtilization" (percent of request)
};

// One entry of spec.metrics. Only the fields of `type` are used.
struct MetricSpec {
  MetricSourceType type = MetricSourceType::Resource;
  std::string resource_name;                     // Resource / ContainerResource: "cpu", "memory", ...
  std::string container;                         // ContainerResource only
  MetricIdentifier metric;                       // Pods / Object / External
  CrossVersionObjectReference described_object;  // Object only ("describedObject")
  MetricTarget target;
};

struct HPAScalingPolicy {
  ScalingPolicyType type = ScalingPolicyType::Pods;
  std::int32_t value = 1;            // pods, or percent of the replicas at the start of the period
  std::int32_t period_seconds = 15;  // seconds (1..1800)
};

// behavior.scaleUp / behavior.scaleDown. nullopt fields are filled by apply_defaults.
struct HPAScalingRules {
  std::optional<std::int32_t> stabilization_window_seconds;  // seconds; scaleDown nil → controller flag
  std::optional<SelectPolicy> select_policy;
  std::optional<std::vector<HPAScalingPolicy>> policies;
  std::optional<double> tolerance;  // fraction (0.1 = 10 %); nil → controller flag
};

struct HorizontalPodAutoscalerBehavior {
  std::optional<HPAScalingRules> scale_up;
  std::optional<HPAScalingRules> scale_down;
};

struct HorizontalPodAutoscalerSpec {
  CrossVersionObjectReference scale_target_ref;  // accepted, not used by the arithmetic
  std::optional<std::int32_t> min_replicas;      // default 1
  std::int32_t max_replicas = 1;
  std::vector<MetricSpec> metrics;                          // empty → cpu Utilization 80 % (API defaulting)
  std::optional<HorizontalPodAutoscalerBehavior> behavior;  // nil → legacy normalization (§1.8)
};

// API-server defaulting (SetDefaults_HorizontalPodAutoscaler): minReplicas 1, the cpu 80 % metric
// when metrics is empty, and, only when behavior is set, the scaleUp/scaleDown rules filled field by
// field from the defaults (scaleUp: window 0, Max, Pods 4/15 s + Percent 100/15 s; scaleDown: window
// left nil for the controller flag, Max, Percent 100/15 s). Idempotent.
HorizontalPodAutoscalerSpec apply_defaults(HorizontalPodAutoscalerSpec spec);
HPAScalingRules default_scale_up_rules();
HPAScalingRules default_scale_down_rules();

// ---------------------------------------------------------------------------------------------
// Observed state: what the controller reads on one sync
// ---------------------------------------------------------------------------------------------

enum class ConditionStatus { True, False, Unknown };

struct PodSnapshot {
  std::string name;  // unique among the pods
  PodPhase phase = PodPhase::Running;
  std::optional<ConditionStatus> ready_condition = ConditionStatus::True;  // nullopt: no Ready condition
  bool deleting = false;                                                   // metadata.deletionTimestamp set
  std::optional<double> start_age_s = 3600.0;        // seconds since status.startTime; nullopt: unset
  std::optional<double> readiness_transition_age_s;  // seconds since Ready's lastTransitionTime; nullopt: = start age
  // Requests by resource ("cpu") or, for ContainerResource, "<container>/<resource>" (milli-units).
  std::map<std::string, std::int64_t> requests_milli;
  // Samples by resource ("cpu", "<container>/<resource>") or Pods metric name; absent = missing.
  std::map<std::string, std::int64_t> metrics_milli;
  double metric_sample_age_s = 0.0;  // seconds since the sample's timestamp (resource metrics)
  double metric_window_s = 15.0;     // seconds the sample covers (metrics-server window)
};

// One Object or External metric as the metrics API returned it (External: the sum of the series).
struct MetricValue {
  bool ok = true;
  std::int64_t value_milli = 0;
  std::string error;  // when !ok: why the fetch failed
};

struct Observed {
  std::int32_t spec_replicas = 0;    // scale.spec.replicas: the controller's currentReplicas
  std::int32_t status_replicas = 0;  // scale.status.replicas (Object/External AverageValue divide by it)
  std::vector<PodSnapshot> pods;     // the pods the scale selector matches
  // Samples the metrics API returned for pods the pod lister does not hold (deleted since, or of another
  // ReplicaSet the selector matches): pod name → resource or metric name → milli-units. The calculator
  // works on the metrics map as returned, so they count where upstream's does: in a Pods metric's
  // average and in len(metrics); a Resource utilization skips them (no request).
  std::map<std::string, std::map<std::string, std::int64_t>> unlisted_pod_metrics;
  // Fetch failures of Resource / ContainerResource / Pods metrics, by resource or metric name.
  std::map<std::string, std::string> pod_metric_errors;
  std::map<std::string, MetricValue> object_metrics;    // by metric.name; absent = fetch error
  std::map<std::string, MetricValue> external_metrics;  // by metric.name; absent = fetch error
};

// ---------------------------------------------------------------------------------------------
// Controller memory and flags
// ---------------------------------------------------------------------------------------------

struct Recommendation {
  Micros time = 0;
  std::int32_t replicas = 0;  // unstabilized recommendation
};

struct ScaleEvent {
  Micros time = 0;
  std::int32_t change = 0;  // replicas added (up) or removed (down), non-negative
  bool outdated = false;    // slot may be reused (markScaleEventsOutdated)
};

// The controller's in-memory history for one HPA. Empty recommendations = the HPA was never seen:
// the next reconcile records the current replicas first (recordInitialRecommendation).
struct Memory {
  std::vector<Recommendation> recommendations;
  std::vector<ScaleEvent> scale_up_events;    // recorded only when spec.behavior != nil
  std::vector<ScaleEvent> scale_down_events;  // recorded only when spec.behavior != nil
};

// kube-controller-manager flags (--horizontal-pod-autoscaler-*).
struct ControllerFlags {
  double tolerance = 0.1;                      // fraction
  double downscale_stabilization_s = 300.0;    // seconds
  double cpu_initialization_period_s = 300.0;  // seconds
  double initial_readiness_delay_s = 30.0;     // seconds
  bool configurable_tolerance = true;          // feature gate HPAConfigurableTolerance (beta, on)
  // Not a controller flag: whether reconcile writes its arithmetic as text (Decision::explanation
  // and the proposals' explanations). Everything else in the Decision is the same either way; a run
  // that logs only some syncs turns it off and re-runs the syncs it logs (simulation.cpp).
  bool explain = true;
};

// ---------------------------------------------------------------------------------------------
// Decision
// ---------------------------------------------------------------------------------------------

// What one metric proposed and how.
struct MetricProposal {
  int index = 0;  // position in spec.metrics
  MetricSourceType source_type = MetricSourceType::Resource;
  MetricTargetType target_type = MetricTargetType::Utilization;
  std::string metric_name;  // resource name or metric.name
  std::string description;  // the controller's name for it, e.g. "pods metric qps"
  bool ok = false;
  std::string error;                                // when !ok
  std::string failure_reason;                       // condition reason when !ok, e.g. "FailedGetExternalMetric"
  std::optional<std::int32_t> target_utilization;   // percent (Utilization targets)
  std::int64_t target_milli = 0;                    // value / averageValue target (milli-units)
  std::optional<std::int32_t> current_utilization;  // percent, truncated (Utilization targets)
  std::int64_t current_milli = 0;                   // status value: average (Resource, Pods, per-pod) or value (Value)
  double ratio = 0.0;                               // usage ratio of the first pass
  std::optional<double> rebalanced_ratio;           // ratio after filling missing / unready pods
  std::int32_t ready_pods = 0, unready_pods = 0, missing_pods = 0, ignored_pods = 0;
  std::int32_t replicas = 0;  // the proposal
  std::string explanation;    // the arithmetic with the actual numbers
};

struct Condition {
  std::string type;    // AbleToScale | ScalingActive | ScalingLimited
  std::string status;  // "True" | "False"
  std::string reason;
  std::string message;
};

struct Decision {
  std::int32_t current_replicas = 0;  // scale.spec.replicas
  std::int32_t desired_replicas = 0;  // what the scale is set to (== current when not rescaling)
  std::int32_t min_replicas = 1;
  std::int32_t max_replicas = 1;
  bool rescale = false;        // the controller writes a new scale this sync
  bool able_to_scale = false;  // metrics produced a recommendation (false: disabled or all failed)
  // Which branch of reconcileAutoscaler ran: ScalingDisabled | AboveMaxReplicas | BelowMinReplicas |
  // Metrics | MetricsFailed.
  std::string path;
  std::vector<MetricProposal> proposals;
  std::int32_t metric_desired_replicas = -1;  // max over valid metrics; -1 when not computed / failed
  std::string metric_name;                    // the metric that won
  std::int32_t stabilized_replicas = -1;      // after stabilization; -1 when not run
  std::string stabilization_reason;           // ScaleUpStabilized | ScaleDownStabilized | ReadyForNewScale
  std::int32_t limited_replicas = -1;         // after rate limits and clamps; -1 when not run
  std::string limit_reason;    // ScaleUpLimit | ScaleDownLimit | TooManyReplicas | TooFewReplicas | DesiredWithinRange
  std::string rescale_reason;  // the event text, e.g. "pods metric qps above target"
  std::string error;           // the error reconcile returns (partial metric failures included)
  std::vector<Condition> conditions;  // the conditions this sync set, in status order
  std::string explanation;            // multi-line, human readable
};

// Tolerance band used for every metric of this HPA: (1 - down) <= ratio <= (1 + up).
struct Tolerances {
  double scale_down = 0.1;
  double scale_up = 0.1;
  bool is_within(double ratio) const { return (1.0 - scale_down) <= ratio && ratio <= (1.0 + scale_up); }
};
Tolerances tolerances_for(const HorizontalPodAutoscalerSpec& spec, const ControllerFlags& flags);

// One sync of one HPA (horizontal.go reconcileAutoscaler, from the scale read on): computes every
// metric's proposal, takes the max, normalizes (behavior or legacy), and updates `memory` exactly as
// the controller does (initial recommendation, recommendation history, scale events).
Decision reconcile(const HorizontalPodAutoscalerSpec& spec, const Observed& observed, Memory& memory, Micros now,
                   const ControllerFlags& flags = {});

// Names as the API spells them.
const char* to_string(MetricSourceType t);
const char* to_string(MetricTargetType t);
const char* to_string(ScalingPolicyType t);
const char* to_string(SelectPolicy p);
const char* to_string(ConditionStatus s);

}  // namespace gpuscale::hpa
