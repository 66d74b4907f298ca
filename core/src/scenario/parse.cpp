// Scenario parsing (see scenario.hpp): JSON to typed structs once, every error naming its JSON path.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "autoscaling/hpa_json.hpp"
#include "autoscaling/replica_scaler.hpp"
#include "k8s/cron.hpp"
#include "k8s/names.hpp"
#include "scenario/fields.hpp"
#include "scenario/scenario.hpp"
#include "scheduling/fit.hpp"
#include "scheduling/scheduler.hpp"
#include "serving/engine.hpp"
#include "serving/engine_profiles.hpp"

namespace gpuscale {

namespace {

TokenDistribution parse_tokens(const Json& j, const std::string& path, TokenDistribution d) {
  ObjectReader r(j, path);
  d.kind = get_enum(r, "kind", d.kind, kTokenDistributionKinds);
  d.mean = r.get_number("mean", d.mean, 1, double(Limits::kMaxTokens));
  d.cv = r.get_number("cv", d.cv, 0, 4);
  if (d.kind == TokenDistributionKind::Exponential && r.raw("cv")) {
    throw InputError(path + "/cv", "is not used with kind \"exponential\": its coefficient of variation is 1 (its standard deviation is its mean); leave cv out, or use kind \"lognormal\"");
  }
  d.min = r.get_int("min", d.min, 1, Limits::kMaxTokens);
  d.max = r.get_int("max", d.max, 1, Limits::kMaxTokens);
  r.finish();
  if (d.min > d.max) throw InputError(path + "/min", "is above max (" + std::to_string(d.max) + ")");
  if (d.kind != TokenDistributionKind::Uniform && (d.mean < double(d.min) || d.mean > double(d.max))) {
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
  switch (st.preset) {
    case StartupPreset::LessonKarpenter:
      st.launch_to_registered = {35, 45};
      st.registered_to_ready = {5, 10};
      st.registered_to_initialized = {10, 15};
      break;
    case StartupPreset::LessonClusterAutoscaler:
      st.launch_to_registered = {70, 90};
      st.registered_to_ready = {10, 20};
      st.registered_to_initialized = {20, 30};
      break;
    case StartupPreset::RealWorld:
      st.launch_to_registered = {180, 360};
      st.registered_to_ready = {20, 60};
      st.registered_to_initialized = {60, 120};
      break;
    case StartupPreset::Custom: break;
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
    throw InputError("/cluster/preset", "\"" + name.get<std::string>().substr(0, 64) + "\" is not allowed; expected one of " + allowed);
  }
  for (const auto& [key, value] : cluster.items()) {
    if (key == "preset") continue;
    if (preset && (key == "provisioner" || key == "nodepools" || key == "cluster_autoscaler")) {
      throw InputError("/cluster/" + key, "is set by cluster.preset \"" + name.get<std::string>() + "\"; give either the preset or your own " + key);
    }
    merged[key] = value;
  }
  return merged;
}

// The replicas' pod as the engine needs it: one GPU per tensor-parallel rank, 8 vCPU and 100 GiB of host
// memory per GPU (room for tokenizer, detokenizer and the weights' page cache: a p5.48xlarge takes four
// TP2 pods), and the toleration the ExtendedResourceToleration admission plugin (on in EKS) gives every
// pod that requests nvidia.com/gpu, for taints keyed nvidia.com/gpu.
PodTemplate default_replica_pod(const PoolConfig& pool, int index, int members = 1) {
  PodTemplate t;
  t.name = pool.name;
  t.owner = PodOwner{PodOwner::Kind::Pool, index, pool.name, 1, {}};
  t.gpus = engine_profile(pool.engine.profile).gpus() / members;
  t.cpu_milli = 8000 * t.gpus;
  t.memory_mib = 100 * 1024 * t.gpus;
  t.tolerations.push_back(Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", std::nullopt});
  return t;
}

// A top owner's annotations (string values), of which KAI's pod-grouper reads the topology ones into the
// PodGroup's spec.topologyConstraint (pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go).
// The names are checked against cluster.kai.topologies once the whole scenario is read.
TopologyConstraint parse_topology_annotations(const Json& v, const std::string& path) {
  const Json& ann = expect_object(v, path);
  TopologyConstraint t;
  for (auto it = ann.begin(); it != ann.end(); ++it) {
    const std::string p = path + "/" + json_pointer_token(it.key());
    const bool kai = it.key() == kKaiTopologyAnnotation || it.key() == kKaiTopologyRequiredAnnotation || it.key() == kKaiTopologyPreferredAnnotation;
    const std::string value = expect_string(it.value(), p, kai ? 317 : 65536);
    if (it.key() == kKaiTopologyAnnotation) t.topology = value;
    if (it.key() == kKaiTopologyRequiredAnnotation) t.required_level = value;
    if (it.key() == kKaiTopologyPreferredAnnotation) t.preferred_level = value;
  }
  if (t.topology.empty() && (!t.required_level.empty() || !t.preferred_level.empty())) {
    throw InputError(path + "/" + json_pointer_token(kKaiTopologyAnnotation),
                     "is required with a topology placement annotation: the name of a Topology of /cluster/kai/topologies");
  }
  return t;
}

// A LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, kubernetes-sigs/lws api/leaderworkerset/v1/
// leaderworkerset_types.go) serving the pool: a group of spec.leaderWorkerTemplate.size pods per
// replica, the engine profile's GPUs split evenly over them. The autoscaler sets spec.replicas (LWS
// has the scale subresource an HPA targets). The workerTemplate is a pod spec as `pod` takes it, and
// the leader gets it too (LWS's default when leaderTemplate is omitted).
void parse_leader_worker_set(const Json& j, const std::string& path, int index, PoolConfig& pool) {
  ObjectReader r(j, path);
  r.only_keys({"apiVersion", "kind", "metadata", "spec"});
  const std::string api = r.require_string("apiVersion", "\"leaderworkerset.x-k8s.io/v1\"");
  if (api != "leaderworkerset.x-k8s.io/v1") throw InputError(r.child_path("apiVersion"), shown(api) + " is not allowed; expected \"leaderworkerset.x-k8s.io/v1\"");
  const std::string kind = r.require_string("kind", "\"LeaderWorkerSet\"");
  if (kind != "LeaderWorkerSet") throw InputError(r.child_path("kind"), shown(kind) + " is not allowed; expected \"LeaderWorkerSet\"");
  TopologyConstraint topology;
  if (const Json* m = r.raw("metadata")) {
    ObjectReader mr(*m, r.child_path("metadata"));
    mr.only_keys({"name", "namespace", "labels", "annotations"});
    const std::string name = mr.get_string("name", pool.name, 63);
    if (name != pool.name) {
      throw InputError(mr.child_path("name"), shown(name) + " is not the pool's name " + shown(pool.name) + "; the pool's name is the LeaderWorkerSet's");
    }
    mr.get_string("namespace", "default", 63);
    if (const Json* l = mr.raw("labels")) parse_labels(*l, mr.child_path("labels"));
    if (const Json* a = mr.raw("annotations")) topology = parse_topology_annotations(*a, mr.child_path("annotations"));
    mr.finish();
  }
  const Json& spec = r.require("spec", "the LeaderWorkerSet's spec with its leaderWorkerTemplate");
  ObjectReader sr(spec, r.child_path("spec"));
  sr.only_keys({"replicas", "startupPolicy", "leaderWorkerTemplate", "rolloutStrategy", "networkConfig"});
  if (sr.has("replicas")) {
    throw InputError(sr.child_path("replicas"), "is the autoscaler's to set (the HPA scales a LeaderWorkerSet through its scale subresource): give the starting count in autoscaler.replicas");
  }
  const std::string startup = sr.get_enum("startupPolicy", "LeaderCreated", {"LeaderCreated", "LeaderReady"});
  if (startup == "LeaderReady") {
    throw InputError(sr.child_path("startupPolicy"), "\"LeaderReady\" is not modelled: a vLLM leader is Ready only once its workers have joined, so the lab "
                                                  "creates every member at once (\"LeaderCreated\", the default)");
  }
  sr.raw("rolloutStrategy");  // rollouts are not simulated: the template never changes during a run
  sr.raw("networkConfig");    // the headless service's names do not change placement
  const Json& lwt = sr.require("leaderWorkerTemplate", "the group's size and workerTemplate");
  ObjectReader lr(lwt, sr.child_path("leaderWorkerTemplate"));
  lr.only_keys({"size", "restartPolicy", "workerTemplate", "leaderTemplate", "subGroupPolicy"});
  if (lr.has("leaderTemplate")) {
    throw InputError(lr.child_path("leaderTemplate"), "is not modelled: the leader gets the workerTemplate (LWS's default without a leaderTemplate); leave it out");
  }
  lr.raw("subGroupPolicy");  // sub-groups label pods; the lab's KAI PodGroup is the whole group
  const int gpus = engine_profile(pool.engine.profile).gpus();
  pool.group_size = static_cast<int>(lr.get_int("size", 1, 1, 64));
  if (gpus % pool.group_size != 0) {
    throw InputError(lr.child_path("size"), std::to_string(pool.group_size) + " pods cannot share the " + std::to_string(gpus) + " GPUs of engine profile " +
                                                 pool.engine.profile + " evenly; give a size that divides " + std::to_string(gpus));
  }
  const std::string restart = lr.get_enum("restartPolicy", "RecreateGroupOnPodRestart", {"RecreateGroupOnPodRestart", "None", "Default"});
  if (restart != "RecreateGroupOnPodRestart") {
    throw InputError(lr.child_path("restartPolicy"), shown(restart) + " is not modelled: a vLLM group that loses a member loses a pipeline stage of its Ray "
                                                     "cluster and serves nothing until restarted, which RecreateGroupOnPodRestart (the default) does");
  }
  pool.leader_worker_set = true;
  pool.pod = default_replica_pod(pool, index, pool.group_size);
  const Json& worker = lr.require("workerTemplate", "the members' pod spec");
  pool.pod = parse_pod_template(worker, lr.child_path("workerTemplate"), pool.pod);
  pool.pod.owner.group_size = pool.group_size;
  pool.pod.owner.topology = topology;
  if (pool.pod.gpus * pool.group_size != gpus) {
    throw InputError(lr.child_path("workerTemplate") + "/gpus", std::to_string(pool.group_size) + " pods of " + std::to_string(pool.pod.gpus) +
                                                                     " GPUs are not the " + std::to_string(gpus) + " GPUs engine profile " + pool.engine.profile +
                                                                     " runs on; each member requests " + std::to_string(gpus / pool.group_size));
  }
  lr.finish();
  sr.finish();
  r.finish();
}

EngineSettings parse_engine(const Json& j, const std::string& path, EngineSettings e) {
  ObjectReader r(j, path);
  if (const Json* v = r.raw("profile")) {
    const std::vector<std::string> names = engine_profile_names();
    e.profile = expect_enum_of(*v, path + "/profile", names);
  }
  e.max_num_seqs = fields::read_int(r, fields::kMaxNumSeqs, e.max_num_seqs);
  e.max_num_batched_tokens = r.get_int("max_num_batched_tokens", e.max_num_batched_tokens, 16, 131072);
  e.gpu_memory_utilization = fields::read(r, fields::kGpuMemoryUtilization, e.gpu_memory_utilization);
  e.step_coalescing = r.get_bool("step_coalescing", e.step_coalescing);
  e.shutdown_timeout_s = r.get_number("shutdown_timeout_s", e.shutdown_timeout_s, 0, 691200);
  r.finish();
  return e;
}

KedaConfig parse_keda(const Json& j, const std::string& path, std::int64_t min_replicas) {
  ObjectReader r(j, path);
  KedaConfig k;
  k.set = true;
  k.min_replica_count = r.get_int("min_replica_count", std::max<std::int64_t>(0, min_replicas), 0, Limits::kMaxReplicas);
  k.activation_threshold = r.get_number("activation_threshold", k.activation_threshold, 0, 1e9);
  k.polling_interval_s = r.get_number("polling_interval_s", k.polling_interval_s, 1, 3600);
  k.cooldown_period_s = r.get_number("cooldown_period_s", k.cooldown_period_s, 0, 86400);
  r.finish();
  return k;
}

// A custom HPA inside a scenario: the replica cap of every pool and only metrics the simulation serves.
void check_custom_hpa(const hpa::HorizontalPodAutoscalerSpec& spec, const Json& written, const std::string& path) {
  const auto cap = [&](std::int64_t n, const char* key) {
    if (n > Limits::kMaxReplicas) {
      throw InputError(path + "/" + key, "is " + std::to_string(n) + "; a pool runs at most " + std::to_string(Limits::kMaxReplicas) +
                                             " replicas in the lab");
    }
  };
  if (spec.min_replicas) cap(*spec.min_replicas, "minReplicas");
  cap(spec.max_replicas, "maxReplicas");
  if (!written.contains("metrics") || written["metrics"].empty()) {
    throw InputError(path + "/metrics", "is missing: the API defaults an HPA without metrics to CPU utilization at 80 %, and the "
                                        "simulation models no CPU usage, so no Resource metric can be served; give a Pods metric (" +
                                            served_pods_metrics_text() + ")");
  }
  for (std::size_t i = 0; i < spec.metrics.size(); ++i) {
    const hpa::MetricSpec& m = spec.metrics[i];
    const std::string why = unserved_metric(m);
    const char* at = m.type == hpa::MetricSourceType::Pods ? "/pods/metric/name" : m.type == hpa::MetricSourceType::External ? "/external/metric/name" : "/type";
    if (!why.empty()) throw InputError(path + "/metrics/" + std::to_string(i) + at, why);
  }
}

// autoscaler.planner: Dynamo's planner settings under its own names (components/planner planner_config.py;
// the mode follows the pools' roles). autoscaler.wva: the WVA saturation config (SaturationScalingConfig).
ServiceScalerConfig parse_planner(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  dynamo::PlannerConfig c;
  static const std::vector<std::pair<std::string, dynamo::OptimizationTarget>> kTargets = {
      {"throughput", dynamo::OptimizationTarget::Throughput}, {"latency", dynamo::OptimizationTarget::Latency},
      {"load", dynamo::OptimizationTarget::Load}, {"sla", dynamo::OptimizationTarget::Sla}};
  if (const Json* v = r.raw("optimization_target")) {
    const std::string t = expect_enum(*v, path + "/optimization_target", {"throughput", "latency", "load", "sla"});
    for (const auto& [name, value] : kTargets)
      if (name == t) c.optimization_target = value;
  }
  c.throughput_adjustment_interval_s = r.get_number("throughput_adjustment_interval", c.throughput_adjustment_interval_s, 1, 86400);
  c.load_adjustment_interval_s = r.get_number("load_adjustment_interval", c.load_adjustment_interval_s, 1, 3600);
  c.ttft_ms = r.get_number("ttft", c.ttft_ms, 1, 600000);
  c.itl_ms = r.get_number("itl", c.itl_ms, 0.1, 60000);
  c.max_gpu_budget = static_cast<int>(r.get_int("max_gpu_budget", c.max_gpu_budget, -1, 4096));
  c.min_gpu_budget = static_cast<int>(r.get_int("min_gpu_budget", c.min_gpu_budget, -1, 4096));
  c.min_endpoint = static_cast<int>(r.get_int("min_endpoint", c.min_endpoint, 0, Limits::kMaxReplicas));
  if (const auto v = r.get_optional_int("prefill_min_endpoint", 0, Limits::kMaxReplicas)) c.prefill_min_endpoint = static_cast<int>(*v);
  if (const auto v = r.get_optional_int("decode_min_endpoint", 0, Limits::kMaxReplicas)) c.decode_min_endpoint = static_cast<int>(*v);
  if (const Json* v = r.raw("load_predictor")) {
    const std::string k = expect_enum(*v, path + "/load_predictor", {"constant", "kalman", "arima", "prophet"});
    c.load_predictor = k == "kalman" ? dynamo::LoadPredictorKind::Kalman : k == "arima" ? dynamo::LoadPredictorKind::Arima
                     : k == "prophet" ? dynamo::LoadPredictorKind::Prophet : dynamo::LoadPredictorKind::Constant;
  }
  c.predictor.log1p = r.get_bool("load_predictor_log1p", c.predictor.log1p);
  c.load_scaling_down_sensitivity = static_cast<int>(r.get_int("load_scaling_down_sensitivity", c.load_scaling_down_sensitivity, 0, 100));
  if (const auto v = r.get_optional_int("prefill_scale_up_queue_tokens", 0, 1 << 30)) c.prefill_scale_up_queue_tokens = *v;
  if (const auto v = r.get_optional_int("prefill_scale_down_queue_tokens", 0, 1 << 30)) c.prefill_scale_down_queue_tokens = *v;
  if (const auto v = r.get_optional_number("decode_scale_up_kv_rate", 0, 100)) c.decode_scale_up_kv_rate = *v;
  if (const auto v = r.get_optional_number("decode_scale_down_kv_rate", 0, 100)) c.decode_scale_down_kv_rate = *v;
  r.finish();
  return c;
}

ServiceScalerConfig parse_wva(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  wva::WvaConfig c;
  c.kv_cache_threshold = r.get_number("kvCacheThreshold", c.kv_cache_threshold, 0, 1);
  c.queue_length_threshold = r.get_number("queueLengthThreshold", c.queue_length_threshold, 0, 100000);
  c.kv_spare_trigger = r.get_number("kvSpareTrigger", c.kv_spare_trigger, 0, 1);
  c.queue_spare_trigger = r.get_number("queueSpareTrigger", c.queue_spare_trigger, 0, 100000);
  r.finish();
  return c;
}

AutoscalerConfig parse_autoscaler(const Json& j, const std::string& path, const std::string& deployment) {
  ObjectReader r(j, path);
  AutoscalerConfig as;
  as.strategy = get_enum(r, "strategy", as.strategy, kScalerStrategies);
  as.replicas = fields::read_int(r, fields::kReplicas, as.replicas);
  as.min_replicas = fields::read_int(r, fields::kMinReplicas, as.min_replicas);
  as.max_replicas = fields::read_int(r, fields::kMaxReplicas, as.max_replicas);
  as.target = fields::read(r, fields::kTarget, as.target);
  as.sync_period_s = fields::read(r, fields::kSyncPeriod, as.sync_period_s);
  as.tolerance = r.get_number("tolerance", as.tolerance, 0, 1);
  as.downscale_stabilization_s = r.get_number("downscale_stabilization_s", as.downscale_stabilization_s, 0, 3600);
  const Json* custom = r.raw("hpa");
  if (custom) expect_object(*custom, path + "/hpa");
  for (const auto& [key, strategy] : {std::pair<const char*, ScalerStrategy>{"planner", ScalerStrategy::Planner}, {"wva", ScalerStrategy::Wva}}) {
    const Json* v = r.raw(key);
    if (!v) continue;
    if (as.strategy != strategy) {
      throw InputError(path + "/" + key, std::string("configures strategy \"") + key + "\"; this pool's strategy is \"" + to_string(as.strategy) + "\"");
    }
    as.service = strategy == ScalerStrategy::Planner ? parse_planner(*v, path + "/" + key) : parse_wva(*v, path + "/" + key);
    const std::string why = service_scaler_config_error(*as.service);
    if (!why.empty()) {
      const std::size_t colon = why.find(": ");
      throw InputError(path + "/" + key + (colon == std::string::npos ? "" : "/" + why.substr(0, colon)),
                       colon == std::string::npos ? why : why.substr(colon + 2));
    }
  }
  std::optional<hpa::HorizontalPodAutoscalerBehavior> behavior;
  if (const Json* b = r.raw("behavior"); b && !b->is_null()) behavior = hpa::parse_hpa_behavior(*b, path + "/behavior");
  if (const Json* k = r.raw("keda")) {
    as.keda = parse_keda(*k, path + "/keda", as.min_replicas);
    if (!is_keda(as.strategy)) {
      throw InputError(path + "/keda", "is only used with the KEDA strategies \"queue_depth\" and \"http_concurrency\" (their ScaledObject)");
    }
    // KEDA generates the HPA with minReplicas = minReplicaCount if > 0, else 1 (controllers/keda/hpa.go).
    const std::int64_t hpa_min = std::max<std::int64_t>(1, as.keda.min_replica_count);
    if (r.has("min_replicas") && as.min_replicas != hpa_min) {
      throw InputError(path + "/keda/min_replica_count",
                       "is " + std::to_string(as.keda.min_replica_count) + " but min_replicas is " + std::to_string(as.min_replicas) +
                           ": KEDA generates the HPA with minReplicas = max(1, minReplicaCount); give one of the two");
    }
    as.min_replicas = hpa_min;
  }
  r.finish();
  if (as.min_replicas > as.max_replicas) {
    throw InputError(path + "/min_replicas", "is above max_replicas (" + std::to_string(as.max_replicas) + ")");
  }
  if (as.strategy == ScalerStrategy::Custom) {
    if (!custom) throw InputError(path + "/hpa", "strategy \"custom\" needs an autoscaling/v2 HorizontalPodAutoscalerSpec here");
    // The spec is the whole HPA: the strategies' shorthands next to it would be silently ignored.
    for (const auto& [key, in_spec] : {std::pair<const char*, const char*>{"min_replicas", "minReplicas"}, {"max_replicas", "maxReplicas"},
                                       {"target", "the target of each of its metrics"}, {"behavior", "behavior"}}) {
      if (r.has(key)) {
        throw InputError(path + "/" + key, std::string("is not used with strategy \"custom\": the HPA spec in autoscaler.hpa has its own (") +
                                               in_spec + "); write it there");
      }
    }
    as.hpa = hpa::parse_hpa_spec(*custom, path + "/hpa");
    check_custom_hpa(*as.hpa, *custom, path + "/hpa");
  } else if (custom) {
    throw InputError(path + "/hpa", "is only used with strategy \"custom\"");
  } else if (as.strategy == ScalerStrategy::Fixed) {
    if (behavior) throw InputError(path + "/behavior", "is not used with strategy \"fixed\", which runs no HPA (a fixed replica count)");
  } else if (as.strategy == ScalerStrategy::Planner) {
    // The planner sets spec.replicas itself (Dynamo's operator); no HPA runs beside it.
    if (behavior) throw InputError(path + "/behavior", "is not used with strategy \"planner\": the planner sets the replicas, no HPA runs");
    if (r.has("target")) throw InputError(path + "/target", "is not used with strategy \"planner\": its targets are autoscaler.planner's ttft and itl");
  } else if (as.strategy == ScalerStrategy::Wva) {
    if (behavior) throw InputError(path + "/behavior", "is not used with strategy \"wva\": WVA's HPA has its own behavior (stabilization 0, 10 pods per 15 s)");
    // Placeholder until the model's WVA config is known (check_models sets the spec from it).
    as.hpa = wva_hpa_spec(as.service ? std::get<wva::WvaConfig>(*as.service) : wva::WvaConfig{}, deployment);
    as.hpa->min_replicas = static_cast<std::int32_t>(as.min_replicas);
    as.hpa->max_replicas = static_cast<std::int32_t>(as.max_replicas);
  } else {
    as.hpa = preset_hpa_spec(as.strategy, deployment, static_cast<std::int32_t>(as.min_replicas), static_cast<std::int32_t>(as.max_replicas),
                             as.target, behavior);
  }
  return as;
}

void parse_cold_start(ObjectReader& r, ColdStartConfig& cs) {
  cs.node_provisioning_s = fields::read(r, fields::kNodeProvisioning, cs.node_provisioning_s);
  cs.model_load_s = fields::read(r, fields::kModelLoad, cs.model_load_s);
  cs.image_pull_s = fields::read(r, fields::kImagePull, cs.image_pull_s);
  cs.warmup_s = fields::read(r, fields::kWarmup, cs.warmup_s);
  cs.warm_nodes = r.get_bool("warm_nodes", cs.warm_nodes);
}

PoolConfig parse_pool(const Json& j, const std::string& path, int index, const Scenario& s) {
  ObjectReader r(j, path);
  PoolConfig pool;
  if (!r.has("name")) throw InputError(path + "/name", "is required: the pool's Deployment name (lowercase letters, digits and '-')");
  pool.name = r.get_string("name", "", 63);
  if (!is_dns1123_label(pool.name)) {
    throw InputError(path + "/name", "\"" + pool.name.substr(0, 64) + "\" is not a valid Deployment name (lowercase letters, digits and '-', at most 63)");
  }
  pool.model = r.get_string("model", "", 253);
  if (pool.model.empty()) throw InputError(path + "/model", "is required: the served model name requests ask for (workload.models)");
  pool.role = get_enum(r, "role", pool.role, kPoolRoles);
  pool.model_load_s = s.cold_start.model_load_s;
  pool.image_pull_s = s.cold_start.image_pull_s;
  pool.warmup_s = s.cold_start.warmup_s;
  if (const Json* e = r.raw("engine")) pool.engine = parse_engine(*e, path + "/engine", pool.engine);
  if (const Json* c = r.raw("cold_start")) {
    ObjectReader cr(*c, path + "/cold_start");
    pool.model_load_s = fields::read(cr, fields::kModelLoad, pool.model_load_s);
    pool.image_pull_s = fields::read(cr, fields::kImagePull, pool.image_pull_s);
    pool.warmup_s = fields::read(cr, fields::kWarmup, pool.warmup_s);
    cr.finish();
  }
  pool.autoscaler = parse_autoscaler(r.raw("autoscaler") ? *r.raw("autoscaler") : Json::object(), path + "/autoscaler", pool.name);
  pool.pod = default_replica_pod(pool, index);
  if (const Json* p = r.raw("pod")) pool.pod = parse_pod_template(*p, path + "/pod", pool.pod);
  if (const Json* l = r.raw("leaderWorkerSet")) {
    if (r.has("pod")) throw InputError(path + "/pod", "with a leaderWorkerSet, its workerTemplate is the pod; give one or the other");
    parse_leader_worker_set(*l, path + "/leaderWorkerSet", index, pool);
  }
  if (const Json* p = r.raw("pdb")) pool.pdb = parse_pdb(*p, path + "/pdb");
  r.finish();
  return pool;
}

int type_index(const ClusterConfig& c, const std::string& name, const std::string& path, const std::string& hint = "") {
  const InstanceType* t = find_instance_type(c.instance_types, name);
  if (!t) {
    std::string names;
    for (std::size_t i = 0; i < c.instance_types.size() && i < 12; ++i) names += (i ? ", " : "") + c.instance_types[i].name;
    throw InputError(path, hint + quote_for_message(name) + " is not in the instance catalogue (/cluster/instance_types" +
                               (c.instance_types.empty() ? std::string(" is empty)") : ": " + names + (c.instance_types.size() > 12 ? ", …)" : ")")));
  }
  return static_cast<int>(t - c.instance_types.data());
}

KaiSchedulerConfig parse_kai(const Json& v, const std::string& path);

void parse_cluster(const Json& j, Scenario& s) {
  ClusterConfig& c = s.cluster;
  ObjectReader r(j, "/cluster");
  c.provisioner = get_enum(r, "provisioner", c.provisioner, kProvisionerKinds);
  const Json* types = r.raw("instance_types");
  c.instance_types = types ? parse_instance_types(*types, "/cluster/instance_types") : default_instance_types();
  const Json* nodepools = r.raw("nodepools");
  const Json* ca = r.raw("cluster_autoscaler");
  if (const Json* v = r.raw("node_startup")) {
    ObjectReader sr(*v, "/cluster/node_startup");
    c.startup.preset = get_enum(sr, "preset", c.startup.preset, kStartupPresets);
    apply_startup_preset(c.startup);
    if (const Json* x = sr.raw("launch_to_registered")) {
      c.startup.launch_to_registered = parse_range(*x, "/cluster/node_startup/launch_to_registered", c.startup.launch_to_registered);
    }
    if (const Json* x = sr.raw("registered_to_ready")) {
      c.startup.registered_to_ready = parse_range(*x, "/cluster/node_startup/registered_to_ready", c.startup.registered_to_ready);
    }
    if (const Json* x = sr.raw("registered_to_initialized")) {
      c.startup.registered_to_initialized =
          parse_range(*x, "/cluster/node_startup/registered_to_initialized", c.startup.registered_to_initialized);
    }
    sr.finish();
  } else if (c.provisioner == ProvisionerKind::ClusterAutoscaler) {
    c.startup.preset = StartupPreset::LessonClusterAutoscaler;
    apply_startup_preset(c.startup);
  }
  const Json* initial = r.raw("initial_nodes");
  if (const Json* v = r.raw("workloads")) {
    expect_array(*v, "/cluster/workloads", 16);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = "/cluster/workloads/" + std::to_string(i);
      ObjectReader wr((*v)[i], p);
      WorkloadPods w;
      w.name = wr.get_string("name", "web", 63);
      if (!is_dns1123_label(w.name)) {
        throw InputError(p + "/name", quote_for_message(w.name) + " is not a valid Deployment name (lowercase letters, digits and '-', at most 63)");
      }
      for (const WorkloadPods& other : c.workloads) {
        if (other.name == w.name) throw InputError(p + "/name", quote_for_message(w.name) + " names another workload too; names are unique");
      }
      w.replicas = wr.get_int("replicas", 1, 0, 1000);
      w.pod.name = w.name;
      w.pod.owner = PodOwner{PodOwner::Kind::Workload, static_cast<int>(i), w.name, 1, {}};
      w.pod.cpu_milli = 1000;
      w.pod.memory_mib = 2048;
      if (const Json* pod = wr.raw("pod")) w.pod = parse_pod_template(*pod, p + "/pod", w.pod);
      wr.finish();
      c.workloads.push_back(std::move(w));
    }
  }
  const Json* inference_pod = r.raw("inference_pod");
  const Json* inference_pdb = r.raw("inference_pdb");
  c.retry_evicted_requests = r.get_bool("retry_evicted_requests", c.retry_evicted_requests);
  c.spot_interruptions_per_node_hour = r.get_number("spot_interruptions_per_node_hour", 0, 0, 10);
  const Json* insufficient = r.raw("insufficient_capacity");
  const Json* reclaims = r.raw("spot_reclaims");
  if (r.raw("start_time")) c.start_unix_s = parse_utc_time(r.get_string("start_time", "", 64), "/cluster/start_time");
  if (const Json* v = r.raw("kai")) c.kai = parse_kai(*v, "/cluster/kai");
  if (const Json* v = r.raw("kube_scheduler")) c.kube_scheduler = read_kube_scheduler_config(*v, "/cluster/kube_scheduler");
  r.finish();

  // The single-service form's replica pod and budget belong to its one pool.
  if ((inference_pod || inference_pdb) && s.pools_declared) {
    throw InputError(inference_pod ? "/cluster/inference_pod" : "/cluster/inference_pdb",
                     "with \"pools\", give each pool its own \"pod\" and \"pdb\"");
  }
  if (inference_pod && s.pools[0].leader_worker_set) {
    throw InputError("/cluster/inference_pod", "with a leaderWorkerSet, its workerTemplate is the replicas' pod; give one or the other");
  }
  if (inference_pod) s.pools[0].pod = parse_pod_template(*inference_pod, "/cluster/inference_pod", s.pools[0].pod);
  if (inference_pdb) s.pools[0].pdb = parse_pdb(*inference_pdb, "/cluster/inference_pdb");

  if (c.provisioner == ProvisionerKind::Karpenter) {
    if (!nodepools || !nodepools->is_array() || nodepools->empty()) {
      throw InputError("/cluster/nodepools", "provisioner \"karpenter\" needs at least one karpenter.sh/v1 NodePool");
    }
    expect_array(*nodepools, "/cluster/nodepools", 16);
    for (std::size_t i = 0; i < nodepools->size(); ++i) {
      const std::string p = "/cluster/nodepools/" + std::to_string(i);
      NodePool np = parse_nodepool((*nodepools)[i], p);
      for (const NodePool& other : c.nodepools) {
        if (other.name == np.name) {
          throw InputError(p + "/metadata/name", quote_for_message(np.name) + " names another NodePool too; a cluster has one object per name");
        }
      }
      c.nodepools.push_back(std::move(np));
    }
  } else if (nodepools) {
    throw InputError("/cluster/nodepools", "only used with provisioner \"karpenter\"");
  }
  if (c.provisioner == ProvisionerKind::ClusterAutoscaler) {
    if (!ca) throw InputError("/cluster/cluster_autoscaler", "provisioner \"cluster_autoscaler\" needs {\"flags\": {...}, \"nodeGroups\": [...]}");
    c.cluster_autoscaler = parse_cluster_autoscaler(*ca, "/cluster/cluster_autoscaler");
    check_node_groups(c.cluster_autoscaler, c.instance_types, "/cluster/cluster_autoscaler");
  } else if (ca) {
    throw InputError("/cluster/cluster_autoscaler", "only used with provisioner \"cluster_autoscaler\"");
  }

  if (insufficient) {
    // [{instance_type, capacity_type?, zone?, probability}]: the cloud refuses a launch attempt of a matching
    // offering with InsufficientInstanceCapacity at this rate (the first matching entry counts).
    expect_array(*insufficient, "/cluster/insufficient_capacity", 64);
    for (std::size_t i = 0; i < insufficient->size(); ++i) {
      const std::string p = "/cluster/insufficient_capacity/" + std::to_string(i);
      ObjectReader ir((*insufficient)[i], p);
      InsufficientCapacityRate rate;
      if (!ir.has("instance_type")) throw InputError(p + "/instance_type", "required: the instance type whose launches fail, e.g. \"p5.48xlarge\"");
      if (!ir.has("probability")) throw InputError(p + "/probability", "required: the probability, 0 … 1, that one launch attempt fails");
      const std::string type = ir.get_string("instance_type", "");
      if (ir.has("capacity_type")) rate.capacity_type = get_enum(ir, "capacity_type", CapacityType::OnDemand, kCapacityTypes);
      rate.zone = ir.get_string("zone", "", 64);
      rate.probability = ir.get_number("probability", 0, 0, 1);
      // An optional window [from_s, until_s): a shortage that starts and ends (after a spot reclaim).
      rate.from = seconds_to_micros(ir.get_number("from_s", 0, 0, 1e9));
      if (ir.has("until_s")) {
        const double until = ir.get_number("until_s", 0, 0, 1e9);
        if (seconds_to_micros(until) <= rate.from) throw InputError(p + "/until_s", "must be after from_s");
        rate.until = seconds_to_micros(until);
      }
      ir.finish();
      const InstanceType& t = c.instance_types[static_cast<std::size_t>(type_index(c, type, p + "/instance_type"))];
      rate.instance_type = t.name;
      if (!rate.zone.empty() && std::find(t.zones.begin(), t.zones.end(), rate.zone) == t.zones.end()) {
        std::string list;
        for (const auto& z : t.zones) list += (list.empty() ? "" : ", ") + z;
        throw InputError(p + "/zone", quote_for_message(rate.zone) + ": " + t.name + " is offered in " + list);
      }
      c.insufficient_capacity.push_back(std::move(rate));
    }
  }
  if (reclaims) {
    // [{at_s, instance_type?, fraction?}]: the cloud takes back spot capacity at a moment of the run.
    expect_array(*reclaims, "/cluster/spot_reclaims", 64);
    for (std::size_t i = 0; i < reclaims->size(); ++i) {
      const std::string p = "/cluster/spot_reclaims/" + std::to_string(i);
      ObjectReader rr((*reclaims)[i], p);
      if (!rr.has("at_s")) throw InputError(p + "/at_s", "required: when the spot capacity is reclaimed, in seconds from the start");
      SpotReclaim reclaim;
      reclaim.at = seconds_to_micros(rr.get_number("at_s", 0, 0, 1e9));
      if (rr.has("instance_type")) {
        const std::string type = rr.get_string("instance_type", "");
        reclaim.instance_type = c.instance_types[static_cast<std::size_t>(type_index(c, type, p + "/instance_type"))].name;
      }
      reclaim.fraction = rr.get_number("fraction", 1, 0, 1);
      if (reclaim.fraction <= 0) throw InputError(p + "/fraction", "must be above 0 (the share of the spot instances reclaimed, up to 1)");
      rr.finish();
      c.spot_reclaims.push_back(std::move(reclaim));
    }
  }

  // The fixed-delay provisioner has no nodes to start with, interrupt or fill: these would be ignored.
  if (c.provisioner == ProvisionerKind::FixedDelay) {
    for (const char* key : {"initial_nodes", "workloads", "spot_interruptions_per_node_hour", "spot_reclaims", "insufficient_capacity",
                            "node_startup", "kai", "kube_scheduler"}) {
      if (j.contains(key)) {
        throw InputError(std::string("/cluster/") + key,
                         "needs the cluster model: set provisioner to \"karpenter\" or \"cluster_autoscaler\" (or a preset); with "
                         "\"fixed\" each replica gets a node of its own after cold_start.node_provisioning_s and there are no nodes to describe");
      }
    }
  }
  if (initial) {
    expect_array(*initial, "/cluster/initial_nodes", 64);
    for (std::size_t i = 0; i < initial->size(); ++i) {
      const std::string p = "/cluster/initial_nodes/" + std::to_string(i);
      ObjectReader nr((*initial)[i], p);
      InitialNodes n;
      const bool type_given = nr.has("instance_type");
      const std::string type = nr.get_string("instance_type", "p5.48xlarge");
      n.capacity_type = get_enum(nr, "capacity_type", n.capacity_type, kCapacityTypes);
      n.zone = nr.get_string("zone", "");
      n.owner = nr.get_string("owner", "");
      n.count = nr.get_int("count", 1, 0, 256);
      nr.finish();
      // An instance_type left out means p5.48xlarge: an error about it names the entry, not a field never written.
      n.type_index = type_given ? type_index(c, type, p + "/instance_type") : type_index(c, type, p, "gives no instance_type, and the default ");
      if (const InstanceType& t = c.instance_types[static_cast<std::size_t>(n.type_index)];
          !n.zone.empty() && std::find(t.zones.begin(), t.zones.end(), n.zone) == t.zones.end()) {
        std::string list;
        for (const auto& z : t.zones) list += (list.empty() ? "" : ", ") + z;
        throw InputError(p + "/zone", quote_for_message(n.zone) + ": " + t.name + " is offered in " + list);
      }
      if (n.owner.empty()) {
        n.owner = !c.nodepools.empty() ? c.nodepools.front().name
                  : !c.cluster_autoscaler.node_groups.empty() ? c.cluster_autoscaler.node_groups.front().name
                                                              : "";
      }
      const bool known = std::any_of(c.nodepools.begin(), c.nodepools.end(), [&](const NodePool& np) { return np.name == n.owner; }) ||
                         std::any_of(c.cluster_autoscaler.node_groups.begin(), c.cluster_autoscaler.node_groups.end(),
                                     [&](const NodeGroup& g) { return g.name == n.owner; });
      if (!known && c.provisioner != ProvisionerKind::FixedDelay) {
        throw InputError(p + "/owner", "\"" + n.owner.substr(0, 64) + "\" is not a NodePool or node group of this scenario");
      }
      c.initial_nodes.push_back(n);
    }
  }
  // Every pod names a scheduler the lab runs.
  const auto check_scheduler = [](const PodTemplate& pod, const std::string& path) {
    if (!find_scheduler(pod.scheduler_name)) {
      throw InputError(path, "\"" + pod.scheduler_name.substr(0, 64) + "\" is not a scheduler of the lab; known: " + scheduler_names());
    }
  };
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    check_scheduler(s.pools[i].pod, s.pools_declared ? "/pools/" + std::to_string(i) + "/pod/schedulerName" : "/cluster/inference_pod/schedulerName");
  }
  for (std::size_t i = 0; i < c.workloads.size(); ++i) check_scheduler(c.workloads[i].pod, "/cluster/workloads/" + std::to_string(i) + "/pod/schedulerName");
  // A KAI pod's queue (its kai.scheduler/queue label, or default-queue) is a leaf queue of cluster.kai.
  const auto check_queue = [&](const PodTemplate& pod, const std::string& path) {
    if (pod.scheduler_name != kKaiScheduler) return;
    const auto label = pod.labels.find(kKaiQueueLabel);
    const std::string queue = label == pod.labels.end() ? kKaiDefaultQueue : label->second;
    const std::string where = label == pod.labels.end() ? path : path + "/labels/" + json_pointer_token(kKaiQueueLabel);
    const auto q = std::find_if(c.kai.queues.begin(), c.kai.queues.end(), [&](const kai::Queue& x) { return x.name == queue; });
    if (q == c.kai.queues.end()) {
      throw InputError(where, (label == pod.labels.end() ? "has no kai.scheduler/queue label, so KAI puts it in \"" + queue + "\", which"
                                                         : quote_for_message(queue)) +
                                  " is not a queue of /cluster/kai/queues");
    }
    for (const kai::Queue& child : c.kai.queues)
      if (child.parent == queue) throw InputError(where, quote_for_message(queue) + " is a parent queue; only leaf queues hold workloads");
  };
  for (std::size_t i = 0; i < s.pools.size(); ++i) check_queue(s.pools[i].pod, s.pools_declared ? "/pools/" + std::to_string(i) + "/pod" : "/cluster/inference_pod");
  // A KAI group's topology annotations name a Topology of cluster.kai and its levels (kube-scheduler
  // ignores them, as it does in a cluster).
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const PodTemplate& pod = s.pools[i].pod;
    const TopologyConstraint& t = pod.owner.topology;
    if (pod.scheduler_name != kKaiScheduler || t.topology.empty()) continue;
    const std::string where = (s.pools_declared ? "/pools/" + std::to_string(i) : std::string()) + "/leaderWorkerSet/metadata/annotations/";
    const auto topo = std::find_if(c.kai.topologies.begin(), c.kai.topologies.end(), [&](const SnapshotTopology& x) { return x.name == t.topology; });
    if (topo == c.kai.topologies.end()) {
      throw InputError(where + json_pointer_token(kKaiTopologyAnnotation), quote_for_message(t.topology) + " is not a topology of /cluster/kai/topologies");
    }
    for (const auto& [level, key] : {std::make_pair(&t.required_level, kKaiTopologyRequiredAnnotation), std::make_pair(&t.preferred_level, kKaiTopologyPreferredAnnotation)}) {
      if (level->empty() || std::find(topo->levels.begin(), topo->levels.end(), *level) != topo->levels.end()) continue;
      std::string levels;
      for (const std::string& l : topo->levels) levels += (levels.empty() ? "" : ", ") + l;
      throw InputError(where + json_pointer_token(key), quote_for_message(*level) + " is not a level of topology " + quote_for_message(t.topology) + " (" + levels + ")");
    }
  }
  for (std::size_t i = 0; i < c.workloads.size(); ++i) check_queue(c.workloads[i].pod, "/cluster/workloads/" + std::to_string(i) + "/pod");
}

// /cluster/kai: KAI Scheduler's settings (as a snapshot's "kai"), its cycle and its Queue and Topology CRs.
KaiSchedulerConfig parse_kai(const Json& v, const std::string& path) {
  ObjectReader r(v, path);
  r.only_keys({"actions", "kValue", "placementStrategy", "stalenessGracePeriodSeconds", "maxConsolidationPreemptees",
               "useSchedulingSignatures", "schedulePeriodSeconds", "queues", "topologies"});
  KaiSchedulerConfig k;
  read_kai_settings(r, k.settings);
  k.schedule_period_s = r.get_number("schedulePeriodSeconds", 1, 0.1, 60);
  k.queues = default_kai_queues();
  if (const Json* q = r.raw("queues")) {
    k.queues = read_queues(*q, r.child_path("queues"));
    if (k.queues.empty()) throw InputError(r.child_path("queues"), "is empty; leave it out for the default install's default-parent-queue → default-queue");
  }
  if (const Json* t = r.raw("topologies")) k.topologies = read_topologies(*t, r.child_path("topologies"));
  r.finish();
  return k;
}

void parse_workload(const Json& j, WorkloadConfig& wl) {
  ObjectReader wr(j, "/workload");
  wl.preset = get_enum(wr, "preset", wl.preset, kWorkloadPresets);
  apply_shape_preset(wl);  // what the fields below give replaces it
  wl.rate_scale = fields::read(wr, fields::kRateScale, wl.rate_scale);
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
  if (const Json* x = wr.raw("prefixes")) {
    ObjectReader pr(*x, "/workload/prefixes");
    wl.prefixes.count = pr.get_int("count", wl.prefixes.count, 0, 10000);
    if (const Json* t = pr.raw("tokens")) wl.prefixes.tokens = parse_tokens(*t, "/workload/prefixes/tokens", wl.prefixes.tokens);
    wl.prefixes.share = pr.get_number("share", wl.prefixes.share, 0, 1);
    wl.prefixes.zipf_s = pr.get_number("zipf_s", wl.prefixes.zipf_s, 0, 4);
    pr.finish();
  }
  wl.timeout_s = fields::read(wr, fields::kTimeout, wl.timeout_s);
  wl.concurrency = fields::read_int(wr, fields::kConcurrency, wl.concurrency);
  wl.start_spread_s = fields::read(wr, fields::kStartSpread, wl.start_spread_s);
  if (const Json* m = wr.raw("models")) {
    expect_array(*m, "/workload/models", Limits::kMaxPools);
    for (std::size_t i = 0; i < m->size(); ++i) {
      const std::string p = "/workload/models/" + std::to_string(i);
      ObjectReader mr((*m)[i], p);
      ModelShare share;
      share.model = mr.get_string("model", "", 253);
      share.share = mr.get_number("share", share.share, 0, 1e6);
      mr.finish();
      if (share.model.empty()) throw InputError(p + "/model", "is required: a pool's model");
      wl.models.push_back(share);
    }
  }
  wr.finish();
  if (wl.closed_loop()) {
    // The clients' own completions time a closed loop: an arrival rate would contradict them.
    for (const char* open_loop : {"preset", "rate_scale", "phases"}) {
      if (j.contains(open_loop)) {
        throw InputError(std::string("/workload/") + open_loop,
                         "sets the open-loop arrival rate; with concurrency " + std::to_string(wl.concurrency) +
                             " each client sends its next request when its previous one completes or is dropped. Remove " +
                             open_loop + ", or set concurrency to 0 for Poisson arrivals");
      }
    }
    return;
  }
  if (wl.start_spread_s > 0) {
    throw InputError("/workload/start_spread_s", "spreads the first requests of closed-loop clients; it needs workload.concurrency above 0");
  }
  if (wl.preset == WorkloadPreset::Custom && wl.phases.empty()) {
    throw InputError("/workload/phases", "preset \"custom\" needs at least one phase");
  }
  if (wl.preset != WorkloadPreset::Custom && !wl.phases.empty()) {
    throw InputError("/workload/phases", "phases are only used with preset \"custom\"");
  }
}

// The pools and the workload's models must name each other: every model a pool serves, every pool a
// model. A model is served by aggregated pools, or by prefill and decode pools (one of each at least);
// several pools of one model in one role are its variants (e.g. on different GPUs).
void check_models(const Scenario& s) {
  if (!s.pools_declared) {
    if (!s.workload.models.empty()) throw InputError("/workload/models", "is only used with \"pools\" (each request names a pool's model)");
    return;
  }
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const std::string at = "/pools/" + std::to_string(i);
    for (std::size_t k = 0; k < i; ++k) {
      if (s.pools[k].name == s.pools[i].name) throw InputError(at + "/name", "\"" + s.pools[i].name + "\" appears twice");
      if (s.pools[k].model != s.pools[i].model) continue;
      const bool agg_i = s.pools[i].role == PoolRole::Aggregated, agg_k = s.pools[k].role == PoolRole::Aggregated;
      if (agg_i != agg_k) {
        throw InputError(at + "/role", "is \"" + std::string(name_of(s.pools[i].role, kPoolRoles)) + "\" but pool \"" + s.pools[k].name +
                                           "\" serves model \"" + s.pools[i].model + "\" as \"" + name_of(s.pools[k].role, kPoolRoles) +
                                           "\": a model is served aggregated, or disaggregated by prefill and decode pools, not both");
      }
    }
  }
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const PoolConfig& p = s.pools[i];
    if (p.role == PoolRole::Aggregated) continue;
    const PoolRole other = p.role == PoolRole::Prefill ? PoolRole::Decode : PoolRole::Prefill;
    if (pools_serving(s, p.model, other).empty()) {
      throw InputError("/pools/" + std::to_string(i) + "/role", "is \"" + std::string(name_of(p.role, kPoolRoles)) + "\" but no pool serves model \"" +
                                                                    p.model + "\" as \"" + name_of(other, kPoolRoles) +
                                                                    "\": a disaggregated model needs a prefill pool and a decode pool");
    }
    if (p.leader_worker_set) {
      throw InputError("/pools/" + std::to_string(i) + "/leaderWorkerSet",
                       "serves a " + std::string(name_of(p.role, kPoolRoles)) + " pool: multi-node prefill or decode groups are not modelled; use a Deployment");
    }
  }
  std::vector<std::string> models;
  for (const PoolConfig& p : s.pools)
    if (std::find(models.begin(), models.end(), p.model) == models.end()) models.push_back(p.model);
  if (models.size() > 1 && s.workload.models.empty()) {
    throw InputError("/workload/models", "with several models, say which model each request asks for: [{\"model\": ..., \"share\": ...}]");
  }
  double total = 0;
  for (std::size_t i = 0; i < s.workload.models.size(); ++i) {
    const ModelShare& m = s.workload.models[i];
    total += m.share;
    if (std::none_of(s.pools.begin(), s.pools.end(), [&](const PoolConfig& p) { return p.model == m.model; })) {
      throw InputError("/workload/models/" + std::to_string(i) + "/model", "\"" + m.model.substr(0, 64) + "\" is served by no pool");
    }
  }
  if (!s.workload.models.empty() && !(total > 0)) throw InputError("/workload/models", "the shares add up to 0: no request would be sent");
}

