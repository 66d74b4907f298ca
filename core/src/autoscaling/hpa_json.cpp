// Reads the `gpuscale hpa` document (HPA spec, observed state, controller memory) and renders the
// decision as JSON. Format: docs/hpa-cli.md.
#include "autoscaling/hpa_json.hpp"

#include "k8s/quantity.hpp"

#include <cmath>
#include <limits>
#include <set>

namespace gpuscale::hpa {

namespace {

using Wide = __int128;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMaxReplicaCount = 1'000'000;
constexpr double kMaxAgeSeconds = 1e9;

std::optional<std::int64_t> optional_quantity(ObjectReader& r, const std::string& key) {
  const Json* v = r.raw(key);
  if (!v) return std::nullopt;
  return quantity_milli(*v, r.child_path(key));
}

LabelSelector parse_selector(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"matchLabels", "matchExpressions"});
  LabelSelector sel;
  if (const Json* labels = r.raw("matchLabels")) {
    const std::string lp = r.child_path("matchLabels");
    expect_object(*labels, lp);
    if (labels->size() > 100) throw InputError(lp, "has more than 100 labels");
    for (auto it = labels->begin(); it != labels->end(); ++it) {
      if (!it.value().is_string()) {
        throw InputError(lp + "/" + json_pointer_token(it.key()), "expected a string, found " + type_name(it.value()));
      }
      sel.match_labels[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* exprs = r.raw("matchExpressions")) {
    const std::string ep = r.child_path("matchExpressions");
    expect_array(*exprs, ep, 100);
    for (std::size_t i = 0; i < exprs->size(); ++i) {
      ObjectReader er((*exprs)[i], ep + "/" + std::to_string(i));
      er.only_keys({"key", "operator", "values"});
      LabelSelectorRequirement req;
      req.key = er.require_string("key");
      req.op = er.require_enum("operator", {"In", "NotIn", "Exists", "DoesNotExist"});
      if (const Json* vals = er.raw("values")) {
        const std::string vp = er.child_path("values");
        expect_array(*vals, vp, 100);
        for (std::size_t j = 0; j < vals->size(); ++j) {
          if (!(*vals)[j].is_string()) {
            throw InputError(vp + "/" + std::to_string(j), "expected a string, found " + type_name((*vals)[j]));
          }
          req.values.push_back((*vals)[j].get<std::string>());
        }
      }
      er.finish();
      sel.match_expressions.push_back(req);
    }
  }
  r.finish();
  return sel;
}

MetricIdentifier parse_identifier(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"name", "selector"});
  MetricIdentifier id;
  id.name = r.require_string("name");
  if (const Json* s = r.raw("selector")) {
    if (!s->is_null()) id.selector = parse_selector(*s, r.child_path("selector"));
  }
  r.finish();
  return id;
}

CrossVersionObjectReference parse_object_ref(const Json& value, const std::string& path, bool require_fields) {
  ObjectReader r(value, path);
  r.only_keys({"apiVersion", "kind", "name"});
  CrossVersionObjectReference ref;
  ref.api_version = r.get_string("apiVersion", "");
  if (require_fields) {
    ref.kind = r.require_string("kind");
    ref.name = r.require_string("name");
  } else {
    ref.kind = r.get_string("kind", "");
    ref.name = r.get_string("name", "");
  }
  r.finish();
  return ref;
}

