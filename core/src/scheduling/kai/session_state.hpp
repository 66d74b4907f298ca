// The state of one KAI session (private to kai/): the nodes' room, every task's status, the queues'
// shares, and the statement's journal that a discard rolls back. The actions (session.cpp,
// eviction.cpp, topology.cpp) read and change it through these members only.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduling/kai/fair_share.hpp"
#include "scheduling/snapshot.hpp"
#include "scheduling/snapshot_schedule.hpp"

namespace gpuscale::kai {

// GPUs, CPU millicores, memory bytes (the order of kai::Resource).
struct Vec {
  double v[3] = {0, 0, 0};
  Vec& operator+=(const Vec& o) {
    for (int i = 0; i < 3; ++i) v[i] += o.v[i];
    return *this;
  }
  Vec& operator-=(const Vec& o) {
    for (int i = 0; i < 3; ++i) v[i] -= o.v[i];
    return *this;
  }
};

// pod_status, as far as one cycle goes.
// Gated: a pod with scheduling gates (alive, not ready, never allocated); Failed and Succeeded hold nothing.
// StuckInReleasing: deleted long ago and still running (pod_status.go): its room is used, not releasing.
enum class Status : std::uint8_t { Pending, Allocated, Pipelined, Binding, Running, Releasing, Gated, Failed, Succeeded, StuckInReleasing };
bool is_active_allocated(Status s);  // Allocated, Pipelined, Binding, Running

struct NodeRoom {
  Vec allocatable, idle, releasing, used;
};

struct TaskRun {
  Status status = Status::Pending;
  int node = -1;
  Vec request;
};

struct FitError {
  std::string reason, message;
};

class Session;

// The pending jobs of an action by queue (job_order_by_queue.go), with each queue's best job kept
// between pops: a queue's own list is scanned again only when it changed or the elastic state of a job
// in it did (the only part of the job order that a cycle changes).
struct JobsByQueue {
  std::vector<std::vector<int>> jobs;  // [queue] its pending jobs
  std::vector<int> best;               // [queue] the first of `jobs` by job order (valid unless dirty)
  std::vector<char> dirty;             // [queue] `best` must be found again
  std::vector<std::uint8_t> seen;      // [job] the elastic state `best` was found with (the list
                                       // follows the jobs touched since the last pop, Session::touched)
  void push(int q, int j) {
    jobs[static_cast<std::size_t>(q)].push_back(j);
    dirty[static_cast<std::size_t>(q)] = 1;
  }
};

struct Op {
  enum Kind : std::uint8_t { Place, Evict, Unevict } kind;
  int job, task;
  Status prev_status;
  int prev_node;
};

class Session {
 public:
  explicit Session(const Snapshot& s);

  const Snapshot& snap;
  std::vector<NodeRoom> nodes;
  std::vector<std::vector<TaskRun>> tasks;  // [job][task]
  std::vector<Queue> queues;
  std::map<std::string, int> queue_index;
  std::vector<int> job_queue;               // the job's leaf queue index (-1: none)
  std::vector<FitError> fit_errors;         // per job, the last failure
  std::vector<Victim> victims;
  std::vector<std::string> log;
  std::vector<Op> journal;                  // the open statement
  Totals total;
  Vec max_allocatable;               // per resource, the largest node's allocatable
  std::vector<int> node_name_rank;   // [node] its name's place in name order
  std::vector<int> all_nodes_;       // 0 .. nodes - 1
  // Bumped whenever the state changes for good (a commit, a journal cleared without a rollback):
  // between two bumps, with the journal empty, the state is the same, and what was derived from it
  // (victim lists and orders) still holds.
  std::uint64_t epoch = 0;

  // A PodSet (subgroup_info/podset.go): a sub-group without children, or the default set of a job
  // without sub-groups; its pods and its minAvailable (0: none of them required).
  struct PodSet {
    std::string name;
    int min_member;
    int sub_group = -1;  // its sub-group in the job's sub_groups (-1: the default set of a job without)
  };
  // A SubGroupSet (subgroup_info/subgroupset.go): the PodGroup itself ([0], sub_group -1) or a
  // sub-group with children; its child SubGroupSets and PodSets, each in spec order (GetMembers: the
  // SubGroupSets, then the PodSets), and how many of them must be satisfied (minSubGroup; -1: all).
  struct GroupSet {
    int sub_group = -1;
    int min_sub_group = -1;
    std::vector<int> groups;  // into group_sets_[job]
    std::vector<int> sets;    // into pod_sets_[job]
  };
  // A member of a SubGroupSet (subgroup_info/subgroupmember.go): a child SubGroupSet or PodSet.
  struct Member {
    bool group;
    int index;  // into group_sets_[job] or pod_sets_[job]
  };
  enum class Elastic { Below, Exactly, Above };

