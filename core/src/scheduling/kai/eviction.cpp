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
// The search (actions/common/solvers: JobSolver with the sg-nodelocalgreedy and sg-multinodegang
// scenario generators and a k-probe) is simplified: victims are added one unit at a time in victim
// order; after each, the unit's tasks are evicted in a trial statement, then the pending job and each
// victim's job are allocated in job order (the job's tasks pipelined onto the room, all of them, or the
// trial fails; a victim's job placed again is moved, not lost) and the scenario validated. The first
// scenario that works is then pruned: each victim unit, first to last, is put back if the job still
// fits without it. So the victims are a minimal set, though not always the one upstream's node-local
// search picks in a fragmented cluster.
#include "scheduling/kai/eviction.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <cstdint>
#include <limits>
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
// changes no decision: it is upstream's accumulated idle-GPUs filter
// (actions/common/solvers/accumulated_scenario_filters/idle_gpus/idle_gpus.go, which greedily matches
// the tasks to the nodes with the most idle and releasing GPUs) in a form that never refuses a trial
// that would work. GPU counts are whole numbers, so the floors are exact. Off (lets everything
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

// A trial's victims: the node each evicted pod was on (the units' tasks in order), and whether every
// victim's job was placed again.
struct Trial {
  std::vector<int> from;
  bool all_moved = true;
};

// Whether the job fits with these units evicted (by_pod_solver.go tryScenarioWithEvictedVictims,
// common/action.go TryToVirtuallyAllocatePreemptorAndGetVictims): evict the units' pods, then allocate
// the job and each victim's job in job order (JobsOrderByQueues over them; upstream's list also holds
// every other pending job, which it pops and skips), each through AllocateJob: its queue's capacity
// check (on every level, the limit included), then its tasks pipelined onto nodes, all or none. The job
// must fit. A victim's job that fits again is moved, its evicted pods pipelined elsewhere; one that
// does not stays evicted (Releasing). Leaves the trial in the statement when it works.
bool try_units(Session& s, int j, const std::vector<const Unit*>& units, Trial* trial = nullptr) {
  std::vector<int> jobs{j};
  std::vector<int> from;
  for (const Unit* u : units) {
    for (int t : u->tasks) {
      from.push_back(s.tasks[static_cast<std::size_t>(u->job)][static_cast<std::size_t>(t)].node);
      s.evict_task(u->job, t);
    }
    if (std::find(jobs.begin(), jobs.end(), u->job) == jobs.end()) jobs.push_back(u->job);
  }
  // The evicted pods are pods to place again (their Evict entries in the journal keep what they were).
  const auto set_evicted = [&](int job, bool pending) {
    std::size_t k = 0;
    for (const Unit* u : units)
      for (int t : u->tasks) {
        const int node = from[k++];
        if (u->job != job) continue;
        TaskRun& run = s.tasks[static_cast<std::size_t>(job)][static_cast<std::size_t>(t)];
        run.status = pending ? Status::Pending : Status::Releasing;
        run.node = pending ? -1 : node;
      }
    s.touched(job);
  };
  for (std::size_t k = 1; k < jobs.size(); ++k) set_evicted(jobs[k], true);
  JobsByQueue order = s.jobs_by_queue(jobs);
  bool placed = false, all_moved = true;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const int v = s.pop_next_job(order);
    if (v < 0) break;
    const bool fits = s.allocate_job(v, s.all_nodes_, true, false);
    if (v == j) {
      if (!fits) return false;
      placed = true;
    } else if (!fits) {
      set_evicted(v, false);
      all_moved = false;
    }
  }
  if (trial) *trial = {std::move(from), all_moved};
  return placed;
}

// What the victim search derives from the state alone, kept while the state is the same
// (Session::epoch, with the journal empty): the next job with the same candidates reuses it.
struct VictimCache {
  bool valid = false;
  std::uint64_t epoch = 0;
  std::vector<int> jobs;
  std::vector<Unit> units;
};

