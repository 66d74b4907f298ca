// One KAI Scheduler cycle (see session.hpp). Sources, all kai-scheduler/KAI-Scheduler:
//   session and statement: pkg/scheduler/framework/session.go, statement.go (Allocate, Pipeline, Evict,
//     Checkpoint, Rollback, Commit, Discard);
//   queue and job order: pkg/scheduler/actions/utils/job_order_by_queue.go, plugins/proportion/
//     queue_order/queue_order.go, plugins/priority, plugins/elastic, framework/session_plugins.go;
//   allocate: actions/allocate/allocate.go, actions/common/allocate.go, api/podgroup_info/allocation_info.go;
//   node order: plugins/nodeavailability, plugins/resourcetype, plugins/nodeplacement/pack.go, scores.go;
//   node resources: api/node_info/node_info.go (idle, releasing, used; a pipelined task takes releasing room);
//   queue usage: plugins/proportion/proportion.go (updateQueuesCurrentResourceUsage, allocate/deallocate handlers).
#include "scheduling/kai/session.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "scheduling/fit.hpp"
#include "scheduling/kai/capacity.hpp"
#include "scheduling/kai/eviction.hpp"
#include "scheduling/kai/session_state.hpp"

namespace gpuscale::kai {

namespace {

constexpr double kMaxHighDensity = 9;     // scores.MaxHighDensity
constexpr double kResourceTypeScore = 10; // scores.ResourceType
constexpr double kAvailabilityScore = 100;  // scores.Availability

}  // namespace

// ---- the session's state ----------------------------------------------------------------------

Session::Session(const Snapshot& s) : snap(s) {
  nodes.resize(s.nodes.size());
  for (std::size_t n = 0; n < s.nodes.size(); ++n) {
    const SnapshotNode& sn = s.nodes[n];
    NodeRoom& room = nodes[n];
    room.allocatable = {static_cast<double>(sn.gpus), static_cast<double>(sn.cpu_milli), static_cast<double>(sn.memory_bytes)};
    room.idle = room.allocatable;
  }
  for (std::size_t q = 0; q < s.queues.size(); ++q) queue_index[s.queues[q].name] = static_cast<int>(q);
  queues = s.queues;
  queue_parent_.assign(queues.size(), -1);
  for (std::size_t q = 0; q < queues.size(); ++q) {
    const std::string& p = queues[q].parent;
    const auto it = p.empty() ? queue_index.end() : queue_index.find(p);
    queue_parent_[q] = it == queue_index.end() ? -1 : it->second;
  }
  // Children in index order; the top queues (no parentQueue) last. A queue whose parent is missing is
  // in neither (no snapshot has one: the reader refuses it).
  queue_children_.assign(queues.size() + 1, {});
  for (std::size_t q = 0; q < queues.size(); ++q) {
    if (queue_parent_[q] >= 0) queue_children_[static_cast<std::size_t>(queue_parent_[q])].push_back(static_cast<int>(q));
    else if (queues[q].parent.empty()) queue_children_[queues.size()].push_back(static_cast<int>(q));
  }
  for (Queue& q : queues)
    for (ResourceShare& r : q.resources) {
      r.allocated = r.allocated_not_preemptible = r.request = r.fair_share = 0;
    }
  tasks.resize(s.jobs.size());
  fit_errors.resize(s.jobs.size());
  // The job's pod sets (PodSets) and SubGroupSets (subgroup_info/factory.go FromPodGroup, job_info.go
  // setSubGroups): without sub-groups one default set with the job's minMember under the root; with
  // them, each sub-group with children a SubGroupSet under its parent (its minSubGroup), each without
  // a PodSet (its minMember, unset 0). The root takes the PodGroup's minSubGroup. Every task is in a
  // PodSet (the reader refuses one in none). Members in spec order; allocation orders them.
  pod_sets_.resize(s.jobs.size());
  task_set_.resize(s.jobs.size());
  group_sets_.resize(s.jobs.size());
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    const SnapshotJob& job = s.jobs[j];
    std::vector<PodSet>& sets = pod_sets_[j];
    std::vector<GroupSet>& groups = group_sets_[j];
    groups.assign(1, GroupSet{});
    groups[0].min_sub_group = job.min_sub_group;
    if (job.sub_groups.empty()) {
      sets.push_back({"", job.min_member, -1});
      groups[0].sets.push_back(0);
    } else {
      std::vector<int> group_of(job.sub_groups.size(), -1);
      for (std::size_t g = 0; g < job.sub_groups.size(); ++g) {
        if (job.sub_groups[g].leaf) continue;
        group_of[g] = static_cast<int>(groups.size());
        groups.push_back(GroupSet{static_cast<int>(g), job.sub_groups[g].min_sub_group, {}, {}});
      }
      for (std::size_t g = 0; g < job.sub_groups.size(); ++g) {
        const SnapshotSubGroup& sg = job.sub_groups[g];
        GroupSet& parent = groups[static_cast<std::size_t>(sg.parent_index < 0 ? 0 : group_of[static_cast<std::size_t>(sg.parent_index)])];
        if (!sg.leaf) {
          parent.groups.push_back(group_of[g]);
          continue;
        }
        parent.sets.push_back(static_cast<int>(sets.size()));
        sets.push_back({sg.name, std::max(sg.min_member, 0), static_cast<int>(g)});
      }
    }
    task_set_[j].assign(job.tasks.size(), -1);
    for (std::size_t t = 0; t < job.tasks.size(); ++t)
      for (std::size_t k = 0; k < sets.size(); ++k)
        if (sets[k].name == job.tasks[t].sub_group) {
          task_set_[j][t] = static_cast<int>(k);
          break;
        }
  }
  elastic_.assign(s.jobs.size(), 0);
  changed_flag_.assign(s.jobs.size(), 0);
  domain_index_.resize(s.topologies.size());
  topology_tree_.resize(s.topologies.size());
  for (std::size_t t = 0; t < s.topologies.size(); ++t) domain_index_[t].resize(s.topologies[t].levels.size());
  job_queue.assign(s.jobs.size(), -1);
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    const SnapshotJob& job = s.jobs[j];
    const auto qi = queue_index.find(job.queue);
    job_queue[j] = qi == queue_index.end() ? -1 : qi->second;
    tasks[j].resize(job.tasks.size());
    for (std::size_t t = 0; t < job.tasks.size(); ++t) {
      const SnapshotTask& st = job.tasks[t];
      TaskRun& run = tasks[j][t];
      run.request = {static_cast<double>(st.pod.gpus), static_cast<double>(st.pod.cpu_milli), static_cast<double>(st.memory_bytes)};
      run.node = st.node;
      switch (st.state) {
        case TaskState::Pending: run.status = Status::Pending; break;
        case TaskState::Running: run.status = Status::Running; break;
        case TaskState::Releasing: run.status = Status::Releasing; break;
        case TaskState::Gated: run.status = Status::Gated; break;
        case TaskState::Failed: run.status = Status::Failed; break;
        case TaskState::Succeeded: run.status = Status::Succeeded; break;
        case TaskState::StuckInReleasing: run.status = Status::StuckInReleasing; break;
      }
      if (run.node >= 0 && (run.status == Status::Running || run.status == Status::Releasing || run.status == Status::StuckInReleasing)) {
        NodeRoom& room = nodes[static_cast<std::size_t>(run.node)];
        const Vec charged = charged_on(room, run.request);
        room.used += charged;
        if (run.status == Status::Releasing) room.releasing += charged;
        room.idle -= charged;
      }
      // proportion.go updateQueuesCurrentResourceUsage: allocated statuses count as allocated and
      // requested, pending ones as requested; releasing ones as neither.
      if (run.status == Status::Running) {
        add_queue_usage(static_cast<int>(j), run.request, +1);
        add_queue_request(static_cast<int>(j), run.request);
      } else if (run.status == Status::Pending) {
        add_queue_request(static_cast<int>(j), run.request);
      }
    }
  }
  // plugins/taskorder: kai.scheduler/task-priority (an integer; labelled first, higher first), then the
  // session's fallback, creation then UID: the snapshot's pods have no creation time, so their name.
  task_order_.resize(s.jobs.size());
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    std::vector<int>& order = task_order_[j];
    for (std::size_t t = 0; t < s.jobs[j].tasks.size(); ++t) order.push_back(static_cast<int>(t));
    const auto priority_of = [&](int t) -> std::optional<long long> {
      const Labels& l = s.jobs[j].tasks[static_cast<std::size_t>(t)].pod.labels;
      const auto it = l.find("kai.scheduler/task-priority");
      if (it == l.end() || it->second.empty()) return std::nullopt;
      long long v = 0;
      std::size_t k = it->second[0] == '-' ? 1 : 0;
      if (k == it->second.size()) return std::nullopt;
      for (; k < it->second.size(); ++k) {
        if (it->second[k] < '0' || it->second[k] > '9' || v > 100000000000LL) return std::nullopt;
        v = v * 10 + (it->second[k] - '0');
      }
      return it->second[0] == '-' ? -v : v;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto pa = priority_of(a), pb = priority_of(b);
      if (pa.has_value() != pb.has_value()) return pa.has_value();
      if (pa && *pa != *pb) return *pa > *pb;
      return s.jobs[j].tasks[static_cast<std::size_t>(a)].name < s.jobs[j].tasks[static_cast<std::size_t>(b)].name;
    });
  }
  all_nodes_ = all_nodes();
  for (const NodeRoom& n : nodes)
    for (int r = 0; r < 3; ++r) max_allocatable.v[r] = std::max(max_allocatable.v[r], n.allocatable.v[r]);
  // Node names' rank (equal names, equal rank): the node order's tie-break, without comparing strings.
  {
    std::vector<int> by_name = all_nodes();
    std::stable_sort(by_name.begin(), by_name.end(), [&](int a, int b) {
      return s.nodes[static_cast<std::size_t>(a)].name < s.nodes[static_cast<std::size_t>(b)].name;
    });
    node_name_rank.assign(nodes.size(), 0);
    for (std::size_t k = 0; k < by_name.size(); ++k) {
      const std::size_t n = static_cast<std::size_t>(by_name[k]);
      const bool same = k > 0 && s.nodes[n].name == s.nodes[static_cast<std::size_t>(by_name[k - 1])].name;
      node_name_rank[n] = same ? node_name_rank[static_cast<std::size_t>(by_name[k - 1])] : static_cast<int>(k);
    }
  }
  // The proportion plugin's total: every node's allocatable (all snapshot nodes are Ready).
  for (const NodeRoom& n : nodes)
    for (int r = 0; r < kNumResources; ++r) total.amount[r] += n.allocatable.v[r];
  DivisionTrace trace;
  set_fair_shares(queues, total, s.kai.k_value, &trace);
  for (std::string& line : trace.lines) log.push_back("fair share: " + line);
}

