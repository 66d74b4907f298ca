// The pre-deployment profiling sweep Dynamo's planner is bootstrapped from ("thorough" mode): the
// lab's Engine run alone at grid points, as upstream's profiler runs the real engine with AIPerf,
// producing the same tables (selected_prefill_interpolation/raw_data.npz and
// selected_decode_interpolation/raw_data.npz).
//
// Ported from ai-dynamo/dynamo components/src/dynamo/profiler/utils/profile_prefill.py
// (_profile_prefill_helper), profile_decode.py (_profile_decode_helper, get_num_request_range),
// utils/aiperf.py (get_prefill_ttft, get_decode_itl_and_thpt_per_gpu) and utils/defaults.py, as of
// Aug 2026. What differs, and why:
//  - Prefill: upstream sends one request of `isl` tokens (output 5) after 3 warm-up requests and
//    takes AIPerf's TTFT. The lab's engine is deterministic and idle between requests, so the
//    warm-up changes nothing and is not run; TTFT = first token − arrival on an idle engine.
//  - Decode: upstream first sends the same N prompts as a warm-up so that the measured run hits the
//    prefix cache, then sends N requests at once (isl, osl 500) and takes AIPerf's mean ITL and
//    output token throughput: N sequences decoding in lockstep from context isl to isl + osl. The
//    lab's engine shares no prefix between requests (engine.hpp), so the profiler prefills the N
//    requests, then measures the next osl − 1 decode steps once all N are decoding: ITL = their mean
//    duration, throughput per GPU = N / ITL / GPUs. The requests that finished their prefill first
//    have decoded a few more tokens by then (at most the steps the prefills took), so the measured
//    context is that much longer than isl + osl / 2; the table records isl + osl / 2 as upstream does.
//  - max_kv_tokens: upstream parses vLLM's "GPU KV cache size: N tokens" log line; here the engine's
//    KV blocks × block size. The context length swept is the engine's max_model_len (upstream: the
//    model config's max_position_embeddings; a point the engine rejects is skipped, as a failed AIPerf
//    run is upstream).
#pragma once
#include <cstdint>
#include <vector>

#include "serving/engine.hpp"

namespace gpuscale {

// Profiler knobs with upstream's defaults (profiler __main__.py, utils/defaults.py, profile_decode.py).
struct ProfilerConfig {
  int prefill_interpolation_granularity = 16;  // --prefill-interpolation-granularity: ISL samples
  int decode_interpolation_granularity = 6;    // --decode-interpolation-granularity: ISL and concurrency samples
  int max_context_length = 0;                  // tokens; 0 = the engine's max_model_len
  int prefill_osl = 5;                         // AIPERF_PREFILL_BENCHMARK_OSL
  int decode_osl = 500;                        // the decode sweep's fixed OSL
  int decode_max_concurrency = 2000;           // DECODE_MAX_CONCURRENCY
};

// raw_data.npz of the prefill sweep: prefill_isl (tokens), prefill_ttft (ms),
// prefill_thpt_per_gpu (tokens/s/GPU = isl / ttft_ms / num_gpus × 1000).
struct PrefillProfile {
  std::vector<double> isl;
  std::vector<double> ttft_ms;
  std::vector<double> thpt_per_gpu;
};

// raw_data.npz of the decode sweep: x_kv_usage ((isl + osl/2) × N / max_kv_tokens), y_context_length
// (isl + osl/2, tokens), z_itl (ms), z_thpt_per_gpu (output tokens/s/GPU), max_kv_tokens.
struct DecodeProfile {
  std::vector<double> x_kv_usage;
  std::vector<double> y_context_length;
  std::vector<double> z_itl;
  std::vector<double> z_thpt_per_gpu;
  std::int64_t max_kv_tokens = 0;
  std::vector<int> concurrency;  // N of each point (not in upstream's file; kept for the decision log and tests)
};

// One prefill measurement: TTFT in seconds of a single request of `isl` prompt tokens (and
// `output_tokens` output tokens) on an idle engine; < 0 if the engine rejects it.
double measure_prefill_ttft_s(const EngineConfig& engine, int isl, int output_tokens);

// One decode measurement: N requests of `isl` tokens, steps measured over `osl` − 1 decode steps once
// all N decode. itl_s < 0 if the engine rejects the requests.
struct DecodeMeasurement {
  double itl_s = -1;
  double thpt_per_gpu = 0;        // output tokens/s/GPU
  int steps_measured = 0;
  std::int64_t preemptions = 0;   // vllm:num_preemptions during the measured steps
};
DecodeMeasurement measure_decode(const EngineConfig& engine, int isl, int osl, int num_requests);

// get_num_request_range(attn_dp_size = 1, engine_max_concurrency, granularity).
std::vector<int> decode_num_request_range(int engine_max_concurrency, int granularity, int decode_max_concurrency = 2000);

// The sweeps. Throw InputError (path "/profiler/...") where upstream raises (context too small).
PrefillProfile profile_prefill(const EngineConfig& engine, const ProfilerConfig& config);
DecodeProfile profile_decode(const EngineConfig& engine, const ProfilerConfig& config);

}  // namespace gpuscale