// The victim units of the candidate jobs, in victim order (queues and jobs in reverse allocation
// order: the most over-served queue's newest, lowest-priority job first); an elastic job's tasks above
// its minMember one by one (newest first), then its core.
const std::vector<Unit>& victim_units(const Session& s, const std::vector<int>& candidates, VictimCache& cache) {
  if (cache.valid && cache.epoch == s.epoch && s.journal.empty() && cache.jobs == candidates) return cache.units;
  std::vector<int> jobs = candidates;
  // queue_order(qa, qb) > 0, asked once per pair during the sort (the sort changes no state).
  const std::size_t nq = s.queues.size();
  std::vector<signed char> after(nq * nq, -1);
  const auto queue_after = [&](int qa, int qb) {
    if (qa < 0 || qb < 0) return s.queue_order(qa, qb, -1, -1) > 0;
    signed char& m = after[static_cast<std::size_t>(qa) * nq + static_cast<std::size_t>(qb)];
    if (m < 0) m = s.queue_order(qa, qb, -1, -1) > 0 ? 1 : 0;
    return m == 1;
  };
  std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) {
    const int qa = s.job_queue[static_cast<std::size_t>(a)], qb = s.job_queue[static_cast<std::size_t>(b)];
    if (qa != qb) return queue_after(qa, qb);
    return s.job_before(b, a);
  });
  std::vector<Unit> units;
  for (int j : jobs) {
    std::vector<int> active;
    for (std::size_t t = 0; t < s.tasks[static_cast<std::size_t>(j)].size(); ++t)
      if (is_active_allocated(s.tasks[static_cast<std::size_t>(j)][t].status) && s.tasks[static_cast<std::size_t>(j)][t].node >= 0)
        active.push_back(static_cast<int>(t));
    const int min_member = s.snap.jobs[static_cast<std::size_t>(j)].min_member;
    while (static_cast<int>(active.size()) > std::max(min_member, 1) ) {
      units.push_back({j, {active.back()}});
      active.pop_back();
    }
    if (!active.empty()) units.push_back({j, active});
  }
  cache.valid = s.journal.empty();
  cache.epoch = s.epoch;
  cache.jobs = candidates;
  cache.units = std::move(units);
  return cache.units;
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

// What the validator judges after a trial (proportion.go getVictimResources with
// allowConsolidatingReclaim, true by default): only the victims' pods that stay evicted; a pod the
// trial placed again elsewhere takes nothing from its queue.
std::vector<Unit> left_evicted(const Session& s, const std::vector<const Unit*>& units) {
  std::vector<Unit> out;
  for (const Unit* u : units) {
    Unit kept{u->job, {}};
    for (int t : u->tasks)
      if (s.tasks[static_cast<std::size_t>(u->job)][static_cast<std::size_t>(t)].status == Status::Releasing) kept.tasks.push_back(t);
    if (!kept.tasks.empty()) out.push_back(std::move(kept));
  }
  return out;
}

// The solver: accumulate units until the job fits and the validator agrees, then prune. `tally`
// judges the units so far as they are added (`add`, `verdict`); `valid` judges any list (the pruning,
// and a trial that moved some victims instead of evicting them, judged on what stays evicted).
template <typename Tally, typename Valid>
bool solve(Session& s, int j, const std::vector<Unit>& units, Tally& tally, const Valid& valid, const char* action) {
  const std::vector<int> which = s.tasks_to_allocate(j);
  if (which.empty()) return false;
  RoomFilter room(s, j, which);
  // A trial of these units: the job fits, and the validator agrees with what it evicts.
  const auto works_with = [&](const std::vector<const Unit*>& chosen, bool tally_agrees) {
    const std::size_t mark = s.journal.size();
    if (!try_units(s, j, chosen)) {
      s.rollback(mark);
      return false;
    }
    const std::vector<Unit> kept = left_evicted(s, chosen);
    s.rollback(mark);  // the validator reads the state before the trial
    std::size_t evicted = 0, asked = 0;
    for (const Unit& u : kept) evicted += u.tasks.size();
    for (const Unit* u : chosen) asked += u->tasks.size();
    if (evicted == asked) return tally_agrees;  // nothing moved: the tally has judged these units
    std::vector<const Unit*> view;
    for (const Unit& u : kept) view.push_back(&u);
    return valid(view);
  };
  std::vector<const Unit*> chosen;
  bool found = false;
  for (const Unit& u : units) {
    chosen.push_back(&u);
    tally.add(u);
    room.add(u, +1);
    if (!room.may_fit()) continue;  // try_units would fail
    if (works_with(chosen, tally.verdict())) {
      found = true;
      break;
    }
  }
  if (!found) return false;
  for (std::size_t i = 0; i < chosen.size();) {
    std::vector<const Unit*> fewer = chosen;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    room.add(*chosen[i], -1);
    const bool works = !fewer.empty() && room.may_fit() && works_with(fewer, valid(fewer));
    if (works) chosen = std::move(fewer);
    else room.add(*chosen[i++], +1);
  }
  Trial trial;
  if (!try_units(s, j, chosen, &trial)) return false;  // cannot happen: it worked above
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  std::string names;
  std::size_t k = 0;
  for (const Unit* u : chosen)
    for (int t : u->tasks) {
      const TaskRun& run = s.tasks[static_cast<std::size_t>(u->job)][static_cast<std::size_t>(t)];
      s.victims.push_back({u->job, t, trial.from[k++], action, job.name});
      names += (names.empty() ? "" : ", ") + s.snap.jobs[static_cast<std::size_t>(u->job)].tasks[static_cast<std::size_t>(t)].name;
      if (run.status == Status::Pipelined) names += " (moved to " + s.snap.nodes[static_cast<std::size_t>(run.node)].name + ")";
    }
  s.commit(j);
  s.fit_errors[static_cast<std::size_t>(j)] = {};
  s.log.push_back(std::string(action) + ": " + job.name + " (queue " + job.queue + ") pipelined onto the room of " + names);
  return true;
}

// A validator that accepts every victim (preempt's).
struct AcceptAll {
  void add(const Unit&) {}
  bool verdict() const { return true; }
};

