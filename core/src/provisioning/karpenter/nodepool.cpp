// Karpenter NodePool (karpenter.sh/v1): strict parsing with the API server's own rules (CRD schema, CEL
// rules, Karpenter's runtime validation), Go durations, and the lab's GPU-pool lint. docs/nodepool.md
// lists every rule with its source.
#include "provisioning/karpenter/nodepool.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <string_view>

#include "k8s/cron.hpp"
#include "k8s/duration.hpp"
#include "k8s/names.hpp"
#include "k8s/quantity.hpp"
#include "cluster/instance_types.hpp"

namespace gpuscale {

namespace {

constexpr std::size_t kMaxRequirements = 100;  // CRD maxItems
constexpr std::size_t kMaxBudgets = 50;        // CRD maxItems
constexpr std::size_t kMaxReasons = 50;        // CRD maxItems
constexpr std::size_t kMaxLabels = 100;        // CRD maxProperties
constexpr std::size_t kMaxTaints = 100;        // no CRD bound; a sanity cap
constexpr std::size_t kMaxValues = 1000;       // no CRD bound; a sanity cap
constexpr std::size_t kMaxMapEntries = 1000;   // annotations, limits


std::string label_domain(const std::string& key) {
  auto slash = key.find('/');
  return slash == std::string::npos ? std::string() : key.substr(0, slash);
}

// The CRD's x-kubernetes-validations on label keys (template labels and requirement keys), in the order
// the CRD lists them; karpenter.k8s.aws is the AWS provider's addition (the lab's node class is an
// EC2NodeClass). Returns the CEL rule's message, or "".
std::string restricted_label_problem(const std::string& key) {
  static const char* kKubernetesAllowed[] = {
      "beta.kubernetes.io/instance-type", "failure-domain.beta.kubernetes.io/region", "beta.kubernetes.io/os",
      "beta.kubernetes.io/arch", "failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone",
      "topology.kubernetes.io/region", "node.kubernetes.io/instance-type", "kubernetes.io/arch",
      "kubernetes.io/os", "node.kubernetes.io/windows-build"};
  static const char* kAwsAllowed[] = {
      "karpenter.k8s.aws/ec2nodeclass", "karpenter.k8s.aws/instance-encryption-in-transit-supported",
      "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-hypervisor",
      "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
      "karpenter.k8s.aws/instance-local-nvme", "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
      "karpenter.k8s.aws/instance-cpu-manufacturer", "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
      "karpenter.k8s.aws/instance-memory", "karpenter.k8s.aws/instance-ebs-bandwidth",
      "karpenter.k8s.aws/instance-network-bandwidth", "karpenter.k8s.aws/instance-gpu-name",
      "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
      "karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name",
      "karpenter.k8s.aws/instance-accelerator-manufacturer", "karpenter.k8s.aws/instance-accelerator-count"};
  auto in = [&](const auto& list) {
    return std::any_of(std::begin(list), std::end(list), [&](const char* k) { return key == k; });
  };
  const std::string domain = label_domain(key);
  // The hostname rule comes last in the CRD; checking it first gives the more specific message.
  if (key == "kubernetes.io/hostname")
    return "label \"kubernetes.io/hostname\" is restricted (Karpenter cannot know a node's hostname before it exists)";
  if (key == "karpenter.sh/nodepool")
    return "label \"karpenter.sh/nodepool\" is restricted (Karpenter sets it to the NodePool's name)";
  // Template labels may not use node.kubernetes.io/instance-type by name, but the suffix rule allows it.
  bool k8s_ok = in(kKubernetesAllowed) || ends_with(domain, "node.kubernetes.io") ||
                ends_with(domain, "node-restriction.kubernetes.io") || !ends_with(domain, "kubernetes.io");
  if (!k8s_ok) return "label domain \"kubernetes.io\" is restricted";
  if (!(ends_with(domain, "kops.k8s.io") || !ends_with(domain, "k8s.io"))) return "label domain \"k8s.io\" is restricted";
  if (!(key == "karpenter.sh/capacity-type" || !ends_with(domain, "karpenter.sh")))
    return "label domain \"karpenter.sh\" is restricted (only karpenter.sh/capacity-type is allowed)";
  if (!(in(kAwsAllowed) || !ends_with(domain, "karpenter.k8s.aws")))
    return "label domain \"karpenter.k8s.aws\" is restricted (only the well-known instance labels such as "
           "karpenter.k8s.aws/instance-family are allowed)";
  return "";
}

// Karpenter normalises deprecated aliases to the stable well-known labels (pkg/apis/v1/labels.go
// NormalizedLabels) before it uses a requirement.
std::string normalized_label(const std::string& key) {
  if (key == "failure-domain.beta.kubernetes.io/zone") return "topology.kubernetes.io/zone";
  if (key == "failure-domain.beta.kubernetes.io/region") return "topology.kubernetes.io/region";
  if (key == "beta.kubernetes.io/arch") return "kubernetes.io/arch";
  if (key == "beta.kubernetes.io/os") return "kubernetes.io/os";
  if (key == "beta.kubernetes.io/instance-type") return "node.kubernetes.io/instance-type";
  return key;
}

// A map of string → string (labels, annotations).
std::map<std::string, std::string> read_string_map(const Json& v, const std::string& path, std::size_t max_entries,
                                                   bool labels) {
  expect_object(v, path);
  if (v.size() > max_entries) {
    throw InputError(path, "has " + std::to_string(v.size()) + " entries; at most " + std::to_string(max_entries) +
                               " are allowed");
  }
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& key = it.key();
    const std::string p = path + "/" + pointer_token(key);
    if (std::string why = qualified_name_problem(key); !why.empty())
      throw InputError(p, "key " + shown(key) + " is not a valid " + (labels ? "label" : "annotation") + " key: " + why);
    std::string value = expect_string(it.value(), p, labels ? 63 : 64 * 1024);
    if (labels) {
      if (std::string why = label_value_problem(value); !why.empty())
        throw InputError(p, "label value " + shown(value) + " " + why);
      if (std::string why = restricted_label_problem(key); !why.empty()) throw InputError(p, why);
    }
    out[key] = value;
  }
  return out;
}

// ---- duration fields -------------------------------------------------------------------------------

// The CRD patterns of the NodePool's duration fields (kubebuilder markers in pkg/apis/v1/nodepool.go).
// ^([0-9]+(s|m|h))+$  (expireAfter, consolidateAfter, terminationGracePeriod)
bool matches_smh_pattern(const std::string& s) {
  std::size_t i = 0;
  if (s.empty()) return false;
  while (i < s.size()) {
    std::size_t start = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i == start || i == s.size()) return false;
    if (s[i] != 's' && s[i] != 'm' && s[i] != 'h') return false;
    ++i;
  }
  return true;
}