// MetricTarget, stricter than the API server: the field that goes with `type` is required and the
// others are rejected (the controller would otherwise pick one silently).
MetricTarget parse_target(const Json& value, const std::string& path, std::initializer_list<const char*> allowed,
                          const char* source) {
  ObjectReader r(value, path);
  r.only_keys({"type", "value", "averageValue", "averageUtilization"});
  MetricTarget t;
  std::string type = r.require_enum("type", allowed);
  t.type = type == "Utilization" ? MetricTargetType::Utilization
           : type == "Value"     ? MetricTargetType::Value
                                 : MetricTargetType::AverageValue;
  t.value_milli = optional_quantity(r, "value");
  t.average_value_milli = optional_quantity(r, "averageValue");
  if (auto u = r.get_optional_int("averageUtilization", 1, std::numeric_limits<std::int32_t>::max())) {
    t.average_utilization = std::int32_t(*u);
  }
  r.finish();
  const char* want = t.type == MetricTargetType::Utilization ? "averageUtilization"
                     : t.type == MetricTargetType::Value     ? "value"
                                                             : "averageValue";
  for (const char* key : {"averageUtilization", "value", "averageValue"}) {
    bool present = r.has(key);
    if (std::string(key) == want && !present) {
      throw InputError(r.child_path(key), std::string("is required when type is ") + type + " (" + source + " metric)");
    }
    if (std::string(key) != want && present) {
      throw InputError(r.child_path(key),
                       std::string("is not allowed when type is ") + type + "; set only \"" + want + "\"");
    }
  }
  if (t.value_milli && *t.value_milli <= 0) throw InputError(r.child_path("value"), "must be positive");
  if (t.average_value_milli && *t.average_value_milli <= 0) {
    throw InputError(r.child_path("averageValue"), "must be positive");
  }
  return t;
}

MetricSpec parse_metric(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"type", "resource", "containerResource", "pods", "object", "external"});
  MetricSpec m;
  std::string type = r.require_enum("type", {"Resource", "ContainerResource", "Pods", "Object", "External"});
  static const std::pair<const char*, const char*> kSources[] = {{"Resource", "resource"},
                                                                 {"ContainerResource", "containerResource"},
                                                                 {"Pods", "pods"},
                                                                 {"Object", "object"},
                                                                 {"External", "external"}};
  std::string want;
  for (const auto& [t, key] : kSources) {
    if (type == t) want = key;
  }
  for (const auto& [t, key] : kSources) {
    r.raw(key);
    if (key != want && r.has(key)) {
      throw InputError(r.child_path(key), "must not be set when type is " + type + " (set only \"" + want + "\")");
    }
  }
  if (!r.has(want)) throw InputError(r.child_path(want), "is required when type is " + type);
  const Json& src = *r.raw(want);
  const std::string sp = r.child_path(want);
  ObjectReader s(src, sp);
  if (type == "Resource") {
    s.only_keys({"name", "target"});
  } else if (type == "ContainerResource") {
    s.only_keys({"name", "container", "target"});
  } else if (type == "Object") {
    s.only_keys({"describedObject", "metric", "target"});
  } else {
    s.only_keys({"metric", "target"});
  }
  if (type == "Resource" || type == "ContainerResource") {
    m.type = type == "Resource" ? MetricSourceType::Resource : MetricSourceType::ContainerResource;
    m.resource_name = s.require_string("name");
    if (m.type == MetricSourceType::ContainerResource) m.container = s.require_string("container");
    if (!s.has("target")) throw InputError(s.child_path("target"), "is required");
    m.target = parse_target(*s.raw("target"), s.child_path("target"), {"Utilization", "AverageValue"}, type.c_str());
  } else {
    m.type = type == "Pods"     ? MetricSourceType::Pods
             : type == "Object" ? MetricSourceType::Object
                                : MetricSourceType::External;
    if (m.type == MetricSourceType::Object) {
      if (!s.has("describedObject")) throw InputError(s.child_path("describedObject"), "is required");
      m.described_object = parse_object_ref(*s.raw("describedObject"), s.child_path("describedObject"), true);
    }
    if (!s.has("metric")) throw InputError(s.child_path("metric"), "is required");
    m.metric = parse_identifier(*s.raw("metric"), s.child_path("metric"));
    if (!s.has("target")) throw InputError(s.child_path("target"), "is required");
    if (m.type == MetricSourceType::Pods) {
      m.target = parse_target(*s.raw("target"), s.child_path("target"), {"AverageValue"}, "Pods");
    } else {
      m.target = parse_target(*s.raw("target"), s.child_path("target"), {"Value", "AverageValue"}, type.c_str());
    }
  }
  s.finish();
  r.finish();
  return m;
}