Vec Session::charged_on(const NodeRoom& room, const Vec& request) {
  // A snapshot node that states no CPU or memory offers as much as its pods ask: that resource is not
  // charged there. GPUs always are: a node whose device plugin advertises none (a CPU node, or a GPU
  // node not yet initialized) takes no GPU pod (node_info.go lessEqualTaskToNodeResources compares the
  // GPU count like any other resource).
  Vec v = request;
  for (int r = 1; r < 3; ++r)
    if (room.allocatable.v[r] == 0) v.v[r] = 0;
  return v;
}

void Session::add_queue_request(int job, const Vec& request) {
  for (int q = job_queue[static_cast<std::size_t>(job)]; q >= 0; q = parent_of(q))
    for (int r = 0; r < kNumResources; ++r) queues[static_cast<std::size_t>(q)].resources[r].request += request.v[r];
}

void Session::add_queue_usage(int job, const Vec& request, int sign) {
  const bool preemptible = snap.jobs[static_cast<std::size_t>(job)].preemptible;
  for (int q = job_queue[static_cast<std::size_t>(job)]; q >= 0; q = parent_of(q))
    for (int r = 0; r < kNumResources; ++r) {
      ResourceShare& s = queues[static_cast<std::size_t>(q)].resources[r];
      s.allocated += sign * request.v[r];
      if (!preemptible) s.allocated_not_preemptible += sign * request.v[r];
    }
}

// ---- the statement: what an action did, undone on discard -------------------------------------

void Session::allocate_task(int j, int t, int node, bool pipelined) {
  TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  NodeRoom& room = nodes[static_cast<std::size_t>(node)];
  const Vec charged = charged_on(room, run.request);
  // framework/statement.go Pipeline: a pod pipelined (in a pipeline-only simulation) back onto the node
  // it was evicted from in this statement is unevicted (Unevict: the eviction undone, its status and
  // room as before), not pipelined: it is then no victim at all (by_pod_solver.go counts only the
  // victims left Releasing or Pipelined).
  if (pipelined && run.status == Status::Pending)
    for (auto it = journal.rbegin(); it != journal.rend(); ++it) {
      if (it->job != j || it->task != t) continue;
      if (it->kind == Op::Evict && it->prev_node == node && is_active_allocated(it->prev_status)) {
        const Status before = it->prev_status;  // (the push below may move the journal)
        journal.push_back({Op::Unevict, j, t, run.status, run.node});
        touched(j);
        room.releasing -= charged;
        run.status = before;
        run.node = node;
        add_queue_usage(j, run.request, +1);
        return;
      }
      break;
    }
  journal.push_back({Op::Place, j, t, run.status, run.node});
  touched(j);
  run.status = pipelined ? Status::Pipelined : Status::Allocated;
  run.node = node;
  room.used += charged;
  if (pipelined) room.releasing -= charged;  // node_info addTaskResources: Pipelined takes releasing room
  else room.idle -= charged;
  add_queue_usage(j, run.request, +1);
}

void Session::evict_task(int j, int t) {
  TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  NodeRoom& room = nodes[static_cast<std::size_t>(run.node)];
  const Vec charged = charged_on(room, run.request);
  journal.push_back({Op::Evict, j, t, run.status, run.node});
  touched(j);
  // A running pod turns Releasing: its room is still used, and now releasing.
  room.releasing += charged;  // idle is unchanged: the pod's room was already taken from it
  // proportion.go deallocateHandlerFn: the queues' allocation falls; their request stays what the
  // session opened with (no event changes it).
  if (run.status != Status::Pending) add_queue_usage(j, run.request, -1);
  run.status = Status::Releasing;
}

