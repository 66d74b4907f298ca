// Layer 1's world: instance types, nodes, pods and the scheduling constraints between them
// (taints, tolerations, node selectors, required node affinity). Plain data plus the predicates the
// scheduler and the node provisioners share. Controllers (kube-scheduler, Karpenter, Cluster
// Autoscaler) read a ClusterState and return decisions; only the simulation loop mutates it.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// ---- the instance catalogue ---------------------------------------------------------------------

struct InstanceType {
  std::string name;                 // node.kubernetes.io/instance-type, e.g. "p5.48xlarge"
  std::string family;               // karpenter.k8s.aws/instance-family, e.g. "p5"
  int gpus = 0;                     // nvidia.com/gpu allocatable
  std::string gpu_name;             // karpenter.k8s.aws/instance-gpu-name, e.g. "h100" ("" for none)
  std::string gpu_manufacturer;     // karpenter.k8s.aws/instance-gpu-manufacturer, e.g. "nvidia"
  std::int64_t gpu_memory_mib = 0;  // karpenter.k8s.aws/instance-gpu-memory: MiB per GPU
  int nvlink_domain = 0;            // GPUs per NVLink domain (0: none)
  int vcpu = 0;                     // vCPUs (allocatable CPU is a little lower; see allocatable_cpu_milli)
  double memory_gib = 0;            // GiB
  std::string arch = "amd64";       // kubernetes.io/arch
  std::vector<std::string> zones;   // topology.kubernetes.io/zone values it is offered in
  double on_demand_usd_per_hour = 0;  // USD/h
  double spot_usd_per_hour = 0;       // USD/h; 0 = not offered as spot
  std::string source;               // where the numbers come from
};

// The default catalogue: data/instance-types.json, embedded into the core at build time.
const std::vector<InstanceType>& default_instance_types();
// The same catalogue as JSON (to edit prices or types in a scenario).
Json default_instance_types_json();
// The named layer-1 setups of `cluster.preset` (data/cluster-presets.json, embedded): an array of
// {name, label, cluster}, where `cluster` is a scenario's cluster object.
const Json& cluster_presets();
// Strict parse of a catalogue (an array of instance types) with path-named errors.
std::vector<InstanceType> parse_instance_types(const Json& doc, const std::string& path);
const InstanceType* find_instance_type(const std::vector<InstanceType>& types, const std::string& name);

// ---- scheduling constraints (core/v1 field names and semantics) ----------------------------------

using Labels = std::map<std::string, std::string>;

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // "NoSchedule" | "PreferNoSchedule" | "NoExecute"
};

struct Toleration {
  std::string key;               // empty with operator Exists: tolerates every taint
  std::string op = "Equal";      // "operator": "Equal" | "Exists"
  std::string value;
  std::string effect;            // empty: every effect
};

// A node selector requirement (core/v1 NodeSelectorRequirement, also Karpenter's requirements).
struct Requirement {
  std::string key;
  std::string op;                  // "operator": In | NotIn | Exists | DoesNotExist | Gt | Lt | Gte | Lte
  std::vector<std::string> values;
  int min_values = 0;              // Karpenter's minValues (0: unset)
};

bool tolerates(const Toleration& t, const Taint& taint);
// True if every NoSchedule / NoExecute taint is tolerated (PreferNoSchedule never blocks).
bool tolerates_all(const std::vector<Toleration>& tolerations, const std::vector<Taint>& taints);
bool matches(const Requirement& r, const Labels& labels);
bool matches_all(const std::vector<Requirement>& rs, const Labels& labels);

// The well-known labels a node of this type gets (instance type, family, GPU count/name/manufacturer/
// memory, arch, zone, capacity type, OS).
Labels instance_labels(const InstanceType& type, const std::string& capacity_type, const std::string& zone);

// ---- pods ------------------------------------------------------------------------------------------

// What a pod asks for and where it may go. One template per workload (inference replicas, a CPU web
// tier, ...); the simulation creates pods from templates.
struct PodTemplate {
  std::string name;                      // e.g. "vllm", "web"
  int gpus = 0;                          // nvidia.com/gpu request
  std::int64_t cpu_milli = 0;            // cpu request, millicores
  std::int64_t memory_mib = 0;           // memory request, MiB
  std::vector<Toleration> tolerations;
  Labels node_selector;                  // spec.nodeSelector
  std::vector<Requirement> required_affinity;  // requiredDuringScheduling... nodeSelectorTerms[0].matchExpressions
  bool do_not_disrupt = false;           // karpenter.sh/do-not-disrupt: "true"
  int priority = 0;
};

enum class PodPhase : std::uint8_t { Pending, Bound, Terminating, Gone };

