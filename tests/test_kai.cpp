// KAI Scheduler: the proportion plugin's fair-share division (real-systems.md §5.3), checked against
// the fixtures of kai-scheduler/KAI-Scheduler
// pkg/scheduler/plugins/proportion/resource_division/resource_division_test.go.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

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

TEST_CASE("KAI fair share: a single queue within its quota", "[kai]") {
  // "single queue within quota (sanity)": deserved 3, request 2, weight 0.
  auto fresh = [] { return std::vector<Queue>{gpu_queue("queue-1", 3, 0, 0, 2)}; };
  auto q = fresh();
  CHECK(set_share(2, q) == 0);  // gives requested GPUs, no remaining
  CHECK(q[0].resources[Gpu].fair_share == 2);
  q = fresh();
  CHECK(set_share(3, q) == 1);  // with remaining
  CHECK(q[0].resources[Gpu].fair_share == 2);
  q = fresh();
  q[0].resources[Gpu].max_allowed = 2;  // no more than allowed
  CHECK(set_share(3, q) == 1);
  CHECK(q[0].resources[Gpu].fair_share == 2);
  q = fresh();
  CHECK(set_share(1, q) == 0);  // up to deserved when over-subscribed: past the total
  CHECK(q[0].resources[Gpu].fair_share == 2);
  q = fresh();
  q[0].resources[Gpu].request = 5;  // up to the full quota
  CHECK(set_share(7, q) == 4);
  CHECK(q[0].resources[Gpu].fair_share == 3);
  q = fresh();
  q[0].resources[Gpu].deserved = 1.5;  // fractions in deserved
  CHECK(set_share(2, q) == 0.5);
  CHECK(q[0].resources[Gpu].fair_share == 1.5);
  q = fresh();
  q[0].resources[Gpu].request = 1.5;  // fractions in the request
  CHECK(set_share(2, q) == 0.5);
  CHECK(q[0].resources[Gpu].fair_share == 1.5);
  q = fresh();
  q[0].resources[Gpu].deserved = 0;  // nothing if nothing is deserved (and no weight)
  CHECK(set_share(2, q) == 2);
  CHECK(q[0].resources[Gpu].fair_share == 0);
}

TEST_CASE("KAI fair share: a single queue over its quota", "[kai]") {
  // "single queue over quota (sanity)": divideOverQuotaResource on a queue already at its quota of 3.
  // Here via divide_resource with its deserved part already in fair_share and the quota zeroed, so
  // the deserved step adds nothing.
  auto over = [](double total, auto&& tweak) {
    std::vector<Queue> q{gpu_queue("queue-1", 0, 3, 1, 5)};
    tweak(q[0].resources[Gpu]);
    const double left = set_share(total, q);
    return std::pair<double, double>{left, q[0].resources[Gpu].fair_share};
  };
  auto none = [](ResourceShare&) {};
  CHECK(over(2, none) == std::pair<double, double>{0, 5});
  CHECK(over(3, none) == std::pair<double, double>{1, 5});
  CHECK(over(2, [](ResourceShare& s) { s.max_allowed = 4; }) == std::pair<double, double>{1, 4});
  CHECK(over(2, [](ResourceShare& s) { s.over_quota_weight = 0; }) == std::pair<double, double>{2, 3});
  CHECK(over(2, [](ResourceShare& s) { s.request = 4.5; }) == std::pair<double, double>{0.5, 4.5});
  CHECK(over(0.5, none) == std::pair<double, double>{0, 3.5});  // the remainder fraction
  CHECK(over(6, [](ResourceShare& s) { s.fair_share = 0; }) == std::pair<double, double>{1, 5});
  CHECK(over(0, none) == std::pair<double, double>{0, 3});
  CHECK(over(10, [](ResourceShare& s) { s.over_quota_weight = 0; }) == std::pair<double, double>{10, 3});
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
