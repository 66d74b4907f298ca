// KAI Scheduler's eviction actions (see eviction.hpp). Sources, kai-scheduler/KAI-Scheduler:
//   actions/reclaim/reclaim.go, actions/preempt/preempt.go, actions/consolidation/consolidation.go;
//   the victims' filters and order: reclaim.go getReclaimVictimCandidates, preempt.go
//     buildFilterFuncForPreempt, actions/utils/job_order_by_queue.go (VictimQueue: the orders reversed);
//   the reclaim rules: plugins/proportion/reclaimable/reclaimable.go (CanReclaimResources, Reclaimable,
//     reclaimingQueuesRemainWithinBoundaries, isFairShareSaturationLowerPerResource, getLeveledQueues),
//     filter_victims.go, strategies/strategies.go (MaintainFairShare, GuaranteeDeservedQuota);
//   an elastic victim gives its tasks above minMember one by one, its core as one
//     (proportion.go getVictimResources / splitVictimTasks).
//
// The search is upstream's JobSolver (actions/common/solvers: job_solver.go, scenario_generator.go,
// pod_scenario_builder.go, sub_scenario_emitter.go, by_pod_solver.go, scenario/base_scenario.go,
// scenario/by_node_scenario.go, accumulated_scenario_filters/; the generators of
// plugins/nodelocalgreedy and plugins/multinodegang; see `solve` below), fed
// by the victims queue of actions/utils/job_order_by_queue.go (VictimQueue) and
// podgroup_info/eviction_info.go GetTasksToEvict; docs/schedule.md says it in words.
#include "scheduling/kai/eviction.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "scheduling/kai/capacity.hpp"
#include "scheduling/kai/session_state.hpp"

namespace gpuscale::kai {

namespace {

constexpr double kSaturationMultiplier = 1.0;  // reclaimerUtilizationMultiplier (its default)

// A set of a victim job's tasks evicted together.
struct Unit {
  int job;
  std::vector<int> tasks;
};

using Quantities = Vec;

Quantities allocated_of(const Queue& q) {
  return {q.resources[0].allocated, q.resources[1].allocated, q.resources[2].allocated};
}
Quantities fair_of(const Queue& q) { return {q.resources[0].fair_share, q.resources[1].fair_share, q.resources[2].fair_share}; }
Quantities deserved_of(const Queue& q) { return {q.resources[0].deserved, q.resources[1].deserved, q.resources[2].deserved}; }

// ResourceQuantities.LessEqual: every resource, an unlimited bound holding anything.
bool less_equal(const Quantities& a, const Quantities& b) {
  for (int r = 0; r < 3; ++r)
    if (b.v[r] != kUnlimited && a.v[r] > b.v[r] + 1e-9) return false;
  return true;
}

// QuantitiesLessEqualAllocatable
bool less_equal_allocatable(const Queue& q, const Quantities& x) {
  for (int r = 0; r < 3; ++r) {
    const double a = allocatable_share(q.resources[r]);
    if (a != kUnlimited && x.v[r] > a + 1e-9) return false;
  }
  return true;
}

bool allocated_plus_le_deserved(const Queue& q, const Quantities& req) {
  for (int r = 0; r < 3; ++r) {
    const double d = q.resources[r].deserved;
    if (d != kUnlimited && q.resources[r].allocated + req.v[r] > d + 1e-9) return false;
  }
  return true;
}

double saturation(double allocated, double fair) {
  if (fair == 0) return allocated > 0 ? std::numeric_limits<double>::infinity() : 0;
  if (fair == kUnlimited) return 0;
  return allocated / fair;
}

// The queues as the reclaim validator sees them: the session's at the start of the job's solution.
struct ReclaimCheck {
  const Session& s;
  std::vector<Queue> queues;  // snapshot at solution start
  int reclaimer_job;
  Quantities request;
  bool preemptible;

  // The parent of a queue (the copy holds the session's queues in the session's order).
  int parent(int q) const { return s.parent_of(q); }
  std::vector<int> path(int q) const {  // top first
    std::vector<int> p;
    for (int at = q; at >= 0 && p.size() <= queues.size(); at = parent(at)) p.insert(p.begin(), at);
    return p;
  }
  // getLeveledQueues: the first level where the two chains differ (or the last common one).
  std::pair<int, int> leveled(int reclaimer_q, int reclaimee_q) const {
    const std::vector<int> a = path(reclaimer_q), b = path(reclaimee_q);
    int ra = -1, rb = -1;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      ra = a[i];
      rb = b[i];
      if (ra != rb) break;
    }
    return {ra, rb};
  }

  // filter_victims.go FilterVictim
  bool victim_allowed(int victim_q) const {
    const auto [rq, vq] = leveled(s.job_queue[static_cast<std::size_t>(reclaimer_job)], victim_q);
    if (rq < 0 || vq < 0) return true;
    const Queue& reclaimer = queues[static_cast<std::size_t>(rq)];
    const Queue& victim = queues[static_cast<std::size_t>(vq)];
    if (!allocated_plus_le_deserved(reclaimer, request)) return !less_equal_allocatable(victim, allocated_of(victim));
    bool under = false;
    for (int r = 0; r < 3; ++r) {
      if (request.v[r] <= 0) continue;
      const ResourceShare& sh = victim.resources[r];
      if (sh.deserved == kUnlimited) continue;
      if (sh.allocated > sh.deserved) return true;
      if (sh.allocated < sh.deserved) under = true;
    }
    return !under;
  }

  // reclaimable.go Reclaimable over the victims' resources by queue (each unit one vector), taken one
  // unit at a time: the solver asks it of every longer list of the same victims, each verdict as if
  // the list were new.
  class Tally {
   public:
    explicit Tally(const ReclaimCheck& c)
        : c_(c), remaining_(c.queues.size()), touched_(c.queues.size(), false), involved_(c.queues.size(), {false, false, false}) {}

    void add(const Unit& u) {
      if (failed_) return;  // the verdict stays the first unit's that failed
      const Session& s = c_.s;
      const std::vector<Queue>& queues = c_.queues;
      const int vq = s.job_queue[static_cast<std::size_t>(u.job)];
      const Vec res = s.request_of(u.job, u.tasks);
      const auto [lrq, lvq] = c_.leveled(reclaimer_q(), vq);
      const Queue& reclaimer = queues[static_cast<std::size_t>(lrq)];
      const Queue& reclaimee = queues[static_cast<std::size_t>(lvq)];
      if (!touched_[static_cast<std::size_t>(lvq)]) {
        remaining_[static_cast<std::size_t>(lvq)] = allocated_of(reclaimee);
        touched_[static_cast<std::size_t>(lvq)] = true;
      }
      // strategies.go FitsReclaimStrategy: MaintainFairShare, else GuaranteeDeservedQuota.
      const Quantities& left = remaining_[static_cast<std::size_t>(lvq)];
      const bool maintain = !less_equal_allocatable(reclaimee, left);
      const bool guarantee = allocated_plus_le_deserved(reclaimer, c_.request) && !less_equal(left, deserved_of(reclaimee));
      if (!maintain && !guarantee) {
        failed_ = true;
        failure_ = "queue " + reclaimee.name + " would fall to its fair share or deserved quota (neither MaintainFairShare nor GuaranteeDeservedQuota allows it)";
        return;
      }
      for (int at = vq; at >= 0;) {
        const std::size_t ai = static_cast<std::size_t>(at);
        if (!touched_[ai]) {
          remaining_[ai] = allocated_of(queues[ai]);
          touched_[ai] = true;
        }
        remaining_[ai] -= res;
        for (int r = 0; r < 3; ++r) involved_[ai][static_cast<std::size_t>(r)] = involved_[ai][static_cast<std::size_t>(r)] || res.v[r] > 0;
        at = c_.parent(at);
      }
    }

    // The verdict over the units added so far.
    bool verdict(std::string* why) const {
      if (failed_) {
        if (why) *why = failure_;
        return false;
      }
      const std::vector<Queue>& queues = c_.queues;
      const Quantities& request = c_.request;
      // reclaimingQueuesRemainWithinBoundaries
      for (int at = reclaimer_q(); at >= 0;) {
        const std::size_t ai = static_cast<std::size_t>(at);
        const Queue& rq = queues[ai];
        Quantities mine = touched_[ai] ? remaining_[ai] : allocated_of(rq);
        mine += request;
        for (std::size_t sib = 0; sib < queues.size(); ++sib) {
          if (!touched_[sib] || queues[sib].parent != rq.parent || sib == ai) continue;
          const Quantities theirs = remaining_[sib];
          for (int r = 0; r < 3; ++r) {
            if (!involved_[sib][static_cast<std::size_t>(r)] && !(request.v[r] > 0)) continue;
            const double rf = rq.resources[r].fair_share, sf = queues[sib].resources[r].fair_share;
            if (rf == kUnlimited && sf == kUnlimited) continue;
            const double ratio_r = saturation(mine.v[r], rf), ratio_s = saturation(theirs.v[r], sf);
            if (ratio_r > 1 && sf > 0 && ratio_r * kSaturationMultiplier >= ratio_s) {
              if (why) *why = "queue " + rq.name + "'s saturation (allocated / fair share) would not stay below queue " + queues[sib].name + "'s";
              return false;
            }
          }
        }
        if (!c_.preemptible) {
          for (int r = 0; r < 3; ++r) {
            const double d = rq.resources[r].deserved;
            if (d != kUnlimited && rq.resources[r].allocated_not_preemptible + request.v[r] > d + 1e-9) {
              if (why) *why = "queue " + rq.name + " would hold non-preemptible pods over its quota";
              return false;
            }
          }
        }
        at = c_.parent(at);
      }
      return true;
    }