void Session::rollback(std::size_t mark) {
  while (journal.size() > mark) {
    const Op op = journal.back();
    journal.pop_back();
    TaskRun& run = tasks[static_cast<std::size_t>(op.job)][static_cast<std::size_t>(op.task)];
    NodeRoom& room = nodes[static_cast<std::size_t>(op.kind == Op::Evict ? op.prev_node : run.node)];
    const Vec charged = charged_on(room, run.request);
    if (op.kind == Op::Unevict) {
      room.releasing += charged;
      add_queue_usage(op.job, run.request, -1);
    } else if (op.kind == Op::Place) {
      room.used -= charged;
      if (run.status == Status::Pipelined) room.releasing += charged;
      else room.idle += charged;
      add_queue_usage(op.job, run.request, -1);
    } else {
      room.releasing -= charged;
      if (op.prev_status != Status::Pending) add_queue_usage(op.job, run.request, +1);
    }
    run.status = op.prev_status;
    run.node = op.prev_node;
    touched(op.job);
  }
}

void Session::settle() {
  if (!journal.empty()) ++epoch;
  journal.clear();
}

void Session::touched(int j) {
  elastic_[static_cast<std::size_t>(j)] = 0;
  if (changed_flag_[static_cast<std::size_t>(j)]) return;
  changed_flag_[static_cast<std::size_t>(j)] = 1;
  changed_jobs_.push_back(j);
}

// ---- job and task views -----------------------------------------------------------------------

bool is_active_allocated(Status s) {
  return s == Status::Allocated || s == Status::Pipelined || s == Status::Binding || s == Status::Running;
}

bool Session::has_pending(int j) const {
  for (const TaskRun& t : tasks[static_cast<std::size_t>(j)])
    if (t.status == Status::Pending) return true;
  return false;
}

std::vector<int> Session::active_per_set(int j) const {
  std::vector<int> active(pod_sets(j).size(), 0);
  const std::vector<int>& of = task_set_[static_cast<std::size_t>(j)];
  const std::vector<TaskRun>& run = tasks[static_cast<std::size_t>(j)];
  for (std::size_t t = 0; t < run.size(); ++t)
    if (of[t] >= 0 && is_active_allocated(run[t].status)) ++active[static_cast<std::size_t>(of[t])];
  return active;
}

int Session::members_to_satisfy(int j, int g) const {
  const GroupSet& set = group_sets_[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)];
  return set.min_sub_group >= 0 ? set.min_sub_group : static_cast<int>(set.groups.size() + set.sets.size());
}

int Session::satisfied_members(int j, int g, const std::vector<int>& active) const {
  const GroupSet& set = group_sets_[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)];
  int n = 0;
  for (const int child : set.groups) n += satisfied_members(j, child, active) >= members_to_satisfy(j, child) ? 1 : 0;
  for (const int k : set.sets) n += active[static_cast<std::size_t>(k)] >= pod_sets(j)[static_cast<std::size_t>(k)].min_member ? 1 : 0;
  return n;
}

namespace {

// subgroup_order.go orderByAllocationRatio: -1 when l comes first, 1 when r does, 0 when even.
int allocation_ratio_order(int l_count, int l_threshold, int r_count, int r_threshold) {
  const bool l_sat = l_count >= l_threshold, r_sat = r_count >= r_threshold;
  if (!l_sat && !r_sat) return 0;
  if (!l_sat) return -1;
  if (!r_sat) return 1;
  if (l_threshold == 0 && r_threshold > 0) return 1;   // required before optional
  if (r_threshold == 0 && l_threshold > 0) return -1;
  if (l_threshold == 0 && r_threshold == 0) return l_count < r_count ? -1 : r_count < l_count ? 1 : 0;
  // the allocation ratios l_count / l_threshold and r_count / r_threshold, compared exactly
  const long long l = static_cast<long long>(l_count) * r_threshold, r = static_cast<long long>(r_count) * l_threshold;
  return l < r ? -1 : r < l ? 1 : 0;
}

}  // namespace

// allocate.go orderedMembers, allocation_info.go collectTasksFromSubGroupSet: GetMembers sorted by the
// session's SubGroupOrderFn (session_plugins.go: the plugin's order, then the member's name); eviction
// (eviction_info.go GetTasksToEvict) sorts by its reverse.
std::vector<Session::Member> Session::ordered_members(int j, int g, const std::vector<int>& active, bool reverse) const {
  const GroupSet& set = group_sets_[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)];
  const std::vector<GroupSet>& groups = group_sets_[static_cast<std::size_t>(j)];
  const SnapshotJob& job = snap.jobs[static_cast<std::size_t>(j)];
  struct Entry {
    Member m;
    int count, threshold;
    const std::string* name;
  };
  std::vector<Entry> entries;
  for (const int child : set.groups)
    entries.push_back({{true, child}, satisfied_members(j, child, active), members_to_satisfy(j, child),
                       &job.sub_groups[static_cast<std::size_t>(groups[static_cast<std::size_t>(child)].sub_group)].name});
  for (const int k : set.sets)
    entries.push_back({{false, k}, active[static_cast<std::size_t>(k)], pod_sets(j)[static_cast<std::size_t>(k)].min_member,
                       &pod_sets(j)[static_cast<std::size_t>(k)].name});
  const auto before = [](const Entry& l, const Entry& r) {
    const int c = allocation_ratio_order(l.count, l.threshold, r.count, r.threshold);
    return c != 0 ? c < 0 : *l.name < *r.name;
  };
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& b) { return reverse ? before(b, a) : before(a, b); });
  std::vector<Member> out;
  out.reserve(entries.size());
  for (const Entry& e : entries) out.push_back(e.m);
  return out;
}

// allocation_info.go GetTasksToAllocate: the SubGroupSet tree from the root. A SubGroupSet below its
// minimum takes the missing tasks of its K first members in order (K its members to satisfy; a member
// already satisfied gives none); one that is satisfied takes the tasks of its first member that has
// any (the elastic phase). A PodSet below its minAvailable gives its missing tasks, a satisfied one one
// more. Tasks by TaskOrderFn: the label kai.scheduler/task-priority (higher first, labelled before
// unlabelled), then creation, then UID — the pod's name here.
std::vector<int> Session::tasks_to_allocate(int j) const {
  if (j == partial_job) {
    std::vector<int> out;
    for (const int t : partial_tasks)
      if (tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].status == Status::Pending) out.push_back(t);
    return out;
  }
  const std::vector<int>& of = task_set_[static_cast<std::size_t>(j)];
  const std::vector<TaskRun>& run = tasks[static_cast<std::size_t>(j)];
  const std::vector<int> active = active_per_set(j);
  std::vector<int> out;
  // collectTasksFromPodSet
  const auto from_set = [&](int k) {
    const int have = active[static_cast<std::size_t>(k)], min = pod_sets(j)[static_cast<std::size_t>(k)].min_member;
    const int limit = have >= min ? 1 : min - have;
    const std::size_t start = out.size();
    for (const int t : task_order_[static_cast<std::size_t>(j)]) {
      if (static_cast<int>(out.size() - start) >= limit) break;
      if (of[static_cast<std::size_t>(t)] == k && run[static_cast<std::size_t>(t)].status == Status::Pending) out.push_back(t);
    }
    return out.size() > start;
  };
  // collectTasksFromSubGroupSet (its gang phase through collectFromChildInGangPhase)
  const std::function<bool(int)> from_group = [&](int g) {
    const std::size_t start = out.size();
    const std::vector<Member> members = ordered_members(j, g, active, false);
    const int k_needed = members_to_satisfy(j, g);
    if (satisfied_members(j, g, active) < k_needed) {
      for (int i = 0; i < k_needed && i < static_cast<int>(members.size()); ++i) {
        const Member& m = members[static_cast<std::size_t>(i)];
        if (m.group) {
          if (satisfied_members(j, m.index, active) < members_to_satisfy(j, m.index)) from_group(m.index);
        } else if (active[static_cast<std::size_t>(m.index)] < pod_sets(j)[static_cast<std::size_t>(m.index)].min_member) {
          from_set(m.index);
        }
      }
      return out.size() > start;
    }
    for (const Member& m : members)
      if (m.group ? from_group(m.index) : from_set(m.index)) return true;
    return false;
  };
  const GroupSet& root = group_sets_[static_cast<std::size_t>(j)][0];
  if (root.groups.empty() && root.sets.size() == 1) from_set(root.sets[0]);  // one pod set: its own rule, whatever the root's minimum
  else from_group(0);
  return out;
}