// ^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$  (budget duration: cron has no seconds)
bool matches_budget_pattern(std::string s) {
  auto core = [](const std::string& t) {
    std::size_t i = 0;
    auto digits = [&] {
      std::size_t start = i;
      while (i < t.size() && is_digit(t[i])) ++i;
      return i > start;
    };
    if (!digits() || i == t.size()) return false;
    if (t[i] == 'm') return i + 1 == t.size();
    if (t[i] != 'h') return false;
    ++i;
    if (i == t.size()) return true;
    if (!digits() || i + 1 != t.size()) return false;
    return t[i] == 'm';
  };
  if (core(s)) return true;
  return s.size() > 2 && ends_with(s, "0s") && core(s.substr(0, s.size() - 2));
}

enum class DurationForm { SecondsMinutesHours, HoursMinutes };

// A NodePool duration field: a string, "Never" where allowed (→ nullopt), else a duration that both Go and
// the field's CRD pattern accept.
std::optional<Micros> read_field_duration(const Json& v, const std::string& path, bool allow_never, DurationForm form) {
  const char* accepted =
      form == DurationForm::HoursMinutes
          ? "this field takes whole hours and/or minutes: \"30m\", \"8h\", \"1h30m\" (cron has no seconds)"
          : (allow_never ? "this field takes whole numbers with the units s, m or h, chained: \"30s\", \"10m\", "
                           "\"1h30m\", \"720h\"; or \"Never\""
                         : "this field takes whole numbers with the units s, m or h, chained: \"30s\", \"10m\", "
                           "\"1h30m\", \"2h\" (no \"Never\")");
  if (!v.is_string()) {
    std::string found = type_name(v);
    if (v.is_number()) found += " (" + v.dump() + ", which has no unit)";
    throw InputError(path, std::string("expected a duration string, found ") + found + "; " + accepted);
  }
  const std::string text = v.get<std::string>();
  if (text == "Never") {
    if (allow_never) return std::nullopt;
    throw InputError(path, "\"Never\" is not allowed here; " + std::string(accepted));
  }
  std::string why;
  auto ns = go_duration_ns(text, why);
  if (!ns) {
    throw InputError(path, shown(text) + " is not a valid duration: " + why + "; " + kGoDurationHelp + ". " +
                               "The NodePool CRD narrows it further: " + accepted);
  }
  if (*ns < 0) throw InputError(path, shown(text) + " is negative; " + accepted);
  bool ok = form == DurationForm::HoursMinutes ? matches_budget_pattern(text) : matches_smh_pattern(text);
  if (!ok) {
    Micros us = ns_to_micros(*ns);
    std::string suggestion;
    if (us % (form == DurationForm::HoursMinutes ? 60 * kMicrosPerSecond : kMicrosPerSecond) == 0) {
      suggestion = "; write " + shown(format_duration(us));
    }
    throw InputError(path, shown(text) + " is a Go duration, but the NodePool CRD's pattern for this field (" +
                               (form == DurationForm::HoursMinutes ? "^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"
                                                                   : "^(([0-9]+(s|m|h))+|Never)$") +
                               ") rejects it: " + accepted + suggestion);
  }
  return ns_to_micros(*ns);
}

