// The llm-d-WVA-like saturation autoscaler (see wva.hpp).
#include "autoscaling/wva.hpp"

#include <algorithm>
#include <cstdio>

namespace gpuscale::wva {

namespace {

std::string fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a);
  return buf;
}

std::string fmt2(const char* format, double a, double b) {
  char buf[128];
  std::snprintf(buf, sizeof buf, format, a, b);
  return buf;
}

std::string num(double v) { return fmt("%.6g", v); }

}  // namespace

std::string wva_config_error(const WvaConfig& c) {
  // SaturationScalingConfig.Validate
  if (!(c.kv_cache_threshold >= 0 && c.kv_cache_threshold <= 1)) return "kvCacheThreshold: must be between 0 and 1";
  if (!(c.queue_length_threshold >= 0)) return "queueLengthThreshold: must be >= 0";
  if (!(c.kv_spare_trigger >= 0 && c.kv_spare_trigger <= 1)) return "kvSpareTrigger: must be between 0 and 1";
  if (!(c.queue_spare_trigger >= 0)) return "queueSpareTrigger: must be >= 0";
  if (c.kv_cache_threshold < c.kv_spare_trigger) return "kvCacheThreshold: should be >= kvSpareTrigger";
  if (!(c.interval_s > 0)) return "interval: must be > 0";
  for (std::size_t i = 0; i < c.hpas.size(); ++i) {
    if (c.hpas[i].min_replicas < 1) return "hpas/" + std::to_string(i) + "/minReplicas: must be >= 1 (scale to zero is an alpha HPA feature)";
    if (c.hpas[i].max_replicas < c.hpas[i].min_replicas) return "hpas/" + std::to_string(i) + "/maxReplicas: must be >= minReplicas";
  }
  return "";
}

hpa::HorizontalPodAutoscalerSpec wva_hpa_spec(const WvaConfig& c, const std::string& pool) {
  WvaVariantHpa limits;
  for (const WvaVariantHpa& h : c.hpas) {
    if (h.pool == pool) limits = h;
  }
  hpa::HorizontalPodAutoscalerSpec spec;
  spec.scale_target_ref = {"apps/v1", "Deployment", pool};
  spec.min_replicas = limits.min_replicas;
  spec.max_replicas = limits.max_replicas;
  hpa::MetricSpec m;
  m.type = hpa::MetricSourceType::External;
  m.metric.name = "wva_desired_replicas";
  hpa::LabelSelector sel;
  sel.match_labels["variant_name"] = pool;
  m.metric.selector = sel;
  m.target.type = hpa::MetricTargetType::AverageValue;
  m.target.average_value_milli = 1000;  // averageValue: "1"
  spec.metrics.push_back(m);
  hpa::HPAScalingRules rules;
  rules.stabilization_window_seconds = 0;
  rules.policies = std::vector<hpa::HPAScalingPolicy>{{hpa::ScalingPolicyType::Pods, 10, 15}};
  spec.behavior = hpa::HorizontalPodAutoscalerBehavior{rules, rules};
  return spec;
}

