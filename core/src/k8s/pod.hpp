// Pods in core/v1 terms: the phase, and the pod template a workload stamps its pods from (requests,
// scheduling constraints, scheduler, priority class, labels, owner, pod group), strictly parsed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "k8s/constraints.hpp"

namespace gpuscale {

// status.phase (core/v1 PodPhase).
enum class PodPhase : std::uint8_t { Pending, Running, Succeeded, Failed, Unknown };
inline constexpr Named<PodPhase> kPodPhases[] = {{"Pending", PodPhase::Pending},
                                                 {"Running", PodPhase::Running},
                                                 {"Succeeded", PodPhase::Succeeded},
                                                 {"Failed", PodPhase::Failed},
                                                 {"Unknown", PodPhase::Unknown}};
inline const char* to_string(PodPhase p) { return name_of(p, kPodPhases); }

// spec.topologyConstraint of a PodGroup (scheduling.run.ai/v2alpha2); KAI's pod-grouper fills it from
// the top owner's annotations kai.scheduler/topology, kai.scheduler/topology-required-placement and
// kai.scheduler/topology-preferred-placement (pkg/podgrouper/podgrouper/plugins/defaultgrouper/
// default_grouper.go).
struct TopologyConstraint {
  std::string topology;              // a Topology's name ("" = none)
  std::string required_level;        // requiredTopologyLevel: a nodeLabel of its levels
  std::string preferred_level;       // preferredTopologyLevel
};

// Who stamps pods from a template: a model-serving pool's ReplicaSet, or another workload's controller.
struct PodOwner {
  enum class Kind : std::uint8_t { Pool, Workload } kind = Kind::Workload;
  int index = 0;      // into the scenario's pools or cluster.workloads
  std::string name;   // the pool's or workload's name
  int group_size = 1; // a LeaderWorkerSet's pods per group (its PodGroup's minMember under KAI); 1 otherwise
  TopologyConstraint topology;  // from the owner's (the LeaderWorkerSet's) metadata.annotations
};

// The schedulers a pod may name in spec.schedulerName.
inline constexpr const char* kDefaultScheduler = "default-scheduler";

// What a pod asks for and where it may go. One template per workload (a pool's inference replicas, a CPU
// web tier, ...); the simulation creates pods from templates.
struct PodTemplate {
  std::string name;                            // e.g. "vllm", "web"
  PodOwner owner;
  int gpus = 0;                                // nvidia.com/gpu request
  std::int64_t cpu_milli = 0;                  // cpu request, millicores
  std::int64_t memory_mib = 0;                 // memory request, MiB
  std::vector<Toleration> tolerations;
  Labels node_selector;                        // spec.nodeSelector
  std::vector<Requirement> required_affinity;  // requiredDuringScheduling... nodeSelectorTerms[0].matchExpressions
  Labels labels;                               // metadata.labels (e.g. kai.scheduler/queue)
  std::string scheduler_name = kDefaultScheduler;  // spec.schedulerName
  std::string priority_class_name;             // spec.priorityClassName ("" = none)
  int priority = 0;                            // spec.priority: the class's value, or as given
  std::string pod_group;                       // annotation pod-group-name (KAI's PodGroup; "" = none)
  bool do_not_disrupt = false;                 // annotation karpenter.sh/do-not-disrupt: "true"
  // How its deletion goes, whoever deletes it (sim/replicas.cpp): the endpoint leaves the Service, the
  // preStop hook runs, then SIGTERM, then SIGKILL once the grace period is over.
  std::int64_t termination_grace_period_s = 30;  // spec.terminationGracePeriodSeconds (Kubernetes default 30)
  std::int64_t prestop_sleep_s = 0;              // lifecycle.preStop.sleep.seconds (0: no preStop hook)
};

// The value of a well-known PriorityClass (system-node-critical, system-cluster-critical, and KAI
// Scheduler's built-in train 50, build-preemptible 75, build 100, inference 125); -1 if unknown.
int well_known_priority(const std::string& class_name);

// A pod spec in Kubernetes terms, strictly parsed: {"cpu": "16", "memory": "200Gi", "gpus": 2,
// "tolerations": [...], "nodeSelector": {...}, "affinity": {"nodeAffinity": {"requiredDuringScheduling
// IgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [...]}]}}}, "labels": {...},
// "annotations": {"karpenter.sh/do-not-disrupt": "true", "pod-group-name": "..."}, "schedulerName":
// "default-scheduler", "priorityClassName": "inference", "priority": 0, "terminationGracePeriodSeconds": 30,
// "lifecycle": {"preStop": {"sleep": {"seconds": 30}}}}. Fields absent keep `t`'s values.
PodTemplate parse_pod_template(const Json& doc, const std::string& path, PodTemplate t);

}  // namespace gpuscale