   private:
    int reclaimer_q() const { return c_.s.job_queue[static_cast<std::size_t>(c_.reclaimer_job)]; }
    const ReclaimCheck& c_;
    std::vector<Quantities> remaining_;
    std::vector<bool> touched_;
    std::vector<std::array<bool, 3>> involved_;
    bool failed_ = false;
    std::string failure_;
  };

  bool reclaimable(const std::vector<const Unit*>& units, std::string* why) const {
    Tally tally(*this);
    for (const Unit* u : units) tally.add(*u);
    return tally.verdict(why);
  }
};

// A necessary condition for a trial's placement, checked before the trial is simulated. Counted in
// GPUs: for each size g the job's tasks ask, the tasks asking g or more need as many slots of g, and a
// node with f GPUs idle or releasing has floor(f / g) of them; with a required topology level, one
// domain must have them all. The victims' GPUs are added to their nodes as units join the trial. A
// trial it refuses cannot place the job (each task needs its GPUs on one node, `fits`), so skipping it
// changes no decision (upstream's own filters, which can refuse a trial that would work, are
// UpstreamFilters below; this one only saves simulations). GPU counts are whole numbers, so the floors
// are exact. Off (lets everything
// through) for a job without GPU tasks, or in a cluster with a node without GPUs (charged_on charges
// a pod nothing there).
class RoomFilter {
 public:
  RoomFilter(const Session& s, int j, const std::vector<int>& which) : s_(s) {
    std::vector<double> asks;
    for (int t : which) {
      const double g = s.tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].request.v[Gpu];
      if (g > 0) asks.push_back(g);
    }
    if (asks.empty()) return;
    for (const NodeRoom& n : s.nodes)
      if (n.allocatable.v[Gpu] == 0) return;
    sizes_ = asks;
    std::sort(sizes_.begin(), sizes_.end());
    sizes_.erase(std::unique(sizes_.begin(), sizes_.end()), sizes_.end());
    for (const double g : sizes_) need_.push_back(static_cast<long long>(std::count_if(asks.begin(), asks.end(), [&](double a) { return a >= g; })));
    domains_ = required_domains(s, j);
    const std::size_t count = domains_ ? static_cast<std::size_t>(domains_->count) : 1;
    slots_.assign(count * sizes_.size(), 0);
    free_.resize(s.nodes.size());
    for (std::size_t n = 0; n < s.nodes.size(); ++n) {
      free_[n] = s.nodes[n].idle.v[Gpu] + s.nodes[n].releasing.v[Gpu];
      count_node(static_cast<int>(n), +1);
    }
    on_ = true;
  }

  // The unit's tasks evicted (+1) or given back (-1).
  void add(const Unit& u, int sign) {
    if (!on_) return;
    for (int t : u.tasks) {
      const TaskRun& run = s_.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)];
      count_node(run.node, -1);
      free_[static_cast<std::size_t>(run.node)] += sign * run.request.v[Gpu];
      count_node(run.node, +1);
    }
  }

  bool may_fit() const {
    if (!on_) return true;
    for (std::size_t d = 0; d * sizes_.size() < slots_.size(); ++d) {
      bool all = true;
      for (std::size_t k = 0; k < sizes_.size() && all; ++k) all = slots_[d * sizes_.size() + k] >= need_[k];
      if (all) return true;
    }
    return false;
  }

 private:
  void count_node(int n, int sign) {
    const int d = domains_ ? domains_->node_domain[static_cast<std::size_t>(n)] : 0;
    if (d < 0) return;
    const double f = free_[static_cast<std::size_t>(n)];
    for (std::size_t k = 0; k < sizes_.size(); ++k)
      if (f > 0) slots_[static_cast<std::size_t>(d) * sizes_.size() + k] += sign * static_cast<long long>(std::floor(f / sizes_[k]));
  }

  const Session& s_;
  bool on_ = false;
  std::vector<double> sizes_;             // the GPU sizes the tasks ask, ascending
  std::vector<long long> need_;           // [size] the tasks asking that size or more
  const Session::DomainIndex* domains_ = nullptr;  // the required level's domains (nullptr: one, every node)
  std::vector<double> free_;              // [node] GPUs idle or releasing, the trial's victims' included
  std::vector<long long> slots_;          // [domain][size]
};

// The accumulated scenario filters of pod_scenario_builder.go, as upstream runs them on each
// accumulated scenario (a scenario they refuse is not tried, even where it would have worked):
//   - idle_gpus/topology_aware_idle_gpus.go: for each SubGroupSet of the job (the PodGroup and the
//     sub-groups with children) with a required level, the GPUs of the partial job's pods under it (its
//     allocated pods and the k pending ones) must be matched, largest first and first fit, to the
//     domains of that level (nodes by their label value for the level), largest capacity first, each
//     domain's capacity the idle and releasing GPUs of its nodes plus the scenario's victims' GPUs;
//   - idle_gpus/idle_gpus.go: the pending tasks' GPUs, largest first, matched first fit to the k nodes
//     (k the pending tasks) with the most idle and releasing GPUs, the victims' GPUs added to their
//     nodes (common.go greedyMatchRequirements; a task asking no GPUs ends the match).
// (The node-affinities filter only refuses scenarios that cannot place the job; it is left out.)
class UpstreamFilters {
 public:
  UpstreamFilters(const Session& s, int j, const std::vector<int>& pending) : s_(s) {
    for (int t : pending) required_.push_back(s.tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].request.v[Gpu]);
    std::sort(required_.begin(), required_.end(), std::greater<double>());
    cap_.resize(s.nodes.size());
    for (std::size_t n = 0; n < s.nodes.size(); ++n) cap_[n] = s.nodes[n].idle.v[Gpu] + s.nodes[n].releasing.v[Gpu];
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    // the partial job's pods: its allocated ones (GetAllAllocatedPods) and the pending ones
    std::vector<char> in(job.tasks.size(), 0);
    for (std::size_t t = 0; t < job.tasks.size(); ++t) {
      const Status st = s.tasks[static_cast<std::size_t>(j)][t].status;
      in[t] = st == Status::Allocated || st == Status::Binding || st == Status::Running;
    }
    for (int t : pending) in[static_cast<std::size_t>(t)] = 1;
    const auto add_group = [&](int g, const TopologyConstraint& c) {
      if (c.required_level.empty()) return;
      double sum = 0;
      for (std::size_t t = 0; t < job.tasks.size(); ++t)
        if (in[t] && s.task_under(j, static_cast<int>(t), g)) sum += s.tasks[static_cast<std::size_t>(j)][t].request.v[Gpu];
      const std::string key = c.topology + "\x1f" + c.required_level;
      auto it = std::find_if(groups_.begin(), groups_.end(), [&](const Group& x) { return x.key == key; });
      if (it == groups_.end()) {
        groups_.push_back({key, c.required_level, {}, {}});
        it = groups_.end() - 1;
      }
      it->required.push_back(sum);
    };
    add_group(-1, job.topology);
    for (std::size_t g = 0; g < job.sub_groups.size(); ++g)
      if (!job.sub_groups[g].leaf) add_group(static_cast<int>(g), job.sub_groups[g].topology);
    for (Group& gr : groups_) {
      std::sort(gr.required.begin(), gr.required.end(), std::greater<double>());
      gr.domain_of.assign(s.nodes.size(), -1);
      std::map<std::string, int> ids;
      for (std::size_t n = 0; n < s.nodes.size(); ++n) {
        const Labels& labels = s.snap.nodes[n].labels;
        const auto l = labels.find(gr.level);
        if (l == labels.end() || l->second.empty()) continue;
        gr.domain_of[n] = ids.try_emplace(l->second, static_cast<int>(ids.size())).first->second;
      }
      gr.domains = static_cast<int>(ids.size());
    }
  }
  // A victim's pods: their GPUs free on their nodes (each pod once).
  void add(int job, int t) {
    if (!seen_.insert({job, t}).second) return;
    const TaskRun& run = s_.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)];
    if (run.node >= 0) cap_[static_cast<std::size_t>(run.node)] += run.request.v[Gpu];
  }
  bool pass() const {
    for (const Group& gr : groups_) {
      std::vector<double> dom(static_cast<std::size_t>(gr.domains), 0);
      for (std::size_t n = 0; n < cap_.size(); ++n)
        if (gr.domain_of[n] >= 0) dom[static_cast<std::size_t>(gr.domain_of[n])] += cap_[n];
      std::sort(dom.begin(), dom.end(), std::greater<double>());
      if (!greedy(gr.required, dom)) return false;
    }
    std::vector<double> top = cap_;
    const std::size_t k = std::min(required_.size(), top.size());
    std::partial_sort(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(k), top.end(), std::greater<double>());
    top.resize(k);
    return greedy(required_, top);
  }

 private:
  // common.go greedyMatchRequirements; `holders` by capacity, largest first
  static bool greedy(const std::vector<double>& required, const std::vector<double>& holders) {
    std::vector<double> used(holders.size(), 0);
    for (const double r : required) {
      if (r == 0) return true;
      bool matched = false;
      for (std::size_t h = 0; h < holders.size(); ++h) {
        if (holders[h] < r) break;
        if (holders[h] - used[h] >= r) {
          used[h] += r;
          matched = true;
          break;
        }
      }
      if (!matched) return false;
    }
    return true;
  }
  struct Group {
    std::string key, level;
    std::vector<double> required;  // per SubGroupSet, largest first
    std::vector<int> domain_of;    // [node] its domain (-1: no label)
    int domains = 0;
  };
  const Session& s_;
  std::vector<double> required_;
  std::vector<double> cap_;
  std::vector<Group> groups_;
  std::set<std::pair<int, int>> seen_;
};

