// PodDisruptionBudgets (see pdb.hpp).
#include "k8s/pdb.hpp"

#include <algorithm>

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

PdbStatus pdb_status(const PdbSpec& pdb, std::int64_t pods, std::int64_t healthy, std::int64_t expected_replicas) {
  PdbStatus s;
  s.current_healthy = healthy;
  const bool percent = !pdb.value.empty() && pdb.value.back() == '%';
  s.expected = pdb.min_available && !percent ? pods : expected_replicas;
  s.desired_healthy = pdb.min_available ? scaled(pdb.value, s.expected) : s.expected - scaled(pdb.value, s.expected);
  s.desired_healthy = std::max<std::int64_t>(0, s.desired_healthy);
  s.disruptions_allowed = std::max<std::int64_t>(0, s.current_healthy - s.desired_healthy);
  return s;
}

bool pdb_allows_eviction(const PdbSpec& pdb, const PdbStatus& s, bool pod_ready, std::string* why) {
  const bool ok = pod_ready ? s.disruptions_allowed > 0 : (pdb.always_allow_unhealthy || s.current_healthy >= s.desired_healthy);
  if (!ok && why) {
    *why = "PodDisruptionBudget " + pdb_text(pdb) + ": " + std::to_string(s.current_healthy) + " healthy, " +
           std::to_string(s.desired_healthy) + " desired → disruptionsAllowed " + std::to_string(s.disruptions_allowed);
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
