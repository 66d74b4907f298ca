// The HPA controller's private pieces, shared by its three files: hpa_replicas.cpp (the replica
// calculator: one proposal per metric), hpa_behavior.cpp (normalization: stabilization and rate limits,
// the scale-event history) and hpa.cpp (reconcile). Not part of hpa.hpp's API.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "autoscaling/hpa.hpp"

namespace gpuscale::hpa::detail {


constexpr std::int32_t kInt32Max = std::numeric_limits<std::int32_t>::max();
constexpr std::int32_t kInt32Min = std::numeric_limits<std::int32_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int32_t kDefaultCPUUtilization = 80;  // pkg/apis/autoscaling DefaultCPUUtilization

using Wide = __int128;

inline std::int64_t saturate64(Wide v) {
  if (v > Wide(kInt64Max)) return kInt64Max;
  if (v < Wide(kInt64Min)) return kInt64Min;
  return static_cast<std::int64_t>(v);
}

// int32(math.Ceil(x)), saturated instead of Go's platform-defined overflow.
inline std::int32_t ceil_to_int32(double x) {
  if (x != x) return 0;
  double c = std::ceil(x);
  if (c >= double(kInt32Max)) return kInt32Max;
  if (c <= double(kInt32Min)) return kInt32Min;
  return static_cast<std::int32_t>(c);
}

// int32(x) for a float64: truncation toward zero.
inline std::int32_t trunc_to_int32(double x) {
  if (x != x) return 0;
  double t = std::trunc(x);
  if (t >= double(kInt32Max)) return kInt32Max;
  if (t <= double(kInt32Min)) return kInt32Min;
  return static_cast<std::int32_t>(t);
}

inline std::string fmt3(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// Seconds for messages: whole numbers without decimals.
inline std::string fmt_seconds(double s) {
  char buf[64];
  if (std::floor(s) == s && std::fabs(s) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", s);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", s);
  }
  return buf;
}

// A milli-value as a plain decimal: 1500 → "1.5", 250 → "0.25", 2000 → "2".
inline std::string fmt_milli(std::int64_t m) {
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
inline std::string join_lines(const std::vector<std::string>& lines) {
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

inline std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

inline std::string band(const Tolerances& t) { return "[" + fmt3(1.0 - t.scale_down) + ", " + fmt3(1.0 + t.scale_up) + "]"; }

// Go's generated (*LabelSelector).String(), used in the controller's External metric names.
inline std::string selector_string(const std::optional<LabelSelector>& sel) {
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
inline void set_condition(std::vector<Condition>& list, const std::string& type, bool status, const std::string& reason,
                   const std::string& message) {
  for (auto& c : list) {
    if (c.type == type) {
      c = Condition{type, status ? "True" : "False", reason, message};
      return;
    }
  }
  list.push_back(Condition{type, status ? "True" : "False", reason, message});
}


// The replica calculator for one metric of the spec (replica_calculator.go, horizontal.go computeReplicasForMetric).
MetricProposal compute_metric(const MetricSpec& spec, int index, const Observed& obs, const Tolerances& tol,
                              const ControllerFlags& flags);

// What normalization made of the metrics' recommendation.
struct Normalized {
  std::int32_t stabilized = 0;
  std::string stabilization_reason, stabilization_message;
  std::int32_t limited = 0;
  std::string limit_reason, limit_message;
  std::vector<std::string> lines;
};

Normalized normalize_with_behaviors(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t current, std::int32_t desired,
                                    std::int32_t min_replicas, Micros now, const ControllerFlags& flags);
Normalized normalize_legacy(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t current, std::int32_t desired,
                            std::int32_t min_replicas, Micros now, const ControllerFlags& flags);
void store_scale_event(const HorizontalPodAutoscalerSpec& spec, Memory& mem, std::int32_t prev, std::int32_t next, Micros now);
HPAScalingRules fill_rules(const std::optional<HPAScalingRules>& from, HPAScalingRules to);

}  // namespace gpuscale::hpa::detail
