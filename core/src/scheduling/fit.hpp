// The one fit predicate: does a pod fit a node, and if not, the first filter it fails, in
// kube-scheduler's default plugin order (NodeUnschedulable, NodeAffinity, TaintToleration,
// NodeResourcesFit). kube-scheduler, Karpenter's scheduling simulation and Cluster Autoscaler's
// all ask it, about real nodes or nodes they imagine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster_state.hpp"

namespace gpuscale {

// What the predicate reads of a node: a real node, a simulated one or an instance type's template.
struct NodeFit {
  bool schedulable = true;      // not cordoned: not Terminating, Terminated or tainted karpenter.sh/disrupted
  bool joined = true;           // registered with the API server (not just Launched)
  bool gpus_advertised = true;  // Initialized: the device plugin has registered nvidia.com/gpu
  const Labels* labels = nullptr;
  const std::vector<Taint>* taints = nullptr;
  int gpus_free = 0;
  std::int64_t cpu_free_milli = 0, memory_free_mib = 0;
};

enum class FitFailure : std::uint8_t {
  None,
  Unschedulable,       // node(s) were unschedulable
  NotJoined,           // node(s) had not joined the cluster yet
  NodeAffinity,        // node(s) didn't match Pod's node affinity/selector
  UntoleratedTaint,    // node(s) had untolerated taint {key: value}
  InsufficientGpu,     // Insufficient nvidia.com/gpu
  InsufficientCpu,     // Insufficient cpu
  InsufficientMemory,  // Insufficient memory
};

struct Fit {
  FitFailure failure = FitFailure::None;
  const Taint* taint = nullptr;  // UntoleratedTaint: which one
  bool ok() const { return failure == FitFailure::None; }
};

// The filters one by one (each an upstream plugin), and all of them in order.
bool fits_node_affinity(const PodTemplate& pod, const Labels& labels);  // spec.nodeSelector + required node affinity
bool fits_resources(const PodTemplate& pod, int gpus_free, std::int64_t cpu_free_milli, std::int64_t memory_free_mib);
Fit check_fit(const PodTemplate& pod, const NodeFit& node);
// kube-scheduler's words for a failure, as FailedScheduling events count them per reason.
std::string fit_message(const Fit& fit);

// The predicate over a node of the cluster as it is now.
NodeFit node_fit(const Node& node);
Fit check_fit(const PodTemplate& pod, const Node& node);
// ... and over an empty, Initialized node of this type with these labels and taints.
Fit check_fit_type(const PodTemplate& pod, const InstanceType& type, const Labels& labels, const std::vector<Taint>& taints);

// How many times this thread has asked the predicate, ever. The work budget (sim/budget.hpp) reads
// the difference over a run: the passes of the schedulers and provisioners over pods × nodes are the
// cluster's cost, and they are deep inside pure controllers that return no counts. A count, never a
// clock, so where a run stops stays deterministic.
std::int64_t fit_checks_so_far();

}  // namespace gpuscale