bool Session::task_under(int j, int t, int g) const {
  if (g < 0) return true;
  const int k = task_set_[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  if (k < 0) return false;
  const std::vector<SnapshotSubGroup>& groups = snap.jobs[static_cast<std::size_t>(j)].sub_groups;
  for (int at = pod_sets(j)[static_cast<std::size_t>(k)].sub_group; at >= 0; at = groups[static_cast<std::size_t>(at)].parent_index)
    if (at == g) return true;
  return false;
}

Vec Session::request_of(int j, const std::vector<int>& which) const {
  Vec v;
  for (int t : which) v += tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].request;
  return v;
}

// elastic.go minAvailableState
Session::Elastic Session::elastic_from(const std::vector<PodSet>& sets, const std::vector<int>& active) {
  Elastic state = Elastic::Exactly;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    if (active[k] < sets[k].min_member) return Elastic::Below;
    if (active[k] > sets[k].min_member) state = Elastic::Above;
  }
  return state;
}

Session::Elastic Session::elastic_state(int j) const {
  std::uint8_t& memo = elastic_[static_cast<std::size_t>(j)];
  if (memo) return static_cast<Elastic>(memo - 1);
  const Elastic state = elastic_from(pod_sets(j), active_per_set(j));
  memo = static_cast<std::uint8_t>(static_cast<int>(state) + 1);
  return state;
}

// session_plugins.go JobOrderFn: the priority plugin (higher first), the elastic plugin (below
// minMember first, then exactly at it), then creation time, then UID (the name).
bool Session::job_order_before(const SnapshotJob& ja, Elastic ea, const SnapshotJob& jb, Elastic eb) {
  if (ja.priority != jb.priority) return ja.priority > jb.priority;
  if (ea != eb) return ea == Elastic::Below || (ea == Elastic::Exactly && eb == Elastic::Above);
  if (ja.created != jb.created) return ja.created < jb.created;
  return ja.name < jb.name;
}

bool Session::job_before(int a, int b) const {
  return job_order_before(snap.jobs[static_cast<std::size_t>(a)], elastic_state(a), snap.jobs[static_cast<std::size_t>(b)], elastic_state(b));
}

// ---- queue order (queue_order.go GetQueueOrderResult) -----------------------------------------

namespace {

bool fair_share_less_than_allocated(const Queue& q) {
  for (const ResourceShare& r : q.resources)
    if (r.fair_share >= r.allocated) return false;
  return true;
}

// resource_quantities.go compareQuantities: -1 (unlimited) is above everything.
int compare_quantities(double a, double b) {
  if (a == kUnlimited) return b == kUnlimited ? 0 : 1;
  if (b == kUnlimited) return -1;
  return a > b ? 1 : a < b ? -1 : 0;
}

double dominant_share(const Queue& q, const Totals& total, const Vec& extra) {
  double dominant = 0;
  for (int r = 0; r < kNumResources; ++r) {
    const ResourceShare& s = q.resources[r];
    double allocatable = allocatable_share(s);
    if (allocatable == kUnlimited) allocatable = total.amount[r];
    const double allocated = s.allocated + extra.v[r];
    const double value = allocatable == 0 ? allocated * 1000 : allocated / allocatable;  // noFairShareDrfMultiplier
    dominant = std::max(dominant, value);
  }
  return dominant;
}

}  // namespace

// resource_share.go GetAllocatableShare: max(deserved, fair share) capped by the limit; an unlimited
// quota gives the limit.
double allocatable_share(const ResourceShare& r) {
  if (r.deserved == kUnlimited) return r.max_allowed;
  double a = std::max(r.deserved, r.fair_share);
  if (r.max_allowed != kUnlimited) a = std::min(r.max_allowed, a);
  return a;
}

bool Session::has_active(int j) const {
  for (const TaskRun& t : tasks[static_cast<std::size_t>(j)])
    if (is_active_allocated(t.status) && t.node >= 0) return true;
  return false;
}

// -1: a first, 1: b first. `ja`, `jb`: each queue's best pending job (-1: none).
int Session::queue_order(int qa, int qb, int ja, int jb, const Vec* ja_request, const Vec* jb_request, const Vec* a_out,
                         const Vec* b_out) const {
  const Queue& a = queues[static_cast<std::size_t>(qa)];
  const Queue& b = queues[static_cast<std::size_t>(qb)];
  // prioritizeUnderUtilized
  const bool a_over = fair_share_less_than_allocated(a), b_over = fair_share_less_than_allocated(b);
  if (!a_over && b_over) return -1;
  if (a_over && !b_over) return 1;
  const Vec ra = ja_request ? *ja_request : ja >= 0 ? request_of(ja, tasks_to_allocate(ja)) : Vec{};
  const Vec rb = jb_request ? *jb_request : jb >= 0 ? request_of(jb, tasks_to_allocate(jb)) : Vec{};
  // prioritizeUnderQuotaWithJob
  const auto starved = [](const Queue& q, const Vec& req) {
    for (int r = 0; r < kNumResources; ++r)
      if (compare_quantities(q.resources[r].allocated + req.v[r], q.resources[r].deserved) > 0) return false;
    return true;
  };
  const bool a_starved = starved(a, ra), b_starved = starved(b, rb);
  if (a_starved && !b_starved) return -1;
  if (b_starved && !a_starved) return 1;
  // prioritizePrioritized
  if (a.priority != b.priority) return a.priority > b.priority ? -1 : 1;
  // penalizeZeroShareWithJob
  const auto violates = [](const Queue& q, const Vec& req) {
    bool v = false;
    for (int r = 0; r < kNumResources; ++r)
      if (allocatable_share(q.resources[r]) == 0 && q.resources[r].allocated + req.v[r] > 0) v = true;
    return v;
  };
  const bool a_viol = violates(a, ra), b_viol = violates(b, rb);
  if (a_viol && !b_viol) return 1;
  if (!a_viol && b_viol) return -1;
  // prioritizeSmallerResourceShare (with the job), then without it
  Vec ea = ra, eb = rb;
  if (a_out) ea -= *a_out;
  if (b_out) eb -= *b_out;
  const double da = dominant_share(a, total, ea), db = dominant_share(b, total, eb);
  if (da != db) return da < db ? -1 : 1;
  const double wa = dominant_share(a, total, Vec{}), wb = dominant_share(b, total, Vec{});
  if (wa != wb) return wa < wb ? -1 : 1;
  // prioritizeBasedOnAllocatableShare: smaller in at least one resource and not larger in any
  const auto smaller = [](const Queue& l, const Queue& r) {
    bool less_one = false;
    for (int k = 0; k < kNumResources; ++k) {
      const double x = allocatable_share(l.resources[k]), y = allocatable_share(r.resources[k]);
      if (x < y) less_one = true;
      if (x > y) return false;
    }
    return less_one;
  };
  if (smaller(a, b)) return -1;
  if (smaller(b, a)) return 1;
  // prioritizeBasedOnCreationTime
  return a.created < b.created ? -1 : 1;
}

