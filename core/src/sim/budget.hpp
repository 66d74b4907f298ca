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

namespace gpuscale {

struct WorkBudget {
  // Events of the one queue: arrivals, engine steps, timeouts, scrapes, syncs, node events (about
  // 1–3 million a second natively).
  static constexpr std::int64_t kMaxEvents = 8'000'000;
  // Work units, what a run's time follows: 1 per event, 1 per 16 sequences in finished engine steps,
  // 8 per decision a controller writes (building its explanation costs about as much as 8 events).
  // The 24-hour benchmark takes about 3.9 million.
  static constexpr std::int64_t kMaxWork = 12'000'000;
  static constexpr std::int64_t kWorkPerDecision = 8;
  static constexpr std::int64_t kSequencesPerWork = 16;
  // Rows of the result's series: scrapes × (1 + the pools' own series when pools are declared).
  static constexpr std::int64_t kMaxSeriesRows = 200'000;
};

struct WorkEstimate {
  double requests = 0;       // expected arrivals
  double prefill_steps = 0;  // at least: Σ prompt tokens / max_num_batched_tokens, per pool
  double periodic = 0;       // scrapes, DCGM windows, scaler syncs
  double events = 0;         // about: 3 per request (arrival, timeout, a step) + prefill steps + periodic
  double series_rows = 0;
};

WorkEstimate estimate_work(const Scenario& s);
// Throws InputError if the estimate is past the budget: the path of the field that drives it most,
// the arithmetic, and what would fit.
void check_work_budget(const Scenario& s);

// What the run does, counted as it goes (deterministic: counts, never time).
class WorkMeter {
 public:
  enum Kind : std::uint8_t { Arrival, EngineStep, Timeout, Measure, ScalerSync, Cluster, Other, kKinds };
  explicit WorkMeter(const Scenario& s) : s_(s) {}

  // Called once per event; throws InputError once the run is past the budget.
  void event(Kind k, std::int64_t now_micros) {
    ++events_;
    ++by_kind_[k];
    if (events_ > WorkBudget::kMaxEvents || work() > WorkBudget::kMaxWork) stop(now_micros);
  }
  void sequences_stepped(std::int64_t n) { seq_steps_ += n; }
  void decisions_written(std::int64_t n) { decisions_ += n; }
  std::int64_t events() const { return events_; }
  std::int64_t work() const {
    return events_ + seq_steps_ / WorkBudget::kSequencesPerWork + WorkBudget::kWorkPerDecision * decisions_;
  }

 private:
  [[noreturn]] void stop(std::int64_t now_micros) const;

  const Scenario& s_;
  std::int64_t events_ = 0, seq_steps_ = 0, decisions_ = 0;
  std::array<std::int64_t, kKinds> by_kind_{};
};

}  // namespace gpuscale
