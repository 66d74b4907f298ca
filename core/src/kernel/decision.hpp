// The decision record every controller returns with what it decided: when, who, the replica counts
// it saw and asked for, and the reason with its inputs and arithmetic. The simulation collects them
// into the run's decision log, which the page shows.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "gpuscale/json.hpp"

namespace gpuscale {

struct DecisionRecord {
  double t_s = 0;
  std::string controller;  // "hpa", "keda", "karpenter.*", "cluster-autoscaler", "kube-scheduler", "cloud", "lifecycle", "provisioner"
  std::string pool;        // the pool it concerns ("" in single-service scenarios, and for cluster-wide decisions there)
  std::int32_t current_replicas = 0;
  std::int32_t desired_replicas = 0;
  std::string reason;
  std::string explanation;
  Json detail;  // the controller's full arithmetic (proposals, stabilization, limits)
  // HPA syncs only: the winning metric's numbers, typed, for graders.
  double metric_value = 0;                 // the metric's current value (average or total), metric units
  double ratio = 0;                        // usage ratio of the first pass
  std::optional<double> rebalanced_ratio;  // after filling missing / unready pods with 0 or target
  std::int32_t metric_proposal = -1;       // that metric's proposal, before stabilization and limits
  std::int32_t ready_pods = 0, unready_pods = 0, missing_pods = 0;
  // Pods metrics: pods not (yet) Ready whose sample entered the average anyway (the HPA sets unready
  // pods aside only for CPU), and the sum of those samples, metric units. A loading replica's GPU
  // reads a 0 % duty cycle.
  std::int32_t not_ready_in_average = 0;
  double not_ready_sum = 0;
  // Set by the decision log once it folds: identical records after this one, and the last one's time.
  std::int64_t repeats = 0;
  double last_t_s = 0;
};

}  // namespace gpuscale
