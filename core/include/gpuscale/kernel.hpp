// The discrete-event kernel: one ordering rule, written once.
#pragma once
#include <cstdint>
#include <queue>
#include <vector>

#include "gpuscale/time.hpp"

namespace gpuscale {

// What runs first when several events share an instant. Lower runs first; equal (time, class)
// runs in insertion order (FIFO).
//
// The choice: work that finished at t (engine steps, lifecycle transitions) is applied first, then
// requests that arrive at t, then client timeouts due at t, then measurement (DCGM samples and the
// Prometheus scrape) sees the state after all of that, and last the controllers decide from what
// was scraped. So a scrape at t counts a request that arrived at t, and an HPA sync at t reads a
// scrape taken at the same t. tests/test_kernel.cpp pins this order.
enum class EventClass : std::uint8_t {
  kCompletion = 0,  // engine step end, replica lifecycle transitions
  kArrival = 1,     // a request reaches the gateway
  kTimeout = 2,     // a client gives up
  kMeasure = 3,     // DCGM sample window start, metrics scrape
  kControl = 4,     // HPA / KEDA sync, provisioner
};

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Micros time;
    EventClass cls;
    std::uint64_t seq;
    Payload payload;
  };

  void push(Micros time, EventClass cls, const Payload& payload) {
    heap_.push(Event{time, cls, next_seq_++, payload});
  }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  const Event& top() const { return heap_.top(); }
  Event pop() {
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      if (a.cls != b.cls) return a.cls > b.cls;
      return a.seq > b.seq;
    }
  };
  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace gpuscale
