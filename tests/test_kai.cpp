// KAI Scheduler's proportion plugin: the fair-share division (real-systems.md §5.3) and the capacity
// policy (§5.4), checked against the fixtures of kai-scheduler/KAI-Scheduler
// pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go and
// capacity_policy/max_allowed_check_test.go.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "scheduling/kai/capacity.hpp"
#include "scheduling/kai/fair_share.hpp"

using namespace gpuscale::kai;

namespace {

Queue gpu_queue(const std::string& name, double deserved, double fair_share, double weight, double request,
                double max_allowed = kUnlimited, int priority = 100, std::int64_t created = 0) {
  Queue q;
  q.name = name;
  q.priority = priority;
  q.created = created;
  ResourceShare& g = q.resources[Gpu];
  g.deserved = deserved;
  g.fair_share = fair_share;
  g.over_quota_weight = weight;
  g.request = request;
  g.max_allowed = max_allowed;
  // CPU and memory: EmptyResource() (nothing deserved, requested or weighted)
  for (Resource r : {Cpu, Memory}) q.resources[r] = ResourceShare{0, 0, 0, 0, 0, 0, 0, 0};
  return q;
}

std::vector<std::size_t> all(const std::vector<Queue>& qs) {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < qs.size(); ++i) v.push_back(i);
  return v;
}

// setResourceShare(total, kValue 0, GPU, queues)
double set_share(double total, std::vector<Queue>& qs) { return divide_resource(total, 0, Gpu, qs, all(qs)); }

}  // namespace

namespace {

// One queue, one division of `total` after `tweak`: {what is left, its fair share}.
template <typename Tweak>
std::pair<double, double> one_queue(Queue queue, double total, Tweak&& tweak) {
  std::vector<Queue> q{std::move(queue)};
  tweak(q[0].resources[Gpu]);
  const double left = set_share(total, q);
  return {left, q[0].resources[Gpu].fair_share};
}

void as_is(ResourceShare&) {}

}  // namespace

TEST_CASE("KAI fair share: a single queue within its quota", "[kai]") {
  // "single queue within quota (sanity)": deserved 3, request 2, weight 0.
  const Queue within = gpu_queue("queue-1", 3, 0, 0, 2);
  using Result = std::pair<double, double>;
  CHECK(one_queue(within, 2, as_is) == Result{0, 2});  // gives requested GPUs, no remaining
  CHECK(one_queue(within, 3, as_is) == Result{1, 2});  // with remaining
  CHECK(one_queue(within, 3, [](ResourceShare& s) { s.max_allowed = 2; }) == Result{1, 2});  // no more than allowed
  CHECK(one_queue(within, 1, as_is) == Result{0, 2});  // up to deserved when over-subscribed: past the total
  CHECK(one_queue(within, 7, [](ResourceShare& s) { s.request = 5; }) == Result{4, 3});  // up to the full quota
  CHECK(one_queue(within, 2, [](ResourceShare& s) { s.deserved = 1.5; }) == Result{0.5, 1.5});  // fractions in deserved
  CHECK(one_queue(within, 2, [](ResourceShare& s) { s.request = 1.5; }) == Result{0.5, 1.5});  // fractions in the request
  CHECK(one_queue(within, 2, [](ResourceShare& s) { s.deserved = 0; }) == Result{2, 0});  // nothing deserved (and no weight)
}