// A trial's victims: the node each evicted pod was on (the units' tasks in order), and whether every
// victim's job was placed again.
struct Trial {
  std::vector<int> from;
  bool all_moved = true;
};

// Every job with a pending pod by leaf queue, in job order, as the solve found them (the trials roll
// back, so the jobs they do not touch stay so).
using PendingByQueue = std::vector<std::vector<int>>;

PendingByQueue pending_by_queue(const Session& s) {
  PendingByQueue by(s.queues.size());
  for (std::size_t o = 0; o < s.snap.jobs.size(); ++o)
    if (s.job_queue[o] >= 0 && s.has_pending(static_cast<int>(o))) by[static_cast<std::size_t>(s.job_queue[o])].push_back(static_cast<int>(o));
  for (std::vector<int>& jobs : by) std::sort(jobs.begin(), jobs.end(), [&](int a, int b) { return s.job_before(a, b); });
  return by;
}

// Whether the job fits with these units evicted (by_pod_solver.go tryScenarioWithEvictedVictims,
// common/action.go TryToVirtuallyAllocatePreemptorAndGetVictims): evict the units' pods, then allocate
// the job and each victim's job in job order (JobsOrderByQueues over them and every other pending job,
// which it pops and skips), each through AllocateJob on the solver's feasible
// nodes: its queue's capacity check (on every level, the limit included), then its tasks pipelined onto
// nodes, all or none. The job must fit. A victim's job that fits again is moved, its evicted pods
// pipelined elsewhere; one that does not stays evicted (Releasing). Leaves the trial in the statement.
bool try_units(Session& s, int j, const std::vector<Unit>& units, const std::vector<int>& nodes, const PendingByQueue& pending,
               Trial* trial = nullptr) {
  std::vector<int> jobs{j};
  std::vector<int> from;
  // [job] its place in `jobs` (-1: not involved); per involved job its evicted pods and their nodes
  std::vector<int> place(s.snap.jobs.size(), -1);
  place[static_cast<std::size_t>(j)] = 0;
  std::vector<std::vector<std::pair<int, int>>> evicted_of(1);
  for (const Unit& u : units) {
    int& at_job = place[static_cast<std::size_t>(u.job)];
    if (at_job < 0) {
      at_job = static_cast<int>(jobs.size());
      jobs.push_back(u.job);
      evicted_of.emplace_back();
    }
    for (int t : u.tasks) {
      const int node = s.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)].node;
      from.push_back(node);
      evicted_of[static_cast<std::size_t>(at_job)].push_back({t, node});
      s.evict_task(u.job, t);
    }
  }
  // The evicted pods are pods to place again (their Evict entries in the journal keep what they were).
  const auto set_evicted = [&](int job, bool pending_again) {
    for (const auto& [t, node] : evicted_of[static_cast<std::size_t>(place[static_cast<std::size_t>(job)])]) {
      TaskRun& run = s.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)];
      if (!pending_again && run.status != Status::Pending) continue;  // placed again (or unevicted)
      run.status = pending_again ? Status::Pending : Status::Releasing;
      run.node = pending_again ? -1 : node;
    }
    s.touched(job);
  };
  for (std::size_t k = 1; k < jobs.size(); ++k) set_evicted(jobs[k], true);
  // GetJobsToAllocate: every job with a pending pod joins the order, popped and skipped. Only those in
  // the involved jobs' own queues ahead of the last involved one there can change which involved job
  // comes next (a queue's place is judged by its first job); the pops end with the involved jobs.
  // JobsOrderByQueues over them: per leaf queue its jobs in job order (the involved ones among the
  // others as they are now); at each level of the queue tree the child first by queue order, judged by
  // its first job and that job's request.
  const auto involved = [&](int x) { return place[static_cast<std::size_t>(x)] >= 0; };
  const std::size_t nq = s.queues.size();
  std::vector<std::vector<int>> list(nq);
  std::vector<std::size_t> at(nq, 0);
  std::vector<int> remaining(nq, 0);
  std::vector<Vec> head_request(nq);
  std::vector<int> leaves;
  for (int v : jobs) {
    const int q = s.job_queue[static_cast<std::size_t>(v)];
    if (q >= 0 && std::find(leaves.begin(), leaves.end(), q) == leaves.end()) leaves.push_back(q);
  }
  const auto set_head = [&](int q) {
    const std::vector<int>& l = list[static_cast<std::size_t>(q)];
    const std::size_t i = at[static_cast<std::size_t>(q)];
    if (i < l.size()) head_request[static_cast<std::size_t>(q)] = s.request_of(l[i], s.tasks_to_allocate(l[i]));
  };
  for (int q : leaves) {
    std::vector<int> mine;
    for (int v : jobs)
      if (s.job_queue[static_cast<std::size_t>(v)] == q) mine.push_back(v);
    std::sort(mine.begin(), mine.end(), [&](int a, int b) { return s.job_before(a, b); });
    const std::vector<int>& here = pending[static_cast<std::size_t>(q)];
    std::vector<int>& l = list[static_cast<std::size_t>(q)];
    std::size_t i = 0;  // `here` is sorted: the jobs before an involved one are a prefix of the others
    for (int v : mine) {
      for (; i < here.size(); ++i) {
        if (involved(here[i])) continue;
        if (!s.job_before(here[i], v)) break;
        l.push_back(here[i]);
      }
      l.push_back(v);
    }
    for (int a = q; a >= 0; a = s.parent_of(a)) remaining[static_cast<std::size_t>(a)] += static_cast<int>(l.size());
    set_head(q);
  }
  // The first child of `parent` with jobs left, and the leaf whose first job represents it.
  std::function<std::pair<int, int>(int)> best_child = [&](int parent) {
    int chosen = -1, chosen_leaf = -1;
    for (const int c : s.queue_children_[parent < 0 ? nq : static_cast<std::size_t>(parent)]) {
      if (remaining[static_cast<std::size_t>(c)] == 0) continue;
      const int leaf = s.queue_children_[static_cast<std::size_t>(c)].empty() ? c : best_child(c).second;
      const std::size_t li = static_cast<std::size_t>(leaf), ci = static_cast<std::size_t>(chosen_leaf);
      if (chosen < 0 || s.queue_order(c, chosen, list[li][at[li]], list[ci][at[ci]], &head_request[li], &head_request[ci]) < 0) {
        chosen = c;
        chosen_leaf = leaf;
      }
    }
    return std::make_pair(chosen, chosen_leaf);
  };
  bool placed = false, all_moved = true;
  for (std::size_t left = jobs.size(); left > 0;) {
    const int q = best_child(-1).second;
    if (q < 0) break;
    const int v = list[static_cast<std::size_t>(q)][at[static_cast<std::size_t>(q)]++];
    for (int a = q; a >= 0; a = s.parent_of(a)) --remaining[static_cast<std::size_t>(a)];
    set_head(q);
    if (!involved(v)) continue;
    --left;
    const bool fits = s.allocate_job(v, nodes, true, false);
    if (v == j) {
      if (!fits) return false;
      placed = true;
    } else {
      // An evicted pod the victim's job did not take again (all of them when it did not fit; an elastic
      // job takes back only what it asks) stays evicted, Releasing on its node.
      set_evicted(v, false);
      if (!fits) all_moved = false;
      for (const auto& [t, node] : evicted_of[static_cast<std::size_t>(place[static_cast<std::size_t>(v)])])
        all_moved = all_moved && s.tasks[static_cast<std::size_t>(v)][static_cast<std::size_t>(t)].status != Status::Releasing;
    }
  }
  if (trial) *trial = {std::move(from), all_moved};
  return placed;
}

bool is_task_active(const Session& s, int j, int t) {
  const TaskRun& run = s.tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)];
  return is_active_allocated(run.status) && run.node >= 0;
}

// What a victim job (or the clone of it the queue holds) has allocated: its active pods' requests.
Vec allocated_of(const Session& s, const Unit& g) {
  Vec v;
  for (int t : g.tasks)
    if (is_task_active(s, g.job, t)) v += s.tasks[static_cast<std::size_t>(g.job)][static_cast<std::size_t>(t)].request;
  return v;
}

// JobOrderFn for a clone holding some of its job's tasks: its elastic state counts those only.
bool clone_before(const Session& s, const Unit& a, const Unit& b) {
  const auto elastic = [&](const Unit& g) {
    const std::vector<Session::PodSet>& sets = s.pod_sets(g.job);
    std::vector<int> active(sets.size(), 0);
    for (int t : g.tasks) {
      const int k = s.task_set_[static_cast<std::size_t>(g.job)][static_cast<std::size_t>(t)];
      if (k >= 0 && is_task_active(s, g.job, t)) ++active[static_cast<std::size_t>(k)];
    }
    return Session::elastic_from(sets, active);
  };
  return Session::job_order_before(s.snap.jobs[static_cast<std::size_t>(a.job)], elastic(a), s.snap.jobs[static_cast<std::size_t>(b.job)], elastic(b));
}

