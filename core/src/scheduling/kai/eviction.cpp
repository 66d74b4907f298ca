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
// order; after each, the unit's tasks are evicted in a trial statement and the pending job's tasks are
// pipelined onto the room (all of them, or the trial fails) and the scenario validated. The first
// scenario that works is then pruned: each victim unit, first to last, is put back if the job still
// fits without it. So the victims are a minimal set, though not always the one upstream's node-local
// search picks in a fragmented cluster.
#include "scheduling/kai/eviction.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

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

  int find(const std::string& name) const {
    for (std::size_t i = 0; i < queues.size(); ++i)
      if (queues[i].name == name) return static_cast<int>(i);
    return -1;
  }
  std::vector<int> path(int q) const {  // top first
    std::vector<int> p;
    for (int at = q; at >= 0 && p.size() <= queues.size(); at = queues[static_cast<std::size_t>(at)].parent.empty() ? -1 : find(queues[static_cast<std::size_t>(at)].parent))
      p.insert(p.begin(), at);
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

  // reclaimable.go Reclaimable over the victims' resources by queue (each unit one vector).
  bool reclaimable(const std::vector<Unit>& units, std::string* why) const {
    std::vector<Quantities> remaining(queues.size());
    std::vector<bool> touched(queues.size(), false);
    std::vector<std::array<bool, 3>> involved(queues.size(), {false, false, false});
    const int reclaimer_q = s.job_queue[static_cast<std::size_t>(reclaimer_job)];
    for (const Unit& u : units) {
      const int vq = s.job_queue[static_cast<std::size_t>(u.job)];
      const Vec res = s.request_of(u.job, u.tasks);
      const auto [lrq, lvq] = leveled(reclaimer_q, vq);
      const Queue& reclaimer = queues[static_cast<std::size_t>(lrq)];
      const Queue& reclaimee = queues[static_cast<std::size_t>(lvq)];
      if (!touched[static_cast<std::size_t>(lvq)]) {
        remaining[static_cast<std::size_t>(lvq)] = allocated_of(reclaimee);
        touched[static_cast<std::size_t>(lvq)] = true;
      }
      // strategies.go FitsReclaimStrategy: MaintainFairShare, else GuaranteeDeservedQuota.
      const Quantities& left = remaining[static_cast<std::size_t>(lvq)];
      const bool maintain = !less_equal_allocatable(reclaimee, left);
      const bool guarantee = allocated_plus_le_deserved(reclaimer, request) && !less_equal(left, deserved_of(reclaimee));
      if (!maintain && !guarantee) {
        if (why) *why = "queue " + reclaimee.name + " would fall to its fair share or deserved quota (neither MaintainFairShare nor GuaranteeDeservedQuota allows it)";
        return false;
      }
      for (int at = vq; at >= 0;) {
        const std::size_t ai = static_cast<std::size_t>(at);
        if (!touched[ai]) {
          remaining[ai] = allocated_of(queues[ai]);
          touched[ai] = true;
        }
        remaining[ai] -= res;
        for (int r = 0; r < 3; ++r) involved[ai][static_cast<std::size_t>(r)] = involved[ai][static_cast<std::size_t>(r)] || res.v[r] > 0;
        at = queues[ai].parent.empty() ? -1 : find(queues[ai].parent);
      }
    }
    // reclaimingQueuesRemainWithinBoundaries
    for (int at = reclaimer_q; at >= 0;) {
      const std::size_t ai = static_cast<std::size_t>(at);
      const Queue& rq = queues[ai];
      Quantities mine = touched[ai] ? remaining[ai] : allocated_of(rq);
      mine += request;
      for (std::size_t sib = 0; sib < queues.size(); ++sib) {
        if (!touched[sib] || queues[sib].parent != rq.parent || sib == ai) continue;
        const Quantities theirs = remaining[sib];
        for (int r = 0; r < 3; ++r) {
          if (!involved[sib][static_cast<std::size_t>(r)] && !(request.v[r] > 0)) continue;
          const double rf = rq.resources[r].fair_share, sf = queues[sib].resources[r].fair_share;
          if (rf == kUnlimited && sf == kUnlimited) continue;
          const double ratio_r = saturation(mine.v[r], rf), ratio_s = saturation(theirs.v[r], sf);
          if (ratio_r > 1 && sf > 0 && ratio_r * kSaturationMultiplier >= ratio_s) {
            if (why) *why = "queue " + rq.name + "'s saturation (allocated / fair share) would not stay below queue " + queues[sib].name + "'s";
            return false;
          }
        }
      }
      if (!preemptible) {
        for (int r = 0; r < 3; ++r) {
          const double d = rq.resources[r].deserved;
          if (d != kUnlimited && rq.resources[r].allocated_not_preemptible + request.v[r] > d + 1e-9) {
            if (why) *why = "queue " + rq.name + " would hold non-preemptible pods over its quota";
            return false;
          }
        }
      }
      at = rq.parent.empty() ? -1 : find(rq.parent);
    }
    return true;
  }
};

