// Go durations (time.ParseDuration), as Kubernetes objects and controller flags write them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kernel/time.hpp"

namespace gpuscale {

// What a Go duration looks like, for error messages.
extern const char* const kGoDurationHelp;

// Go's time.ParseDuration (src/time/format.go), in nanoseconds; nullopt with `why` on error.
std::optional<std::int64_t> go_duration_ns(const std::string& text, std::string& why);
// Nanoseconds to the clock's microseconds, rounded to the nearest.
Micros ns_to_micros(std::int64_t ns);
// Go time.ParseDuration syntax ("300ms", "1.5h", "1h30m", "720h"; units ns us µs ms s m h), in
// microseconds (rounded to the nearest µs). Negative durations and malformed text ("1hr", "10 minutes")
// are InputErrors at `path`. "Never" is not a duration: callers whose field allows it handle that word.
Micros parse_duration(const std::string& text, const std::string& path);
// The shortest whole-unit text of a duration: 0 → "0s", 5400 s → "1h30m", 720 h → "720h" (sub-second
// parts as "ms"/"us").
std::string format_duration(Micros d);

}  // namespace gpuscale