// The next job by the tree of queues (job_order_by_queue.go PopNextJob): from the top queues down,
// at each level the child queue first by queue order, compared by each one's best job; in the leaf,
// the first job by job order.
int Session::pop_next_job(JobsByQueue& by_queue) {
  // A job whose elastic state changed since the last pop may change its queue's first job.
  for (const int j : changed_jobs_) {
    const std::size_t ji = static_cast<std::size_t>(j);
    changed_flag_[ji] = 0;
    const auto e = static_cast<std::uint8_t>(elastic_state(j));
    if (e == by_queue.seen[ji]) continue;
    by_queue.seen[ji] = e;
    if (job_queue[ji] >= 0) by_queue.dirty[static_cast<std::size_t>(job_queue[ji])] = 1;
  }
  changed_jobs_.clear();
  // The best job of a queue's subtree, and whether it has one.
  struct Tree {
    const Session& s;
    JobsByQueue& by;
    std::vector<int> best;  // -2: not computed
    std::vector<Vec> request;  // the best job's tasks to allocate, their request
    std::vector<char> has_request;
    const Vec* request_of_best(int q) {
      const std::size_t qi = static_cast<std::size_t>(q);
      if (!has_request[qi]) {
        const int j = best_of(q);
        request[qi] = s.request_of(j, s.tasks_to_allocate(j));
        has_request[qi] = 1;
      }
      return &request[qi];
    }
    int best_of(int q) {
      const std::size_t qi = static_cast<std::size_t>(q);
      if (best[qi] != -2) return best[qi];
      int b = -1;
      const std::vector<int>& own = by.jobs[qi];
      if (!own.empty()) {
        if (by.dirty[qi]) {
          for (int j : own)
            if (b < 0 || s.job_before(j, b)) b = j;
          by.best[qi] = b;
          by.dirty[qi] = 0;
        }
        b = by.best[qi];
      } else {
        const int child = best_child(q);
        b = child < 0 ? -1 : best_of(child);
      }
      best[qi] = b;
      return b;
    }
    int best_child(int parent) {
      int chosen = -1;
      for (const int c : s.queue_children_[parent < 0 ? s.queues.size() : static_cast<std::size_t>(parent)]) {
        if (best_of(c) < 0) continue;
        if (chosen < 0 || s.queue_order(c, chosen, best_of(c), best_of(chosen), request_of_best(c), request_of_best(chosen)) < 0) chosen = c;
      }
      return chosen;
    }
  } tree{*this, by_queue, std::vector<int>(queues.size(), -2), std::vector<Vec>(queues.size()), std::vector<char>(queues.size(), 0)};
  int q = tree.best_child(-1);
  if (q < 0) return -1;
  while (by_queue.jobs[static_cast<std::size_t>(q)].empty()) {
    q = tree.best_child(q);
    if (q < 0) return -1;
  }
  const int j = tree.best_of(q);
  std::vector<int>& own = by_queue.jobs[static_cast<std::size_t>(q)];
  own.erase(std::find(own.begin(), own.end(), j));
  by_queue.dirty[static_cast<std::size_t>(q)] = 1;
  return j;
}

// ---- node choice ------------------------------------------------------------------------------

bool Session::passes_predicates(int j, int t, int node, std::string* why) const {
  const SnapshotNode& n = snap.nodes[static_cast<std::size_t>(node)];
  const PodTemplate& pod = snap.jobs[static_cast<std::size_t>(j)].tasks[static_cast<std::size_t>(t)].pod;
  if (n.unschedulable) {
    if (why) *why = "node(s) were unschedulable";
    return false;
  }
  if (!fits_node_affinity(pod, n.labels)) {
    if (why) *why = "node(s) didn't match Pod's node affinity/selector";
    return false;
  }
  if (const Taint* taint = first_untolerated(pod.tolerations, n.taints)) {
    if (why) *why = "node(s) had untolerated taint {" + taint->key + (taint->value.empty() ? "" : ": " + taint->value) + "}";
    return false;
  }
  return true;
}

// The node a task goes to among `candidates`: the first, by node order, with room in its idle and
// releasing resources that passes the predicates. Node order is the plugins' score, highest first;
// upstream's order among equal scores follows a Go map, here the node's name, then the candidates'
// order. Taking the best feasible node in one pass gives the node a sort of all of them would, without
// the sort: feasibility does not depend on the order, and the predicates run only for a node that
// would beat the best so far. -1: none.
int Session::best_node(int j, int t, const std::vector<int>& candidates) const {
  const TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  const bool gpu_task = run.request.v[0] > 0;
  const int packed = gpu_task ? 0 : 1;  // nodeplacement: by GPUs for a GPU job, else by CPU
  // placementStrategy spread (nodeplacement.go: noopPreOrderFn, nodeResourceSpread): the share of the
  // node's resource not allocated, emptiest first; binpack: pack.go's range over the candidates.
  const bool spread = snap.kai.spread;
  // pack.go getMinMaxPerNode over the nodes that have the resource at all.
  double lo = std::numeric_limits<double>::max(), hi = 0;
  for (int n : candidates) {
    if (spread) break;
    const NodeRoom& room = nodes[static_cast<std::size_t>(n)];
    if (room.allocatable.v[packed] == 0) continue;
    const double free = room.idle.v[packed] + room.releasing.v[packed];
    lo = std::min(lo, free);
    hi = std::max(hi, free);
  }
  int best = -1;
  double best_score = 0;
  const double gpus = run.request.v[0];
  for (int n : candidates) {
    const NodeRoom& room = nodes[static_cast<std::size_t>(n)];
    if (gpus > room.idle.v[0] + room.releasing.v[0] + 1e-9) continue;  // fits' first test, before the rest
    const Vec need = charged_on(room, run.request);
    Vec room_free = room.idle;
    room_free += room.releasing;
    if (!fits(need, room_free)) continue;
    double score = 0;
    if (fits(need, room.idle)) score += kAvailabilityScore;                                         // nodeavailability
    if (!gpu_task && room.allocatable.v[0] == 0) score += kResourceTypeScore;                        // resourcetype
    if (!topology_score_.empty()) score += topology_score_[static_cast<std::size_t>(n)];             // topology
    const double free = room.idle.v[packed] + room.releasing.v[packed];
    if (spread) {
      if (room.allocatable.v[packed] != 0) score += free / room.allocatable.v[packed];               // spread.go
    } else if (room.allocatable.v[packed] != 0 && hi != 0) {
      score += lo == hi ? kMaxHighDensity : kMaxHighDensity * (1 - (free - lo) / (hi - lo));       // pack.go
    }
    if (best >= 0 && !(score > best_score || (score == best_score && node_name_rank[static_cast<std::size_t>(n)] <
                                                                      node_name_rank[static_cast<std::size_t>(best)])))
      continue;
    if (!passes_predicates(j, t, n, nullptr)) continue;
    best = n;
    best_score = score;
  }
  return best;
}

// ---- allocate ---------------------------------------------------------------------------------

