// Layer 1's world as data: nodes and pods with their phases, bound requests and allocatable room,
// plus what each pool's PodDisruptionBudget counts. Controllers (schedulers, Karpenter, Cluster
// Autoscaler) read a ClusterState and return decisions; only the cluster model mutates it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/instance_types.hpp"
#include "k8s/constraints.hpp"
#include "k8s/pdb.hpp"
#include "k8s/pod.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

struct Pod {
  std::uint32_t id = 0;
  int template_index = 0;           // into ClusterState::templates (its owner: a pool or a workload)
  std::int32_t replica = -1;        // a pool's pod: the replica it runs (-1: another workload's pod)
  std::int32_t member = 0;          // a LeaderWorkerSet group's pods: 0 the leader, 1 … size-1 its workers (ids consecutive)
  PodPhase phase = PodPhase::Pending;  // Pending until bound, then Running
  bool deleted = false;             // gone from the API (deleted, or evicted)
  std::int32_t node = -1;           // bound node id, -1 while Pending
  Micros created_at = 0;
  Micros unschedulable_since = -1;  // PodScheduled=False, reason Unschedulable, since then (-1: not marked)
  Micros reported_unschedulable_at = -1;  // last handed to the node provisioner as unschedulable (-1: never)
  bool ready = false;               // condition Ready (a pool's replica: serving); set by the simulation
  Micros deletion_timestamp = -1;   // metadata.deletionTimestamp: deleted, still on its node while it terminates
  // Terminating (pod.IsTerminating): deleted but still running its grace period. Not rescheduled by
  // Karpenter's simulations (pod.IsReschedulable), so it does not keep its node non-empty.
  bool terminating() const { return deletion_timestamp >= 0; }
};

enum class NodePhase : std::uint8_t {
  Launched,     // NodeClaim launched: the instance is booting
  Registered,   // joined the cluster; tainted node.kubernetes.io/not-ready until the kubelet reports Ready (ready_at);
                // GPUs not advertised yet (device plugin starting): not schedulable for GPU pods
  Initialized,  // Ready, startup taints gone, every extended resource registered
  Terminating,  // being drained / deleted
  Terminated,
};

// The taint the node lifecycle controller keeps on a node whose Ready condition is not True (effect
// NoSchedule; TaintNodesByCondition): kubernetes/kubernetes pkg/controller/nodelifecycle/
// node_lifecycle_controller.go (nodeConditionToTaintKeyStatusMap, doNoScheduleTaintingPass) and
// k8s.io/api core/v1 well_known_taints.go (TaintNodeNotReady); kubernetes.io/docs/concepts/
// scheduling-eviction/taint-and-toleration/#taint-nodes-by-condition. A fresh node registers with it.
inline constexpr const char* kNotReadyTaint = "node.kubernetes.io/not-ready";

struct Node {
  std::uint32_t id = 0;
  int type_index = 0;              // into ClusterState::types
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;
  std::string owner;               // the NodePool (Karpenter) or node group (Cluster Autoscaler) that made it
  Labels labels;
  std::vector<Taint> taints;       // includes startup taints until initialized (the last `startup_taints` of them)
  int startup_taints = 0;
  NodePhase phase = NodePhase::Launched;
  Micros launched_at = 0;
  Micros registered_at = -1;
  Micros ready_at = -1;            // the kubelet reported Ready: the not-ready taint is gone (-1: not yet)
  Micros initialized_at = -1;
  Micros terminated_at = -1;
  Micros last_pod_event_at = -1;   // a pod bound, terminating or gone (consolidateAfter counts from here; see
                                   // note_pod_event)
  Micros expires_at = -1;          // expireAfter deadline (-1: never)
  double price_usd_per_hour = 0;   // by capacity type
  bool do_not_disrupt = false;     // karpenter.sh/do-not-disrupt on the Node
  bool disrupted = false;          // tainted karpenter.sh/disrupted:NoSchedule (being replaced / drained)
  std::vector<std::uint32_t> pods; // bound pods (not deleted)
  // The kubelet's image cache: (pod template index, standing for its image) → when its pull finished or
  // will finish. A node keeps what it pulled; a second pod of the image starts without a pull.
  std::vector<std::pair<int, Micros>> images;
  // Allocatable and requested, kept up to date by bind / unbind.
  int gpus_allocatable = 0;
  std::int64_t cpu_allocatable_milli = 0, memory_allocatable_mib = 0;
  int gpus_requested = 0;
  std::int64_t cpu_requested_milli = 0, memory_requested_mib = 0;
};

// What a pool's PodDisruptionBudget needs to know of it.
struct PoolBudget {
  std::optional<PdbSpec> pdb;         // over the pool's pods (nullopt: no budget)
  std::int32_t expected_replicas = 0;  // the pool's Deployment spec.replicas
};

struct ClusterState {
  std::vector<InstanceType> types;
  std::vector<PodTemplate> templates;
  std::vector<Node> nodes;        // by id; terminated nodes stay (ids are indices)
  std::vector<Pod> pods;          // by id; deleted pods stay
  std::vector<PoolBudget> pools;  // by pool index (PodTemplate::owner.index of the pools' templates)

  const PodTemplate& template_of(const Pod& pod) const { return templates[static_cast<std::size_t>(pod.template_index)]; }
  // The pool whose pod this is, or -1 (another workload's pod).
  int pool_of(const Pod& pod) const;
};

// Karpenter's podevents controller (kubernetes-sigs/karpenter pkg/controllers/nodeclaim/podevents/controller.go):
// a pod bound to the node, turned terminating or terminal (gone) sets the NodeClaim's lastPodEventTime to
// now, unless it was set less than dedupeTimeout (10 s) ago.
constexpr Micros kPodEventDedupe = 10 * kMicrosPerSecond;
inline void note_pod_event(Node& node, Micros now) {
  if (node.last_pod_event_at >= 0 && now - node.last_pod_event_at < kPodEventDedupe) return;
  node.last_pod_event_at = now;
}

// The pool's PodDisruptionBudget arithmetic over its pods now (requires a budget).
PdbStatus pool_pdb_status(const ClusterState& state, int pool);
// The Eviction API's answer for one pod. Pods no budget covers are always allowed.
bool eviction_allowed(const ClusterState& state, const Pod& pod, std::string* why = nullptr);

}  // namespace gpuscale
