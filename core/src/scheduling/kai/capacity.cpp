// KAI Scheduler's capacity policy (see capacity.hpp).
#include "scheduling/kai/capacity.hpp"

#include <cmath>
#include <cstdio>

namespace gpuscale::kai {

namespace {

constexpr double kMilliCpuToCores = 1000;
constexpr double kBytesToGB = 1e9;  // the scheduler holds memory in bytes (resource_info.go)
// rs.AllResources' order, which decides the resource named when several exceed (max_allowed_check_test.go:
// "over max allowed in all resources" names CPU).
constexpr Resource kCheckOrder[] = {Cpu, Memory, Gpu};

// resource_info.LessOrEqualWithTolerance
bool less_or_equal(double quantity, double limit) { return quantity <= limit || std::fabs(quantity - limit) <= 1e-9; }

const Queue* find(const std::vector<Queue>& queues, const std::string& name) {
  for (const Queue& q : queues)
    if (q.name == name) return &q;
  return nullptr;
}

// The leaf, then each parent, as far as the chain resolves (`for q, ok := queues[id]; ok; ...`).
std::vector<const Queue*> chain(const std::vector<Queue>& queues, const std::string& leaf) {
  std::vector<const Queue*> out;
  for (const Queue* q = find(queues, leaf); q && out.size() <= queues.size(); q = find(queues, q->parent)) out.push_back(q);
  return out;
}

// api.GetJobOverMaxAllowedMessageForQueue
std::string over_limit_message(const Queue& q, Resource r, double requested) {
  const ResourceShare& s = q.resources[r];
  const double unit = r == Cpu ? kMilliCpuToCores : r == Memory ? kBytesToGB : 1;
  const char* what = r == Gpu ? "GPUs" : r == Cpu ? "CPU cores" : "memory";
  const char* units = r == Gpu ? "GPUs" : r == Cpu ? "cores" : "GB";
  return q.name + " quota has reached the allowable limit of " + what + ". Limit is " + humanize(s.max_allowed, unit) + " " + units +
         ", currently " + humanize(s.allocated, unit) + " " + units + " allocated and workload requested " + humanize(requested, unit) +
         " " + units;
}

// api.GetBuildOverCapacityMessageForQueue. Upstream prints the GPU request with Go's %v (a plain
// float64: 2, 0.5), the CPU and memory ones humanized.
std::string over_quota_message(const Queue& q, Resource r, double requested) {
  const ResourceShare& s = q.resources[r];
  std::string details;
  if (r == Gpu) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", requested);
    details = std::string("Workload requested ") + buf + " GPUs, but " + q.name + " quota is " + humanize(s.deserved, 1) + " GPUs, while " +
              humanize(s.allocated_not_preemptible, 1) + " GPUs are already allocated for non-preemptible pods.";
  } else if (r == Cpu) {
    details = "Workload requested " + humanize(requested, kMilliCpuToCores) + " CPU cores, but " + q.name + " quota is " +
              humanize(s.deserved, kMilliCpuToCores) + " cores, while " + humanize(s.allocated_not_preemptible, kMilliCpuToCores) +
              " cores are already allocated for non-preemptible pods.";
  } else {
    details = "Workload requested " + humanize(requested, kBytesToGB) + " GB memory, but " + q.name + " quota is " +
              humanize(s.deserved, kBytesToGB) + " GB, while " + humanize(s.allocated_not_preemptible, kBytesToGB) +
              " GB are already allocated for non-preemptible pods.";
  }
  return "Non-preemptible workload is over quota. " + details + " Use a preemptible workload to go over quota.";
}

}  // namespace

std::string humanize(double value, double unit) {
  if (value == kUnlimited) return "Unlimited";
  // go-humanize FtoaWithDigits(v, 3): strconv 'f' with 3 digits, trailing zeros and dot trimmed.
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", value / unit);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

CapacityResult check_capacity(const std::vector<Queue>& queues, const std::string& queue, const Totals& requested, bool preemptible) {
  const std::vector<const Queue*> levels = chain(queues, queue);
  // The first level, leaf up, and the first resource there whose held amount plus the request passes
  // its bound (an unlimited bound, or nothing requested, never does).
  struct Exceeding {
    const Queue* queue = nullptr;
    Resource resource = Gpu;
  };
  auto first_exceeding = [&](auto bound, auto held) {
    for (const Queue* q : levels) {
      for (const Resource r : kCheckOrder) {
        const ResourceShare& s = q->resources[r];
        const double want = requested.amount[r];
        if (bound(s) == kUnlimited || want == 0) continue;
        if (!less_or_equal(held(s) + want, bound(s))) return Exceeding{q, r};
      }
    }
    return Exceeding{};
  };
  // max_allowed_check.go resultsOverLimit / isOverLimit
  const Exceeding limit = first_exceeding([](const ResourceShare& s) { return s.max_allowed; },
                                          [](const ResourceShare& s) { return s.allocated; });
  if (limit.queue)
    return CapacityResult{false, "OverLimit", over_limit_message(*limit.queue, limit.resource, requested.amount[limit.resource]), limit.queue->name};
  // quota_check.go resultsWithNonPreemptibleOverQuota / isAllocatedNonPreemptibleOverQuota
  if (preemptible) return {};
  const Exceeding quota = first_exceeding([](const ResourceShare& s) { return s.deserved; },
                                          [](const ResourceShare& s) { return s.allocated_not_preemptible; });
  if (quota.queue)
    return CapacityResult{false, "NonPreemptibleOverQuota", over_quota_message(*quota.queue, quota.resource, requested.amount[quota.resource]),
                          quota.queue->name};
  return {};
}

}  // namespace gpuscale::kai
