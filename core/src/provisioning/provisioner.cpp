// The fixed-delay node layer (no cluster model).
#include "provisioning/provisioner.hpp"

#include <cstdio>

namespace gpuscale {

FixedDelayDecision FixedDelayNodes::provision(std::uint32_t replica, int gpus, Micros now) const {
  FixedDelayDecision d;
  d.node_ready_at = now + delay_;
  char buf[200];
  std::snprintf(buf, sizeof buf, "replica %u asks for %d GPUs; fixed-delay nodes: node ready after %.1f s, at t=%.1f s",
                replica, gpus, micros_to_seconds(delay_), micros_to_seconds(d.node_ready_at));
  d.explanation = buf;
  return d;
}

}  // namespace gpuscale
