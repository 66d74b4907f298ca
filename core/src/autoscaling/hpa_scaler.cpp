// The HPA controller and KEDA's operator as replica scalers (see replica_scaler.hpp).
#include <algorithm>
#include <cstdio>

#include "autoscaling/hpa_json.hpp"
#include "autoscaling/replica_scaler.hpp"
#include "autoscaling/strategies.hpp"

namespace gpuscale {

namespace {

std::string fmt(const char* format, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, a);
  return buf;
}

std::string names_text(const char* const* names, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += (i ? ", " : "") + std::string(names[i]);
  return out;
}

// How old the values behind one metric were at a sync: now − when collected, now − when scraped.
struct AgeRange {
  std::string metric;
  bool live = false;  // read from its source at the sync (the HTTP Add-on's interceptor)
  bool collected_before_scrape = false;  // a DCGM value: the exporter collected it before the scrape
  int pods = 0;
  Micros collected_min = 0, collected_max = 0, scraped_min = 0, scraped_max = 0;
  void add(Micros since_collection, Micros since_scrape) {
    if (pods++ == 0) {
      collected_min = collected_max = since_collection;
      scraped_min = scraped_max = since_scrape;
      return;
    }
    collected_min = std::min(collected_min, since_collection);
    collected_max = std::max(collected_max, since_collection);
    scraped_min = std::min(scraped_min, since_scrape);
    scraped_max = std::max(scraped_max, since_scrape);
  }
};

std::string range_text(Micros lo, Micros hi) {
  return lo == hi ? fmt("%.1f s", micros_to_seconds(lo)) : fmt("%.1f", micros_to_seconds(lo)) + "–" + fmt("%.1f s", micros_to_seconds(hi));
}

// The ages of the values each of the HPA's metrics used: the pods a Pods metric averages (those not
// being deleted, as groupPods ignores the others) and the pods KEDA's Prometheus sum adds up.
std::vector<AgeRange> metric_ages(const hpa::HorizontalPodAutoscalerSpec& spec, const ScalerSnapshot& snap, Micros now) {
  std::vector<AgeRange> out;
  for (const hpa::MetricSpec& m : spec.metrics) {
    AgeRange a;
    a.metric = m.metric.name;
    if (m.type == hpa::MetricSourceType::External && m.metric.name == "interceptor_concurrency") {
      a.live = true;
      out.push_back(a);
      continue;
    }
    if (m.type != hpa::MetricSourceType::Pods && m.type != hpa::MetricSourceType::External) continue;
    const bool dcgm = m.type == hpa::MetricSourceType::Pods && m.metric.name.rfind("DCGM_", 0) == 0;
    a.collected_before_scrape = dcgm;
    for (const ScrapedReplica& s : *snap.scraped) {
      const ReplicaView* r = snap.find(s.replica);
      if (!r || r->state == ReplicaView::State::Draining) continue;
      if (dcgm && s.has_gpu_metrics) a.add(now - s.dcgm_collected_at, now - s.dcgm_scraped_at);
      if (!dcgm && s.has_vllm_metrics) a.add(now - s.vllm_scraped_at, now - s.vllm_scraped_at);
    }
    out.push_back(a);
  }
  return out;
}

std::string ages_text(const std::vector<AgeRange>& ages) {
  std::string out = "ages of the values used (now − when collected, now − when Prometheus scraped them):";
  for (std::size_t i = 0; i < ages.size(); ++i) {
    const AgeRange& a = ages[i];
    out += (i ? "; " : " ") + a.metric + ": ";
    if (a.live) {
      out += "read live from the interceptor at the sync";
    } else if (a.pods == 0) {
      out += "no pod's value";
    } else if (a.collected_before_scrape) {
      out += std::to_string(a.pods) + (a.pods == 1 ? " pod's value" : " pods' values") + " collected " + range_text(a.collected_min, a.collected_max) +
             " ago by dcgm-exporter, scraped " + range_text(a.scraped_min, a.scraped_max) + " ago";
    } else {
      out += std::to_string(a.pods) + (a.pods == 1 ? " pod's value" : " pods' values") + " read by vLLM at the scrape, " +
             range_text(a.scraped_min, a.scraped_max) + " ago";
    }
  }
  return out;
}

Json ages_json(const std::vector<AgeRange>& ages) {
  Json out = Json::array();
  for (const AgeRange& a : ages) {
    Json j = {{"metric", a.metric}};
    if (a.live) {
      j["live"] = true;
    } else {
      j["pods"] = a.pods;
      if (a.pods > 0) {
        j["since_collection_s"] = {{"min", micros_to_seconds(a.collected_min)}, {"max", micros_to_seconds(a.collected_max)}};
        j["since_scrape_s"] = {{"min", micros_to_seconds(a.scraped_min)}, {"max", micros_to_seconds(a.scraped_max)}};
      }
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

const char* const kServedPodsMetrics[5] = {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "vllm:num_requests_waiting",
                                           "vllm:num_requests_running", "vllm:kv_cache_usage_perc"};
const char* const kServedExternalMetrics[6] = {"vllm:num_requests_waiting", "vllm:num_requests_running", "interceptor_concurrency",
                                               kTtftP99Metric, kSloViolationMetric, "wva_desired_replicas"};

std::string served_pods_metrics_text() { return names_text(kServedPodsMetrics, 5); }

std::string unserved_metric(const hpa::MetricSpec& m) {
  const auto served = [&](const char* const* names, std::size_t n) {
    return std::any_of(names, names + n, [&](const char* name) { return m.metric.name == name; });
  };
  switch (m.type) {
    case hpa::MetricSourceType::Pods:
      if (served(kServedPodsMetrics, 5)) return "";
      return "the simulated prometheus-adapter serves no Pods metric named " + quote_for_message(m.metric.name) + " (the HPA would report "
             "FailedGetPodsMetric at every sync); it serves " + names_text(kServedPodsMetrics, 5);
    case hpa::MetricSourceType::External:
      if (served(kServedExternalMetrics, 6)) return "";
      return "the simulated external metrics API (KEDA) serves no metric named " + quote_for_message(m.metric.name) + " (the HPA would report "
             "FailedGetExternalMetric at every sync); it serves " + names_text(kServedExternalMetrics, 6);
    case hpa::MetricSourceType::Resource:
    case hpa::MetricSourceType::ContainerResource:
      return "the simulation models no CPU or memory usage, so no Resource metric can be served (the HPA would "
             "report FailedGetResourceMetric at every sync); use a Pods metric (" + names_text(kServedPodsMetrics, 5) + ")";
    case hpa::MetricSourceType::Object:
      return "the simulation serves no Object metrics (the HPA would report FailedGetObjectMetric at every sync); "
             "use a Pods or External metric";
  }
  return "";
}

const ReplicaView* ScalerSnapshot::find(std::uint32_t id) const {
  auto it = std::lower_bound(replicas.begin(), replicas.end(), id, [](const ReplicaView& r, std::uint32_t v) { return r.id < v; });
  return it != replicas.end() && it->id == id ? &*it : nullptr;
}

HpaScaler::HpaScaler(hpa::HorizontalPodAutoscalerSpec spec, hpa::ControllerFlags flags, Micros period)
    : spec_(std::move(spec)), flags_(flags), period_(period) {
  for (const auto& m : spec_.metrics) {
    if (m.type == hpa::MetricSourceType::Pods) pod_metric_names_.push_back(m.metric.name);
  }
}

// The HPA's view of the pool: its pods through the API, their metrics through prometheus-adapter (Pods
// metrics) and KEDA's Prometheus scaler or the HTTP Add-on (External metrics).
hpa::Observed HpaScaler::observe(const ScalerSnapshot& snap, Micros now) const {
  hpa::Observed o;
  o.spec_replicas = snap.spec_replicas;
  std::int32_t status = 0;
  double waiting_total = 0, running_total = 0;
  const std::vector<ScrapedReplica>& scraped = *snap.scraped;
  std::size_t next_scraped = 0;
  for (const ReplicaView& r : snap.replicas) {
    hpa::PodSnapshot pod;
    pod.name = snap.pod_prefix + "-" + std::to_string(r.id);
    pod.deleting = r.state == ReplicaView::State::Draining;
    pod.phase = r.state == ReplicaView::State::Pending ? PodPhase::Pending : PodPhase::Running;
    if (r.state == ReplicaView::State::Pending) {
      pod.ready_condition = std::nullopt;  // unscheduled: only PodScheduled=False so far
      pod.start_age_s = std::nullopt;
    } else {
      pod.ready_condition = r.state == ReplicaView::State::Ready ? hpa::ConditionStatus::True : hpa::ConditionStatus::False;
      pod.start_age_s = micros_to_seconds(now - r.started_at);
      const Micros transition = r.ready_at >= 0 ? r.ready_at : r.started_at;
      pod.readiness_transition_age_s = micros_to_seconds(now - transition);
    }
    pod.requests_milli["cpu"] = snap.cpu_request_milli;  // only CPU metrics would use it
    // The scrape lists replicas in ascending id, as the snapshot does: one walk over both.
    while (next_scraped < scraped.size() && scraped[next_scraped].replica < r.id) ++next_scraped;
    for (std::size_t k = next_scraped; k < scraped.size() && scraped[k].replica == r.id; ++k) {
      const ScrapedReplica& s = scraped[k];
      pod.metric_sample_age_s = micros_to_seconds(now - s.sampled_at);
      pod.metric_window_s = snap.scrape_interval_s;
      // Only the Pods metrics the HPA asks for (prometheus-adapter serves quantities in milli-units:
      // a kv_cache_usage_perc of 0.734 arrives as 734m).
      for (const std::string& name : pod_metric_names_) {
        if (s.has_gpu_metrics && name == "DCGM_FI_DEV_GPU_UTIL") {
          pod.metrics_milli[name] = s.gpu_util * 1000;
        } else if (s.has_gpu_metrics && name == "DCGM_FI_DEV_FB_USED") {
          pod.metrics_milli[name] = static_cast<std::int64_t>(s.fb_used_mib * 1000 + 0.5);
        } else if (s.has_vllm_metrics && name == "vllm:num_requests_waiting") {
          pod.metrics_milli[name] = std::int64_t(s.waiting) * 1000;
        } else if (s.has_vllm_metrics && name == "vllm:num_requests_running") {
          pod.metrics_milli[name] = std::int64_t(s.running) * 1000;
        } else if (s.has_vllm_metrics && name == "vllm:kv_cache_usage_perc") {
          pod.metrics_milli[name] = static_cast<std::int64_t>(s.kv_usage * 1000 + 0.5);
        }
      }
      if (s.has_vllm_metrics && !pod.deleting) {
        waiting_total += s.waiting;
        running_total += s.running;
      }
    }
    if (!pod.deleting) ++status;
    o.pods.push_back(std::move(pod));
  }
  o.status_replicas = status;
  // KEDA's Prometheus scaler: sum(vllm:num_requests_waiting) over what Prometheus last scraped.
  o.external_metrics["vllm:num_requests_waiting"] = hpa::MetricValue{true, static_cast<std::int64_t>(waiting_total * 1000), ""};
  o.external_metrics["vllm:num_requests_running"] = hpa::MetricValue{true, static_cast<std::int64_t>(running_total * 1000), ""};
  // The KEDA HTTP Add-on's interceptor counts live, not through Prometheus: every request that
  // arrived and is neither answered nor abandoned, whether held at the gateway or at a replica.
  o.external_metrics["interceptor_concurrency"] = hpa::MetricValue{true, snap.in_flight * 1000, ""};
  // What the lab's Prometheus rules and the model-level autoscalers publish for the pool (a missing
  // value: the query returned nothing, as prometheus-adapter then reports).
  for (const ScalerSnapshot::External& e : snap.external) {
    if (e.value) o.external_metrics[e.name] = hpa::MetricValue{true, static_cast<std::int64_t>(std::llround(*e.value * 1000)), ""};
    else o.external_metrics[e.name] = hpa::MetricValue{false, 0, e.why};
  }
  return o;
}

ScalerDecision HpaScaler::sync(const ScalerSnapshot& snap, Micros now, const LogPolicy& log) {
  const hpa::Observed o = observe(snap, now);
  // The arithmetic as text costs more than the arithmetic. When only the syncs that change the
  // replica count are logged, a sync runs without it, and one that turns out to change the count
  // runs again from the same memory, with it: the same decision, now explained.
  const bool log_all = log.decisions && log.every_sync;
  const bool log_changes = log.decisions && !log_all;
  hpa::Memory before;
  if (log_changes) before = memory_;
  flags_.explain = log_all;
  hpa::Decision d = hpa::reconcile(spec_, o, memory_, now, flags_);
  if (log_changes && d.desired_replicas != d.current_replicas) {
    memory_ = std::move(before);
    flags_.explain = true;
    d = hpa::reconcile(spec_, o, memory_, now, flags_);
  }
  ScalerDecision out;
  if (log_all || (log_changes && d.desired_replicas != d.current_replicas)) {
    DecisionRecord& rec = out.log.emplace_back();
    rec.t_s = micros_to_seconds(now);
    rec.controller = "hpa";
    rec.current_replicas = d.current_replicas;
    rec.desired_replicas = d.desired_replicas;
    rec.reason = d.conditions.empty() ? "" : d.conditions.back().reason;
    rec.explanation = d.explanation;
    std::vector<AgeRange> ages;
    if (snap.metric_ages) {
      ages = metric_ages(spec_, snap, now);
      rec.explanation += (rec.explanation.empty() || rec.explanation.back() == '\n' ? "" : "\n") + ages_text(ages);
    }
    if (log.detail) {
      rec.detail = hpa::decision_to_json(d);
      rec.detail.erase("explanation");  // already the record's own explanation
      for (auto& p : rec.detail["proposals"]) p.erase("explanation");  // part of it, too
      if (snap.metric_ages) rec.detail["metric_ages"] = ages_json(ages);
    }
    for (const auto& prop : d.proposals) {
      // The metric that won: Decision::metric_name is the controller's description of it.
      if (!prop.ok || (prop.description != d.metric_name && !d.metric_name.empty())) continue;
      rec.metric_value = static_cast<double>(prop.current_milli) / 1000.0;
      rec.ratio = prop.ratio;
      rec.rebalanced_ratio = prop.rebalanced_ratio;
      rec.metric_proposal = prop.replicas;
      rec.ready_pods = prop.ready_pods;
      rec.unready_pods = prop.unready_pods;
      rec.missing_pods = prop.missing_pods;
      // Which of the averaged samples came from pods that are not Ready (replica_calculator.go's
      // groupPods sets unready pods aside only for the cpu resource; a Pods metric averages them in).
      if (prop.source_type == hpa::MetricSourceType::Pods) {
        const std::string& name = prop.metric_name;
        std::int64_t sum_milli = 0;
        for (const auto& pod : o.pods) {
          if (pod.deleting || pod.ready_condition == hpa::ConditionStatus::True) continue;
          auto m = pod.metrics_milli.find(name);
          if (m == pod.metrics_milli.end()) continue;
          ++rec.not_ready_in_average;
          sum_milli += m->second;
        }
        rec.not_ready_sum = static_cast<double>(sum_milli) / 1000.0;
        const std::int32_t ready = rec.ready_pods - rec.not_ready_in_average;
        if (rec.not_ready_in_average > 0 && ready > 0) {
          const double ready_avg = (rec.metric_value * rec.ready_pods - rec.not_ready_sum) / ready;
          rec.explanation += "\nof the " + std::to_string(rec.ready_pods) + " samples averaged, " + std::to_string(rec.not_ready_in_average) +
                             " come from pods not Ready yet (sum " + fmt("%g", rec.not_ready_sum) + "); the " + std::to_string(ready) +
                             " Ready pods alone average " + fmt("%g", ready_avg);
        }
      }
      break;
    }
  }
  if (d.desired_replicas != snap.spec_replicas) out.desired = d.desired_replicas;
  return out;
}

// Every pollingInterval the operator asks the trigger whether the workload is active: the value
// strictly above activationThreshold. Active at 0 replicas → scale to 1 (the HPA takes it from there);
// inactive for longer than cooldownPeriod since it was last active → scale to 0 (scaleToZeroOrIdle).
// queue_depth's trigger is the Prometheus query sum(vllm:num_requests_waiting), read from what was
// last scraped: at zero replicas no pod exports it, so it reads 0, whatever waits at the gateway.
// http_concurrency's is the HTTP Add-on interceptor's in-flight count, which includes the requests
// it holds while the app is at zero: that one wakes it.
ScalerDecision KedaOperator::sync(const ScalerSnapshot& snap, Micros now, const LogPolicy& log) {
  const KedaSettings& k = settings_;
  double value_now = 0;
  if (k.http_trigger) {
    value_now = static_cast<double>(snap.in_flight);
  } else {
    for (const auto& sc : *snap.scraped) {
      const ReplicaView* r = snap.find(sc.replica);
      if (sc.has_vllm_metrics && r && r->state == ReplicaView::State::Ready) value_now += sc.waiting;
    }
  }
  const bool active = value_now > k.activation_threshold;
  if (active) last_active_ = now;
  const std::string value = std::string(k.http_trigger ? "interceptor concurrency" : "sum(vllm:num_requests_waiting)") + " = " +
                            fmt("%g", value_now) + (active ? " > " : " ≤ ") + "activationThreshold " + fmt("%g", k.activation_threshold) +
                            (active ? " → active" : " → not active");
  const std::int32_t spec = snap.spec_replicas;
  std::string text;
  std::int32_t target = spec;
  if (spec == 0 && active) {
    target = 1;
    text = value + "; replicas 0 → scale to 1 (the HPA scales from 1 to N)";
  } else if (spec > 0 && !active && now - last_active_ > k.cooldown_period) {
    target = 0;
    text = value + " since t = " + fmt("%.0f s", micros_to_seconds(last_active_)) + ", longer than cooldownPeriod " +
           fmt("%.0f s", micros_to_seconds(k.cooldown_period)) + " → scale to minReplicaCount 0";
  } else if (spec == 0 && !k.http_trigger && snap.in_flight > 0) {
    text = value + " (at zero replicas no pod exports it); " + std::to_string(snap.in_flight) +
           " requests wait at the gateway, which this trigger does not read → stay at 0";
  }
  ScalerDecision out;
  // Polls that change nothing are logged like HPA syncs that change nothing: only with hpa_syncs "all".
  const bool logged = log.decisions && (target != spec || log.every_sync);
  if (!text.empty() && logged) {
    DecisionRecord& rec = out.log.emplace_back();
    rec.t_s = micros_to_seconds(now);
    rec.controller = "keda";
    rec.current_replicas = spec;
    rec.desired_replicas = target;
    rec.reason = target > spec ? "ScaledFromZero" : target < spec ? "ScaledToZero" : "NotActive";
    rec.explanation = "KEDA operator (pollingInterval " + fmt("%.0f s", micros_to_seconds(k.polling_interval)) + "): " + text;
  }
  if (target != spec) out.desired = target;
  return out;
}

}  // namespace gpuscale