// The pools with strategy "planner" of one model form its planner's group; those with strategy "wva"
// of one model and role form a WVA's. The settings come from the one pool that gives them.
void build_service_groups(Scenario& s) {
  const auto path_of = [&](std::size_t i) { return s.pools_declared ? "/pools/" + std::to_string(i) + "/autoscaler" : std::string("/autoscaler"); };
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const PoolConfig& p = s.pools[i];
    const ScalerStrategy k = p.autoscaler.strategy;
    if (k != ScalerStrategy::Planner && k != ScalerStrategy::Wva) continue;
    const auto same_group = [&](const ServiceGroupConfig& g) {
      const PoolConfig& first = s.pools[static_cast<std::size_t>(g.pools.front())];
      return first.model == p.model && first.autoscaler.strategy == k && (k == ScalerStrategy::Planner || first.role == p.role);
    };
    auto g = std::find_if(s.service_groups.begin(), s.service_groups.end(), same_group);
    if (g == s.service_groups.end()) {
      ServiceGroupConfig fresh;
      fresh.model = p.model;
      if (k == ScalerStrategy::Planner) fresh.config = dynamo::PlannerConfig{};
      else fresh.config = wva::WvaConfig{};
      s.service_groups.push_back(std::move(fresh));
      g = std::prev(s.service_groups.end());
    } else if (p.autoscaler.service && std::any_of(g->pools.begin(), g->pools.end(), [&](int o) { return s.pools[static_cast<std::size_t>(o)].autoscaler.service.has_value(); })) {
      throw InputError(path_of(i) + (k == ScalerStrategy::Planner ? "/planner" : "/wva"),
                       "is given on another pool of model \"" + p.model + "\" too; one " + (k == ScalerStrategy::Planner ? "planner" : "WVA") +
                           " decides for the model's pools: give its settings once");
    }
    if (p.autoscaler.service) g->config = *p.autoscaler.service;
    g->pools.push_back(static_cast<int>(i));
  }
  for (ServiceGroupConfig& g : s.service_groups) {
    if (auto* planner = std::get_if<dynamo::PlannerConfig>(&g.config)) {
      bool prefill = false, decode = false, agg = false;
      for (const int i : g.pools) {
        const PoolRole r = s.pools[static_cast<std::size_t>(i)].role;
        prefill = prefill || r == PoolRole::Prefill;
        decode = decode || r == PoolRole::Decode;
        agg = agg || r == PoolRole::Aggregated;
        if (std::count_if(g.pools.begin(), g.pools.end(), [&](int o) { return s.pools[static_cast<std::size_t>(o)].role == r; }) > 1) {
          throw InputError(path_of(static_cast<std::size_t>(i)) + "/strategy",
                           "is \"planner\" on two pools of model \"" + g.model + "\" in one role: the planner scales one pool per worker type (its variants are WVA's)");
        }
      }
      planner->mode = agg ? dynamo::PlannerMode::Agg : prefill && decode ? dynamo::PlannerMode::Disagg : prefill ? dynamo::PlannerMode::Prefill
                                                                                                        : dynamo::PlannerMode::Decode;
    } else {
      // Each variant's HPA follows WVA's published desired replicas with the group's settings.
      const wva::WvaConfig& w = std::get<wva::WvaConfig>(g.config);
      for (const int i : g.pools) {
        AutoscalerConfig& a = s.pools[static_cast<std::size_t>(i)].autoscaler;
        const std::int32_t lo = a.hpa->min_replicas.value_or(1), hi = a.hpa->max_replicas;
        a.hpa = wva_hpa_spec(w, s.pools[static_cast<std::size_t>(i)].name);
        a.hpa->min_replicas = lo;
        a.hpa->max_replicas = hi;
      }
    }
  }
}

}  // namespace

