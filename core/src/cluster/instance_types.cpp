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
    t.cpu_manufacturer = r.get_enum("cpu_manufacturer", "", {"", "intel", "amd", "aws"});
    t.hypervisor = r.get_enum("hypervisor", "", {"", "nitro", "xen"});
    t.local_nvme_gb = r.get_int("local_nvme_gb", 0, 0, 1 << 22);
    t.network_bandwidth_mbps = r.get_int("network_bandwidth_mbps", 0, 0, 1 << 24);
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

namespace {

// types.go instanceTypeScheme `(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.`: the category is the leading letters,
// the generation the digits after them (and after an optional "-<n>tb"); "" when the name has no such form.
void category_and_generation(const std::string& name, std::string& category, std::string& generation) {
  const auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::size_t i = 0;
  while (i < name.size() && lower(name[i])) ++i;
  if (i == 0) return;
  std::size_t j = i;
  if (j < name.size() && name[j] == '-') {  // "-6tb"
    std::size_t k = j + 1;
    while (k < name.size() && digit(name[k])) ++k;
    if (k > j + 1 && name.compare(k, 2, "tb") == 0) j = k + 2;
  }
  std::size_t g = j;
  while (g < name.size() && digit(name[g])) ++g;
  if (g == j || name.find('.', g) == std::string::npos) return;
  category = name.substr(0, i);
  generation = name.substr(j, g - j);
}

// topology.kubernetes.io/region from a zone name such as "us-east-1a" (the zone's trailing letters
// after the region's final digit); "" for a zone name of another form.
std::string region_of(const std::string& zone) {
  std::size_t end = zone.size();
  while (end > 0 && zone[end - 1] >= 'a' && zone[end - 1] <= 'z') --end;
  if (end == zone.size() || end == 0 || zone[end - 1] < '0' || zone[end - 1] > '9') return "";
  return zone.substr(0, end);
}

}  // namespace

Labels instance_labels(const InstanceType& type, CapacityType capacity_type, const std::string& zone) {
  // aws/karpenter-provider-aws pkg/providers/instancetype/types.go computeRequirements.
  Labels l;
  l["node.kubernetes.io/instance-type"] = type.name;
  std::string category, generation;
  category_and_generation(type.name, category, generation);
  if (!category.empty()) {
    l["karpenter.k8s.aws/instance-category"] = category;
    l["karpenter.k8s.aws/instance-generation"] = generation;
  }
  const std::size_t dot = type.name.find('.');
  if (dot != std::string::npos && type.name.find('.', dot + 1) == std::string::npos) {
    l["karpenter.k8s.aws/instance-family"] = type.name.substr(0, dot);
    l["karpenter.k8s.aws/instance-size"] = type.name.substr(dot + 1);
  } else {
    l["karpenter.k8s.aws/instance-family"] = type.family;
  }
  l["karpenter.k8s.aws/instance-capability-flex"] = type.family.find("-flex") != std::string::npos ? "true" : "false";
  l["karpenter.k8s.aws/instance-cpu"] = std::to_string(type.vcpu);
  l["karpenter.k8s.aws/instance-memory"] = std::to_string(static_cast<long long>(type.memory_gib * 1024));
  if (!type.cpu_manufacturer.empty()) l["karpenter.k8s.aws/instance-cpu-manufacturer"] = type.cpu_manufacturer;
  if (!type.hypervisor.empty()) l["karpenter.k8s.aws/instance-hypervisor"] = type.hypervisor;
  if (type.local_nvme_gb > 0) l["karpenter.k8s.aws/instance-local-nvme"] = std::to_string(type.local_nvme_gb);
  if (type.network_bandwidth_mbps > 0) l["karpenter.k8s.aws/instance-network-bandwidth"] = std::to_string(type.network_bandwidth_mbps);
  // The GPU labels only on types that have GPUs (so DoesNotExist selects CPU types). Cluster Autoscaler's
  // GPU label (k8s.amazonaws.com/accelerator) is not one of them: on EKS the user puts it on the node group
  // (cluster-autoscaler/cloudprovider/aws/README.md, "Special note on GPU instances").
  if (type.gpus > 0) {
    l["karpenter.k8s.aws/instance-gpu-count"] = std::to_string(type.gpus);
    l["karpenter.k8s.aws/instance-gpu-name"] = type.gpu_name;
    l["karpenter.k8s.aws/instance-gpu-manufacturer"] = type.gpu_manufacturer;
    l["karpenter.k8s.aws/instance-gpu-memory"] = std::to_string(type.gpu_memory_mib);
  }
  l["kubernetes.io/arch"] = type.arch;
  l["kubernetes.io/os"] = "linux";
  l["topology.kubernetes.io/zone"] = zone;
  if (std::string region = region_of(zone); !region.empty()) l["topology.kubernetes.io/region"] = region;
  l["karpenter.sh/capacity-type"] = to_string(capacity_type);
  return l;
}

bool is_well_known_label(const std::string& key) {
  static const char* const kKeys[] = {
      // kubernetes-sigs/karpenter pkg/apis/v1/labels.go WellKnownLabels
      "karpenter.sh/nodepool", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
      "node.kubernetes.io/instance-type", "kubernetes.io/arch", "kubernetes.io/os", "karpenter.sh/capacity-type",
      "node.kubernetes.io/windows-build",
      // aws/karpenter-provider-aws pkg/apis/v1/labels.go init()
      "karpenter.k8s.aws/capacity-reservation-id", "karpenter.k8s.aws/capacity-reservation-type",
      "karpenter.k8s.aws/capacity-reservation-interruptible", "karpenter.k8s.aws/instance-hypervisor",
      "karpenter.k8s.aws/instance-encryption-in-transit-supported", "karpenter.k8s.aws/instance-nitro-enclaves-supported",
      "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-capability-flex", "karpenter.k8s.aws/instance-family",
      "karpenter.k8s.aws/instance-generation", "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-local-nvme",
      "karpenter.k8s.aws/instance-cpu", "karpenter.k8s.aws/instance-cpu-manufacturer",
      "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz", "karpenter.k8s.aws/instance-memory",
      "karpenter.k8s.aws/instance-ebs-bandwidth", "karpenter.k8s.aws/instance-network-bandwidth",
      "karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-manufacturer", "karpenter.k8s.aws/instance-gpu-count",
      "karpenter.k8s.aws/instance-gpu-memory", "karpenter.k8s.aws/instance-accelerator-name",
      "karpenter.k8s.aws/instance-accelerator-manufacturer", "karpenter.k8s.aws/instance-accelerator-count",
      "topology.k8s.aws/zone-id", "karpenter.k8s.aws/instance-tenancy", "karpenter.k8s.aws/placement-group-id",
      "karpenter.k8s.aws/placement-group-partition"};
  for (const char* k : kKeys) {
    if (key == k) return true;
  }
  return false;
}

const std::vector<std::string>* well_known_values(const std::string& key) {
  // karpenter pkg/apis/v1/labels.go WellKnownValuesForRequirements (the AWS provider adds instance-tenancy).
  static const std::vector<std::string> kCapacity = {"on-demand", "spot", "reserved"};
  static const std::vector<std::string> kTenancy = {"default", "dedicated"};
  if (key == "karpenter.sh/capacity-type") return &kCapacity;
  if (key == "karpenter.k8s.aws/instance-tenancy") return &kTenancy;
  return nullptr;
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