// ---- the parts of a NodePool -------------------------------------------------------------------------

Requirement parse_requirement(const Json& v, const std::string& path) {
  ObjectReader r(v, path);
  for (const char* k : {"key", "operator", "values", "minValues"}) r.raw(k);
  r.finish();
  Requirement req;
  std::string key = r.require_string("key", "a node label key such as node.kubernetes.io/instance-type", 316);
  if (std::string why = qualified_name_problem(key); !why.empty())
    throw InputError(r.child_path("key"), shown(key) + " is not a valid label key: " + why);
  if (std::string why = restricted_label_problem(key); !why.empty()) throw InputError(r.child_path("key"), why);
  req.key = normalized_label(key);
  const std::string op = expect_enum(r.require("operator", "In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte"),
                       r.child_path("operator"), {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"});
  req.op = value_of(op, kSelectorOps);
  if (const Json* vals = r.raw("values"); vals && !vals->is_null()) {
    const std::string vp = r.child_path("values");
    expect_array(*vals, vp, kMaxValues);
    for (std::size_t i = 0; i < vals->size(); ++i) {
      const std::string ip = vp + "/" + std::to_string(i);
      req.values.push_back(expect_string((*vals)[i], ip, 63));
    }
  }
  const std::string vp = r.child_path("values");
  const std::size_t n = req.values.size();
  if ((req.op == SelectorOp::In || req.op == SelectorOp::NotIn) && n == 0) {
    throw InputError(vp, "operator " + op + " needs at least one value");
  }
  if ((req.op == SelectorOp::Exists || req.op == SelectorOp::DoesNotExist) && n != 0) {
    throw InputError(vp, "operator " + op + " takes no values (found " + std::to_string(n) + ")");
  }
  if (req.op == SelectorOp::Gt || req.op == SelectorOp::Lt || req.op == SelectorOp::Gte || req.op == SelectorOp::Lte) {
    if (n != 1) {
      throw InputError(vp, "operator " + op + " needs exactly one value, a non-negative whole number such as \"0\" (found " +
                               std::to_string(n) + " values)");
    }
    const std::string& s = req.values[0];
    if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), is_digit)) {
      throw InputError(vp + "/0", "operator " + op + " needs a non-negative whole number, found " + shown(s));
    }
  }
  // Label-value syntax after the operator rules: "Lt needs a whole number" says more than "-1 is no label value".
  for (std::size_t i = 0; i < n; ++i) {
    if (std::string why = label_value_problem(req.values[i]); !why.empty())
      throw InputError(vp + "/" + std::to_string(i), "label value " + shown(req.values[i]) + " " + why);
  }
  if (auto mv = r.get_optional_int("minValues", 1, 50)) {
    req.min_values = int(*mv);
    if (req.op == SelectorOp::In && n < std::size_t(*mv)) {
      throw InputError(r.child_path("minValues"), "is " + std::to_string(*mv) + " but values lists only " +
                                                      std::to_string(n) + "; an In requirement needs at least minValues values");
    }
  }
  // kubernetes-sigs/karpenter pkg/apis/v1/nodeclaim_validation.go validateWellKnownValues (RuntimeValidate):
  // an In requirement on a key with a closed set of values (karpenter.sh/capacity-type: on-demand, spot,
  // reserved) with no valid value, or fewer valid values than minValues, is a validation error (the
  // NodePool's ValidationSucceeded turns False and it launches nothing). Some invalid values beside valid
  // ones are only logged; the lint warns about them (unknown-requirement-value).
  if (const std::vector<std::string>* known = well_known_values(req.key); known && req.op == SelectorOp::In) {
    std::size_t valid = 0;
    for (const auto& v : req.values) valid += std::count(known->begin(), known->end(), v) > 0 ? 1 : 0;
    std::string allowed;
    for (std::size_t i = 0; i < known->size(); ++i) allowed += (i ? ", " : "") + shown((*known)[i]);
    if (valid == 0) {
      std::string bad;
      for (std::size_t i = 0; i < n; ++i) bad += (i ? ", " : "") + shown(req.values[i]);
      throw InputError(vp, "no valid value for " + req.key + " in [" + bad + "]; allowed: " + allowed +
                               " (Karpenter's validation marks the NodePool not ready and launches nothing from it)");
    }
    if (req.min_values > 0 && valid < std::size_t(req.min_values)) {
      throw InputError(r.child_path("minValues"), "is " + std::to_string(req.min_values) + " but only " + std::to_string(valid) +
                                                      " of the values are valid for " + req.key + " (allowed: " + allowed + ")");
    }
  }
  return req;
}