// utils.GetVictimsQueue / JobsOrderByQueues with VictimQueue (actions/utils/job_order_by_queue.go):
// the victim jobs in the queue tree, every order reversed. At each level the queue that would come
// last in allocation order comes first, compared with what its victims so far hold taken off its
// share (the jobs popped from its leaf and the next one there); in a leaf, the job last in job order.
// A job popped with more pods to give is pushed back as a clone of the rest, and takes its place again.
class VictimsQueue {
 public:
  // `sorted`: the candidates of each leaf queue in job order (VictimOrder).
  explicit VictimsQueue(const Session& s, const std::vector<std::vector<Unit>>& sorted)
      : s_(s), leaf_(sorted), popped_(s.queues.size()), count_(s.queues.size(), 0) {
    for (std::size_t q = 0; q < leaf_.size(); ++q)
      if (!leaf_[q].empty()) count(static_cast<int>(q), static_cast<int>(leaf_[q].size()));
  }
  bool empty() const { return size_ == 0; }
  void push(Unit g) {
    const int q = s_.job_queue[static_cast<std::size_t>(g.job)];
    if (q < 0) return;
    std::vector<Unit>& here = leaf_[static_cast<std::size_t>(q)];
    const auto at = std::partition_point(here.begin(), here.end(), [&](const Unit& x) { return clone_before(s_, x, g); });
    here.insert(at, std::move(g));
    count(q, +1);
  }
  Unit pop() {
    int q = best_child(-1);
    while (leaf_[static_cast<std::size_t>(q)].empty()) q = best_child(q);
    std::vector<Unit>& here = leaf_[static_cast<std::size_t>(q)];
    Unit g = std::move(here.back());  // the last in job order
    here.pop_back();
    count(q, -1);
    popped_[static_cast<std::size_t>(q)] += allocated_of(s_, g);
    return g;
  }

 private:
  void count(int q, int n) {
    for (int at = q; at >= 0; at = s_.parent_of(at)) count_[static_cast<std::size_t>(at)] += n;
    size_ += n;
  }
  // getVictimsForQueue, summed: a leaf's popped jobs and its next; a parent's, its first child's.
  Vec victims_of(int q) const {
    const std::size_t qi = static_cast<std::size_t>(q);
    if (!s_.queue_children_[qi].empty()) {
      const int child = best_child(q);
      return child < 0 ? Vec{} : victims_of(child);
    }
    Vec v = popped_[qi];
    if (!leaf_[qi].empty()) v += allocated_of(s_, leaf_[qi].back());
    return v;
  }
  int best_child(int parent) const {
    int chosen = -1;
    Vec chosen_out;
    for (const int c : s_.queue_children_[parent < 0 ? s_.queues.size() : static_cast<std::size_t>(parent)]) {
      if (count_[static_cast<std::size_t>(c)] == 0) continue;
      const Vec out = victims_of(c);
      if (chosen < 0 || s_.queue_order(c, chosen, -1, -1, nullptr, nullptr, &out, &chosen_out) > 0) {
        chosen = c;
        chosen_out = out;
      }
    }
    return chosen;
  }

  const Session& s_;
  std::vector<std::vector<Unit>> leaf_;  // [queue] its victim jobs (clones) in job order
  std::vector<Vec> popped_;              // [queue] what the ones popped so far hold
  std::vector<int> count_;               // [queue] victim jobs in its subtree
  int size_ = 0;
};

// The candidates by leaf queue in job order, whole jobs; kept while the state and the candidates
// are the same (the next pending job with the same filter, the next partial job).
struct VictimOrder {
  bool valid = false;
  std::uint64_t epoch = 0;
  std::vector<int> jobs;
  std::vector<std::vector<Unit>> sorted;
};

const std::vector<std::vector<Unit>>& victim_order(const Session& s, const std::vector<int>& candidates, VictimOrder& cache) {
  if (cache.valid && cache.epoch == s.epoch && s.journal.empty() && cache.jobs == candidates) return cache.sorted;
  cache.sorted.assign(s.queues.size(), {});
  for (int j : candidates) {
    const int q = s.job_queue[static_cast<std::size_t>(j)];
    if (q < 0) continue;
    Unit g{j, {}};
    for (std::size_t t = 0; t < s.tasks[static_cast<std::size_t>(j)].size(); ++t) g.tasks.push_back(static_cast<int>(t));
    cache.sorted[static_cast<std::size_t>(q)].push_back(std::move(g));
  }
  for (std::vector<Unit>& here : cache.sorted)
    std::stable_sort(here.begin(), here.end(), [&](const Unit& a, const Unit& b) { return s.job_before(a.job, b.job); });
  cache.valid = s.journal.empty();
  cache.epoch = s.epoch;
  cache.jobs = candidates;
  return cache.sorted;
}

// The pending jobs by queue for try_units, kept while the state is the same.
struct PendingCache {
  bool valid = false;
  std::uint64_t epoch = 0;
  PendingByQueue by;
};

// podgroup_info/eviction_info.go GetTasksToEvict over the SubGroupSet tree, counted with the clone's
// active pods. First an elastic surplus, deepest first, the members in reverse SubGroupOrderFn order:
// one pod of a PodSet above its minAvailable, or, where a SubGroupSet has more members satisfied than
// it needs, the whole of its last member; when there is none, every active pod of the clone. Pods in
// reverse task order, pod sets in spec order. Second: whether the clone keeps active pods.
std::pair<std::vector<int>, bool> tasks_to_evict(const Session& s, const Unit& g) {
  const int j = g.job;
  const std::vector<Session::PodSet>& sets = s.pod_sets(j);
  const std::vector<int>& of = s.task_set_[static_cast<std::size_t>(j)];
  std::vector<int> have(sets.size(), 0);
  std::vector<char> in_clone(of.size(), 0);
  int active = 0;
  for (int t : g.tasks) {
    in_clone[static_cast<std::size_t>(t)] = 1;
    if (is_task_active(s, j, t) && of[static_cast<std::size_t>(t)] >= 0) {
      ++have[static_cast<std::size_t>(of[static_cast<std::size_t>(t)])];
      ++active;
    }
  }
  const std::vector<int>& task_order = s.task_order_[static_cast<std::size_t>(j)];
  std::vector<int> out;
  // up to n of pod set k's active pods, last in task order first
  const auto from_set = [&](int k, int n) {
    for (auto it = task_order.rbegin(); it != task_order.rend() && n > 0; ++it)
      if (in_clone[static_cast<std::size_t>(*it)] && of[static_cast<std::size_t>(*it)] == k && is_task_active(s, j, *it)) {
        out.push_back(*it);
        --n;
      }
  };
  const std::vector<Session::GroupSet>& groups = s.group_sets_[static_cast<std::size_t>(j)];
  // collectAllAllocatedTasksFromSubGroupSet: every pod set under group `grp`
  const std::function<void(int)> all_of_group = [&](int grp) {
    const Session::GroupSet& set = groups[static_cast<std::size_t>(grp)];
    for (const int child : set.groups) all_of_group(child);
    for (const int k : set.sets) from_set(k, have[static_cast<std::size_t>(k)]);
  };
  const auto set_surplus = [&](int k) { return have[static_cast<std::size_t>(k)] > sets[static_cast<std::size_t>(k)].min_member; };
  const std::function<bool(int)> group_surplus = [&](int grp) {  // hasElasticSurplusInSubGroupSet
    if (s.satisfied_members(j, grp, have) > s.members_to_satisfy(j, grp)) return true;
    const Session::GroupSet& set = groups[static_cast<std::size_t>(grp)];
    for (const int child : set.groups)
      if (group_surplus(child)) return true;
    for (const int k : set.sets)
      if (set_surplus(k)) return true;
    return false;
  };
  // collectElasticEvictionFromSubGroupSet (phases 1 and 2)
  const std::function<bool(int)> elastic = [&](int grp) {
    const int satisfied = s.satisfied_members(j, grp, have);
    if (satisfied == 0) return false;
    const std::vector<Session::Member> members = s.ordered_members(j, grp, have, true);
    if (group_surplus(grp))
      for (const Session::Member& m : members) {
        if (m.group) {
          if (elastic(m.index)) return true;
        } else if (set_surplus(m.index)) {
          from_set(m.index, 1);
          return true;
        }
      }
    if (s.members_to_satisfy(j, grp) < satisfied)
      for (const Session::Member& m : members) {
        const std::size_t before = out.size();
        if (m.group) all_of_group(m.index);
        else from_set(m.index, have[static_cast<std::size_t>(m.index)]);
        if (out.size() > before) return true;
      }
    return false;
  };
  if (!elastic(0)) all_of_group(0);
  const bool more = static_cast<int>(out.size()) < active;
  return {std::move(out), more};
}

// solvers/scenario (base_scenario.go, by_node_scenario.go): the recorded victims of the job's tasks
// solved so far, and the potential victims added since, each a group of a job's pods evicted together.
struct Scenario {
  std::vector<Unit> groups;           // victimsJobsTaskGroups: the recorded ones first
  std::vector<std::pair<int, int>> potential;  // (job, task), in the order added
  std::vector<std::vector<int>> jobs_on_node;  // [node] the jobs with a potential victim there
  std::vector<Unit> victims;          // per job in the order first added, its pods in that order
  std::size_t recorded = 0;           // groups[0, recorded)

  void add(Unit g, bool is_potential) {
    for (int t : g.tasks) {
      if (is_potential) potential.push_back({g.job, t});
      auto v = std::find_if(victims.begin(), victims.end(), [&](const Unit& u) { return u.job == g.job; });
      if (v == victims.end()) victims.push_back({g.job, {t}});
      else v->tasks.push_back(t);
    }
    groups.push_back(std::move(g));
  }
  // VictimsTasksFromNodes: every pod of every group of the jobs with a potential victim on the node.
  std::vector<std::pair<int, int>> from_node(int node) const {
    std::vector<std::pair<int, int>> out;
    if (node < 0 || static_cast<std::size_t>(node) >= jobs_on_node.size()) return out;
    for (int job : jobs_on_node[static_cast<std::size_t>(node)])
      for (const Unit& g : groups)
        if (g.job == job)
          for (int t : g.tasks) out.push_back({job, t});
    return out;
  }
  std::vector<std::pair<int, int>> recorded_tasks() const {
    std::vector<std::pair<int, int>> out;
    for (std::size_t i = 0; i < recorded; ++i)
      for (int t : groups[i].tasks) out.push_back({groups[i].job, t});
    return out;
  }
};

