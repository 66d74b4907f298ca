// Closed-loop benchmark of one Engine (see engine_bench.hpp); feeds the calibration test.
#include "serving/engine_bench.hpp"

#include <algorithm>
#include <vector>

#include "kernel/kernel.hpp"
#include "kernel/rng.hpp"

namespace gpuscale {

namespace {

struct BenchEvent {
  bool step_end;  // else: a client's request arrives
  int client;
};

struct InFlight {
  Micros arrived_at = 0;
  Micros first_token_at = -1;
  int client = 0;
};

BenchResult run_once(const EngineConfig& engine_config, const BenchConfig& bench, std::uint64_t seed) {
  const int clients = std::max(1, bench.concurrency);
  const std::int64_t warmup = bench.warmup_requests >= 0 ? bench.warmup_requests : 10 * clients;
  const std::int64_t measured = bench.measured_requests > 0 ? bench.measured_requests : std::max(10 * clients, 10);

  // One event per step: the calibration is stated per step (macro steps would give the same times,
  // but count fewer steps and sum the running-request area in other chunks).
  EngineConfig per_step = engine_config;
  per_step.max_decode_substeps = 1;
  Engine engine(per_step);
  EventQueue<BenchEvent> queue;
  std::vector<InFlight> inflight;  // indexed by request id
  std::vector<EngineEvent> events;
  BenchResult result;

  Rng rng = Rng::stream(seed, "engine_bench/start");
  const double spread_s = bench.start_spread_s_per_client * clients;
  for (int c = 0; c < clients; ++c) {
    const Micros start = spread_s > 0 ? seconds_to_micros(rng.uniform(0, spread_s)) : 0;
    queue.push(start, EventClass::Arrival, BenchEvent{false, c});
  }

  std::int64_t completed = 0;
  Micros measure_from = 0, last_t = 0;
  std::int64_t preemptions_at_start = 0;
  double sum_ttft = 0, sum_itl = 0, sum_e2e = 0, running_area = 0;  // running_area: requests × µs

  while (!queue.empty() && completed < warmup + measured) {
    const auto ev = queue.pop();
    const Micros now = ev.time;
    running_area += static_cast<double>(engine.num_requests_running()) * static_cast<double>(now - last_t);
    last_t = now;
    if (!ev.payload.step_end) {
      const auto id = static_cast<std::uint32_t>(inflight.size());
      inflight.push_back(InFlight{now, -1, ev.payload.client});
      engine.add_request(id, bench.prompt_tokens, bench.output_tokens, now);
      if (!engine.in_step()) queue.push(now + engine.begin_step(now), EventClass::Completion, BenchEvent{true, 0});
      continue;
    }
    events.clear();
    engine.end_step(now, events);
    ++result.num_steps;
    for (const EngineEvent& e : events) {
      InFlight& f = inflight[e.request_id];
      if (e.kind == EngineEvent::FirstToken) f.first_token_at = now;
      if (e.kind != EngineEvent::Finished) continue;
      ++completed;
      if (completed == warmup) {
        measure_from = now;
        preemptions_at_start = engine.num_preemptions();
        running_area = 0;
      } else if (completed > warmup && completed <= warmup + measured) {
        const double ttft = micros_to_seconds(f.first_token_at - f.arrived_at);
        const double e2e = micros_to_seconds(now - f.arrived_at);
        sum_ttft += ttft;
        sum_e2e += e2e;
        if (bench.output_tokens > 1) sum_itl += (e2e - ttft) / (bench.output_tokens - 1);
        if (completed == warmup + measured) {
          // Output tokens of the measured requests over the time they took to complete: in a
          // closed loop at steady state, the engine's output token rate.
          const double window = micros_to_seconds(now - measure_from);
          result.output_tokens_per_s = window > 0 ? static_cast<double>(measured) * bench.output_tokens / window : 0;
          result.mean_running = window > 0 ? running_area / (window * 1e6) : 0;
          result.num_preemptions = static_cast<double>(engine.num_preemptions() - preemptions_at_start);
        }
      }
      queue.push(now, EventClass::Arrival, BenchEvent{false, f.client});
    }
    if (engine.has_work()) queue.push(now + engine.begin_step(now), EventClass::Completion, BenchEvent{true, 0});
  }
  result.num_measured = std::min<std::int64_t>(std::max<std::int64_t>(completed - warmup, 0), measured);
  if (result.num_measured > 0) {
    const double n = static_cast<double>(result.num_measured);
    result.mean_ttft_s = sum_ttft / n;
    result.mean_itl_s = sum_itl / n;
    result.mean_e2e_s = sum_e2e / n;
  }
  return result;
}

}  // namespace

BenchResult run_closed_loop_bench(const EngineConfig& engine_config, const BenchConfig& bench) {
  const int reps = std::max(1, bench.repetitions);
  BenchResult mean;
  for (int k = 0; k < reps; ++k) {
    const BenchResult r = run_once(engine_config, bench, bench.seed + static_cast<std::uint64_t>(k));
    mean.mean_ttft_s += r.mean_ttft_s / reps;
    mean.mean_itl_s += r.mean_itl_s / reps;
    mean.mean_e2e_s += r.mean_e2e_s / reps;
    mean.output_tokens_per_s += r.output_tokens_per_s / reps;
    mean.mean_running += r.mean_running / reps;
    mean.num_preemptions += r.num_preemptions / reps;
    mean.num_measured += r.num_measured;
    mean.num_steps += r.num_steps;
  }
  return mean;
}

}  // namespace gpuscale
