// KAI Scheduler's fair share (the proportion plugin), computed every scheduling cycle for every
// resource, top-down through the queue hierarchy (real-systems.md §5.3). Ported from
// kai-scheduler/KAI-Scheduler pkg/scheduler/plugins/proportion/resource_division/resource_division.go
// (setResourceShare, divideOverQuotaResource, divideUpToFairShare, divideRemainingResource) and
// proportion.go (setFairShareForQueues); the shares' accessors from resource_share/resource_share.go.
//
// Among siblings:
//  1. deserved: each gets min(quota, what it can request); a quota of -1 gets the whole amount;
//  2. over quota, by priority bucket, highest first: rounds in which each unsatisfied queue gets
//     min(what it still requests, floor(amount × its weight / Σ weights)), the weight being
//     max(0, w + k·(w − usage)) with w its overQuotaWeight over the unsatisfied ones' sum;
//  3. the fractions the floors left go one unit at a time to the largest fraction (ties: created
//     earlier, then the name).
// A parent's fair share is then divided among its children the same way.
//
// Upstream iterates Go maps (random order); the order matters only when the amount runs out inside
// a round, and here queues are always taken by name, so a division is deterministic.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuscale::kai {

constexpr double kUnlimited = -1;  // commonconstants.UnlimitedResourceQuantity

// One resource (GPUs, CPU millicores or memory MB) of one queue (resource_share.go ResourceShare).
struct ResourceShare {
  double deserved = 0;                 // spec.resources.<r>.quota; kUnlimited: the whole amount
  double fair_share = 0;               // the division's result
  double max_allowed = kUnlimited;     // spec.resources.<r>.limit; kUnlimited: no limit
  double over_quota_weight = 1;        // spec.resources.<r>.overQuotaWeight
  double allocated = 0;
  double allocated_not_preemptible = 0;
  double request = 0;                  // its jobs' requests, allocated and pending, children's included
  double usage = 0;                    // historical usage / cluster capacity (0 unless time-based fair share is on)
  // GetRequestableShare: the request, capped by the limit.
  double requestable() const { return max_allowed == kUnlimited ? request : (max_allowed < request ? max_allowed : request); }
};

enum Resource : int { Gpu = 0, Cpu = 1, Memory = 2 };
constexpr int kNumResources = 3;
const char* resource_name(Resource r);  // "gpu", "cpu", "memory"

struct Queue {
  std::string name;           // metadata.name (also its UID here)
  std::string parent;         // spec.parentQueue; "" for a top queue
  int priority = 100;         // spec.priority
  std::int64_t created = 0;   // creation order: smaller = older
  ResourceShare resources[kNumResources];
};

// What one division did, in words: each grant with its arithmetic (for the decision log and the
// diagnosis view).
struct DivisionTrace {
  std::vector<std::string> lines;
};

// Divides `total` of one resource among `siblings` (indices into `queues`); sets their fair_share
// (added to what they hold) and returns what is left. k_value: the proportion plugin's kValue (1.0).
double divide_resource(double total, double k_value, Resource r, std::vector<Queue>& queues,
                       const std::vector<std::size_t>& siblings, DivisionTrace* trace = nullptr);

// The whole hierarchy: the top queues divide `total`, each parent's fair share goes to its children.
// Every fair_share is reset first. Returns what the top level left undivided, per resource.
struct Totals {
  double amount[kNumResources] = {0, 0, 0};
};
Totals set_fair_shares(std::vector<Queue>& queues, const Totals& total, double k_value = 1.0, DivisionTrace* trace = nullptr);

}  // namespace gpuscale::kai