HPAScalingRules parse_rules(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"stabilizationWindowSeconds", "selectPolicy", "policies", "tolerance"});
  HPAScalingRules rules;
  if (auto w = r.get_optional_int("stabilizationWindowSeconds", 0, 3600))
    rules.stabilization_window_seconds = std::int32_t(*w);
  if (auto p = r.get_optional_enum("selectPolicy", {"Max", "Min", "Disabled"})) {
    rules.select_policy = *p == "Max" ? SelectPolicy::Max : *p == "Min" ? SelectPolicy::Min : SelectPolicy::Disabled;
  }
  if (const Json* pols = r.raw("policies")) {
    const std::string pp = r.child_path("policies");
    expect_array(*pols, pp, kMaxHpaPolicies);
    if (pols->empty())
      throw InputError(pp, "must specify at least one policy (or leave \"policies\" out for the defaults)");
    std::vector<HPAScalingPolicy> list;
    for (std::size_t i = 0; i < pols->size(); ++i) {
      ObjectReader pr((*pols)[i], pp + "/" + std::to_string(i));
      pr.only_keys({"type", "value", "periodSeconds"});
      HPAScalingPolicy pol;
      pol.type = pr.require_enum("type", {"Pods", "Percent"}) == "Pods" ? ScalingPolicyType::Pods
                                                                         : ScalingPolicyType::Percent;
      pol.value = std::int32_t(pr.require_int("value", 1, kMaxReplicaCount));
      pol.period_seconds = std::int32_t(pr.require_int("periodSeconds", 1, 1800));
      pr.finish();
      list.push_back(pol);
    }
    rules.policies = list;
  }
  if (const Json* tol = r.raw("tolerance")) {
    const std::string tp = r.child_path("tolerance");
    std::string text;
    if (tol->is_string()) {
      text = tol->get<std::string>();
    } else if (tol->is_number()) {
      text = tol->dump();  // the shortest text that round-trips
    } else {
      throw InputError(tp, "expected a quantity (number or string such as \"0.05\"), found " + type_name(*tol));
    }
    double t = parse_quantity_double(text, tp);
    if (t < 0 || t > 100) throw InputError(tp, "is " + text + "; allowed: between 0 and 100 (a fraction: 0.1 = 10 %)");
    rules.tolerance = t;
  }
  r.finish();
  return rules;
}

MetricValue parse_metric_value(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"value", "values", "error"});
  MetricValue mv;
  int set = 0;
  if (const Json* v = r.raw("value")) {
    mv.value_milli = quantity_milli(*v, r.child_path("value"));
    ++set;
  }
  if (const Json* vs = r.raw("values")) {
    const std::string vp = r.child_path("values");
    expect_array(*vs, vp, kMaxHpaMetricSeries);
    // The External metric is the sum of the series; Go caps a positive overflow at MaxInt64.
    Wide sum = 0;
    for (std::size_t i = 0; i < vs->size(); ++i) sum += quantity_milli((*vs)[i], vp + "/" + std::to_string(i));
    mv.value_milli = sum > Wide(kInt64Max) ? kInt64Max : sum < -Wide(kInt64Max) ? -kInt64Max : std::int64_t(sum);
    ++set;
  }
  if (r.has("error")) {
    mv.ok = false;
    mv.error = r.require_string("error", "a non-empty string", 1000);
    ++set;
  }
  r.finish();
  if (set != 1) {
    throw InputError(path, "set exactly one of \"value\", \"values\" (summed) or \"error\" (the fetch failed)");
  }
  return mv;
}

std::map<std::string, MetricValue> parse_metric_values(const Json& value, const std::string& path) {
  expect_object(value, path);
  if (value.size() > kMaxHpaMetrics)
    throw InputError(path, "has more than " + std::to_string(kMaxHpaMetrics) + " metrics");
  std::map<std::string, MetricValue> out;
  for (auto it = value.begin(); it != value.end(); ++it)
    out[it.key()] = parse_metric_value(it.value(), path + "/" + json_pointer_token(it.key()));
  return out;
}

std::map<std::string, std::int64_t> parse_quantity_map(const Json& value, const std::string& path, bool non_negative) {
  expect_object(value, path);
  if (value.size() > 100) throw InputError(path, "has more than 100 entries");
  std::map<std::string, std::int64_t> out;
  for (auto it = value.begin(); it != value.end(); ++it) {
    std::int64_t v = quantity_milli(it.value(), path + "/" + json_pointer_token(it.key()));
    if (non_negative && v < 0) throw InputError(path + "/" + json_pointer_token(it.key()), "must not be negative");
    out[it.key()] = v;
  }
  return out;
}

