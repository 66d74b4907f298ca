// The fixed-delay node provisioner.
#include "gpuscale/provisioner.hpp"

#include <cstdio>

namespace gpuscale {

ProvisioningDecision FixedDelayProvisioner::provision(const NodeRequest& request, Micros now) {
  ProvisioningDecision d;
  d.node_ready_at = now + delay_;
  char buf[200];
  std::snprintf(buf, sizeof buf, "replica %u asks for %d GPUs; fixed-delay provisioner: node ready after %.1f s, at t=%.1f s",
                request.replica, request.gpus, micros_to_seconds(delay_), micros_to_seconds(d.node_ready_at));
  d.explanation = buf;
  return d;
}

}  // namespace gpuscale
