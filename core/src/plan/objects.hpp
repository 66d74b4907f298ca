// The plan's objects in their real formats (docs/plan.md, "Output"), and the scenario each candidate
// runs: NodePools per placement domain, the EC2NodeClass, KAI's Topology, queues and annotations, the
// model servers and their autoscalers.
#pragma once
#include <string>

#include "autoscaling/hpa.hpp"
#include "gpuscale/json.hpp"
#include "plan/candidate.hpp"
#include "serving/engine.hpp"

namespace gpuscale::plan {

// A NodePool per placement domain (one, without racks or multi-node NVLink domains).
Json nodepools_json(const PlanInput& in, const Candidate& c, const Shape& s);
// The node class the pools name.
Json ec2nodeclass_json();
// KAI's Topology (kai.scheduler/v1alpha1) over the labels the nodes carry.
Json topology_cr(const PlanInput& in);
// A multi-node replica's topology annotations (KAI's pod-grouper reads them from the top owner).
Json topology_annotations(const PlanInput& in, const Shape& s);
// A pool's autoscaler in the scenario's form.
Json autoscaler_json(const std::string& signal, double target, int warm, int max_replicas);
// The scenario a candidate runs: the described hour under Karpenter and KAI Scheduler.
Json scenario_for(const PlanInput& in, const Candidate& c, const Shape& s, const RunOptions& o = {});
// The model server of a pool: a Deployment, or a LeaderWorkerSet for a replica larger than a node.
Json workload_json(const PlanInput& in, const Role& role, const Shape& s, const EngineProfile& p);
// The deployed autoscaler of a pool: a KEDA ScaledObject or the autoscaling/v2 HPA the run used.
Json deployed_autoscaler(const Role& role, const Shape& s, int max_replicas, const hpa::HorizontalPodAutoscalerSpec& hpa);
// The scheduling.run.ai/v2 Queues: the pool, inference and (with a tenant) training.
Json kai_queues(const PlanInput& in, const Shape& s, const Candidate& c);

}  // namespace gpuscale::plan
