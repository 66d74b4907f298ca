// The Kubernetes HPA algorithm (autoscaling/v2) as pure functions over a snapshot (see hpa.hpp).
//
// Each function names the Go function it ports. Where the Go code relies on wall-clock time, the
// comparisons are rewritten on ages relative to `now` with the same strictness (After/Before are
// strict). Sums that could overflow int64 are done in 128 bits and saturated; Go would wrap, which
// no realistic input reaches.
#include "autoscaling/hpa.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

namespace gpuscale::hpa {

namespace {

constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int32_t kDefaultCPUUtilization = 80;  // pkg/apis/autoscaling DefaultCPUUtilization

using Wide = __int128;

std::int64_t saturate64(Wide v) {
  if (v > Wide(kInt64Max)) return kInt64Max;
  if (v < Wide(kInt64Min)) return kInt64Min;
  return static_cast<std::int64_t>(v);
}

// int32(math.Ceil(x)), saturated instead of Go's platform-defined overflow.
std::int32_t ceil_to_int32(double x) {
  if (x != x) return 0;
  double c = std::ceil(x);
  if (c >= double(kInt32Max)) return kInt32Max;
  if (c <= double(kInt32Min)) return kInt32Min;
  return static_cast<std::int32_t>(c);
}

// int32(x) for a float64: truncation toward zero.
std::int32_t trunc_to_int32(double x) {
  if (x != x) return 0;
  double t = std::trunc(x);
  if (t >= double(kInt32Max)) return kInt32Max;
  if (t <= double(kInt32Min)) return kInt32Min;
  return static_cast<std::int32_t>(t);
}

std::string fmt3(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// Seconds for messages: whole numbers without decimals.
std::string fmt_seconds(double s) {
  char buf[64];
  if (std::floor(s) == s && std::fabs(s) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", s);
  }
  return buf;
}

// A milli-value as a plain decimal: 1500 → "1.5", 250 → "0.25", 2000 → "2".
std::string fmt_milli(std::int64_t m) {
  bool neg = m < 0;
  unsigned long long mag = neg ? 0ull - static_cast<unsigned long long>(m) : static_cast<unsigned long long>(m);
  std::string out = std::to_string(mag / 1000);
  unsigned long long frac = mag % 1000;
  if (frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%03llu", frac);
    std::string f = buf;
    while (!f.empty() && f.back() == '0') f.pop_back();
    out += "." + f;
  }
  return neg ? "-" + out : out;
}

// The lines of an explanation, one string, allocated once.
std::string join_lines(const std::vector<std::string>& lines) {
  std::size_t size = 0;
  for (const auto& l : lines) size += l.size() + 1;
  std::string out;
  out.reserve(size);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += '\n';
    out += lines[i];
  }
  return out;
}

std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string band(const Tolerances& t) { return "[" + fmt3(1.0 - t.scale_down) + ", " + fmt3(1.0 + t.scale_up) + "]"; }

// Go's generated (*LabelSelector).String(), used in the controller's External metric names.
std::string selector_string(const std::optional<LabelSelector>& sel) {
  if (!sel) return "nil";
  std::string s = "&LabelSelector{MatchLabels:map[string]string{";
  for (const auto& [k, v] : sel->match_labels) s += k + ": " + v + ",";
  s += "},MatchExpressions:[]LabelSelectorRequirement{";
  for (const auto& r : sel->match_expressions) {
    s += "LabelSelectorRequirement{Key:" + r.key + ",Operator:" + r.op + ",Values:[";
    for (std::size_t i = 0; i < r.values.size(); ++i) s += (i ? " " : "") + r.values[i];
    s += "],},";
  }
  s += "},}";
  return s;
}

// setConditionInList: replace the condition of that type, or append it.
void set_condition(std::vector<Condition>& list, const std::string& type, bool status, const std::string& reason,
                   const std::string& message) {
  for (auto& c : list) {
    if (c.type == type) {
      c = Condition{type, status ? "True" : "False", reason, message};
      return;
    }
  }
  list.push_back(Condition{type, status ? "True" : "False", reason, message});
}

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

// The samples of `key` the metrics API would return for these pods.
PodMetrics collect_pod_metrics(const std::vector<PodSnapshot>& pods, const std::string& key) {
  PodMetrics out;
  for (const auto& pod : pods) {
    auto it = pod.metrics_milli.find(key);
    if (it == pod.metrics_milli.end()) continue;
    out[pod.name] = PodMetric{it->second, pod.metric_sample_age_s, pod.metric_window_s};
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

// ReplicaCalculator.GetResourceReplicas (Utilization target of Resource / ContainerResource).
void resource_utilization_replicas(MetricProposal& p, const Observed& obs, const std::string& key,
                                   const std::string& resource, std::int32_t target, std::int32_t current,
                                   const Tolerances& tol, const ControllerFlags& flags, const std::string& reason) {
  const std::string wrap = "failed to get " + resource + " utilization: ";
  auto err = obs.pod_metric_errors.find(key);
  if (err != obs.pod_metric_errors.end()) {
    fail(p, reason, wrap + "unable to get metrics for resource " + resource + ": " + err->second);
    return;
  }
  PodMetrics metrics = collect_pod_metrics(obs.pods, key);
  if (metrics.empty()) {
    fail(p, reason,
         wrap + "unable to get metrics for resource " + resource + ": no metrics returned from resource metrics API");
    return;
  }
  if (obs.pods.empty()) {
    fail(p, reason, wrap + "no pods returned by selector while calculating replica count");
    return;
  }
  Grouping g = group_pods(obs.pods, metrics, resource == "cpu", flags);
  fill_counts(p, g);
  auto values = values_without(metrics, g);
  if (values.empty()) {
    fail(p, reason, wrap + "did not receive metrics for targeted pods (pods might be unready)");
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
  auto err = obs.pod_metric_errors.find(key);
  if (err != obs.pod_metric_errors.end()) {
    fail(p, reason, wrap + fetch_prefix + err->second);
    return;
  }
  PodMetrics metrics = collect_pod_metrics(obs.pods, key);
  if (metrics.empty()) {
    fail(p, reason, wrap + fetch_prefix + "no metrics returned from " + api);
    return;
  }
  if (obs.pods.empty()) {
    fail(p, reason, wrap + "no pods returned by selector while calculating replica count");
    return;
  }
  Grouping g = group_pods(obs.pods, metrics, resource == "cpu", flags);
  fill_counts(p, g);
  auto values = values_without(metrics, g);
  if (values.empty()) {
    fail(p, reason, wrap + "did not receive metrics for targeted pods (pods might be unready)");
    return;
  }
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

// calculateScaleUpLimitWithScalingRules.
std::int32_t scale_up_limit(std::int32_t current, const Memory& mem, const HPAScalingRules& rules, Micros now,
                            std::string& text, bool explain) {
  SelectPolicy select = rules.select_policy.value_or(SelectPolicy::Max);
  if (select == SelectPolicy::Disabled) {
    if (explain) text = "scaleUp selectPolicy Disabled → limit " + std::to_string(current);
    return current;
  }
  bool min_change = select == SelectPolicy::Min;
  std::int32_t result = min_change ? kInt32Max : kInt32Min;
  std::string parts;
  if (rules.policies) {
    for (const auto& policy : *rules.policies) {
      std::int32_t added = replicas_change_in_period(policy.period_seconds, mem.scale_up_events, now);
      std::int32_t deleted = replicas_change_in_period(policy.period_seconds, mem.scale_down_events, now);
      std::int32_t start = current - added + deleted;
      std::int32_t proposed = 0;
      std::string calc;
      if (policy.type == ScalingPolicyType::Pods) {
        proposed = start + policy.value;
        if (explain) calc = std::to_string(start) + " + " + std::to_string(policy.value);
      } else {
        // Rounded up so a small percentage still adds a pod.
        proposed = ceil_to_int32(double(start) * (1.0 + double(policy.value) / 100.0));
        if (explain) calc = "ceil(" + std::to_string(start) + " × " + fmt3(1.0 + double(policy.value) / 100.0) + ")";
      }
      result = min_change ? std::min(result, proposed) : std::max(result, proposed);
      if (!explain) continue;
      if (!parts.empty()) parts += ", ";
      parts += policy_text(policy) + ": period start " + std::to_string(current) + " − " + std::to_string(added) +
               " + " + std::to_string(deleted) + " = " + std::to_string(start) + ", " + calc + " = " +
               std::to_string(proposed);
    }
  }
  if (explain) text = "scaleUp " + std::string(to_string(select)) + " of [" + parts + "] = " + std::to_string(result);
  return result;
}

// calculateScaleDownLimitWithBehaviors.
std::int32_t scale_down_limit(std::int32_t current, const Memory& mem, const HPAScalingRules& rules, Micros now,
                              std::string& text, bool explain) {
  SelectPolicy select = rules.select_policy.value_or(SelectPolicy::Max);
  if (select == SelectPolicy::Disabled) {
    if (explain) text = "scaleDown selectPolicy Disabled → limit " + std::to_string(current);
    return current;
  }
  bool min_change = select == SelectPolicy::Min;
  std::int32_t result = min_change ? kInt32Min : kInt32Max;
  std::string parts;
  if (rules.policies) {
    for (const auto& policy : *rules.policies) {
      std::int32_t added = replicas_change_in_period(policy.period_seconds, mem.scale_up_events, now);
      std::int32_t deleted = replicas_change_in_period(policy.period_seconds, mem.scale_down_events, now);
      std::int32_t start = current - added + deleted;
      std::int32_t proposed = 0;
      std::string calc;
      if (policy.type == ScalingPolicyType::Pods) {
        proposed = start - policy.value;
        if (explain) calc = std::to_string(start) + " − " + std::to_string(policy.value);
      } else {
        // int32() truncates: the count that stays is rounded down.
        proposed = trunc_to_int32(double(start) * (1.0 - double(policy.value) / 100.0));
        if (explain) calc = "int(" + std::to_string(start) + " × " + fmt3(1.0 - double(policy.value) / 100.0) + ")";
      }
      result = min_change ? std::max(result, proposed) : std::min(result, proposed);
      if (!explain) continue;
      if (!parts.empty()) parts += ", ";
      parts += policy_text(policy) + ": period start " + std::to_string(current) + " − " + std::to_string(added) +
               " + " + std::to_string(deleted) + " = " + std::to_string(start) + ", " + calc + " = " +
               std::to_string(proposed);
    }
  }
  if (explain) text = "scaleDown " + std::string(to_string(select)) + " of [" + parts + "] = " + std::to_string(result);
  return result;
}

struct Normalized {
  std::int32_t stabilized = 0;
  std::string stabilization_reason, stabilization_message;
  std::int32_t limited = 0;
  std::string limit_reason, limit_message;
  std::vector<std::string> lines;
};

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
    std::int32_t limit = scale_up_limit(current, mem, up, now, text, flags.explain);
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
    std::int32_t limit = scale_down_limit(current, mem, down, now, text, flags.explain);
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

}  // namespace

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