// The task's fit errors over the nodes (api/common_info/pod_errors.go TasksFitErrors.Error(), node_info.go
// FittingError): "no nodes with enough resources were found: <count> <reason>. \n<count> <reason>.", the
// reasons sorted. A node records a resource reason when the pod fits neither its idle nor its idle and
// releasing room (available = allocatable − used), else the first predicate it fails.
std::string Session::task_fit_text(int j, int t) const {
  const TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  // The resource reasons are counted in place; their texts join the predicates' in `reasons`.
  int short_of[3] = {0, 0, 0};
  std::map<std::string, int> reasons;
  std::string why;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const NodeRoom& room = nodes[n];
    const Vec& need = run.request;
    Vec free = room.idle;
    free += room.releasing;
    if (!fits(need, free)) {
      if (fits(need, room.idle)) continue;
      Vec avail = room.allocatable;
      avail -= room.used;
      if (need.v[0] > avail.v[0]) ++short_of[0];
      if (static_cast<std::int64_t>(need.v[1]) > static_cast<std::int64_t>(avail.v[1])) ++short_of[1];
      if (need.v[2] > avail.v[2]) ++short_of[2];
      continue;
    }
    if (!passes_predicates(j, t, static_cast<int>(n), &why)) ++reasons[why];
  }
  const char* resource_reason[3] = {"node(s) didn't have enough resources: GPUs", "node(s) didn't have enough resources: CPU cores",
                                    "node(s) didn't have enough resources: memory"};
  for (int r = 0; r < 3; ++r)
    if (short_of[r]) reasons[resource_reason[r]] += short_of[r];
  std::string msg = "no nodes with enough resources were found";
  if (reasons.empty()) return msg;
  std::vector<std::string> parts;
  for (const auto& [reason, count] : reasons) parts.push_back(std::to_string(count) + " " + reason);
  std::sort(parts.begin(), parts.end());
  for (std::size_t i = 0; i < parts.size(); ++i) msg += (i ? ". \n" : ": ") + parts[i];
  return msg + ".";
}

// predicates.go evaluateTaskOnPrePredicate, MaxNodePoolResources (k8s_internal/predicates/maxNodeResources.go):
// a pod larger than the largest node (GPU, then CPU, then memory) fits nowhere. "" when it passes.
std::string Session::max_node_resources_failure(int j, int t) const {
  const TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  const Vec& most = max_allocatable;
  const char* what[3] = {"GPU", "CPU", "memory"};
  const char* units[3] = {"", " cores", " GB"};
  const double unit[3] = {1, 1000, 1e9};
  for (int r = 0; r < 3; ++r) {
    if (run.request.v[r] <= most.v[r]) continue;
    const SnapshotJob& job = snap.jobs[static_cast<std::size_t>(j)];
    const std::string pod = job.namespace_ + "/" + job.tasks[static_cast<std::size_t>(t)].name;
    std::string msg = "Scheduling conditions were not met for pod " + pod + ":\nMaxNodePoolResources: The pod " + pod + " requires GPU: " +
                      humanize(run.request.v[0], 1) + ", CPU: " + humanize(run.request.v[1], 1000) + " (cores), memory: " +
                      humanize(run.request.v[2], 1e9) + " (GB), pods: 1. ";
    if (most.v[r] == 0) msg += std::string("No node in the default node-pool has ") + what[r] + " resources";
    else msg += std::string("Max ") + what[r] + " resources available in a single node in the default node-pool is topped at " +
                humanize(most.v[r], unit[r]) + units[r];
    return msg + "\n";
  }
  return "";
}

bool Session::allocate_task_on(int j, int t, const std::vector<int>& candidates, bool pipeline_only) {
  const TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  for (int r = 0; r < 3; ++r)
    if (run.request.v[r] > max_allocatable.v[r]) return false;  // max_node_resources_failure's test, without its message
  const int n = best_node(j, t, candidates);
  if (n < 0) return false;
  const NodeRoom& room = nodes[static_cast<std::size_t>(n)];
  allocate_task(j, t, n, pipeline_only || !fits(charged_on(room, run.request), room.idle));
  return true;
}

// actions/common/allocate.go AllocateJob: the capacity check, then every task to allocate on a node,
// all or none. Records the job's fit error when it fails. `candidates`: the nodes it may use.
bool Session::allocate_job(int j, const std::vector<int>& candidates, bool pipeline_only, bool record) {
  const std::vector<int> which = tasks_to_allocate(j);
  if (which.empty()) return false;
  const SnapshotJob& job = snap.jobs[static_cast<std::size_t>(j)];
  const Vec req = request_of(j, which);
  Totals requested;
  for (int r = 0; r < kNumResources; ++r) requested.amount[r] = req.v[r];
  const CapacityResult cap = check_capacity(queues, job.queue, requested, job.preemptible);
  if (!cap.schedulable) {
    if (record) fit_errors[static_cast<std::size_t>(j)] = {cap.reason, cap.message};
    return false;
  }
  topology_score_.clear();  // PreJobAllocation
  const std::size_t mark = journal.size();
  if (job.sub_groups.empty() && job.topology.topology.empty()) {
    // One pod set and no constraint: the tree below is this (SubsetNodesFn gives the nodes as they are).
    if (place_all(j, which, candidates, pipeline_only, record)) return true;
  } else if (allocate_group_set(j, 0, which, candidates, pipeline_only, record)) {
    return true;
  }
  rollback(mark);
  return false;
}

namespace {

// SubsetNodesFn for sub-group `sub_group` (-1: the PodGroup; topology.cpp), then `place` in each domain
// in turn until one takes the tasks, rolled back between. Node scores: a sub-group's own preferred
// level's while it places, else its nearest ancestor's (node_scoring.go getRelevantNodeScores).
template <class Place>
bool in_domains(Session& s, int j, int sub_group, const std::vector<int>& which, const std::vector<int>& candidates, bool record, Place place) {
  TopologyPlan plan = topology_plan(s, j, sub_group, which, candidates, record);
  if (plan.domains.empty()) {
    if (record) s.fit_errors[static_cast<std::size_t>(j)] = plan.error;
    return false;
  }
  const std::vector<double> outer = s.topology_score_;
  if (!plan.node_score.empty()) s.topology_score_ = std::move(plan.node_score);
  bool placed = false;
  for (const std::vector<int>& domain : plan.domains) {
    const std::size_t mark = s.journal.size();
    if (place(domain)) {
      placed = true;
      break;
    }
    s.rollback(mark);
  }
  s.topology_score_ = outer;
  return placed;
}

}  // namespace

// allocate.go allocateSubGroupSet: nothing to do without tasks; else the SubGroupSet's domains, and in
// the first that takes them its members.
bool Session::allocate_group_set(int j, int g, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record) {
  if (which.empty()) return true;
  const int sub_group = group_sets_[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)].sub_group;
  return in_domains(*this, j, sub_group, which, candidates, record,
                    [&](const std::vector<int>& domain) { return allocate_group_set_on(j, g, which, domain, pipeline_only, record); });
}

// allocate.go allocateMembersOnNodes: the members in SubGroupOrderFn's order (orderedMembers), each
// with its own tasks of `which`; the first that fails fails the domain.
bool Session::allocate_group_set_on(int j, int g, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record) {
  const std::vector<GroupSet>& all = group_sets_[static_cast<std::size_t>(j)];
  const std::vector<int>& of = task_set_[static_cast<std::size_t>(j)];
  for (const Member& m : ordered_members(j, g, active_per_set(j), false)) {
    std::vector<int> own;
    if (m.group) {
      const int sub_group = all[static_cast<std::size_t>(m.index)].sub_group;
      for (const int t : which)
        if (task_under(j, t, sub_group)) own.push_back(t);
      if (!allocate_group_set(j, m.index, own, candidates, pipeline_only, record)) return false;
    } else {
      for (const int t : which)
        if (of[static_cast<std::size_t>(t)] == m.index) own.push_back(t);
      if (!allocate_pod_set(j, m.index, own, candidates, pipeline_only, record)) return false;
    }
  }
  return true;
}