PodSnapshot parse_pod(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"name", "phase", "readyCondition", "deleting", "startAgeSeconds", "readyTransitionAgeSeconds",
                "requests", "metrics", "metricAgeSeconds", "metricWindowSeconds"});
  PodSnapshot pod;
  pod.name = r.require_string("name");
  std::string phase = r.get_enum("phase", "Running", {"Pending", "Running", "Succeeded", "Failed", "Unknown"});
  pod.phase = phase == "Pending"     ? PodPhase::Pending
              : phase == "Running"   ? PodPhase::Running
              : phase == "Succeeded" ? PodPhase::Succeeded
              : phase == "Failed"    ? PodPhase::Failed
                                     : PodPhase::Unknown;
  std::string ready = r.get_enum("readyCondition", "True", {"True", "False", "Unknown", "None"});
  if (ready == "None") {
    pod.ready_condition.reset();
  } else {
    pod.ready_condition = ready == "True"    ? ConditionStatus::True
                          : ready == "False" ? ConditionStatus::False
                                             : ConditionStatus::Unknown;
  }
  pod.deleting = r.get_bool("deleting", false);
  if (const Json* s = r.raw("startAgeSeconds")) {
    if (s->is_null()) {
      pod.start_age_s.reset();
    } else {
      pod.start_age_s = expect_number(*s, r.child_path("startAgeSeconds"), 0, kMaxAgeSeconds);
    }
  }
  pod.readiness_transition_age_s = r.get_optional_number("readyTransitionAgeSeconds", 0, kMaxAgeSeconds);
  if (const Json* q = r.raw("requests")) pod.requests_milli = parse_quantity_map(*q, r.child_path("requests"), true);
  if (const Json* m = r.raw("metrics")) pod.metrics_milli = parse_quantity_map(*m, r.child_path("metrics"), false);
  pod.metric_sample_age_s = r.get_number("metricAgeSeconds", 0.0, 0, kMaxAgeSeconds);
  pod.metric_window_s = r.get_number("metricWindowSeconds", 15.0, 0, 86400);
  r.finish();
  return pod;
}

std::vector<ScaleEvent> parse_events(const Json& value, const std::string& path, Micros now) {
  expect_array(value, path, kMaxHpaMemoryEntries);
  std::vector<ScaleEvent> out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    ObjectReader r(value[i], path + "/" + std::to_string(i));
    r.only_keys({"change", "ageSeconds", "outdated"});
    ScaleEvent e;
    e.change = std::int32_t(r.require_int("change", 0, kMaxReplicaCount));
    if (!r.has("ageSeconds")) throw InputError(r.child_path("ageSeconds"), "is required (seconds before now, >= 0)");
    e.time = now - seconds_to_micros(r.get_number("ageSeconds", 0, 0, kMaxAgeSeconds));
    e.outdated = r.get_bool("outdated", false);
    r.finish();
    out.push_back(e);
  }
  return out;
}

Json quantity_json(std::int64_t milli) { return format_quantity_milli(milli); }

Json proposal_to_json(const MetricProposal& p) {
  Json j;
  j["index"] = p.index;
  j["type"] = to_string(p.source_type);
  j["metricName"] = p.metric_name;
  j["description"] = p.description;
  j["targetType"] = to_string(p.target_type);
  Json target = Json::object();
  Json current = Json::object();
  switch (p.target_type) {
    case MetricTargetType::Utilization:
      if (p.target_utilization) target["averageUtilization"] = *p.target_utilization;
      if (p.current_utilization) current["averageUtilization"] = *p.current_utilization;
      if (p.ok) current["averageValue"] = quantity_json(p.current_milli);
      break;
    case MetricTargetType::Value:
      target["value"] = quantity_json(p.target_milli);
      if (p.ok) current["value"] = quantity_json(p.current_milli);
      break;
    case MetricTargetType::AverageValue:
      target["averageValue"] = quantity_json(p.target_milli);
      if (p.ok) current["averageValue"] = quantity_json(p.current_milli);
      break;
  }
  j["target"] = target;
  j["current"] = current;
  j["ok"] = p.ok;
  if (p.ok) {
    j["ratio"] = p.ratio;
    j["rebalancedRatio"] = p.rebalanced_ratio ? Json(*p.rebalanced_ratio) : Json(nullptr);
    j["replicas"] = p.replicas;
    j["error"] = nullptr;
    j["reason"] = nullptr;
  } else {
    j["ratio"] = nullptr;
    j["rebalancedRatio"] = nullptr;
    j["replicas"] = nullptr;
    j["error"] = p.error;
    j["reason"] = p.failure_reason;
  }
  j["readyPods"] = p.ready_pods;
  j["unreadyPods"] = p.unready_pods;
  j["missingPods"] = p.missing_pods;
  j["ignoredPods"] = p.ignored_pods;
  j["explanation"] = p.explanation;
  return j;
}

