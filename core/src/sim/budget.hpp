// The work a run may take (docs/limits.md). Before a run starts, estimate_work() predicts from the
// scenario what drives its cost (arrivals, engine steps, periodic controller wake-ups, series rows)
// and check_work_budget() refuses a scenario whose estimate is past the budget, naming the fields
// that drive it and what would fit. While it runs, WorkMeter counts what the run actually does and
// stops it at the same budget (the estimate can be low: how many steps a batch takes depends on the
// run). The decision log is bounded on its own (kernel/decision_log.hpp). So every run the parser
// accepts ends within the budget's time and memory, natively and in the page.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "scenario/scenario.hpp"
#include "scheduling/fit.hpp"

namespace gpuscale {

// The documented budget (docs/limits.md). A run takes a WorkLimits, by default these; the fuzz
// targets pass smaller ones so that each input runs in milliseconds under the sanitizers.
struct WorkBudget {
  // Events of the one queue: arrivals, engine steps, timeouts, scrapes, syncs, node events.
  static constexpr std::int64_t kMaxEvents = 8'000'000;
  // Work units: what a run's time follows, about a microsecond each natively (WorkCounts::units). The
  // longest exercise run (exercise 5's week) takes about 1,000,000.
  static constexpr std::int64_t kMaxWork = 3'000'000;
  // Rows of the result's series: scrapes × (1 + the pools' own series when pools are declared).
  static constexpr std::int64_t kMaxSeriesRows = 200'000;
};

// What a run did that costs time, counted as it goes (counts, never clocks: deterministic).
struct WorkCounts {
  std::int64_t events = 0;          // events of the queue
  std::int64_t scrapes = 0;         // of them, metrics scrapes (each reads every replica, writes a series row)
  std::int64_t syncs = 0;           // of them, replica scaler syncs (an HPA's whole algorithm)
  std::int64_t cluster = 0;         // of them, cluster events and settlements (scheduling, provisioning passes)
  std::int64_t rows = 0;            // series rows written (a scrape writes one, and one per declared pool)
  std::int64_t sequences = 0;       // sequences in finished engine steps (a batch of 300 counts 300)
  std::int64_t router_visits = 0;   // Ready replicas the router compared
  std::int64_t replica_visits = 0;  // replicas a scrape or a DCGM window read
  std::int64_t pod_views = 0;       // pods a replica scaler's sync looked at
  std::int64_t decisions = 0;       // decisions explained (built as text)
  std::int64_t detailed = 0;        // of them, with the structured detail (output.decision_detail)
  std::int64_t scaler_decisions = 0;  // of them, the replica scalers' syncs
  std::int64_t fits = 0;            // pods tried against nodes by the schedulers and provisioners (fit.hpp)

  // Cost per item in thousandths of a unit, fitted to native timings (docs/limits.md, "Calibration").
  // Fitted by scripts/calibrate-budget.py to 22 scenarios (the examples, the benchmarks and the corner
  // cases of scenarios/limits, scaled); predictions are within 0.5-1.5x of the measured times. A zero
  // is a cost the fit folds into another term (a scrape's into its row, a cluster event's into its
  // decisions); replica visits keep a small weight so no term is free. A fit check costs 0.1 us inside
  // Cluster Autoscaler's packing and 0.55 us inside Karpenter's scheduling simulation (requirements
  // and offerings around it); kFit is between the two.
  static constexpr std::int64_t kEvent = 195, kScrape = 0, kSync = 1193, kCluster = 0, kRow = 8050, kSequence = 7, kRouterVisit = 13,
                                kReplicaVisit = 5, kPodView = 23, kDecision = 4525, kDetail = 18779, kFit = 300;
  std::int64_t units() const {
    return (events * kEvent + scrapes * kScrape + syncs * kSync + cluster * kCluster + rows * kRow + sequences * kSequence + router_visits * kRouterVisit + replica_visits * kReplicaVisit +
            pod_views * kPodView + decisions * kDecision + detailed * kDetail + fits * kFit) /
           1000;
  }
};

struct WorkLimits {
  std::int64_t max_events = WorkBudget::kMaxEvents;
  std::int64_t max_work = WorkBudget::kMaxWork;
  std::int64_t max_series_rows = WorkBudget::kMaxSeriesRows;
};

struct WorkEstimate {
  double requests = 0;       // expected arrivals
  double prefill_steps = 0;  // at least: Σ prompt tokens / max_num_batched_tokens, per pool
  double periodic = 0;       // scrapes, DCGM windows, scaler syncs
  double events = 0;         // about: 3 per request (arrival, timeout, a step) + prefill steps + periodic
  double series_rows = 0;
  double logged_syncs = 0;   // HPA syncs and KEDA polls explained in the log (output.hpa_syncs "all")
  double units = 0;          // work units of all the above (WorkCounts' weights)
};

WorkEstimate estimate_work(const Scenario& s);
// Throws InputError if the estimate is past the budget: the path of the field that drives it most,
// the arithmetic, and what would fit.
void check_work_budget(const Scenario& s, const WorkLimits& limits = {});

// Meters a run against its limits (a WorkCounts plus which kind of event was most common). It looks at
// the totals after every cluster event and sync and every kCheckEvery events otherwise, so a run stops
// within that many light events of its budget, always at the same event (counts, not clocks).
class WorkMeter {
 public:
  enum Kind : std::uint8_t { Arrival, EngineStep, Timeout, Measure, ScalerSync, Cluster, Other, kKinds };
  static constexpr std::int64_t kCheckEvery = 256;
  WorkMeter(const Scenario& s, const WorkLimits& limits) : s_(s), limits_(limits), fits_at_start_(fit_checks_so_far()) {}

  // Called once per event; throws InputError once the run is past the budget.
  void event(Kind k, std::int64_t now_micros) {
    ++by_kind_[k];
    // A cluster event or a sync can be heavy (a scheduling pass over thousands of pods): after those,
    // look every time.
    if (++counts_.events % kCheckEvery != 0 && k != Cluster && k != ScalerSync) return;
    refresh();
    if (counts_.events > limits_.max_events || counts_.units() > limits_.max_work) stop(now_micros);
  }
  // The counters the world adds to (visits, sequences, decisions).
  WorkCounts& counts() { return counts_; }
  // Everything counted so far, the per-kind event counts and the fit checks brought up to date.
  WorkCounts totals() {
    refresh();
    return counts_;
  }

 private:
  void refresh() {
    counts_.scrapes = by_kind_[Measure];
    counts_.syncs = by_kind_[ScalerSync];
    counts_.cluster = by_kind_[Cluster];
    counts_.fits = fit_checks_so_far() - fits_at_start_;
  }
  [[noreturn]] void stop(std::int64_t now_micros) const;

  const Scenario& s_;
  WorkLimits limits_;
  std::int64_t fits_at_start_;
  WorkCounts counts_;
  std::array<std::int64_t, kKinds> by_kind_{};
};

}  // namespace gpuscale
