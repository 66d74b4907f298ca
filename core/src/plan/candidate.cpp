// The plan designer's shared pieces (candidate.hpp).
#include "plan/candidate.hpp"

#include <algorithm>
#include <cstdio>

#include "serving/engine_profiles.hpp"

namespace gpuscale::plan {

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

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

std::vector<Domain> domains_of(const PlanInput& in, const Shape& s) {
  // Nodes of a domain a NodePool may launch: whole replicas' worth when a replica spans nodes.
  const auto usable = [&](int nodes) { return s.pods_per_replica > 1 ? nodes / s.pods_per_replica * s.pods_per_replica : nodes; };
  std::vector<Domain> out;
  if (in.racks == 0 && in.nvlink_domain_nodes <= 1) {
    if (usable(in.max_nodes) > 0) out.push_back({kPoolName, "", "", usable(in.max_nodes)});
    return out;
  }
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
      d.nodes = usable(std::min(per, left));
      if (d.nodes > 0) out.push_back(d);
    }
  }
  return out;
}

int max_replicas_for(const PlanInput& in, const Shape& s) {
  int replicas = 0;
  for (const Domain& d : domains_of(in, s)) {
    replicas += s.pods_per_replica > 1 ? d.nodes / s.pods_per_replica : d.nodes * (s.type->gpus / std::max(1, s.gpus_per_pod));
  }
  return replicas;
}

std::vector<Role> roles_of(const Candidate& c) {
  if (c.decode_signal.empty()) return {{"aggregated", kDeployment, c.signal, c.target, c.warm}};
  return {{"prefill", std::string(kDeployment) + "-prefill", c.signal, c.target, c.warm},
          {"decode", std::string(kDeployment) + "-decode", c.decode_signal, c.decode_target, c.decode_warm}};
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

std::string scaler_label(const Candidate& c) {
  const std::string own = c.signal + " " + num(c.target, 2);
  return c.decode_signal.empty() ? own : "prefill " + own + ", decode " + c.decode_signal + " " + num(c.decode_target, 2);
}

std::string scaler_words(const Candidate& c) {
  return c.decode_signal.empty() ? c.signal : "prefill on " + c.signal + ", decode on " + c.decode_signal;
}

std::string warm_text(const Candidate& c) {
  if (c.decode_signal.empty()) return std::to_string(c.warm) + " warm replica" + (c.warm == 1 ? "" : "s");
  return std::to_string(c.warm) + " warm prefill and " + std::to_string(c.decode_warm) + " warm decode replica" + (c.decode_warm == 1 ? "" : "s");
}

}  // namespace gpuscale::plan
