// The plan's objects and the scenario each candidate runs (objects.hpp).
#include "plan/objects.hpp"

#include <algorithm>

#include "autoscaling/hpa_json.hpp"

namespace gpuscale::plan {

namespace {

// The narrowest level whose domain holds all of a multi-node replica's pods: its NVLink domain, else its
// rack, else its zone.
std::string gang_level(const PlanInput& in, const Shape& s) {
  if (in.nvlink_domain_nodes >= s.pods_per_replica && in.nvlink_domain_nodes > 1) return "nvidia.com/gpu.clique";
  if (in.racks > 0 && in.max_nodes / in.racks >= s.pods_per_replica) return "rack";
  return "topology.kubernetes.io/zone";
}

// The nodes the cluster starts with: enough for the warm replicas, as they would be running before the
// hour starts, filled domain by domain in the NodePools' order, a replica of several pods inside one.
Json initial_nodes_json(const PlanInput& in, const Candidate& c, const Shape& s) {
  int replicas = c.warm + (c.decode_signal.empty() ? 0 : c.decode_warm);
  const int per_node = std::max(1, s.type->gpus / std::max(1, s.gpus_per_pod));  // one-pod replicas per node
  Json out = Json::array();
  for (const Domain& d : domains_of(in, s)) {
    if (replicas <= 0) break;
    const int fit = s.pods_per_replica > 1 ? d.nodes / s.pods_per_replica : d.nodes * per_node;
    const int placed = std::min(fit, replicas);
    replicas -= placed;
    const int nodes = s.pods_per_replica > 1 ? placed * s.pods_per_replica : (placed + per_node - 1) / per_node;
    if (nodes == 0) continue;
    Json e = {{"instance_type", c.instance_type}, {"capacity_type", c.capacity_type}, {"owner", d.pool}, {"count", nodes}};
    if (!in.zones.empty()) e["zone"] = in.zones.front();
    out.push_back(e);
  }
  return out;
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

}  // namespace

// A NodePool per placement domain, its nodes labelled with the domain: Karpenter labels a node with its
// NodePool's template labels, and fills the pools in weight order, then by name.
Json nodepools_json(const PlanInput& in, const Candidate& c, const Shape& s) {
  Json requirements = Json::array({{{"key", "node.kubernetes.io/instance-type"}, {"operator", "In"}, {"values", {c.instance_type}}},
                                   {{"key", "karpenter.sh/capacity-type"}, {"operator", "In"}, {"values", {c.capacity_type}}}});
  if (!in.zones.empty()) requirements.push_back({{"key", "topology.kubernetes.io/zone"}, {"operator", "In"}, {"values", in.zones}});
  Json pools = Json::array();
  for (const Domain& d : domains_of(in, s)) {
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

Json scenario_for(const PlanInput& in, const Candidate& c, const Shape& s, const RunOptions& o) {
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
  sc["cluster"]["initial_nodes"] = initial_nodes_json(in, c, s);
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
  // Over nodes vLLM runs on Ray: the leader starts the Ray head, waits for the group's workers to join
  // and serves; each worker joins the leader's Ray head and serves nothing itself (vLLM's
  // examples/online_serving/multi-node-serving.sh, as its LeaderWorkerSet deployment uses it).
  std::string serve = "vllm serve MODEL_ID";
  for (std::size_t i = 2; i < args.size(); ++i) serve += " " + (args[i].get<std::string>().find('{') != std::string::npos ? "'" + args[i].get<std::string>() + "'" : args[i].get<std::string>());
  const std::string script = "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh";
  Json leader = pod, worker = pod;
  leader["containers"][0].erase("args");
  leader["containers"][0]["command"] = Json::array({"sh", "-c", script + " leader --ray_cluster_size=$(LWS_GROUP_SIZE); " + serve + " --port 8000"});
  worker["containers"][0].erase("args");
  worker["containers"][0].erase("ports");
  worker["containers"][0].erase("readinessProbe");
  worker["containers"][0]["command"] = Json::array({"sh", "-c", script + " worker --ray_address=$(LWS_LEADER_ADDRESS)"});
  return {{"apiVersion", "leaderworkerset.x-k8s.io/v1"},
          {"kind", "LeaderWorkerSet"},
          // KAI's pod-grouper reads the topology annotations of the pods' top owner, the LeaderWorkerSet.
          {"metadata", {{"name", role.name}, {"annotations", topology_annotations(in, s)}}},
          {"spec",
           {{"replicas", role.warm},
            {"leaderWorkerTemplate",
             {{"size", s.pods_per_replica},
              {"restartPolicy", "RecreateGroupOnPodRestart"},
              {"leaderTemplate", {{"metadata", {{"labels", labels}}}, {"spec", leader}}},
              {"workerTemplate", {{"metadata", {{"labels", labels}}}, {"spec", worker}}}}}}}};
}

// The deployed autoscaler of a pool: a KEDA ScaledObject for queue depth (its prometheus trigger makes
// the HPA KEDA generates), else the autoscaling/v2 HPA the run used.
Json deployed_autoscaler(const Role& role, const Shape& s, int max_replicas, const hpa::HorizontalPodAutoscalerSpec& hpa) {
  const Json behavior = autoscaler_json(role.signal, role.target, role.warm, max_replicas).at("behavior");
  // A replica of several pods is a LeaderWorkerSet, which has the scale subresource an HPA drives.
  const Json target = s.pods_per_replica > 1 ? Json{{"apiVersion", "leaderworkerset.x-k8s.io/v1"}, {"kind", "LeaderWorkerSet"}, {"name", role.name}}
                                             : Json{{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", role.name}};
  if (role.signal == "queue_depth") {
    // The pool's own servers' queue, by their pods' names (vLLM labels its metrics with the served
    // model's name, which a disaggregated model's two pools share).
    const std::string selector = "pod=~\"" + role.name + "-.*\"";
    return {{"apiVersion", "keda.sh/v1alpha1"},
            {"kind", "ScaledObject"},
            {"metadata", {{"name", role.name}}},
            {"spec",
             {{"scaleTargetRef", target},
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
  spec["scaleTargetRef"] = target;
  // An external metric is the pool's own series when another pool of the model exists beside it.
  if (role.role != "aggregated") {
    for (Json& m : spec["metrics"]) {
      if (m.value("type", "") == "External") m["external"]["metric"]["selector"] = {{"matchLabels", {{"deployment", role.name}}}};
    }
  }
  return {{"apiVersion", "autoscaling/v2"}, {"kind", "HorizontalPodAutoscaler"}, {"metadata", {{"name", role.name}}}, {"spec", spec}};
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
  if (in.training_gpus > 0) {
    const int limit = std::min(in.training_gpus, pool);
    queues.push_back(queue_cr("training", "gpu-pool", 50, std::min(limit, std::max(0, pool - inference)), limit));
  }
  return queues;
}

}  // namespace gpuscale::plan