TEST_CASE("KAI fair share: a single queue over its quota", "[kai]") {
  // "single queue over quota (sanity)": divideOverQuotaResource on a queue already at its quota of 3.
  // Here via divide_resource with its deserved part already in fair_share and the quota zeroed, so
  // the deserved step adds nothing.
  const Queue over = gpu_queue("queue-1", 0, 3, 1, 5);
  using Result = std::pair<double, double>;
  CHECK(one_queue(over, 2, as_is) == Result{0, 5});
  CHECK(one_queue(over, 3, as_is) == Result{1, 5});
  CHECK(one_queue(over, 2, [](ResourceShare& s) { s.max_allowed = 4; }) == Result{1, 4});
  CHECK(one_queue(over, 2, [](ResourceShare& s) { s.over_quota_weight = 0; }) == Result{2, 3});
  CHECK(one_queue(over, 2, [](ResourceShare& s) { s.request = 4.5; }) == Result{0.5, 4.5});
  CHECK(one_queue(over, 0.5, as_is) == Result{0, 3.5});  // the remainder fraction
  CHECK(one_queue(over, 6, [](ResourceShare& s) { s.fair_share = 0; }) == Result{1, 5});
  CHECK(one_queue(over, 0, as_is) == Result{0, 3});
  CHECK(one_queue(over, 10, [](ResourceShare& s) { s.over_quota_weight = 0; }) == Result{10, 3});
}

TEST_CASE("KAI fair share: two queues, weights, limits, remainders and priorities", "[kai]") {
  struct Row {
    const char* name;
    double total;
    double weight1, weight2;
    double request1, request2;
    double max1;
    int priority1, priority2;
    double remaining, share1, share2;
  };
  // "two queues": deserved 2 each, weight 2 each, request 6 each, created in order 1 then 2.
  const std::vector<Row> rows = {
      {"allocates many available gpus", 15, 2, 2, 6, 6, kUnlimited, 100, 100, 3, 6, 6},
      {"allocates exact requested amount gpus", 12, 2, 2, 6, 6, kUnlimited, 100, 100, 0, 6, 6},
      {"allocates GPUs proportionally", 8, 1, 3, 6, 6, kUnlimited, 100, 100, 0, 3, 5},
      {"doesn't allocate more than allowed", 12, 2, 2, 6, 6, 5, 100, 100, 1, 5, 6},
      // 7 over quota: 7 × 1/5 = 1.4 → 1 and 7 × 4/5 = 5.6 → 5; the unit left goes to the 0.6
      {"distributes remainder between queues based on largest remaining", 11, 1, 4, 10, 10, kUnlimited, 100, 100, 0, 3, 8},
      {"distributes remainder between queues based on creation time", 11, 2, 2, 6, 6, kUnlimited, 100, 100, 0, 6, 5},
      {"priority doesn't affect deserved", 4, 2, 2, 6, 6, kUnlimited, 1, 2, 0, 2, 2},
      {"priority does affect over-quota", 6, 2, 2, 6, 6, kUnlimited, 1, 2, 0, 2, 4},
      {"priority does affect over-quota, even when overQuotaWeight is set", 6, 100, 1, 6, 6, kUnlimited, 1, 2, 0, 2, 4},
  };
  for (const Row& row : rows) {
    INFO(row.name);
    std::vector<Queue> q{gpu_queue("queue-1", 2, 0, row.weight1, row.request1, row.max1, row.priority1, 1),
                         gpu_queue("queue-2", 2, 0, row.weight2, row.request2, kUnlimited, row.priority2, 2)};
    CHECK(set_share(row.total, q) == row.remaining);
    CHECK(q[0].resources[Gpu].fair_share == row.share1);
    CHECK(q[1].resources[Gpu].fair_share == row.share2);
  }
}

TEST_CASE("KAI fair share: the remainder is divided inside the priority bucket", "[kai]") {
  // "divides the remainder even when using priorities": 5 GPUs; two priority-2 queues (deserved 2,
  // request 5) and a priority-1 queue that requests nothing.
  std::vector<Queue> q{gpu_queue("queue-1", 2, 0, 2, 5, kUnlimited, 2, 1), gpu_queue("queue-2", 2, 0, 2, 5, kUnlimited, 2, 2),
                       gpu_queue("queue-3", 1, 0, 2, 0, kUnlimited, 1, 3)};
  DivisionTrace trace;
  CHECK(divide_resource(5, 0, Gpu, q, all(q), &trace) == 0);
  CHECK(q[0].resources[Gpu].fair_share == 3);
  CHECK(q[1].resources[Gpu].fair_share == 2);
  CHECK(q[2].resources[Gpu].fair_share == 0);
  // The trace says what each step gave, with its arithmetic.
  std::string all_lines;
  for (const auto& l : trace.lines) all_lines += l + "\n";
  CHECK(all_lines.find("queue-1: deserved 2 = min(quota 2, requestable 5)") != std::string::npos);
  CHECK(all_lines.find("queue-1: over quota, priority 2 round 1: 1 × 0.5/1 = 0.5, floored → 0") != std::string::npos);
  CHECK(all_lines.find("queue-1: remainder 1 (its fraction 0.5 was the largest left)") != std::string::npos);
}

