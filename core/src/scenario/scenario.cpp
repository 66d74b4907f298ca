// Scenario parsing with path-named errors, presets and the playground's knob schema.
#include "scenario/scenario.hpp"

#include "cluster/cluster.hpp"
#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "k8s/cron.hpp"
#include "provisioning/karpenter/nodepool.hpp"

#include <algorithm>

namespace gpuscale {

namespace {

TokenDistribution parse_tokens(const Json& j, const std::string& path, TokenDistribution d) {
  ObjectReader r(j, path);
  d.kind = r.get_enum("kind", d.kind, {"fixed", "uniform", "lognormal"});
  d.mean = r.get_number("mean", d.mean, 1, double(Limits::kMaxTokens));
  d.cv = r.get_number("cv", d.cv, 0, 4);
  d.min = r.get_int("min", d.min, 1, Limits::kMaxTokens);
  d.max = r.get_int("max", d.max, 1, Limits::kMaxTokens);
  r.finish();
  if (d.min > d.max) throw InputError(path + "/min", "is above max (" + std::to_string(d.max) + ")");
  if (d.kind != "uniform" && (d.mean < double(d.min) || d.mean > double(d.max))) {
    throw InputError(path + "/mean", "must lie between min and max");
  }
  return d;
}

DurationRange parse_range(const Json& j, const std::string& path, DurationRange d) {
  ObjectReader r(j, path);
  d.min_s = r.get_number("min_s", d.min_s, 0, 7200);
  d.max_s = r.get_number("max_s", d.max_s, 0, 7200);
  r.finish();
  if (d.max_s < d.min_s) throw InputError(path + "/max_s", "is below min_s");
  return d;
}

void apply_startup_preset(NodeStartup& st) {
  if (st.preset == "lesson_karpenter") {
    st.launch_to_registered = {35, 45};
    st.registered_to_initialized = {10, 15};
  } else if (st.preset == "lesson_cluster_autoscaler") {
    st.launch_to_registered = {70, 90};
    st.registered_to_initialized = {20, 30};
  } else if (st.preset == "real_world") {
    st.launch_to_registered = {180, 360};
    st.registered_to_initialized = {60, 120};
  }
}

// "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339 in UTC) → seconds since the Unix epoch.
std::int64_t parse_utc_time(const std::string& text, const std::string& path) {
  const char* help = "expected a UTC time like \"2026-01-05T00:00:00Z\" (RFC 3339, ending in Z)";
  auto digits = [&](std::size_t at, std::size_t n) {
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (i >= text.size() || text[i] < '0' || text[i] > '9') throw InputError(path, "\"" + text.substr(0, 64) + "\": " + help);
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  if (text.size() != 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':' ||
      text[19] != 'Z') {
    throw InputError(path, "\"" + text.substr(0, 64) + "\": " + help);
  }
  const int year = digits(0, 4), month = digits(5, 2), day = digits(8, 2);
  const int hour = digits(11, 2), minute = digits(14, 2), second = digits(17, 2);
  const std::int64_t first = days_from_civil(year, month, 1);
  const std::int64_t month_days = month >= 1 && month <= 12
                                      ? days_from_civil(month == 12 ? year + 1 : year, month == 12 ? 1 : month + 1, 1) - first
                                      : 0;
  if (year < 1970 || month < 1 || month > 12 || day < 1 || day > month_days || hour > 23 || minute > 59 || second > 59) {
    throw InputError(path, "\"" + text + "\" is not a valid date and time from 1970 on; " + help);
  }
  return ((first + day - 1) * 24 + hour) * 3600 + minute * 60 + second;
}

// cluster.preset: a named setup from data/cluster-presets.json becomes the base of the cluster
// object; the scenario's other cluster fields (node_startup, initial_nodes, workloads, …) replace
// the preset's. The provisioner and its configuration come from the preset alone.
Json expand_cluster_preset(const Json& cluster) {
  if (!cluster.is_object() || !cluster.contains("preset")) return cluster;
  const Json& name = cluster["preset"];
  std::string allowed = "\"none\"";
  const Json* preset = nullptr;
  for (const Json& p : cluster_presets()) {
    allowed += ", \"" + p.at("name").get<std::string>() + "\"";
    if (name.is_string() && p.at("name") == name) preset = &p;
  }
  if (!name.is_string()) throw InputError("/cluster/preset", "expected one of " + allowed + ", found " + type_name(name));
  Json merged = preset ? preset->at("cluster") : Json::object();
  if (!preset && name != "none") {
    throw InputError("/cluster/preset",
                     "\"" + name.get<std::string>().substr(0, 64) + "\" is not allowed; expected one of " + allowed);
  }
  for (const auto& [key, value] : cluster.items()) {
    if (key == "preset") continue;
    if (preset && (key == "provisioner" || key == "nodepools" || key == "cluster_autoscaler")) {
      throw InputError("/cluster/" + key, "is set by cluster.preset \"" + name.get<std::string>() +
                                              "\"; give either the preset or your own " + key);
    }
    merged[key] = value;
  }
  return merged;
}

void parse_cluster(const Json& j, ClusterConfig& c) {
  ObjectReader r(j, "/cluster");
  c.provisioner = r.get_enum("provisioner", c.provisioner, {"fixed", "karpenter", "cluster_autoscaler"});
  if (const Json* v = r.raw("instance_types")) c.instance_types = *v;
  if (const Json* v = r.raw("nodepools")) c.nodepools = *v;
  if (const Json* v = r.raw("cluster_autoscaler")) c.cluster_autoscaler = *v;
  if (const Json* v = r.raw("node_startup")) {
    ObjectReader sr(*v, "/cluster/node_startup");
    c.startup.preset = sr.get_enum("preset", c.startup.preset, {"lesson_karpenter", "lesson_cluster_autoscaler", "real_world", "custom"});
    apply_startup_preset(c.startup);
    if (const Json* x = sr.raw("launch_to_registered")) {
      c.startup.launch_to_registered = parse_range(*x, "/cluster/node_startup/launch_to_registered", c.startup.launch_to_registered);
    }
    if (const Json* x = sr.raw("registered_to_initialized")) {
      c.startup.registered_to_initialized =
          parse_range(*x, "/cluster/node_startup/registered_to_initialized", c.startup.registered_to_initialized);
    }
    sr.finish();
  } else if (c.provisioner == "cluster_autoscaler") {
    c.startup.preset = "lesson_cluster_autoscaler";
    apply_startup_preset(c.startup);
  }
  if (const Json* v = r.raw("initial_nodes")) {
    expect_array(*v, "/cluster/initial_nodes", 64);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = "/cluster/initial_nodes/" + std::to_string(i);
      ObjectReader nr((*v)[i], p);
      InitialNodes n;
      n.instance_type = nr.get_string("instance_type", n.instance_type);
      n.capacity_type = nr.get_enum("capacity_type", n.capacity_type, {"on-demand", "spot"});
      n.zone = nr.get_string("zone", "");
      n.owner = nr.get_string("owner", "");
      n.count = nr.get_int("count", 1, 0, 256);
      nr.finish();
      c.initial_nodes.push_back(n);
    }
  }
  if (const Json* v = r.raw("workloads")) {
    expect_array(*v, "/cluster/workloads", 16);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = "/cluster/workloads/" + std::to_string(i);
      ObjectReader wr((*v)[i], p);
      WorkloadPods w;
      w.name = wr.get_string("name", "web", 63);
      w.replicas = wr.get_int("replicas", 1, 0, 1000);
      if (const Json* pod = wr.raw("pod")) w.pod = *pod;
      wr.finish();
      parse_pod_template(w.pod.is_null() ? Json::object() : w.pod, p + "/pod", w.name, PodTemplate{});  // validate now
      c.workloads.push_back(std::move(w));
    }
  }
  if (const Json* v = r.raw("inference_pod")) {
    c.inference_pod = *v;
    parse_pod_template(*v, "/cluster/inference_pod", "vllm", PodTemplate{});
  }
  if (const Json* v = r.raw("inference_pdb")) {
    parse_pdb(*v, "/cluster/inference_pdb");  // checked here, used by the cluster model
    c.inference_pdb = *v;
  }
  c.retry_evicted_requests = r.get_bool("retry_evicted_requests", c.retry_evicted_requests);
  c.spot_interruptions_per_node_hour = r.get_number("spot_interruptions_per_node_hour", 0, 0, 10);
  if (r.raw("start_time")) c.start_unix_s = parse_utc_time(r.get_string("start_time", "", 64), "/cluster/start_time");
  r.finish();
  if (!c.instance_types.is_null()) parse_instance_types(c.instance_types, "/cluster/instance_types");
  if (c.provisioner == "karpenter") {
    if (c.nodepools.is_null() || !c.nodepools.is_array() || c.nodepools.empty()) {
      throw InputError("/cluster/nodepools", "provisioner \"karpenter\" needs at least one karpenter.sh/v1 NodePool");
    }
    expect_array(c.nodepools, "/cluster/nodepools", 16);
    for (std::size_t i = 0; i < c.nodepools.size(); ++i) parse_nodepool(c.nodepools[i], "/cluster/nodepools/" + std::to_string(i));
  } else if (!c.nodepools.is_null()) {
    throw InputError("/cluster/nodepools", "only used with provisioner \"karpenter\"");
  }
  if (c.provisioner == "cluster_autoscaler") {
    if (c.cluster_autoscaler.is_null()) {
      throw InputError("/cluster/cluster_autoscaler", "provisioner \"cluster_autoscaler\" needs {\"flags\": {...}, \"nodeGroups\": [...]}");
    }
    parse_cluster_autoscaler(c.cluster_autoscaler, "/cluster/cluster_autoscaler");
  } else if (!c.cluster_autoscaler.is_null()) {
    throw InputError("/cluster/cluster_autoscaler", "only used with provisioner \"cluster_autoscaler\"");
  }
}

}  // namespace

