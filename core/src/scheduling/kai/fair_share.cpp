// KAI Scheduler's fair-share division (see fair_share.hpp): resource_division.go, line for line.
#include "scheduling/kai/fair_share.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace gpuscale::kai {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// An amount of resource r in the log: GPUs as they are, CPU in cores, memory in GB (the shares keep
// millicores and bytes).
std::string amount_of(Resource r, double v) {
  if (v == kUnlimited) return "unlimited";
  if (r == Cpu) return num(v / 1000) + " cores";
  if (r == Memory) return num(v / 1e9) + " GB";
  return num(v);
}

ResourceShare& share(Queue& q, Resource r) { return q.resources[r]; }

// isQueueSatisfied: it asked for no more than it has, or its limit is reached.
bool satisfied(const ResourceShare& s) {
  return s.request <= s.fair_share || (s.max_allowed != kUnlimited && s.max_allowed <= s.fair_share);
}

// getRemainingRequested: what it can still request beyond its fair share.
double remaining_requested(const ResourceShare& s) {
  const double requestable = s.requestable();
  return requestable < s.fair_share ? 0 : requestable - s.fair_share;
}

// setDeservedResource: every queue gets min(deserved, requestable), even past the total.
double set_deserved(double total, Resource r, std::vector<Queue>& queues, const std::vector<std::size_t>& group,
                    DivisionTrace* trace) {
  double remaining = total;
  for (const std::size_t i : group) {
    ResourceShare& s = share(queues[i], r);
    const double deserved = s.deserved == kUnlimited ? total : s.deserved;
    const double amount = std::min(deserved, s.requestable());
    s.fair_share += amount;
    remaining -= amount;
    if (trace && amount != 0)
      trace->lines.push_back(queues[i].name + ": deserved " + amount_of(r, amount) + " = min(quota " + amount_of(r, s.deserved) + ", requestable " +
                             amount_of(r, s.requestable()) + ")");
  }
  return remaining;
}

// One queue's left-over fraction, for divideRemainingResource.
struct Fraction {
  std::size_t queue;
  double amount;
};

// divideUpToFairShare: rounds over one priority bucket until nothing is left or nobody is short of
// their weight's share. Fractions the floors kept back are recorded in `fractions`.
double divide_up_to_fair_share(double total, double k_value, Resource r, std::vector<Queue>& queues,
                               const std::vector<std::size_t>& bucket, std::map<std::size_t, double>& fractions,
                               DivisionTrace* trace) {
  for (int round = 1;; ++round) {
    bool another_round = false;
    const double amount_this_round = total;
    // calcShareWeights over the unsatisfied queues; the normalising sum counts those still requesting.
    double total_weights = 0;
    for (const std::size_t i : bucket)
      if (remaining_requested(share(queues[i], r)) > 0) total_weights += share(queues[i], r).over_quota_weight;
    if (total_weights == 0) break;
    std::map<std::size_t, double> weights;
    double weights_sum = 0;
    for (const std::size_t i : bucket) {
      const ResourceShare& s = share(queues[i], r);
      if (satisfied(s)) continue;
      const double w = s.over_quota_weight / total_weights;
      const double weight = std::max(0.0, w + k_value * (w - s.usage));
      weights[i] = weight;
      weights_sum += weight;
    }
    if (weights_sum == 0) break;
    for (const std::size_t i : bucket) {
      if (total == 0) break;
      ResourceShare& s = share(queues[i], r);
      if (satisfied(s)) continue;
      const double requested = remaining_requested(s);
      if (s.over_quota_weight == 0) continue;
      const double fair = amount_this_round * (weights[i] / weights_sum);
      // getResourceToGiveInCurrentRound: all it asks if that fits, else whole units only.
      double give = 0;
      if (requested <= fair) {
        give = requested;
        fractions.erase(i);
      } else {
        const double whole = std::floor(fair);
        if (whole > 0) give = whole;
        if (fair - give > 0) fractions[i] = fair - give;
      }
      if (trace)
        trace->lines.push_back(queues[i].name + ": over quota, priority " + std::to_string(queues[i].priority) + " round " +
                               std::to_string(round) + ": " + amount_of(r, amount_this_round) + " × " + num(weights[i]) + "/" +
                               num(weights_sum) + " = " + amount_of(r, fair) + (requested <= fair ? ", asks only " + amount_of(r, requested) :
                               ", floored") + " → " + amount_of(r, give));
      if (give == 0) continue;
      s.fair_share += give;
      total -= give;
      another_round = another_round || requested < fair;
    }
    if (!another_round || total == 0) break;
  }
  return total;
}

