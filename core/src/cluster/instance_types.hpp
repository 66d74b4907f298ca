// The cloud's instance catalogue: types with their GPUs, CPUs, memory, zones and prices, the
// well-known labels a node of a type carries, and what the kubelet leaves allocatable.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "k8s/constraints.hpp"

namespace gpuscale {

// karpenter.sh/capacity-type.
enum class CapacityType : std::uint8_t { OnDemand, Spot };
inline constexpr Named<CapacityType> kCapacityTypes[] = {{"on-demand", CapacityType::OnDemand}, {"spot", CapacityType::Spot}};
inline const char* to_string(CapacityType c) { return name_of(c, kCapacityTypes); }

struct InstanceType {
  std::string name;                 // node.kubernetes.io/instance-type, e.g. "p5.48xlarge"
  std::string family;               // karpenter.k8s.aws/instance-family, e.g. "p5"
  int gpus = 0;                     // nvidia.com/gpu allocatable
  std::string gpu_name;             // karpenter.k8s.aws/instance-gpu-name, e.g. "h100" ("" for none)
  std::string gpu_manufacturer;     // karpenter.k8s.aws/instance-gpu-manufacturer, e.g. "nvidia"
  std::int64_t gpu_memory_mib = 0;  // karpenter.k8s.aws/instance-gpu-memory: MiB per GPU
  int nvlink_domain = 0;            // GPUs per NVLink domain (0: none)
  int vcpu = 0;                     // vCPUs (allocatable CPU is a little lower; see allocatable_cpu_milli)
  double memory_gib = 0;            // GiB
  std::string arch = "amd64";       // kubernetes.io/arch
  std::string cpu_manufacturer;     // karpenter.k8s.aws/instance-cpu-manufacturer, e.g. "amd" ("" = unknown: no label)
  std::string hypervisor;           // karpenter.k8s.aws/instance-hypervisor, e.g. "nitro" ("" = no label)
  std::int64_t local_nvme_gb = 0;   // karpenter.k8s.aws/instance-local-nvme: GB of instance-store NVMe (0 = none: no label)
  std::int64_t network_bandwidth_mbps = 0;  // karpenter.k8s.aws/instance-network-bandwidth (0 = unknown: no label)
  std::vector<std::string> zones;   // topology.kubernetes.io/zone values it is offered in
  double on_demand_usd_per_hour = 0;  // USD/h
  double spot_usd_per_hour = 0;       // USD/h; 0 = not offered as spot
  std::string source;               // where the numbers come from
};

// The default catalogue: data/instance-types.json, embedded into the core at build time.
const std::vector<InstanceType>& default_instance_types();
// The same catalogue as JSON (to edit prices or types in a scenario).
Json default_instance_types_json();
// Strict parse of a catalogue (an array of instance types) with path-named errors.
std::vector<InstanceType> parse_instance_types(const Json& doc, const std::string& path);
const InstanceType* find_instance_type(const std::vector<InstanceType>& types, const std::string& name);
// The catalogue's price of one node of the type at this capacity type, USD/h.
double hourly_price(const InstanceType& type, CapacityType capacity);

// The well-known labels a node of this type gets, as the AWS provider derives them from the type
// (aws/karpenter-provider-aws pkg/providers/instancetype/types.go computeRequirements): instance type,
// category, family, generation, size, capability-flex, CPU, memory, CPU manufacturer, hypervisor, local
// NVMe, network bandwidth, the GPU name/manufacturer/count/memory (GPU types only), arch, OS, zone,
// region, capacity type. A label whose value the catalogue does not know is absent (DoesNotExist), as the
// provider leaves it when EC2 reports nothing.
Labels instance_labels(const InstanceType& type, CapacityType capacity_type, const std::string& zone);
// Label keys Karpenter knows (karpenter's pkg/apis/v1/labels.go WellKnownLabels plus those the AWS
// provider registers in its labels.go init). A NodePool requirement on any other key becomes a node label;
// one on these keys only selects among the instance types' own labels.
bool is_well_known_label(const std::string& key);
// The values Karpenter accepts for a well-known label that has a closed set (WellKnownValuesForRequirements:
// karpenter.sh/capacity-type → on-demand, spot, reserved), or nullptr.
const std::vector<std::string>* well_known_values(const std::string& key);

// Allocatable resources of a type, after the kubelet's reservations (EKS formula for CPU and memory,
// documented in the .cpp). GPUs are all allocatable.
std::int64_t allocatable_cpu_milli(const InstanceType& type);
std::int64_t allocatable_memory_mib(const InstanceType& type);

}  // namespace gpuscale