// Whether the job's tasks to allocate fit with these units evicted: evict them, then place every task
// (pipelined onto what is released). Leaves the trial in the statement when it works.
bool try_units(Session& s, int j, const std::vector<int>& which, const std::vector<Unit>& units) {
  for (const Unit& u : units)
    for (int t : u.tasks) s.evict_task(u.job, t);
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const Vec req = s.request_of(j, which);
  Totals requested;
  for (int r = 0; r < kNumResources; ++r) requested.amount[r] = req.v[r];
  if (!check_capacity(s.queues, job.queue, requested, job.preemptible).schedulable) return false;
  const std::vector<int> all = s.all_nodes();
  const std::vector<std::vector<int>> domains = topology_domains(s, j, which, all);
  for (const std::vector<int>& domain : domains) {
    const std::size_t mark = s.journal.size();
    bool ok = true;
    for (int t : which) {
      if (!s.allocate_task_on(j, t, domain, true)) {
        ok = false;
        break;
      }
    }
    if (ok) return true;
    s.rollback(mark);
  }
  return false;
}

// The victim units of the candidate jobs, in victim order (queues and jobs in reverse allocation
// order: the most over-served queue's newest, lowest-priority job first); an elastic job's tasks above
// its minMember one by one (newest first), then its core.
std::vector<Unit> victim_units(const Session& s, std::vector<int> jobs) {
  std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) {
    const int qa = s.job_queue[static_cast<std::size_t>(a)], qb = s.job_queue[static_cast<std::size_t>(b)];
    if (qa != qb) return s.queue_order(qa, qb, -1, -1) > 0;
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
  return units;
}

// The solver: accumulate units until the job fits and the validator agrees, then prune.
template <typename Valid>
bool solve(Session& s, int j, const std::vector<Unit>& units, const Valid& valid, const char* action) {
  const std::vector<int> which = s.tasks_to_allocate(j);
  if (which.empty()) return false;
  std::vector<Unit> chosen;
  bool found = false;
  for (const Unit& u : units) {
    chosen.push_back(u);
    const std::size_t mark = s.journal.size();
    const bool works = valid(chosen) && try_units(s, j, which, chosen);
    s.rollback(mark);
    if (works) {
      found = true;
      break;
    }
  }
  if (!found) return false;
  for (std::size_t i = 0; i < chosen.size();) {
    std::vector<Unit> fewer = chosen;
    fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
    const std::size_t mark = s.journal.size();
    const bool works = !fewer.empty() && valid(fewer) && try_units(s, j, which, fewer);
    s.rollback(mark);
    if (works) chosen = std::move(fewer);
    else ++i;
  }
  if (!try_units(s, j, which, chosen)) return false;  // cannot happen: it worked above
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  std::string names;
  for (const Unit& u : chosen)
    for (int t : u.tasks) {
      const TaskRun& run = s.tasks[static_cast<std::size_t>(u.job)][static_cast<std::size_t>(t)];
      s.victims.push_back({u.job, t, run.node, action, job.name});
      names += (names.empty() ? "" : ", ") + s.snap.jobs[static_cast<std::size_t>(u.job)].tasks[static_cast<std::size_t>(t)].name;
    }
  s.commit(j);
  s.fit_errors[static_cast<std::size_t>(j)] = {};
  s.log.push_back(std::string(action) + ": " + job.name + " (queue " + job.queue + ") pipelined onto the room of " + names);
  return true;
}

template <typename Body>
void for_each_pending_job(Session& s, const Body& body) {
  std::vector<std::vector<int>> leaf_jobs = s.pending_jobs_by_queue();
  for (int guard = 0; guard < 1000000; ++guard) {
    const int j = s.pop_next_job(leaf_jobs);
    if (j < 0) break;
    s.journal.clear();
    body(j);
  }
}

}  // namespace

