// The event kernel's one ordering rule: (time, class, insertion order).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "kernel/kernel.hpp"

using namespace gpuscale;

TEST_CASE("events run by time, then class, then insertion order", "[kernel]") {
  EventQueue<std::string> q;
  q.push(20, EventClass::Arrival, "arrival@20");
  q.push(10, EventClass::Control, "hpa@10");
  q.push(10, EventClass::Arrival, "arrival@10 first");
  q.push(10, EventClass::Measure, "scrape@10");
  q.push(10, EventClass::Completion, "step-end@10");
  q.push(10, EventClass::Arrival, "arrival@10 second");
  q.push(10, EventClass::Timeout, "timeout@10");
  q.push(5, EventClass::Control, "hpa@5");
  std::vector<std::string> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::string>{"hpa@5", "step-end@10", "arrival@10 first", "arrival@10 second",
                                          "timeout@10", "scrape@10", "hpa@10", "arrival@20"});
}

TEST_CASE("a controller tick at the same instant as an arrival sees the arrival", "[kernel]") {
  // The simulation relies on this: an arrival at t is counted by a scrape at t, which an HPA sync
  // at t then reads. Pushing in the opposite order must not change that.
  EventQueue<int> q;
  q.push(1'000'000, EventClass::Control, 3);
  q.push(1'000'000, EventClass::Measure, 2);
  q.push(1'000'000, EventClass::Arrival, 1);
  CHECK(q.pop().payload == 1);
  CHECK(q.pop().payload == 2);
  CHECK(q.pop().payload == 3);
  CHECK(q.empty());
}

TEST_CASE("equal events keep FIFO order over many pushes", "[kernel]") {
  EventQueue<int> q;
  for (int i = 0; i < 1000; ++i) q.push(7, EventClass::Arrival, i);
  for (int i = 0; i < 1000; ++i) REQUIRE(q.pop().payload == i);
}

TEST_CASE("monotone events interleave with heap events by the same rule", "[kernel]") {
  EventQueue<std::string> q;
  q.push_monotone(10, EventClass::Timeout, "timeout@10");
  q.push(10, EventClass::Control, "hpa@10");
  q.push_monotone(10, EventClass::Timeout, "timeout@10 second");
  q.push(10, EventClass::Arrival, "arrival@10");
  q.push_monotone(30, EventClass::Timeout, "timeout@30");
  q.push(20, EventClass::Completion, "step-end@20");
  q.push(30, EventClass::Timeout, "heap-timeout@30");  // same time and class: insertion order decides
  std::vector<std::string> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::string>{"arrival@10", "timeout@10", "timeout@10 second", "hpa@10", "step-end@20",
                                          "timeout@30", "heap-timeout@30"});
}

TEST_CASE("the cluster's events at an instant come after the replica autoscalers, and the settlement last", "[kernel]") {
  // A node event filed long ago and a provisioner wake filed just now still run after an HPA sync at
  // the same instant, so Karpenter's batch at t sees the pods the HPA created at t; the settlement of
  // the instant (the scheduling pass, then the notices to the pools) runs after every cluster event.
  EventQueue<std::string> q;
  q.push(10, EventClass::Settle, "settle@10");
  q.push(10, EventClass::NodeLifecycle, "node-initialized@10");
  q.push(10, EventClass::NodeControl, "karpenter-wake@10");
  q.push(10, EventClass::Control, "hpa@10");
  q.push(10, EventClass::NodeLifecycle, "node-terminate@10");
  q.push(10, EventClass::Measure, "scrape@10");
  std::vector<std::string> order;
  while (!q.empty()) order.push_back(q.pop().payload);
  CHECK(order == std::vector<std::string>{"scrape@10", "hpa@10", "node-initialized@10", "node-terminate@10", "karpenter-wake@10",
                                          "settle@10"});
}
