// The playground's knob schema, built from the scenario's field table (fields.hpp), and the named
// cluster presets it offers.
#include <cmath>

#include "scenario/fields.hpp"
#include "scenario/scenario.hpp"

namespace gpuscale {

extern const char* const kClusterPresetsJson;

const Json& cluster_presets() {
  static const Json presets = Json::parse(kClusterPresetsJson).at("presets");
  return presets;
}

namespace {

Json knob(const fields::Number& f, double def) {
  Json k{{"path", f.path}, {"label", f.label}, {"type", f.integer ? "integer" : "number"}, {"min", f.lo}, {"max", f.hi},
         {"step", f.step}, {"unit", f.unit}};
  if (f.integer) {
    k["default"] = static_cast<std::int64_t>(def);
    k["min"] = static_cast<std::int64_t>(f.lo);
    k["max"] = static_cast<std::int64_t>(f.hi);
  } else {
    k["default"] = def;
  }
  // Where the playground starts, when that is not the parser's default (a livelier arrival rate).
  if (!std::isnan(f.start)) k["start"] = f.start;
  return k;
}

// The page's menu entries: each value with the words a learner reads (the metric names stay: they
// are what an HPA spec would say).
const char* choice_label(ScalerStrategy s) {
  switch (s) {
    case ScalerStrategy::Fixed: return "None: a fixed number of replicas";
    case ScalerStrategy::GpuUtil: return "HPA on GPU duty cycle (DCGM_FI_DEV_GPU_UTIL)";
    case ScalerStrategy::GpuMemory: return "HPA on GPU memory used (DCGM_FI_DEV_FB_USED)";
    case ScalerStrategy::QueueDepth: return "KEDA on queue depth (vllm:num_requests_waiting)";
    case ScalerStrategy::KvCache: return "HPA on KV-cache use (vllm:kv_cache_usage_perc)";
    case ScalerStrategy::HttpConcurrency: return "KEDA HTTP add-on on requests in flight";
    case ScalerStrategy::Custom: return "A custom HPA spec";
    case ScalerStrategy::TtftP99: return "HPA on the P99 TTFT rule (vllm:time_to_first_token_seconds)";
    case ScalerStrategy::Goodput: return "HPA on SLO misses (slo_violations:rate1m: goodput)";
    case ScalerStrategy::Planner: return "Dynamo's planner (sets the replicas; no HPA)";
    case ScalerStrategy::Wva: return "llm-d's Workload Variant Autoscaler (its HPA follows wva_desired_replicas)";
  }
  return "?";
}

const char* choice_label(WorkloadPreset p) {
  switch (p) {
    case WorkloadPreset::LessonBurst: return "Quiet, then a burst, then a tail (the lesson's)";
    case WorkloadPreset::Steady: return "Steady";
    case WorkloadPreset::Custom: return "Custom phases";
    case WorkloadPreset::RagBurst: return "RAG burst: long prompts over shared documents, short answers (prefill-heavy)";
    case WorkloadPreset::Reasoning: return "Reasoning: short prompts, long outputs (decode-heavy)";
    case WorkloadPreset::ChatSystemPrompt: return "Chat turns after a few shared system prompts";
  }
  return "?";
}

template <typename E, std::size_t N>
Json choices(const Named<E> (&names)[N], std::initializer_list<E> offered) {
  Json out = Json::array();
  for (E e : offered) out.push_back(Json{{"value", name_of(e, names)}, {"label", choice_label(e)}});
  return out;
}

}  // namespace

Json scenario_schema() {
  namespace f = fields;
  // Defaults are the structs' own (what the parser uses when a field is absent).
  const AutoscalerConfig a;
  const WorkloadConfig w;
  const ColdStartConfig cs;
  const EngineSettings e;
  const MetricsConfig m;
  const SloConfig slo;
  const Scenario s;
  Json knobs = Json::array();
  knobs.push_back(Json{{"path", "/autoscaler/strategy"}, {"label", "Replica autoscaler"}, {"type", "enum"},
                       {"default", to_string(a.strategy)}, {"unit", ""},
                       {"choices", choices(kScalerStrategies, {ScalerStrategy::Fixed, ScalerStrategy::GpuUtil, ScalerStrategy::GpuMemory,
                                                               ScalerStrategy::QueueDepth, ScalerStrategy::KvCache,
                                                               ScalerStrategy::HttpConcurrency, ScalerStrategy::TtftP99,
                                                               ScalerStrategy::Goodput, ScalerStrategy::Wva})}});
  knobs.push_back(knob(f::kTarget, a.target));
  knobs.push_back(knob(f::kReplicas, double(a.replicas)));
  knobs.push_back(knob(f::kMinReplicas, double(a.min_replicas)));
  knobs.push_back(knob(f::kMaxReplicas, double(a.max_replicas)));
  // A closed loop (concurrency above 0) and the open loop's arrival settings exclude each other (the
  // parser refuses both at once): "excluded_by" tells the page to leave a knob out of the scenario
  // while the knob at that path is above 0, "requires" to send it only then.
  knobs.push_back(Json{{"path", "/workload/preset"}, {"label", "Workload"}, {"type", "enum"},
                       {"default", name_of(w.preset, kWorkloadPresets)}, {"unit", ""},
                       {"choices", choices(kWorkloadPresets, {WorkloadPreset::LessonBurst, WorkloadPreset::Steady, WorkloadPreset::RagBurst,
                                                               WorkloadPreset::Reasoning, WorkloadPreset::ChatSystemPrompt})},
                       {"excluded_by", f::kConcurrency.path}});
  Json rate = knob(f::kRateScale, w.rate_scale);
  rate["excluded_by"] = f::kConcurrency.path;
  knobs.push_back(rate);
  knobs.push_back(knob(f::kConcurrency, double(w.concurrency)));
  Json spread = knob(f::kStartSpread, w.start_spread_s);
  spread["requires"] = f::kConcurrency.path;
  knobs.push_back(spread);
  knobs.push_back(knob(f::kTimeout, w.timeout_s));
  knobs.push_back(knob(f::kNodeProvisioning, cs.node_provisioning_s));
  knobs.push_back(knob(f::kModelLoad, cs.model_load_s));
  knobs.push_back(knob(f::kWarmup, cs.warmup_s));
  knobs.push_back(knob(f::kScrapeInterval, m.scrape_interval_s));
  // The metric pipeline (docs/scenario.md): scrape phases, dcgm-exporter's collection and the query
  // delay, or every value read at once with no lag (to compare against).
  knobs.push_back(Json{{"path", "/metrics/pipeline"}, {"label", "Metric pipeline"}, {"type", "enum"},
                       {"default", name_of(m.pipeline, kMetricsPipelines)}, {"unit", ""},
                       {"choices", Json::array({Json{{"value", "realistic"}, {"label", "Realistic (scrape phases, DCGM every 30 s)"}},
                                                Json{{"value", "ideal"}, {"label", "Ideal (no lag, for comparison)"}}})}});
  knobs.push_back(knob(f::kSyncPeriod, a.sync_period_s));
  knobs.push_back(knob(f::kMaxNumSeqs, double(e.max_num_seqs)));
  knobs.push_back(knob(f::kGpuMemoryUtilization, e.gpu_memory_utilization));
  knobs.push_back(knob(f::kSloTtft, slo.ttft_s));
  Json presets = Json::array({Json{{"value", "none"}, {"label", "Fixed delay per replica (no cluster model)"}}});
  for (const Json& p : cluster_presets()) presets.push_back(Json{{"value", p.at("name")}, {"label", p.at("label")}});
  knobs.push_back(Json{{"path", "/cluster/preset"}, {"label", "Node provisioner"}, {"type", "enum"},
                       {"default", "none"}, {"unit", ""}, {"choices", presets}});
  // maxUnavailable 100% allows every disruption, the same as no PodDisruptionBudget; 0% allows none.
  knobs.push_back(Json{{"path", "/cluster/inference_pdb/maxUnavailable"},
                       {"label", "PodDisruptionBudget maxUnavailable (with a node provisioner)"},
                       {"type", "enum"},
                       {"default", "100%"},
                       {"unit", ""},
                       {"choices", Json::array({Json{{"value", "100%"}, {"label", "100% (no budget)"}},
                                                Json{{"value", "50%"}, {"label", "50%"}},
                                                Json{{"value", "25%"}, {"label", "25%"}},
                                                Json{{"value", "0%"}, {"label", "0% (no voluntary disruption)"}}})}});
  knobs.push_back(knob(f::kSeed, double(s.seed)));
  return knobs;
}

}  // namespace gpuscale
