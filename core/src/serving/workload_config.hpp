// The request stream's configuration: Poisson arrivals with a piecewise-constant rate (open loop) or a
// fixed number of clients (closed loop), token-count distributions, the client timeout and, with several
// pools, which model each request asks for.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/json_reader.hpp"

namespace gpuscale {

enum class TokenDistributionKind : std::uint8_t { Fixed, Uniform, Lognormal, Exponential };
inline constexpr Named<TokenDistributionKind> kTokenDistributionKinds[] = {{"fixed", TokenDistributionKind::Fixed},
                                                                           {"uniform", TokenDistributionKind::Uniform},
                                                                           {"lognormal", TokenDistributionKind::Lognormal},
                                                                           {"exponential", TokenDistributionKind::Exponential}};

// A token-count distribution. Values outside [min, max] are redrawn (not clipped), up to 64 times,
// after which the bound is used; the schema says so.
struct TokenDistribution {
  TokenDistributionKind kind = TokenDistributionKind::Lognormal;
  double mean = 1000;     // tokens (fixed: the value; uniform: ignored; lognormal, exponential: before the bounds)
  double cv = 0.5;        // coefficient of variation (lognormal; an exponential's is 1)
  std::int64_t min = 1;   // tokens
  std::int64_t max = 8192;  // tokens
};

struct Phase {
  double duration_s = 600;  // seconds
  double rate_rps = 0.1;    // requests/s (Poisson)
};

enum class WorkloadPreset : std::uint8_t { LessonBurst, Steady, Custom };
inline constexpr Named<WorkloadPreset> kWorkloadPresets[] = {
    {"lesson_burst", WorkloadPreset::LessonBurst}, {"steady", WorkloadPreset::Steady}, {"custom", WorkloadPreset::Custom}};

// One model's share of the arrivals: each request names its model, and the router sends it to the pool
// that serves that model.
struct ModelShare {
  std::string model;  // a pool's `model`
  double share = 1;   // relative weight (shares need not sum to 1)
};

struct WorkloadConfig {
  WorkloadPreset preset = WorkloadPreset::LessonBurst;
  double rate_scale = 1.0;  // multiplies every phase's rate
  std::vector<Phase> phases;            // piecewise-constant Poisson rate; repeats to fill duration
  TokenDistribution prompt_tokens{TokenDistributionKind::Lognormal, 2000, 0.5, 32, 16384};
  TokenDistribution output_tokens{TokenDistributionKind::Lognormal, 300, 0.5, 8, 4096};
  double timeout_s = 30;  // seconds: a client that has no first token by then gives up (dropped)
  // With several pools: which model each request asks for (drawn from its own stream). Empty: every
  // request goes to the only pool.
  std::vector<ModelShare> models;
  // Closed loop: this many clients, each with one request outstanding, sending its next request the
  // moment its previous one completes or is dropped (perf_analyzer's concurrency mode, which
  // genai-perf's --concurrency drives: "N requests are always outstanding"). 0: open loop (the
  // phases' Poisson arrivals). The arrival settings (preset, rate_scale, phases) are refused with it.
  std::int64_t concurrency = 0;
  // Closed loop: client i sends its first request at a seeded uniform time in [0, start_spread_s)
  // (0: every client at t = 0, as genai-perf starts them).
  double start_spread_s = 0;  // seconds
  bool closed_loop() const { return concurrency > 0; }
};

// The workload's phases after the preset and rate_scale are applied.
std::vector<Phase> effective_phases(const WorkloadConfig& w);

}  // namespace gpuscale
