// The Kubernetes HPA algorithm (autoscaling/v2) as pure functions over a snapshot (see hpa.hpp).
//
// Each function names the Go function it ports. Where the Go code relies on wall-clock time, the
// comparisons are rewritten on ages relative to `now` with the same strictness (After/Before are
// strict). Sums that could overflow int64 are done in 128 bits and saturated; Go would wrap, which
// no realistic input reaches.
#include "autoscaling/hpa.hpp"

#include "autoscaling/hpa_detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace gpuscale::hpa {

using namespace detail;

// ---------------------------------------------------------------------------------------------
// Public functions
// ---------------------------------------------------------------------------------------------

const char* to_string(MetricSourceType t) {
  switch (t) {
    case MetricSourceType::Resource:
      return "Resource";
    case MetricSourceType::ContainerResource:
      return "ContainerResource";
    case MetricSourceType::Pods:
      return "Pods";
    case MetricSourceType::Object:
      return "Object";
    case MetricSourceType::External:
      return "External";
  }
  return "?";
}

const char* to_string(MetricTargetType t) {
  switch (t) {
    case MetricTargetType::Utilization:
      return "Utilization";
    case MetricTargetType::Value:
      return "Value";
    case MetricTargetType::AverageValue:
      return "AverageValue";
  }
  return "?";
}

const char* to_string(ScalingPolicyType t) { return t == ScalingPolicyType::Pods ? "Pods" : "Percent"; }

const char* to_string(SelectPolicy p) {
  switch (p) {
    case SelectPolicy::Max:
      return "Max";
    case SelectPolicy::Min:
      return "Min";
    case SelectPolicy::Disabled:
      return "Disabled";
  }
  return "?";
}

const char* to_string(ConditionStatus s) {
  switch (s) {
    case ConditionStatus::True:
      return "True";
    case ConditionStatus::False:
      return "False";
    case ConditionStatus::Unknown:
      return "Unknown";
  }
  return "?";
}

HPAScalingRules default_scale_up_rules() {
  HPAScalingRules r;
  r.stabilization_window_seconds = 0;
  r.select_policy = SelectPolicy::Max;
  r.policies = std::vector<HPAScalingPolicy>{{ScalingPolicyType::Pods, 4, 15}, {ScalingPolicyType::Percent, 100, 15}};
  return r;
}

HPAScalingRules default_scale_down_rules() {
  HPAScalingRules r;  // stabilization window stays nil: the controller flag applies
  r.select_policy = SelectPolicy::Max;
  r.policies = std::vector<HPAScalingPolicy>{{ScalingPolicyType::Percent, 100, 15}};
  return r;
}

HorizontalPodAutoscalerSpec apply_defaults(HorizontalPodAutoscalerSpec spec) {
  if (!spec.min_replicas) spec.min_replicas = 1;
  if (spec.metrics.empty()) {
    MetricSpec cpu;
    cpu.type = MetricSourceType::Resource;
    cpu.resource_name = "cpu";
    cpu.target.type = MetricTargetType::Utilization;
    cpu.target.average_utilization = kDefaultCPUUtilization;
    spec.metrics.push_back(cpu);
  }
  if (spec.behavior) {
    spec.behavior->scale_up = fill_rules(spec.behavior->scale_up, default_scale_up_rules());
    spec.behavior->scale_down = fill_rules(spec.behavior->scale_down, default_scale_down_rules());
  }
  return spec;
}

// tolerancesForHpa: the flag in both directions unless the HPA sets its own (feature gate on).
Tolerances tolerances_for(const HorizontalPodAutoscalerSpec& spec, const ControllerFlags& flags) {
  Tolerances t{flags.tolerance, flags.tolerance};
  if (!spec.behavior || !flags.configurable_tolerance) return t;
  if (spec.behavior->scale_down && spec.behavior->scale_down->tolerance)
    t.scale_down = *spec.behavior->scale_down->tolerance;
  if (spec.behavior->scale_up && spec.behavior->scale_up->tolerance) t.scale_up = *spec.behavior->scale_up->tolerance;
  return t;
}

