// The plan designer's shared pieces (docs/plan.md): a candidate plan and what its run showed, the
// replica's shape on an instance type, the model-server pools a candidate deploys, and how they read in
// words. Private to core/src/plan/: the search (plan.cpp), the objects (objects.cpp), the input (input.cpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cluster/instance_types.hpp"
#include "gpuscale/json.hpp"
#include "plan/plan.hpp"

namespace gpuscale::plan {

inline constexpr const char* kPoolName = "gpu";
inline constexpr const char* kDeployment = "vllm";
inline constexpr const char* kModel = "model";  // the served model's name in a disaggregated run

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

// A replica on an instance type: its GPUs, and its pods when it is larger than a node.
struct Shape {
  const InstanceType* type = nullptr;
  int gpus_per_replica = 0;
  int pods_per_replica = 1;  // > 1: a LeaderWorkerSet of that size (PP across nodes)
  int gpus_per_pod = 0;
  int replicas_per_node = 0;
};

// A placement domain of the topology and its NodePool: a rack (as even as the nodes allow), or an NVLink
// domain of nvlink_domain_nodes nodes inside one. Without racks or multi-node NVLink: one, the cluster.
struct Domain {
  std::string pool;    // its NodePool's name
  std::string rack;    // the node label "rack" ("" without racks)
  std::string clique;  // the node label "nvidia.com/gpu.clique" ("" without multi-node NVLink)
  int nodes = 0;       // the nodes its NodePool may launch
};
// The domains for replicas of this shape. A replica of several pods must be placed inside one domain,
// so a domain's nodes are cut to a multiple of a replica's pods (the rest could only hold part of a
// gang, which Karpenter would launch for a split replica KAI never binds), and a domain too small for
// one replica has no NodePool.
std::vector<Domain> domains_of(const PlanInput& in, const Shape& s);

// The model's replica on this type (the profile's TP × PP GPUs; a pod per pipeline stage when larger than a node).
Shape shape_of(const std::string& profile, const InstanceType& type);
// How many replicas the domains' nodes of the shape's type hold.
int max_replicas_for(const PlanInput& in, const Shape& s);

// How a run differs from the plan as written: a bigger burst, another consolidation policy, another
// scheduler (the rule checks).
struct RunOptions {
  double burst_factor = 0;  // 0: the input's
  bool consolidate_underutilized = false;  // WhenEmptyOrUnderutilized/0s instead of WhenEmpty/1h
  bool kube_scheduler = false;             // default-scheduler, pod by pod, instead of KAI's gangs
};

// The plan's model-server pools: one aggregated pool, or a prefill and a decode pool of one model.
struct Role {
  std::string role;  // "aggregated", "prefill" or "decode"
  std::string name;  // the Deployment's (and the scenario pool's) name
  std::string signal;
  double target = 0;
  int warm = 1;
};
std::vector<Role> roles_of(const Candidate& c);

// "2.50": a figure for the plan's sentences.
std::string num(double v, int decimals);
// "queue_depth 2" or, disaggregated, "prefill queue_depth 2, decode kv_cache 0.70".
std::string scaler_label(const Candidate& c);
// "queue_depth" or "prefill on queue_depth, decode on kv_cache": the autoscalers in words.
std::string scaler_words(const Candidate& c);
// "2 warm replicas" or "1 warm prefill and 2 warm decode replicas".
std::string warm_text(const Candidate& c);
// A candidate as the plan's output shows it (docs/plan.md, "Output").
Json candidate_json(const Candidate& c);

}  // namespace gpuscale::plan
