// The HPA's normalization of a recommendation: stabilization windows and scaling policies with
// spec.behavior, the legacy path without it, and the scale-event history (horizontal.go
// normalizeDesiredReplicasWithBehaviors, normalizeDesiredReplicas, storeScaleEvent).
#include "autoscaling/hpa_detail.hpp"

namespace gpuscale::hpa::detail {

namespace {
// ---------------------------------------------------------------------------------------------
// Normalization
// ---------------------------------------------------------------------------------------------

Micros seconds_us(std::int64_t s) { return s * kMicrosPerSecond; }

std::int32_t longest_policy_period(const HPAScalingRules& rules) {
  std::int32_t longest = 0;
  if (rules.policies) {
    for (const auto& p : *rules.policies) longest = std::max(longest, p.period_seconds);
  }
  return longest;
}

// getReplicasChangePerPeriod: events strictly after now - period.
std::int32_t replicas_change_in_period(std::int32_t period_seconds, const std::vector<ScaleEvent>& events, Micros now) {
  Micros cutoff = now - seconds_us(period_seconds);
  std::int32_t replicas = 0;
  for (const auto& e : events) {
    if (e.time > cutoff) replicas += e.change;
  }
  return replicas;
}

std::string policy_text(const HPAScalingPolicy& p) {
  return std::string(to_string(p.type)) + " " + std::to_string(p.value) + "/" + std::to_string(p.period_seconds) + "s";
}

// calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors: each policy's limit from
// the replicas at the start of its period (now − added + deleted); selectPolicy Max takes the largest
// change (the highest limit up, the lowest down), Min the smallest.
std::int32_t scaling_limit(bool up, std::int32_t current, const Memory& mem, const HPAScalingRules& rules, Micros now,
                           std::string& text, bool explain) {
  const char* direction = up ? "scaleUp" : "scaleDown";
  SelectPolicy select = rules.select_policy.value_or(SelectPolicy::Max);
  if (select == SelectPolicy::Disabled) {
    if (explain) text = std::string(direction) + " selectPolicy Disabled → limit " + std::to_string(current);
    return current;
  }
  // The more permissive limit is the larger one up and the smaller one down.
  const bool keep_larger = (select == SelectPolicy::Max) == up;
  std::int32_t result = keep_larger ? kInt32Min : kInt32Max;
  std::string parts;
  if (rules.policies) {
    for (const auto& policy : *rules.policies) {
      std::int32_t added = replicas_change_in_period(policy.period_seconds, mem.scale_up_events, now);
      std::int32_t deleted = replicas_change_in_period(policy.period_seconds, mem.scale_down_events, now);
      std::int32_t start = current - added + deleted;
      std::int32_t proposed = 0;
      std::string calc;
      if (policy.type == ScalingPolicyType::Pods) {
        proposed = up ? start + policy.value : start - policy.value;
        if (explain) calc = std::to_string(start) + (up ? " + " : " − ") + std::to_string(policy.value);
      } else if (up) {
        // Rounded up so a small percentage still adds a pod.
        proposed = ceil_to_int32(double(start) * (1.0 + double(policy.value) / 100.0));
        if (explain) calc = "ceil(" + std::to_string(start) + " × " + fmt3(1.0 + double(policy.value) / 100.0) + ")";
      } else {
        // int32() truncates: the count that stays is rounded down.
        proposed = trunc_to_int32(double(start) * (1.0 - double(policy.value) / 100.0));
        if (explain) calc = "int(" + std::to_string(start) + " × " + fmt3(1.0 - double(policy.value) / 100.0) + ")";
      }
      result = keep_larger ? std::max(result, proposed) : std::min(result, proposed);
      if (!explain) continue;
      if (!parts.empty()) parts += ", ";
      parts += policy_text(policy) + ": period start " + std::to_string(current) + " − " + std::to_string(added) +
               " + " + std::to_string(deleted) + " = " + std::to_string(start) + ", " + calc + " = " +
               std::to_string(proposed);
    }
  }
  if (explain) text = std::string(direction) + " " + to_string(select) + " of [" + parts + "] = " + std::to_string(result);
  return result;
}




}  // namespace

// normalizeDesiredReplicasWithBehaviors: stabilizeRecommendationWithBehaviors, then
// convertDesiredReplicasWithBehaviorRate.
Normalized normalize_with_behaviors(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t current,
                                    std::int32_t desired, std::int32_t min_replicas, Micros now,
                                    const ControllerFlags& flags) {
  Normalized n;
  const HPAScalingRules& up = *spec.behavior->scale_up;
  const HPAScalingRules& down = *spec.behavior->scale_down;
  // maybeInitScaleDownStabilizationWindow: int32(window.Seconds()).
  std::int32_t up_window = up.stabilization_window_seconds.value_or(0);
  std::int32_t down_window =
      down.stabilization_window_seconds.value_or(trunc_to_int32(flags.downscale_stabilization_s));
  Micros up_cutoff = now - seconds_us(up_window);
  Micros down_cutoff = now - seconds_us(down_window);
  std::int32_t up_rec = desired, down_rec = desired;
  int up_count = 0, down_count = 0;
  bool found_old = false;
  std::size_t old_index = 0;
  for (std::size_t i = 0; i < mem.recommendations.size(); ++i) {
    const auto& rec = mem.recommendations[i];
    if (rec.time > up_cutoff) {
      up_rec = std::min(rec.replicas, up_rec);
      ++up_count;
    }
    if (rec.time > down_cutoff) {
      down_rec = std::max(rec.replicas, down_rec);
      ++down_count;
    }
    if (rec.time < up_cutoff && rec.time < down_cutoff) {
      found_old = true;
      old_index = i;
    }
  }
  std::int32_t rec = current;
  if (rec < up_rec) rec = up_rec;
  if (rec > down_rec) rec = down_rec;
  if (found_old) {
    mem.recommendations[old_index] = Recommendation{now, desired};
  } else {
    mem.recommendations.push_back(Recommendation{now, desired});
  }
  n.stabilized = rec;
  if (rec != desired) {
    if (desired >= current) {
      n.stabilization_reason = "ScaleUpStabilized";
      n.stabilization_message =
          "recent recommendations were lower than current one, applying the lowest recent recommendation";
    } else {
      n.stabilization_reason = "ScaleDownStabilized";
      n.stabilization_message =
          "recent recommendations were higher than current one, applying the highest recent recommendation";
    }
  } else {
    n.stabilization_reason = "ReadyForNewScale";
    n.stabilization_message = "recommended size matches current size";
  }
  if (flags.explain)
    n.lines.push_back(
        "stabilization: scaleUp window " + std::to_string(up_window) + " s → lower bound min(" +
        std::to_string(desired) + ", " + plural(up_count, "recent recommendation", "recent recommendations") +
        ") = " + std::to_string(up_rec) + "; scaleDown window " + std::to_string(down_window) +
        " s → upper bound max(" + std::to_string(desired) + ", " +
        plural(down_count, "recent recommendation", "recent recommendations") + ") = " + std::to_string(down_rec) +
        "; current " + std::to_string(current) + " brought into [" + std::to_string(up_rec) + ", " +
        std::to_string(down_rec) + "] = " + std::to_string(rec) + " (" + n.stabilization_reason + ")");

  // convertDesiredReplicasWithBehaviorRate
  std::int32_t result = rec;
  n.limit_reason = "DesiredWithinRange";
  n.limit_message = "the desired count is within the acceptable range";
  std::string text;
  if (rec > current) {
    std::int32_t limit = scaling_limit(true, current, mem, up, now, text, flags.explain);
    if (limit < current) limit = current;  // no further scale-up until the events age out
    std::int32_t maximum = spec.max_replicas;
    std::string reason, message;
    if (maximum > limit) {
      maximum = limit;
      reason = "ScaleUpLimit";
      message = "the desired replica count is increasing faster than the maximum scale rate";
    } else {
      reason = "TooManyReplicas";
      message = "the desired replica count is more than the maximum replica count";
    }
    if (rec > maximum) {
      result = maximum;
      n.limit_reason = reason;
      n.limit_message = message;
    }
    if (flags.explain)
      n.lines.push_back("rate limit: " + text + "; allowed up to min(limit, maxReplicas " +
                        std::to_string(spec.max_replicas) + ") = " + std::to_string(maximum) + " → " +
                        std::to_string(result) + " (" + n.limit_reason + ")");
  } else if (rec < current) {
    std::int32_t limit = scaling_limit(false, current, mem, down, now, text, flags.explain);
    if (limit > current) limit = current;  // no further scale-down until the events age out
    std::int32_t minimum = min_replicas;
    std::string reason, message;
    if (minimum < limit) {
      minimum = limit;
      reason = "ScaleDownLimit";
      message = "the desired replica count is decreasing faster than the maximum scale rate";
    } else {
      reason = "TooFewReplicas";
      message = "the desired replica count is less than the minimum replica count";
    }
    if (rec < minimum) {
      result = minimum;
      n.limit_reason = reason;
      n.limit_message = message;
    }
    if (flags.explain)
      n.lines.push_back("rate limit: " + text + "; allowed down to max(limit, minReplicas " +
                        std::to_string(min_replicas) + ") = " + std::to_string(minimum) + " → " +
                        std::to_string(result) + " (" + n.limit_reason + ")");
  } else {
    if (flags.explain)
      n.lines.push_back("rate limit: no change from current " + std::to_string(current) + " (DesiredWithinRange)");
  }
  n.limited = result;
  return n;
}

// normalizeDesiredReplicas (spec.behavior == nil): stabilizeRecommendation then
// convertDesiredReplicasWithRules.
Normalized normalize_legacy(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t current,
                            std::int32_t desired, std::int32_t min_replicas, Micros now, const ControllerFlags& flags) {
  Normalized n;
  std::int32_t max_rec = desired;
  bool found_old = false;
  std::size_t old_index = 0;
  int counted = 0;
  Micros cutoff = now - seconds_to_micros(flags.downscale_stabilization_s);
  for (std::size_t i = 0; i < mem.recommendations.size(); ++i) {
    const auto& rec = mem.recommendations[i];
    if (rec.time < cutoff) {
      found_old = true;
      old_index = i;
    } else {
      ++counted;
      if (rec.replicas > max_rec) max_rec = rec.replicas;
    }
  }
  if (found_old) {
    mem.recommendations[old_index] = Recommendation{now, desired};
  } else {
    mem.recommendations.push_back(Recommendation{now, desired});
  }
  n.stabilized = max_rec;
  if (max_rec != desired) {
    n.stabilization_reason = "ScaleDownStabilized";
    n.stabilization_message =
        "recent recommendations were higher than current one, applying the highest recent recommendation";
  } else {
    n.stabilization_reason = "ReadyForNewScale";
    n.stabilization_message = "recommended size matches current size";
  }
  if (flags.explain)
    n.lines.push_back("stabilization (no behavior): max(" + std::to_string(desired) + ", " +
                      plural(counted, "recommendation", "recommendations") + " in the last " +
                      fmt_seconds(flags.downscale_stabilization_s) + " s) = " + std::to_string(max_rec) + " (" +
                      n.stabilization_reason + ")");

  // calculateScaleUpLimit: int32(max(2 × current, 4)).
  std::int32_t up_limit = trunc_to_int32(std::max(2.0 * double(current), 4.0));
  std::int32_t maximum;
  std::string reason, message;
  if (spec.max_replicas > up_limit) {
    maximum = up_limit;
    reason = "ScaleUpLimit";
    message = "the desired replica count is increasing faster than the maximum scale rate";
  } else {
    maximum = spec.max_replicas;
    reason = "TooManyReplicas";
    message = "the desired replica count is more than the maximum replica count";
  }
  std::int32_t result = max_rec;
  if (max_rec < min_replicas) {
    result = min_replicas;
    n.limit_reason = "TooFewReplicas";
    n.limit_message = "the desired replica count is less than the minimum replica count";
  } else if (max_rec > maximum) {
    result = maximum;
    n.limit_reason = reason;
    n.limit_message = message;
  } else {
    n.limit_reason = "DesiredWithinRange";
    n.limit_message = "the desired count is within the acceptable range";
  }
  n.limited = result;
  if (flags.explain)
    n.lines.push_back("limits (no behavior): [minReplicas " + std::to_string(min_replicas) + ", min(maxReplicas " +
                      std::to_string(spec.max_replicas) + ", max(2 × " + std::to_string(current) + ", 4) = " +
                      std::to_string(up_limit) + ")] → " + std::to_string(result) + " (" + n.limit_reason + ")");
  return n;
}

// storeScaleEvent: only with behavior; reuses the last slot older than the longest policy period.
void store_scale_event(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t prev, std::int32_t next,
                       Micros now) {
  if (!spec.behavior) return;
  bool up = next > prev;
  const HPAScalingRules& rules = up ? *spec.behavior->scale_up : *spec.behavior->scale_down;
  std::vector<ScaleEvent>& events = up ? mem.scale_up_events : mem.scale_down_events;
  Micros cutoff = now - seconds_us(longest_policy_period(rules));
  bool found_old = false;
  std::size_t old_index = 0;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].time < cutoff) events[i].outdated = true;  // markScaleEventsOutdated
    if (events[i].outdated) {
      found_old = true;
      old_index = i;
    }
  }
  ScaleEvent e{now, up ? next - prev : prev - next, false};
  if (found_old) {
    events[old_index] = e;
  } else {
    events.push_back(e);
  }
}

HPAScalingRules fill_rules(const std::optional<HPAScalingRules>& from, HPAScalingRules to) {
  if (!from) return to;
  if (from->select_policy) to.select_policy = from->select_policy;
  if (from->stabilization_window_seconds) to.stabilization_window_seconds = from->stabilization_window_seconds;
  if (from->policies) to.policies = from->policies;
  if (from->tolerance) to.tolerance = from->tolerance;
  return to;
}


}  // namespace gpuscale::hpa::detail