ModelAnalysis analyze_model_saturation(const std::vector<ReplicaMetrics>& metrics, const WvaConfig& c) {
  ModelAnalysis a;
  if (metrics.empty()) return a;
  std::map<std::string, std::vector<const ReplicaMetrics*>> by_variant;  // Go ranges over a map; here name order
  for (const ReplicaMetrics& m : metrics) by_variant[m.variant].push_back(&m);
  double total_spare_kv = 0, total_spare_queue = 0;
  int non_saturated = 0;
  for (const auto& [variant, ms] : by_variant) {
    // analyzeVariant
    VariantAnalysis v;
    v.variant = variant;
    v.replica_count = static_cast<int>(ms.size());
    v.accelerator = ms.front()->accelerator;
    v.cost = ms.front()->cost;
    double spare_kv = 0, spare_queue = 0;
    for (const ReplicaMetrics* m : ms) {
      const bool saturated = m->kv_cache_usage >= c.kv_cache_threshold || static_cast<double>(m->queue_length) >= c.queue_length_threshold;
      if (saturated) {
        v.saturated.push_back(m->pod);
      } else {
        spare_kv += c.kv_cache_threshold - m->kv_cache_usage;
        spare_queue += c.queue_length_threshold - static_cast<double>(m->queue_length);
        ++v.non_saturated;
      }
      if (m->kv_cache_usage > v.max_kv) v.max_kv = m->kv_cache_usage;
      if (m->queue_length > v.max_queue) v.max_queue = m->queue_length;
    }
    if (v.non_saturated > 0) {
      v.avg_spare_kv = spare_kv / v.non_saturated;
      v.avg_spare_queue = spare_queue / v.non_saturated;
    }
    non_saturated += v.non_saturated;
    total_spare_kv += v.avg_spare_kv * static_cast<double>(v.non_saturated);
    total_spare_queue += v.avg_spare_queue * static_cast<double>(v.non_saturated);
    a.variants.push_back(std::move(v));
  }
  a.total_replicas = static_cast<int>(metrics.size());
  a.non_saturated = non_saturated;
  if (non_saturated > 0) {
    a.avg_spare_kv = total_spare_kv / non_saturated;
    a.avg_spare_queue = total_spare_queue / non_saturated;
  }
  // shouldScaleUp
  const bool kv_triggered = a.avg_spare_kv < c.kv_spare_trigger;
  const bool queue_triggered = a.avg_spare_queue < c.queue_spare_trigger;
  if (kv_triggered && queue_triggered) {
    a.should_scale_up = true;
    a.scale_up_reason = "both KV spare (" + fmt2("%.3f < %.3f", a.avg_spare_kv, c.kv_spare_trigger) + ") and queue spare (" +
                        fmt2("%.1f < %.1f", a.avg_spare_queue, c.queue_spare_trigger) + ")";
  } else if (kv_triggered) {
    a.should_scale_up = true;
    a.scale_up_reason = "KV spare Saturation low (" + fmt2("%.3f < %.3f", a.avg_spare_kv, c.kv_spare_trigger) + ")";
  } else if (queue_triggered) {
    a.should_scale_up = true;
    a.scale_up_reason = "queue spare Saturation low (" + fmt2("%.1f < %.1f", a.avg_spare_queue, c.queue_spare_trigger) + ")";
  }
  // isScaleDownSafe: the non-saturated replicas' average load × N/(N−1) must leave both spares at or
  // above their triggers.
  if (non_saturated >= kMinNonSaturatedReplicasForScaleDown) {
    const double avg_kv_load = c.kv_cache_threshold - a.avg_spare_kv;
    const double avg_queue_load = c.queue_length_threshold - a.avg_spare_queue;
    const int remaining = non_saturated - 1;
    const double scale = static_cast<double>(non_saturated) / static_cast<double>(remaining);
    a.remaining_spare_kv = c.kv_cache_threshold - avg_kv_load * scale;
    a.remaining_spare_queue = c.queue_length_threshold - avg_queue_load * scale;
    a.scale_down_safe = a.remaining_spare_kv >= c.kv_spare_trigger && a.remaining_spare_queue >= c.queue_spare_trigger;
  }
  return a;
}