TEST_CASE("KAI fair share: a parent's share is divided among its children, and an unlimited quota takes all", "[kai]") {
  // Two departments on 16 GPUs: inference (quota 8, two projects) and training (quota 0, weight 1).
  std::vector<Queue> q{gpu_queue("inference", 8, 0, 1, 14), gpu_queue("training", 0, 0, 1, 16),
                       gpu_queue("chat", 4, 0, 1, 10), gpu_queue("search", 4, 0, 1, 4)};
  q[2].parent = q[3].parent = "inference";
  q[1].resources[Gpu].max_allowed = kUnlimited;
  Totals total;
  total.amount[Gpu] = 16;
  const Totals left = set_fair_shares(q, total, 1.0);
  // Top: inference 8 deserved; the 8 over quota split 4/4 (equal weights, usage 0: w + k(w − 0) = 2w).
  CHECK(q[0].resources[Gpu].fair_share == 12);
  CHECK(q[1].resources[Gpu].fair_share == 4);
  CHECK(left.amount[Gpu] == 0);
  // Inside inference's 12: chat 4 + search 4 deserved; search asks no more, so chat gets the other 4.
  CHECK(q[2].resources[Gpu].fair_share == 8);
  CHECK(q[3].resources[Gpu].fair_share == 4);
  // A quota of -1 deserves the whole amount (capped by what it requests).
  std::vector<Queue> unlimited{gpu_queue("all", kUnlimited, 0, 1, 10)};
  CHECK(set_share(6, unlimited) == 0);
  CHECK(unlimited[0].resources[Gpu].fair_share == 6);
}

// ---- the capacity policy (capacity_policy/max_allowed_check_test.go, quota_check.go) ----------------

namespace {

Queue limited(const std::string& name, const std::string& parent, double gpu_limit, double gpu_allocated) {
  Queue q;
  q.name = name;
  q.parent = parent;
  for (ResourceShare& s : q.resources) s = ResourceShare{0, 0, kUnlimited, 0, 0, 0, 0, 0};
  q.resources[Gpu].max_allowed = gpu_limit;
  q.resources[Gpu].allocated = gpu_allocated;
  return q;
}

Totals gpus(double n) {
  Totals t;
  t.amount[Gpu] = n;
  return t;
}

}  // namespace