  // Queues.
  int parent_of(int q) const { return queue_parent_[static_cast<std::size_t>(q)]; }
  // -1: qa first. `ja`, `jb`: each queue's best pending job (-1: none), with the request of its tasks
  // to allocate when the caller has it.
  // `a_out`, `b_out`: in a victims queue, what each queue's victims so far hold, taken off its
  // dominant share (queue_order.go calculateDominantResourceShareWithJob).
  int queue_order(int qa, int qb, int ja, int jb, const Vec* ja_request = nullptr, const Vec* jb_request = nullptr,
                  const Vec* a_out = nullptr, const Vec* b_out = nullptr) const;
  int pop_next_job(JobsByQueue& by_queue);
  JobsByQueue pending_jobs_by_queue();
  void add_queue_request(int job, const Vec& request);
  void add_queue_usage(int job, const Vec& request, int sign);  // allocated (and not preemptible) only

  // Jobs and tasks.
  const std::vector<PodSet>& pod_sets(int j) const { return pod_sets_[static_cast<std::size_t>(j)]; }
  bool has_pending(int j) const;
  bool has_active(int j) const;  // a pod placed and active (Allocated, Pipelined, Binding, Running)
  bool job_ready(int j) const;
  std::vector<int> tasks_to_allocate(int j) const;
  // The victim search's partial job (job_solver.go getPartialJobRepresentative): while set, job
  // `partial_job` asks only `partial_tasks` (those still pending), each pod set's minMember their count.
  int partial_job = -1;
  std::vector<int> partial_tasks;
  Vec request_of(int j, const std::vector<int>& which) const;
  Elastic elastic_state(int j) const;
  // elastic.go minAvailableState from each pod set's active pods
  static Elastic elastic_from(const std::vector<PodSet>& sets, const std::vector<int>& active);
  // JobOrderFn over two jobs in the given elastic states (a victims queue's clones have their own).
  static bool job_order_before(const SnapshotJob& a, Elastic ea, const SnapshotJob& b, Elastic eb);
  bool job_before(int a, int b) const;

  // Nodes.
  static Vec charged_on(const NodeRoom& room, const Vec& request);
  static bool fits(const Vec& request, const Vec& room) {
    for (int r = 0; r < 3; ++r)
      if (request.v[r] > room.v[r] + 1e-9) return false;
    return true;
  }
  bool passes_predicates(int j, int t, int node, std::string* why) const;
  int best_node(int j, int t, const std::vector<int>& candidates) const;
  std::vector<int> all_nodes() const;

  // The statement.
  void allocate_task(int j, int t, int node, bool pipelined);
  void evict_task(int j, int t);
  void rollback(std::size_t mark);
  void commit(int j);
  void settle();       // the journal cleared, its changes kept (without a commit's conversions)
  void touched(int j);  // the job's tasks changed status

  // Allocation.
  bool allocate_task_on(int j, int t, const std::vector<int>& candidates, bool pipeline_only);
  bool allocate_job(int j, const std::vector<int>& candidates, bool pipeline_only, bool record);
  bool place_all(int j, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record);
  bool allocate_group_set(int j, int g, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record);
  bool allocate_group_set_on(int j, int g, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record);
  bool allocate_pod_set(int j, int k, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record);
  // The SubGroupSet tree, counted from each PodSet's active pods (`active`, per pod set: the job's, or
  // a victim clone's): how many direct members are satisfied (GetNumActiveAllocatedDirectSubGroups),
  // how many must be (GetMinMembersToSatisfy), and the members in SubGroupOrderFn's order
  // (plugins/subgrouporder: below threshold first, then the lower allocation ratio, then the name;
  // `reverse` for eviction).
  int satisfied_members(int j, int g, const std::vector<int>& active) const;
  int members_to_satisfy(int j, int g) const;
  std::vector<Member> ordered_members(int j, int g, const std::vector<int>& active, bool reverse) const;
  std::vector<int> active_per_set(int j) const;  // each pod set's active allocated pods
  // Whether task `t` is under sub-group `g` (-1: the PodGroup, which holds every task).
  bool task_under(int j, int t, int g) const;
  // "" when the job is ready for scheduling (IsReadyForScheduling), else why not.
  std::string not_ready_reason(int j) const;
  std::string task_fit_text(int j, int t) const;
  std::string max_node_resources_failure(int j, int t) const;
  std::vector<std::vector<int>> task_order_;  // per job, its tasks in TaskOrderFn's order
  std::string failed_task_message(int j, int t, int placed) const;

