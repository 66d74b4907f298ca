// The cloud's launch failures (see launch_failures.hpp).
#include "cluster/launch_failures.hpp"

namespace gpuscale {

double LaunchFailures::probability(const std::string& instance_type, CapacityType capacity_type, const std::string& zone, Micros now) const {
  for (const auto& r : rates_) {
    if (now < r.from || now >= r.until) continue;
    if (r.instance_type != instance_type) continue;
    if (r.capacity_type && *r.capacity_type != capacity_type) continue;
    if (!r.zone.empty() && r.zone != zone) continue;
    return r.probability;
  }
  return 0;
}

bool LaunchFailures::insufficient_capacity(const std::string& instance_type, CapacityType capacity_type, const std::string& zone, Micros now) {
  const double p = probability(instance_type, capacity_type, zone, now);
  if (p <= 0) return false;
  if (p >= 1) return true;
  return rng_.uniform() < p;
}

}  // namespace gpuscale
