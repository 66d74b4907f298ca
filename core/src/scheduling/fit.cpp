// The one fit predicate (see fit.hpp).
#include "scheduling/fit.hpp"

namespace gpuscale {

bool fits_node_affinity(const PodTemplate& pod, const Labels& labels) {
  return matches_selector(pod.node_selector, labels) && matches_all(pod.required_affinity, labels);
}

bool fits_resources(const PodTemplate& pod, int gpus_free, std::int64_t cpu_free_milli, std::int64_t memory_free_mib) {
  return pod.gpus <= gpus_free && pod.cpu_milli <= cpu_free_milli && pod.memory_mib <= memory_free_mib;
}

namespace {
thread_local std::int64_t fit_checks = 0;
}  // namespace

std::int64_t fit_checks_so_far() { return fit_checks; }

Fit check_fit(const PodTemplate& pod, const NodeFit& node) {
  ++fit_checks;
  Fit f;
  if (!node.schedulable) {
    f.failure = FitFailure::Unschedulable;
  } else if (!node.joined) {
    f.failure = FitFailure::NotJoined;
  } else if (!fits_node_affinity(pod, *node.labels)) {
    f.failure = FitFailure::NodeAffinity;
  } else if ((f.taint = first_untolerated(pod.tolerations, *node.taints)) != nullptr) {
    f.failure = FitFailure::UntoleratedTaint;
  } else if (pod.gpus > 0 && (!node.gpus_advertised || pod.gpus > node.gpus_free)) {
    // A GPU pod cannot land before the device plugin advertises the GPUs (the node reports 0 allocatable).
    f.failure = FitFailure::InsufficientGpu;
  } else if (pod.cpu_milli > node.cpu_free_milli) {
    f.failure = FitFailure::InsufficientCpu;
  } else if (pod.memory_mib > node.memory_free_mib) {
    f.failure = FitFailure::InsufficientMemory;
  }
  return f;
}

std::string fit_message(const Fit& fit) {
  switch (fit.failure) {
    case FitFailure::None: return "";
    case FitFailure::Unschedulable: return "node(s) were unschedulable";
    case FitFailure::NotJoined: return "node(s) had not joined the cluster yet";
    case FitFailure::NodeAffinity: return "node(s) didn't match Pod's node affinity/selector";
    case FitFailure::UntoleratedTaint:
      return "node(s) had untolerated taint {" + fit.taint->key + (fit.taint->value.empty() ? "" : ": " + fit.taint->value) + "}";
    case FitFailure::InsufficientGpu: return "Insufficient nvidia.com/gpu";
    case FitFailure::InsufficientCpu: return "Insufficient cpu";
    case FitFailure::InsufficientMemory: return "Insufficient memory";
  }
  return "";
}

NodeFit node_fit(const Node& node) {
  NodeFit f;
  f.schedulable = !node.disrupted && node.phase != NodePhase::Terminating && node.phase != NodePhase::Terminated;
  f.joined = node.phase != NodePhase::Launched;
  f.gpus_advertised = node.phase == NodePhase::Initialized;
  f.labels = &node.labels;
  f.taints = &node.taints;
  f.gpus_free = node.gpus_allocatable - node.gpus_requested;
  f.cpu_free_milli = node.cpu_allocatable_milli - node.cpu_requested_milli;
  f.memory_free_mib = node.memory_allocatable_mib - node.memory_requested_mib;
  return f;
}

Fit check_fit(const PodTemplate& pod, const Node& node) { return check_fit(pod, node_fit(node)); }

Fit check_fit_type(const PodTemplate& pod, const InstanceType& type, const Labels& labels, const std::vector<Taint>& taints) {
  NodeFit f;
  f.labels = &labels;
  f.taints = &taints;
  f.gpus_free = type.gpus;
  f.cpu_free_milli = allocatable_cpu_milli(type);
  f.memory_free_mib = allocatable_memory_mib(type);
  return check_fit(pod, f);
}

}  // namespace gpuscale
