// The bounded decision log (see decision_log.hpp).
#include "kernel/decision_log.hpp"

#include <string>

namespace gpuscale {

namespace {

// FNV-1a, 64 bit: a fixed function, so folding never depends on the platform's std::hash.
void mix(std::uint64_t& h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull;  // a separator, so ("ab","c") and ("a","bc") differ
}

}  // namespace

std::uint64_t DecisionLog::content_hash(const DecisionRecord& r) {
  std::uint64_t h = 14695981039346656037ull;
  mix(h, r.controller);
  mix(h, r.pool);
  mix(h, r.reason);
  mix(h, r.explanation);
  mix(h, std::to_string(r.current_replicas) + "/" + std::to_string(r.desired_replicas));
  return h;
}

bool DecisionLog::same_content(const DecisionRecord& a, const DecisionRecord& b) {
  return a.controller == b.controller && a.pool == b.pool && a.reason == b.reason && a.explanation == b.explanation &&
         a.current_replicas == b.current_replicas && a.desired_replicas == b.desired_replicas && a.detail == b.detail &&
         a.metric_value == b.metric_value && a.ratio == b.ratio && a.rebalanced_ratio == b.rebalanced_ratio &&
         a.metric_proposal == b.metric_proposal && a.ready_pods == b.ready_pods && a.unready_pods == b.unready_pods &&
         a.missing_pods == b.missing_pods && a.not_ready_in_average == b.not_ready_in_average && a.not_ready_sum == b.not_ready_sum;
}

void DecisionLog::index(std::size_t i) { by_content_[content_hash(records_[i])].push_back(i); }

void DecisionLog::add(DecisionRecord&& record) {
  ++stats_.recorded;
  if (records_.size() < kFoldAfter) {
    records_.push_back(std::move(record));
    return;
  }
  // The log is past the folding point: index what it holds (once), then fold repeats.
  if (by_content_.empty()) {
    by_content_.reserve(kMaxRecords);
    for (std::size_t i = 0; i < records_.size(); ++i) index(i);
  }
  const std::uint64_t hash = content_hash(record);
  if (const auto it = by_content_.find(hash); it != by_content_.end()) {
    // The latest kept record with this content takes the repeat.
    for (auto k = it->second.rbegin(); k != it->second.rend(); ++k) {
      DecisionRecord& kept = records_[*k];
      if (!same_content(kept, record)) continue;
      ++kept.repeats;
      kept.last_t_s = record.t_s;
      ++stats_.folded;
      return;
    }
  }
  if (records_.size() >= kMaxRecords) {
    ++stats_.dropped;
    return;
  }
  records_.push_back(std::move(record));
  index(records_.size() - 1);
}

}  // namespace gpuscale