void reclaim_action(Session& s) {
  for_each_pending_job(s, [&](int j) {
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    const std::vector<int> which = s.tasks_to_allocate(j);
    const Vec req = s.request_of(j, which);
    const Queue& q = s.queues[static_cast<std::size_t>(s.job_queue[static_cast<std::size_t>(j)])];
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
    std::vector<int> candidates;
    for (std::size_t v = 0; v < s.snap.jobs.size(); ++v) {
      const int vq = s.job_queue[v];
      if (vq < 0 || vq == s.job_queue[static_cast<std::size_t>(j)] || !s.snap.jobs[v].preemptible) continue;
      if (!s.has_active(static_cast<int>(v)) || !check.victim_allowed(vq)) continue;
      candidates.push_back(static_cast<int>(v));
    }
    if (candidates.empty()) return;
    std::string why;
    const bool done = solve(s, j, victim_units(s, candidates), [&](const std::vector<Unit>& units) { return check.reclaimable(units, &why); }, "reclaim");
    if (!done && !why.empty()) s.log.push_back("reclaim: nothing for " + job.name + ": " + why);
  });
}

void preempt_action(Session& s) {
  for_each_pending_job(s, [&](int j) {
    const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
    std::vector<int> candidates;
    for (std::size_t v = 0; v < s.snap.jobs.size(); ++v) {
      const SnapshotJob& vj = s.snap.jobs[v];
      if (static_cast<int>(v) == j || !vj.preemptible || vj.priority >= job.priority || s.job_queue[v] != s.job_queue[static_cast<std::size_t>(j)]) continue;
      if (s.has_active(static_cast<int>(v))) candidates.push_back(static_cast<int>(v));
    }
    if (candidates.empty()) return;
    solve(s, j, victim_units(s, candidates), [](const std::vector<Unit>&) { return true; }, "preempt");
  });
}

// consolidation.go: for a pending job that does not fit, move preemptible running pods to other nodes
// so it does — committed only if every moved pod is placed again (pipelined), at most
// max_consolidation_preemptees of them; off with the spread placement strategy.
void consolidation_action(Session& s) {
  if (s.snap.kai.spread) return;
  for_each_pending_job(s, [&](int j) {
    const std::vector<int> which = s.tasks_to_allocate(j);
    if (which.empty()) return;
    std::vector<int> candidates;
    for (std::size_t v = 0; v < s.snap.jobs.size(); ++v) {
      if (static_cast<int>(v) == j || !s.snap.jobs[v].preemptible) continue;
      bool active = false;
      for (const TaskRun& t : s.tasks[v]) active = active || (t.status == Status::Running && t.node >= 0);
      if (active) candidates.push_back(static_cast<int>(v));
    }
    if (candidates.empty()) return;
    const std::vector<Unit> units = victim_units(s, candidates);
    const std::vector<int> all = s.all_nodes();
    // Evict the chosen pods, place the job, then place every moved pod anew (pipelined onto a node);
    // true when all of it fits. The moved pods' old nodes go to `from`.
    const auto attempt = [&](const std::vector<Unit>& chosen, std::vector<int>* from) {
      if (!try_units(s, j, which, chosen)) return false;
      for (const Unit& c : chosen)
        for (int t : c.tasks) {
          TaskRun& run = s.tasks[static_cast<std::size_t>(c.job)][static_cast<std::size_t>(t)];
          if (from) from->push_back(run.node);
          run.status = Status::Pending;  // its Evict entry in the journal keeps what it was
          run.node = -1;
          if (!s.allocate_task_on(c.job, t, all, true)) return false;
        }
      return true;
    };
    std::vector<Unit> chosen;
    int moved = 0;
    for (const Unit& u : units) {
      moved += static_cast<int>(u.tasks.size());
      if (moved > s.snap.kai.max_consolidation_preemptees) break;
      chosen.push_back(u);
      const std::size_t mark = s.journal.size();
      const bool works = attempt(chosen, nullptr);
      s.rollback(mark);
      if (!works) continue;
      std::vector<int> from;
      attempt(chosen, &from);
      std::string names;
      std::size_t k = 0;
      for (const Unit& c : chosen)
        for (int t : c.tasks) {
          s.victims.push_back({c.job, t, from[k++], "consolidation", s.snap.jobs[static_cast<std::size_t>(j)].name});
          const TaskRun& run = s.tasks[static_cast<std::size_t>(c.job)][static_cast<std::size_t>(t)];
          names += (names.empty() ? "" : ", ") + s.snap.jobs[static_cast<std::size_t>(c.job)].tasks[static_cast<std::size_t>(t)].name + " → " +
                   s.snap.nodes[static_cast<std::size_t>(run.node)].name;
        }
      s.commit(j);
      s.journal.clear();
      s.fit_errors[static_cast<std::size_t>(j)] = {};
      s.log.push_back("consolidation: " + s.snap.jobs[static_cast<std::size_t>(j)].name + " pipelined after moving " + names);
      return;
    }
  });
}

}  // namespace gpuscale::kai
