// KAI Scheduler's capacity policy (the proportion plugin): may a job's tasks be allocated in its
// queue? real-systems.md §5.4. Ported from kai-scheduler/KAI-Scheduler
// pkg/scheduler/plugins/proportion/capacity_policy/ (capacity_policy.go IsJobOverQueueCapacity,
// max_allowed_check.go, quota_check.go) with the messages of pkg/scheduler/api (GetJobOverMaxAllowed-
// MessageForQueue, GetBuildOverCapacityMessageForQueue) and resource_info's float tolerance.
//
// Every level of the queue chain, leaf to top, is checked:
//  1. the limit: allocated + requested ≤ limit (OverLimit), for every limited resource requested;
//  2. then, for a non-preemptible job only, the quota: allocatedNonPreemptible + requested ≤ deserved
//     (NonPreemptibleOverQuota), for every resource with a quota that is requested. So a plain
//     Deployment (priority class inference, non-preemptible) in the default queue (quota 0) stays
//     Pending: the default-queue gotcha.
// Units as the scheduler holds them: GPUs in devices, CPU in millicores, memory in bytes.
#pragma once
#include <string>
#include <vector>

#include "scheduling/kai/fair_share.hpp"

namespace gpuscale::kai {

struct CapacityResult {
  bool schedulable = true;
  std::string reason;   // v2alpha2: "OverLimit" | "NonPreemptibleOverQuota"
  std::string message;  // as KAI writes it on the PodGroup
  std::string queue;    // the level of the chain that refused
};

// `queue`: the job's (leaf) queue; `requested`: its tasks' GPUs, millicores and bytes.
CapacityResult check_capacity(const std::vector<Queue>& queues, const std::string& queue, const Totals& requested,
                              bool preemptible);

// resource_info.HumanizeResource: "Unlimited", or value / unit with at most 3 decimals, zeros trimmed.
std::string humanize(double value, double unit);

}  // namespace gpuscale::kai
