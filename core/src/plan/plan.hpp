// The three-layer plan designer (docs/plan.md): from a cluster topology, a workload shape and an SLO,
// candidate plans (instance and capacity type, replica autoscaler and its warm pool) are simulated on
// the described workload and the cheapest that meets the SLO is written out as the objects that deploy
// it (NodePool, EC2NodeClass, the autoscaler, KAI's queues and gang settings), each checked by the lab's
// own validators, with the candidates it rejected and why.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpuscale/json.hpp"

namespace gpuscale::plan {

struct PlanInput {
  // Topology: the instance types the plan may use, their capacity types, how many nodes at most.
  std::vector<std::string> instance_types{"p5.48xlarge"};
  std::vector<std::string> capacity_types{"on-demand"};
  int max_nodes = 4;
  std::vector<std::string> zones;  // empty: any the catalogue offers
  int racks = 0;                   // 0: not described (no rack constraint); > 0: a NodePool per rack
  int nvlink_domain_nodes = 1;     // nodes per NVLink domain (1: NVLink inside a node only)
  double spot_interruptions_per_node_hour = 0;  // required when capacity_types has spot
  // Workload.
  std::string engine_profile = "llama-3.3-70b-fp8-tp2-h100-sxm5";
  std::string serving = "aggregated";
  double average_rps = 0.5;
  // Or the clients' average concurrency (requests in flight): converted to an arrival rate by a
  // closed-loop run (Little's law, docs/plan.md); 0: average_rps as given.
  int average_concurrency = 0;
  double burst_factor = 4;
  double burst_s = 900;
  double prompt_tokens = 2000, output_tokens = 300;
  double timeout_s = 60;
  double what_if_burst = 1.5;  // the "what if" run multiplies the burst by this
  // SLO.
  double ttft_p99_s = 2.0, itl_s = 0.05, attainment = 0.99;
  // Budget (USD per hour of the plan's nodes at its peak); 0: none.
  double budget_usd_per_hour = 0;
  // Tenants: GPUs a training queue may borrow from the same pool (0: inference alone).
  int training_gpus = 0;
  std::uint64_t seed = 1;
  // Choices the engineer pins (empty: searched). The lesson's rules refuse some of them outright.
  std::string pin_signal;         // the replica autoscaler's signal (disaggregated: the prefill pool's)
  std::string pin_decode_signal;  // disaggregated: the decode pool's
  bool gang = true;               // false: a multi-pod replica's pods placed one by one (kube-scheduler)
  std::string consolidation_policy = "WhenEmpty";
};

// Reads the input strictly (InputError with the field's path, docs/plan.md).
PlanInput parse_plan_input(const Json& input);

// Progress: the share of the candidate runs done and which runs now.
using PlanProgress = std::function<void(double fraction, const std::string& label)>;

// The plan: {verdict, plan: {...objects}, chosen: {...}, candidates: [...], rules: [...], what_if}.
Json make_plan(PlanInput input, const PlanProgress& progress = {});

}  // namespace gpuscale::plan
