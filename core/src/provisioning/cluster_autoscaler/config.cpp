// Cluster Autoscaler's configuration: its command-line flags by their real names and its node groups,
// strictly parsed (docs/cluster-autoscaler.md).
#include <algorithm>
#include <cstdlib>

#include "k8s/duration.hpp"
#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"

namespace gpuscale {

namespace {


Micros flag_duration(const Json& v, const std::string& path) {
  if (!v.is_string()) {
    throw InputError(path, "expected a duration string such as \"10m\" or \"1m30s\", found " + type_name(v));
  }
  return parse_duration(v.get<std::string>(), path);  // Go's time.ParseDuration, as CA's flag package
}

double flag_number(const Json& v, const std::string& path, double lo, double hi) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
    if (s.empty() || !end || *end != '\0') throw InputError(path, "\"" + s + "\" is not a number");
    return expect_number(Json(d), path, lo, hi);
  }
  return expect_number(v, path, lo, hi);
}

std::int64_t flag_int(const Json& v, const std::string& path, std::int64_t lo, std::int64_t hi) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    char* end = nullptr;
    const long long n = s.empty() ? 0 : std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || !end || *end != '\0') throw InputError(path, "\"" + s + "\" is not a whole number");
    return expect_int(Json(static_cast<std::int64_t>(n)), path, lo, hi);
  }
  return expect_int(v, path, lo, hi);
}

bool flag_bool(const Json& v, const std::string& path) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string() && v.get<std::string>() == "true") return true;
  if (v.is_string() && v.get<std::string>() == "false") return false;
  throw InputError(path, "expected true or false, found " + type_name(v));
}

ClusterAutoscalerFlags parse_flags(const Json& doc, const std::string& path) {
  ClusterAutoscalerFlags f;
  ObjectReader r(doc, path);
  const auto duration = [&](const char* name, Micros& out) {
    if (const Json* v = r.raw(name)) out = flag_duration(*v, r.child_path(name));
  };
  const auto number = [&](const char* name, double& out, double lo, double hi) {
    if (const Json* v = r.raw(name)) out = flag_number(*v, r.child_path(name), lo, hi);
  };
  const auto integer = [&](const char* name, int& out, std::int64_t lo, std::int64_t hi) {
    if (const Json* v = r.raw(name)) out = static_cast<int>(flag_int(*v, r.child_path(name), lo, hi));
  };
  duration("--scan-interval", f.scan_interval);
  if (const Json* v = r.raw("--expander")) {
    const std::string p = r.child_path("--expander");
    if (!v->is_string()) throw InputError(p, "expected a string such as \"least-waste\", found " + type_name(*v));
    const std::string text = v->get<std::string>();
    f.expanders.clear();
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = text.find(',', start);
      const std::string name = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (name == "grpc") throw InputError(p, "the grpc expander calls an external service; the lab does not model it");
      const auto known = std::find_if(std::begin(kExpanders), std::end(kExpanders), [&](const Named<Expander>& x) { return name == x.name; });
      if (known == std::end(kExpanders)) {
        throw InputError(p, "unknown expander \"" + name + "\"; allowed: least-waste, random, most-pods, price, priority "
                            "(a comma-separated chain, e.g. \"priority,least-waste\")");
      }
      // expander/factory/expander_factory.go: the price filter calls cloudProvider.Pricing() and, on an
      // error, klog.Fatalf — CA exits at start. The AWS provider's Pricing() returns ErrNotImplemented
      // (cloudprovider/aws/aws_cloud_provider.go), and the lab's cloud is AWS.
      if (known->value == Expander::Price) {
        throw InputError(p, "--expander=price needs the cloud provider's pricing, which the AWS provider does not implement: "
                            "Cluster Autoscaler exits at start (\"Couldn't access cloud provider pricing for price expander\"). "
                            "Use least-waste, random, most-pods or priority");
      }
      f.expanders.push_back(known->value);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (const Json* v = r.raw("--scale-down-enabled")) f.scale_down_enabled = flag_bool(*v, r.child_path("--scale-down-enabled"));
  number("--scale-down-utilization-threshold", f.scale_down_utilization_threshold, 0, 1);
  number("--scale-down-gpu-utilization-threshold", f.scale_down_gpu_utilization_threshold, 0, 1);
  duration("--scale-down-unneeded-time", f.scale_down_unneeded_time);
  duration("--scale-down-delay-after-add", f.scale_down_delay_after_add);
  duration("--scale-down-delay-after-delete", f.scale_down_delay_after_delete);
  duration("--scale-down-delay-after-failure", f.scale_down_delay_after_failure);
  duration("--max-pod-eviction-time", f.max_pod_eviction_time);
  duration("--scale-down-unready-time", f.scale_down_unready_time);
  duration("--max-node-provision-time", f.max_node_provision_time);
  integer("--max-scale-down-parallelism", f.max_scale_down_parallelism, 0, 100000);
  integer("--max-drain-parallelism", f.max_drain_parallelism, 0, 100000);
  number("--max-total-unready-percentage", f.max_total_unready_percentage, 0, 100);
  integer("--ok-total-unready-count", f.ok_total_unready_count, 0, 1000000);
  integer("--max-graceful-termination-sec", f.max_graceful_termination_sec, 0, 100000000);
  duration("--initial-node-group-backoff-duration", f.initial_node_group_backoff_duration);
  duration("--max-node-group-backoff-duration", f.max_node_group_backoff_duration);
  duration("--node-group-backoff-reset-timeout", f.node_group_backoff_reset_timeout);
  r.finish();
  if (f.scan_interval <= 0) throw InputError(r.child_path("--scan-interval"), "must be longer than 0s");
  return f;
}

}  // namespace