// The victims' pods as units to evict, each job's pods together (duplicates dropped).
std::vector<Unit> as_units(const std::vector<std::pair<int, int>>& pods) {
  std::vector<Unit> units;
  for (const auto& pod : pods) {
    const int job = pod.first, t = pod.second;  // (a lambda may not capture a structured binding in C++17)
    auto u = std::find_if(units.begin(), units.end(), [job](const Unit& x) { return x.job == job; });
    if (u == units.end()) units.push_back({job, {t}});
    else if (std::find(u->tasks.begin(), u->tasks.end(), t) == u->tasks.end()) u->tasks.push_back(t);
  }
  return units;
}

// What the solver keeps of a partial solution: the groups its victims belong to, and the trial.
struct Solution {
  std::vector<Unit> groups;
  std::vector<Unit> units;
  Trial trial;
};

// The JobSolver of actions/common/solvers as of upstream's 2026-08 tree (job_solver.go,
// scenario_generator.go, pod_scenario_builder.go, sub_scenario_emitter.go, by_pod_solver.go,
// scenario_fingerprint.go), for the victims of `candidates` (the action's filter) judged by
// `valid(scenario)`:
//   - the default generators in order, NodeLocalGreedy then MultiNodeGang, each from scratch; for each,
//     probes at k = 1, 2, 4, ... tasks of the job, then a binary search, each success's victims
//     recorded and evicted first in the next probe, then the probe at all of them (searchMaxSolvableK);
//   - in a probe, a scenario builder pops victim jobs from a new VictimsQueue, adding the pods
//     GetTasksToEvict gives (a job with more to give pushed back as a clone of the rest; a job holding
//     a recorded victim skipped, its other pods pushed back); an accumulated scenario upstream's filters
//     refuse is not tried (UpstreamFilters; RoomFilter, a necessary condition, as well);
//   - NodeLocalGreedy tries an accumulated scenario node by node (the nodes of its latest victim's job,
//     by name), MultiNodeGang over the first K nodes of the sub-scenario emitter; each trial evicts the
//     recorded victims and its own, then try_units on the feasible nodes (FeasibleNodesForJob: idle or
//     releasing GPUs, plus the victims' nodes); it works when the job fits and the validator accepts
//     the scenario as the trial left it. A trial that failed is not simulated again for the job.
struct SolveCaches {
  VictimOrder victims;
  PendingCache pending;
};

