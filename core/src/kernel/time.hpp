// The simulation clock: integer microseconds, so time never drifts.
#pragma once
#include <cstdint>

namespace gpuscale {

using Micros = std::int64_t;  // microseconds since the start of the run

constexpr Micros kMicrosPerSecond = 1'000'000;
constexpr Micros kNever = INT64_MAX;  // a time no run reaches

// Rounds a duration computed in floating point once, at the point it becomes an event.
inline Micros seconds_to_micros(double seconds) {
  double us = seconds * 1e6;
  return static_cast<Micros>(us >= 0 ? us + 0.5 : us - 0.5);
}

inline double micros_to_seconds(Micros t) { return static_cast<double>(t) / 1e6; }

}  // namespace gpuscale