struct Pod {
  std::uint32_t id = 0;
  int template_index = 0;     // into ClusterState::templates
  std::int32_t owner = -1;    // the inference replica it belongs to (-1: another workload)
  PodPhase phase = PodPhase::Pending;
  std::int32_t node = -1;     // bound node id, -1 while Pending
  Micros created_at = 0;
  Micros unschedulable_since = -1;  // PodScheduled=False, reason Unschedulable, since then (-1: not marked)
  bool ready = false;         // condition Ready (inference replicas: serving); set by the simulation
};

// A PodDisruptionBudget (policy/v1) over the inference replicas' pods.
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

// ---- nodes -----------------------------------------------------------------------------------------

enum class NodePhase : std::uint8_t {
  Launched,     // NodeClaim launched: the instance is booting
  Registered,   // joined the cluster; GPUs not advertised yet (device plugin starting): not schedulable for GPU pods
  Initialized,  // Ready, startup taints gone, every extended resource registered
  Terminating,  // being drained / deleted
  Terminated,
};

struct Node {
  std::uint32_t id = 0;
  int type_index = 0;              // into ClusterState::types
  std::string capacity_type;       // "on-demand" | "spot"
  std::string zone;
  std::string owner;               // the NodePool (Karpenter) or node group (Cluster Autoscaler) that made it
  Labels labels;
  std::vector<Taint> taints;       // includes startup taints until initialized (the last `startup_taints` of them)
  int startup_taints = 0;
  NodePhase phase = NodePhase::Launched;
  Micros launched_at = 0;
  Micros registered_at = -1;
  Micros initialized_at = -1;
  Micros terminated_at = -1;
  Micros last_pod_event_at = -1;   // a pod bound to or removed from it (consolidateAfter counts from here)
  Micros expires_at = -1;          // expireAfter deadline (-1: never)
  double price_usd_per_hour = 0;   // by capacity type
  bool do_not_disrupt = false;     // karpenter.sh/do-not-disrupt on the Node
  bool disrupted = false;          // tainted karpenter.sh/disrupted:NoSchedule (being replaced / drained)
  std::vector<std::uint32_t> pods; // bound pods (not Gone)
  // Allocatable and requested, kept up to date by bind / unbind.
  int gpus_allocatable = 0;
  std::int64_t cpu_allocatable_milli = 0, memory_allocatable_mib = 0;
  int gpus_requested = 0;
  std::int64_t cpu_requested_milli = 0, memory_requested_mib = 0;
};

struct ClusterState {
  std::vector<InstanceType> types;
  std::vector<PodTemplate> templates;
  std::vector<Node> nodes;   // by id; terminated nodes stay (ids are indices)
  std::vector<Pod> pods;     // by id; gone pods stay
  std::optional<PdbSpec> inference_pdb;  // over the pods with an owner (the replicas)
  std::int32_t expected_replicas = 0;    // the inference Deployment's spec.replicas
};

PdbStatus pdb_status(const ClusterState& state);
// The Eviction API's answer for one pod: allowed, or why not (429 TooManyRequests). Pods the PDB
// does not cover (no owner) are always allowed.
bool pdb_allows_eviction(const ClusterState& state, const Pod& pod, std::string* why = nullptr);
// "minAvailable 3" or "maxUnavailable 25%"; and the parse of a scenario's cluster.inference_pdb.
std::string pdb_text(const PdbSpec& pdb);
PdbSpec parse_pdb(const Json& doc, const std::string& path);

// A pod spec in Kubernetes terms, strictly parsed: {"cpu": "16", "memory": "200Gi", "gpus": 2,
// "tolerations": [...], "nodeSelector": {...}, "affinity": {"nodeAffinity": {"requiredDuringScheduling
// IgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [...]}]}}},
// "annotations": {"karpenter.sh/do-not-disrupt": "true"}, "priority": 0}.
PodTemplate parse_pod_template(const Json& doc, const std::string& path, const std::string& name, PodTemplate defaults);
std::vector<Taint> parse_taints(const Json& doc, const std::string& path);
std::vector<Toleration> parse_tolerations(const Json& doc, const std::string& path);
std::vector<Requirement> parse_requirements(const Json& doc, const std::string& path);
Json taints_to_json(const std::vector<Taint>& taints);

// Allocatable resources of a type, after the kubelet's reservations (EKS formula for CPU and memory,
// documented in the .cpp). GPUs are all allocatable.
std::int64_t allocatable_cpu_milli(const InstanceType& type);
std::int64_t allocatable_memory_mib(const InstanceType& type);

// Does the pod fit on the node now: phase (Initialized, or Registered for pods that ask no GPU),
// not disrupted, resources left, taints tolerated, selector and required affinity matched.
bool pod_fits_node(const ClusterState& cluster, const PodTemplate& pod, const Node& node);
// Would the pod fit on an empty node of this type with these labels and taints (a template node)?
bool pod_fits_type(const PodTemplate& pod, const InstanceType& type, const Labels& labels,
                   const std::vector<Taint>& taints);

}  // namespace gpuscale