template <typename Valid>
bool solve(Session& s, int j, const std::vector<int>& candidates, const Valid& valid, const char* action, SolveCaches& caches) {
  const std::vector<int> all = s.tasks_to_allocate(j);
  if (all.empty() || candidates.empty()) return false;
  // common/feasible_nodes.go FeasibleNodesForJob, before the search
  std::vector<char> feasible(s.nodes.size(), 1);
  bool gpu_job = true;
  for (const TaskRun& t : s.tasks[static_cast<std::size_t>(j)]) gpu_job = gpu_job && t.request.v[Gpu] > 0;
  if (gpu_job)
    for (std::size_t n = 0; n < s.nodes.size(); ++n) feasible[n] = s.nodes[n].idle.v[Gpu] > 0 || s.nodes[n].releasing.v[Gpu] > 0;
  const auto nodes_with = [&](std::vector<char> on, const std::vector<std::pair<int, int>>& pods) {
    for (const auto& [job, t] : pods) {
      const int n = s.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)].node;
      if (n >= 0) on[static_cast<std::size_t>(n)] = 1;
    }
    std::vector<int> out;
    for (std::size_t n = 0; n < on.size(); ++n)
      if (on[n]) out.push_back(static_cast<int>(n));
    return out;
  };
  if (!(caches.pending.valid && caches.pending.epoch == s.epoch && s.journal.empty())) {
    caches.pending.by = pending_by_queue(s);
    caches.pending.valid = s.journal.empty();
    caches.pending.epoch = s.epoch;
  }
  const PendingByQueue& pending = caches.pending.by;
  const std::size_t base = s.journal.size();
  const std::size_t n_tasks = all.size();
  // job_solver.go failedScenarios: the fingerprints of the scenarios simulated without a solution for
  // this job, over every probe and generator (scenario_fingerprint.go: the pending tasks, the recorded
  // and the potential victims, each as a set). A scenario seen again is skipped: its simulation would
  // fail again (6dceb56b); this saves time and changes no decision.
  std::set<std::vector<int>> failed_scenarios;
  const auto fingerprint = [&](std::size_t k, const std::vector<std::pair<int, int>>& recorded_pods,
                               const std::vector<std::pair<int, int>>& potential_pods) {
    std::vector<int> fp{static_cast<int>(k), -1};
    const auto add = [&](const std::vector<std::pair<int, int>>& pods) {
      std::vector<std::pair<int, int>> sorted = pods;
      std::sort(sorted.begin(), sorted.end());
      sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
      for (const auto& [job, t] : sorted) {
        fp.push_back(job);
        fp.push_back(t);
      }
      fp.push_back(-1);
    };
    add(recorded_pods);
    add(potential_pods);
    return fp;
  };
  // One probe (job_solver.go probeAtK / solvePartialJob) at k tasks with the generator `gen` (0:
  // NodeLocalGreedy, plugins/nodelocalgreedy/generator.go; 1: MultiNodeGang,
  // plugins/multinodegang/generator.go with solvers/sub_scenario_emitter.go), the recorded victims
  // `recorded` evicted first. On success the trial stays in the statement and `last` holds it.
  Solution last;
  const auto probe = [&](std::size_t k, int gen, const std::vector<Unit>& recorded) {
    s.partial_job = j;
    s.partial_tasks.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k));
    Scenario sc;
    for (const Unit& g : recorded) sc.add(g, false);
    sc.recorded = sc.groups.size();
    sc.jobs_on_node.resize(s.nodes.size());
    const std::vector<std::pair<int, int>> recorded_pods = sc.recorded_tasks();
    const auto recorded_pod = [&](int job, int t) {
      return std::find(recorded_pods.begin(), recorded_pods.end(), std::make_pair(job, t)) != recorded_pods.end();
    };
    RoomFilter room(s, j, s.partial_tasks);
    for (const Unit& g : recorded) room.add(g, +1);
    UpstreamFilters filters(s, j, s.partial_tasks);
    for (const auto& [job, t] : sc.recorded_tasks()) filters.add(job, t);
    RoomFilter trial_room = room;  // the recorded victims only, for one trial's
    VictimsQueue queue(s, victim_order(s, candidates, caches.victims));
    // The feasible nodes with the recorded victims' (solvePartialJob's feasibleNodeMap).
    std::vector<char> feasible_here = feasible;
    for (const auto& [job, t] : recorded_pods) {
      const int n = s.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)].node;
      if (n >= 0) feasible_here[static_cast<std::size_t>(n)] = 1;
    }
    // byPodSolver.solve: the recorded victims and the scenario's potential ones evicted, the feasible
    // nodes joined by their nodes (rolled back when the trial fails: 950d16f6), then runSimulation and
    // the validator. `potential`: the scenario's potential victims as upstream lists them (for the
    // fingerprint); `added`: those evicted beside the recorded ones.
    // `groups`: the trial scenario's victim groups after the recorded ones (its job representatives,
    // base_scenario.go victimsJobsTaskGroups); the solution's victim jobs are the groups of its victims
    // (by_pod_solver.go getVictimJobsFromVictimTasks), recorded for the next probe.
    const auto simulate = [&](const std::vector<std::pair<int, int>>& potential, const std::vector<std::pair<int, int>>& added,
                              const std::vector<Unit>& groups) {
      if (recorded_pods.empty() && added.empty()) return false;  // no victims: not solved
      // The trial's own victims must leave room (the idle-GPUs condition again, for this trial's
      // victims only): a trial it refuses would fail in try_units, so it is not simulated.
      const std::vector<Unit> extra = as_units(added);
      for (const Unit& u : extra) trial_room.add(u, +1);
      const bool may = trial_room.may_fit();
      for (const Unit& u : extra) trial_room.add(u, -1);
      if (!may) return false;
      std::vector<int> fp = fingerprint(k, recorded_pods, potential);
      if (failed_scenarios.count(fp)) return false;
      std::vector<std::pair<int, int>> pods = recorded_pods;
      pods.insert(pods.end(), added.begin(), added.end());
      const std::size_t mark = s.journal.size();
      Solution sol;
      sol.units = as_units(pods);
      const std::vector<int> nodes = nodes_with(feasible_here, pods);
      if (!try_units(s, j, sol.units, nodes, pending, &sol.trial) || !valid(sc)) {
        s.rollback(mark);
        failed_scenarios.insert(std::move(fp));
        return false;
      }
      // by_pod_solver.go handleScenarioSolution: the victims are the pods left Releasing or Pipelined
      // (one pipelined back onto its own node was unevicted, and is none).
      {
        std::vector<Unit> kept;
        std::vector<int> from;
        std::size_t at = 0;
        std::vector<std::pair<int, int>> actual;
        for (const Unit& u : sol.units) {
          Unit v{u.job, {}};
          for (int t : u.tasks) {
            const Status st = s.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)].status;
            if (st == Status::Releasing || st == Status::Pipelined) {
              v.tasks.push_back(t);
              from.push_back(sol.trial.from[at]);
              actual.push_back({u.job, t});
            }
            ++at;
          }
          if (!v.tasks.empty()) kept.push_back(std::move(v));
        }
        sol.units = std::move(kept);
        sol.trial.from = std::move(from);
        pods = std::move(actual);
      }
      std::vector<const Unit*> trial_groups;
      for (std::size_t g = 0; g < sc.recorded; ++g) trial_groups.push_back(&sc.groups[g]);
      for (const Unit& g : groups) trial_groups.push_back(&g);
      for (const auto& [job, t] : pods)
        for (const Unit* gp : trial_groups)
          if (const Unit& g = *gp; g.job == job && std::find(g.tasks.begin(), g.tasks.end(), t) != g.tasks.end()) {
            if (std::none_of(sol.groups.begin(), sol.groups.end(), [&](const Unit& x) { return x.job == g.job && x.tasks == g.tasks; }))
              sol.groups.push_back(g);
            break;
          }
      last = std::move(sol);
      return true;
    };
    const auto active_new = [&](const std::vector<std::pair<int, int>>& pods) {
      std::vector<std::pair<int, int>> added;
      for (const auto& p : pods)
        if (is_task_active(s, p.first, p.second) && !recorded_pod(p.first, p.second) &&
            std::find(added.begin(), added.end(), p) == added.end())
          added.push_back(p);
      return added;
    };
    // nodelocalgreedy/generator.go nodeLocalScenarios: one scenario per node of the latest potential
    // victim's job, in node-name order, each with every pod of the potential victims' jobs on that node
    // (a victim set already tried for this accumulated scenario is not tried again).
    const auto node_local = [&]() {
      if (sc.potential.empty()) return simulate({}, {}, {});
      const int latest = sc.potential.back().first;
      std::vector<int> on;
      for (const TaskRun& run : s.tasks[static_cast<std::size_t>(latest)])
        if (run.node >= 0 && std::find(on.begin(), on.end(), run.node) == on.end()) on.push_back(run.node);
      std::sort(on.begin(), on.end(), [&](int a, int b) {
        return s.snap.nodes[static_cast<std::size_t>(a)].name < s.snap.nodes[static_cast<std::size_t>(b)].name;
      });
      std::vector<std::vector<std::pair<int, int>>> seen;
      for (const int n : on) {
        std::vector<std::pair<int, int>> here = sc.from_node(n);
        if (here.empty()) continue;
        std::vector<std::pair<int, int>> key = here;
        std::sort(key.begin(), key.end());
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
        seen.push_back(std::move(key));
        // addPotentialVictimsGroupedByJob: one group per job, in the order the pods come
        std::vector<Unit> by_job;
        for (const auto& [job, t] : here) {
          auto it = std::find_if(by_job.begin(), by_job.end(), [job = job](const Unit& u) { return u.job == job; });
          if (it == by_job.end()) by_job.push_back({job, {t}});
          else it->tasks.push_back(t);
        }
        if (simulate(here, active_new(here), by_job)) return true;
      }
      return false;
    };
    // sub_scenario_emitter.go: the accumulated scenario's potential victims as batches (one per victim
    // group), grouped by node; the nodes that could hold the smallest pending task, by the GPUs they
    // would have (idle, releasing, recorded and potential victims') then first seen; sub-scenarios of
    // the first K nodes' batches, K from the fewest whose GPUs cover the demand beyond the feasible
    // nodes without batches, then K + 1, K + 3, K + 7, ... up to all of them.
    const auto multi_node = [&]() {
      if (sc.potential.empty()) return simulate({}, {}, {});
      double demand = 0, min_task = -1;
      for (int t : s.partial_tasks) {
        const double g = s.tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(t)].request.v[Gpu];
        demand += g;
        if (min_task < 0 || g < min_task) min_task = g;
      }
      std::vector<double> recorded_freed(s.nodes.size(), 0);
      for (const auto& [job, t] : recorded_pods) {
        const TaskRun& run = s.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)];
        if (run.node >= 0) recorded_freed[static_cast<std::size_t>(run.node)] += run.request.v[Gpu];
      }
      // the potential groups (batches), their nodes in insertion order
      std::vector<const Unit*> batches;
      std::vector<std::vector<int>> node_batches(s.nodes.size());
      std::vector<long> first_seen(s.nodes.size(), -1);
      std::vector<int> batch_nodes;  // nodes with a batch, first seen first
      long idx = 0;
      for (std::size_t g = sc.recorded; g < sc.groups.size(); ++g) {
        const Unit& u = sc.groups[g];
        const int bi = static_cast<int>(batches.size());
        batches.push_back(&u);
        for (int t : u.tasks) {
          const int n = s.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)].node;
          if (n >= 0) {
            const std::size_t ni = static_cast<std::size_t>(n);
            if (first_seen[ni] < 0) {
              first_seen[ni] = idx;
              batch_nodes.push_back(n);
            }
            if (std::find(node_batches[ni].begin(), node_batches[ni].end(), bi) == node_batches[ni].end()) node_batches[ni].push_back(bi);
          }
          ++idx;
        }
      }
      std::vector<double> cap(s.nodes.size(), 0);
      for (const int n : batch_nodes) {
        const std::size_t ni = static_cast<std::size_t>(n);
        double c = recorded_freed[ni] + s.nodes[ni].idle.v[Gpu] + s.nodes[ni].releasing.v[Gpu];
        for (const int bi : node_batches[ni])
          for (int t : batches[static_cast<std::size_t>(bi)]->tasks) {
            const TaskRun& run = s.tasks[static_cast<std::size_t>(batches[static_cast<std::size_t>(bi)]->job)][static_cast<std::size_t>(t)];
            if (run.node == n) c += run.request.v[Gpu];
          }
        cap[ni] = c;
      }
      std::vector<int> sorted;
      for (const int n : batch_nodes)
        if (!(min_task > 0 && cap[static_cast<std::size_t>(n)] < min_task)) sorted.push_back(n);
      std::stable_sort(sorted.begin(), sorted.end(), [&](int a, int b) {
        const double ca = cap[static_cast<std::size_t>(a)], cb = cap[static_cast<std::size_t>(b)];
        if (ca != cb) return ca < cb;
        return first_seen[static_cast<std::size_t>(a)] < first_seen[static_cast<std::size_t>(b)];
      });
      double baseline = 0;
      for (std::size_t n = 0; n < s.nodes.size(); ++n)
        if (feasible_here[n] && node_batches[n].empty()) baseline += s.nodes[n].idle.v[Gpu] + s.nodes[n].releasing.v[Gpu] + recorded_freed[n];
      const double remaining = std::max(0.0, demand - baseline);
      std::size_t next_k = sorted.size() + 1;  // smallestKCovering
      if (remaining <= 0) {
        next_k = 0;
      } else {
        double cumulative = 0;
        for (std::size_t i = 0; i < sorted.size(); ++i) {
          cumulative += cap[static_cast<std::size_t>(sorted[i])];
          if (cumulative >= remaining) {
            next_k = i + 1;
            break;
          }
        }
      }
      for (std::size_t dk = 1; next_k <= sorted.size();) {
        const std::size_t kk = next_k;
        if (kk >= sorted.size()) {
          next_k = sorted.size() + 1;
        } else {
          next_k = std::min(kk + dk, sorted.size());
          dk *= 2;
        }
        std::vector<char> picked(batches.size(), 0);
        for (std::size_t i = 0; i < kk; ++i)
          for (const int bi : node_batches[static_cast<std::size_t>(sorted[i])]) picked[static_cast<std::size_t>(bi)] = 1;
        std::vector<std::pair<int, int>> potential;
        std::vector<Unit> picked_groups;
        for (std::size_t bi = 0; bi < batches.size(); ++bi)
          if (picked[bi]) {
            picked_groups.push_back(*batches[bi]);
            for (int t : batches[bi]->tasks) potential.push_back({batches[bi]->job, t});
          }
        if (simulate(potential, active_new(potential), picked_groups)) return true;
      }
      return false;
    };
    bool found = false;
    for (bool first = true;; first = false) {
      if (!first) {  // GetNextScenario
        if (queue.empty()) break;
        Unit g = queue.pop();
        auto [evict, more] = tasks_to_evict(s, g);
        if (std::any_of(evict.begin(), evict.end(), [&](int t) { return recorded_pod(g.job, t); })) {
          Unit rest{g.job, {}};
          for (int t : g.tasks)
            if (!recorded_pod(g.job, t)) rest.tasks.push_back(t);
          if (!rest.tasks.empty()) queue.push(std::move(rest));
          continue;
        }
        if (more) {
          Unit rest{g.job, {}};
          for (int t : g.tasks)
            if (std::find(evict.begin(), evict.end(), t) == evict.end()) rest.tasks.push_back(t);
          queue.push(std::move(rest));
        }
        if (evict.empty()) continue;  // the scenario is the one just refused or tried
        for (int t : evict) {
          std::vector<int>& on = sc.jobs_on_node[static_cast<std::size_t>(s.tasks[static_cast<std::size_t>(g.job)][static_cast<std::size_t>(t)].node)];
          if (std::find(on.begin(), on.end(), g.job) == on.end()) on.push_back(g.job);
        }
        Unit added{g.job, evict};
        room.add(added, +1);
        for (int t : evict) filters.add(g.job, t);
        sc.add(std::move(added), true);
      }
      // GetValidAccumulatedScenario: upstream's filters; the room filter is a necessary condition
      // (a scenario it refuses leaves no room for the job, whatever part of it is tried).
      if (!room.may_fit() || !filters.pass()) continue;
      if (gen == 0 ? node_local() : multi_node()) {
        found = true;
        break;
      }
    }
    s.partial_job = -1;
    s.partial_tasks.clear();
    return found;
  };
  // job_solver.go SolveWithResult: the generators in their registration order (the default
  // configuration's sg-nodelocalgreedy, then sg-multinodegang: conf_util/scheduler_conf_util.go), each
  // from no recorded victims. searchMaxSolvableK: probes at k = 1, 2, 4, ... up to the job's n tasks
  // until one fails, then a binary search between the last success and that failure, each success's
  // victims recorded for the next probe (every probe's trial discarded); then, if any k worked, the
  // probe at n, whose solution is the job's. The search budgets (search_budget.go: 5 min an action,
  // 4 min a job, 30 s NodeLocalGreedy, 2 min MultiNodeGang by default) are wall-clock deadlines far
  // beyond what a search here takes, so the lab runs every search to its end (as unlimited).
  bool solved = false;
  for (int gen = 0; gen < 2 && !solved; ++gen) {
    std::vector<Unit> recorded;
    const auto try_probe = [&](std::size_t k) {
      const bool ok = probe(k, gen, recorded);
      if (ok) recorded = last.groups;
      s.rollback(base);
      return ok;
    };
    std::size_t lo = 0, hi = 0;
    for (std::size_t k = 1;;) {
      if (!try_probe(k)) {
        hi = k;
        break;
      }
      lo = k;
      if (k == n_tasks) break;
      k = std::min(k * 2, n_tasks);
    }
    if (hi > 0)
      while (hi - lo > 1) {
        const std::size_t mid = (lo + hi) / 2;
        if (try_probe(mid)) lo = mid;
        else hi = mid;
      }
    if (lo == 0) continue;
    if (probe(n_tasks, gen, recorded)) solved = true;
    else s.rollback(base);
  }
  s.partial_job = -1;
  s.partial_tasks.clear();
  if (!solved) return false;
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const bool moving = std::string(action) == "consolidation";
  std::string names;
  std::size_t k = 0;
  for (const Unit& u : last.units)
    for (int t : u.tasks) {
      const TaskRun& run = s.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)];
      s.victims.push_back({u.job, t, last.trial.from[k++], action, job.name});
      names += (names.empty() ? "" : ", ") + s.snap.jobs[static_cast<std::size_t>(u.job)].tasks[static_cast<std::size_t>(t)].name;
      if (moving) names += " → " + s.snap.nodes[static_cast<std::size_t>(run.node)].name;
      else if (run.status == Status::Pipelined) names += " (moved to " + s.snap.nodes[static_cast<std::size_t>(run.node)].name + ")";
    }
  s.commit(j);
  if (moving) s.settle();
  s.fit_errors[static_cast<std::size_t>(j)] = {};
  s.log.push_back(moving ? "consolidation: " + job.name + " pipelined after moving " + names
                         : std::string(action) + ": " + job.name + " (queue " + job.queue + ") pipelined onto the room of " + names);
  return true;
}

