// A Karpenter NodePool (karpenter.sh/v1) as a plain struct, its strict parser with field-path errors,
// and the GPU-pool lint the lab adds on top (real-systems.md §3.3, §3.4).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscale/cluster.hpp"
#include "gpuscale/json_reader.hpp"
#include "gpuscale/time.hpp"

namespace gpuscale {

struct DisruptionBudget {
  std::string nodes = "10%";          // "N" or "P%" (percentages round up)
  std::vector<std::string> reasons;   // subset of Underutilized, Empty, Drifted; empty = all
  std::string schedule;               // cron, UTC (optional; needs duration)
  std::optional<Micros> duration;     // with schedule
};

struct NodePool {
  std::string name;                          // metadata.name
  int weight = 0;                            // spec.weight, 1..100 (unset = 0)
  // spec.limits: a ResourceList; absent = unlimited. Keys used by the simulator:
  std::optional<std::int64_t> limit_gpus;    // nvidia.com/gpu
  std::optional<std::int64_t> limit_cpu_milli;  // cpu
  std::optional<std::int64_t> limit_memory_mib; // memory
  std::optional<std::int64_t> limit_nodes;   // nodes
  Labels template_labels;                    // spec.template.metadata.labels
  std::vector<Requirement> requirements;     // spec.template.spec.requirements
  std::vector<Taint> taints;                 // spec.template.spec.taints
  std::vector<Taint> startup_taints;         // spec.template.spec.startupTaints
  std::optional<Micros> expire_after = 720LL * 3600 * kMicrosPerSecond;  // nullopt = "Never"
  std::optional<Micros> termination_grace_period;  // nullopt = wait forever
  // spec.disruption
  std::string consolidation_policy = "WhenEmptyOrUnderutilized";  // | "WhenEmpty" | "Balanced"
  std::optional<Micros> consolidate_after = 0;  // nullopt = "Never"
  std::vector<DisruptionBudget> budgets = {DisruptionBudget{}};
};

struct NodePoolWarning {
  std::string path;     // JSON path of the field the warning is about
  std::string code;     // e.g. "consolidation-evicts-replicas"
  std::string message;
};

// Parses a karpenter.sh/v1 NodePool object (apiVersion, kind, metadata, spec). Unknown fields,
// wrong enums and malformed durations ("1hr") are InputErrors naming the JSON path.
NodePool parse_nodepool(const Json& doc, const std::string& path);
// Kubernetes/Go durations as Karpenter accepts them ("30s", "10m", "1h30m", "720h"); "Never" only
// where the field allows it (the caller handles that word).
Micros parse_duration(const std::string& text, const std::string& path);
// GPU-pool lint: advice, not errors (WhenEmptyOrUnderutilized on a GPU pool, consolidateAfter 0s,
// no GPU taint, spot for a latency SLO, no limits, ...).
std::vector<NodePoolWarning> lint_nodepool(const NodePool& pool, const Json& doc);

// `gpuscale nodepool check` / WASM nodepool_check: {"valid", "nodepool" (normalised), "warnings"} or an InputError.
Json check_nodepool_document(const Json& doc);

}  // namespace gpuscale
