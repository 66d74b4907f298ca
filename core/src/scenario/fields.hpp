// The scenario's numeric knobs as one table: key, allowed range, step and unit. The parser reads each
// field with its range and the playground's knob schema (scenario_schema) is built from the same
// entries (with the struct's default), so the page can never offer a value the parser refuses.
#pragma once
#include <cstdint>
#include <limits>

#include "io/json_reader.hpp"

namespace gpuscale::fields {

struct Number {
  const char* key;     // the field's key in its object
  const char* path;    // where the playground's knob sets it (the single-service form)
  const char* label;   // the knob's label
  bool integer;        // a whole number
  double lo, hi;       // allowed range (inclusive)
  double step;         // the knob's step
  const char* unit;
  double start;        // the playground's starting value (NaN: the struct's default)
};

inline constexpr double kSameAsDefault = std::numeric_limits<double>::quiet_NaN();

inline double read(ObjectReader& r, const Number& f, double fallback) {
  return f.integer ? static_cast<double>(r.get_int(f.key, static_cast<std::int64_t>(fallback), static_cast<std::int64_t>(f.lo),
                                                   static_cast<std::int64_t>(f.hi)))
                   : r.get_number(f.key, fallback, f.lo, f.hi);
}
inline std::int64_t read_int(ObjectReader& r, const Number& f, std::int64_t fallback) {
  return r.get_int(f.key, fallback, static_cast<std::int64_t>(f.lo), static_cast<std::int64_t>(f.hi));
}

// clang-format off
inline constexpr Number kSeed{"seed", "/seed", "Seed", true, 0, 9007199254740992.0, 1, "", kSameAsDefault};
inline constexpr Number kReplicas{"replicas", "/autoscaler/replicas", "Replicas at start", true, 0, 256, 1, "replicas", kSameAsDefault};
inline constexpr Number kMinReplicas{"min_replicas", "/autoscaler/min_replicas", "minReplicas", true, 1, 256, 1, "replicas", kSameAsDefault};
inline constexpr Number kMaxReplicas{"max_replicas", "/autoscaler/max_replicas", "maxReplicas", true, 1, 256, 1, "replicas", kSameAsDefault};
inline constexpr Number kTarget{"target", "/autoscaler/target", "Target (0 = strategy default)", false, 0, 1e9, 0.1, "metric units", kSameAsDefault};
inline constexpr Number kSyncPeriod{"sync_period_s", "/autoscaler/sync_period_s", "HPA sync period", false, 1, 600, 1, "s", kSameAsDefault};
inline constexpr Number kRateScale{"rate_scale", "/workload/rate_scale", "Arrival rate ×", false, 0, 1000, 0.1, "×", 10};
inline constexpr Number kConcurrency{"concurrency", "/workload/concurrency", "Closed-loop clients (0 = open loop)", true, 0, 10000, 1, "clients", kSameAsDefault};
inline constexpr Number kStartSpread{"start_spread_s", "/workload/start_spread_s", "Clients' first requests spread over", false, 0, 86400, 1, "s", kSameAsDefault};
inline constexpr Number kTimeout{"timeout_s", "/workload/timeout_s", "Client timeout", false, 0.1, 3600, 1, "s", kSameAsDefault};
inline constexpr Number kNodeProvisioning{"node_provisioning_s", "/cold_start/node_provisioning_s", "Node wait (fixed delay only)", false, 0, 3600, 5, "s", kSameAsDefault};
inline constexpr Number kModelLoad{"model_load_s", "/cold_start/model_load_s", "Model load", false, 0, 3600, 5, "s", kSameAsDefault};
inline constexpr Number kImagePull{"image_pull_s", "/cold_start/image_pull_s", "Image pull (fresh node)", false, 0, 3600, 5, "s", kSameAsDefault};
inline constexpr Number kWarmup{"warmup_s", "/cold_start/warmup_s", "Engine warm-up", false, 0, 3600, 5, "s", kSameAsDefault};
inline constexpr Number kScrapeInterval{"scrape_interval_s", "/metrics/scrape_interval_s", "Scrape interval", false, 1, 600, 1, "s", kSameAsDefault};
inline constexpr Number kMaxNumSeqs{"max_num_seqs", "/engine/max_num_seqs", "max_num_seqs", true, 1, 4096, 1, "sequences", kSameAsDefault};
inline constexpr Number kGpuMemoryUtilization{"gpu_memory_utilization", "/engine/gpu_memory_utilization", "gpu_memory_utilization", false, 0.5, 0.98, 0.01, "fraction", kSameAsDefault};
inline constexpr Number kSloTtft{"ttft_s", "/slo/ttft_s", "SLO: TTFT", false, 0.001, 3600, 0.05, "s", kSameAsDefault};
// clang-format on

}  // namespace gpuscale::fields