std::map<std::string, int> calculate_saturation_targets(const ModelAnalysis& a, const std::vector<VariantState>& states, std::string* why) {
  std::map<std::string, int> targets;
  std::string text;
  if (a.variants.empty()) {
    for (const VariantState& s : states) targets[s.variant] = s.current;
    return targets;
  }
  std::map<std::string, VariantState> state;
  for (const VariantState& s : states) state[s.variant] = s;
  // STEP 1: any variant transitioning blocks scaling for the whole model.
  bool transition = false;
  std::string reasons;
  for (const VariantAnalysis& v : a.variants) {
    const VariantState& s = state[v.variant];
    if (s.desired != 0 && s.desired != s.current) {
      transition = true;
      reasons += " " + v.variant + ": desired(" + std::to_string(s.desired) + ")!=current(" + std::to_string(s.current) + ");";
    }
    if (v.replica_count != s.current) {
      transition = true;
      reasons += " " + v.variant + ": metrics(" + std::to_string(v.replica_count) + ")!=current(" + std::to_string(s.current) + ");";
    }
  }
  // STEP 2: base targets.
  for (const VariantAnalysis& v : a.variants) {
    const VariantState& s = state[v.variant];
    if (transition) {
      targets[v.variant] = (s.desired != 0 && s.desired != s.current) ? s.desired : s.current;
    } else {
      targets[v.variant] = v.replica_count;
    }
  }
  if (transition) {
    if (why) *why = "model in transition, scaling blocked:" + reasons + " targets kept at desired (or current).";
    return targets;
  }
  if (a.should_scale_up) {
    const VariantAnalysis* cheapest = nullptr;
    std::string skipped;
    for (const VariantAnalysis& v : a.variants) {
      const VariantState& s = state[v.variant];
      if (s.pending > 0) {
        skipped += " " + v.variant + " (" + std::to_string(s.pending) + " pending)";
        continue;
      }
      if (!cheapest || v.cost < cheapest->cost || (v.cost == cheapest->cost && v.variant < cheapest->variant)) cheapest = &v;
    }
    if (cheapest) {
      const int base = targets[cheapest->variant];
      targets[cheapest->variant] = base + 1;
      text = "scale up: the cheapest variant without pending replicas is " + cheapest->variant + " (cost " + num(cheapest->cost) + ")" +
             (skipped.empty() ? "" : ", skipping" + skipped) + ": ready " + std::to_string(base) + " + 1 = " + std::to_string(base + 1) + ".";
    } else {
      text = "scale up needed, but every variant has pending replicas (" + skipped.substr(skipped.empty() ? 0 : 1) + "): no change.";
    }
  } else if (a.scale_down_safe) {
    const VariantAnalysis* expensive = nullptr;
    for (const VariantAnalysis& v : a.variants) {
      if (targets[v.variant] <= 1) continue;  // never below 1 replica
      if (!expensive || v.cost > expensive->cost || (v.cost == expensive->cost && v.variant > expensive->variant)) expensive = &v;
    }
    if (expensive) {
      const int base = targets[expensive->variant];
      targets[expensive->variant] = base - 1;
      text = "scale down: the most expensive variant above 1 replica is " + expensive->variant + " (cost " + num(expensive->cost) + "): ready " +
             std::to_string(base) + " − 1 = " + std::to_string(base - 1) + ".";
    } else {
      text = "scale-down would be safe, but every variant is at 1 replica: no change.";
    }
  } else {
    text = "no scaling needed: targets = the replicas reporting metrics.";
  }
  if (why) *why = text;
  return targets;
}

bool ensure_minimum_replicas(std::map<std::string, int>& targets, const std::vector<VariantAnalysis>& variants) {
  int total = 0;
  for (const auto& [v, n] : targets) total += n;
  if (total > 0) return false;
  std::map<std::string, double> cost;
  for (const VariantAnalysis& v : variants) cost[v.variant] = v.cost;
  std::string cheapest;
  double cheapest_cost = -1;
  for (const auto& [v, n] : targets) {
    const auto it = cost.find(v);
    const double c = it != cost.end() ? it->second : kDefaultVariantCost;
    if (cheapest_cost < 0 || c < cheapest_cost || (c == cheapest_cost && v < cheapest)) {
      cheapest = v;
      cheapest_cost = c;
    }
  }
  if (cheapest.empty()) return false;
  targets[cheapest] = 1;
  return true;
}

WvaScaler::WvaScaler(WvaConfig config) : config_(std::move(config)), period_(seconds_to_micros(config_.interval_s)) {
  if (period_ <= 0) period_ = 30 * kMicrosPerSecond;
}