std::vector<Phase> effective_phases(const WorkloadConfig& w) {
  std::vector<Phase> phases;
  switch (w.preset) {
    case WorkloadPreset::LessonBurst:
      // The lesson's profile: quiet 10 min, spike 20 min, tail 30 min (lesson.md, toy simulator).
      phases = {{600, 0.05}, {1200, 0.4}, {1800, 0.12}};
      break;
    case WorkloadPreset::Steady: phases = {{3600, 0.2}}; break;
    // A burst of retrieval-augmented questions: quiet 15 min, 15 min at eight times the rate, a tail.
    case WorkloadPreset::RagBurst: phases = {{900, 0.1}, {900, 0.8}, {1800, 0.2}}; break;
    // Reasoning traffic builds up and falls back over the hour.
    case WorkloadPreset::Reasoning: phases = {{1200, 0.05}, {1200, 0.25}, {1200, 0.1}}; break;
    case WorkloadPreset::ChatSystemPrompt: phases = {{3600, 0.4}}; break;
    case WorkloadPreset::Custom: phases = w.phases; break;
  }
  for (auto& p : phases) p.rate_rps *= w.rate_scale;
  return phases;
}

void apply_shape_preset(WorkloadConfig& w) {
  using K = TokenDistributionKind;
  switch (w.preset) {
    case WorkloadPreset::RagBurst:
      // Each question opens with one of 20 retrieved documents (about 4,000 tokens; the popular ones
      // asked about most), then the question and instructions; a short answer: prefill-heavy.
      w.prompt_tokens = {K::Lognormal, 1500, 0.5, 32, 8192};
      w.output_tokens = {K::Lognormal, 200, 0.5, 8, 1024};
      w.prefixes = {20, {K::Lognormal, 4000, 0.3, 512, 16384}, 0.9, 1.1};
      break;
    case WorkloadPreset::Reasoning:
      // A short problem, a long chain of thought: decode-heavy.
      w.prompt_tokens = {K::Lognormal, 400, 0.5, 16, 4096};
      w.output_tokens = {K::Lognormal, 2500, 0.6, 64, 16384};
      w.prefixes = {};
      break;
    case WorkloadPreset::ChatSystemPrompt:
      // Three products' system prompts of 1,500 tokens, each chat turn after one of them.
      w.prompt_tokens = {K::Lognormal, 300, 0.6, 8, 4096};
      w.output_tokens = {K::Lognormal, 300, 0.5, 8, 4096};
      w.prefixes = {3, {K::Fixed, 1500, 0, 1, 65536}, 1.0, 0};
      break;
    default: break;
  }
}

