// The run's decision log, bounded. Every record is kept as it comes until the log holds kFoldAfter
// records; after that a record identical to one already kept (the latest such; same controller, pool, reason, replica
// counts, explanation and detail; only the time differs) is folded into it: the kept one counts the
// repeat and remembers the last time, the way Kubernetes' event recorder turns a repeated Event into
// one with a count and lastTimestamp (client-go tools/record/events_cache.go, EventLogger). A record
// unlike any kept one is appended until the log holds kMaxRecords; later ones are only counted.
// So a log never grows past kMaxRecords, whatever the scenario (docs/limits.md).
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kernel/decision.hpp"

namespace gpuscale {

struct DecisionLogStats {
  std::int64_t recorded = 0;  // records the controllers wrote
  std::int64_t folded = 0;    // of them, repeats counted on a kept record
  std::int64_t dropped = 0;   // of them, unlike any kept record once the log was full: only counted
  bool any() const { return folded > 0 || dropped > 0; }
};

class DecisionLog {
 public:
  static constexpr std::size_t kFoldAfter = 20'000;
  static constexpr std::size_t kMaxRecords = 40'000;

  void add(DecisionRecord&& record);
  const std::vector<DecisionRecord>& records() const { return records_; }
  std::vector<DecisionRecord>& records() { return records_; }
  const DecisionLogStats& stats() const { return stats_; }

 private:
  static std::uint64_t content_hash(const DecisionRecord& r);
  static bool same_content(const DecisionRecord& a, const DecisionRecord& b);
  void index(std::size_t i);

  std::vector<DecisionRecord> records_;
  // content hash → indices of the kept records with it, ascending (looked up, never iterated into a
  // result; the order within one entry is the log's, so which record a repeat folds into is fixed).
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> by_content_;
  DecisionLogStats stats_;
};

}  // namespace gpuscale