// allocate.go allocatePodSet: nothing to do without tasks; else the PodSet's own domains, its tasks in
// the first that takes them all.
bool Session::allocate_pod_set(int j, int k, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record) {
  if (which.empty()) return true;
  const int sub_group = pod_sets(j)[static_cast<std::size_t>(k)].sub_group;
  if (sub_group < 0) return place_all(j, which, candidates, pipeline_only, record);  // the default set: no constraint of its own
  return in_domains(*this, j, sub_group, which, candidates, record,
                    [&](const std::vector<int>& domain) { return place_all(j, which, domain, pipeline_only, record); });
}

bool Session::place_all(int j, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record) {
  for (std::size_t i = 0; i < which.size(); ++i) {
    const int t = which[i];
    if (allocate_task_on(j, t, candidates, pipeline_only)) continue;
    if (record) fit_errors[static_cast<std::size_t>(j)] = {"PodSchedulingErrors", failed_task_message(j, t, static_cast<int>(i))};
    return false;
  }
  return true;
}

// common/allocate.go handleFailedTaskAllocation
std::string Session::failed_task_message(int j, int t, int placed) const {
  const SnapshotJob& job = snap.jobs[static_cast<std::size_t>(j)];
  const std::string pre = max_node_resources_failure(j, t);
  const std::string why = pre.empty() ? task_fit_text(j, t) : pre;
  const std::string pod = job.namespace_ + "/" + job.tasks[static_cast<std::size_t>(t)].name;
  bool gang = false;
  for (const PodSet& ps : pod_sets(j)) gang = gang || ps.min_member > 1;
  const std::string& set = job.tasks[static_cast<std::size_t>(t)].sub_group;
  const int set_index = task_set_[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  const int min_member = set_index < 0 ? 0 : pod_sets(j)[static_cast<std::size_t>(set_index)].min_member;
  int active_used = 0;
  for (std::size_t k = 0; k < job.tasks.size(); ++k) {
    const Status s = tasks[static_cast<std::size_t>(j)][k].status;
    if (task_set_[static_cast<std::size_t>(j)][k] == set_index && (is_active_allocated(s) || s == Status::Releasing || s == Status::StuckInReleasing))
      ++active_used;
  }
  if (!gang || active_used >= min_member) return "Resources were not found for pod " + pod + " due to: " + why;
  if (job.sub_groups.empty())
    return "Resources were found for " + std::to_string(placed) + " pods while " + std::to_string(min_member) +
           " are required for gang scheduling. Additional pods cannot be scheduled due to: " + why;
  return "Resources were found for " + std::to_string(placed) + " pods from all sub-groups while sub-group " + set + " requires " +
         std::to_string(min_member) + " pods for gang scheduling. Additional pods cannot be scheduled in this sub-group due to: " + why;
}

bool Session::job_ready(int j) const { return not_ready_reason(j).empty(); }

// podgroup_info IsReadyForScheduling over the SubGroupSet tree: a PodSet is ready when its alive pods
// that are not gated (pod_status aliveStatuses: Pending and the allocated ones) reach its minAvailable, a SubGroupSet when as many of its
// members are ready as it must satisfy. The reason names the first PodSet short, in spec order.
std::string Session::not_ready_reason(int j) const {
  const std::vector<PodSet>& sets = pod_sets(j);
  const std::vector<int>& of = task_set_[static_cast<std::size_t>(j)];
  const std::vector<TaskRun>& run = tasks[static_cast<std::size_t>(j)];
  std::vector<int> alive(sets.size(), 0);
  for (std::size_t t = 0; t < run.size(); ++t)
    if (of[t] >= 0 && (run[t].status == Status::Pending || is_active_allocated(run[t].status))) ++alive[static_cast<std::size_t>(of[t])];
  const std::function<int(int)> ready_members = [&](int g) {
    const GroupSet& set = group_sets_[static_cast<std::size_t>(j)][static_cast<std::size_t>(g)];
    int n = 0;
    for (const int child : set.groups) n += ready_members(child) >= members_to_satisfy(j, child) ? 1 : 0;
    for (const int k : set.sets) n += alive[static_cast<std::size_t>(k)] >= sets[static_cast<std::size_t>(k)].min_member ? 1 : 0;
    return n;
  };
  const int need = members_to_satisfy(j, 0);
  if (ready_members(0) >= need) return "";
  for (std::size_t k = 0; k < sets.size(); ++k)
    if (alive[k] < sets[k].min_member)
      return (sets[k].name.empty() ? std::string("the PodGroup has ") : "sub-group " + sets[k].name + " has ") + std::to_string(alive[k]) +
             " live pods, fewer than its minMember " + std::to_string(sets[k].min_member);
  return "the PodGroup's minSubGroup " + std::to_string(need) + " is more than its sub-groups can satisfy";
}

JobsByQueue Session::pending_jobs_by_queue() {
  JobsByQueue by;
  by.jobs.resize(queues.size());
  by.best.assign(queues.size(), -1);
  by.dirty.assign(queues.size(), 1);
  by.seen.resize(snap.jobs.size());
  for (const int j : changed_jobs_) changed_flag_[static_cast<std::size_t>(j)] = 0;
  changed_jobs_.clear();
  for (std::size_t j = 0; j < snap.jobs.size(); ++j) {
    by.seen[j] = static_cast<std::uint8_t>(elastic_state(static_cast<int>(j)));
    const int q = job_queue[j];
    if (q < 0 || !has_pending(static_cast<int>(j)) || !job_ready(static_cast<int>(j))) continue;
    by.jobs[static_cast<std::size_t>(q)].push_back(static_cast<int>(j));
  }
  return by;
}

std::vector<int> Session::all_nodes() const {
  std::vector<int> all(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) all[n] = static_cast<int>(n);
  return all;
}

// podgroup_info ShouldPipelineJob: some pod set has a pipelined task and fewer than its minMember
// active pods that are not pipelined; then every pod the statement allocated to the job is pipelined
// too (allocate.go ConvertAllAllocatedToPipelined), so the gang starts together. Then the commit:
// allocated pods are Binding (their BindRequests written).
void Session::commit(int j) {
  const SnapshotJob& job = snap.jobs[static_cast<std::size_t>(j)];
  bool pipeline = false;
  const std::vector<PodSet>& sets = pod_sets(j);
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const PodSet& ps = sets[k];
    bool has_pipelined = false;
    int others = 0;
    for (std::size_t t = 0; t < job.tasks.size(); ++t) {
      if (task_set_[static_cast<std::size_t>(j)][t] != static_cast<int>(k)) continue;
      const Status st = tasks[static_cast<std::size_t>(j)][t].status;
      has_pipelined = has_pipelined || st == Status::Pipelined;
      others += (st == Status::Allocated || st == Status::Binding || st == Status::Running) ? 1 : 0;
    }
    pipeline = pipeline || (has_pipelined && others < ps.min_member);
  }
  for (TaskRun& t : tasks[static_cast<std::size_t>(j)]) {
    if (t.status != Status::Allocated) continue;
    if (pipeline) {
      NodeRoom& room = nodes[static_cast<std::size_t>(t.node)];
      const Vec charged = charged_on(room, t.request);
      room.idle += charged;  // re-pipelined on the same node: from idle accounting to releasing
      room.releasing -= charged;
      t.status = Status::Pipelined;
    } else {
      t.status = Status::Binding;
    }
  }
  touched(j);
  ++epoch;
  journal.clear();
}