namespace {

std::string seconds_text(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// "seeded" (each target's own phase, drawn from the scenario seed) or a number of seconds in [0, period).
std::optional<double> parse_offset(ObjectReader& r, const char* key, double period, const char* period_key) {
  const Json* v = r.raw(key);
  if (!v || v->is_null()) return std::nullopt;
  const std::string path = r.child_path(key);
  if (v->is_string()) {
    expect_enum(*v, path, {"seeded"}, "or a number of seconds from 0 up to " + std::string(period_key));
    return std::nullopt;
  }
  if (!v->is_number()) throw InputError(path, "expected \"seeded\" or a number of seconds, found " + type_name(*v));
  const double x = expect_number(*v, path, 0, 600);
  if (x >= period) {
    throw InputError(path, "is " + seconds_text(x) + " s, not below " + period_key + " (" + seconds_text(period) +
                               " s): a phase lies within one period");
  }
  return x;
}

// router "epp": an EndpointPickerConfig (inference.networking.x-k8s.io/v1alpha1; gateway-api-inference-
// extension apix/config/v1alpha1/endpointpickerconfig_types.go, pkg/epp/config/loader/configloader.go):
// the plugins by type (name defaults to the type), each scheduling profile's plugins by pluginRef with
// a scorer's weight (default 1). The lab runs the queue, KV-cache-utilization and prefix-cache scorers
// and the max-score picker; profile handlers and the role filters are accepted (the pools' roles pick
// the candidates); a profile named "prefill" or "decode" is used for that role, else the first.
EppConfig parse_epp(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  if (const Json* v = r.raw("apiVersion")) expect_enum(*v, path + "/apiVersion", {"inference.networking.x-k8s.io/v1alpha1"});
  if (const Json* v = r.raw("kind")) expect_enum(*v, path + "/kind", {"EndpointPickerConfig"});
  if (const Json* v = r.raw("featureGates")) expect_array(*v, path + "/featureGates", 32);
  const Json* plugins = r.raw("plugins");
  const Json* profiles = r.raw("schedulingProfiles");
  if (!plugins) throw InputError(path + "/plugins", "is required: the plugins to instantiate, e.g. [{\"type\": \"queue-scorer\"}, {\"type\": \"max-score-picker\"}]");
  if (!profiles) throw InputError(path + "/schedulingProfiles", "is required: [{\"name\": \"default\", \"plugins\": [{\"pluginRef\": \"queue-scorer\", \"weight\": 2}, ...]}]");
  r.finish();
  EppConfig c;
  static const std::vector<std::string> kScorers = {"queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer"};
  static const std::vector<std::string> kOthers = {"max-score-picker", "single-profile-handler", "pd-profile-handler", "prefill-filter", "decode-filter",
                                                   "approx-prefix-cache-producer"};
  std::map<std::string, std::string> type_of;  // name → type
  expect_array(*plugins, path + "/plugins", 64);
  for (std::size_t i = 0; i < plugins->size(); ++i) {
    const std::string p = path + "/plugins/" + std::to_string(i);
    ObjectReader pr((*plugins)[i], p);
    const std::string type = pr.require_string("type", "the plugin's type", 128);
    const bool known = std::find(kScorers.begin(), kScorers.end(), type) != kScorers.end() || std::find(kOthers.begin(), kOthers.end(), type) != kOthers.end();
    if (!known) {
      throw InputError(p + "/type", quote_for_message(type) + " is not a plugin the lab runs: queue-scorer, kv-cache-utilization-scorer, prefix-cache-scorer, "
                                                              "max-score-picker (and single-profile-handler, pd-profile-handler, prefill-filter, decode-filter, "
                                                              "approx-prefix-cache-producer, accepted)");
    }
    const std::string name = pr.get_string("name", type, 128);
    if (!type_of.emplace(name, type).second) throw InputError(p + "/name", quote_for_message(name) + " names another plugin too");
    if (const Json* params = pr.raw("parameters"); params && !params->is_null()) {
      if (type != "prefix-cache-scorer" && type != "approx-prefix-cache-producer") {
        expect_object(*params, p + "/parameters");
      } else {
        // approximateprefix/types.go config
        ObjectReader qr(*params, p + "/parameters");
        c.prefix.auto_tune = qr.get_bool("autoTune", c.prefix.auto_tune);
        c.prefix.block_size_tokens = static_cast<int>(qr.get_int("blockSizeTokens", c.prefix.block_size_tokens, 1, 4096));
        c.prefix.max_prefix_blocks = static_cast<int>(qr.get_int("maxPrefixBlocksToMatch", c.prefix.max_prefix_blocks, 1, 65536));
        if (const auto t = qr.get_optional_int("maxPrefixTokensToMatch", 0, 1 << 24); t && *t > 0)
          c.prefix.max_prefix_blocks = std::max(1, static_cast<int>(*t / c.prefix.block_size_tokens));
        c.prefix.lru_capacity_per_server = qr.get_int("lruCapacityPerServer", c.prefix.lru_capacity_per_server, 1, 100000000);
        if (qr.raw("blockSize")) {
          throw InputError(p + "/parameters/blockSize", "is deprecated (a size in characters); use blockSizeTokens");
        }
        qr.finish();
      }
    }
    pr.finish();
  }
  expect_array(*profiles, path + "/schedulingProfiles", 8);
  if (profiles->empty()) throw InputError(path + "/schedulingProfiles", "is empty; give at least one profile");
  c.profiles.clear();
  for (std::size_t i = 0; i < profiles->size(); ++i) {
    const std::string p = path + "/schedulingProfiles/" + std::to_string(i);
    ObjectReader pr((*profiles)[i], p);
    EppProfile prof;
    prof.name = pr.require_string("name", "the profile's name", 128);
    prof.queue_weight = prof.kv_cache_weight = prof.prefix_cache_weight = 0;
    const Json* refs = pr.raw("plugins");
    if (!refs) throw InputError(p + "/plugins", "is required: the profile's plugins by pluginRef");
    expect_array(*refs, p + "/plugins", 64);
    for (std::size_t k = 0; k < refs->size(); ++k) {
      const std::string q = p + "/plugins/" + std::to_string(k);
      ObjectReader qr((*refs)[k], q);
      const std::string ref = qr.require_string("pluginRef", "a plugin's name", 128);
      const auto it = type_of.find(ref);
      if (it == type_of.end()) throw InputError(q + "/pluginRef", quote_for_message(ref) + " names no plugin of the plugins list");
      const double weight = qr.get_number("weight", 1.0, 0, 1000);  // loader/defaults.go DefaultScorerWeight
      qr.finish();
      if (it->second == "queue-scorer") prof.queue_weight += weight;
      else if (it->second == "kv-cache-utilization-scorer") prof.kv_cache_weight += weight;
      else if (it->second == "prefix-cache-scorer") prof.prefix_cache_weight += weight;
    }
    pr.finish();
    for (const EppProfile& other : c.profiles)
      if (other.name == prof.name) throw InputError(p + "/name", quote_for_message(prof.name) + " names another profile too");
    c.profiles.push_back(prof);
  }
  return c;
}

KvTransferConfig parse_kv_transfer(const Json& j) {
  KvTransferConfig k;
  ObjectReader r(j, "/kv_transfer");
  k.nvlink_gb_per_s = r.get_number("nvlink_gb_per_s", k.nvlink_gb_per_s, 1, 10000);
  k.network_gb_per_s = r.get_number("network_gb_per_s", k.network_gb_per_s, 0, 10000);
  k.latency_s = r.get_number("latency_s", k.latency_s, 0, 10);
  r.finish();
  return k;
}

MetricsConfig parse_metrics(const Json& j) {
  MetricsConfig m;
  ObjectReader mr(j, "/metrics");
  mr.only_keys({"scrape_interval_s", "dcgm_sample_period_s", "ttft_window_s", "pipeline", "dcgm_collect_interval_s", "scrape_offset_s",
                "dcgm_collect_offset_s", "query_delay_s"});
  m.scrape_interval_s = fields::read(mr, fields::kScrapeInterval, m.scrape_interval_s);
  m.dcgm_sample_period_s = mr.get_number("dcgm_sample_period_s", m.dcgm_sample_period_s, 0.1, 60);
  m.ttft_window_s = mr.get_number("ttft_window_s", m.ttft_window_s, 1, 3600);
  m.pipeline = get_enum(mr, "pipeline", m.pipeline, kMetricsPipelines);
  if (m.dcgm_sample_period_s > m.scrape_interval_s) {
    throw InputError("/metrics/dcgm_sample_period_s", "must not exceed scrape_interval_s");
  }
  if (m.pipeline == MetricsPipeline::Ideal) {
    // The ideal pipeline has no collections, phases or delay: a field of the realistic one would be ignored.
    for (const char* key : {"dcgm_collect_interval_s", "scrape_offset_s", "dcgm_collect_offset_s", "query_delay_s"}) {
      if (mr.has(key)) {
        throw InputError(mr.child_path(key), "has no effect with metrics.pipeline \"ideal\" (every replica is read at each scrape "
                                             "and a sync sees it at once); remove it or use pipeline \"realistic\"");
      }
    }
    mr.finish();
    return m;
  }
  m.dcgm_collect_interval_s = mr.get_number("dcgm_collect_interval_s", m.dcgm_collect_interval_s, 0.1, 600);
  if (m.dcgm_sample_period_s > m.dcgm_collect_interval_s) {
    throw InputError("/metrics/dcgm_sample_period_s", "must not exceed dcgm_collect_interval_s (" + seconds_text(m.dcgm_collect_interval_s) +
                                                          " s): each collection reads the sample period that ends at it");
  }
  m.scrape_offset_s = parse_offset(mr, "scrape_offset_s", m.scrape_interval_s, "scrape_interval_s");
  m.dcgm_collect_offset_s = parse_offset(mr, "dcgm_collect_offset_s", m.dcgm_collect_interval_s, "dcgm_collect_interval_s");
  m.query_delay_s = mr.get_number("query_delay_s", m.query_delay_s, 0, 300);
  mr.finish();
  return m;
}

}  // namespace

Scenario parse_scenario(const Json& doc) {
  Scenario s;
  ObjectReader r(doc, "");
  s.seed = static_cast<std::uint64_t>(fields::read_int(r, fields::kSeed, static_cast<std::int64_t>(s.seed)));
  s.duration_s = r.get_number("duration_s", s.duration_s, 1, Limits::kMaxDurationS);
  s.router = get_enum(r, "router", s.router, kRouters);
  if (const Json* e = r.raw("epp")) {
    if (s.router != Router::Epp) throw InputError("/epp", "configures the endpoint picker; it is used with router \"epp\"");
    s.epp = parse_epp(*e, "/epp");
  }
  if (const Json* k = r.raw("kv_transfer")) s.kv_transfer = parse_kv_transfer(*k);
  if (const Json* w = r.raw("workload")) parse_workload(*w, s.workload);
  if (const Json* c = r.raw("cold_start")) {
    ObjectReader cr(*c, "/cold_start");
    parse_cold_start(cr, s.cold_start);
    cr.finish();
  }
  const Json* engine = r.raw("engine");
  const Json* autoscaler = r.raw("autoscaler");
  if (const Json* pools = r.raw("pools")) {
    s.pools_declared = true;
    expect_array(*pools, "/pools", Limits::kMaxPools);
    if (pools->empty()) throw InputError("/pools", "needs at least one pool");
    if (engine || autoscaler) {
      throw InputError(engine ? "/engine" : "/autoscaler", "with \"pools\", give each pool its own \"engine\" and \"autoscaler\"");
    }
    for (std::size_t i = 0; i < pools->size(); ++i) s.pools.push_back(parse_pool((*pools)[i], "/pools/" + std::to_string(i), static_cast<int>(i), s));
  } else {
    // The single-service form: one aggregated pool named vllm, from the top-level engine and autoscaler.
    PoolConfig pool;
    pool.model_load_s = s.cold_start.model_load_s;
    pool.image_pull_s = s.cold_start.image_pull_s;
    pool.warmup_s = s.cold_start.warmup_s;
    if (engine) pool.engine = parse_engine(*engine, "/engine", pool.engine);
    pool.autoscaler = parse_autoscaler(autoscaler ? *autoscaler : Json::object(), "/autoscaler", pool.name);
    pool.pod = default_replica_pod(pool, 0);
    if (const Json* l = r.raw("leaderWorkerSet")) parse_leader_worker_set(*l, "/leaderWorkerSet", 0, pool);
    s.pools.push_back(std::move(pool));
  }
  if (const Json* m = r.raw("metrics")) s.metrics = parse_metrics(*m);
  if (const Json* c = r.raw("cluster")) {
    const bool preset = c->is_object() && c->contains("preset") && (*c)["preset"] != "none";
    try {
      parse_cluster(expand_cluster_preset(*c), s);
    } catch (const InputError& e) {
      // A field the preset wrote is not the learner's: point at what they wrote (instance_types).
      const std::string& at = e.path();
      if (preset && (at.rfind("/cluster/cluster_autoscaler/", 0) == 0 || at.rfind("/cluster/nodepools/", 0) == 0) && c->contains("instance_types")) {
        throw InputError("/cluster/instance_types", "does not fit cluster.preset " + quote_for_message((*c)["preset"].dump()) +
                                                        ", whose configuration reads it: " + e.message() +
                                                        " (add that type to instance_types, or leave instance_types out for the whole catalogue)");
      }
      throw;
    }
  } else {
    s.cluster.instance_types = default_instance_types();
  }
  if (const Json* o = r.raw("slo")) {
    ObjectReader sr(*o, "/slo");
    s.slo.ttft_s = fields::read(sr, fields::kSloTtft, s.slo.ttft_s);
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
    s.output.cluster_series = orr.get_bool("cluster_series", s.output.cluster_series);
    s.output.hpa_syncs = get_enum(orr, "hpa_syncs", s.output.hpa_syncs, kHpaSyncLogs);
    orr.finish();
  }
  r.finish();
  check_models(s);
  build_service_groups(s);

  // Bound the work: the expected number of arrivals must stay under the limit.
  const double expected = expected_arrivals(s);
  if (expected > double(Limits::kMaxRequests)) {
    throw InputError(s.workload.closed_loop() ? "/workload/concurrency" : "/workload",
                     "would generate about " + std::to_string(static_cast<long long>(expected)) + " requests; at most " +
                         std::to_string(Limits::kMaxRequests) + " are allowed (lower " +
                         (s.workload.closed_loop() ? "concurrency" : "rate_scale") + " or duration_s)");
  }
  return s;
}

namespace {

// The mean of what a token distribution draws, near enough for an estimate.
double mean_tokens(const TokenDistribution& d) {
  if (d.kind == TokenDistributionKind::Uniform) return (static_cast<double>(d.min) + static_cast<double>(d.max)) / 2;
  return std::clamp(d.mean, static_cast<double>(d.min), static_cast<double>(d.max));
}

// Requests/s a closed loop can send at most. A client sends again only when its request is back, and
// no request is back sooner than its batch-1 roofline (the prompt's compute, then one step per
// output token streaming the weights) or the client's timeout; nor can a pool's replicas (at most
// its max_replicas) finish more than their compute (every prompt token) or their batch (KV room or
// max_num_seqs sequences, one step per output token) allow, plus what the clients give up on. An
// upper bound rather than a forecast: a closed loop at saturation sends less.
double closed_loop_rate(const Scenario& s) {
  const WorkloadConfig& w = s.workload;
  const double clients = static_cast<double>(w.concurrency);
  const PrefixConfig& px = w.prefixes;
  const double whole_prompt = mean_tokens(w.prompt_tokens) + (px.count > 0 ? px.share * mean_tokens(px.tokens) : 0.0);
  const std::vector<double> share = pool_request_shares(s);
  double cycle_s = 0, rate = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    if (!(share[i] > 0)) continue;
    const PoolConfig& pool = s.pools[i];
    // A prefill pool computes the prompt and one token, a decode pool the output (its prompt arrives).
    const double prompt = pool.role == PoolRole::Decode ? 1.0 : whole_prompt;
    const double output = pool.role == PoolRole::Prefill ? 1.0 : mean_tokens(w.output_tokens);
    EngineConfig e;
    e.profile = engine_profile(pool.engine.profile);
    e.max_num_seqs = static_cast<int>(pool.engine.max_num_seqs);
    e.gpu_memory_utilization = pool.engine.gpu_memory_utilization;
    const EngineProfile& p = e.profile;
    const double decode_step_s = p.step_base_s + p.step_weights_s;
    const double e2e_s = p.step_base_s + prompt * p.step_token_s + std::max(0.0, output - 1) * decode_step_s;
    cycle_s += share[i] * std::min(w.timeout_s, e2e_s);
    const double kv_tokens = static_cast<double>(std::max<std::int64_t>(Engine::compute_num_kv_blocks(e), 1)) * e.block_size;
    const double batch = std::clamp(kv_tokens / (prompt + output), 1.0, static_cast<double>(e.max_num_seqs));
    const double per_request_s = std::max(prompt * p.step_token_s, output * decode_step_s / batch);
    const AutoscalerConfig& a = pool.autoscaler;
    const double replicas = static_cast<double>(std::max<std::int64_t>(a.hpa ? a.hpa->max_replicas : a.replicas, 0));
    rate = std::min(rate, (replicas / per_request_s + clients / w.timeout_s) / share[i]);
  }
  return cycle_s > 0 ? std::min(clients / cycle_s, rate) : 0;
}

}  // namespace

