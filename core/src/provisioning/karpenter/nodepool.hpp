// A Karpenter NodePool (karpenter.sh/v1) as a plain struct, its strict parser with field-path errors,
// and the GPU-pool lint the lab adds on top (real-systems.md §3.3, §3.4).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "k8s/constraints.hpp"
#include "k8s/cron.hpp"
#include "k8s/duration.hpp"
#include "io/json_reader.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// spec.disruption.consolidationPolicy.
enum class ConsolidationPolicy : std::uint8_t { WhenEmpty, WhenEmptyOrUnderutilized, Balanced };
inline constexpr Named<ConsolidationPolicy> kConsolidationPolicies[] = {{"WhenEmpty", ConsolidationPolicy::WhenEmpty},
                                                                       {"WhenEmptyOrUnderutilized", ConsolidationPolicy::WhenEmptyOrUnderutilized},
                                                                       {"Balanced", ConsolidationPolicy::Balanced}};
inline const char* to_string(ConsolidationPolicy p) { return name_of(p, kConsolidationPolicies); }

// The reasons a budget may limit (karpenter.sh/v1 DisruptionReason).
enum class DisruptionReason : std::uint8_t { Underutilized, Empty, Drifted };
inline constexpr Named<DisruptionReason> kDisruptionReasons[] = {
    {"Underutilized", DisruptionReason::Underutilized}, {"Empty", DisruptionReason::Empty}, {"Drifted", DisruptionReason::Drifted}};
inline const char* to_string(DisruptionReason r) { return name_of(r, kDisruptionReasons); }

struct DisruptionBudget {
  std::string nodes = "10%";               // "N" or "P%" (percentages round up)
  std::vector<DisruptionReason> reasons;   // empty = all
  std::string schedule;               // cron, UTC (optional; needs duration)
  std::optional<Micros> duration;     // with schedule
  std::optional<CronSchedule> cron;   // `schedule`, parsed
};

// spec.template.spec.nodeClassRef (all three required in v1).
struct NodeClassRef {
  std::string group;  // e.g. "karpenter.k8s.aws"
  std::string kind;   // e.g. "EC2NodeClass"
  std::string name;   // e.g. "gpu"
};

struct NodePool {
  std::string name;                          // metadata.name
  int weight = 0;                            // spec.weight, 1..100 (unset = 0)
  // spec.limits: a ResourceList; absent = unlimited. Keys used by the simulator:
  std::optional<std::int64_t> limit_gpus;    // nvidia.com/gpu
  std::optional<std::int64_t> limit_cpu_milli;  // cpu
  std::optional<std::int64_t> limit_memory_mib; // memory
  std::optional<std::int64_t> limit_nodes;   // nodes
  std::map<std::string, std::string> limits; // spec.limits as written (quantity text), every resource name
  Labels template_labels;                    // spec.template.metadata.labels
  Labels template_annotations;               // spec.template.metadata.annotations
  NodeClassRef node_class_ref;               // spec.template.spec.nodeClassRef
  std::vector<Requirement> requirements;     // spec.template.spec.requirements
  std::vector<Taint> taints;                 // spec.template.spec.taints
  std::vector<Taint> startup_taints;         // spec.template.spec.startupTaints
  std::optional<Micros> expire_after = 720LL * 3600 * kMicrosPerSecond;  // nullopt = "Never"
  std::optional<Micros> termination_grace_period;  // nullopt = wait forever
  // spec.disruption
  ConsolidationPolicy consolidation_policy = ConsolidationPolicy::WhenEmptyOrUnderutilized;
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
// Does a requirement list select instance types with GPUs (instance-gpu-count Gt 0, a GPU name,
// manufacturer or memory, a p/g instance family or category, a GPU instance type)?
bool selects_gpu_instances(const std::vector<Requirement>& requirements);
// The NodePool as karpenter.sh/v1 JSON, defaults filled in (the `nodepool` of check_nodepool_document).
Json nodepool_to_json(const NodePool& pool);
// GPU-pool lint: advice, not errors (WhenEmptyOrUnderutilized on a GPU pool, consolidateAfter 0s,
// no GPU taint, spot for a latency SLO, no limits, ...).
std::vector<NodePoolWarning> lint_nodepool(const NodePool& pool, const Json& doc);

// `gpuscale nodepool check` / WASM nodepool_check: {"valid", "nodepool" (normalised), "warnings"} or an InputError.
Json check_nodepool_document(const Json& doc);

}  // namespace gpuscale