template <typename Body>
void for_each_pending_job(Session& s, const Body& body) {
  JobsByQueue by_queue = s.pending_jobs_by_queue();
  for (int guard = 0; guard < 1000000; ++guard) {
    const int j = s.pop_next_job(by_queue);
    if (j < 0) break;
    s.settle();
    body(j);
  }
}

}  // namespace

void reclaim_action(Session& s) {
  VictimCache victims;
  HolderCache holders;
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
    if (candidates.empty()) return;
    std::string why;
    struct {
      ReclaimCheck::Tally tally;
      std::string* why;
      void add(const Unit& u) { tally.add(u); }
      bool verdict() const { return tally.verdict(why); }
    } tally{ReclaimCheck::Tally(check), &why};
    const bool done = solve(s, j, victim_units(s, candidates, victims), tally,
                            [&](const std::vector<const Unit*>& units) { return check.reclaimable(units, &why); }, "reclaim");
    if (!done && !why.empty()) s.log.push_back("reclaim: nothing for " + job.name + ": " + why);
  });
}

void preempt_action(Session& s) {
  VictimCache victims;
  HolderCache holders;
  for_each_pending_job(s, [&](int j) {
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    std::vector<int> candidates;
    for (const int v : preemptible_holders(s, false, holders)) {
      const SnapshotJob& vj = s.snap.jobs[static_cast<std::size_t>(v)];
      if (v == j || vj.priority >= job.priority || s.job_queue[static_cast<std::size_t>(v)] != s.job_queue[static_cast<std::size_t>(j)]) continue;
      candidates.push_back(v);
    }
    if (candidates.empty()) return;
    AcceptAll all;
    solve(s, j, victim_units(s, candidates, victims), all, [](const std::vector<const Unit*>&) { return true; }, "preempt");
  });
}

// consolidation.go: for a pending job that does not fit, move preemptible running pods to other nodes
// so it does — committed only if every moved pod is placed again (pipelined), at most
// max_consolidation_preemptees of them; off with the spread placement strategy.
void consolidation_action(Session& s) {
  if (s.snap.kai.spread) return;
  VictimCache victims;
  HolderCache holders;
  // Moving pods frees no room in total: the job and the moved pods all fit only if the job fits in
  // the room every node has idle or releasing together (per resource; whole numbers, so a shortfall
  // is at least 1). A resource some node lacks is not counted (charged_on charges nothing there).
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
  for_each_pending_job(s, [&](int j) {
    const std::vector<int> which = s.tasks_to_allocate(j);
    if (which.empty()) return;
    if (room_epoch != s.epoch) {
      room = cluster_room();
      room_epoch = s.epoch;
    }
    const Vec need = s.request_of(j, which);
    for (int r = 0; r < 3; ++r)
      if (!lacks[r] && need.v[r] > room.v[r] + 0.5) return;
    std::vector<int> candidates;
    for (const int v : preemptible_holders(s, true, holders))
      if (v != j) candidates.push_back(v);
    if (candidates.empty()) return;
    const std::vector<Unit>& units = victim_units(s, candidates, victims);
    RoomFilter job_room(s, j, which);
    // The chosen pods evicted, the job and every moved pod placed anew (pipelined onto a node): true
    // when all of it fits (allPodsReallocated: no victim left Releasing).
    const auto attempt = [&](const std::vector<const Unit*>& chosen, Trial& trial) {
      return try_units(s, j, chosen, &trial) && trial.all_moved;
    };
    std::vector<const Unit*> chosen;
    int moved = 0;
    for (const Unit& u : units) {
      moved += static_cast<int>(u.tasks.size());
      if (moved > s.snap.kai.max_consolidation_preemptees) break;
      chosen.push_back(&u);
      job_room.add(u, +1);
      if (!job_room.may_fit()) continue;  // try_units would fail
      const std::size_t mark = s.journal.size();
      Trial trial;
      const bool works = attempt(chosen, trial);
      s.rollback(mark);
      if (!works) continue;
      attempt(chosen, trial);
      const std::vector<int>& from = trial.from;
      std::string names;
      std::size_t k = 0;
      for (const Unit* c : chosen)
        for (int t : c->tasks) {
          s.victims.push_back({c->job, t, from[k++], "consolidation", s.snap.jobs[static_cast<std::size_t>(j)].name});
          const TaskRun& run = s.tasks[static_cast<std::size_t>(c->job)][static_cast<std::size_t>(t)];
          names += (names.empty() ? "" : ", ") + s.snap.jobs[static_cast<std::size_t>(c->job)].tasks[static_cast<std::size_t>(t)].name + " → " +
                   s.snap.nodes[static_cast<std::size_t>(run.node)].name;
        }
      s.commit(j);
      s.settle();
      s.fit_errors[static_cast<std::size_t>(j)] = {};
      s.log.push_back("consolidation: " + s.snap.jobs[static_cast<std::size_t>(j)].name + " pipelined after moving " + names);
      return;
    }
  });
}

}  // namespace gpuscale::kai