Json age_json(Micros time, Micros now) { return micros_to_seconds(now - time); }

}  // namespace

HorizontalPodAutoscalerBehavior parse_hpa_behavior(const Json& value, const std::string& path) {
  ObjectReader br(value, path);
  br.only_keys({"scaleUp", "scaleDown"});
  HorizontalPodAutoscalerBehavior behavior;
  if (const Json* up = br.raw("scaleUp")) behavior.scale_up = parse_rules(*up, br.child_path("scaleUp"));
  if (const Json* down = br.raw("scaleDown")) behavior.scale_down = parse_rules(*down, br.child_path("scaleDown"));
  br.finish();
  return behavior;
}

namespace {

// A quantity as the presets write it: whole numbers plain ("5"), others in milli-units ("700m").
std::string spec_quantity(std::int64_t milli) {
  return milli % 1000 == 0 ? std::to_string(milli / 1000) : std::to_string(milli) + "m";
}

Json target_to_json(const MetricTarget& t) {
  Json j{{"type", to_string(t.type)}};
  if (t.average_utilization) j["averageUtilization"] = *t.average_utilization;
  if (t.value_milli) j["value"] = spec_quantity(*t.value_milli);
  if (t.average_value_milli) j["averageValue"] = spec_quantity(*t.average_value_milli);
  return j;
}

Json identifier_to_json(const MetricIdentifier& id) {
  Json j{{"name", id.name}};
  if (id.selector) {
    Json sel = Json::object();
    if (!id.selector->match_labels.empty()) sel["matchLabels"] = id.selector->match_labels;
    if (!id.selector->match_expressions.empty()) {
      Json exprs = Json::array();
      for (const auto& e : id.selector->match_expressions) {
        Json x{{"key", e.key}, {"operator", e.op}};
        if (!e.values.empty()) x["values"] = e.values;
        exprs.push_back(x);
      }
      sel["matchExpressions"] = exprs;
    }
    j["selector"] = sel;
  }
  return j;
}

Json rules_to_json(const HPAScalingRules& r) {
  Json j = Json::object();
  if (r.stabilization_window_seconds) j["stabilizationWindowSeconds"] = *r.stabilization_window_seconds;
  if (r.select_policy) j["selectPolicy"] = to_string(*r.select_policy);
  if (r.policies) {
    Json list = Json::array();
    for (const auto& p : *r.policies) list.push_back({{"type", to_string(p.type)}, {"value", p.value}, {"periodSeconds", p.period_seconds}});
    j["policies"] = list;
  }
  if (r.tolerance) j["tolerance"] = *r.tolerance;
  return j;
}

}  // namespace