// The jobs that may give up pods (preemptible, with a pod placed: active, or with `running` Running),
// in job order; kept while the state is the same.
struct HolderCache {
  bool valid = false;
  std::uint64_t epoch = 0;
  std::vector<int> jobs;
};

const std::vector<int>& preemptible_holders(const Session& s, bool running, HolderCache& cache) {
  if (cache.valid && cache.epoch == s.epoch && s.journal.empty()) return cache.jobs;
  cache.jobs.clear();
  for (std::size_t v = 0; v < s.snap.jobs.size(); ++v) {
    if (!s.snap.jobs[v].preemptible) continue;
    bool holds = false;
    for (const TaskRun& t : s.tasks[v])
      holds = holds || (running ? t.status == Status::Running && t.node >= 0 : is_active_allocated(t.status) && t.node >= 0);
    if (holds) cache.jobs.push_back(static_cast<int>(v));
  }
  cache.valid = s.journal.empty();
  cache.epoch = s.epoch;
  return cache.jobs;
}


// A job's scheduling constraints (podgroup_info job_info.go GetSchedulingConstraintsSignature): per pod
// set that still has pods to place, its topology constraint and its ancestors' up to the job's, then
// its pending pods' own (pod_info scheduling_constraints_signature.go: node selector, affinity,
// tolerations, priority), each list sorted. Upstream hashes the text; equal text is what it compares.
std::string signature(const Session& s, int j) {
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const std::vector<Session::PodSet>& sets = s.pod_sets(j);
  const std::vector<int>& of = s.task_set_[static_cast<std::size_t>(j)];
  const auto constraint = [](const TopologyConstraint& c) { return c.topology + ":" + c.required_level + ":" + c.preferred_level; };
  std::vector<std::string> per_set;
  for (std::size_t k = 0; k < sets.size(); ++k) {
    std::vector<std::string> pods;
    bool all_active = true;
    for (std::size_t t = 0; t < job.tasks.size(); ++t) {
      if (of[t] != static_cast<int>(k)) continue;
      if (is_active_allocated(s.tasks[static_cast<std::size_t>(j)][t].status)) continue;
      all_active = false;
      const PodTemplate& pod = job.tasks[t].pod;
      std::string sig = "sel";
      for (const auto& [key, value] : pod.node_selector) sig += "\x1f" + key + "=" + value;
      sig += "\x1e" "aff";
      for (const Requirement& r : pod.required_affinity) {
        sig += "\x1f" + r.key + "/" + std::to_string(static_cast<int>(r.op));
        for (const std::string& v : r.values) sig += "," + v;
      }
      sig += "\x1e" "tol";
      for (const Toleration& tol : pod.tolerations)
        sig += "\x1f" + tol.key + "/" + std::to_string(static_cast<int>(tol.op)) + "/" + tol.value + "/" +
               (tol.effect ? std::to_string(static_cast<int>(*tol.effect)) : "");
      sig += "\x1e" + pod.priority_class_name + "/" + std::to_string(pod.priority);
      pods.push_back(std::move(sig));
    }
    if (all_active) {
      per_set.emplace_back();
      continue;
    }
    // podset.go generateSchedulingConstraintsSignature: its own constraint, then each ancestor's up to the PodGroup's.
    std::string sig;
    for (int g = sets[k].sub_group; g >= 0; g = job.sub_groups[static_cast<std::size_t>(g)].parent_index)
      sig += constraint(job.sub_groups[static_cast<std::size_t>(g)].topology) + "|";
    sig += constraint(job.topology);
    std::sort(pods.begin(), pods.end());
    for (const std::string& p : pods) sig += "\x1d" + p;
    per_set.push_back(std::move(sig));
  }
  std::sort(per_set.begin(), per_set.end());
  std::string out;
  for (const std::string& x : per_set) out += x + "\x1c";
  return out;
}

// common/minimal_job_representatives.go MinimalJobRepresentatives: per signature the smallest job that
// failed; a job is tried only if it is easier to place than that one.
class FailedJobs {
 public:
  explicit FailedJobs(const Session& s) : s_(s) {}
  bool easier(int j, const std::string& sig) const {
    const auto it = rep_.find(sig);
    if (it == rep_.end()) return true;
    // jobEasierToScheduleComparison
    const std::vector<Vec> a = pending(j), b = pending(it->second);
    if (a.empty() || b.empty()) return false;
    if (b.size() > a.size()) return true;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (i >= b.size()) return false;
      if (le(a[i], b[i])) {
        if (le(b[i], a[i])) continue;
        return true;
      }
    }
    return false;
  }
  void update(int j, const std::string& sig) {
    const auto it = rep_.find(sig);
    if (it != rep_.end() && !smaller(j, it->second)) return;
    rep_[sig] = j;
  }

 private:
  static bool le(const Vec& a, const Vec& b) { return a.v[0] <= b.v[0] && a.v[1] <= b.v[1] && a.v[2] <= b.v[2]; }
  // extractSortedResourceRequests: the pending pods' requests, smallest first (by GPUs, CPU, memory:
  // upstream's sort by LessEqual leaves incomparable ones in its sort's order).
  std::vector<Vec> pending(int j) const {
    std::vector<Vec> out;
    for (const TaskRun& t : s_.tasks[static_cast<std::size_t>(j)])
      if (t.status == Status::Pending) out.push_back(t.request);
    std::stable_sort(out.begin(), out.end(), [](const Vec& a, const Vec& b) {
      return std::lexicographical_compare(a.v, a.v + 3, b.v, b.v + 3);
    });
    return out;
  }
  // isPodGroupFootprintSmaller
  bool smaller(int j, int other) const {
    const std::vector<Vec> a = pending(j), b = pending(other);
    if (a.empty() || b.empty() || a.size() > b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!le(a[i], b[i])) return false;
    return true;
  }
  const Session& s_;
  std::map<std::string, int> rep_;
};