void Session::allocate_action() {
  JobsByQueue by_queue = pending_jobs_by_queue();
  const std::vector<int>& all = all_nodes_;
  for (int guard = 0; guard < 1000000; ++guard) {
    const int j = pop_next_job(by_queue);
    if (j < 0) break;
    settle();
    const std::vector<int> which = tasks_to_allocate(j);
    if (allocate_job(j, all, false, true)) {
      commit(j);
      fit_errors[static_cast<std::size_t>(j)] = {};
      std::string placed;
      for (int t : which) {
        const TaskRun& run = tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
        placed += (placed.empty() ? "" : ", ") + snap.jobs[static_cast<std::size_t>(j)].tasks[static_cast<std::size_t>(t)].name + " → " +
                  snap.nodes[static_cast<std::size_t>(run.node)].name;
      }
      log.push_back("allocate: " + snap.jobs[static_cast<std::size_t>(j)].name + " (queue " + snap.jobs[static_cast<std::size_t>(j)].queue +
                    "): " + placed);
      if (has_pending(j)) by_queue.push(job_queue[static_cast<std::size_t>(j)], j);
    } else {
      rollback(0);
      const FitError& e = fit_errors[static_cast<std::size_t>(j)];
      log.push_back("allocate: " + snap.jobs[static_cast<std::size_t>(j)].name + " not allocated: " + e.reason + ": " + e.message);
    }
  }
}

// actions/stalegangeviction (stalegangeviction.go handleStaleJob): a stale gang — job_info.go IsStale:
// no pod Succeeded, some pod active (Releasing included), a pod set with fewer active pods than its
// minMember — stale for at least its grace period (the PodGroup's stalenessGracePeriod, else the
// scheduler's; negative: never) loses every active allocated pod. A gang first seen stale (no
// staleForSeconds) is stale for 0 s.
void Session::stale_gang_eviction_action() {
  for (std::size_t j = 0; j < snap.jobs.size(); ++j) {
    const SnapshotJob& job = snap.jobs[j];
    const double grace = job.staleness_grace_s ? *job.staleness_grace_s : snap.kai.staleness_grace_s;
    const double stale_for = std::max(job.stale_for_s, 0.0);
    if (grace < 0 || stale_for < grace) continue;
    const std::vector<PodSet>& sets = pod_sets(static_cast<int>(j));
    std::vector<int> used(sets.size(), 0);
    int active = 0;
    bool succeeded = false;
    for (std::size_t t = 0; t < tasks[j].size(); ++t) {
      const Status st = tasks[j][t].status;
      succeeded = succeeded || st == Status::Succeeded;
      if (!is_active_allocated(st) && st != Status::Releasing && st != Status::StuckInReleasing) continue;
      ++active;
      if (task_set_[j][t] >= 0) ++used[static_cast<std::size_t>(task_set_[j][t])];
    }
    std::string short_of;
    for (std::size_t k = 0; k < sets.size() && short_of.empty(); ++k)
      if (used[k] < sets[k].min_member)
        short_of = (sets[k].name.empty() ? std::string("its minMember ") : "sub-group " + sets[k].name + "'s minMember ") + std::to_string(sets[k].min_member) +
                   " with " + std::to_string(used[k]) + " pods active";
    if (succeeded || active == 0 || short_of.empty()) continue;
    int evicted = 0;
    for (std::size_t t = 0; t < tasks[j].size(); ++t) {
      if (!is_active_allocated(tasks[j][t].status) || tasks[j][t].node < 0) continue;
      const int node = tasks[j][t].node;
      evict_task(static_cast<int>(j), static_cast<int>(t));
      victims.push_back({static_cast<int>(j), static_cast<int>(t), node, "stalegangeviction", ""});
      ++evicted;
    }
    settle();
    log.push_back("stalegangeviction: " + job.name + " is below " + short_of + ", stale for " + humanize(stale_for, 1) + " s ≥ the " +
                  humanize(grace, 1) + " s grace" + (job.staleness_grace_s ? " (its stalenessGracePeriod)" : "") + ": its " + std::to_string(evicted) +
                  " running pods evicted");
  }
}

ScheduleOutcome Session::outcome() const {
  ScheduleOutcome out;
  out.log = log;
  out.victims = victims;
  out.jobs.resize(snap.jobs.size());
  for (std::size_t j = 0; j < snap.jobs.size(); ++j) {
    JobOutcome& jo = out.jobs[j];
    bool pending = false, binding = false, pipelined = false, running = false, releasing = false;
    for (std::size_t t = 0; t < tasks[j].size(); ++t) {
      const TaskRun& run = tasks[j][t];
      TaskOutcome to;
      to.node = run.node;
      switch (run.status) {
        case Status::Pending: to.status = "Pending"; pending = true; break;
        case Status::Allocated:
        case Status::Binding: to.status = "Binding"; binding = true; break;
        case Status::Pipelined: to.status = "Pipelined"; pipelined = true; break;
        case Status::Running: to.status = "Running"; running = true; break;
        case Status::Releasing: to.status = "Releasing"; releasing = true; break;
        case Status::StuckInReleasing: to.status = "StuckInReleasing"; running = true; break;
        case Status::Gated: to.status = "Gated"; pending = true; break;
        case Status::Failed: to.status = "Failed"; break;
        case Status::Succeeded: to.status = "Succeeded"; break;
      }
      jo.tasks.push_back(std::move(to));
    }
    const FitError& e = fit_errors[j];
    if (pipelined) jo.status = "pipelined";
    else if (binding) jo.status = "allocated";
    else if (pending) jo.status = "pending";
    else if (running) jo.status = "running";
    else jo.status = releasing ? "evicted" : "running";
    if (pending && !e.reason.empty()) {
      jo.reason = e.reason;
      jo.message = e.message;
    } else if (pending && !binding && !pipelined && !job_ready(static_cast<int>(j))) {
      jo.reason = "NotReady";
      jo.message = not_ready_reason(static_cast<int>(j));
    }
  }
  out.queues.resize(queues.size());
  for (std::size_t q = 0; q < queues.size(); ++q)
    for (int r = 0; r < kNumResources; ++r) {
      const ResourceShare& s = queues[q].resources[r];
      out.queues[q].deserved[r] = s.deserved;
      out.queues[q].fair_share[r] = s.fair_share;
      out.queues[q].allocated[r] = s.allocated;
      out.queues[q].request[r] = s.request;
    }
  return out;
}

ScheduleOutcome run_cycle(const Snapshot& snapshot) {
  Session session(snapshot);
  for (const std::string& action : snapshot.kai.actions) {
    if (action == "allocate") session.allocate_action();
    else if (action == "consolidation") consolidation_action(session);
    else if (action == "reclaim") reclaim_action(session);
    else if (action == "preempt") preempt_action(session);
    else if (action == "stalegangeviction") session.stale_gang_eviction_action();
  }
  return session.outcome();
}

}  // namespace gpuscale::kai
