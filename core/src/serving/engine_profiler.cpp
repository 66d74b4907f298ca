// The planner's pre-deployment profiling sweep over the lab's Engine (see engine_profiler.hpp).
#include "serving/engine_profiler.hpp"

#include <algorithm>
#include <string>

#include "gpuscale/errors.hpp"

namespace gpuscale {

namespace {

// One event per engine step: the profiler measures steps (a macro step would give the same times).
EngineConfig per_step(const EngineConfig& engine) {
  EngineConfig c = engine;
  c.max_decode_substeps = 1;
  return c;
}

int context_length(const EngineConfig& engine, const ProfilerConfig& config) {
  if (config.max_context_length > 0) return config.max_context_length;
  return Engine(per_step(engine)).max_model_len();
}

}  // namespace

double measure_prefill_ttft_s(const EngineConfig& engine, int isl, int output_tokens) {
  Engine e(per_step(engine));
  if (!e.add_request(0, isl, output_tokens, 0)) return -1;
  std::vector<EngineEvent> events;
  Micros t = 0;
  while (e.has_work()) {
    t += e.begin_step(t);
    events.clear();
    e.end_step(t, events);
    for (const EngineEvent& ev : events) {
      if (ev.kind == EngineEvent::FirstToken) return micros_to_seconds(t);
    }
  }
  return -1;
}

DecodeMeasurement measure_decode(const EngineConfig& engine, int isl, int osl, int num_requests) {
  DecodeMeasurement m;
  Engine e(per_step(engine));
  // Long outputs, so that no request finishes before the measured steps end; the run stops there.
  const int output_tokens = e.max_model_len() - isl;
  if (output_tokens < osl) return m;
  for (int i = 0; i < num_requests; ++i) {
    if (!e.add_request(static_cast<std::uint32_t>(i), isl, output_tokens, 0)) return m;
  }
  // The batch the engine can hold: every request, or max_num_seqs of them (the rest wait for a slot).
  const int batch = std::min(num_requests, engine.max_num_seqs);
  std::vector<EngineEvent> events;
  Micros t = 0;
  int first_tokens = 0;
  while (first_tokens < batch && e.has_work()) {
    t += e.begin_step(t);
    events.clear();
    e.end_step(t, events);
    for (const EngineEvent& ev : events) first_tokens += ev.kind == EngineEvent::FirstToken;
  }
  if (first_tokens < batch) return m;
  const std::int64_t preemptions_before = e.num_preemptions();
  Micros measured = 0;
  while (m.steps_measured < osl - 1 && e.has_work()) {
    const Micros d = e.begin_step(t);
    t += d;
    events.clear();
    e.end_step(t, events);
    measured += d;
    ++m.steps_measured;
    bool finished = false;
    for (const EngineEvent& ev : events) finished = finished || ev.kind == EngineEvent::Finished;
    if (finished) break;
  }
  m.preemptions = e.num_preemptions() - preemptions_before;
  if (m.steps_measured == 0) return m;
  m.itl_s = micros_to_seconds(measured) / m.steps_measured;
  m.thpt_per_gpu = batch / m.itl_s / std::max(1, engine.profile.gpus());
  return m;
}

// profile_decode.py get_num_request_range with attn_dp_size 1.
std::vector<int> decode_num_request_range(int engine_max_concurrency, int granularity, int decode_max_concurrency) {
  const int conc_per_dp = std::min(engine_max_concurrency, decode_max_concurrency);
  std::vector<int> out;
  if (conc_per_dp < granularity) {
    for (int n = 1; n <= conc_per_dp; ++n) out.push_back(n);
    return out;
  }
  const double step = static_cast<double>(conc_per_dp - 1) / (granularity - 1);
  for (int i = 0; i < granularity; ++i) out.push_back(1 + static_cast<int>(i * step));
  return out;
}

// profile_prefill.py _profile_prefill_helper.
PrefillProfile profile_prefill(const EngineConfig& engine, const ProfilerConfig& config) {
  int max_context_length = context_length(engine, config) - 512;  // room for chat template and system prompt
  if (max_context_length <= 100) {
    throw InputError("/profiler/max_context_length",
                     "max_context_length " + std::to_string(max_context_length) + " is too small to profile prefill");
  }
  const int step = (max_context_length - 100) / std::max(1, config.prefill_interpolation_granularity);
  if (step <= 0) throw InputError("/profiler/prefill_interpolation_granularity", "the ISL step is 0 (Python's range() would refuse it)");
  PrefillProfile p;
  const int gpus = std::max(1, engine.profile.gpus());
  for (int isl = 100; isl < max_context_length; isl += step) {
    const double ttft_s = measure_prefill_ttft_s(engine, isl, config.prefill_osl);
    if (ttft_s < 0) continue;  // get_ttft returned None
    const double ttft_ms = ttft_s * 1000.0;
    p.isl.push_back(isl);
    p.ttft_ms.push_back(ttft_ms);
    p.thpt_per_gpu.push_back(isl / ttft_ms / gpus * 1000 * 1);  // × attention_dp_size
  }
  return p;
}

// profile_decode.py _profile_decode_helper.
DecodeProfile profile_decode(const EngineConfig& engine, const ProfilerConfig& config) {
  const int max_context_length = context_length(engine, config);
  const int osl = config.decode_osl;
  DecodeProfile d;
  d.max_kv_tokens = Engine::compute_num_kv_blocks(engine) * engine.block_size;
  const int step = (max_context_length - osl) / std::max(1, config.decode_interpolation_granularity);
  if (step <= 0) throw InputError("/profiler/decode_interpolation_granularity", "the ISL step is 0 (Python's range() would refuse it)");
  for (int isl = 100; isl < max_context_length - osl; isl += step) {
    const std::int64_t max_concurrency = d.max_kv_tokens / (isl + osl);
    if (max_concurrency == 0) break;  // the KV cache cannot hold one request of isl + osl
    for (int n : decode_num_request_range(static_cast<int>(std::min<std::int64_t>(max_concurrency, 1 << 30)),
                                          config.decode_interpolation_granularity, config.decode_max_concurrency)) {
      const DecodeMeasurement m = measure_decode(engine, isl, osl, n);
      if (m.itl_s < 0) continue;
      const double context = isl + osl / 2.0;
      d.x_kv_usage.push_back(context * n / static_cast<double>(d.max_kv_tokens));
      d.y_context_length.push_back(context);
      d.z_itl.push_back(m.itl_s * 1000.0);
      d.z_thpt_per_gpu.push_back(m.thpt_per_gpu);
      d.concurrency.push_back(n);
    }
  }
  return d;
}

}  // namespace gpuscale
