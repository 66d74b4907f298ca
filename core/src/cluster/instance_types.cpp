// The instance catalogue (see instance_types.hpp).
#include "cluster/instance_types.hpp"

#include <algorithm>

namespace gpuscale {

extern const char* const kInstanceTypesJson;

std::vector<InstanceType> parse_instance_types(const Json& doc, const std::string& path) {
  std::vector<InstanceType> out;
  expect_array(doc, path, 100);  // bounds the offerings Karpenter simulates: types × 2 capacity types × zones
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    ObjectReader r(doc[i], p);
    InstanceType t;
    t.name = r.get_string("name", "");
    if (t.name.empty()) throw InputError(p + "/name", "every instance type needs a name");
    t.family = r.get_string("family", t.name.substr(0, t.name.find('.')));
    t.gpus = static_cast<int>(r.get_int("gpus", 0, 0, 64));
    t.gpu_name = r.get_string("gpu_name", "");
    t.gpu_manufacturer = r.get_string("gpu_manufacturer", t.gpus > 0 ? "nvidia" : "");
    t.gpu_memory_mib = r.get_int("gpu_memory_mib", 0, 0, 1 << 22);
    t.nvlink_domain = static_cast<int>(r.get_int("nvlink_domain", 0, 0, 1024));
    t.vcpu = static_cast<int>(r.get_int("vcpu", 1, 1, 4096));
    t.memory_gib = r.get_number("memory_gib", 1, 0.5, 65536);
    t.arch = r.get_enum("arch", "amd64", {"amd64", "arm64"});
    if (const Json* z = r.raw("zones")) {
      expect_array(*z, p + "/zones", 8);
      for (std::size_t k = 0; k < z->size(); ++k) {
        if (!(*z)[k].is_string()) throw InputError(p + "/zones/" + std::to_string(k), "expected a zone name");
        t.zones.push_back((*z)[k].get<std::string>());
      }
    }
    if (t.zones.empty()) t.zones.push_back("zone-a");
    t.on_demand_usd_per_hour = r.get_number("on_demand_usd_per_hour", 0, 0, 10000);
    t.spot_usd_per_hour = r.get_number("spot_usd_per_hour", 0, 0, 10000);
    t.source = r.get_string("source", "", 4096);
    r.finish();
    for (const auto& other : out) {
      if (other.name == t.name) throw InputError(p + "/name", "\"" + t.name + "\" appears twice");
    }
    out.push_back(std::move(t));
  }
  return out;
}

const std::vector<InstanceType>& default_instance_types() {
  static const std::vector<InstanceType> types = parse_instance_types(Json::parse(kInstanceTypesJson), "/instance_types");
  return types;
}

Json default_instance_types_json() { return Json::parse(kInstanceTypesJson); }

const InstanceType* find_instance_type(const std::vector<InstanceType>& types, const std::string& name) {
  for (const auto& t : types) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

double hourly_price(const InstanceType& type, CapacityType capacity) {
  return capacity == CapacityType::Spot ? type.spot_usd_per_hour : type.on_demand_usd_per_hour;
}

Labels instance_labels(const InstanceType& type, CapacityType capacity_type, const std::string& zone) {
  Labels l;
  l["node.kubernetes.io/instance-type"] = type.name;
  l["karpenter.k8s.aws/instance-family"] = type.family;
  l["karpenter.k8s.aws/instance-cpu"] = std::to_string(type.vcpu);
  l["karpenter.k8s.aws/instance-memory"] = std::to_string(static_cast<long long>(type.memory_gib * 1024));
  // The AWS provider sets the GPU labels only on types that have GPUs (so DoesNotExist selects CPU types).
  if (type.gpus > 0) {
    l["karpenter.k8s.aws/instance-gpu-count"] = std::to_string(type.gpus);
    l["karpenter.k8s.aws/instance-gpu-name"] = type.gpu_name;
    l["karpenter.k8s.aws/instance-gpu-manufacturer"] = type.gpu_manufacturer;
    l["karpenter.k8s.aws/instance-gpu-memory"] = std::to_string(type.gpu_memory_mib);
    l["k8s.amazonaws.com/accelerator"] = type.gpu_name;  // the GPU label Cluster Autoscaler looks for on AWS
  }
  l["kubernetes.io/arch"] = type.arch;
  l["kubernetes.io/os"] = "linux";
  l["topology.kubernetes.io/zone"] = zone;
  l["karpenter.sh/capacity-type"] = to_string(capacity_type);
  return l;
}

// EKS kubelet reservations (amazon-eks-ami bootstrap): CPU 6 % of the first core, 1 % of the second,
// 0.5 % of cores 3–4, 0.25 % of the rest; memory 255 MiB + 11 MiB per max pod (110 pods assumed) plus
// the 100 MiB eviction threshold.
std::int64_t allocatable_cpu_milli(const InstanceType& type) {
  const std::int64_t cores = type.vcpu;
  std::int64_t reserved = 60;
  if (cores >= 2) reserved += 10;
  if (cores >= 3) reserved += 5 * std::min<std::int64_t>(cores - 2, 2);
  if (cores > 4) reserved += (cores - 4) * 25 / 10;
  return cores * 1000 - reserved;
}

std::int64_t allocatable_memory_mib(const InstanceType& type) {
  const auto total = static_cast<std::int64_t>(type.memory_gib * 1024);
  return total - (255 + 11 * 110) - 100;
}

}  // namespace gpuscale
