// KAI Scheduler over the running cluster (see kai_scheduler.hpp).
#include "scheduling/kai_scheduler.hpp"

#include "scheduling/kai/session.hpp"

#include <map>
#include <utility>

namespace gpuscale {

std::vector<kai::Queue> default_kai_queues() {
  std::vector<kai::Queue> out(2);
  out[0].name = "default-parent-queue";
  out[1].name = kKaiDefaultQueue;
  out[1].parent = out[0].name;
  out[1].created = 1;
  for (kai::Queue& q : out)
    for (kai::ResourceShare& r : q.resources) r = kai::ResourceShare{0, 0, kai::kUnlimited, 1};
  return out;
}

Micros KaiScheduler::period() const { return static_cast<Micros>(config_.schedule_period_s * kMicrosPerSecond + 0.5); }

namespace {

constexpr std::int64_t kBytesPerMiB = 1024 * 1024;

bool is_kai_pod(const ClusterState& cluster, const Pod& pod) { return cluster.template_of(pod).scheduler_name == kKaiScheduler; }

std::string pod_name(const ClusterState& cluster, const Pod& pod) { return cluster.template_of(pod).name + "-" + std::to_string(pod.id); }

// The pod-grouper's PodGroup for a pod: one per pod of a Deployment (or a bare pod); one per group of
// a LeaderWorkerSet, named <name>-group-<index>, with minMember its size under startupPolicy
// LeaderCreated (pkg/podgrouper/podgrouper/plugins/leaderworkerset/lws_grouper.go). Its queue and priority.
SnapshotJob job_of(const ClusterState& cluster, const Pod& pod) {
  const PodTemplate& t = cluster.template_of(pod);
  SnapshotJob j;
  const bool group = t.owner.group_size > 1 && pod.replica >= 0;
  j.name = group ? "pg-" + t.name + "-group-" + std::to_string(pod.replica) : "pg-" + pod_name(cluster, pod);
  const auto q = t.labels.find(kKaiQueueLabel);
  j.queue = q == t.labels.end() ? kKaiDefaultQueue : q->second;
  // A Deployment's pods default to the inference class (docs/developer/pod-grouper.md).
  j.priority_class = t.priority_class_name.empty() ? "inference" : t.priority_class_name;
  const int known = well_known_priority(j.priority_class);
  j.priority = known >= 0 ? known : t.priority;
  j.preemptible = j.priority < 100;  // pkg/common/podgroup CalculatePreemptibility
  j.min_member = group ? t.owner.group_size : 1;
  j.created = pod.created_at;
  j.topology = t.owner.topology;
  return j;
}

}  // namespace

Snapshot KaiScheduler::snapshot(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, std::vector<std::vector<std::uint32_t>>* pods_of_job,
                                std::vector<std::uint32_t>* node_ids) const {
  Snapshot s;
  s.scheduler = kKaiScheduler;
  s.kai = config_.settings;
  s.queues = config_.queues;
  s.topologies = config_.topologies;
  std::vector<int> snap_node(cluster.nodes.size(), -1);
  for (const Node& node : cluster.nodes) {
    if (node.phase == NodePhase::Launched || node.phase == NodePhase::Terminated) continue;  // not in the API
    SnapshotNode n;
    n.name = "node-" + std::to_string(node.id);
    n.gpus = node.phase == NodePhase::Initialized || node.phase == NodePhase::Terminating ? node.gpus_allocatable : 0;
    n.cpu_milli = node.cpu_allocatable_milli;
    n.memory_bytes = node.memory_allocatable_mib * kBytesPerMiB;
    n.labels = node.labels;
    n.labels.emplace("kubernetes.io/hostname", n.name);
    n.taints = node.taints;
    n.unschedulable = node.disrupted || node.phase == NodePhase::Terminating;
    // What other schedulers' pods hold is not KAI's to give.
    for (std::uint32_t id : node.pods) {
      const Pod& pod = cluster.pods[id];
      if (is_kai_pod(cluster, pod)) continue;
      const PodTemplate& t = cluster.template_of(pod);
      n.gpus -= t.gpus;
      n.cpu_milli -= t.cpu_milli;
      n.memory_bytes -= t.memory_mib * kBytesPerMiB;
    }
    if (n.gpus < 0) n.gpus = 0;
    snap_node[node.id] = static_cast<int>(s.nodes.size());
    if (node_ids) node_ids->push_back(node.id);
    s.nodes.push_back(std::move(n));
  }
  // A LeaderWorkerSet group's pods are one job, whatever their states.
  std::map<std::pair<int, std::int32_t>, std::size_t> group_job;
  const auto add = [&](const Pod& pod, TaskState state) {
    const PodTemplate& t = cluster.template_of(pod);
    SnapshotTask task;
    task.name = pod_name(cluster, pod);
    task.pod = t;
    task.memory_bytes = task.pod.memory_mib * kBytesPerMiB;
    task.state = state;
    task.node = pod.node >= 0 ? snap_node[static_cast<std::size_t>(pod.node)] : -1;
    std::size_t j = s.jobs.size();
    if (t.owner.group_size > 1 && pod.replica >= 0) {
      const auto [it, added] = group_job.emplace(std::make_pair(pod.template_index, pod.replica), j);
      j = it->second;
      if (!added) {
        s.jobs[j].tasks.push_back(std::move(task));
        if (pods_of_job) (*pods_of_job)[j].push_back(pod.id);
        return;
      }
    }
    SnapshotJob job = job_of(cluster, pod);
    job.tasks.push_back(std::move(task));
    if (pods_of_job) pods_of_job->push_back({pod.id});
    s.jobs.push_back(std::move(job));
  };
  for (const Node& node : cluster.nodes) {
    if (snap_node[node.id] < 0) continue;
    for (std::uint32_t id : node.pods) {
      const Pod& pod = cluster.pods[id];
      if (is_kai_pod(cluster, pod)) add(pod, pod.terminating() ? TaskState::Releasing : TaskState::Running);
    }
  }
  for (std::uint32_t id : pending) add(cluster.pods[id], TaskState::Pending);
  return s;
}

void KaiScheduler::cycle_key(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, std::vector<std::int64_t>& key) {
  key.assign(pending.begin(), pending.end());
  key.push_back(-1);
  for (const Node& node : cluster.nodes) {
    if (node.phase == NodePhase::Terminated) continue;
    key.push_back(node.id);
    key.push_back(static_cast<std::int64_t>(node.phase) * 4 + (node.disrupted ? 2 : 0) + (node.ready_at >= 0 ? 1 : 0));
    key.push_back(static_cast<std::int64_t>(node.taints.size()));
    for (std::uint32_t id : node.pods) key.push_back(cluster.pods[id].terminating() ? -2 - static_cast<std::int64_t>(id) : id);
    key.push_back(-1);
  }
}

const SchedulingCycle& KaiScheduler::schedule(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) {
  cycle_key(cluster, pending, key_);
  if (has_last_ && key_ == last_key_) {
    if (last_cycle_.next_wakeup >= 0) last_cycle_.next_wakeup = now + period();
    return last_cycle_;
  }
  last_cycle_ = run(cluster, pending, now);
  last_key_.swap(key_);
  has_last_ = true;
  return last_cycle_;
}

SchedulingCycle KaiScheduler::run(const ClusterState& cluster, const std::vector<std::uint32_t>& pending, Micros now) {
  SchedulingCycle cycle;
  std::vector<std::vector<std::uint32_t>> pods_of_job;
  std::vector<std::uint32_t> node_id;
  const Snapshot snap = snapshot(cluster, pending, &pods_of_job, &node_id);
  const ScheduleOutcome out = kai::run_cycle(snap);
  bool waiting = false;
  for (std::size_t j = 0; j < snap.jobs.size(); ++j) {
    for (std::size_t k = 0; k < snap.jobs[j].tasks.size(); ++k) {
      if (snap.jobs[j].tasks[k].state != TaskState::Pending) continue;
      const TaskOutcome& task = out.jobs[j].tasks[k];
      PodOutcome o;
      o.pod = pods_of_job[j][k];
      if (task.status == "Binding") {
        o.node = node_id[static_cast<std::size_t>(task.node)];
        o.reason = "Scheduled";
        o.message = "allocated by KAI Scheduler to node " + std::to_string(*o.node) + " (PodGroup " + snap.jobs[j].name + ", queue " + snap.jobs[j].queue + ")";
      } else if (task.status == "Pipelined") {
        o.reason = "Pipelined";
        o.message = "pipelined onto node " + std::to_string(node_id[static_cast<std::size_t>(task.node)]) + ": it binds once the room being released there is free";
        waiting = true;
      } else {
        o.reason = "Unschedulable";
        o.message = "PodGroup " + snap.jobs[j].name + " (queue " + snap.jobs[j].queue + "): " +
                    (out.jobs[j].reason.empty() ? std::string("not allocated") : out.jobs[j].reason + ": " + out.jobs[j].message);
        waiting = true;
      }
      cycle.outcomes.push_back(std::move(o));
    }
  }
  for (const Victim& v : out.victims) {
    PodEviction e;
    e.pod = pods_of_job[static_cast<std::size_t>(v.job)][static_cast<std::size_t>(v.task)];
    e.action = v.action;
    e.message = "PodGroup " + snap.jobs[static_cast<std::size_t>(v.job)].name + " (queue " + snap.jobs[static_cast<std::size_t>(v.job)].queue + ") evicted by " +
                v.action + (v.for_job.empty() ? "" : " for " + v.for_job);
    cycle.evictions.push_back(std::move(e));
  }
  cycle.notes = out.log;
  for (std::size_t q = 0; q < snap.queues.size() && q < out.queues.size(); ++q) {
    const QueueOutcome& f = out.queues[q];
    cycle.queues.push_back(QueueGpus{snap.queues[q].name, f.deserved[0], f.fair_share[0], f.allocated[0], f.request[0]});
  }
  if (waiting || !cycle.evictions.empty()) cycle.next_wakeup = now + period();
  return cycle;
}

}  // namespace gpuscale