// The pending jobs in allocation order; `preemptible_only`: consolidation's FilterNonPreemptible
// (actions/utils/input_jobs.go), the others left out of the order altogether.
template <typename Body>
void for_each_pending_job(Session& s, const Body& body, bool preemptible_only = false) {
  JobsByQueue by_queue = s.pending_jobs_by_queue();
  if (preemptible_only)
    for (std::size_t q = 0; q < by_queue.jobs.size(); ++q) {
      std::vector<int>& jobs = by_queue.jobs[q];
      jobs.erase(std::remove_if(jobs.begin(), jobs.end(), [&](int j) { return !s.snap.jobs[static_cast<std::size_t>(j)].preemptible; }), jobs.end());
      by_queue.dirty[q] = 1;
    }
  // input_jobs.go FilterWithinPreemptionDelay: a job within its preemption delay (podgroup_info
  // job_info.go IsWithinPreemptionDelay: less than spec.preemptionDelay since the later of its creation
  // and its last eviction) may not trigger evictions; it keeps a PreemptionDelayNotElapsed fit error. It
  // stays evictable as a victim.
  for (std::size_t q = 0; q < by_queue.jobs.size(); ++q) {
    std::vector<int>& jobs = by_queue.jobs[q];
    const auto within = [&](int j) {
      const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
      if (job.preemption_delay_s <= 0) return false;
      const double since = job.last_evicted_s_ago >= 0 ? std::min(job.created_s_ago, job.last_evicted_s_ago) : job.created_s_ago;
      if (since >= job.preemption_delay_s) return false;
      FitError& e = s.fit_errors[static_cast<std::size_t>(j)];
      if (e.reason.empty() || e.reason == "PreemptionDelayNotElapsed") {
        char buf[160];
        std::snprintf(buf, sizeof buf, "Workload is within its preemption delay window (%gs) and may not trigger evictions for another %gs",
                      job.preemption_delay_s, job.preemption_delay_s - since);
        e = {"PreemptionDelayNotElapsed", buf};
      }
      return true;
    };
    const std::size_t before = jobs.size();
    jobs.erase(std::remove_if(jobs.begin(), jobs.end(), within), jobs.end());
    if (jobs.size() != before) by_queue.dirty[q] = 1;
  }
  for (int guard = 0; guard < 1000000; ++guard) {
    const int j = s.pop_next_job(by_queue);
    if (j < 0) break;
    s.settle();
    body(j);
  }
}

// proportion.go reclaimableFn over the scenario as the trial left it: per victim job, its pods above
// each pod set's minMember one by one, then its core as one (getVictimResources, splitVictimTasks),
// only the pods left evicted (getResources with allowConsolidatingReclaim: a moved pod takes nothing).
std::vector<Unit> reclaimed_units(const Session& s, const Scenario& sc) {
  std::vector<Unit> out;
  for (const Unit& v : sc.victims) {
    const std::vector<Session::PodSet>& sets = s.pod_sets(v.job);
    const std::vector<int>& of = s.task_set_[static_cast<std::size_t>(v.job)];
    const auto left = [&](int t) { return !is_active_allocated(s.tasks[static_cast<std::size_t>(v.job)][static_cast<std::size_t>(t)].status); };
    Unit core{v.job, {}};
    for (std::size_t k = 0; k < sets.size(); ++k) {
      int seen = 0;
      for (int t : v.tasks) {
        if (of[static_cast<std::size_t>(t)] != static_cast<int>(k)) continue;
        if (seen++ < sets[k].min_member) {
          if (left(t)) core.tasks.push_back(t);
        } else if (left(t)) {
          out.push_back({v.job, {t}});
        }
      }
    }
    if (!core.tasks.empty()) out.push_back(std::move(core));
  }
  return out;
}

}  // namespace

void reclaim_action(Session& s) {
  HolderCache holders;
  SolveCaches caches;
  std::map<int, FailedJobs> failed_by_queue;  // smallestFailedJobsByQueue
  for_each_pending_job(s, [&](int j) {
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    const std::vector<int> which = s.tasks_to_allocate(j);
    const Vec req = s.request_of(j, which);
    const int jq = s.job_queue[static_cast<std::size_t>(j)];
    const Queue& q = s.queues[static_cast<std::size_t>(jq)];
    // reclaimable.go CanReclaimResources: within its fair share with the job, and a non-preemptible
    // job within its deserved quota.
    Quantities with = allocated_of(q);
    with += req;
    if (!less_equal(with, fair_of(q))) {
      s.log.push_back("reclaim: " + job.name + " skipped: queue " + q.name + " would pass its fair share with it");
      return;
    }
    if (!job.preemptible) {
      Quantities np{q.resources[0].allocated_not_preemptible, q.resources[1].allocated_not_preemptible, q.resources[2].allocated_not_preemptible};
      np += req;
      if (!less_equal(np, deserved_of(q))) return;
    }
    // Execute: a job no easier than one of its queue that failed, with the same constraints, is skipped.
    const bool signatures = s.snap.kai.use_scheduling_signatures;
    const std::string sig = signatures ? signature(s, j) : std::string();
    FailedJobs& failed = failed_by_queue.try_emplace(jq, s).first->second;
    if (signatures && !failed.easier(j, sig)) {
      s.log.push_back("reclaim: " + job.name + " skipped: no easier to place than a job of queue " + q.name + " that found no victims");
      return;
    }
    // reclaim.go getOrderedVictimsQueue: preemptible jobs of other queues with a pod placed, that
    // ReclaimVictimFilter lets through.
    ReclaimCheck check{s, s.queues, j, req, job.preemptible};
    std::vector<signed char> allowed(s.queues.size(), -1);  // victim_allowed per queue, asked once
    std::vector<int> candidates;
    for (const int v : preemptible_holders(s, false, holders)) {
      const int vq = s.job_queue[static_cast<std::size_t>(v)];
      if (vq < 0 || vq == jq) continue;
      signed char& ok = allowed[static_cast<std::size_t>(vq)];
      if (ok < 0) ok = check.victim_allowed(vq) ? 1 : 0;
      if (ok) candidates.push_back(v);
    }
    std::string why;
    const auto valid = [&](const Scenario& sc) {
      const std::vector<Unit> units = reclaimed_units(s, sc);
      std::vector<const Unit*> view;
      for (const Unit& u : units) view.push_back(&u);
      return check.reclaimable(view, &why);
    };
    if (solve(s, j, candidates, valid, "reclaim", caches)) return;
    if (signatures) failed.update(j, sig);
    if (!why.empty()) s.log.push_back("reclaim: nothing for " + job.name + ": " + why);
  });
}

// preempt.go: victims in the job's own queue, of strictly lower priority; every scenario valid (the
// lab has no minruntime plugin, the only PreemptScenarioValidator).
void preempt_action(Session& s) {
  HolderCache holders;
  SolveCaches caches;
  std::map<int, FailedJobs> failed_by_queue;  // smallestFailedJobsByQueue
  const bool signatures = s.snap.kai.use_scheduling_signatures;
  for_each_pending_job(s, [&](int j) {
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    const std::string sig = signatures ? signature(s, j) : std::string();
    FailedJobs& failed = failed_by_queue.try_emplace(s.job_queue[static_cast<std::size_t>(j)], s).first->second;
    if (signatures && !failed.easier(j, sig)) return;
    std::vector<int> candidates;
    for (const int v : preemptible_holders(s, false, holders)) {
      const SnapshotJob& vj = s.snap.jobs[static_cast<std::size_t>(v)];
      if (v == j || vj.priority >= job.priority || s.job_queue[static_cast<std::size_t>(v)] != s.job_queue[static_cast<std::size_t>(j)]) continue;
      candidates.push_back(v);
    }
    if (!solve(s, j, candidates, [](const Scenario&) { return true; }, "preempt", caches) && signatures) failed.update(j, sig);
  });
}

// consolidation.go: for a pending preemptible job that does not fit, move preemptible running pods to other nodes
// so it does — valid only if no victim is left Releasing (allPodsReallocated); the victims queue holds
// at most maxConsolidationPreemptees + 1 jobs (buildPreemptibleFilterFunc counts them, in the
// session's map order upstream, the snapshot's order here); off with the spread placement strategy.
void consolidation_action(Session& s) {
  if (s.snap.kai.spread) return;
  HolderCache holders;
  SolveCaches caches;
  // Moving pods frees no room in total: the job and the moved pods all fit only if the job fits in
  // the room every node has idle or releasing together (per resource; whole numbers, so a shortfall
  // is at least 1; utils.IsEnoughGPUsAllocatableForJob). A resource some node lacks is not counted
  // (charged_on charges nothing there).
  const auto cluster_room = [&]() {
    Vec free;
    for (const NodeRoom& n : s.nodes)
      for (int r = 0; r < 3; ++r) free.v[r] += std::max(0.0, n.idle.v[r] + n.releasing.v[r]);
    return free;
  };
  std::uint64_t room_epoch = 0;
  Vec room = cluster_room();
  bool lacks[3] = {false, false, false};
  for (const NodeRoom& n : s.nodes)
    for (int r = 0; r < 3; ++r) lacks[r] = lacks[r] || n.allocatable.v[r] == 0;
  const int max_jobs = s.snap.kai.max_consolidation_preemptees;
  if (max_jobs == 0) return;  // consolidation disabled
  FailedJobs failed(s);       // smallestFailedJobs, one for every queue
  const bool signatures = s.snap.kai.use_scheduling_signatures;
  for_each_pending_job(s, [&](int j) {
    const std::vector<int> which = s.tasks_to_allocate(j);
    if (which.empty()) return;
    const std::string sig = signatures ? signature(s, j) : std::string();
    if (signatures && !failed.easier(j, sig)) return;
    if (room_epoch != s.epoch) {
      room = cluster_room();
      room_epoch = s.epoch;
    }
    const Vec need = s.request_of(j, which);
    for (int r = 0; r < 3; ++r)
      if (!lacks[r] && need.v[r] > room.v[r] + 0.5) {
        if (signatures) failed.update(j, sig);
        return;
      }
    std::vector<int> candidates;
    for (const int v : preemptible_holders(s, true, holders))
      if (v != j && (max_jobs < 0 || static_cast<int>(candidates.size()) <= max_jobs)) candidates.push_back(v);
    const auto all_moved = [&](const Scenario& sc) {
      for (const Unit& v : sc.victims)
        for (int t : v.tasks)
          if (s.tasks[static_cast<std::size_t>(v.job)][static_cast<std::size_t>(t)].status == Status::Releasing) return false;
      return true;
    };
    if (!solve(s, j, candidates, all_moved, "consolidation", caches) && signatures) failed.update(j, sig);
  }, true);
}

}  // namespace gpuscale::kai
