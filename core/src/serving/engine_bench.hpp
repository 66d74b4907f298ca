// A closed-loop benchmark of one Engine alone, as NVIDIA's NIM benchmark (genai-perf) runs it:
// N clients, each sending a fixed-size request again as soon as its previous one completes.
#pragma once
#include <cstdint>

#include "serving/engine.hpp"

namespace gpuscale {

struct BenchConfig {
  int concurrency = 1;         // clients, each with one request in flight
  int prompt_tokens = 5000;    // tokens per request
  int output_tokens = 500;     // tokens per request
  int warmup_requests = -1;    // completions discarded first; -1 = 10 × concurrency
  int measured_requests = -1;  // completions measured after the warm-up; -1 = max(10 × concurrency, 10)
  // Client i sends its first request at a uniform random time in [0, concurrency × this). Why: the
  // engine is deterministic, and clients that start together stay locked in a convoy forever (each
  // one's prefill queued behind the previous one's, every cycle); on real hardware timing noise
  // breaks it up. Spreading the starts gives the desynchronised state a long benchmark run reaches.
  // The unsaturated rows' TTFT depends on this (about ±15 %); ITL, throughput and the saturated rows
  // barely do.
  double start_spread_s_per_client = 0.5;  // seconds
  std::uint64_t seed = 1;                  // for the start times
  int repetitions = 1;                     // runs with seeds seed, seed + 1, …; the results are averaged
};

// genai-perf's definitions, averaged over the measured requests (and then over repetitions).
struct BenchResult {
  double mean_ttft_s = 0;          // arrival at the engine → first token
  double mean_itl_s = 0;           // per request (e2e − ttft) / (output_tokens − 1), then averaged
  double mean_e2e_s = 0;           // arrival → last token
  double output_tokens_per_s = 0;  // measured requests' output tokens / (last measured completion − warm-up end)
  double mean_running = 0;         // time-weighted vllm:num_requests_running over the measurement
  double num_preemptions = 0;      // vllm:num_preemptions during the measurement
  std::int64_t num_measured = 0;   // requests averaged, summed over repetitions
  std::int64_t num_steps = 0;      // engine steps of the whole run, summed over repetitions
};

// Runs warm-up + measured completions per repetition. Deterministic for a given config. A client
// resends at the instant its request finishes; by the event order of kernel.hpp (step ends before
// arrivals at the same time) the engine has already started its next step, so the new request
// waits for that step, as a real client's HTTP round trip makes it do.
BenchResult run_closed_loop_bench(const EngineConfig& engine, const BenchConfig& bench);

}  // namespace gpuscale
