// PodDisruptionBudgets (policy/v1): the spec, and the disruption controller's and the Eviction API's
// arithmetic as pure functions over the counts they read.
#pragma once
#include <cstdint>
#include <string>

#include "io/json_reader.hpp"

namespace gpuscale {

struct PdbSpec {
  bool min_available = false;           // minAvailable, else maxUnavailable
  std::string value;                    // "N" or "P%"
  bool always_allow_unhealthy = false;  // unhealthyPodEvictionPolicy AlwaysAllow (default IfHealthyBudget)
};

// The disruption controller's arithmetic (pkg/controller/disruption): expected = the Deployment's
// spec.replicas (for maxUnavailable and percentages) or the pod count (integer minAvailable);
// desiredHealthy = minAvailable, or expected − maxUnavailable (percentages round up); currentHealthy =
// Ready pods not being deleted; disruptionsAllowed = max(0, currentHealthy − desiredHealthy).
struct PdbStatus {
  std::int64_t expected = 0, desired_healthy = 0, current_healthy = 0, disruptions_allowed = 0;
};
PdbStatus pdb_status(const PdbSpec& pdb, std::int64_t pods, std::int64_t healthy, std::int64_t expected_replicas);

// The Eviction API's answer for one pod the budget covers (pkg/registry/core/pod/storage/eviction.go):
// a healthy pod needs disruptionsAllowed > 0; an unhealthy one (not Ready) may go if the budget is met
// (IfHealthyBudget) or always (AlwaysAllow). When refused (429 TooManyRequests), `why` says why.
bool pdb_allows_eviction(const PdbSpec& pdb, const PdbStatus& status, bool pod_ready, std::string* why = nullptr);

// "minAvailable 3" or "maxUnavailable 25%"; and the strict parse of {minAvailable|maxUnavailable, unhealthyPodEvictionPolicy}.
std::string pdb_text(const PdbSpec& pdb);
PdbSpec parse_pdb(const Json& doc, const std::string& path);

}  // namespace gpuscale