Json hpa_spec_to_json(const HorizontalPodAutoscalerSpec& spec) {
  Json j = Json::object();
  const auto& ref = spec.scale_target_ref;
  if (!ref.api_version.empty() || !ref.kind.empty() || !ref.name.empty()) {
    Json r = Json::object();
    if (!ref.api_version.empty()) r["apiVersion"] = ref.api_version;
    if (!ref.kind.empty()) r["kind"] = ref.kind;
    if (!ref.name.empty()) r["name"] = ref.name;
    j["scaleTargetRef"] = r;
  }
  if (spec.min_replicas) j["minReplicas"] = *spec.min_replicas;
  j["maxReplicas"] = spec.max_replicas;
  if (!spec.metrics.empty()) {
    Json metrics = Json::array();
    for (const auto& m : spec.metrics) {
      Json source;
      const char* key = "resource";
      switch (m.type) {
        case MetricSourceType::Resource:
          source = {{"name", m.resource_name}, {"target", target_to_json(m.target)}};
          break;
        case MetricSourceType::ContainerResource:
          key = "containerResource";
          source = {{"name", m.resource_name}, {"container", m.container}, {"target", target_to_json(m.target)}};
          break;
        case MetricSourceType::Pods:
          key = "pods";
          source = {{"metric", identifier_to_json(m.metric)}, {"target", target_to_json(m.target)}};
          break;
        case MetricSourceType::Object:
          key = "object";
          source = {{"describedObject", {{"apiVersion", m.described_object.api_version}, {"kind", m.described_object.kind}, {"name", m.described_object.name}}},
                    {"metric", identifier_to_json(m.metric)},
                    {"target", target_to_json(m.target)}};
          break;
        case MetricSourceType::External:
          key = "external";
          source = {{"metric", identifier_to_json(m.metric)}, {"target", target_to_json(m.target)}};
          break;
      }
      metrics.push_back({{"type", to_string(m.type)}, {key, source}});
    }
    j["metrics"] = metrics;
  }
  if (spec.behavior) {
    Json b = Json::object();
    if (spec.behavior->scale_up) b["scaleUp"] = rules_to_json(*spec.behavior->scale_up);
    if (spec.behavior->scale_down) b["scaleDown"] = rules_to_json(*spec.behavior->scale_down);
    j["behavior"] = b;
  }
  return j;
}

HorizontalPodAutoscalerSpec parse_hpa_spec(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"scaleTargetRef", "minReplicas", "maxReplicas", "metrics", "behavior"});
  HorizontalPodAutoscalerSpec spec;
  if (const Json* ref = r.raw("scaleTargetRef"))
    spec.scale_target_ref = parse_object_ref(*ref, r.child_path("scaleTargetRef"), false);
  if (auto m = r.get_optional_int("minReplicas", 0, kMaxReplicaCount)) spec.min_replicas = std::int32_t(*m);
  spec.max_replicas = std::int32_t(r.require_int("maxReplicas", 1, kMaxReplicaCount));
  if (const Json* ms = r.raw("metrics")) {
    const std::string mp = r.child_path("metrics");
    expect_array(*ms, mp, kMaxHpaMetrics);
    for (std::size_t i = 0; i < ms->size(); ++i)
      spec.metrics.push_back(parse_metric((*ms)[i], mp + "/" + std::to_string(i)));
  }
  if (const Json* b = r.raw("behavior")) {
    if (!b->is_null()) spec.behavior = parse_hpa_behavior(*b, r.child_path("behavior"));
  }
  r.finish();
  std::int32_t min_replicas = spec.min_replicas.value_or(1);
  if (min_replicas > spec.max_replicas) {
    throw InputError(r.child_path("maxReplicas"), "is " + std::to_string(spec.max_replicas) +
                                                      "; must be greater than or equal to minReplicas (" +
                                                      std::to_string(min_replicas) + ")");
  }
  if (min_replicas == 0) {
    bool object_or_external = false;
    for (const auto& m : spec.metrics) {
      if (m.type == MetricSourceType::Object || m.type == MetricSourceType::External) object_or_external = true;
    }
    if (!object_or_external) {
      throw InputError(r.child_path("minReplicas"),
                       "0 is allowed only with at least one Object or External metric (the HPAScaleToZero gate)");
    }
  }
  return spec;
}