// Stricter than cluster.hpp's parse_taints (a pod-side reader): the NodePool CRD and Karpenter's runtime
// validation check the key and value syntax too.
std::vector<Taint> parse_nodepool_taints(const Json& v, const std::string& path) {
  expect_array(v, path, kMaxTaints);
  std::vector<Taint> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(v[i], p);
    for (const char* k : {"key", "value", "effect", "timeAdded"}) r.raw(k);
    r.finish();
    Taint t;
    t.key = r.require_string("key", "a taint key such as nvidia.com/gpu", 316);
    if (std::string why = qualified_name_problem(t.key); !why.empty())
      throw InputError(r.child_path("key"), shown(t.key) + " is not a valid taint key: " + why);
    if (const Json* val = r.raw("value"); val && !val->is_null()) {
      t.value = expect_string(*val, r.child_path("value"), 316);
      if (!t.value.empty()) {
        if (std::string why = qualified_name_problem(t.value); !why.empty())
          throw InputError(r.child_path("value"), shown(t.value) + " is not a valid taint value: " + why);
      }
    }
    t.effect = value_of(expect_enum(r.require("effect", "NoSchedule, PreferNoSchedule or NoExecute"), r.child_path("effect"),
                                    {"NoSchedule", "PreferNoSchedule", "NoExecute"}),
                        kTaintEffects);
    if (const Json* ta = r.raw("timeAdded"); ta && !ta->is_null()) expect_string(*ta, r.child_path("timeAdded"), 64);
    out.push_back(t);
  }
  return out;
}

