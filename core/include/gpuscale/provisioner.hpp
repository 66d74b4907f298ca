// Node provisioning behind one interface: a replica asks for GPUs, the provisioner says when its
// node will be ready (GPUs advertised by the device plugin) and why. The fixed-delay provisioner
// lives here; Karpenter and Cluster Autoscaler implement the same interface.
#pragma once
#include <cstdint>
#include <string>

#include "gpuscale/time.hpp"

namespace gpuscale {

struct NodeRequest {
  std::uint32_t replica = 0;
  int gpus = 0;           // nvidia.com/gpu requested by the replica's pod
  Micros requested_at = 0;
};

struct ProvisioningDecision {
  Micros node_ready_at = 0;  // when the pod can bind and its container starts
  std::string explanation;   // the inputs and arithmetic, for the decision log
};

class NodeProvisioner {
 public:
  virtual ~NodeProvisioner() = default;
  virtual const char* name() const = 0;
  virtual ProvisioningDecision provision(const NodeRequest& request, Micros now) = 0;
  // The replica's pod is gone; its GPUs are free.
  virtual void release(std::uint32_t replica, Micros now) = 0;
};

// Every request gets a node after the same delay (0 when nodes are kept warm).
class FixedDelayProvisioner final : public NodeProvisioner {
 public:
  explicit FixedDelayProvisioner(Micros delay) : delay_(delay) {}
  const char* name() const override { return "fixed-delay"; }
  ProvisioningDecision provision(const NodeRequest& request, Micros now) override;
  void release(std::uint32_t, Micros) override {}

 private:
  Micros delay_;
};

}  // namespace gpuscale