std::vector<Phase> effective_phases(const WorkloadConfig& w) {
  std::vector<Phase> phases;
  if (w.preset == "lesson_burst") {
    // The lesson's profile: quiet 10 min, spike 20 min, tail 30 min (lesson.md, toy simulator).
    phases = {{600, 0.05}, {1200, 0.4}, {1800, 0.12}};
  } else if (w.preset == "steady") {
    phases = {{3600, 0.2}};
  } else {
    phases = w.phases;
  }
  for (auto& p : phases) p.rate_rps *= w.rate_scale;
  return phases;
}

Scenario parse_scenario(const Json& doc) {
  Scenario s;
  ObjectReader r(doc, "");
  s.seed = static_cast<std::uint64_t>(r.get_int("seed", 1, 0, (std::int64_t(1) << 53)));
  s.duration_s = r.get_number("duration_s", s.duration_s, 1, Limits::kMaxDurationS);
  s.router = r.get_enum("router", s.router, {"least_outstanding", "round_robin"});

  if (const Json* w = r.raw("workload")) {
    ObjectReader wr(*w, "/workload");
    auto& wl = s.workload;
    wl.preset = wr.get_enum("preset", wl.preset, {"lesson_burst", "steady", "custom"});
    wl.rate_scale = wr.get_number("rate_scale", wl.rate_scale, 0, 1000);
    if (const Json* ph = wr.raw("phases")) {
      expect_array(*ph, "/workload/phases", Limits::kMaxPhases);
      for (std::size_t i = 0; i < ph->size(); ++i) {
        std::string p = "/workload/phases/" + std::to_string(i);
        ObjectReader pr((*ph)[i], p);
        Phase phase;
        phase.duration_s = pr.get_number("duration_s", phase.duration_s, 1, Limits::kMaxDurationS);
        phase.rate_rps = pr.get_number("rate_rps", phase.rate_rps, 0, Limits::kMaxRateRps);
        pr.finish();
        wl.phases.push_back(phase);
      }
    }
    if (const Json* t = wr.raw("prompt_tokens")) wl.prompt_tokens = parse_tokens(*t, "/workload/prompt_tokens", wl.prompt_tokens);
    if (const Json* t = wr.raw("output_tokens")) wl.output_tokens = parse_tokens(*t, "/workload/output_tokens", wl.output_tokens);
    wl.timeout_s = wr.get_number("timeout_s", wl.timeout_s, 0.1, 3600);
    wr.finish();
    if (wl.preset == "custom" && wl.phases.empty()) {
      throw InputError("/workload/phases", "preset \"custom\" needs at least one phase");
    }
    if (wl.preset != "custom" && !wl.phases.empty()) {
      throw InputError("/workload/phases", "phases are only used with preset \"custom\"");
    }
  }
  if (const Json* e = r.raw("engine")) {
    ObjectReader er(*e, "/engine");
    s.engine.profile = er.get_enum("profile", s.engine.profile, {"llama-3.3-70b-fp8-tp2-h100-sxm5"});
    s.engine.max_num_seqs = er.get_int("max_num_seqs", s.engine.max_num_seqs, 1, 4096);
    s.engine.max_num_batched_tokens = er.get_int("max_num_batched_tokens", s.engine.max_num_batched_tokens, 16, 131072);
    s.engine.gpu_memory_utilization = er.get_number("gpu_memory_utilization", s.engine.gpu_memory_utilization, 0.5, 0.98);
    s.engine.step_coalescing = er.get_bool("step_coalescing", s.engine.step_coalescing);
    er.finish();
  }
  if (const Json* c = r.raw("cold_start")) {
    ObjectReader cr(*c, "/cold_start");
    auto& cs = s.cold_start;
    cs.node_provisioning_s = cr.get_number("node_provisioning_s", cs.node_provisioning_s, 0, 3600);
    cs.model_load_s = cr.get_number("model_load_s", cs.model_load_s, 0, 3600);
    cs.warmup_s = cr.get_number("warmup_s", cs.warmup_s, 0, 3600);
    cs.warm_nodes = cr.get_bool("warm_nodes", cs.warm_nodes);
    cr.finish();
  }
  if (const Json* m = r.raw("metrics")) {
    ObjectReader mr(*m, "/metrics");
    s.metrics.scrape_interval_s = mr.get_number("scrape_interval_s", s.metrics.scrape_interval_s, 1, 600);
    s.metrics.dcgm_sample_period_s = mr.get_number("dcgm_sample_period_s", s.metrics.dcgm_sample_period_s, 0.1, 60);
    s.metrics.ttft_window_s = mr.get_number("ttft_window_s", s.metrics.ttft_window_s, 1, 3600);
    mr.finish();
    if (s.metrics.dcgm_sample_period_s > s.metrics.scrape_interval_s) {
      throw InputError("/metrics/dcgm_sample_period_s", "must not exceed scrape_interval_s");
    }
  }
  if (const Json* a = r.raw("autoscaler")) {
    ObjectReader ar(*a, "/autoscaler");
    auto& as = s.autoscaler;
    as.strategy = ar.get_enum("strategy", as.strategy,
                              {"fixed", "gpu_util", "gpu_memory", "queue_depth", "kv_cache", "http_concurrency", "custom"});
    as.replicas = ar.get_int("replicas", as.replicas, 0, Limits::kMaxReplicas);
    as.min_replicas = ar.get_int("min_replicas", as.min_replicas, 1, Limits::kMaxReplicas);
    as.max_replicas = ar.get_int("max_replicas", as.max_replicas, 1, Limits::kMaxReplicas);
    as.target = ar.get_number("target", as.target, 0, 1e9);
    as.sync_period_s = ar.get_number("sync_period_s", as.sync_period_s, 1, 600);
    as.tolerance = ar.get_number("tolerance", as.tolerance, 0, 1);
    as.downscale_stabilization_s = ar.get_number("downscale_stabilization_s", as.downscale_stabilization_s, 0, 3600);
    if (const Json* h = ar.raw("hpa")) as.hpa_spec = expect_object(*h, "/autoscaler/hpa");
    if (const Json* b = ar.raw("behavior")) {
      if (!b->is_null()) as.behavior = expect_object(*b, "/autoscaler/behavior");
    }
    if (const Json* k = ar.raw("keda")) {
      ObjectReader kr(*k, "/autoscaler/keda");
      auto& kd = as.keda;
      kd.set = true;
      kd.min_replica_count = kr.get_int("min_replica_count", std::max<std::int64_t>(0, as.min_replicas), 0, Limits::kMaxReplicas);
      kd.activation_threshold = kr.get_number("activation_threshold", kd.activation_threshold, 0, 1e9);
      kd.polling_interval_s = kr.get_number("polling_interval_s", kd.polling_interval_s, 1, 3600);
      kd.cooldown_period_s = kr.get_number("cooldown_period_s", kd.cooldown_period_s, 0, 86400);
      kr.finish();
      if (as.strategy != "queue_depth" && as.strategy != "http_concurrency") {
        throw InputError("/autoscaler/keda",
                         "is only used with the KEDA strategies \"queue_depth\" and \"http_concurrency\" (their ScaledObject)");
      }
      // KEDA generates the HPA with minReplicas = minReplicaCount if > 0, else 1 (controllers/keda/hpa.go).
      const std::int64_t hpa_min = std::max<std::int64_t>(1, kd.min_replica_count);
      if (ar.raw("min_replicas") && as.min_replicas != hpa_min) {
        throw InputError("/autoscaler/keda/min_replica_count",
                         "is " + std::to_string(kd.min_replica_count) + " but min_replicas is " + std::to_string(as.min_replicas) +
                             ": KEDA generates the HPA with minReplicas = max(1, minReplicaCount); give one of the two");
      }
      as.min_replicas = hpa_min;
    }
    ar.finish();
    if (as.min_replicas > as.max_replicas) {
      throw InputError("/autoscaler/min_replicas", "is above max_replicas (" + std::to_string(as.max_replicas) + ")");
    }
    if (as.strategy == "custom" && as.hpa_spec.is_null()) {
      throw InputError("/autoscaler/hpa", "strategy \"custom\" needs an autoscaling/v2 HorizontalPodAutoscalerSpec here");
    }
    if (as.strategy != "custom" && !as.hpa_spec.is_null()) {
      throw InputError("/autoscaler/hpa", "is only used with strategy \"custom\"");
    }
  }
  if (const Json* c = r.raw("cluster")) parse_cluster(expand_cluster_preset(*c), s.cluster);
  if (const Json* o = r.raw("slo")) {
    ObjectReader sr(*o, "/slo");
    s.slo.ttft_s = sr.get_number("ttft_s", s.slo.ttft_s, 0.001, 3600);
    s.slo.itl_s = sr.get_number("itl_s", s.slo.itl_s, 0.001, 60);
    sr.finish();
  }
  if (const Json* c = r.raw("cost")) {
    ObjectReader cr(*c, "/cost");
    s.cost.gpu_hour_usd = cr.get_number("gpu_hour_usd", s.cost.gpu_hour_usd, 0, 1000);
    cr.finish();
  }
  if (const Json* o = r.raw("output")) {
    ObjectReader orr(*o, "/output");
    s.output.requests = orr.get_bool("requests", s.output.requests);
    s.output.decisions = orr.get_bool("decisions", s.output.decisions);
    s.output.decision_detail = orr.get_bool("decision_detail", s.output.decision_detail);
    s.output.hpa_syncs = orr.get_enum("hpa_syncs", s.output.hpa_syncs, {"all", "changes"});
    orr.finish();
  }
  r.finish();

  // Bound the work: the expected number of arrivals must stay under the limit.
  const double expected = expected_arrivals(s);
  if (expected > double(Limits::kMaxRequests)) {
    throw InputError("/workload", "would generate about " + std::to_string(static_cast<long long>(expected)) +
                                      " requests; at most " + std::to_string(Limits::kMaxRequests) +
                                      " are allowed (lower rate_scale or duration_s)");
  }
  return s;
}