// divideRemainingResource: the kept-back fractions, one unit each, largest fraction first (ties:
// created earlier, then the name).
double divide_remaining(double total, Resource r, std::vector<Queue>& queues, const std::map<std::size_t, double>& fractions,
                        DivisionTrace* trace) {
  std::vector<Fraction> order;
  for (const auto& [i, amount] : fractions) order.push_back(Fraction{i, amount});
  std::sort(order.begin(), order.end(), [&](const Fraction& a, const Fraction& b) {
    if (a.amount != b.amount) return a.amount > b.amount;
    if (queues[a.queue].created != queues[b.queue].created) return queues[a.queue].created < queues[b.queue].created;
    return queues[a.queue].name < queues[b.queue].name;
  });
  for (const Fraction& f : order) {
    if (total == 0) break;
    const double give = std::min(1.0, total);
    share(queues[f.queue], r).fair_share += give;
    total -= give;
    if (trace)
      trace->lines.push_back(queues[f.queue].name + ": remainder " + amount_of(r, give) + " (its fraction " + amount_of(r, f.amount) + " was the largest left)");
  }
  return total;
}

// divideOverQuotaResource: priority buckets, highest first.
double divide_over_quota(double total, double k_value, Resource r, std::vector<Queue>& queues,
                         const std::vector<std::size_t>& group, DivisionTrace* trace) {
  std::map<int, std::vector<std::size_t>, std::greater<int>> buckets;
  for (const std::size_t i : group) buckets[queues[i].priority].push_back(i);
  double remaining = total;
  for (const auto& [priority, bucket] : buckets) {
    if (remaining <= 0) break;
    std::map<std::size_t, double> fractions;
    remaining = divide_up_to_fair_share(remaining, k_value, r, queues, bucket, fractions, trace);
    if (remaining <= 0 || fractions.empty()) continue;
    remaining = divide_remaining(remaining, r, queues, fractions, trace);
  }
  return remaining;
}

std::vector<std::size_t> by_name(const std::vector<Queue>& queues, std::vector<std::size_t> group) {
  std::sort(group.begin(), group.end(), [&](std::size_t a, std::size_t b) { return queues[a].name < queues[b].name; });
  return group;
}

void divide_tree(std::vector<Queue>& queues, const std::vector<std::size_t>& group, const Totals& total, double k_value,
                 Totals* left, DivisionTrace* trace) {
  if (group.empty()) return;
  for (int r = 0; r < kNumResources; ++r) {
    const double rest = divide_resource(total.amount[r], k_value, static_cast<Resource>(r), queues, group, trace);
    if (left) left->amount[r] = rest;
  }
  for (const std::size_t i : group) {
    std::vector<std::size_t> children;
    for (std::size_t c = 0; c < queues.size(); ++c)
      if (queues[c].parent == queues[i].name) children.push_back(c);
    Totals mine;
    for (int r = 0; r < kNumResources; ++r) mine.amount[r] = queues[i].resources[r].fair_share;
    divide_tree(queues, by_name(queues, children), mine, k_value, nullptr, trace);
  }
}

}  // namespace

const char* resource_name(Resource r) {
  switch (r) {
    case Gpu: return "gpu";
    case Cpu: return "cpu";
    case Memory: return "memory";
  }
  return "?";
}

double divide_resource(double total, double k_value, Resource r, std::vector<Queue>& queues,
                       const std::vector<std::size_t>& siblings, DivisionTrace* trace) {
  const std::vector<std::size_t> group = by_name(queues, siblings);
  if (trace) trace->lines.push_back(std::string(resource_name(r)) + ": dividing " + amount_of(r, total));
  double remaining = set_deserved(total, r, queues, group, trace);
  remaining = remaining > 0 ? divide_over_quota(remaining, k_value, r, queues, group, trace) : 0;
  return remaining;
}

Totals set_fair_shares(std::vector<Queue>& queues, const Totals& total, double k_value, DivisionTrace* trace) {
  for (Queue& q : queues)
    for (ResourceShare& s : q.resources) s.fair_share = 0;
  std::vector<std::size_t> top;
  for (std::size_t i = 0; i < queues.size(); ++i)
    if (queues[i].parent.empty()) top.push_back(i);
  Totals left;
  divide_tree(queues, by_name(queues, top), total, k_value, &left, trace);
  return left;
}

}  // namespace gpuscale::kai
