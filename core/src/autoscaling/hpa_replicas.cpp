// The HPA's replica calculator: one proposal per metric of the spec (kubernetes/kubernetes
// pkg/controller/podautoscaler replica_calculator.go, horizontal.go computeReplicasForMetric).
#include <map>
#include <set>

#include "autoscaling/hpa_detail.hpp"

namespace gpuscale::hpa::detail {

namespace {
// ---------------------------------------------------------------------------------------------
// Pod grouping (replica_calculator.go groupPods)
// ---------------------------------------------------------------------------------------------

struct PodMetric {
  std::int64_t value = 0;
  double sample_age_s = 0.0;
  double window_s = 0.0;
};
using PodMetrics = std::map<std::string, PodMetric>;  // by pod name (ordered: deterministic)

struct Grouping {
  std::int32_t ready = 0;
  std::set<std::string> unready, missing, ignored;
};

// Readiness matters only for the cpu resource. Ages replace timestamps:
//   StartTime + cpuInitializationPeriod After now        ⇔ start_age < period
//   metric.Timestamp Before transition + metric.Window   ⇔ transition_age < sample_age + window
//   StartTime + delayOfInitialReadiness After transition ⇔ transition_age + delay > start_age
Grouping group_pods(const std::vector<PodSnapshot>& pods, const PodMetrics& metrics, bool cpu,
                    const ControllerFlags& flags) {
  Grouping g;
  for (const auto& pod : pods) {
    if (pod.deleting || pod.phase == PodPhase::Failed) {
      g.ignored.insert(pod.name);
      continue;
    }
    if (pod.phase == PodPhase::Pending) {
      g.unready.insert(pod.name);
      continue;
    }
    auto it = metrics.find(pod.name);
    if (it == metrics.end()) {
      g.missing.insert(pod.name);
      continue;
    }
    if (cpu) {
      bool unready;
      if (!pod.ready_condition || !pod.start_age_s) {
        unready = true;
      } else {
        double start_age = *pod.start_age_s;
        double transition_age = pod.readiness_transition_age_s.value_or(start_age);
        bool is_false = *pod.ready_condition == ConditionStatus::False;
        if (start_age < flags.cpu_initialization_period_s) {
          unready = is_false || transition_age < it->second.sample_age_s + it->second.window_s;
        } else {
          unready = is_false && transition_age + flags.initial_readiness_delay_s > start_age;
        }
      }
      if (unready) {
        g.unready.insert(pod.name);
        continue;
      }
    }
    ++g.ready;
  }
  return g;
}

// metrics/utilization.go GetResourceUtilizationRatio.
struct UtilizationRatio {
  bool ok = false;
  double ratio = 0.0;
  std::int32_t utilization = 0;
  std::int64_t raw_average = 0;
  std::int64_t metrics_total = 0;
  std::int64_t requests_total = 0;
};

UtilizationRatio resource_utilization_ratio(const std::map<std::string, std::int64_t>& metrics,
                                            const std::map<std::string, std::int64_t>& requests, std::int32_t target) {
  Wide metrics_total = 0, requests_total = 0;
  std::int64_t entries = 0;
  for (const auto& [pod, value] : metrics) {
    auto r = requests.find(pod);
    if (r == requests.end()) continue;  // extraneous metric
    metrics_total += value;
    requests_total += r->second;
    ++entries;
  }
  UtilizationRatio u;
  if (requests_total == 0) return u;
  Wide util = (metrics_total * 100) / requests_total;
  u.utilization = util > Wide(kInt32Max) ? kInt32Max : util < Wide(kInt32Min) ? kInt32Min : std::int32_t(util);
  u.ratio = double(u.utilization) / double(target);
  u.raw_average = saturate64(metrics_total / entries);
  u.metrics_total = saturate64(metrics_total);
  u.requests_total = saturate64(requests_total);
  u.ok = true;
  return u;
}

// metrics/utilization.go GetMetricUsageRatio.
struct UsageRatio {
  double ratio = 0.0;
  std::int64_t usage = 0;
  std::int64_t total = 0;
};

UsageRatio metric_usage_ratio(const std::map<std::string, std::int64_t>& metrics, std::int64_t target) {
  Wide total = 0;
  for (const auto& [pod, value] : metrics) total += value;
  UsageRatio u;
  u.usage = saturate64(total / Wide(metrics.size()));
  u.total = saturate64(total);
  u.ratio = double(u.usage) / double(target);
  return u;
}

// The samples of `key` the metrics API returns: the listed pods' and those of pods the lister does not
// hold. Upstream's calculator never drops the latter (removeMetricsForPods removes only ignored and
// unready pods), so they stay in the map it averages and counts.
PodMetrics collect_pod_metrics(const Observed& obs, const std::string& key) {
  PodMetrics out;
  for (const auto& pod : obs.pods) {
    auto it = pod.metrics_milli.find(key);
    if (it == pod.metrics_milli.end()) continue;
    out[pod.name] = PodMetric{it->second, pod.metric_sample_age_s, pod.metric_window_s};
  }
  for (const auto& [name, samples] : obs.unlisted_pod_metrics) {
    auto it = samples.find(key);
    if (it != samples.end()) out[name] = PodMetric{it->second, 0.0, 0.0};
  }
  return out;
}

std::map<std::string, std::int64_t> values_without(const PodMetrics& metrics, const Grouping& g) {
  std::map<std::string, std::int64_t> out;
  for (const auto& [pod, m] : metrics) {
    if (g.ignored.count(pod) || g.unready.count(pod)) continue;
    out[pod] = m.value;
  }
  return out;
}

void fill_counts(MetricProposal& p, const Grouping& g) {
  p.ready_pods = g.ready;
  p.unready_pods = std::int32_t(g.unready.size());
  p.missing_pods = std::int32_t(g.missing.size());
  p.ignored_pods = std::int32_t(g.ignored.size());
}

std::string counts_text(const Grouping& g) {
  std::string s = "ready pods " + std::to_string(g.ready);
  if (!g.unready.empty()) s += ", unready " + std::to_string(g.unready.size());
  if (!g.missing.empty()) s += ", missing " + std::to_string(g.missing.size());
  if (!g.ignored.empty()) s += ", ignored (deleted/failed) " + std::to_string(g.ignored.size());
  return s;
}

void fail(MetricProposal& p, const std::string& reason, const std::string& error) {
  p.ok = false;
  p.failure_reason = reason;
  p.error = error;
  p.explanation = "failed (" + reason + "): " + error;
}

// The shared second pass of GetResourceReplicas / calcPlainMetricReplicas: given the first-pass ratio,
// either answer from the ready pods or fill missing and unready pods and recompute.
// `recompute` returns the new ratio over the filled map and a text for it.
template <typename FillMissing, typename Recompute>
void finish_pod_based(MetricProposal& p, std::int32_t current, const Tolerances& tol, const Grouping& g,
                      std::map<std::string, std::int64_t> values, double ratio, FillMissing fill_missing_down,
                      Recompute recompute, std::string& text, bool explain) {
  bool scale_up_with_unready = !g.unready.empty() && ratio > 1.0;
  if (!scale_up_with_unready && g.missing.empty()) {
    if (tol.is_within(ratio)) {
      p.replicas = current;
      if (explain) text += "; within tolerance " + band(tol) + " → keep " + std::to_string(current);
      return;
    }
    p.replicas = ceil_to_int32(ratio * double(g.ready));
    if (explain) {
      text += "; " + counts_text(g) + "; ceil(" + fmt3(ratio) + " × " + std::to_string(g.ready) +
              ") = " + std::to_string(p.replicas);
    }
    return;
  }
  if (explain) text += "; " + counts_text(g);
  if (!g.missing.empty()) {
    if (ratio < 1.0) {
      for (const auto& pod : g.missing) values[pod] = fill_missing_down(pod);
      if (explain) {
        text += "; scale-down: " + plural(std::int64_t(g.missing.size()), "missing pod", "missing pods") +
                " counted at " + fill_missing_down.describe();
      }
    } else if (ratio > 1.0) {
      for (const auto& pod : g.missing) values[pod] = 0;
      if (explain) {
        text +=
            "; scale-up: " + plural(std::int64_t(g.missing.size()), "missing pod", "missing pods") + " counted at 0";
      }
    }
  }
  if (scale_up_with_unready) {
    for (const auto& pod : g.unready) values[pod] = 0;
    if (explain) {
      text += "; scale-up: " + plural(std::int64_t(g.unready.size()), "unready pod", "unready pods") + " counted at 0";
    }
  }
  std::string recompute_text;
  double new_ratio = recompute(values, recompute_text);
  p.rebalanced_ratio = new_ratio;
  if (explain) text += "; " + recompute_text;
  if (tol.is_within(new_ratio)) {
    p.replicas = current;
    if (explain) text += " within tolerance " + band(tol) + " → keep " + std::to_string(current);
    return;
  }
  if ((ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0)) {
    p.replicas = current;
    if (explain) {
      text += " flips the direction (" + fmt3(ratio) + " → " + fmt3(new_ratio) + ") → keep " + std::to_string(current);
    }
    return;
  }
  std::int32_t n = std::int32_t(values.size());
  std::int32_t new_replicas = ceil_to_int32(new_ratio * double(n));
  std::string calc;
  if (explain) calc = "ceil(" + fmt3(new_ratio) + " × " + std::to_string(n) + ") = " + std::to_string(new_replicas);
  if ((new_ratio < 1.0 && new_replicas > current) || (new_ratio > 1.0 && new_replicas < current)) {
    p.replicas = current;
    if (explain) text += "; " + calc + " would move against the ratio → keep " + std::to_string(current);
    return;
  }
  p.replicas = new_replicas;
  if (explain) text += "; " + calc;
}

// The first steps both pod-based calculations share: the metrics fetched (or the fetch error), the pods
// grouped (groupPods) and the values of the ready pods with metrics. False (with `p` failed) if any is missing.
bool fetch_and_group(MetricProposal& p, const Observed& obs, const std::string& key, const std::string& resource,
                     const ControllerFlags& flags, const std::string& reason, const std::string& wrap,
                     const std::string& fetch_prefix, const std::string& api, PodMetrics& metrics, Grouping& g,
                     std::map<std::string, std::int64_t>& values) {
  auto err = obs.pod_metric_errors.find(key);
  if (err != obs.pod_metric_errors.end()) {
    fail(p, reason, wrap + fetch_prefix + err->second);
    return false;
  }
  metrics = collect_pod_metrics(obs, key);
  if (metrics.empty()) {
    fail(p, reason, wrap + fetch_prefix + "no metrics returned from " + api);
    return false;
  }
  if (obs.pods.empty()) {
    fail(p, reason, wrap + "no pods returned by selector while calculating replica count");
    return false;
  }
  g = group_pods(obs.pods, metrics, resource == "cpu", flags);
  fill_counts(p, g);
  values = values_without(metrics, g);
  if (values.empty()) {
    fail(p, reason, wrap + "did not receive metrics for targeted pods (pods might be unready)");
    return false;
  }
  return true;
}

// ReplicaCalculator.GetResourceReplicas (Utilization target of Resource / ContainerResource).
void resource_utilization_replicas(MetricProposal& p, const Observed& obs, const std::string& key,
                                   const std::string& resource, std::int32_t target, std::int32_t current,
                                   const Tolerances& tol, const ControllerFlags& flags, const std::string& reason) {
  const std::string wrap = "failed to get " + resource + " utilization: ";
  PodMetrics metrics;
  Grouping g;
  std::map<std::string, std::int64_t> values;
  if (!fetch_and_group(p, obs, key, resource, flags, reason, wrap, "unable to get metrics for resource " + resource + ": ",
                       "resource metrics API", metrics, g, values)) {
    return;
  }
  std::map<std::string, std::int64_t> requests;
  for (const auto& pod : obs.pods) {
    auto r = pod.requests_milli.find(key);
    if (r == pod.requests_milli.end()) {
      fail(p, reason, wrap + "missing request for " + key + " in Pod " + pod.name);
      return;
    }
    requests[pod.name] = r->second;
  }
  UtilizationRatio u = resource_utilization_ratio(values, requests, target);
  if (!u.ok) {
    fail(p, reason, wrap + "no metrics returned matched known pods");
    return;
  }
  p.current_utilization = u.utilization;
  p.current_milli = u.raw_average;
  p.ratio = u.ratio;
  std::string text;
  if (flags.explain) {
    text = "utilization = int(" + fmt_milli(u.metrics_total) + " × 100 / " + fmt_milli(u.requests_total) +
           ") = " + std::to_string(u.utilization) + "%; ratio = " + std::to_string(u.utilization) + " / " +
           std::to_string(target) + " = " + fmt3(u.ratio);
  }
  struct FillDown {
    const std::map<std::string, std::int64_t>* requests;
    std::int64_t fallback;
    std::int64_t operator()(const std::string& pod) const { return requests->at(pod) * fallback / 100; }
    std::string describe() const { return "request × " + std::to_string(fallback) + "/100"; }
  } fill{&requests, std::int64_t(std::max<std::int32_t>(100, target))};
  auto recompute = [&](const std::map<std::string, std::int64_t>& filled, std::string& t) {
    UtilizationRatio nu = resource_utilization_ratio(filled, requests, target);
    if (flags.explain) {
      t = "new utilization = int(" + fmt_milli(nu.metrics_total) + " × 100 / " + fmt_milli(nu.requests_total) +
          ") = " + std::to_string(nu.utilization) + "%, new ratio = " + fmt3(nu.ratio);
    }
    return nu.ratio;
  };
  finish_pod_based(p, current, tol, g, values, u.ratio, fill, recompute, text, flags.explain);
  p.ok = true;
  p.explanation = text;
}

// ReplicaCalculator.calcPlainMetricReplicas (Pods metrics; Resource / ContainerResource AverageValue).
void plain_metric_replicas(MetricProposal& p, const Observed& obs, const std::string& key, const std::string& resource,
                           std::int64_t target, std::int32_t current, const Tolerances& tol,
                           const ControllerFlags& flags, const std::string& reason, const std::string& wrap,
                           const std::string& fetch_prefix, const char* api) {
  PodMetrics metrics;
  Grouping g;
  std::map<std::string, std::int64_t> values;
  if (!fetch_and_group(p, obs, key, resource, flags, reason, wrap, fetch_prefix, api, metrics, g, values)) return;
  UsageRatio u = metric_usage_ratio(values, target);
  p.current_milli = u.usage;
  p.ratio = u.ratio;
  std::string text;
  if (flags.explain) {
    text = "average = " + fmt_milli(u.total) + " / " + std::to_string(values.size()) + " = " + fmt_milli(u.usage) +
           "; ratio = " + fmt_milli(u.usage) + " / " + fmt_milli(target) + " = " + fmt3(u.ratio);
  }
  struct FillDown {
    std::int64_t target;
    std::int64_t operator()(const std::string&) const { return target; }
    std::string describe() const { return "the target " + fmt_milli(target); }
  } fill{target};
  auto recompute = [&](const std::map<std::string, std::int64_t>& filled, std::string& t) {
    UsageRatio nu = metric_usage_ratio(filled, target);
    if (flags.explain) {
      t = "new average = " + fmt_milli(nu.total) + " / " + std::to_string(filled.size()) + " = " + fmt_milli(nu.usage) +
          ", new ratio = " + fmt3(nu.ratio);
    }
    return nu.ratio;
  };
  finish_pod_based(p, current, tol, g, values, u.ratio, fill, recompute, text, flags.explain);
  p.ok = true;
  p.explanation = text;
}

// getReadyPodsCount: Running and Ready=True (deletion is not checked here).
std::int64_t ready_pods_count(const std::vector<PodSnapshot>& pods) {
  std::int64_t n = 0;
  for (const auto& pod : pods) {
    if (pod.phase == PodPhase::Running && pod.ready_condition && *pod.ready_condition == ConditionStatus::True) ++n;
  }
  return n;
}

// GetObjectMetricReplicas / GetExternalMetricReplicas → getUsageRatioReplicaCount.
void value_replicas(MetricProposal& p, const Observed& obs, std::int64_t usage, std::int64_t target,
                    std::int32_t current, const Tolerances& tol, const std::string& reason, bool explain) {
  double ratio = double(usage) / double(target);
  p.ratio = ratio;
  p.current_milli = usage;
  std::string text;
  if (explain) text = "ratio = " + fmt_milli(usage) + " / " + fmt_milli(target) + " = " + fmt3(ratio);
  if (current != 0) {
    if (tol.is_within(ratio)) {
      p.replicas = current;
      p.ok = true;
      if (explain) p.explanation = text + "; within tolerance " + band(tol) + " → keep " + std::to_string(current);
      return;
    }
    if (obs.pods.empty()) {
      fail(p, reason, "unable to calculate ready pods: no pods returned by selector while calculating replica count");
      return;
    }
    std::int64_t ready = ready_pods_count(obs.pods);
    p.ready_pods = std::int32_t(ready);
    double x = ratio * double(ready);
    p.replicas = x > double(kInt32Max) ? kInt32Max : ceil_to_int32(x);
    if (explain) {
      text += "; ready pods (Running and Ready) " + std::to_string(ready) + "; ceil(" + fmt3(ratio) + " × " +
              std::to_string(ready) + ") = " + std::to_string(p.replicas);
    }
  } else {
    p.replicas = ceil_to_int32(ratio);
    if (explain) {
      text += "; current replicas 0 (no tolerance, no pod count): ceil(" + fmt3(ratio) +
              ") = " + std::to_string(p.replicas);
    }
  }
  p.ok = true;
  p.explanation = text;
}

// GetObjectPerPodMetricReplicas / GetExternalPerPodMetricReplicas.
void per_pod_replicas(MetricProposal& p, std::int64_t usage, std::int64_t target_per_pod, std::int32_t status_replicas,
                      const Tolerances& tol, bool explain) {
  std::int32_t replicas = status_replicas;
  double ratio = double(usage) / (double(target_per_pod) * double(replicas));
  p.ratio = ratio;
  std::string text;
  if (explain) {
    text = "ratio = " + fmt_milli(usage) + " / (" + fmt_milli(target_per_pod) + " × " +
           std::to_string(status_replicas) + " status replicas) = " + fmt3(ratio);
  }
  if (!tol.is_within(ratio)) {
    double x = std::ceil(double(usage) / double(target_per_pod));
    replicas = x > double(kInt32Max) ? kInt32Max : ceil_to_int32(x);
    if (explain) {
      text += " outside " + band(tol) + "; ceil(" + fmt_milli(usage) + " / " + fmt_milli(target_per_pod) +
              ") = " + std::to_string(replicas) + " (pod counts do not enter)";
    }
  } else if (explain) {
    text += " within tolerance " + band(tol) + " → keep status replicas " + std::to_string(status_replicas);
  }
  // The status reports ceil(total / statusReplicas).
  if (status_replicas > 0) {
    double avg = std::ceil(double(usage) / double(status_replicas));
    p.current_milli = avg >= 9.2233720368547758e18 ? kInt64Max : static_cast<std::int64_t>(avg);
  } else {
    p.current_milli = usage;
  }
  p.replicas = replicas;
  p.ok = true;
  p.explanation = text;
}

const MetricValue* find_value(const std::map<std::string, MetricValue>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}

}  // namespace


// HorizontalController.computeReplicasForMetric.
MetricProposal compute_metric(const MetricSpec& spec, int index, const Observed& obs, const Tolerances& tol,
                              const ControllerFlags& flags) {
  MetricProposal p;
  p.index = index;
  p.source_type = spec.type;
  p.target_type = spec.target.type;
  const std::int32_t spec_replicas = obs.spec_replicas;
  const std::int32_t status_replicas = obs.status_replicas;
  switch (spec.type) {
    case MetricSourceType::Resource:
    case MetricSourceType::ContainerResource: {
      bool container = spec.type == MetricSourceType::ContainerResource;
      const std::string& res = spec.resource_name;
      std::string key = container ? spec.container + "/" + res : res;
      std::string reason = container ? "FailedGetContainerResourceMetric" : "FailedGetResourceMetric";
      p.metric_name = res;
      if (spec.target.average_value_milli) {
        p.target_type = MetricTargetType::AverageValue;
        p.target_milli = *spec.target.average_value_milli;
        p.description = res + " resource";
        plain_metric_replicas(p, obs, key, res, *spec.target.average_value_milli, spec_replicas, tol, flags, reason,
                              "failed to get " + res + " usage: ", "unable to get metrics for resource " + res + ": ",
                              "resource metrics API");
      } else if (spec.target.average_utilization) {
        p.target_type = MetricTargetType::Utilization;
        p.target_utilization = *spec.target.average_utilization;
        p.description = res + (container ? " container" : "") + " resource utilization (percentage of request)";
        resource_utilization_replicas(p, obs, key, res, *spec.target.average_utilization, spec_replicas, tol, flags,
                                      reason);
      } else {
        fail(p, reason,
             "invalid resource metric source: neither an average utilization target nor an average value (usage) "
             "target was set");
      }
      return p;
    }
    case MetricSourceType::Pods: {
      p.metric_name = spec.metric.name;
      p.description = "pods metric " + spec.metric.name;
      if (!spec.target.average_value_milli) {
        fail(p, "FailedGetPodsMetric", "invalid pods metric source: no average value target was set");
        return p;
      }
      p.target_milli = *spec.target.average_value_milli;
      plain_metric_replicas(p, obs, spec.metric.name, "", p.target_milli, spec_replicas, tol, flags,
                            "FailedGetPodsMetric", "", "unable to get metric " + spec.metric.name + ": ",
                            "custom metrics API");
      return p;
    }
    case MetricSourceType::Object: {
      p.metric_name = spec.metric.name;
      const std::string where = " on " + spec.described_object.kind + " " + spec.described_object.name + ": ";
      const MetricValue* v = find_value(obs.object_metrics, spec.metric.name);
      std::string fetch_error = !v ? "no metrics returned from custom metrics API" : (!v->ok ? v->error : "");
      if (spec.target.type == MetricTargetType::Value && spec.target.value_milli) {
        p.target_milli = *spec.target.value_milli;
        p.description = spec.described_object.kind + " metric " + spec.metric.name;
        if (!fetch_error.empty()) {
          fail(p, "FailedGetObjectMetric", "unable to get metric " + spec.metric.name + where + fetch_error);
          return p;
        }
        value_replicas(p, obs, v->value_milli, p.target_milli, spec_replicas, tol, "FailedGetObjectMetric",
                       flags.explain);
      } else if (spec.target.type == MetricTargetType::AverageValue && spec.target.average_value_milli) {
        p.target_milli = *spec.target.average_value_milli;
        // The controller really names this one "external metric" (horizontal.go computeStatusForObjectMetric).
        p.description = "external metric " + spec.metric.name + "(" + selector_string(spec.metric.selector) + ")";
        if (!fetch_error.empty()) {
          fail(p, "FailedGetObjectMetric",
               "failed to get " + spec.metric.name + " object metric: unable to get metric " + spec.metric.name +
                   where + fetch_error);
          return p;
        }
        per_pod_replicas(p, v->value_milli, p.target_milli, status_replicas, tol, flags.explain);
      } else {
        fail(p, "FailedGetObjectMetric",
             "invalid object metric source: neither a value target nor an average value target was set");
      }
      return p;
    }
    case MetricSourceType::External: {
      p.metric_name = spec.metric.name;
      p.description = "external metric " + spec.metric.name + "(" + selector_string(spec.metric.selector) + ")";
      const MetricValue* v = find_value(obs.external_metrics, spec.metric.name);
      std::string fetch_error = !v ? "no metrics returned from external metrics API" : (!v->ok ? v->error : "");
      // The controller checks averageValue first, whatever target.type says.
      if (spec.target.average_value_milli) {
        p.target_type = MetricTargetType::AverageValue;
        p.target_milli = *spec.target.average_value_milli;
        if (!fetch_error.empty()) {
          fail(p, "FailedGetExternalMetric",
               "failed to get " + spec.metric.name + " external metric: unable to get external metric " +
                   spec.metric.name + ": " + fetch_error);
          return p;
        }
        per_pod_replicas(p, v->value_milli, p.target_milli, status_replicas, tol, flags.explain);
      } else if (spec.target.value_milli) {
        p.target_type = MetricTargetType::Value;
        p.target_milli = *spec.target.value_milli;
        if (!fetch_error.empty()) {
          fail(p, "FailedGetExternalMetric",
               "failed to get external metric " + spec.metric.name + ": unable to get external metric " +
                   spec.metric.name + ": " + fetch_error);
          return p;
        }
        value_replicas(p, obs, v->value_milli, p.target_milli, spec_replicas, tol, "FailedGetExternalMetric",
                       flags.explain);
      } else {
        fail(p, "FailedGetExternalMetric",
             "invalid external metric source: neither a value target nor an average value target was set");
      }
      return p;
    }
  }
  // Unreachable for a valid enum; the API server filters unknown types.
  fail(p, "InvalidMetricSourceType", "unknown metric source type");
  return p;
}


}  // namespace gpuscale::hpa::detail
