// One scheduling cycle over a snapshot (see snapshot_schedule.hpp).
#include "scheduling/snapshot_schedule.hpp"

#include <algorithm>
#include <numeric>

#include "kernel/rng.hpp"
#include "scheduling/kai/session.hpp"
#include "scheduling/kube_scheduler.hpp"

namespace gpuscale {

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;

// The snapshot's nodes as the cluster model holds them: Initialized (Ready, GPUs advertised), with the
// requests of the pods bound to them (running, and releasing: a terminating pod still holds its room).
ClusterState cluster_of(const Snapshot& s) {
  ClusterState c;
  c.nodes.resize(s.nodes.size());
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    const SnapshotNode& n = s.nodes[i];
    Node& node = c.nodes[i];
    node.id = static_cast<std::uint32_t>(i);
    node.phase = NodePhase::Initialized;
    node.labels = n.labels;
    node.taints = n.taints;
    node.disrupted = n.unschedulable;  // cordoned: NodeUnschedulable refuses it
    node.gpus_allocatable = n.gpus;
    node.cpu_allocatable_milli = n.cpu_milli;
    node.memory_allocatable_mib = n.memory_bytes / kMiB;
  }
  for (const SnapshotJob& j : s.jobs)
    for (const SnapshotTask& t : j.tasks) {
      if (t.node < 0 || (t.state != TaskState::Running && t.state != TaskState::Releasing && t.state != TaskState::StuckInReleasing))
        continue;  // finished pods hold nothing
      Node& node = c.nodes[static_cast<std::size_t>(t.node)];
      node.gpus_requested += t.pod.gpus;
      node.cpu_requested_milli += t.pod.cpu_milli;
      node.memory_requested_mib += t.pod.memory_mib;
    }
  return c;
}

// pod_status' word for a pod kube-scheduler leaves as it was.
const char* task_status_name(TaskState s) {
  switch (s) {
    case TaskState::Running: return "Running";
    case TaskState::Releasing: return "Releasing";
    case TaskState::StuckInReleasing: return "StuckInReleasing";
    case TaskState::Gated: return "Gated";
    case TaskState::Failed: return "Failed";
    case TaskState::Succeeded: return "Succeeded";
    case TaskState::Pending: break;
  }
  return "Pending";
}

const char* job_status_of(const std::vector<TaskOutcome>& tasks) {
  bool pending = false, new_bound = false, running = false;
  for (const TaskOutcome& t : tasks) {
    pending = pending || t.status == "Pending" || t.status == "Gated";
    new_bound = new_bound || t.status == "Binding";
    running = running || t.status == "Running";
  }
  if (pending) return new_bound || running ? "partly placed" : "pending";
  return new_bound ? "allocated" : running ? "running" : "evicted";
}

Json resources_json(const double (&v)[3]) {
  const auto amount = [](double x) { return x == kai::kUnlimited ? Json(-1) : Json(x); };
  return {{"gpu", amount(v[kai::Gpu])}, {"cpu", amount(v[kai::Cpu])}, {"memory", amount(v[kai::Memory])}};
}

}  // namespace

