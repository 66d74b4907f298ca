// The request stream: Poisson arrivals with a piecewise-constant rate (open loop) or requests sent by a
// fixed set of clients (closed loop, timed by the caller), and per-request token counts.
#pragma once
#include <cstdint>
#include <vector>

#include "kernel/rng.hpp"
#include "serving/workload_config.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

struct Request {
  std::uint32_t id = 0;
  Micros arrived_at = 0;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
  std::int32_t model = 0;  // index into the workload's models (0 with one model)
  std::uint32_t prefix_id = 0;      // the shared prefix it opens with (1-based; 0: none)
  std::int32_t prefix_tokens = 0;   // that prefix's length, included in prompt_tokens
};

// Draws token counts; values outside [min, max] are redrawn (at most 64 times, then the bound).
struct TokenSampler {
  explicit TokenSampler(const TokenDistribution& d);
  std::int32_t draw(Rng& rng) const;
  TokenDistribution dist;
  double mu = 0, sigma = 0;  // lognormal parameters from mean and cv
};
std::int32_t draw_tokens(const TokenDistribution& d, Rng& rng);

// Generates arrivals lazily in time order. Arrival times and token counts come from separate
// streams, so two scenarios with the same seed and workload see identical requests whatever their
// autoscalers do.
class Workload {
 public:
  Workload(const WorkloadConfig& config, std::uint64_t seed, Micros end);
  // Open loop: the next request, or false once the run's end is reached.
  bool next(Request& out);
  // Closed loop (config.concurrency clients): when the next client sends its first request (call once
  // per client, in client order; its own stream).
  Micros client_start();
  // Closed loop: a request a client sends at `at` (the next id, its token counts and model), or false
  // at or after the run's end.
  bool request_at(Micros at, Request& out);

 private:
  WorkloadConfig config_;
  std::vector<Phase> phases_;
  Micros end_;
  Rng arrivals_, prompts_, outputs_;
  TokenSampler prompt_sampler_, output_sampler_;
  double t_ = 0;              // seconds: time of the last arrival
  std::size_t phase_ = 0;     // index of the phase containing t_
  double phase_end_ = 0;      // seconds: end of that phase
  std::uint32_t next_id_ = 0;
  Rng models_, starts_;
  double model_share_total_ = 0;
  std::int32_t draw_model();
  // Shared prefixes: each one's length, drawn up front, and the cumulative popularity weights.
  Rng prefix_picks_;
  std::vector<std::int32_t> prefix_tokens_;
  std::vector<double> prefix_weight_cum_;
  void draw_prefix(Request& out);
};

}  // namespace gpuscale
