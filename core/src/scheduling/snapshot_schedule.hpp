// One scheduling cycle over a cluster snapshot (snapshot.hpp): kube-scheduler pod by pod, or KAI
// Scheduler's actions (kai/session.hpp). What `gpuscale schedule SNAPSHOT` prints (docs/schedule.md).
#pragma once
#include <string>
#include <vector>

#include "gpuscale/json.hpp"
#include "scheduling/snapshot.hpp"

namespace gpuscale {

// A pod after the cycle, in pod_status' words: Running (as it was), Binding (allocated this cycle, its
// BindRequest written), Pipelined (placed onto resources still being released; binds once they are
// free), Pending, Releasing (being evicted, or was already).
struct TaskOutcome {
  std::string status;
  int node = -1;        // where it runs or will run
  std::string message;  // kube-scheduler: the FailedScheduling or bind message
};

struct JobOutcome {
  std::string status;   // the job's: "running", "allocated", "pipelined", "pending", "evicted"
  std::string reason;   // KAI's reason for a pending job (v2alpha2 UnschedulableReason), or "Unschedulable"
  std::string message;  // KAI's message (the PodGroup's Unschedulable condition), or kube-scheduler's
  std::vector<TaskOutcome> tasks;  // as the job lists them
};

struct Victim {
  int job = 0, task = 0;  // indices into the snapshot
  int node = -1;
  std::string action;     // "reclaim" | "preempt" | "consolidation" | "stalegangeviction"
  std::string for_job;    // the job it made room for ("" for stale gang eviction)
};

struct QueueOutcome {
  double deserved[3] = {}, fair_share[3] = {}, allocated[3] = {}, request[3] = {};  // gpu, cpu (milli), memory (bytes)
};

struct ScheduleOutcome {
  std::vector<JobOutcome> jobs;      // as the snapshot lists them
  std::vector<Victim> victims;       // in the order the actions evicted them
  std::vector<QueueOutcome> queues;  // as the snapshot lists them (KAI only)
  std::vector<std::string> log;      // the decisions with their arithmetic, in order
  std::vector<std::string> warnings; // things in the snapshot that behave as written but surprise people
};

ScheduleOutcome schedule_snapshot(const Snapshot& snapshot);
Json schedule_outcome_json(const Snapshot& snapshot, const ScheduleOutcome& outcome);

// kube-scheduler's part: each pending pod in creation order, placed by the default profile's filters
// and LeastAllocated score (kube_scheduler.hpp schedule_pod), seeing the room the earlier pods took.
ScheduleOutcome schedule_kube(const Snapshot& snapshot);

}  // namespace gpuscale