DisruptionBudget parse_budget(const Json& v, const std::string& path) {
  ObjectReader r(v, path);
  for (const char* k : {"nodes", "reasons", "schedule", "duration"}) r.raw(k);
  r.finish();
  DisruptionBudget b;
  if (const Json* nodes = r.raw("nodes"); nodes && !nodes->is_null()) {
    const std::string np = r.child_path("nodes");
    if (!nodes->is_string()) {
      throw InputError(np, "expected a string, found " + type_name(*nodes) +
                               (nodes->is_number() ? " (" + nodes->dump() + "); the CRD declares nodes a string: write \"" +
                                                         nodes->dump() + "\""
                                                   : std::string()) +
                               "; a node count (\"5\") or a percentage from \"0%\" to \"100%\"");
    }
    b.nodes = nodes->get<std::string>();
    // ^((100|[0-9]{1,2})%|[0-9]+)$
    bool ok = false;
    const std::string& s = b.nodes;
    if (!s.empty() && s.back() == '%') {
      std::string digits = s.substr(0, s.size() - 1);
      ok = (digits == "100") || (!digits.empty() && digits.size() <= 2 && std::all_of(digits.begin(), digits.end(), is_digit));
    } else {
      ok = !s.empty() && s.size() <= 9 && std::all_of(s.begin(), s.end(), is_digit);
    }
    if (!ok) {
      throw InputError(np, shown(s) + " is not allowed; expected a node count (\"5\") or a percentage from \"0%\" to \"100%\"");
    }
  }
  if (const Json* reasons = r.raw("reasons"); reasons && !reasons->is_null()) {
    const std::string rp = r.child_path("reasons");
    expect_array(*reasons, rp, kMaxReasons);
    for (std::size_t i = 0; i < reasons->size(); ++i) {
      const std::string ip = rp + "/" + std::to_string(i);
      const std::string name = expect_enum((*reasons)[i], ip, {"Underutilized", "Empty", "Drifted"});
      const DisruptionReason reason = value_of(name, kDisruptionReasons);
      if (std::find(b.reasons.begin(), b.reasons.end(), reason) != b.reasons.end())
        throw InputError(ip, shown(name) + " is listed twice (reasons is a set)");
      b.reasons.push_back(reason);
    }
  }
  const Json* schedule = r.raw("schedule");
  const Json* duration = r.raw("duration");
  const bool has_schedule = schedule && !schedule->is_null();
  const bool has_duration = duration && !duration->is_null();
  if (has_schedule != has_duration) {
    throw InputError(has_schedule ? r.child_path("duration") : r.child_path("schedule"),
                     "'schedule' must be set with 'duration': a scheduled budget is active for `duration` after each "
                     "cron hit, so give both or neither");
  }
  if (has_schedule) {
    b.schedule = expect_string(*schedule, r.child_path("schedule"), 256);
    b.cron = parse_cron(b.schedule, r.child_path("schedule"));
    b.duration = read_field_duration(*duration, r.child_path("duration"), false, DurationForm::HoursMinutes);
  }
  return b;
}

void parse_limits(const Json& v, const std::string& path, NodePool& pool) {
  expect_object(v, path);
  if (v.size() > kMaxMapEntries) throw InputError(path, "has too many entries");
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string& name = it.key();
    const std::string p = path + "/" + pointer_token(name);
    if (std::string why = qualified_name_problem(name); !why.empty())
      throw InputError(p, shown(name) + " is not a valid resource name: " + why);
    if (it.value().is_boolean() || it.value().is_null() || it.value().is_object() || it.value().is_array()) {
      throw InputError(p, "expected a quantity such as \"64\", \"1000\" or \"1000Gi\", found " + type_name(it.value()));
    }
    const std::int64_t milli = quantity_milli(it.value(), p);
    pool.limits[name] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
    // Karpenter compares usage with the limit as quantities; usage is in whole GPUs / nodes / bytes, so a
    // fractional limit acts as its floor.
    auto floor_div = [](std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); };
    if (name == "nvidia.com/gpu") pool.limit_gpus = floor_div(milli, 1000);
    else if (name == "cpu") pool.limit_cpu_milli = milli;
    else if (name == "memory") pool.limit_memory_mib = floor_div(milli, 1000LL * 1024 * 1024);
    else if (name == "nodes") pool.limit_nodes = floor_div(milli, 1000);
  }
}