double expected_arrivals(const Scenario& s) {
  double expected = 0, t = 0;
  auto phases = effective_phases(s.workload);
  double cycle = 0;
  for (const auto& p : phases) cycle += p.duration_s;
  while (t < s.duration_s && cycle > 0) {
    for (const auto& p : phases) {
      double d = std::min(p.duration_s, s.duration_s - t);
      if (d <= 0) break;
      expected += d * p.rate_rps;
      t += d;
    }
  }
  return expected;
}

Scenario parse_scenario_text(const std::string& text) { return parse_scenario(parse_json_text(text)); }

Json scenario_schema() {
  auto num = [](const char* path, const char* label, double def, double lo, double hi, double step, const char* unit) {
    return Json{{"path", path}, {"label", label}, {"type", "number"}, {"default", def},
                {"min", lo}, {"max", hi}, {"step", step}, {"unit", unit}};
  };
  auto integer = [](const char* path, const char* label, std::int64_t def, std::int64_t lo, std::int64_t hi, const char* unit) {
    return Json{{"path", path}, {"label", label}, {"type", "integer"}, {"default", def},
                {"min", lo}, {"max", hi}, {"step", 1}, {"unit", unit}};
  };
  Scenario d;
  Json knobs = Json::array();
  knobs.push_back(Json{{"path", "/autoscaler/strategy"}, {"label", "Replica autoscaler"}, {"type", "enum"},
                       {"default", d.autoscaler.strategy}, {"unit", ""},
                       {"choices", {"fixed", "gpu_util", "gpu_memory", "queue_depth", "kv_cache", "http_concurrency"}}});
  knobs.push_back(num("/autoscaler/target", "Target (0 = strategy default)", 0, 0, 1e6, 0.1, "metric units"));
  knobs.push_back(integer("/autoscaler/replicas", "Replicas at start", d.autoscaler.replicas, 1, 64, "replicas"));
  knobs.push_back(integer("/autoscaler/min_replicas", "minReplicas", d.autoscaler.min_replicas, 1, 64, "replicas"));
  knobs.push_back(integer("/autoscaler/max_replicas", "maxReplicas", d.autoscaler.max_replicas, 1, 64, "replicas"));
  knobs.push_back(Json{{"path", "/workload/preset"}, {"label", "Arrival profile"}, {"type", "enum"},
                       {"default", d.workload.preset}, {"unit", ""}, {"choices", {"lesson_burst", "steady"}}});
  knobs.push_back(num("/workload/rate_scale", "Arrival rate ×", 10, 0.1, 100, 0.1, "×"));
  knobs.push_back(num("/workload/timeout_s", "Client timeout", d.workload.timeout_s, 1, 600, 1, "s"));
  knobs.push_back(num("/cold_start/node_provisioning_s", "Node wait (fixed delay only)", d.cold_start.node_provisioning_s, 0, 1200, 5, "s"));
  knobs.push_back(num("/cold_start/model_load_s", "Model load", d.cold_start.model_load_s, 0, 1200, 5, "s"));
  knobs.push_back(num("/cold_start/warmup_s", "Engine warm-up", d.cold_start.warmup_s, 0, 600, 5, "s"));
  knobs.push_back(num("/metrics/scrape_interval_s", "Scrape interval", d.metrics.scrape_interval_s, 1, 120, 1, "s"));
  knobs.push_back(num("/autoscaler/sync_period_s", "HPA sync period", d.autoscaler.sync_period_s, 1, 120, 1, "s"));
  knobs.push_back(integer("/engine/max_num_seqs", "max_num_seqs", d.engine.max_num_seqs, 1, 4096, "sequences"));
  knobs.push_back(num("/engine/gpu_memory_utilization", "gpu_memory_utilization", d.engine.gpu_memory_utilization, 0.5, 0.98, 0.01, "fraction"));
  knobs.push_back(num("/slo/ttft_s", "SLO: TTFT", d.slo.ttft_s, 0.05, 60, 0.05, "s"));
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
  knobs.push_back(integer("/seed", "Seed", 1, 0, 1000000, ""));
  return knobs;
}

}  // namespace gpuscale
