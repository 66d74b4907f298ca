// The state of one KAI session (private to kai/): the nodes' room, every task's status, the queues'
// shares, and the statement's journal that a discard rolls back. The actions (session.cpp,
// eviction.cpp, topology.cpp) read and change it through these members only.
#pragma once
#include <functional>
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
enum class Status : std::uint8_t { Pending, Allocated, Pipelined, Binding, Running, Releasing };
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

struct Op {
  enum Kind : std::uint8_t { Place, Evict } kind;
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

  struct PodSet {
    std::string name;
    int min_member;
  };
  enum class Elastic { Below, Exactly, Above };

  // Queues.
  int parent_of(int q) const;
  bool is_leaf(int q) const;
  int queue_order(int qa, int qb, int ja, int jb) const;  // -1: qa first
  int best_child(int parent, const std::function<int(int)>& best_of) const;
  int pop_next_job(std::vector<std::vector<int>>& leaf_jobs) const;
  std::vector<std::vector<int>> pending_jobs_by_queue() const;
  void add_queue_request(int job, const Vec& request);
  void add_queue_usage(int job, const Vec& request, int sign, bool count_request);

  // Jobs and tasks.
  std::vector<PodSet> pod_sets(int j) const;
  int active_allocated(int j, const std::string& sub_group) const;
  bool has_pending(int j) const;
  bool has_active(int j) const;  // a pod placed and active (Allocated, Pipelined, Binding, Running)
  bool job_ready(int j) const;
  std::vector<int> tasks_to_allocate(int j) const;
  Vec request_of(int j, const std::vector<int>& which) const;
  Elastic elastic_state(int j) const;
  bool job_before(int a, int b) const;

  // Nodes.
  static Vec charged_on(const NodeRoom& room, const Vec& request);
  static bool fits(const Vec& request, const Vec& room);
  bool passes_predicates(int j, int t, int node, std::string* why) const;
  std::vector<int> ordered_nodes(int j, int t, const std::vector<int>& candidates) const;
  std::vector<int> all_nodes() const;

  // The statement.
  void allocate_task(int j, int t, int node, bool pipelined);
  void evict_task(int j, int t);
  void rollback(std::size_t mark);
  void commit(int j);

  // Allocation.
  bool allocate_task_on(int j, int t, const std::vector<int>& candidates, bool pipeline_only);
  bool allocate_job(int j, const std::vector<int>& candidates, bool pipeline_only, bool record);
  bool place_all(int j, const std::vector<int>& which, const std::vector<int>& candidates, bool pipeline_only, bool record);
  std::string task_fit_text(int j, int t) const;
  std::string max_node_resources_failure(int j, int t) const;
  std::vector<std::vector<int>> task_order_;  // per job, its tasks in TaskOrderFn's order
  std::string failed_task_message(int j, int t, int placed) const;

  // Actions.
  void allocate_action();
  void stale_gang_eviction_action();
  ScheduleOutcome outcome() const;
};

// resource_share.go GetAllocatableShare (session.cpp).
double allocatable_share(const ResourceShare& r);

// topology.cpp: the domains (node sets) a job may be placed in, best first, for its constraint;
// {all candidates} when it has none. Empty: no domain can hold it.
std::vector<std::vector<int>> topology_domains(const Session& s, int j, const std::vector<int>& which, const std::vector<int>& candidates);
std::string topology_failure_message(const Session& s, int j, const std::vector<int>& which);

}  // namespace gpuscale::kai