// ---- configuration --------------------------------------------------------------------------------

ClusterAutoscalerConfig parse_cluster_autoscaler(const Json& doc, const std::string& path) {
  ObjectReader r(doc, path);
  ClusterAutoscalerConfig c;
  if (const Json* f = r.raw("flags")) c.flags = parse_flags(*f, r.child_path("flags"));
  const Json* groups = r.raw("nodeGroups");
  const std::string gp = r.child_path("nodeGroups");
  if (!groups) throw InputError(gp, "required: an array of node groups");
  expect_array(*groups, gp, 100);
  if (groups->empty()) throw InputError(gp, "needs at least one node group");
  for (std::size_t i = 0; i < groups->size(); ++i) {
    const std::string p = gp + "/" + std::to_string(i);
    ObjectReader g((*groups)[i], p);
    NodeGroup n;
    n.name = g.get_string("name", "");
    n.instance_type = g.get_string("instanceType", "");
    n.capacity_type = get_enum(g, "capacityType", n.capacity_type, kCapacityTypes);
    n.zone = g.get_string("zone", "");
    n.min_size = static_cast<int>(g.get_int("minSize", 0, 0, 10000));
    n.max_size = static_cast<int>(g.get_int("maxSize", 1, 0, 10000));
    if (const Json* l = g.raw("labels")) {
      expect_object(*l, p + "/labels");
      for (auto it = l->begin(); it != l->end(); ++it) {
        if (!it.value().is_string()) throw InputError(p + "/labels/" + it.key(), "expected a string value");
        n.labels[it.key()] = it.value().get<std::string>();
      }
    }
    if (const Json* t = g.raw("taints")) n.taints = parse_taints(*t, p + "/taints");
    n.priority = static_cast<int>(g.get_int("priority", 0, -1000000, 1000000));
    g.finish();  // unknown fields first: a misspelt key is the likelier mistake than a missing one
    if (n.name.empty()) throw InputError(p + "/name", "every node group needs a name");
    if (n.instance_type.empty()) throw InputError(p + "/instanceType", "required: one instance type (a node group is one ASG)");
    if (n.min_size > n.max_size) {
      throw InputError(p + "/minSize", "is " + std::to_string(n.min_size) + ", above maxSize " + std::to_string(n.max_size));
    }
    for (const auto& other : c.node_groups) {
      if (other.name == n.name) throw InputError(p + "/name", "\"" + n.name + "\" appears twice");
    }
    c.node_groups.push_back(std::move(n));
  }
  r.finish();
  return c;
}

void check_node_groups(const ClusterAutoscalerConfig& config, const std::vector<InstanceType>& types,
                       const std::string& path) {
  for (std::size_t i = 0; i < config.node_groups.size(); ++i) {
    const NodeGroup& g = config.node_groups[i];
    const std::string p = path + "/nodeGroups/" + std::to_string(i);
    const InstanceType* t = find_instance_type(types, g.instance_type);
    if (!t) throw InputError(p + "/instanceType", "\"" + g.instance_type + "\" is not in the instance catalogue");
    if (!g.zone.empty() && std::find(t->zones.begin(), t->zones.end(), g.zone) == t->zones.end()) {
      std::string list;
      for (const auto& z : t->zones) list += (list.empty() ? "" : ", ") + z;
      throw InputError(p + "/zone", "\"" + g.zone + "\": " + t->name + " is offered in " + list);
    }
    if (g.capacity_type == CapacityType::Spot && t->spot_usd_per_hour <= 0) {
      throw InputError(p + "/capacityType", t->name + " is not offered as spot in the catalogue");
    }
  }
}

}  // namespace gpuscale
