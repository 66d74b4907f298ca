// The plan designer: a staged search over candidate plans, each simulated on the described workload.
// Stage 1 picks the replica autoscaler and the warm pool on the cheapest compatible instance type,
// stage 2 prices that choice on every compatible instance and capacity type, and a last run tries the
// winner against a larger burst. The lesson's rules (docs/plan.md) are enforced with their reasons;
// where a rejected choice did better in the simulation, the plan says so with the run that shows it.
#include "plan/plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "autoscaling/hpa_json.hpp"
#include "cluster/instance_types.hpp"
#include "gpuscale/errors.hpp"
#include "io/json_reader.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scenario/scenario.hpp"
#include "scheduling/snapshot.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::plan {

namespace {

constexpr const char* kPoolName = "gpu";
constexpr const char* kDeployment = "vllm";
constexpr const char* kModel = "model";  // the served model's name in a disaggregated run

// The replica autoscalers a plan may use and the targets it tries for each (the P99 TTFT rule's target
// is a share of the SLO, so that it acts before the SLO is missed). The duty cycle is simulated only to
// check the rule that rejects it.
struct Signal {
  const char* id;
  std::vector<double> targets;
  bool target_is_slo_share = false;
};
const std::vector<Signal>& signals() {
  static const std::vector<Signal> s = {{"queue_depth", {2, 5}}, {"kv_cache", {0.5, 0.7}}, {"ttft_p99", {0.5}, true}, {"goodput", {0.05}}, {"gpu_util", {80}}};
  return s;
}

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<std::string> read_strings(ObjectReader& r, const char* key, std::vector<std::string> fallback, std::size_t max_items) {
  const Json* v = r.raw(key);
  if (!v) return fallback;
  const std::string path = r.child_path(key);
  if (!v->is_array() || v->empty()) throw InputError(path, "expected a non-empty array of strings");
  if (v->size() > max_items) throw InputError(path, "at most " + std::to_string(max_items) + " entries");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& s = (*v)[i];
    if (!s.is_string() || s.get_ref<const std::string&>().empty() || s.get_ref<const std::string&>().size() > 64) {
      throw InputError(path + "/" + std::to_string(i), "expected a non-empty string of at most 64 characters");
    }
    if (std::find(out.begin(), out.end(), s.get<std::string>()) != out.end()) {
      throw InputError(path + "/" + std::to_string(i), "\"" + s.get<std::string>() + "\" is listed twice");
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

// One candidate plan and what its run showed.
struct Candidate {
  std::string instance_type, capacity_type, signal;
  std::string engine_profile;  // the model at the replica's tensor-parallel degree
  double target = 0;  // the autoscaler's target (its metric's unit)
  int warm = 1;
  int max_replicas = 1;
  // Disaggregated serving: the fields above are the prefill pool's, these the decode pool's (the same
  // replica ceiling); decode_signal is empty for an aggregated plan.
  std::string decode_signal;
  double decode_target = 0;
  int decode_warm = 1;
  // KAI: the inference queue's GPU quota (0: every GPU its replicas can reach); the training queue is
  // guaranteed what is left of the pool.
  int inference_quota_gpus = 0;
  bool simulated = false;
  double slo_attainment = 0, ttft_p99_s = 0, cost_usd = 0, node_cost_usd_per_hour = 0, time_to_ready_s = 0;
  std::int64_t num_requests = 0, num_dropped = 0, peak_replicas = 0, nodes_launched = 0;
  bool meets_slo = false;
  std::vector<std::string> rejected;  // why it is not the plan (empty: acceptable)
};

struct Shape {
  const InstanceType* type = nullptr;
  int gpus_per_replica = 0;
  int pods_per_replica = 1;  // > 1: a LeaderWorkerSet of that size (PP across nodes)
  int gpus_per_pod = 0;
  int replicas_per_node = 0;
};

Shape shape_of(const std::string& profile, const InstanceType& type) {
  Shape s;
  s.type = &type;
  const EngineProfile p = engine_profile(profile);
  s.gpus_per_replica = p.gpus();
  if (s.gpus_per_replica <= type.gpus) {
    s.gpus_per_pod = s.gpus_per_replica;
    s.replicas_per_node = type.gpus / s.gpus_per_replica;
  } else {
    // Multi-node: a pod per pipeline stage (TP inside the node), served as a LeaderWorkerSet.
    s.pods_per_replica = p.pipeline_parallel;
    s.gpus_per_pod = p.tensor_parallel;
  }
  return s;
}

int max_replicas_for(const PlanInput& in, const Shape& s) {
  const int gpus = in.max_nodes * s.type->gpus;
  return std::max(1, gpus / s.gpus_per_replica);
}

// The topology's placement domains: its racks (as even as the nodes allow), each split into NVLink
// domains of nvlink_domain_nodes nodes. Without racks or multi-node NVLink: one domain, the cluster.
struct Domain {
  std::string pool;    // its NodePool's name
  std::string rack;    // the node label "rack" ("" without racks)
  std::string clique;  // the node label "nvidia.com/gpu.clique" ("" without multi-node NVLink)
  int nodes = 0;
};
std::vector<Domain> domains_of(const PlanInput& in) {
  if (in.racks == 0 && in.nvlink_domain_nodes <= 1) return {{kPoolName, "", "", in.max_nodes}};
  std::vector<Domain> out;
  const int racks = std::max(1, in.racks);
  for (int r = 0; r < racks; ++r) {
    const int rack_nodes = in.max_nodes / racks + (r < in.max_nodes % racks ? 1 : 0);
    const std::string rack = in.racks > 0 ? "rack-" + std::to_string(r + 1) : "";
    const int per = in.nvlink_domain_nodes > 1 ? in.nvlink_domain_nodes : rack_nodes;  // the rack is one pool without NVLink domains
    for (int k = 0, left = rack_nodes; left > 0; ++k, left -= per) {
      Domain d;
      d.rack = rack;
      if (in.nvlink_domain_nodes > 1) d.clique = (rack.empty() ? std::string("nvl") : rack) + "." + std::to_string(k + 1);
      d.pool = std::string(kPoolName) + "-" + (d.clique.empty() ? rack : d.clique);
      std::replace(d.pool.begin(), d.pool.end(), '.', '-');
      d.nodes = std::min(per, left);
      out.push_back(d);
    }
  }
  return out;
}

// A NodePool per placement domain, its nodes labelled with the domain: Karpenter labels a node with its
// NodePool's template labels, and fills the pools in weight order, then by name.
Json nodepools_json(const PlanInput& in, const Candidate& c, const Shape& s) {
  Json requirements = Json::array({{{"key", "node.kubernetes.io/instance-type"}, {"operator", "In"}, {"values", {c.instance_type}}},
                                   {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {c.capacity_type}}}});
  if (!in.zones.empty()) requirements.push_back({{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", in.zones}});
  Json pools = Json::array();
  for (const Domain& d : domains_of(in)) {
    Json labels = {{"workload", "llm-inference"}};
    if (!d.rack.empty()) labels["rack"] = d.rack;
    if (!d.clique.empty()) labels["nvidia.com/gpu.clique"] = d.clique;
    pools.push_back({{"apiVersion", "karpenter.sh/v1"},
                     {"kind", "NodePool"},
                     {"metadata", {{"name", d.pool}}},
                     {"spec",
                      {{"limits", {{"nvidia.com/gpu", std::to_string(d.nodes * s.type->gpus)}}},
                       {"template",
                        {{"metadata", {{"labels", labels}}},
                         {"spec",
                          {{"nodeClassRef", {{"group", "karpenter.k8s.aws"}, {"kind", "EC2NodeClass"}, {"name", kPoolName}}},
                           {"requirements", requirements},
                           {"taints", Json::array({{{"key", "nvidia.com/gpu"}, {"value", "true"}, {"effect", "NoSchedule"}}})},
                           {"expireAfter", "Never"}}}}},
                       {"disruption", {{"consolidationPolicy", "WhenEmpty"}, {"consolidateAfter", "1h"}, {"budgets", Json::array({{{"nodes", "10%"}}})}}}}}});
  }
  return pools;
}

// KAI's Topology over the labels the nodes carry, widest first, and the level a multi-node replica's
// gang must stay within: the narrowest domain that holds all of its pods (NVLink domain, rack, zone).
Json topology_cr(const PlanInput& in) {
  Json levels = Json::array({{{"nodeLabel", "topology.kubernetes.io/zone"}}});
  if (in.racks > 0) levels.push_back({{"nodeLabel", "rack"}});
  if (in.nvlink_domain_nodes > 1) levels.push_back({{"nodeLabel", "nvidia.com/gpu.clique"}});
  levels.push_back({{"nodeLabel", "kubernetes.io/hostname"}});
  return {{"apiVersion", "kai.scheduler/v1alpha1"}, {"kind", "Topology"}, {"metadata", {{"name", "cluster-topology"}}}, {"spec", {{"levels", levels}}}};
}
std::string gang_level(const PlanInput& in, const Shape& s) {
  if (in.nvlink_domain_nodes >= s.pods_per_replica && in.nvlink_domain_nodes > 1) return "nvidia.com/gpu.clique";
  if (in.racks > 0 && in.max_nodes / in.racks >= s.pods_per_replica) return "rack";
  return "topology.kubernetes.io/zone";
}
Json topology_annotations(const PlanInput& in, const Shape& s) {
  return {{"kai.scheduler/topology", "cluster-topology"}, {"kai.scheduler/topology-required-placement", gang_level(in, s)}};
}

Json ec2nodeclass_json() {
  // The node class the pool names: the EKS-optimised AMI with NVIDIA drivers, a root volume that holds
  // the image and the weights. Placeholders in capitals are the cluster's own.
  return {{"apiVersion", "karpenter.k8s.aws/v1"},
          {"kind", "EC2NodeClass"},
          {"metadata", {{"name", kPoolName}}},
          {"spec",
           {{"role", "KarpenterNodeRole-CLUSTER_NAME"},
            {"amiSelectorTerms", Json::array({{{"alias", "al2023@latest"}}})},
            {"subnetSelectorTerms", Json::array({{{"tags", {{"karpenter.sh/discovery", "CLUSTER_NAME"}}}}})},
            {"securityGroupSelectorTerms", Json::array({{{"tags", {{"karpenter.sh/discovery", "CLUSTER_NAME"}}}}})},
            {"blockDeviceMappings",
             Json::array({{{"deviceName", "/dev/xvda"}, {"ebs", {{"volumeSize", "500Gi"}, {"volumeType", "gp3"}, {"encrypted", true}}}}})}}}};
}

// A pool's autoscaler in the scenario's form: a role's signal, target, warm pool and ceiling.
Json autoscaler_json(const std::string& signal, double target, int warm, int max_replicas) {
  Json a = {{"strategy", signal}, {"min_replicas", warm}, {"max_replicas", max_replicas}, {"replicas", warm}};
  if (target > 0) a["target"] = target;
  // Scale down one replica a minute after a five-minute window: a model server is minutes to replace.
  a["behavior"] = {{"scaleDown", {{"stabilizationWindowSeconds", 300}, {"policies", Json::array({{{"type", "Pods"}, {"value", 1}, {"periodSeconds", 60}}})}}}};
  return a;
}

// How a run differs from the plan as written: a bigger burst, another consolidation policy, another
// scheduler (the rule checks).
struct RunOptions {
  double burst_factor = 0;  // 0: the input's
  bool consolidate_underutilized = false;  // WhenEmptyOrUnderutilized/0s instead of WhenEmpty/1h
  bool kube_scheduler = false;             // default-scheduler, pod by pod, instead of KAI's gangs
};

Json kai_queues(const PlanInput& in, const Shape& s, const Candidate& c);

// The plan's model-server pools: one aggregated pool, or a prefill and a decode pool of one model.
struct Role {
  std::string role;  // "aggregated", "prefill" or "decode"
  std::string name;  // the Deployment's (and the scenario pool's) name
  std::string signal;
  double target = 0;
  int warm = 1;
};
std::vector<Role> roles_of(const Candidate& c) {
  if (c.decode_signal.empty()) return {{"aggregated", kDeployment, c.signal, c.target, c.warm}};
  return {{"prefill", std::string(kDeployment) + "-prefill", c.signal, c.target, c.warm},
          {"decode", std::string(kDeployment) + "-decode", c.decode_signal, c.decode_target, c.decode_warm}};
}

Json scenario_for(const PlanInput& in, const Candidate& c, const Shape& s, const RunOptions& o = {}) {
  const double base = in.average_rps;
  const double burst = o.burst_factor > 0 ? o.burst_factor : in.burst_factor;
  const double quiet = 900, tail = std::max(60.0, 3600 - quiet - in.burst_s);
  Json pools = nodepools_json(in, c, s);
  if (o.consolidate_underutilized)
    for (Json& pool : pools) pool["spec"]["disruption"] = {{"consolidationPolicy", "WhenEmptyOrUnderutilized"}, {"consolidateAfter", "0s"}};
  Json sc = {{"duration_s", quiet + in.burst_s + tail},
             {"seed", in.seed},
             {"workload",
              {{"preset", "custom"},
               {"phases", Json::array({{{"duration_s", quiet}, {"rate_rps", base}},
                                       {{"duration_s", in.burst_s}, {"rate_rps", base * burst}},
                                       {{"duration_s", tail}, {"rate_rps", base}}})},
               {"prompt_tokens", {{"kind", "lognormal"}, {"mean", in.prompt_tokens}, {"cv", 0.4}, {"min", 16}, {"max", 65536}}},
               {"output_tokens", {{"kind", "lognormal"}, {"mean", in.output_tokens}, {"cv", 0.5}, {"min", 1}, {"max", 16384}}},
               {"timeout_s", in.timeout_s}}},
             {"slo", {{"ttft_s", in.ttft_p99_s}, {"itl_s", in.itl_s}}},
             {"cluster",
              {{"provisioner", "karpenter"},
               {"nodepools", pools},
               {"node_startup", {{"preset", "real_world"}}}}}};
  if (c.capacity_type == "spot") sc["cluster"]["spot_interruptions_per_node_hour"] = in.spot_interruptions_per_node_hour;
  const Json tolerations = Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}});
  // The plan's pods: KAI Scheduler with the inference queue's label (its gang is the replica's pods).
  Json pod = {{"gpus", s.gpus_per_pod}, {"tolerations", tolerations}};
  if (!o.kube_scheduler) {
    pod["schedulerName"] = "kai-scheduler";
    pod["labels"] = {{"kai.scheduler/queue", "inference"}};
    sc["cluster"]["kai"] = {{"queues", kai_queues(in, s, c)}};
    if (s.pods_per_replica > 1) sc["cluster"]["kai"]["topologies"] = Json::array({topology_cr(in)});
  }
  if (in.training_gpus > 0 && !o.kube_scheduler) {
    // The training tenant: pods of a node's GPUs that borrow what inference leaves idle.
    const int per_pod = std::min(s.type->gpus, in.training_gpus);
    const int pods = (in.training_gpus + per_pod - 1) / per_pod;
    sc["cluster"]["workloads"] = Json::array({{{"name", "training"},
                                               {"replicas", pods},
                                               {"pod",
                                                {{"gpus", per_pod},
                                                 {"schedulerName", "kai-scheduler"},
                                                 {"priorityClassName", "train"},
                                                 {"labels", {{"kai.scheduler/queue", "training"}}},
                                                 {"tolerations", tolerations}}}}});
  }
  if (!c.decode_signal.empty()) {
    // Disaggregated: a prefill and a decode pool of one model, the KV cache handed over by NIXL
    // (the scenario's kv_transfer defaults: NVLink on one node, the instance's network between nodes).
    sc["workload"]["models"] = Json::array({{{"model", kModel}, {"share", 1}}});
    sc["pools"] = Json::array();
    for (const Role& r : roles_of(c)) {
      sc["pools"].push_back({{"name", r.name},
                             {"model", kModel},
                             {"role", r.role},
                             {"engine", {{"profile", c.engine_profile}}},
                             {"autoscaler", autoscaler_json(r.signal, r.target, r.warm, c.max_replicas)},
                             {"pod", pod}});
    }
    return sc;
  }
  sc["engine"] = {{"profile", c.engine_profile}};
  sc["autoscaler"] = autoscaler_json(c.signal, c.target, c.warm, c.max_replicas);
  if (s.pods_per_replica > 1) {
    sc["leaderWorkerSet"] = {{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
                             {"kind", "LeaderWorkerSet"},
                             {"metadata", o.kube_scheduler ? Json{{"name", kDeployment}} : Json{{"name", kDeployment}, {"annotations", topology_annotations(in, s)}}},
                             {"spec",
                              {{"leaderWorkerTemplate",
                                {{"size", s.pods_per_replica}, {"restartPolicy", "RecreateGroupOnPodRestart"}, {"workerTemplate", pod}}}}}};
  } else {
    sc["cluster"]["inference_pod"] = pod;
  }
  return sc;
}

// The model server's object: a Deployment of one pod per replica, or a LeaderWorkerSet of a pod per
// pipeline stage, placed by KAI Scheduler in the inference queue on the plan's GPU nodes. Capitals are
// the deployer's own (the checkpoint and the vLLM image tag).
Json workload_json(const PlanInput& in, const Role& role, const Shape& s, const EngineProfile& p) {
  Json args = Json::array({"--model", "MODEL_ID", "--tensor-parallel-size", std::to_string(p.tensor_parallel), "--gpu-memory-utilization", "0.9"});
  if (role.role != "aggregated") {
    // vLLM's disaggregated prefill over NIXL: each server both sends and receives KV blocks, and the
    // gateway (llm-d's EPP, the role label) sends a request to a prefill server, then a decode server.
    args.push_back("--kv-transfer-config");
    args.push_back(R"({"kv_connector":"NixlConnector","kv_role":"kv_both"})");
  }
  if (p.pipeline_parallel > 1) {
    args.push_back("--pipeline-parallel-size");
    args.push_back(std::to_string(p.pipeline_parallel));
  }
  if (p.fp8_kv_cache) {
    args.push_back("--kv-cache-dtype");
    args.push_back("fp8");
  }
  const std::string gpus = std::to_string(s.gpus_per_pod);
  // The lab's inference pod: 8 vCPU and 100 GiB of memory per GPU.
  const Json resources = {{"requests", {{"cpu", std::to_string(8 * s.gpus_per_pod)}, {"memory", std::to_string(100 * s.gpus_per_pod) + "Gi"}, {"nvidia.com/gpu", gpus}}},
                          {"limits", {{"nvidia.com/gpu", gpus}}}};
  const Json pod = {{"schedulerName", "kai-scheduler"},
                    {"nodeSelector", {{"workload", "llm-inference"}}},
                    {"tolerations", Json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}})},
                    {"terminationGracePeriodSeconds", 30},
                    {"containers", Json::array({{{"name", "vllm"},
                                                 {"image", "vllm/vllm-openai:VLLM_VERSION"},
                                                 {"args", args},
                                                 {"ports", Json::array({{{"name", "http"}, {"containerPort", 8000}}})},
                                                 {"readinessProbe", {{"httpGet", {{"path", "/health"}, {"port", 8000}}}}},
                                                 {"resources", resources}}})}};
  Json labels = {{"app", role.name}, {"kai.scheduler/queue", "inference"}};
  if (role.role != "aggregated") labels["llm-d.ai/role"] = role.role;
  if (s.pods_per_replica == 1) {
    return {{"apiVersion", "apps/v1"},
            {"kind", "Deployment"},
            {"metadata", {{"name", role.name}}},
            {"spec", {{"replicas", role.warm}, {"selector", {{"matchLabels", {{"app", role.name}}}}}, {"template", {{"metadata", {{"labels", labels}}}, {"spec", pod}}}}}};
  }
  const Json tmpl = {{"metadata", {{"labels", labels}}}, {"spec", pod}};
  return {{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
          {"kind", "LeaderWorkerSet"},
          // KAI's pod-grouper reads the topology annotations of the pods' top owner, the LeaderWorkerSet.
          {"metadata", {{"name", role.name}, {"annotations", topology_annotations(in, s)}}},
          {"spec", {{"replicas", role.warm}, {"leaderWorkerTemplate", {{"size", s.pods_per_replica}, {"restartPolicy", "RecreateGroupOnPodRestart"}, {"workerTemplate", tmpl}}}}}};
}

// The input as the plan read it, defaults filled in.
Json input_json(const PlanInput& in) {
  Json topology = {{"instance_types", in.instance_types}, {"capacity_types", in.capacity_types}, {"max_nodes", in.max_nodes}, {"racks", in.racks}, {"nvlink_domain_nodes", in.nvlink_domain_nodes},
                   {"spot_interruptions_per_node_hour", in.spot_interruptions_per_node_hour}};
  if (!in.zones.empty()) topology["zones"] = in.zones;
  Json out = {{"topology", topology},
          {"workload",
           {{"engine_profile", in.engine_profile}, {"serving", in.serving}, {"burst_factor", in.burst_factor},
            {"burst_s", in.burst_s}, {"prompt_tokens", in.prompt_tokens}, {"output_tokens", in.output_tokens}, {"timeout_s", in.timeout_s},
            {"what_if_burst", in.what_if_burst}}},
          {"slo", {{"ttft_p99_s", in.ttft_p99_s}, {"itl_s", in.itl_s}, {"attainment", in.attainment}}},
          {"budget_usd_per_hour", in.budget_usd_per_hour},
          {"tenants", {{"training_gpus", in.training_gpus}}},
          {"seed", in.seed}};
  Json choices = {{"gang", in.gang}, {"consolidation_policy", in.consolidation_policy}};
  if (!in.pin_signal.empty()) choices["signal"] = in.pin_signal;
  if (!in.pin_decode_signal.empty()) choices["decode_signal"] = in.pin_decode_signal;
  out["choices"] = choices;
  // The load as given (a concurrency's rate is in the plan's load_from_concurrency).
  if (in.average_concurrency > 0) out["workload"]["average_concurrency"] = in.average_concurrency;
  else out["workload"]["average_rps"] = in.average_rps;
  return out;
}

// The deployed autoscaler of a pool: a KEDA ScaledObject for queue depth (its prometheus trigger makes
// the HPA KEDA generates), else the autoscaling/v2 HPA the run used.
Json deployed_autoscaler(const PlanInput& in, const Role& role, int max_replicas, const hpa::HorizontalPodAutoscalerSpec& hpa) {
  const Json behavior = autoscaler_json(role.signal, role.target, role.warm, max_replicas).at("behavior");
  if (role.signal == "queue_depth") {
    // The pool's own servers' queue: by model name when one pool serves the model, by pod in a role.
    const std::string selector = role.role == "aggregated" ? "model_name=\"" + in.engine_profile + "\"" : "pod=~\"" + role.name + "-.*\"";
    return {{"apiVersion", "keda.sh/v1alpha1"},
            {"kind", "ScaledObject"},
            {"metadata", {{"name", role.name}}},
            {"spec",
             {{"scaleTargetRef", {{"name", role.name}}},
              {"minReplicaCount", role.warm},
              {"maxReplicaCount", max_replicas},
              {"pollingInterval", 15},
              {"advanced", {{"horizontalPodAutoscalerConfig", {{"behavior", behavior}}}}},
              {"triggers", Json::array({{{"type", "prometheus"},
                                          {"metadata",
                                           {{"serverAddress", "http://prometheus.monitoring:9090"},
                                            {"query", "sum(vllm:num_requests_waiting{" + selector + "})"},
                                            {"threshold", num(role.target, 0)}}}}})}}}};
  }
  Json spec = hpa::hpa_spec_to_json(hpa);
  spec["scaleTargetRef"] = {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", role.name}};
  return {{"apiVersion", "autoscaling/v2"}, {"kind", "HorizontalPodAutoscaler"}, {"metadata", {{"name", role.name}}}, {"spec", spec}};
}

// A scheduling.run.ai/v2 Queue: GPUs quota and limit (-1: none), over-quota weight 1.
Json queue_cr(const std::string& name, const std::string& parent, int priority, int quota, int limit) {
  Json gpu = {{"quota", quota}, {"limit", limit}, {"overQuotaWeight", 1}};
  const Json unlimited = {{"quota", -1}, {"limit", -1}};
  Json spec = {{"resources", {{"gpu", gpu}, {"cpu", unlimited}, {"memory", unlimited}}}};
  if (!parent.empty()) spec["parentQueue"] = parent;
  if (priority > 0) spec["priority"] = priority;
  return {{"apiVersion", "scheduling.run.ai/v2"}, {"kind", "Queue"}, {"metadata", {{"name", name}}}, {"spec", spec}};
}

Json kai_queues(const PlanInput& in, const Shape& s, const Candidate& c) {
  Json queues = Json::array();
  queues.push_back(queue_cr("gpu-pool", "", 0, in.max_nodes * s.type->gpus, -1));
  // Inference: its peak in quota (a Deployment's pods are non-preemptible and get only in-quota GPUs).
  const int pool = in.max_nodes * s.type->gpus;
  const int inference = c.inference_quota_gpus > 0 ? c.inference_quota_gpus : c.max_replicas * s.gpus_per_replica;
  queues.push_back(queue_cr("inference", "gpu-pool", 100, inference, -1));
  // Training borrows what inference leaves idle, over quota, and is reclaimed when inference scales up;
  // what inference's quota leaves of the pool is training's own (deserved, not reclaimed).
  if (in.training_gpus > 0) queues.push_back(queue_cr("training", "gpu-pool", 50, std::min(in.training_gpus, std::max(0, pool - inference)), in.training_gpus));
  return queues;
}

RunResult simulate(const PlanInput& in, Candidate& c, const Shape& s, const RunOptions& o, const std::function<void(double)>& at) {
  const Scenario sc = parse_scenario(scenario_for(in, c, s, o));
  ProgressReport report;
  report.every_s = sc.duration_s / 4;
  report.at = [&](double t) {
    if (at) at(t / sc.duration_s);
  };
  const RunResult r = run_simulation(sc, {}, report);
  c.simulated = true;
  c.slo_attainment = r.summary.slo_attainment;
  c.ttft_p99_s = r.summary.ttft_p99_s;
  c.cost_usd = r.summary.cluster.node_cost_usd;
  c.node_cost_usd_per_hour = r.summary.cluster.node_cost_usd / (sc.duration_s / 3600);
  c.time_to_ready_s = r.summary.time_to_ready_mean_s;
  c.num_requests = r.summary.num_requests;
  c.num_dropped = r.summary.num_dropped;
  c.peak_replicas = r.summary.peak_replicas;
  c.nodes_launched = r.summary.cluster.nodes_launched;
  c.meets_slo = c.slo_attainment >= in.attainment && c.ttft_p99_s <= in.ttft_p99_s;
  if (!c.meets_slo) {
    c.rejected.push_back("misses the SLO: " + num(c.slo_attainment * 100, 1) + " % of requests within it (target " + num(in.attainment * 100, 1) +
                         " %), P99 TTFT " + num(c.ttft_p99_s, 2) + " s (target " + num(in.ttft_p99_s, 2) + " s)");
  }
  return r;
}

Json candidate_json(const Candidate& c) {
  Json j = {{"instance_type", c.instance_type}, {"capacity_type", c.capacity_type}, {"engine_profile", c.engine_profile}, {"signal", c.signal}, {"target", c.target}, {"warm_replicas", c.warm},
            {"max_replicas", c.max_replicas}, {"simulated", c.simulated}, {"rejected", c.rejected}};
  if (c.inference_quota_gpus > 0) j["inference_quota_gpus"] = c.inference_quota_gpus;
  j["tensor_parallel"] = engine_profile(c.engine_profile).tensor_parallel;
  // Disaggregated: signal, target and warm_replicas above are the prefill pool's.
  if (!c.decode_signal.empty()) j["decode"] = {{"signal", c.decode_signal}, {"target", c.decode_target}, {"warm_replicas", c.decode_warm}};
  if (c.simulated) {
    j["slo_attainment"] = c.slo_attainment;
    j["ttft_p99_s"] = c.ttft_p99_s;
    j["node_cost_usd_per_hour"] = c.node_cost_usd_per_hour;
    j["time_to_ready_s"] = c.time_to_ready_s;
    j["num_requests"] = c.num_requests;
    j["num_dropped"] = c.num_dropped;
    j["peak_replicas"] = c.peak_replicas;
    j["nodes_launched"] = c.nodes_launched;
    j["meets_slo"] = c.meets_slo;
  }
  return j;
}

// "queue_depth 2" or, disaggregated, "prefill queue_depth 2, decode kv_cache 0.70".
std::string scaler_label(const Candidate& c) {
  const std::string own = c.signal + " " + num(c.target, 2);
  return c.decode_signal.empty() ? own : "prefill " + own + ", decode " + c.decode_signal + " " + num(c.decode_target, 2);
}

// An average concurrency as an arrival rate: the input's clients, each with one request in flight,
// sending the next as the last completes (the scenario's closed loop, perf_analyzer's concurrency
// mode), for ten minutes against every replica the topology holds, already warm. Little's law,
// rate = concurrency / latency, with the latency of a pool that keeps up: the most the clients can
// send, so the plan is sized for it. Sets in.average_rps and returns what the run showed.
Json rate_from_concurrency(PlanInput& in, const Shape& s) {
  const int replicas = max_replicas_for(in, s);
  const double duration = 600;
  Json sc = {{"duration_s", duration},
             {"seed", in.seed},
             {"workload",
              {{"concurrency", in.average_concurrency},
               {"prompt_tokens", {{"kind", "lognormal"}, {"mean", in.prompt_tokens}, {"cv", 0.4}, {"min", 16}, {"max", 65536}}},
               {"output_tokens", {{"kind", "lognormal"}, {"mean", in.output_tokens}, {"cv", 0.5}, {"min", 1}, {"max", 16384}}},
               {"timeout_s", in.timeout_s}}},
             {"slo", {{"ttft_s", in.ttft_p99_s}, {"itl_s", in.itl_s}}}};
  int prefill = replicas;
  if (in.serving == "disaggregated") {
    prefill = std::max(1, replicas / 2);
    sc["workload"]["models"] = Json::array({{{"model", kModel}, {"share", 1}}});
    sc["pools"] = Json::array({{{"name", "prefill"}, {"model", kModel}, {"role", "prefill"}, {"engine", {{"profile", in.engine_profile}}},
                                {"autoscaler", {{"strategy", "fixed"}, {"replicas", prefill}}}},
                               {{"name", "decode"}, {"model", kModel}, {"role", "decode"}, {"engine", {{"profile", in.engine_profile}}},
                                {"autoscaler", {{"strategy", "fixed"}, {"replicas", std::max(1, replicas - prefill)}}}}});
  } else {
    sc["engine"] = {{"profile", in.engine_profile}};
    sc["autoscaler"] = {{"strategy", "fixed"}, {"replicas", replicas}};
  }
  const RunResult r = run_simulation(parse_scenario(sc));
  const double rate = static_cast<double>(r.summary.num_requests) / duration;
  const std::string path = "/workload/average_concurrency";
  if (rate * in.burst_factor > 25) {
    throw InputError(path, std::to_string(in.average_concurrency) + " clients sent " + num(rate, 2) + " req/s against " + std::to_string(replicas) +
                               " warm replicas; × burst_factor " + num(in.burst_factor, 1) + " is over 25 req/s, the most the search simulates");
  }
  if (rate < 0.001) throw InputError(path, "the clients completed no request in ten minutes: the model cannot serve this request size within the timeout");
  in.average_rps = rate;
  return {{"concurrency", in.average_concurrency},
          {"replicas", replicas},
          {"duration_s", duration},
          {"requests", r.summary.num_requests},
          {"average_rps", rate},
          {"mean_latency_s", in.average_concurrency / rate},
          {"reason", std::to_string(in.average_concurrency) + " clients, each with one request in flight, sent " + std::to_string(r.summary.num_requests) +
                         " requests in " + num(duration / 60, 0) + " minutes against " + std::to_string(replicas) + " warm replicas: " + num(rate, 3) +
                         " req/s, a request every " + num(in.average_concurrency / rate, 2) + " s per client (Little's law: rate = concurrency / latency)"}};
}

// "queue_depth" or "prefill on queue_depth, decode on kv_cache": the autoscalers in words.
std::string scaler_words(const Candidate& c) {
  return c.decode_signal.empty() ? c.signal : "prefill on " + c.signal + ", decode on " + c.decode_signal;
}

// "2 warm replicas" or "1 warm prefill and 2 warm decode replicas".
std::string warm_text(const Candidate& c) {
  if (c.decode_signal.empty()) return std::to_string(c.warm) + " warm replica" + (c.warm == 1 ? "" : "s");
  return std::to_string(c.warm) + " warm prefill and " + std::to_string(c.decode_warm) + " warm decode replica" + (c.decode_warm == 1 ? "" : "s");
}

// The cheaper of two acceptable candidates (ties: the one found first).
bool better(const Candidate& a, const Candidate* b) { return !b || a.node_cost_usd_per_hour < b->node_cost_usd_per_hour; }

}  // namespace

PlanInput parse_plan_input(const Json& input) {
  PlanInput in;
  ObjectReader r(input, "");
  r.only_keys({"topology", "workload", "slo", "budget_usd_per_hour", "tenants", "seed", "choices"});
  if (const Json* t = r.raw("topology")) {
    ObjectReader tr(*t, "/topology");
    in.instance_types = read_strings(tr, "instance_types", in.instance_types, 8);
    in.capacity_types = read_strings(tr, "capacity_types", in.capacity_types, 2);
    in.max_nodes = static_cast<int>(tr.get_int("max_nodes", in.max_nodes, 1, 64));
    in.zones = read_strings(tr, "zones", {}, 8);
    in.racks = static_cast<int>(tr.get_int("racks", 0, 0, 64));
    in.nvlink_domain_nodes = static_cast<int>(tr.get_int("nvlink_domain_nodes", 1, 1, 64));
    const bool spot = std::find(in.capacity_types.begin(), in.capacity_types.end(), "spot") != in.capacity_types.end();
    if (spot && !tr.has("spot_interruptions_per_node_hour")) {
      throw InputError("/topology/spot_interruptions_per_node_hour",
                       "required with spot capacity: how often a spot node is reclaimed (AWS's Spot Instance Advisor gives each type's monthly "
                       "frequency; 0 assumes none), so that spot candidates are simulated with their interruptions");
    }
    in.spot_interruptions_per_node_hour = tr.get_number("spot_interruptions_per_node_hour", 0, 0, 10);
    tr.finish();
    if (in.racks > in.max_nodes) throw InputError("/topology/racks", "at most max_nodes (" + std::to_string(in.max_nodes) + "): each rack holds at least one of the nodes");
    if (in.nvlink_domain_nodes > std::max(1, in.max_nodes / std::max(1, in.racks))) {
      throw InputError("/topology/nvlink_domain_nodes", "at most the nodes of a rack (" + std::to_string(in.max_nodes / std::max(1, in.racks)) +
                                                            "): an NVLink domain does not span racks");
    }
    for (std::size_t i = 0; i < in.instance_types.size(); ++i) {
      const InstanceType* type = find_instance_type(default_instance_types(), in.instance_types[i]);
      if (!type) throw InputError("/topology/instance_types/" + std::to_string(i), "\"" + in.instance_types[i] + "\" is not in the lab's instance catalogue (data/instance-types.json)");
      if (type->gpus == 0) throw InputError("/topology/instance_types/" + std::to_string(i), in.instance_types[i] + " has no GPU");
    }
    for (std::size_t i = 0; i < in.capacity_types.size(); ++i) {
      if (in.capacity_types[i] != "on-demand" && in.capacity_types[i] != "spot") {
        throw InputError("/topology/capacity_types/" + std::to_string(i), "expected \"on-demand\" or \"spot\"");
      }
    }
  }
  if (const Json* w = r.raw("workload")) {
    ObjectReader wr(*w, "/workload");
    in.engine_profile = wr.get_string("engine_profile", in.engine_profile, 128);
    engine_profile(in.engine_profile);  // an unknown profile is refused with the known ones
    in.serving = wr.get_enum("serving", in.serving, {"aggregated", "disaggregated"});
    if (wr.has("average_rps") && wr.has("average_concurrency")) {
      throw InputError("/workload/average_concurrency", "give average_rps or average_concurrency, not both (the plan converts a concurrency to a rate)");
    }
    in.average_rps = wr.get_number("average_rps", in.average_rps, 0.001, 5);
    in.average_concurrency = static_cast<int>(wr.get_int("average_concurrency", 0, 1, 500));
    in.burst_factor = wr.get_number("burst_factor", in.burst_factor, 1, 50);
    in.burst_s = wr.get_number("burst_s", in.burst_s, 60, 2400);
    in.prompt_tokens = wr.get_number("prompt_tokens", in.prompt_tokens, 16, 65536);
    in.output_tokens = wr.get_number("output_tokens", in.output_tokens, 1, 16384);
    in.timeout_s = wr.get_number("timeout_s", in.timeout_s, 1, 3600);
    in.what_if_burst = wr.get_number("what_if_burst", in.what_if_burst, 1, 10);
    wr.finish();
    // The search simulates about 25 hours of this workload: a burst peak over 25 req/s would take
    // minutes in the page.
    if (in.average_concurrency == 0 && in.average_rps * in.burst_factor > 25) {
      throw InputError("/workload/burst_factor", "average_rps × burst_factor is " + num(in.average_rps * in.burst_factor, 1) +
                                                     " req/s; at most 25 (the search simulates about 25 hours of the workload)");
    }
  }
  if (const Json* s = r.raw("slo")) {
    ObjectReader sr(*s, "/slo");
    in.ttft_p99_s = sr.get_number("ttft_p99_s", in.ttft_p99_s, 0.05, 600);
    in.itl_s = sr.get_number("itl_s", in.itl_s, 0.001, 10);
    in.attainment = sr.get_number("attainment", in.attainment, 0.5, 1);
    sr.finish();
  }
  in.budget_usd_per_hour = r.get_number("budget_usd_per_hour", 0, 0, 1e6);
  if (const Json* t = r.raw("tenants")) {
    ObjectReader tr(*t, "/tenants");
    in.training_gpus = static_cast<int>(tr.get_int("training_gpus", 0, 0, 4096));
    tr.finish();
  }
  in.seed = static_cast<std::uint64_t>(r.get_int("seed", 1, 0, 9007199254740992LL));
  if (const Json* c = r.raw("choices")) {
    ObjectReader cr(*c, "/choices");
    const std::initializer_list<const char*> signals_allowed = {"queue_depth", "kv_cache", "ttft_p99", "goodput", "gpu_util", "gpu_memory"};
    if (cr.has("signal")) in.pin_signal = cr.get_enum("signal", "", signals_allowed);
    if (cr.has("decode_signal")) in.pin_decode_signal = cr.get_enum("decode_signal", "", signals_allowed);
    in.gang = cr.get_bool("gang", true);
    in.consolidation_policy = cr.get_enum("consolidation_policy", in.consolidation_policy, {"WhenEmpty", "WhenEmptyOrUnderutilized"});
    cr.finish();
    if (!in.pin_decode_signal.empty() && in.serving != "disaggregated") {
      throw InputError("/choices/decode_signal", "only with workload.serving: disaggregated (an aggregated pool has one autoscaler: choices.signal)");
    }
  }
  r.finish();
  return in;
}

Json make_plan(PlanInput in, const PlanProgress& progress) {
  Json rules = Json::array();
  // The lesson's hard rejects and refusals of what the input asks for, before anything is simulated.
  Json refusals = Json::array();
  const auto refuse = [&](const char* rule, const std::string& field, const std::string& reason) {
    refusals.push_back({{"rule", rule}, {"field", field}, {"reason", reason}});
  };
  if (in.max_nodes == 1 && in.instance_types.size() == 1) {
    refuse("single_node_single_gpu_type", "/topology",
           "A single node of a single GPU type (" + in.instance_types[0] +
               "): there is nothing for Karpenter to choose or consolidate, and a replica lost with its node has nowhere to go. Use a managed serverless endpoint instead, or allow more nodes or types.");
  }
  for (const auto& [field, signal] : {std::pair<std::string, std::string>{"/choices/signal", in.pin_signal}, {"/choices/decode_signal", in.pin_decode_signal}}) {
    if (signal == "gpu_util") {
      refuse("no_gpu_util_hpa", field,
             "Hard reject: an HPA on DCGM_FI_DEV_GPU_UTIL. The duty cycle is the share of time a kernel ran: it reads 100 % with one request or a hundred, "
             "so it says nothing about backlog. Scale on queue depth, KV-cache use, P99 TTFT or goodput.");
    }
    if (signal == "gpu_memory") {
      refuse("no_gpu_memory_signal", field,
             "Refused: scaling on GPU memory. vLLM claims --gpu-memory-utilization (0.9) of each GPU at start for its KV cache, so the signal stays near 90 % "
             "from the first request and the pool never scales down.");
    }
  }
  if (in.consolidation_policy == "WhenEmptyOrUnderutilized") {
    refuse("when_empty_on_gpu_pool", "/choices/consolidation_policy",
           "Hard reject: WhenEmptyOrUnderutilized on a GPU pool. Karpenter may then delete any node whose pods fit elsewhere, and each model server it moves "
           "pays a full cold start (image, weights, warm-up). Use WhenEmpty with consolidateAfter: 1h.");
  }
  const EngineProfile asked = engine_profile(in.engine_profile);
  if (!in.gang && asked.pipeline_parallel > 1) {
    refuse("gang_for_tp_pp", "/choices/gang",
           "Refused: declining gangs for a TP" + std::to_string(asked.tensor_parallel) + " × PP" + std::to_string(asked.pipeline_parallel) +
               " workload. Its replica is " + std::to_string(asked.pipeline_parallel) + " pods that serve nothing until all are placed; placed one by one, "
               "some bind and hold their GPUs while the rest wait (the 7-of-8 trap). KAI Scheduler's PodGroup places all or none.");
  }
  if (!refusals.empty()) return {{"verdict", "refused"}, {"refusals", refusals}};
  const EngineProfile profile = engine_profile(in.engine_profile);
  const bool disaggregated = in.serving == "disaggregated";
  std::vector<Candidate> rows;
  // Which instance types can run the model at all (vLLM's start-up checks for this GPU).
  std::vector<const InstanceType*> usable;
  for (const std::string& name : in.instance_types) {
    const InstanceType& type = *find_instance_type(default_instance_types(), name);
    EngineConfig config;
    config.profile = profile;
    const ProfileOnGpu g = profile_on_gpu(config, type.gpu_name, type.gpu_memory_mib);
    const Shape s = shape_of(in.engine_profile, type);
    const bool fits_cluster = s.pods_per_replica * s.gpus_per_pod <= in.max_nodes * type.gpus;
    // Disaggregated serving needs a prefill and a decode replica, each a Deployment's pod (the lab's
    // prefill and decode pools are not LeaderWorkerSets).
    std::string disagg_error;
    if (disaggregated && s.pods_per_replica > 1) {
      disagg_error = "a disaggregated replica must fit one " + type.name + " (the lab's prefill and decode pools are Deployments, one pod per replica), and " +
                     in.engine_profile + " needs " + std::to_string(s.gpus_per_replica) + " GPUs";
    } else if (disaggregated && fits_cluster && max_replicas_for(in, s) < 2) {
      disagg_error = "disaggregated serving needs a prefill and a decode replica, 2 × " + std::to_string(s.gpus_per_replica) + " GPUs, more than " +
                     std::to_string(in.max_nodes) + " nodes have";
    }
    if (g.loads && fits_cluster && disagg_error.empty()) {
      usable.push_back(&type);
      continue;
    }
    for (const std::string& cap : in.capacity_types) {
      Candidate c;
      c.instance_type = name;
      c.capacity_type = cap;
      c.signal = "-";
      c.engine_profile = in.engine_profile;
      c.rejected.push_back(!g.loads        ? "the model does not start on " + type.gpu_name + ": " + g.error
                           : !fits_cluster ? "a replica needs " + std::to_string(s.gpus_per_replica) + " GPUs, more than " + std::to_string(in.max_nodes) + " nodes have"
                                           : disagg_error);
      rows.push_back(c);
    }
  }
  if (usable.empty()) {
    Json cands = Json::array();
    for (const Candidate& c : rows) cands.push_back(candidate_json(c));
    return {{"verdict", "no_plan"}, {"failed_layer", "nodes"}, {"reason", "no instance type of the topology can run " + in.engine_profile}, {"candidates", cands}};
  }
  // Stage 1 on the cheapest usable on-demand (else spot) type: every signal and warm pool size.
  const auto price = [](const InstanceType* t, const std::string& cap) { return cap == "spot" ? t->spot_usd_per_hour : t->on_demand_usd_per_hour; };
  const std::string first_cap = std::find(in.capacity_types.begin(), in.capacity_types.end(), "on-demand") != in.capacity_types.end() ? "on-demand" : "spot";
  const InstanceType* base_type = *std::min_element(usable.begin(), usable.end(), [&](const InstanceType* a, const InstanceType* b) {
    return price(a, first_cap) < price(b, first_cap);
  });
  std::vector<Candidate> stage1;
  const Shape base_shape = shape_of(in.engine_profile, *base_type);
  const Json load = in.average_concurrency > 0 ? rate_from_concurrency(in, base_shape) : Json();
  const auto base_candidate = [&](const std::string& signal, double target, int warm) {
    Candidate c;
    c.instance_type = base_type->name;
    c.capacity_type = first_cap;
    c.engine_profile = in.engine_profile;
    c.signal = signal;
    c.target = target;
    c.max_replicas = max_replicas_for(in, base_shape);
    c.warm = warm;
    return c;
  };
  // A pinned signal narrows the search to it (the duty cycle still runs, to check its rule).
  const auto searched = [](const std::string& pin, const std::string& signal) { return pin.empty() || signal == pin || signal == "gpu_util"; };
  if (!disaggregated) {
    for (const Signal& sig : signals())
      if (searched(in.pin_signal, sig.id))
      for (double target : sig.targets)
        for (int warm : {1, 2, 3}) stage1.push_back(base_candidate(sig.id, sig.target_is_slo_share ? target * in.ttft_p99_s : target, warm));
    stage1.erase(std::remove_if(stage1.begin(), stage1.end(), [](const Candidate& c) { return c.warm > c.max_replicas; }), stage1.end());
  } else {
    // Per role (exercise 4's question): the prefill pool on its queue, its P99 TTFT or its KV cache;
    // the decode pool on its KV cache or its queue; both with 1 or 2 warm replicas. The duty cycle on
    // both pools is run only to check its rule.
    // A pinned signal is tried at each of its targets instead.
    const auto options = [&](std::vector<std::pair<std::string, double>> preset, const std::string& pin) {
      if (pin.empty()) return preset;
      std::vector<std::pair<std::string, double>> out;
      for (const Signal& sig : signals())
        if (sig.id == pin)
          for (double t : sig.targets) out.emplace_back(sig.id, sig.target_is_slo_share ? t * in.ttft_p99_s : t);
      return out;
    };
    const auto prefill = options({{"queue_depth", 2}, {"ttft_p99", 0.5 * in.ttft_p99_s}, {"kv_cache", 0.7}}, in.pin_signal);
    const auto decode = options({{"kv_cache", 0.5}, {"kv_cache", 0.7}, {"queue_depth", 5}}, in.pin_decode_signal);
    for (int warm : {1, 2}) {
      if (2 * warm > max_replicas_for(in, base_shape)) continue;
      for (const auto& p : prefill)
        for (const auto& d : decode) {
          Candidate c = base_candidate(p.first, p.second, warm);
          c.decode_signal = d.first;
          c.decode_target = d.second;
          c.decode_warm = warm;
          stage1.push_back(c);
        }
      Candidate util = base_candidate("gpu_util", 80, warm);
      util.decode_signal = "gpu_util";
      util.decode_target = 80;
      util.decode_warm = warm;
      stage1.push_back(util);
    }
  }
  // Stage 2 runs at most one candidate per other (type, capacity) pair, stage 3 one more.
  const int stage2_count = static_cast<int>(usable.size() * in.capacity_types.size()) - 1;
  const int total = static_cast<int>(stage1.size()) + std::max(0, stage2_count) + 3 + (base_shape.pods_per_replica > 1 ? 1 : 0) + (in.training_gpus > 0 ? 2 : 0) +
                    static_cast<int>(tensor_parallel_variants(in.engine_profile).size()) - 1;
  int done = 0;
  const auto step = [&](const std::string& label) {
    return [&, label](double f) {
      if (progress) progress((done + f) / total, label);
    };
  };
  const Candidate* chosen1 = nullptr;
  for (Candidate& c : stage1) {
    simulate(in, c, base_shape, {}, step(scaler_label(c) + ", " + std::to_string(c.warm) + " warm on " + c.instance_type));
    ++done;
    if (c.signal == "gpu_util") {
      c.rejected.push_back("the lesson's hard reject: an HPA on DCGM_FI_DEV_GPU_UTIL, a duty cycle that reads 100 % with one request or a hundred, says nothing about backlog");
    }
    if (in.budget_usd_per_hour > 0 && c.node_cost_usd_per_hour > in.budget_usd_per_hour) {
      c.rejected.push_back("over budget: $" + num(c.node_cost_usd_per_hour, 2) + " per hour against $" + num(in.budget_usd_per_hour, 2));
    }
  }
  for (const Candidate& c : stage1) {
    if (c.rejected.empty() && better(c, chosen1)) chosen1 = &c;
  }
  rows.insert(rows.end(), stage1.begin(), stage1.end());
  if (!chosen1) {
    Json cands = Json::array();
    for (const Candidate& c : rows) cands.push_back(candidate_json(c));
    // Which layer failed: replicas that could not come up in time (nodes), or a scaler at its ceiling.
    const Candidate& best = *std::max_element(stage1.begin(), stage1.end(), [](const Candidate& a, const Candidate& b) { return a.slo_attainment < b.slo_attainment; });
    const bool at_ceiling = best.peak_replicas >= best.max_replicas;
    Json out = {{"verdict", "no_plan"},
            {"failed_layer", at_ceiling ? "nodes" : "replicas"},
            {"reason", at_ceiling ? "the best candidate ran its " + std::to_string(best.max_replicas) + " replicas (all " + std::to_string(in.max_nodes) +
                                        " nodes) and still met the SLO for " + num(best.slo_attainment * 100, 1) + " % of requests: the topology is too small for the burst"
                                  : "no autoscaler and warm pool met the SLO (best " + num(best.slo_attainment * 100, 1) + " % with " + scaler_label(best) +
                                        "); a new replica took " + num(best.time_to_ready_s, 0) + " s to serve, against a " + num(in.ttft_p99_s, 1) + " s TTFT target"},
            {"candidates", cands}};
    if (!load.is_null()) out["load_from_concurrency"] = load;
    return out;
  }
  // Stage 1b, the replica's shape: the chosen autoscaler and warm pool with the model at every other
  // tensor-parallel degree the lab has (one pod per replica, on the same type); the cheapest that meets
  // the SLO is carried on.
  Candidate shaped = *chosen1;
  for (const std::string& variant : tensor_parallel_variants(in.engine_profile)) {
    if (variant == in.engine_profile) continue;
    Candidate c = *chosen1;
    c.engine_profile = variant;
    c.rejected.clear();
    const Shape s = shape_of(variant, *base_type);
    if (s.pods_per_replica > 1 || s.gpus_per_pod > base_type->gpus) {
      c.rejected.push_back("a replica of " + std::to_string(s.gpus_per_replica) + " GPUs does not fit one " + base_type->name);
      rows.push_back(c);
      continue;
    }
    c.max_replicas = max_replicas_for(in, s);
    c.warm = std::min(chosen1->warm, c.max_replicas);
    c.decode_warm = std::min(chosen1->decode_warm, c.max_replicas);
    if (disaggregated && c.max_replicas < 2) {
      c.rejected.push_back("disaggregated serving needs a prefill and a decode replica of " + std::to_string(s.gpus_per_replica) + " GPUs");
      rows.push_back(c);
      continue;
    }
    simulate(in, c, s, {}, step(scaler_label(c) + " at TP" + std::to_string(engine_profile(variant).tensor_parallel)));
    ++done;
    if (in.budget_usd_per_hour > 0 && c.node_cost_usd_per_hour > in.budget_usd_per_hour) {
      c.rejected.push_back("over budget: $" + num(c.node_cost_usd_per_hour, 2) + " per hour against $" + num(in.budget_usd_per_hour, 2));
    }
    if (c.rejected.empty() && c.node_cost_usd_per_hour < shaped.node_cost_usd_per_hour) shaped = c;
    rows.push_back(c);
  }
  // Stage 2: the chosen autoscaler, warm pool and shape on every other usable type and capacity type.
  Candidate best = shaped;
  for (const InstanceType* type : usable)
    for (const std::string& cap : in.capacity_types) {
      if (type == base_type && cap == first_cap) continue;
      Candidate c = shaped;
      c.instance_type = type->name;
      c.capacity_type = cap;
      c.rejected.clear();
      const Shape s = shape_of(c.engine_profile, *type);
      c.max_replicas = max_replicas_for(in, s);
      c.warm = std::min(shaped.warm, c.max_replicas);
      c.decode_warm = std::min(shaped.decode_warm, c.max_replicas);
      if (cap == "spot" && type->spot_usd_per_hour <= 0) {
        c.rejected.push_back(type->name + " is not offered as spot in the lab's catalogue");
        rows.push_back(c);
        continue;
      }
      if (c.engine_profile != in.engine_profile && (s.pods_per_replica > 1 || s.gpus_per_pod > type->gpus)) {
        c.rejected.push_back("a replica of " + std::to_string(s.gpus_per_replica) + " GPUs does not fit one " + type->name);
        rows.push_back(c);
        continue;
      }
      simulate(in, c, s, {}, step(scaler_label(c) + " on " + c.instance_type + " (" + cap + ")"));
      ++done;
      if (in.budget_usd_per_hour > 0 && c.node_cost_usd_per_hour > in.budget_usd_per_hour) {
        c.rejected.push_back("over budget: $" + num(c.node_cost_usd_per_hour, 2) + " per hour against $" + num(in.budget_usd_per_hour, 2));
      }
      if (c.rejected.empty() && c.node_cost_usd_per_hour < best.node_cost_usd_per_hour) best = c;
      rows.push_back(c);
    }
  // Stage 3: the winner against a larger burst (reported, not a condition), then the rule checks: the
  // chosen plan with what each rule forbids, to show what the rule costs or saves on this input.
  const InstanceType& type = *find_instance_type(default_instance_types(), best.instance_type);
  const Shape shape = shape_of(best.engine_profile, type);
  Candidate what_if = best;
  what_if.rejected.clear();
  RunOptions bigger;
  bigger.burst_factor = in.burst_factor * in.what_if_burst;
  simulate(in, what_if, shape, bigger, step("what if the burst is " + num(in.what_if_burst, 1) + "x larger"));
  ++done;
  // The inference queue's quota: every GPU its replicas can reach leaves the training tenant nothing
  // of its own. With a tenant, the chosen plan runs again with inference's quota cut to the peak of
  // the larger burst and the rest guaranteed to training; kept if it still meets the SLO at no more
  // than 5 % more cost, and then the larger burst runs again under it.
  const int peak_quota = static_cast<int>(std::max(best.peak_replicas, what_if.peak_replicas)) * shape.gpus_per_replica;
  if (in.training_gpus > 0 && peak_quota < best.max_replicas * shape.gpus_per_replica) {
    Candidate tight = best;
    tight.rejected.clear();
    tight.inference_quota_gpus = peak_quota;
    simulate(in, tight, shape, {}, step("the inference queue's quota at the larger burst's peak, " + std::to_string(peak_quota) + " GPUs"));
    ++done;
    if (tight.meets_slo && tight.node_cost_usd_per_hour <= best.node_cost_usd_per_hour * 1.05) {
      best = tight;
      what_if = best;
      simulate(in, what_if, shape, bigger, step("what if the burst is " + num(in.what_if_burst, 1) + "x larger, under that quota"));
      ++done;
    } else if (tight.rejected.empty()) {
      tight.rejected.push_back("guaranteeing training the rest of the pool cost inference $" + num(tight.node_cost_usd_per_hour - best.node_cost_usd_per_hour, 2) +
                               "/h, over 5 %");
    }
    rows.push_back(tight);
  }
  Candidate trap = best;
  trap.rejected.clear();
  RunOptions underutilized;
  underutilized.consolidate_underutilized = true;
  const RunResult trap_run = simulate(in, trap, shape, underutilized, step("rule check: WhenEmptyOrUnderutilized/0s"));
  ++done;
  Candidate memory = best;
  memory.rejected.clear();
  memory.signal = "gpu_memory";
  memory.target = 60000;  // the lab's default target, MiB per GPU
  if (disaggregated) {
    memory.decode_signal = memory.signal;
    memory.decode_target = memory.target;
  }
  simulate(in, memory, shape, {}, step("rule check: an HPA on GPU memory"));
  ++done;
  Candidate no_gang = best;
  std::int64_t partial_gpu_hours_milli = 0;
  if (shape.pods_per_replica > 1) {
    no_gang.rejected.clear();
    RunOptions kube;
    kube.kube_scheduler = true;
    const RunResult r = simulate(in, no_gang, shape, kube, step("rule check: the replicas' pods one by one (kube-scheduler, no gang)"));
    partial_gpu_hours_milli = static_cast<std::int64_t>(std::llround(r.summary.partial_group_gpu_hours * 1000));
    ++done;
  }
  if (progress) progress(1.0, "done");
  // The cold start a warm pool has to cover: the longest creation → Ready of any run that added replicas.
  double cold_start_s = 0;
  for (const Candidate& c : rows) cold_start_s = std::max(cold_start_s, c.time_to_ready_s);
  cold_start_s = std::max({cold_start_s, what_if.time_to_ready_s, best.time_to_ready_s});
  const std::int64_t trap_evictions = trap_run.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Underutilized)];

  // The objects, each through the lab's own validator.
  const Json chosen_scenario = scenario_for(in, best, shape);
  const Scenario sc = parse_scenario(chosen_scenario);
  const Json nodepools = nodepools_json(in, best, shape);
  Json lint = Json::array();
  for (std::size_t k = 0; k < nodepools.size(); ++k) {
    const NodePool parsed_pool = parse_nodepool(nodepools[k], "/plan/nodepools/" + std::to_string(k));
    for (const NodePoolWarning& w : lint_nodepool(parsed_pool, nodepools[k]))
      if (std::find(lint.begin(), lint.end(), Json(w.message)) == lint.end()) lint.push_back(w.message);
  }
  // Each pool's autoscaler and model server (one pool aggregated; prefill and decode disaggregated).
  Json autoscalers = Json::array(), workloads = Json::array();
  const std::vector<Role> roles = roles_of(best);
  for (std::size_t k = 0; k < roles.size(); ++k) {
    const Json a = deployed_autoscaler(in, roles[k], best.max_replicas, *sc.pools.at(k).autoscaler.hpa);
    if (a.at("kind") == "HorizontalPodAutoscaler") hpa::parse_hpa_spec(a.at("spec"), "/plan/autoscalers/" + std::to_string(k) + "/spec");
    autoscalers.push_back(a);
    workloads.push_back(workload_json(in, roles[k], shape, engine_profile(best.engine_profile)));
  }
  const Json queues = kai_queues(in, shape, best);
  read_queues(queues, "/plan/kai/queues");
  const bool gang = shape.pods_per_replica > 1;
  Json kai = {{"queues", queues},
              {"pod_labels", {{"kai.scheduler/queue", "inference"}}},
              {"schedulerName", "kai-scheduler"},
              {"podgroup", {{"minMember", shape.pods_per_replica}, {"priorityClassName", "inference"}}}};
  if (gang) {
    // The lesson's rule: TP/PP over nodes must be a gang, and its members close together.
    kai["topology"] = topology_annotations(in, shape);
    kai["topologies"] = Json::array({topology_cr(in)});
    read_topologies(kai["topologies"], "/plan/kai/topologies");
  }
  // Each rule with the run that checks it on this input: it confirms the rule, or the plan says the
  // simulation disagrees here and why the rule still stands.
  const auto rule = [&](const char* id, const std::string& reason, bool disagrees, const Candidate* run) {
    Json j = {{"rule", id}, {"applied", true}, {"reason", reason}, {"simulation_disagrees", disagrees}};
    if (run) j["run"] = candidate_json(*run);
    rules.push_back(j);
  };
  {
    const Candidate* util = nullptr;  // the cheapest duty-cycle run of stage 1 that met the SLO
    for (const Candidate& c : stage1)
      if (c.signal == "gpu_util" && c.meets_slo && (!util || c.node_cost_usd_per_hour < util->node_cost_usd_per_hour)) util = &c;
    const bool disagrees = util && util->node_cost_usd_per_hour <= chosen1->node_cost_usd_per_hour;
    rule("no_gpu_util_hpa",
         disagrees ? "the simulation disagrees on this input: on " + chosen1->instance_type + " (" + chosen1->capacity_type +
                         ") the duty-cycle HPA met the SLO at $" + num(util->node_cost_usd_per_hour, 2) + "/h against $" +
                         num(chosen1->node_cost_usd_per_hour, 2) + "/h for " + scaler_words(*chosen1) +
                         " there. The rule stands: the duty cycle saturates at 100 % with one request or a hundred, so it scales toward its maximum on any load, which this burst happened to need"
         : util ? "confirmed: on " + chosen1->instance_type + " (" + chosen1->capacity_type + ") the duty-cycle HPA met the SLO only at $" +
                      num(util->node_cost_usd_per_hour, 2) + "/h, against $" + num(chosen1->node_cost_usd_per_hour, 2) + "/h for " + scaler_words(*chosen1) + " there"
                : std::string("confirmed: no duty-cycle HPA run met the SLO"),
         disagrees, util);
  }
  {
    const bool disagrees = trap.meets_slo && trap_evictions == 0;
    rule("when_empty_on_gpu_pool",
         disagrees ? "the simulation disagrees on this input: WhenEmptyOrUnderutilized/0s evicted no model server in the hour (SLO " + num(trap.slo_attainment * 100, 1) +
                         " %). The rule stands: it may delete any node whose pods fit elsewhere, and a moved replica reloads its weights for minutes"
                   : "confirmed: WhenEmptyOrUnderutilized/0s evicted " + std::to_string(trap_evictions) + " replicas to consolidate (SLO " +
                         num(trap.slo_attainment * 100, 1) + " % against " + num(best.slo_attainment * 100, 1) + " %)",
         disagrees, &trap);
  }
  {
    const bool disagrees = memory.meets_slo && memory.node_cost_usd_per_hour <= best.node_cost_usd_per_hour;
    rule("no_gpu_memory_signal",
         disagrees ? std::string("the simulation disagrees on this input: an HPA on GPU memory met the SLO at no more cost. The refusal stands: vLLM claims "
                                 "--gpu-memory-utilization of each GPU at start, so the signal reads full from the first request and never lets the pool scale down")
                   : "confirmed: an HPA on GPU memory reached " + std::to_string(memory.peak_replicas) + " replicas at $" + num(memory.node_cost_usd_per_hour, 2) +
                         "/h (SLO " + num(memory.slo_attainment * 100, 1) + " %): vLLM claims the memory at start, so the signal reads full whatever the load",
         disagrees, &memory);
  }
  if (gang) {
    const bool disagrees = partial_gpu_hours_milli == 0 && no_gang.meets_slo;
    rule("gang_for_tp_pp",
         disagrees ? std::string("the simulation disagrees on this input: placed pod by pod, no replica was left partly placed. The rule stands: with fewer free GPUs "
                                 "than a replica needs, kube-scheduler binds some of its pods and they hold their GPUs while serving nothing")
                   : "confirmed: each replica is " + std::to_string(shape.pods_per_replica) + " pods of " + std::to_string(shape.gpus_per_pod) +
                         " GPUs; placed pod by pod (kube-scheduler), partly placed replicas held " + num(static_cast<double>(partial_gpu_hours_milli) / 1000, 2) +
                         " GPU-hours serving nothing",
         disagrees, &no_gang);
  }
  if (disaggregated) {
    // The lesson's per-role rule (exercise 4): prefill on its queue, decode on its KV cache. The
    // cheapest run of that pair beside the chosen one.
    const Candidate* lesson = nullptr;
    for (const Candidate& c : stage1)
      if (c.signal == "queue_depth" && c.decode_signal == "kv_cache" && c.meets_slo && (!lesson || c.node_cost_usd_per_hour < lesson->node_cost_usd_per_hour)) lesson = &c;
    const bool agrees = chosen1->signal == "queue_depth" && chosen1->decode_signal == "kv_cache";
    rule("per_role_signals",
         agrees ? "confirmed: the cheapest pair that met the SLO scales prefill on its queue and decode on its KV cache ($" +
                      num(chosen1->node_cost_usd_per_hour, 2) + "/h)"
                : "the simulation disagrees on this input: the cheapest pair that met the SLO was " + scaler_words(*chosen1) + " at $" +
                      num(chosen1->node_cost_usd_per_hour, 2) + "/h; " +
                      (lesson ? "the lesson's pair met it at $" + num(lesson->node_cost_usd_per_hour, 2) + "/h" : std::string("the lesson's pair did not meet it")) +
                      ". The rule stands as guidance: a prefill server is compute-bound and its backlog is its queue, a decode server is memory-bound and its KV cache fills before its queue grows",
         !agrees, lesson);
  }
  // The warm pool: what the runs of the chosen autoscaler with fewer warm replicas showed.
  std::string fewer;
  for (const Candidate& c : stage1) {
    if (c.signal != chosen1->signal || c.target != chosen1->target || c.decode_signal != chosen1->decode_signal ||
        c.decode_target != chosen1->decode_target || c.warm >= best.warm)
      continue;
    fewer += std::string(fewer.empty() ? "" : "; ") + warm_text(c) + ": " +
             (c.meets_slo ? "met the SLO at $" + num(c.node_cost_usd_per_hour, 2) + "/h" : c.rejected.front());
  }
  const std::string warm_reason =
      "a new replica took up to " + num(cold_start_s, 0) + " s from creation to serving in the simulated runs (node launch, image, weights, warm-up), " +
      num(cold_start_s / in.ttft_p99_s, 0) + " times the " + num(in.ttft_p99_s, 1) + " s TTFT target, so a burst's first minutes are served by the " +
      warm_text(best) +
      (fewer.empty() ? std::string(" (the least the autoscaler keeps)") : ". With fewer: " + fewer);
  const Json dashboard = Json::array({"sum(vllm:num_requests_waiting) per replica (queue depth)", "vllm:kv_cache_usage_perc per replica",
                                      "P99 of vllm:time_to_first_token_seconds against " + num(in.ttft_p99_s, 2) + " s",
                                      "Karpenter: karpenter_nodeclaims_created and the pods' Pending time (node provisioning wait)",
                                      "KAI: PodGroups Pending and their Unschedulable events (gang deferrals)",
                                      "Karpenter disruption: karpenter_voluntary_disruption_decisions_total (consolidation events)"});
  Json candidates = Json::array();
  for (const Candidate& c : rows) candidates.push_back(candidate_json(c));
  Json out = {{"verdict", "plan"},
          {"input", input_json(in)},
          {"chosen", candidate_json(best)},
          {"plan",
           {{"nodepools", nodepools},
            {"nodepool_lint", lint},
            {"ec2nodeclass", ec2nodeclass_json()},
            {"autoscalers", autoscalers},
            {"kai", kai},
            {"warm_pool",
             {{"replicas", best.warm + (disaggregated ? best.decode_warm : 0)},
              {"roles", disaggregated ? Json{{"prefill", best.warm}, {"decode", best.decode_warm}} : Json{{"aggregated", best.warm}}},
              {"cold_start_s", cold_start_s},
              {"reason", warm_reason}}},
            {"dashboard", dashboard},
            {"scenario", chosen_scenario},
            {"workloads", workloads},
            {"kill_switch", "If the P99 TTFT stays above " + num(in.ttft_p99_s, 2) + " s for 5 minutes, roll the autoscaler back to its last known-good state (" +
                                warm_text(best) + ", the previous " + autoscalers.at(0).at("kind").get<std::string>() + (disaggregated ? "s" : "") + ")."}}},
          {"what_if", candidate_json(what_if)},
          {"rules", rules},
          {"candidates", candidates}};
  if (!load.is_null()) out["load_from_concurrency"] = load;
  return out;
}

}  // namespace gpuscale::plan
