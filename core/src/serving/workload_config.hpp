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

// Arrival profiles, and for the last three also the requests' shape (prompt and output lengths and
// shared prefixes, unless given): lesson_burst (the lesson's quiet / spike / tail hour), steady,
// custom (the phases as given); rag_burst (prefill-heavy bursts: long prompts that open with one of a
// corpus's shared documents, short answers), reasoning (decode-heavy: short prompts, long outputs)
// and chat_system_prompt (every request opens with one of a few shared system prompts).
enum class WorkloadPreset : std::uint8_t { LessonBurst, Steady, Custom, RagBurst, Reasoning, ChatSystemPrompt };
inline constexpr Named<WorkloadPreset> kWorkloadPresets[] = {
    {"lesson_burst", WorkloadPreset::LessonBurst}, {"steady", WorkloadPreset::Steady},       {"custom", WorkloadPreset::Custom},
    {"rag_burst", WorkloadPreset::RagBurst},       {"reasoning", WorkloadPreset::Reasoning}, {"chat_system_prompt", WorkloadPreset::ChatSystemPrompt}};

// Shared prompt prefixes: `count` distinct prefixes (system prompts, a RAG corpus's documents), each
// `tokens` long (drawn once per prefix from its own stream); a request opens with one of them with
// probability `share`, prefix k (1-based) picked with weight k^-zipf_s (0: uniformly), and its own
// prompt_tokens follow. Requests with the same prefix share its KV blocks in an engine's prefix cache
// and its block hashes in a prefix-aware router.
struct PrefixConfig {
  std::int64_t count = 0;  // 0: no shared prefixes
  TokenDistribution tokens{TokenDistributionKind::Fixed, 1024, 0, 1, 65536};
  double share = 1.0;      // fraction of requests that open with a prefix
  double zipf_s = 0;       // popularity skew
};

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
  PrefixConfig prefixes;
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
// What a shape preset (rag_burst, reasoning, chat_system_prompt) sets unless the scenario gives it:
// the token distributions and the prefixes. Other presets leave `w` as it is.
void apply_shape_preset(WorkloadConfig& w);

}  // namespace gpuscale