// Hints for fields that moved between karpenter.sh/v1beta1 and v1 (the upgrade guide), given instead of
// the bare "unknown field" message.
void reject_moved_field(ObjectReader& r, const std::string& key, const std::string& hint) {
  if (r.has(key)) throw InputError(r.child_path(key), "unknown field " + shown(key) + " in karpenter.sh/v1: " + hint);
}

}  // namespace

// ---- public API ------------------------------------------------------------------------------------

NodePool parse_nodepool(const Json& doc, const std::string& path) {
  ObjectReader top(doc, path);
  NodePool pool;
  {
    const Json& av = top.require("apiVersion", "\"karpenter.sh/v1\"");
    std::string api_version = expect_string(av, top.child_path("apiVersion"));
    if (api_version != "karpenter.sh/v1") {
      std::string hint = api_version == "karpenter.sh/v1beta1"
                             ? "; v1beta1 was removed in Karpenter 1.1: see the v1 upgrade guide (expireAfter moved to "
                               "spec.template.spec, WhenUnderutilized became WhenEmptyOrUnderutilized, nodeClassRef needs group)"
                             : "";
      throw InputError(top.child_path("apiVersion"), shown(api_version) + " is not allowed; expected \"karpenter.sh/v1\"" + hint);
    }
    std::string kind = expect_string(top.require("kind", "\"NodePool\""), top.child_path("kind"));
    if (kind != "NodePool") throw InputError(top.child_path("kind"), shown(kind) + " is not allowed; expected \"NodePool\"");
  }
  top.raw("metadata");
  top.raw("spec");
  top.finish();

  {  // metadata
    const std::string mp = top.child_path("metadata");
    ObjectReader m(top.require("metadata", "an object with at least a name"), mp);
    for (const char* k : {"name", "labels", "annotations"}) m.raw(k);
    m.finish();
    pool.name = m.require_string("name", "the NodePool's name, a DNS-1123 subdomain such as gpu-h100");
    if (!is_dns1123_subdomain(pool.name)) {
      throw InputError(m.child_path("name"), shown(pool.name) + " is not a valid name: lowercase letters, digits, '-' and '.', "
                                                               "starting and ending with a letter or digit (DNS-1123 subdomain)");
    }
    if (const Json* l = m.raw("labels"); l && !l->is_null()) read_string_map(*l, m.child_path("labels"), kMaxMapEntries, false);
    if (const Json* a = m.raw("annotations"); a && !a->is_null())
      read_string_map(*a, m.child_path("annotations"), kMaxMapEntries, false);
  }

  const std::string sp = top.child_path("spec");
  ObjectReader spec(top.require("spec", "the NodePoolSpec"), sp);
  reject_moved_field(spec, "replicas",
                     "static NodePools (spec.replicas, alpha since Karpenter 1.8) are not modelled by the lab; remove it");
  for (const char* k : {"template", "disruption", "limits", "weight"}) spec.raw(k);
  spec.finish();

  if (auto w = spec.get_optional_int("weight", 1, 100)) pool.weight = int(*w);
  if (const Json* l = spec.raw("limits"); l && !l->is_null()) parse_limits(*l, spec.child_path("limits"), pool);

  {  // template
    const std::string tp = spec.child_path("template");
    ObjectReader t(spec.require("template", "an object with metadata and spec"), tp);
    for (const char* k : {"metadata", "spec"}) t.raw(k);
    t.finish();
    if (const Json* md = t.raw("metadata"); md && !md->is_null()) {
      ObjectReader m(*md, t.child_path("metadata"));
      for (const char* k : {"labels", "annotations"}) m.raw(k);
      m.finish();
      if (const Json* l = m.raw("labels"); l && !l->is_null())
        pool.template_labels = read_string_map(*l, m.child_path("labels"), kMaxLabels, true);
      if (const Json* a = m.raw("annotations"); a && !a->is_null())
        pool.template_annotations = read_string_map(*a, m.child_path("annotations"), kMaxMapEntries, false);
    }
    const std::string tsp = t.child_path("spec");
    ObjectReader ts(t.require("spec", "the NodeClaim template spec: nodeClassRef and requirements"), tsp);
    reject_moved_field(ts, "kubelet", "kubelet settings moved to the EC2NodeClass (spec.kubelet) in v1");
    reject_moved_field(ts, "resources", "a NodePool template cannot set resource requests (NodeClaimTemplateSpec omits them)");
    for (const char* k : {"nodeClassRef", "requirements", "taints", "startupTaints", "expireAfter", "terminationGracePeriod"})
      ts.raw(k);
    ts.finish();

    {  // nodeClassRef
      const std::string np = ts.child_path("nodeClassRef");
      ObjectReader n(ts.require("nodeClassRef",
                             "{group, kind, name}, e.g. {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}"),
                     np);
      reject_moved_field(n, "apiVersion", "v1beta1's nodeClassRef.apiVersion is replaced by group (e.g. karpenter.k8s.aws) in v1");
      for (const char* k : {"group", "kind", "name"}) n.raw(k);
      n.finish();
      pool.node_class_ref.group = n.require_string("group", "the node class API group, e.g. karpenter.k8s.aws");
      if (pool.node_class_ref.group.find('/') != std::string::npos) {
        throw InputError(n.child_path("group"), shown(pool.node_class_ref.group) +
                                                    " must not contain '/': give the API group without a version, e.g. karpenter.k8s.aws");
      }
      pool.node_class_ref.kind = n.require_string("kind", "the node class kind, e.g. EC2NodeClass");
      pool.node_class_ref.name = n.require_string("name", "the node class's metadata.name");
    }

    {  // requirements (required by the CRD; may be an empty list)
      const std::string rp = ts.child_path("requirements");
      const Json& reqs = ts.require("requirements", "a list of node selector requirements; [] is allowed");
      expect_array(reqs, rp, kMaxRequirements);
      for (std::size_t i = 0; i < reqs.size(); ++i) pool.requirements.push_back(parse_requirement(reqs[i], rp + "/" + std::to_string(i)));
    }

    if (const Json* taints = ts.raw("taints"); taints && !taints->is_null())
      pool.taints = parse_nodepool_taints(*taints, ts.child_path("taints"));
    if (const Json* st = ts.raw("startupTaints"); st && !st->is_null())
      pool.startup_taints = parse_nodepool_taints(*st, ts.child_path("startupTaints"));
    {  // Karpenter's runtime validation: no duplicate key/effect pair across taints and startupTaints.
      std::vector<std::pair<std::string, TaintEffect>> seen;
      auto check = [&](const std::vector<Taint>& list, const std::string& field) {
        for (std::size_t i = 0; i < list.size(); ++i) {
          std::pair<std::string, TaintEffect> ke{list[i].key, list[i].effect};
          if (std::find(seen.begin(), seen.end(), ke) != seen.end()) {
            throw InputError(ts.child_path(field) + "/" + std::to_string(i),
                             "duplicate taint key/effect pair " + list[i].key + ":" + to_string(list[i].effect) +
                                 " (across taints and startupTaints)");
          }
          seen.push_back(ke);
        }
      };
      check(pool.taints, "taints");
      check(pool.startup_taints, "startupTaints");
    }

    if (const Json* ea = ts.raw("expireAfter"); ea && !ea->is_null())
      pool.expire_after = read_field_duration(*ea, ts.child_path("expireAfter"), true, DurationForm::SecondsMinutesHours);
    if (const Json* tgp = ts.raw("terminationGracePeriod"); tgp && !tgp->is_null())
      pool.termination_grace_period =
          read_field_duration(*tgp, ts.child_path("terminationGracePeriod"), false, DurationForm::SecondsMinutesHours);
  }

  if (const Json* d = spec.raw("disruption"); d && !d->is_null()) {
    const std::string dp = spec.child_path("disruption");
    ObjectReader dr(*d, dp);
    reject_moved_field(dr, "expireAfter", "expireAfter moved to spec.template.spec.expireAfter in v1");
    for (const char* k : {"consolidationPolicy", "consolidateAfter", "budgets"}) dr.raw(k);
    dr.finish();
    if (const Json* cp = dr.raw("consolidationPolicy"); cp && !cp->is_null()) {
      std::string hint = cp->is_string() && cp->get<std::string>() == "WhenUnderutilized"
                             ? " (v1beta1's WhenUnderutilized is WhenEmptyOrUnderutilized in v1)"
                             : "";
      pool.consolidation_policy = value_of(expect_enum(*cp, dr.child_path("consolidationPolicy"),
                                                       {"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"}, hint),
                                           kConsolidationPolicies);
    }
    // consolidateAfter is +required: the API server fills in 0s only when the whole disruption block is absent.
    const Json& ca = dr.require("consolidateAfter",
                             "a duration such as \"0s\", \"10m\" or \"Never\"; the API server defaults it to 0s only "
                             "when spec.disruption is absent altogether");
    pool.consolidate_after = read_field_duration(ca, dr.child_path("consolidateAfter"), true, DurationForm::SecondsMinutesHours);
    if (const Json* bs = dr.raw("budgets"); bs && !bs->is_null()) {
      const std::string bp = dr.child_path("budgets");
      expect_array(*bs, bp, kMaxBudgets);
      pool.budgets.clear();
      for (std::size_t i = 0; i < bs->size(); ++i) pool.budgets.push_back(parse_budget((*bs)[i], bp + "/" + std::to_string(i)));
    }
  }
  return pool;
}

