// Instance catalogue, scheduling predicates and well-known labels (see cluster.hpp).
#include "cluster/cluster.hpp"

#include <algorithm>
#include <cstdlib>

#include "k8s/quantity.hpp"

namespace gpuscale {

extern const char* const kInstanceTypesJson;
extern const char* const kClusterPresetsJson;

std::vector<InstanceType> parse_instance_types(const Json& doc, const std::string& path) {
  std::vector<InstanceType> out;
  expect_array(doc, path, 100);  // bounds the offerings Karpenter simulates: types × 2 capacity types × zones
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    InstanceType t;
    t.name = r.get_string("name", "");
    if (t.name.empty()) throw InputError(p + "/name", "every instance type needs a name");
    t.family = r.get_string("family", t.name.substr(0, t.name.find('.')));
    t.gpus = static_cast<int>(r.get_int("gpus", 0, 0, 64));
    t.gpu_name = r.get_string("gpu_name", "");
    t.gpu_manufacturer = r.get_string("gpu_manufacturer", t.gpus > 0 ? "nvidia" : "");
    t.gpu_memory_mib = r.get_int("gpu_memory_mib", 0, 0, 1 << 22);
    t.nvlink_domain = static_cast<int>(r.get_int("nvlink_domain", 0, 0, 1024));
    t.vcpu = static_cast<int>(r.get_int("vcpu", 1, 1, 4096));
    t.memory_gib = r.get_number("memory_gib", 1, 0.5, 65536);
    t.arch = r.get_enum("arch", "amd64", {"amd64", "arm64"});
    if (const Json* z = r.raw("zones")) {
      expect_array(*z, p + "/zones", 8);
      for (std::size_t k = 0; k < z->size(); ++k) {
        if (!(*z)[k].is_string()) throw InputError(p + "/zones/" + std::to_string(k), "expected a zone name");
        t.zones.push_back((*z)[k].get<std::string>());
      }
    }
    if (t.zones.empty()) t.zones.push_back("zone-a");
    t.on_demand_usd_per_hour = r.get_number("on_demand_usd_per_hour", 0, 0, 10000);
    t.spot_usd_per_hour = r.get_number("spot_usd_per_hour", 0, 0, 10000);
    t.source = r.get_string("source", "", 4096);
    r.finish();
    for (const auto& other : out) {
      if (other.name == t.name) throw InputError(p + "/name", "\"" + t.name + "\" appears twice");
    }
    out.push_back(std::move(t));
  }
  return out;
}

const std::vector<InstanceType>& default_instance_types() {
  static const std::vector<InstanceType> types = parse_instance_types(Json::parse(kInstanceTypesJson), "/instance_types");
  return types;
}

Json default_instance_types_json() { return Json::parse(kInstanceTypesJson); }

const Json& cluster_presets() {
  static const Json presets = Json::parse(kClusterPresetsJson).at("presets");
  return presets;
}

