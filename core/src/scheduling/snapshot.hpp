// A cluster snapshot, as a scheduler sees it at the start of one cycle: nodes, queues, topologies and
// jobs with their tasks (pods). `gpuscale schedule SNAPSHOT` and its WASM twin read one, run one cycle
// of the named scheduler and return the placements (docs/schedule.md). The snapshot can say what KAI
// Scheduler's own unit tests set up (pkg/scheduler/test_utils: TestTopologyBasic, TestJobBasic,
// TestNodeBasic, TestQueueBasic), so their fixtures run through it (tests/data/kai/).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpuscale/json.hpp"
#include "io/json_reader.hpp"
#include "k8s/constraints.hpp"
#include "k8s/pod.hpp"
#include "scheduling/kube_scheduler.hpp"
#include "scheduling/kai/fair_share.hpp"

namespace gpuscale {

struct SnapshotLimits {
  static constexpr std::size_t kMaxNodes = 5000;
  static constexpr std::size_t kMaxQueues = 1000;
  static constexpr std::size_t kMaxJobs = 20000;
  static constexpr std::size_t kMaxTasksPerJob = 1024;
  static constexpr std::size_t kMaxTasks = 50000;
  static constexpr std::size_t kMaxTopologies = 16;
  static constexpr std::size_t kMaxLevels = 8;
};

struct SnapshotNode {
  std::string name;
  int gpus = 0;                      // allocatable nvidia.com/gpu
  std::int64_t cpu_milli = 0;        // allocatable cpu
  std::int64_t memory_bytes = 0;     // allocatable memory
  Labels labels;                     // with kubernetes.io/hostname = name unless given
  std::vector<Taint> taints;
  bool unschedulable = false;        // spec.unschedulable (cordoned)
};

// A pod's state at the snapshot (pod_status: Pending, Running, Releasing — a pod being deleted whose
// resources are not free yet).
// Also Gated (pending with scheduling gates: alive, never scheduled), Failed and Succeeded (finished:
// they hold nothing; a gang with a Succeeded pod is never stale).
// StuckInReleasing: a running pod whose deletion began longer ago than the scheduler's
// --stuck-in-releasing-threshold (2 min by default; pod_info.go getTaskStatus): it holds its room, which
// is not counted as releasing (nothing is pipelined onto it), and it is no victim.
enum class TaskState : std::uint8_t { Pending, Running, Releasing, Gated, Failed, Succeeded, StuckInReleasing };
inline constexpr Named<TaskState> kTaskStates[] = {{"pending", TaskState::Pending},     {"running", TaskState::Running},
                                                   {"releasing", TaskState::Releasing}, {"gated", TaskState::Gated},
                                                   {"failed", TaskState::Failed},       {"succeeded", TaskState::Succeeded},
                                                   {"stuckInReleasing", TaskState::StuckInReleasing}};

struct SnapshotTask {
  std::string name;
  PodTemplate pod;                   // its requests, nodeSelector, affinity, tolerations
  std::int64_t memory_bytes = 0;     // the memory request in bytes (the pod's MiB are rounded down)
  TaskState state = TaskState::Pending;
  int node = -1;                     // index into nodes (running or releasing)
  std::string sub_group;             // the PodGroup sub-group it belongs to, a leaf ("" = the job has none)
};

// A PodGroup sub-group (spec.subGroups[]). Sub-groups nest through `parent`: a sub-group that is some
// other's parent is a SubGroupSet (a topology constraint over its children, minSubGroup of them
// required), one that is not is a PodSet (its pods, its minMember) — subgroup_info/factory.go FromPodGroup.
struct SnapshotSubGroup {
  std::string name;
  int min_member = -1;               // spec.subGroups[].minMember (-1: unset; the scheduler takes 0)
  int min_sub_group = -1;            // spec.subGroups[].minSubGroup (-1: unset; every child required)
  TopologyConstraint topology;
  std::string parent;                // spec.subGroups[].parent ("" = the PodGroup itself)
  int parent_index = -1;             // into the job's sub_groups (-1: the PodGroup)
  bool leaf = true;                  // no sub-group names it as parent
};

// A PodGroup and its pods.
struct SnapshotJob {
  std::string name;
  std::string namespace_ = "default";  // metadata.namespace (KAI's messages name pods "<namespace>/<pod>")
  std::string queue;                 // spec.queue (or the pods' kai.scheduler/queue label)
  std::string priority_class;        // spec.priorityClassName ("" = given as a number)
  int priority = 50;                 // the class's value
  bool preemptible = true;           // spec.preemptibility, or priority < 100
  int min_member = 0;                // spec.minMember (default: every task; 1 beside minSubGroup)
  int min_sub_group = -1;            // spec.minSubGroup (-1: unset; every direct child required)
  std::int64_t created = 0;          // creation order: smaller = older
  TopologyConstraint topology;
  std::vector<SnapshotSubGroup> sub_groups;
  double stale_for_s = -1;           // seconds since it was first seen stale (-1: not before this cycle)
  // spec.preemptionDelay in seconds (0: none) and the job's age: seconds since it was created, and
  // since its pods were last evicted (-1: never). Within the delay (counted from the later of the two)
  // the job may not trigger evictions (reclaim, preempt, consolidation), as input_jobs.go has it.
  double preemption_delay_s = 0;
  double created_s_ago = 0;
  double last_evicted_s_ago = -1;
  std::optional<double> staleness_grace_s;  // spec.stalenessGracePeriod in seconds (negative: never evicted)
  std::vector<SnapshotTask> tasks;
};

// A Topology (kai.scheduler/v1alpha1): node labels from the widest level to the narrowest.
struct SnapshotTopology {
  std::string name;
  std::vector<std::string> levels;
};

struct KaiSettings {
  // The actions, in order (the scheduling shard's default: allocate, consolidation, reclaim, preempt,
  // stalegangeviction).
  std::vector<std::string> actions{"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"};
  double k_value = 1.0;              // the proportion plugin's kValue
  bool spread = false;               // placementStrategy gpu: spread (consolidation off)
  double staleness_grace_s = 60;     // --default-staleness-grace-period
  int max_consolidation_preemptees = 16;
  // --use-scheduling-signatures (the scheduler's default: on): reclaim, preempt and consolidation skip
  // a job that is no easier to place than one of the same scheduling constraints that already failed.
  bool use_scheduling_signatures = true;
};

struct Snapshot {
  std::string scheduler = "kai-scheduler";  // or "default-scheduler"
  KaiSettings kai;
  KubeSchedulerConfig kube_scheduler;       // default-scheduler's profile (kubeScheduler: a KubeSchedulerConfiguration)
  std::vector<SnapshotNode> nodes;
  std::vector<kai::Queue> queues;   // memory in bytes (the Queue's MB × 10^6), CPU in millicores
  std::vector<SnapshotTopology> topologies;
  std::vector<SnapshotJob> jobs;
  // What the reader accepts as the scheduler would, though the API server's admission webhook would
  // refuse or warn about it (a leaf sub-group without minMember, minSubGroup above its children, …).
  std::vector<std::string> warnings;
};

// Parses and checks a snapshot; every error names its JSON path (docs/schedule.md).
Snapshot parse_snapshot(const Json& doc);

const char* task_state_name(TaskState s);

// The parts a scenario's cluster.kai shares with a snapshot, read the same way with the same errors.
// read_kai_settings reads the keys actions, kValue, placementStrategy, stalenessGracePeriodSeconds,
// maxConsolidationPreemptees and useSchedulingSignatures of an object whose keys the caller declared.
void read_kai_settings(ObjectReader& r, KaiSettings& out);
std::vector<kai::Queue> read_queues(const Json& v, const std::string& path);         // Queue CRs or flat
std::vector<SnapshotTopology> read_topologies(const Json& v, const std::string& path);  // Topology CRs or flat

}  // namespace gpuscale