Json nodepool_to_json(const NodePool& pool) {
  Json requirements = Json::array();
  for (const Requirement& r : pool.requirements) {
    Json j{{"key", r.key}, {"operator", to_string(r.op)}, {"values", r.values}};
    if (r.min_values > 0) j["minValues"] = r.min_values;
    requirements.push_back(j);
  }
  Json template_spec{
      {"nodeClassRef",
       {{"group", pool.node_class_ref.group}, {"kind", pool.node_class_ref.kind}, {"name", pool.node_class_ref.name}}},
      {"requirements", requirements},
      {"taints", taints_to_json(pool.taints)},
      {"startupTaints", taints_to_json(pool.startup_taints)},
      {"expireAfter", pool.expire_after ? format_duration(*pool.expire_after) : "Never"},
  };
  if (pool.termination_grace_period) template_spec["terminationGracePeriod"] = format_duration(*pool.termination_grace_period);
  Json budgets = Json::array();
  for (const DisruptionBudget& b : pool.budgets) {
    Json j{{"nodes", b.nodes}};
    if (!b.reasons.empty()) {
      Json reasons = Json::array();
      for (DisruptionReason r : b.reasons) reasons.push_back(to_string(r));
      j["reasons"] = reasons;
    }
    if (!b.schedule.empty()) j["schedule"] = b.schedule;
    if (b.duration) j["duration"] = format_duration(*b.duration);
    budgets.push_back(j);
  }
  Json spec{
      {"template",
       {{"metadata", {{"labels", Json(pool.template_labels)}, {"annotations", Json(pool.template_annotations)}}},
        {"spec", template_spec}}},
      {"disruption",
       {{"consolidationPolicy", to_string(pool.consolidation_policy)},
        {"consolidateAfter", pool.consolidate_after ? format_duration(*pool.consolidate_after) : "Never"},
        {"budgets", budgets}}},
  };
  if (pool.weight > 0) spec["weight"] = pool.weight;
  if (!pool.limits.empty()) spec["limits"] = Json(pool.limits);
  return Json{{"apiVersion", "karpenter.sh/v1"}, {"kind", "NodePool"}, {"metadata", {{"name", pool.name}}}, {"spec", spec}};
}

}  // namespace gpuscale