std::vector<int> pools_serving(const Scenario& s, const std::string& model, PoolRole role) {
  std::vector<int> out;
  for (std::size_t i = 0; i < s.pools.size(); ++i)
    if (s.pools[i].model == model && s.pools[i].role == role) out.push_back(static_cast<int>(i));
  return out;
}

bool disaggregated(const Scenario& s, const std::string& model) { return !pools_serving(s, model, PoolRole::Prefill).empty(); }

std::vector<double> pool_request_shares(const Scenario& s) {
  std::vector<double> share(s.pools.size(), 0.0);
  const WorkloadConfig& w = s.workload;
  double total = 0;
  for (const ModelShare& m : w.models) total += m.share;
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const PoolConfig& p = s.pools[i];
    double model_share = 0;
    if (w.models.empty()) {
      model_share = p.model == s.pools.front().model ? 1 : 0;  // one model: every request
    } else {
      for (const ModelShare& m : w.models)
        if (m.model == p.model && total > 0) model_share += m.share / total;
    }
    share[i] = model_share / static_cast<double>(pools_serving(s, p.model, p.role).size());
  }
  return share;
}

double expected_arrivals(const Scenario& s) {
  if (s.workload.closed_loop()) return closed_loop_rate(s) * s.duration_s;
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

}  // namespace gpuscale