ServiceDecision WvaScaler::sync(const ServiceSnapshot& snap, Micros now, const LogPolicy& log) {
  const std::size_t n = snap.pools.size();
  ServiceDecision out;
  out.desired.assign(n, std::nullopt);
  out.published.assign(n, {});

  // prepareModelData: the replica metrics of every variant, each pod matched to its Deployment.
  std::vector<ReplicaMetrics> metrics;
  std::vector<std::string> pool_text(n);
  for (std::size_t i = 0; i < n; ++i) {
    const ServicePool& pool = snap.pools[i];
    std::map<std::uint32_t, std::pair<std::optional<double>, std::optional<double>>> series;
    for (const auto& [id, v] : pool.kv_max_1m) series[id].first = v;
    for (const auto& [id, v] : pool.queue_max_1m) series[id].second = v;
    std::string list;
    int dropped = 0;
    for (const auto& [id, kq] : series) {
      if (!pool.snapshot.find(id)) {  // FindVAForPod: the pod is gone from the API
        ++dropped;
        continue;
      }
      ReplicaMetrics m;
      m.pod = pool.snapshot.pod_prefix + "-" + std::to_string(id);
      m.variant = pool.name;
      m.accelerator = pool.accelerator;
      m.kv_cache_usage = kq.first.value_or(0.0);
      m.queue_length = kq.second ? static_cast<std::int64_t>(*kq.second) : 0;  // Go int(float64) truncates
      m.cost = pool.variant_cost.value_or(kDefaultVariantCost);
      const bool saturated = m.kv_cache_usage >= config_.kv_cache_threshold || static_cast<double>(m.queue_length) >= config_.queue_length_threshold;
      list += std::string(list.empty() ? "" : ", ") + m.pod + " KV " + fmt("%.3f", m.kv_cache_usage) + " queue " +
              std::to_string(m.queue_length) + (saturated ? " (saturated)" : "");
      metrics.push_back(std::move(m));
    }
    pool_text[i] = list.empty() ? "no replica reports metrics" : list;
    if (dropped > 0) pool_text[i] += "; " + std::to_string(dropped) + " series of pods no longer in the API dropped";
  }

  // BuildVariantStates.
  std::vector<VariantState> states;
  std::vector<PoolCounts> counts(n);
  for (std::size_t i = 0; i < n; ++i) {
    counts[i] = pool_counts(snap.pools[i].snapshot);
    VariantState s;
    s.variant = snap.pools[i].name;
    s.current = counts[i].existing != 0 ? counts[i].existing : counts[i].spec;
    s.pending = std::max(0, s.current - counts[i].ready);
    const auto it = status_.find(s.variant);
    s.desired = it != status_.end() ? it->second.num_replicas : 0;
    states.push_back(s);
  }

  std::map<std::string, int> targets;
  std::string model_text;
  ModelAnalysis analysis;
  const bool analysed = !metrics.empty();
  if (analysed) {
    analysis = analyze_model_saturation(metrics, config_);
    std::string steps;
    targets = calculate_saturation_targets(analysis, states, &steps);
    const bool minimum = ensure_minimum_replicas(targets, analysis.variants);
    model_text = "Model " + snap.model + ": " + std::to_string(analysis.non_saturated) + " of " + std::to_string(analysis.total_replicas) +
                 " replicas non-saturated (KV < " + num(config_.kv_cache_threshold) + " and queue < " + num(config_.queue_length_threshold) +
                 "); average spare KV " + fmt("%.4f", analysis.avg_spare_kv) + (analysis.avg_spare_kv < config_.kv_spare_trigger ? " < " : " ≥ ") +
                 "kvSpareTrigger " + num(config_.kv_spare_trigger) + ", average spare queue " + fmt("%.4f", analysis.avg_spare_queue) +
                 (analysis.avg_spare_queue < config_.queue_spare_trigger ? " < " : " ≥ ") + "queueSpareTrigger " + num(config_.queue_spare_trigger) +
                 (analysis.should_scale_up ? " → scale up (" + analysis.scale_up_reason + ")" : "") + ". ";
    if (analysis.non_saturated >= kMinNonSaturatedReplicasForScaleDown) {
      model_text += "Scale-down check: load × " + std::to_string(analysis.non_saturated) + "/" + std::to_string(analysis.non_saturated - 1) +
                    " leaves spare KV " + fmt("%.4f", analysis.remaining_spare_kv) + " and queue " + fmt("%.4f", analysis.remaining_spare_queue) +
                    (analysis.scale_down_safe ? " (safe). " : " (not safe). ");
    } else {
      model_text += "Scale-down check: fewer than 2 non-saturated replicas (not safe). ";
    }
    model_text += steps;
    if (minimum) model_text += " Every target was 0: 1 replica kept on the cheapest variant.";
  } else {
    model_text = "Model " + snap.model + ": no saturation metrics, no analysis; each variant keeps its last desired replicas.";
  }

  // applySaturationDecisions: status and the HPA's metrics for every variant.
  for (std::size_t i = 0; i < n; ++i) {
    const ServicePool& pool = snap.pools[i];
    const auto t = targets.find(pool.name);
    const bool has_decision = t != targets.end();
    Alloc& st = status_[pool.name];
    int target = 0;
    std::string accelerator;
    std::string reason;
    if (has_decision) {
      target = t->second;
      accelerator = pool.accelerator;
      const int current = states[i].current;
      reason = std::string("saturation-only mode: ") + (target > current ? "scale-up" : target < current ? "scale-down" : "no-change");
    } else {
      target = st.num_replicas > 0 ? st.num_replicas : 0;
      accelerator = st.accelerator;
      reason = "No scaling decision (optimization loop)";
    }
    std::string text = model_text + " Variant " + pool.name + " (" + (pool.accelerator.empty() ? "no accelerator label" : pool.accelerator) +
                       ", cost " + num(pool.variant_cost.value_or(kDefaultVariantCost)) + "): " + pool_text[i] + "; " +
                       std::to_string(states[i].current) + " current, " + std::to_string(counts[i].ready) + " ready, " +
                       std::to_string(states[i].pending) + " pending, last desired " + std::to_string(states[i].desired) + ".";
    const bool emitted = !accelerator.empty();
    if (emitted) {
      st.num_replicas = target;
      st.accelerator = accelerator;
      const double current = counts[i].existing;  // GetCurrentDeploymentReplicas: Deployment status.replicas
      const double ratio = current == 0 ? static_cast<double>(target) : static_cast<double>(target) / current;
      out.published[i] = {{"wva_desired_replicas", static_cast<double>(target)},
                          {"wva_current_replicas", current},
                          {"wva_desired_ratio", ratio}};
      text += " Published wva_desired_replicas " + std::to_string(target) + ", wva_current_replicas " + num(current) + ", wva_desired_ratio " +
              num(ratio) + " (variant_name=" + pool.name + ", accelerator_type=" + accelerator + ").";
    } else {
      text += " No accelerator known for the variant: status not updated, nothing published.";
    }
    const bool changed = emitted && target != states[i].current;
    if (log.decisions && (log.every_sync || changed)) {
      DecisionRecord rec;
      rec.t_s = micros_to_seconds(now);
      rec.controller = name();
      rec.pool = pool.name;
      rec.current_replicas = states[i].current;
      rec.desired_replicas = emitted ? target : states[i].current;
      rec.reason = reason;
      rec.explanation = text;
      if (log.detail) {
        Json d = {{"analysed", analysed}, {"target", target}, {"current", states[i].current}, {"ready", counts[i].ready},
                  {"pending", states[i].pending}, {"last_desired", states[i].desired}, {"published", emitted}};
        if (analysed) {
          d["total_replicas"] = analysis.total_replicas;
          d["non_saturated"] = analysis.non_saturated;
          d["avg_spare_kv"] = analysis.avg_spare_kv;
          d["avg_spare_queue"] = analysis.avg_spare_queue;
          d["should_scale_up"] = analysis.should_scale_up;
          d["scale_down_safe"] = analysis.scale_down_safe;
        }
        rec.detail = std::move(d);
      }
      out.log.push_back(std::move(rec));
    }
  }
  return out;
}

}  // namespace gpuscale::wva