Observed parse_observed(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"specReplicas", "statusReplicas", "pods", "unlistedPodMetrics", "podMetricErrors", "objectMetrics", "externalMetrics"});
  Observed obs;
  obs.spec_replicas = std::int32_t(r.require_int("specReplicas", 0, kMaxReplicaCount));
  obs.status_replicas = std::int32_t(r.get_int("statusReplicas", obs.spec_replicas, 0, kMaxReplicaCount));
  if (const Json* pods = r.raw("pods")) {
    const std::string pp = r.child_path("pods");
    expect_array(*pods, pp, kMaxHpaPods);
    std::set<std::string> names;
    for (std::size_t i = 0; i < pods->size(); ++i) {
      const std::string ip = pp + "/" + std::to_string(i);
      PodSnapshot pod = parse_pod((*pods)[i], ip);
      if (!names.insert(pod.name).second) throw InputError(ip + "/name", "duplicate pod name \"" + pod.name + "\"");
      obs.pods.push_back(pod);
    }
  }
  if (const Json* extra = r.raw("unlistedPodMetrics")) {
    const std::string xp = r.child_path("unlistedPodMetrics");
    expect_object(*extra, xp);
    if (extra->size() > kMaxHpaPods) throw InputError(xp, "has more than " + std::to_string(kMaxHpaPods) + " pods");
    std::set<std::string> listed;
    for (const auto& pod : obs.pods) listed.insert(pod.name);
    for (auto it = extra->begin(); it != extra->end(); ++it) {
      const std::string at = xp + "/" + json_pointer_token(it.key());
      if (it.key().empty() || it.key().size() > 253) throw InputError(at, "needs a pod name (1 to 253 characters) as its key");
      if (listed.count(it.key())) {
        throw InputError(at, "names pod \"" + it.key() + "\", which is in observed.pods: give its samples in that pod's \"metrics\"");
      }
      obs.unlisted_pod_metrics[it.key()] = parse_quantity_map(it.value(), at, false);
    }
  }
  if (const Json* errs = r.raw("podMetricErrors")) {
    const std::string ep = r.child_path("podMetricErrors");
    expect_object(*errs, ep);
    if (errs->size() > kMaxHpaMetrics)
      throw InputError(ep, "has more than " + std::to_string(kMaxHpaMetrics) + " entries");
    for (auto it = errs->begin(); it != errs->end(); ++it) {
      if (!it.value().is_string() || it.value().get<std::string>().empty()) {
        throw InputError(ep + "/" + json_pointer_token(it.key()),
                         "expected a non-empty string (the fetch error), found " + type_name(it.value()));
      }
      obs.pod_metric_errors[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* om = r.raw("objectMetrics"))
    obs.object_metrics = parse_metric_values(*om, r.child_path("objectMetrics"));
  if (const Json* em = r.raw("externalMetrics"))
    obs.external_metrics = parse_metric_values(*em, r.child_path("externalMetrics"));
  r.finish();
  return obs;
}

Memory parse_memory(const Json& value, const std::string& path, Micros now) {
  ObjectReader r(value, path);
  r.only_keys({"recommendations", "scaleUpEvents", "scaleDownEvents"});
  Memory mem;
  if (const Json* recs = r.raw("recommendations")) {
    const std::string rp = r.child_path("recommendations");
    expect_array(*recs, rp, kMaxHpaMemoryEntries);
    for (std::size_t i = 0; i < recs->size(); ++i) {
      ObjectReader rr((*recs)[i], rp + "/" + std::to_string(i));
      rr.only_keys({"replicas", "ageSeconds"});
      Recommendation rec;
      rec.replicas = std::int32_t(rr.require_int("replicas", 0, kMaxReplicaCount));
      if (!rr.has("ageSeconds"))
        throw InputError(rr.child_path("ageSeconds"), "is required (seconds before now, >= 0)");
      rec.time = now - seconds_to_micros(rr.get_number("ageSeconds", 0, 0, kMaxAgeSeconds));
      rr.finish();
      mem.recommendations.push_back(rec);
    }
  }
  if (const Json* up = r.raw("scaleUpEvents"))
    mem.scale_up_events = parse_events(*up, r.child_path("scaleUpEvents"), now);
  if (const Json* down = r.raw("scaleDownEvents")) {
    mem.scale_down_events = parse_events(*down, r.child_path("scaleDownEvents"), now);
  }
  r.finish();
  return mem;
}

ControllerFlags parse_controller_flags(const Json& value, const std::string& path) {
  ObjectReader r(value, path);
  r.only_keys({"tolerance", "downscaleStabilizationSeconds", "cpuInitializationPeriodSeconds",
                "initialReadinessDelaySeconds", "configurableTolerance"});
  ControllerFlags f;
  f.tolerance = r.get_number("tolerance", f.tolerance, 0, 100);
  f.downscale_stabilization_s = r.get_number("downscaleStabilizationSeconds", f.downscale_stabilization_s, 0, 86400);
  f.cpu_initialization_period_s =
      r.get_number("cpuInitializationPeriodSeconds", f.cpu_initialization_period_s, 0, 86400);
  f.initial_readiness_delay_s = r.get_number("initialReadinessDelaySeconds", f.initial_readiness_delay_s, 0, 86400);
  f.configurable_tolerance = r.get_bool("configurableTolerance", f.configurable_tolerance);
  r.finish();
  return f;
}

Json decision_to_json(const Decision& d) {
  Json j;
  j["currentReplicas"] = d.current_replicas;
  j["desiredReplicas"] = d.desired_replicas;
  j["minReplicas"] = d.min_replicas;
  j["maxReplicas"] = d.max_replicas;
  j["rescale"] = d.rescale;
  j["ableToScale"] = d.able_to_scale;
  j["path"] = d.path;
  j["metricDesiredReplicas"] = d.metric_desired_replicas >= 0 ? Json(d.metric_desired_replicas) : Json(nullptr);
  j["metricName"] = d.metric_name.empty() ? Json(nullptr) : Json(d.metric_name);
  j["stabilizedReplicas"] = d.stabilized_replicas >= 0 ? Json(d.stabilized_replicas) : Json(nullptr);
  j["stabilizationReason"] = d.stabilization_reason.empty() ? Json(nullptr) : Json(d.stabilization_reason);
  j["limitedReplicas"] = d.limited_replicas >= 0 ? Json(d.limited_replicas) : Json(nullptr);
  j["limitReason"] = d.limit_reason.empty() ? Json(nullptr) : Json(d.limit_reason);
  j["rescaleReason"] = d.rescale_reason.empty() ? Json(nullptr) : Json(d.rescale_reason);
  j["error"] = d.error.empty() ? Json(nullptr) : Json(d.error);
  Json conds = Json::array();
  for (const auto& c : d.conditions) {
    conds.push_back(Json{{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message}});
  }
  j["conditions"] = conds;
  Json props = Json::array();
  for (const auto& p : d.proposals) props.push_back(proposal_to_json(p));
  j["proposals"] = props;
  j["explanation"] = d.explanation;
  return j;
}

Json memory_to_json(const Memory& m, Micros now) {
  Json recs = Json::array();
  for (const auto& r : m.recommendations)
    recs.push_back(Json{{"replicas", r.replicas}, {"ageSeconds", age_json(r.time, now)}});
  auto events = [&](const std::vector<ScaleEvent>& list) {
    Json out = Json::array();
    for (const auto& e : list) {
      out.push_back(Json{{"change", e.change}, {"ageSeconds", age_json(e.time, now)}, {"outdated", e.outdated}});
    }
    return out;
  };
  return Json{{"recommendations", recs},
              {"scaleUpEvents", events(m.scale_up_events)},
              {"scaleDownEvents", events(m.scale_down_events)}};
}

std::string evaluate_hpa_document(const std::string& json_text) {
  Json doc = parse_json_text(json_text);
  ObjectReader r(doc, "");
  r.only_keys({"spec", "observed", "memory", "controller"});
  const Micros now = 0;  // ages in the document are relative to this sync
  if (!r.has("spec")) throw InputError("/spec", "is required (an autoscaling/v2 HorizontalPodAutoscalerSpec)");
  if (!r.has("observed")) throw InputError("/observed", "is required (scale replicas, pods and metric values)");
  HorizontalPodAutoscalerSpec spec = parse_hpa_spec(*r.raw("spec"), "/spec");
  Observed obs = parse_observed(*r.raw("observed"), "/observed");
  Memory mem;
  if (const Json* m = r.raw("memory")) mem = parse_memory(*m, "/memory", now);
  ControllerFlags flags;
  if (const Json* c = r.raw("controller")) flags = parse_controller_flags(*c, "/controller");
  r.finish();
  Decision d = reconcile(spec, obs, mem, now, flags);
  Json out = decision_to_json(d);
  out["memory"] = memory_to_json(mem, now);
  return out.dump(2);
}

}  // namespace gpuscale::hpa
