// What a Prometheus scrape sees of one replica: DCGM's GPU gauges (for pods that hold GPUs) and vLLM's
// /metrics (once the server is up), under their production names.
#pragma once
#include <cstdint>

#include "kernel/time.hpp"

namespace gpuscale {

struct ScrapedReplica {
  std::uint32_t replica = 0;
  bool has_gpu_metrics = false;   // DCGM exports for pods that hold GPUs
  bool has_vllm_metrics = false;  // vLLM's /metrics answers only once the server is up (Ready)
  std::int64_t gpu_util = 0;      // DCGM_FI_DEV_GPU_UTIL: percent 0-100 (an int64)
  double fb_used_mib = 0;         // DCGM_FI_DEV_FB_USED, MiB per GPU
  std::int32_t waiting = 0;       // vllm:num_requests_waiting
  std::int32_t running = 0;       // vllm:num_requests_running
  double kv_usage = 0;            // vllm:kv_cache_usage_perc (a fraction 0-1)
  Micros sampled_at = 0;
  // Where each value came from (metrics.pipeline "ideal": all three are sampled_at, the scrape itself).
  Micros vllm_scraped_at = 0;    // the scrape of the vLLM server the vLLM gauges come from
  Micros dcgm_scraped_at = 0;    // the scrape of the dcgm-exporter the DCGM values come from ...
  Micros dcgm_collected_at = 0;  // ... which served what it had collected at this time
};

}  // namespace gpuscale
