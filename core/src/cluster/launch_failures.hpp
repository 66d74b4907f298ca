// The cloud's answer to a launch: EC2 refuses an offering (instance type, capacity type, zone) with
// InsufficientInstanceCapacity at the scenario's rate for it (/cluster/insufficient_capacity). One model,
// one seeded stream, for every provisioner: Karpenter falls back to the next offering of its NodeClaim
// and caches the refused one as unavailable; Cluster Autoscaler's node group (an ASG) gets no node and
// backs off.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/instance_types.hpp"
#include "kernel/rng.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// One entry of /cluster/insufficient_capacity.
struct InsufficientCapacityRate {
  std::string instance_type;                  // e.g. "p5.48xlarge" (must be in the catalogue)
  std::optional<CapacityType> capacity_type;  // nullopt: both on-demand and spot
  std::string zone;                           // "": every zone of the type
  double probability = 0;                     // of one launch attempt of a matching offering failing, 0 … 1
  Micros from = 0;                            // the entry holds from this time …
  Micros until = kNever;                      // … until just before this one (a spot reclaim's shortage)
};

class LaunchFailures {
 public:
  LaunchFailures() : rng_(0) {}
  LaunchFailures(std::vector<InsufficientCapacityRate> rates, std::uint64_t seed)
      : rates_(std::move(rates)), rng_(Rng::stream(seed, "cloud.capacity")) {}

  // The first entry that matches the offering (type, capacity type if given, zone if given) and holds
  // at `now`; 0 if none.
  double probability(const std::string& instance_type, CapacityType capacity_type, const std::string& zone, Micros now) const;
  // One launch attempt: true when EC2 answers InsufficientInstanceCapacity. Draws from the stream only
  // for offerings whose rate is above 0, so a scenario without the field draws nothing.
  bool insufficient_capacity(const std::string& instance_type, CapacityType capacity_type, const std::string& zone, Micros now);
  bool any() const { return !rates_.empty(); }

 private:
  std::vector<InsufficientCapacityRate> rates_;
  Rng rng_;
};

}  // namespace gpuscale
