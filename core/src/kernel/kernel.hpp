// The discrete-event kernel: one ordering rule, written once.
#pragma once
#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "kernel/time.hpp"

namespace gpuscale {

// What runs first when several events share an instant. Lower runs first; equal (time, class)
// runs in insertion order (FIFO).
//
// The choice: work that finished at t (engine steps, replica lifecycle transitions) is applied first,
// then requests that arrive at t, then client timeouts due at t, then measurement (DCGM samples and the
// Prometheus scrape) sees the state after all of that, then the replica autoscalers decide from what was
// scraped. So a scrape at t counts a request that arrived at t, and an HPA sync at t reads a scrape taken
// at the same t. The cluster comes last: node lifecycle transitions at t, then the node provisioners'
// and the schedulers' timers, then one settlement of the instant (the scheduling pass the instant's
// events asked for, then what the cluster reported to the pools). So a provisioner at t sees the pods an
// HPA created at t. tests/test_kernel.cpp pins this order.
enum class EventClass : std::uint8_t {
  Completion = 0,     // engine step end, replica lifecycle transitions
  Arrival = 1,        // a request reaches the gateway
  Timeout = 2,        // a client gives up
  Measure = 3,        // DCGM sample window start, metrics scrape
  Control = 4,        // replica autoscalers: HPA sync, KEDA poll; the end of the run
  NodeLifecycle = 5,  // a node registers, initializes, terminates; spot notices; drain retries
  NodeControl = 6,    // node provisioner wake-ups, scheduler timers
  Settle = 7,         // the instant's scheduling pass, then the cluster's notices to the pools
};

template <typename Payload>
class EventQueue {
 public:
  struct Event {
    Micros time;
    std::uint64_t order;  // class in the top 8 bits, insertion sequence below: (class, seq) in one key
    Payload payload;
    EventClass cls() const { return static_cast<EventClass>(order >> 56); }
    std::uint64_t seq() const { return order & ((std::uint64_t(1) << 56) - 1); }
  };

  void push(Micros time, EventClass cls, const Payload& payload) { heap_.push(make(time, cls, payload)); }

  // For a stream of events whose times never decrease (e.g. client timeouts, a fixed delay after
  // each arrival): kept in a FIFO instead of the heap. The order is the same rule as push():
  // pop() takes whichever of the heap's top and the FIFO's front comes first by (time, class, seq).
  void push_monotone(Micros time, EventClass cls, const Payload& payload) {
    fifo_.push_back(make(time, cls, payload));
  }

  bool empty() const { return heap_.empty() && fifo_.empty(); }
  std::size_t size() const { return heap_.size() + fifo_.size(); }
  const Event& top() const { return from_fifo() ? fifo_.front() : heap_.top(); }
  Event pop() {
    if (from_fifo()) {
      Event e = fifo_.front();
      fifo_.pop_front();
      return e;
    }
    Event e = heap_.top();
    heap_.pop();
    return e;
  }

 private:
  struct Later {
    bool operator()(const Event& a, const Event& b) const {
      if (a.time != b.time) return a.time > b.time;
      return a.order > b.order;
    }
  };
  Event make(Micros time, EventClass cls, const Payload& payload) {
    return Event{time, (static_cast<std::uint64_t>(cls) << 56) | next_seq_++, payload};
  }
  bool from_fifo() const { return !fifo_.empty() && (heap_.empty() || Later()(heap_.top(), fifo_.front())); }

  std::priority_queue<Event, std::vector<Event>, Later> heap_;
  std::deque<Event> fifo_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace gpuscale