TEST_CASE("KAI capacity: the limit on every level of the queue chain", "[kai]") {
  // resultsOverLimit's fixtures: a single queue, then top → mid → leaf.
  CHECK(check_capacity({limited("queue1", "", kUnlimited, 1)}, "queue1", gpus(10), true).schedulable);
  CHECK(check_capacity({limited("queue1", "", 3, 1)}, "queue1", gpus(2), true).schedulable);
  const CapacityResult above = check_capacity({limited("queue1", "", 3, 1)}, "queue1", gpus(3), true);
  CHECK_FALSE(above.schedulable);
  CHECK(above.reason == "OverLimit");
  CHECK(above.message == "queue1 quota has reached the allowable limit of GPUs. Limit is 3 GPUs, currently 1 GPUs allocated and workload requested 3 GPUs");
  CHECK_FALSE(check_capacity({limited("queue1", "", 3, 0)}, "queue1", gpus(4), true).schedulable);
  CHECK(check_capacity({limited("top-queue", "", 3, 2), limited("mid-queue", "top-queue", 3, 2), limited("leaf-queue", "mid-queue", 3, 2)},
                       "leaf-queue", gpus(1), true).schedulable);
  const CapacityResult mid = check_capacity(
      {limited("top-queue", "", 3, 3), limited("mid-queue", "top-queue", 2, 1), limited("leaf-queue", "mid-queue", 1, 0)}, "leaf-queue", gpus(1), true);
  CHECK_FALSE(mid.schedulable);
  CHECK(mid.queue == "top-queue");  // the leaf and the middle have room; the top is full
  // isOverLimit's fixtures: tolerance for fractions, CPU named first, unrequested resources ignored.
  CHECK(check_capacity({limited("q", "", 0.3, 0.1)}, "q", gpus(0.2), true).schedulable);
  Queue all = limited("q", "", 1, 1);
  all.resources[Cpu].max_allowed = 1000;
  all.resources[Cpu].allocated = 500;
  all.resources[Memory].max_allowed = 1;
  all.resources[Memory].allocated = 1;
  Totals everything;
  everything.amount[Cpu] = 1000;
  everything.amount[Memory] = 1;
  everything.amount[Gpu] = 1;
  const CapacityResult cpu = check_capacity({all}, "q", everything, true);
  CHECK(cpu.message == "q quota has reached the allowable limit of CPU cores. Limit is 1 cores, currently 0.5 cores allocated and workload requested 1 cores");
  Queue cpu_full = limited("q", "", 1, 0);
  cpu_full.resources[Cpu].max_allowed = 1000;
  cpu_full.resources[Cpu].allocated = 1500;
  CHECK(check_capacity({cpu_full}, "q", gpus(1), true).schedulable);  // over on CPU, but it asks for none
}

TEST_CASE("KAI capacity: a non-preemptible job must fit in deserved quota on every level (the default-queue gotcha)", "[kai]") {
  // The Helm install's default-parent-queue → default-queue, quota 0, limit -1 (deployments/kai-scheduler/values.yaml).
  Queue parent = limited("default-parent-queue", "", kUnlimited, 0);
  Queue leaf = limited("default-queue", "default-parent-queue", kUnlimited, 0);
  const std::vector<Queue> helm{parent, leaf};
  // A vLLM Deployment: priority class inference (125), so non-preemptible; 2 GPUs.
  const CapacityResult deployment = check_capacity(helm, "default-queue", gpus(2), false);
  CHECK_FALSE(deployment.schedulable);
  CHECK(deployment.reason == "NonPreemptibleOverQuota");
  CHECK(deployment.queue == "default-queue");
  CHECK(deployment.message == "Non-preemptible workload is over quota. Workload requested 2 GPUs, but default-queue quota is 0 GPUs, "
                              "while 0 GPUs are already allocated for non-preemptible pods. Use a preemptible workload to go over quota.");
  // The same pods labelled preemptible go through (and may use over-quota capacity).
  CHECK(check_capacity(helm, "default-queue", gpus(2), true).schedulable);
  // A quota of 8 on both levels, 6 already held by non-preemptible pods: 2 more fit, 3 do not.
  std::vector<Queue> quota = helm;
  for (Queue& q : quota) {
    q.resources[Gpu].deserved = 8;
    q.resources[Gpu].allocated_not_preemptible = 6;
  }
  CHECK(check_capacity(quota, "default-queue", gpus(2), false).schedulable);
  CHECK_FALSE(check_capacity(quota, "default-queue", gpus(3), false).schedulable);
  // The parent's quota counts too: the leaf has room, the parent does not.
  quota[1].resources[Gpu].allocated_not_preemptible = 0;
  const CapacityResult parent_full = check_capacity(quota, "default-queue", gpus(3), false);
  CHECK(parent_full.queue == "default-parent-queue");
  CHECK(humanize(1.23456, 1) == "1.235");
  CHECK(humanize(2.5e9, 1e9) == "2.5");
  CHECK(humanize(kUnlimited, 1) == "Unlimited");
}