Decision reconcile(const HorizontalPodAutoscalerSpec& raw_spec, const Observed& obs, Memory& mem, Micros now,
                   const ControllerFlags& flags) {
  const HorizontalPodAutoscalerSpec spec = apply_defaults(raw_spec);
  Decision d;
  std::vector<std::string> lines;  // the explanation, one line per step (only if flags.explain)
  const bool explain = flags.explain;
  const std::int32_t current = obs.spec_replicas;
  const std::int32_t min_replicas = *spec.min_replicas;
  d.current_replicas = current;
  d.min_replicas = min_replicas;
  d.max_replicas = spec.max_replicas;
  set_condition(d.conditions, "AbleToScale", true, "SucceededGetScale",
                "the HPA controller was able to get the target's current scale");
  if (explain)
    lines.push_back("currentReplicas = scale.spec.replicas = " + std::to_string(current) + " (status.replicas " +
                    std::to_string(obs.status_replicas) + "); minReplicas " + std::to_string(min_replicas) +
                    ", maxReplicas " + std::to_string(spec.max_replicas) + "; behavior " +
                    (spec.behavior ? "set" : "nil (legacy normalization)"));

  // recordInitialRecommendation: first sight of this HPA.
  if (mem.recommendations.empty()) {
    mem.recommendations.push_back(Recommendation{now, current});
    if (explain)
      lines.push_back("first sight of this HPA: recorded " + std::to_string(current) +
                      " as a recommendation (it holds off scale-down for the stabilization window)");
  }

  bool rescale = true;
  std::int32_t desired = 0;
  if (current == 0 && min_replicas != 0) {
    d.path = "ScalingDisabled";
    rescale = false;
    set_condition(d.conditions, "ScalingActive", false, "ScalingDisabled",
                  "scaling is disabled since the replica count of the target is zero");
    if (explain)
      lines.push_back("scale.spec.replicas is 0 and minReplicas is " + std::to_string(min_replicas) +
                      ": autoscaling is disabled (ScalingDisabled)");
  } else if (current > spec.max_replicas) {
    d.path = "AboveMaxReplicas";
    d.rescale_reason = "Current number of replicas above Spec.MaxReplicas";
    desired = spec.max_replicas;
    if (explain)
      lines.push_back("current " + std::to_string(current) + " > maxReplicas " + std::to_string(spec.max_replicas) +
                      ": set to maxReplicas at once (no metrics, stabilization or rate limit)");
  } else if (current < min_replicas) {
    d.path = "BelowMinReplicas";
    d.rescale_reason = "Current number of replicas below Spec.MinReplicas";
    desired = min_replicas;
    if (explain)
      lines.push_back("current " + std::to_string(current) + " < minReplicas " + std::to_string(min_replicas) +
                      ": set to minReplicas at once (no metrics, stabilization or rate limit)");
  } else {
    // computeReplicasForMetrics
    Tolerances tol = tolerances_for(spec, flags);
    std::int32_t replicas = 0;
    std::string metric;
    int invalid = 0;
    const MetricProposal* first_invalid = nullptr;
    for (std::size_t i = 0; i < spec.metrics.size(); ++i) {
      d.proposals.push_back(compute_metric(spec.metrics[i], int(i), obs, tol, flags));
    }
    for (const auto& p : d.proposals) {
      std::string head;
      if (explain) {
        head = "metric " + std::to_string(p.index + 1) + " (" + to_string(p.source_type) + " " + p.metric_name + ", " +
               to_string(p.target_type) + " " +
               (p.target_utilization ? std::to_string(*p.target_utilization) + "%" : fmt_milli(p.target_milli)) + "): ";
      }
      if (!p.ok) {
        if (invalid == 0) first_invalid = &p;
        ++invalid;
        if (explain) lines.push_back(head + p.explanation);
        continue;
      }
      if (explain) lines.push_back(head + p.explanation + " → proposes " + std::to_string(p.replicas));
      if (replicas == 0 || p.replicas > replicas) {
        replicas = p.replicas;
        metric = p.description;
      }
    }
    int total = int(spec.metrics.size());
    if (invalid > 0) {
      d.error = "invalid metrics (" + std::to_string(invalid) + " invalid out of " + std::to_string(total) +
                "), first error is: " + first_invalid->error;
    }
    if (invalid >= total || (invalid > 0 && replicas < current)) {
      // All metrics failed, or some failed and the valid ones would scale down: no scaling.
      d.path = "MetricsFailed";
      set_condition(d.conditions, "ScalingActive", false, first_invalid->failure_reason,
                    "the HPA was unable to compute the replica count: " + first_invalid->error);
      d.desired_replicas = current;
      d.rescale = false;
      d.able_to_scale = false;
      if (explain)
        lines.push_back(invalid >= total ? "every metric failed: no scaling (" + first_invalid->failure_reason + ")"
                                         : "a metric failed and the valid ones propose " + std::to_string(replicas) +
                                               " < current " + std::to_string(current) + ": scale-down blocked (" +
                                               first_invalid->failure_reason + ")");
      if (explain) lines.push_back("desiredReplicas = " + std::to_string(current) + " (unchanged)");
      d.explanation = join_lines(lines);
      return d;
    }
    d.path = "Metrics";
    d.able_to_scale = true;
    d.metric_desired_replicas = replicas;
    d.metric_name = metric;
    set_condition(d.conditions, "ScalingActive", true, "ValidMetricFound",
                  "the HPA was able to successfully calculate a replica count from " + metric);
    if (explain)
      lines.push_back(
          "max over " + std::string(invalid > 0 ? "the valid " : "") + "metrics = " + std::to_string(replicas) + " (" +
          metric + ")" +
          (invalid > 0 ? "; scale-up allowed despite " + plural(invalid, "failed metric", "failed metrics") : ""));

    std::string rescale_metric;
    if (replicas > desired) {
      desired = replicas;
      rescale_metric = metric;
    }
    if (desired > current) d.rescale_reason = rescale_metric + " above target";
    if (desired < current) d.rescale_reason = "All metrics below target";

    Normalized n = spec.behavior ? normalize_with_behaviors(spec, mem, current, desired, min_replicas, now, flags)
                                 : normalize_legacy(spec, mem, current, desired, min_replicas, now, flags);
    for (auto& l : n.lines) lines.push_back(l);
    d.stabilized_replicas = n.stabilized;
    d.stabilization_reason = n.stabilization_reason;
    d.limited_replicas = n.limited;
    d.limit_reason = n.limit_reason;
    set_condition(d.conditions, "AbleToScale", true, n.stabilization_reason, n.stabilization_message);
    set_condition(d.conditions, "ScalingLimited", n.limited != n.stabilized, n.limit_reason, n.limit_message);
    desired = n.limited;
    rescale = desired != current;
  }

  if (rescale) {
    set_condition(d.conditions, "AbleToScale", true, "SucceededRescale",
                  "the HPA controller was able to update the target scale to " + std::to_string(desired));
    store_scale_event(spec, mem, current, desired, now);
    if (explain)
      lines.push_back("desiredReplicas = " + std::to_string(desired) + ": scale " + std::to_string(current) + " → " +
                      std::to_string(desired) + " (" + d.rescale_reason + ")" +
                      (spec.behavior ? "; scale event recorded" : ""));
  } else {
    desired = current;
    if (explain) lines.push_back("desiredReplicas = " + std::to_string(desired) + " (no change)");
  }
  d.rescale = rescale;
  d.desired_replicas = desired;
  d.explanation = join_lines(lines);
  return d;
}

}  // namespace gpuscale::hpa