ScheduleOutcome schedule_kube(const Snapshot& s) {
  ScheduleOutcome out;
  const ClusterState cluster = cluster_of(s);
  std::vector<AssumedRoom> assumed(cluster.nodes.size());
  // selectHost's random pick among the top-scored nodes, from a fixed stream: the same snapshot always
  // gives the same placements.
  Rng ties = Rng::stream(0, "kube-scheduler");
  // The scheduling queue pops by priority, then by creation (the PrioritySort plugin's Less: priority,
  // then the time the pod entered the queue); pods carry their job's creation order, then their index.
  struct Ref {
    std::size_t job, task;
  };
  std::vector<Ref> order;
  out.jobs.resize(s.jobs.size());
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    out.jobs[j].tasks.resize(s.jobs[j].tasks.size());
    for (std::size_t t = 0; t < s.jobs[j].tasks.size(); ++t) {
      const SnapshotTask& task = s.jobs[j].tasks[t];
      TaskOutcome& o = out.jobs[j].tasks[t];
      o.node = task.node;
      if (task.state == TaskState::Pending) {
        order.push_back({j, t});
        o.status = "Pending";
      } else {
        o.status = task_status_name(task.state);
      }
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](const Ref& a, const Ref& b) {
    const SnapshotTask& ta = s.jobs[a.job].tasks[a.task];
    const SnapshotTask& tb = s.jobs[b.job].tasks[b.task];
    if (ta.pod.priority != tb.pod.priority) return ta.pod.priority > tb.pod.priority;
    return s.jobs[a.job].created < s.jobs[b.job].created;
  });
  for (const Ref& ref : order) {
    const SnapshotTask& task = s.jobs[ref.job].tasks[ref.task];
    SchedulingResult r = schedule_pod(cluster, task.pod, assumed, &ties, s.kube_scheduler.scoring);
    TaskOutcome& o = out.jobs[ref.job].tasks[ref.task];
    o.message = r.explanation;
    out.log.push_back(task.name + ": " + r.explanation);
    if (!r.node) continue;
    o.status = "Binding";
    o.node = static_cast<int>(*r.node);
    AssumedRoom& a = assumed[*r.node];
    a.gpus += task.pod.gpus;
    a.cpu_milli += task.pod.cpu_milli;
    a.memory_mib += task.pod.memory_mib;
  }
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    JobOutcome& jo = out.jobs[j];
    jo.status = job_status_of(jo.tasks);
    const int bound = static_cast<int>(std::count_if(jo.tasks.begin(), jo.tasks.end(), [](const TaskOutcome& t) {
      return t.status == "Running" || t.status == "Binding";
    }));
    if (jo.status == "partly placed" || jo.status == "pending") {
      jo.reason = "Unschedulable";
      for (const TaskOutcome& t : jo.tasks)
        if (t.status == "Pending") {
          jo.message = t.message;
          break;
        }
      if (jo.status == "partly placed")
        out.warnings.push_back(s.jobs[j].name + ": " + std::to_string(bound) + " of " + std::to_string(jo.tasks.size()) +
                               " pods placed; kube-scheduler places pods one by one, so the placed ones hold their GPUs while the group "
                               "cannot serve (the 7-of-8 trap)");
    }
  }
  return out;
}

ScheduleOutcome schedule_snapshot(const Snapshot& snapshot) {
  ScheduleOutcome out = snapshot.scheduler == "default-scheduler" ? schedule_kube(snapshot) : kai::run_cycle(snapshot);
  out.warnings.insert(out.warnings.begin(), snapshot.warnings.begin(), snapshot.warnings.end());  // the reader's first
  return out;
}

Json schedule_outcome_json(const Snapshot& s, const ScheduleOutcome& o) {
  Json jobs = Json::array();
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    const SnapshotJob& sj = s.jobs[j];
    const JobOutcome& jo = o.jobs[j];
    Json tasks = Json::array();
    for (std::size_t t = 0; t < sj.tasks.size(); ++t) {
      const TaskOutcome& to = jo.tasks[t];
      Json tj = {{"name", sj.tasks[t].name}, {"status", to.status}, {"node", to.node >= 0 ? Json(s.nodes[static_cast<std::size_t>(to.node)].name) : Json(nullptr)}};
      if (!to.message.empty()) tj["message"] = to.message;
      tasks.push_back(std::move(tj));
    }
    Json jj = {{"name", sj.name}, {"status", jo.status}, {"tasks", std::move(tasks)}};
    if (!sj.queue.empty()) jj["queue"] = sj.queue;
    if (!jo.reason.empty()) jj["reason"] = jo.reason;
    if (!jo.message.empty()) jj["message"] = jo.message;
    jobs.push_back(std::move(jj));
  }
  Json victims = Json::array();
  for (const Victim& v : o.victims) {
    const SnapshotJob& sj = s.jobs[static_cast<std::size_t>(v.job)];
    victims.push_back({{"job", sj.name},
                       {"task", sj.tasks[static_cast<std::size_t>(v.task)].name},
                       {"node", v.node >= 0 ? Json(s.nodes[static_cast<std::size_t>(v.node)].name) : Json(nullptr)},
                       {"action", v.action},
                       {"for", v.for_job.empty() ? Json(nullptr) : Json(v.for_job)}});
  }
  Json out = {{"scheduler", s.scheduler}, {"jobs", std::move(jobs)}, {"victims", std::move(victims)}};
  if (s.scheduler == "kai-scheduler") {
    Json queues = Json::array();
    for (std::size_t q = 0; q < s.queues.size() && q < o.queues.size(); ++q) {
      const QueueOutcome& qo = o.queues[q];
      queues.push_back({{"name", s.queues[q].name},
                        {"parentQueue", s.queues[q].parent.empty() ? Json(nullptr) : Json(s.queues[q].parent)},
                        {"deserved", resources_json(qo.deserved)},
                        {"fairShare", resources_json(qo.fair_share)},
                        {"allocated", resources_json(qo.allocated)},
                        {"requested", resources_json(qo.request)}});
    }
    out["queues"] = std::move(queues);
  }
  out["log"] = o.log;
  out["warnings"] = o.warnings;
  return out;
}

}  // namespace gpuscale