  // Caches of what does not change in a cycle, and of the elastic state (see touched()).
  std::vector<int> queue_parent_;                // [queue] its parent (-1: none)
  std::vector<std::vector<int>> queue_children_; // [queue] its children; [queues.size()]: the top queues
  std::vector<std::vector<PodSet>> pod_sets_;    // [job]
  std::vector<std::vector<int>> task_set_;       // [job][task] its pod set in pod_sets_ (-1: none)
  std::vector<std::vector<GroupSet>> group_sets_; // [job], [0] the PodGroup's root SubGroupSet
  mutable std::vector<std::uint8_t> elastic_;    // [job] elastic_state + 1; 0: to compute
  std::vector<int> changed_jobs_;                // touched since the last pop
  std::vector<char> changed_flag_;
  // topology.cpp: per topology and level, each node's domain (an index in domain-id order; -1: none)
  // and the number of domains; filled on first use.
  struct DomainIndex {
    bool ready = false;
    std::vector<int> node_domain;
    int count = 0;
  };
  mutable std::vector<std::vector<DomainIndex>> domain_index_;  // [topology][level]
  // topology.cpp: a Topology's domains as a tree (topology_plugin.go initializeTopologyTree), built on
  // first use. Domain 0 is the root; the others follow level by level, by id within a level.
  struct TopologyDomain {
    int level = -1;             // an index into the topology's levels; -1: the root
    std::string id;             // the values of its levels joined by "." (topology_structs.go calcDomainId)
    std::vector<int> children;  // by id
    std::vector<int> nodes;     // every node in it, in node order
  };
  struct TopologyTree {
    bool ready = false;
    std::vector<TopologyDomain> domains;     // children re-sorted for each job, as upstream's tree is
    std::vector<std::vector<int>> at_level;  // [level + 1] its domains; [0]: the root
    std::vector<char> member;                // [node] it has a label for every level
  };
  mutable std::vector<TopologyTree> topology_tree_;  // [topology]
  // The topology plugin's node order for the job being allocated (node_scoring.go; cleared by
  // allocate_job, as PreJobAllocation does): [node] its score; empty: none.
  std::vector<double> topology_score_;

  // Actions.
  void allocate_action();
  void stale_gang_eviction_action();
  ScheduleOutcome outcome() const;
};

// resource_share.go GetAllocatableShare (session.cpp).
double allocatable_share(const ResourceShare& r);

// topology.cpp (plugins/topology job_filtering.go subSetNodesFn): the domains (node sets) a job may be
// placed in, best first, for its constraint ({all candidates} when it has none); when none can hold
// it, the job's fit error; with a preferred level, the plugin's node scores.
struct TopologyPlan {
  std::vector<std::vector<int>> domains;
  FitError error;                  // when `domains` is empty
  std::vector<double> node_score;  // [node]; empty: no preferred level
};
// `set`: a sub-group (an index into the job's sub_groups) with its own constraint; -1: the job's.
// `explain`: write the fit error's text when no domain holds the job (a trial placement needs none).
TopologyPlan topology_plan(const Session& s, int j, int set, const std::vector<int>& which, const std::vector<int>& candidates,
                           bool explain = true);
// Each node's domain at one level of a topology; the domains of a job's required level (nullptr:
// it has none).
const Session::DomainIndex& domain_index(const Session& s, std::size_t topology, std::size_t level);
const Session::DomainIndex* required_domains(const Session& s, int j);

}  // namespace gpuscale::kai