const InstanceType* find_instance_type(const std::vector<InstanceType>& types, const std::string& name) {
  for (const auto& t : types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool tolerates(const Toleration& t, const Taint& taint) {
  // core/v1 Toleration.ToleratesTaint: effects must match unless the toleration's is empty; an empty
  // key with Exists matches every key; Exists ignores the value, Equal (the default) compares it.
  if (!t.effect.empty() && t.effect != taint.effect) return false;
  if (t.key.empty()) return t.op == "Exists";
  if (t.key != taint.key) return false;
  return t.op == "Exists" || t.value == taint.value;
}

bool tolerates_all(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints) {
  for (const Taint& taint : taints) {
    if (taint.effect == "PreferNoSchedule") continue;  // a preference, never a filter
    bool ok = false;
    for (const Toleration& t : tolerations) {
      if (tolerates(t, taint)) {
        ok = true;
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

namespace {
bool parse_int(const std::string& s, long long& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return end && *end == '\0';
}
}  // namespace

bool matches(const Requirement& r, const Labels& labels) {
  auto it = labels.find(r.key);
  const bool has = it != labels.end();
  const auto in_values = [&] { return has && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end(); };
  if (r.op == "In") return in_values();
  if (r.op == "NotIn") return !in_values();  // an absent label satisfies NotIn (core/v1 semantics)
  if (r.op == "Exists") return has;
  if (r.op == "DoesNotExist") return !has;
  if (r.op == "Gt" || r.op == "Lt" || r.op == "Gte" || r.op == "Lte") {
    long long have = 0, want = 0;
    if (!has || r.values.size() != 1 || !parse_int(it->second, have) || !parse_int(r.values[0], want)) return false;
    if (r.op == "Gt") return have > want;
    if (r.op == "Lt") return have < want;
    if (r.op == "Gte") return have >= want;
    return have <= want;
  }
  return false;
}

bool matches_all(const std::vector<Requirement>& rs, const Labels& labels) {
  for (const auto& r : rs) {
    if (!matches(r, labels)) return false;
  }
  return true;
}

Labels instance_labels(const InstanceType& type, const std::string& capacity_type, const std::string& zone) {
  Labels l;
  l["node.kubernetes.io/instance-type"] = type.name;
  l["karpenter.k8s.aws/instance-family"] = type.family;
  l["karpenter.k8s.aws/instance-cpu"] = std::to_string(type.vcpu);
  l["karpenter.k8s.aws/instance-memory"] = std::to_string(static_cast<long long>(type.memory_gib * 1024));
  // The AWS provider sets the GPU labels only on types that have GPUs (so DoesNotExist selects CPU types).
  if (type.gpus > 0) {
    l["karpenter.k8s.aws/instance-gpu-count"] = std::to_string(type.gpus);
    l["karpenter.k8s.aws/instance-gpu-name"] = type.gpu_name;
    l["karpenter.k8s.aws/instance-gpu-manufacturer"] = type.gpu_manufacturer;
    l["karpenter.k8s.aws/instance-gpu-memory"] = std::to_string(type.gpu_memory_mib);
    l["k8s.amazonaws.com/accelerator"] = type.gpu_name;  // the GPU label Cluster Autoscaler looks for on AWS
  }
  l["kubernetes.io/arch"] = type.arch;
  l["kubernetes.io/os"] = "linux";
  l["topology.kubernetes.io/zone"] = zone;
  l["karpenter.sh/capacity-type"] = capacity_type;
  return l;
}

// EKS kubelet reservations (amazon-eks-ami bootstrap): CPU 6 % of the first core, 1 % of the second,
// 0.5 % of cores 3–4, 0.25 % of the rest; memory 255 MiB + 11 MiB per max pod (110 pods assumed) plus
// the 100 MiB eviction threshold.
std::int64_t allocatable_cpu_milli(const InstanceType& type) {
  const std::int64_t cores = type.vcpu;
  std::int64_t reserved = 60;
  if (cores >= 2) reserved += 10;
  if (cores >= 3) reserved += 5 * std::min<std::int64_t>(cores - 2, 2);
  if (cores > 4) reserved += (cores - 4) * 25 / 10;
  return cores * 1000 - reserved;
}

std::int64_t allocatable_memory_mib(const InstanceType& type) {
  const auto total = static_cast<std::int64_t>(type.memory_gib * 1024);
  return total - (255 + 11 * 110) - 100;
}

static bool fits_resources(const PodTemplate& pod, int gpus_free, std::int64_t cpu_free, std::int64_t mem_free) {
  return pod.gpus <= gpus_free && pod.cpu_milli <= cpu_free && pod.memory_mib <= mem_free;
}

static bool fits_constraints(const PodTemplate& pod, const Labels& labels, const std::vector<Taint>& taints) {
  if (!tolerates_all(pod.tolerations, taints)) return false;
  for (const auto& [k, v] : pod.node_selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return matches_all(pod.required_affinity, labels);
}

bool pod_fits_node(const ClusterState& cluster, const PodTemplate& pod, const Node& node) {
  (void)cluster;
  if (node.disrupted) return false;
  // A GPU pod needs the GPUs advertised (Initialized); other pods can land once the node is Registered
  // and its startup taints are tolerated or gone.
  if (node.phase == NodePhase::Initialized) {
    // ok
  } else if (node.phase == NodePhase::Registered && pod.gpus == 0) {
    // ok
  } else {
    return false;
  }
  if (!fits_resources(pod, node.gpus_allocatable - node.gpus_requested, node.cpu_allocatable_milli - node.cpu_requested_milli,
                      node.memory_allocatable_mib - node.memory_requested_mib)) {
    return false;
  }
  return fits_constraints(pod, node.labels, node.taints);
}

bool pod_fits_type(const PodTemplate& pod, const InstanceType& type, const Labels& labels, const std::vector<Taint>& taints) {
  return fits_resources(pod, type.gpus, allocatable_cpu_milli(type), allocatable_memory_mib(type)) &&
         fits_constraints(pod, labels, taints);
}

}  // namespace gpuscale

// ---- parsing ------------------------------------------------------------------------------------

namespace gpuscale {

std::vector<Taint> parse_taints(const Json& doc, const std::string& path) {
  std::vector<Taint> out;
  expect_array(doc, path, 64);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Taint t;
    t.key = r.get_string("key", "");
    if (t.key.empty()) throw InputError(p + "/key", "a taint needs a key");
    t.value = r.get_string("value", "");
    const Json* e = r.raw("effect");
    if (!e) throw InputError(p + "/effect", "a taint needs an effect: \"NoSchedule\", \"PreferNoSchedule\" or \"NoExecute\"");
    t.effect = r.get_enum("effect", "", {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    r.get_string("timeAdded", "");
    r.finish();
    out.push_back(t);
  }
  return out;
}

Json taints_to_json(const std::vector<Taint>& taints) {
  Json out = Json::array();
  for (const auto& t : taints) {
    Json j{{"key", t.key}, {"effect", t.effect}};
    if (!t.value.empty()) j["value"] = t.value;
    out.push_back(j);
  }
  return out;
}

std::vector<Toleration> parse_tolerations(const Json& doc, const std::string& path) {
  std::vector<Toleration> out;
  expect_array(doc, path, 64);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Toleration t;
    t.key = r.get_string("key", "");
    t.op = r.get_enum("operator", "Equal", {"Equal", "Exists"});
    t.value = r.get_string("value", "");
    t.effect = r.get_enum("effect", "", {"", "NoSchedule", "PreferNoSchedule", "NoExecute"});
    r.get_optional_number("tolerationSeconds", 0, 1e12);
    r.finish();
    if (t.op == "Exists" && !t.value.empty()) throw InputError(p + "/value", "must be empty with operator Exists");
    if (t.key.empty() && t.op != "Exists") throw InputError(p + "/operator", "an empty key needs operator Exists");
    out.push_back(t);
  }
  return out;
}

std::vector<Requirement> parse_requirements(const Json& doc, const std::string& path) {
  std::vector<Requirement> out;
  expect_array(doc, path, 100);
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    Requirement q;
    q.key = r.get_string("key", "");
    if (q.key.empty()) throw InputError(p + "/key", "a requirement needs a key");
    if (!r.has("operator")) throw InputError(p + "/operator", "required: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte");
    q.op = r.get_enum("operator", "", {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"});
    if (const Json* v = r.raw("values")) {
      expect_array(*v, p + "/values", 1000);
      for (std::size_t k = 0; k < v->size(); ++k) {
        if (!(*v)[k].is_string()) throw InputError(p + "/values/" + std::to_string(k), "expected a string");
        q.values.push_back((*v)[k].get<std::string>());
      }
    }
    q.min_values = static_cast<int>(r.get_int("minValues", 0, 0, 50));
    r.finish();
    const bool set_op = q.op == "In" || q.op == "NotIn";
    const bool exist_op = q.op == "Exists" || q.op == "DoesNotExist";
    if (set_op && q.values.empty()) throw InputError(p + "/values", "operator " + q.op + " needs at least one value");
    if (exist_op && !q.values.empty()) throw InputError(p + "/values", "operator " + q.op + " takes no values");
    if (!set_op && !exist_op) {
      long long n = 0;
      if (q.values.size() != 1 || !parse_int(q.values[0], n)) {
        throw InputError(p + "/values", "operator " + q.op + " needs exactly one integer value");
      }
    }
    out.push_back(std::move(q));
  }
  return out;
}

PodTemplate parse_pod_template(const Json& doc, const std::string& path, const std::string& name, PodTemplate t) {
  ObjectReader r(doc, path);
  t.name = name;
  if (const Json* v = r.raw("cpu")) t.cpu_milli = quantity_milli(*v, path + "/cpu");
  if (const Json* v = r.raw("memory")) t.memory_mib = quantity_mib(*v, path + "/memory");
  t.gpus = static_cast<int>(r.get_int("gpus", t.gpus, 0, 64));
  if (const Json* v = r.raw("tolerations")) t.tolerations = parse_tolerations(*v, path + "/tolerations");
  if (const Json* v = r.raw("nodeSelector")) {
    const Json& sel = expect_object(*v, path + "/nodeSelector");
    t.node_selector.clear();
    for (auto it = sel.begin(); it != sel.end(); ++it) {
      if (!it.value().is_string()) throw InputError(path + "/nodeSelector/" + it.key(), "expected a string");
      t.node_selector[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* v = r.raw("affinity")) {
    const std::string a = path + "/affinity";
    ObjectReader ar(*v, a);
    if (const Json* na = ar.raw("nodeAffinity")) {
      ObjectReader nr(*na, a + "/nodeAffinity");
      const std::string key = "requiredDuringSchedulingIgnoredDuringExecution";
      if (const Json* req = nr.raw(key)) {
        ObjectReader rr(*req, a + "/nodeAffinity/" + key);
        if (const Json* terms = rr.raw("nodeSelectorTerms")) {
          const std::string tp = a + "/nodeAffinity/" + key + "/nodeSelectorTerms";
          expect_array(*terms, tp, 1);  // the lab models one term (terms are ORed in Kubernetes)
          if (!terms->empty()) {
            ObjectReader tr((*terms)[0], tp + "/0");
            if (const Json* m = tr.raw("matchExpressions")) t.required_affinity = parse_requirements(*m, tp + "/0/matchExpressions");
            tr.finish();
          }
        }
        rr.finish();
      }
      nr.finish();
    }
    ar.finish();
  }
  if (const Json* v = r.raw("annotations")) {
    const Json& ann = expect_object(*v, path + "/annotations");
    for (auto it = ann.begin(); it != ann.end(); ++it) {
      if (it.key() == "karpenter.sh/do-not-disrupt") {
        if (!it.value().is_string()) throw InputError(path + "/annotations/" + it.key(), "expected \"true\" or a duration string");
        t.do_not_disrupt = it.value().get<std::string>() != "false";
      }
    }
  }
  t.priority = static_cast<int>(r.get_int("priority", t.priority, -1000000000, 1000000000));
  r.finish();
  return t;
}

}  // namespace gpuscale

namespace gpuscale {

namespace {

// intstr.GetScaledValueFromIntOrPercent(value, total, roundUp = true).
std::int64_t scaled(const std::string& value, std::int64_t total) {
  const bool percent = !value.empty() && value.back() == '%';
  std::int64_t v = 0;
  for (std::size_t i = 0; i + (percent ? 1 : 0) < value.size(); ++i) v = v * 10 + (value[i] - '0');
  return percent ? (v * total + 99) / 100 : v;
}

}  // namespace

PdbStatus pdb_status(const ClusterState& state) {
  PdbStatus s;
  if (!state.inference_pdb) return s;
  const PdbSpec& pdb = *state.inference_pdb;
  std::int64_t pods = 0;
  for (const auto& p : state.pods) {
    if (p.owner < 0 || p.phase == PodPhase::Gone) continue;
    ++pods;
    if (p.ready && p.phase == PodPhase::Bound) ++s.current_healthy;
  }
  const bool percent = !pdb.value.empty() && pdb.value.back() == '%';
  s.expected = pdb.min_available && !percent ? pods : state.expected_replicas;
  s.desired_healthy = pdb.min_available ? scaled(pdb.value, s.expected) : s.expected - scaled(pdb.value, s.expected);
  s.desired_healthy = std::max<std::int64_t>(0, s.desired_healthy);
  s.disruptions_allowed = std::max<std::int64_t>(0, s.current_healthy - s.desired_healthy);
  return s;
}

bool pdb_allows_eviction(const ClusterState& state, const Pod& pod, std::string* why) {
  if (!state.inference_pdb || pod.owner < 0) return true;
  const PdbStatus s = pdb_status(state);
  // pkg/registry/core/pod/storage/eviction.go: a healthy pod needs disruptionsAllowed > 0; an unhealthy
  // one (not Ready) may go if the budget is met (IfHealthyBudget) or always (AlwaysAllow).
  const bool ok = pod.ready ? s.disruptions_allowed > 0
                            : (state.inference_pdb->always_allow_unhealthy || s.current_healthy >= s.desired_healthy);
  if (!ok && why) {
    *why = "PodDisruptionBudget " + pdb_text(*state.inference_pdb) + ": " + std::to_string(s.current_healthy) +
           " healthy, " + std::to_string(s.desired_healthy) + " desired → disruptionsAllowed " +
           std::to_string(s.disruptions_allowed);
  }
  return ok;
}

std::string pdb_text(const PdbSpec& pdb) { return std::string(pdb.min_available ? "minAvailable " : "maxUnavailable ") + pdb.value; }

PdbSpec parse_pdb(const Json& doc, const std::string& path) {
  ObjectReader r(doc, path);
  PdbSpec pdb;
  const Json* min = r.raw("minAvailable");
  const Json* max = r.raw("maxUnavailable");
  const std::string policy = r.get_enum("unhealthyPodEvictionPolicy", "IfHealthyBudget", {"IfHealthyBudget", "AlwaysAllow"});
  r.finish();
  if ((min != nullptr) == (max != nullptr)) {
    throw InputError(path, "give exactly one of minAvailable and maxUnavailable (policy/v1 allows one)");
  }
  const Json& v = min ? *min : *max;
  const std::string field = path + (min ? "/minAvailable" : "/maxUnavailable");
  pdb.min_available = min != nullptr;
  pdb.always_allow_unhealthy = policy == "AlwaysAllow";
  if (v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 100000) {
    pdb.value = std::to_string(v.get<std::int64_t>());
  } else if (v.is_string()) {
    const std::string t = v.get<std::string>();
    bool ok = t.size() >= 2 && t.size() <= 4 && t.back() == '%';
    for (std::size_t i = 0; ok && i + 1 < t.size(); ++i) ok = t[i] >= '0' && t[i] <= '9';
    if (!ok || std::stoi(t.substr(0, t.size() - 1)) > 100) {
      throw InputError(field, "\"" + t.substr(0, 32) + "\" is not allowed; expected a whole number or a percentage such as \"25%\"");
    }
    pdb.value = t;
  } else {
    throw InputError(field, "expected a whole number (0 … 100000) or a percentage string such as \"25%\"");
  }
  return pdb;
}

}  // namespace gpuscale
