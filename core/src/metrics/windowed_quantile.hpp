// A sliding window of (time, value) samples with nearest-rank percentiles: the windowed P99 TTFT is
// read at every scrape. The window itself is a FIFO (samples leave from the front, in the order they
// came). A small window (the usual: a minute of requests) is selected over at each query, which costs
// less than keeping it sorted; a window of more than kSortAbove samples (an hour at hundreds of
// requests a second holds a million) is also kept sorted, in blocks of at most 2·kBlock, so an insert
// or an erase moves at most that many values and a rank is found by summing block sizes. Either way
// the answer is percentile() over the window's values.
#pragma once
#include <algorithm>
#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

#include "kernel/time.hpp"
#include "metrics/percentile.hpp"

namespace gpuscale {

class WindowedQuantile {
 public:
  // Keeping the window sorted costs about 2·kBlock moves a sample; selecting costs the window's size a
  // query. So sorting pays when a window spans many queries: more than 16 scrapes.
  static bool sorted_pays(double window_s, double query_interval_s) { return window_s > 16 * query_interval_s; }
  // From now on (call it before the first push) the window is kept sorted whatever its size.
  void keep_sorted() {
    always_sorted_ = true;
    sorted_ = true;
  }

  void push(Micros t, double v) {
    fifo_.emplace_back(t, v);
    if (sorted_) {
      insert(v);
    } else if (fifo_.size() > kSortAbove) {
      std::vector<double> all;
      all.reserve(fifo_.size());
      for (const auto& s : fifo_) all.push_back(s.second);
      std::sort(all.begin(), all.end());
      for (std::size_t i = 0; i < all.size(); i += kBlock) {
        blocks_.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(i), all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), i + kBlock)));
      }
      sorted_ = true;
    }
  }
  // Drops the samples at the front with time <= cutoff.
  void expire(Micros cutoff) {
    while (!fifo_.empty() && fifo_.front().first <= cutoff) {
      if (sorted_) erase(fifo_.front().second);
      fifo_.pop_front();
    }
    if (sorted_ && !always_sorted_ && fifo_.size() < kSortAbove / 2) {
      blocks_.clear();
      sorted_ = false;
    }
  }
  std::size_t size() const { return fifo_.size(); }
  // Nearest-rank percentile of the values in the window; 0 when empty.
  double percentile(double p) const {
    if (fifo_.empty()) return 0;
    if (!sorted_) {
      scratch_.clear();
      for (const auto& s : fifo_) scratch_.push_back(s.second);
      return gpuscale::percentile(scratch_, p);
    }
    std::size_t k = nearest_rank(fifo_.size(), p) - 1;  // 0-based rank
    for (const auto& b : blocks_) {
      if (k < b.size()) return b[k];
      k -= b.size();
    }
    return blocks_.back().back();
  }

 private:
  static constexpr std::size_t kSortAbove = 8192;  // samples
  static constexpr std::size_t kBlock = 256;        // an insert or erase moves at most 512 values

  // The first block whose last value is >= v (blocks are sorted end to end).
  std::size_t block_for(double v) const {
    std::size_t lo = 0, hi = blocks_.size();
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      if (blocks_[mid].back() < v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  void insert(double v) {
    if (blocks_.empty()) {
      blocks_.emplace_back(1, v);
      return;
    }
    std::size_t i = std::min(block_for(v), blocks_.size() - 1);
    std::vector<double>& b = blocks_[i];
    b.insert(std::upper_bound(b.begin(), b.end(), v), v);
    if (b.size() > 2 * kBlock) {
      std::vector<double> upper(b.begin() + static_cast<std::ptrdiff_t>(kBlock), b.end());
      b.resize(kBlock);
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(upper));
    }
  }
  void erase(double v) {
    const std::size_t i = block_for(v);  // the block holding the first copy of v
    std::vector<double>& b = blocks_[i];
    b.erase(std::lower_bound(b.begin(), b.end(), v));
    if (b.empty()) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  std::deque<std::pair<Micros, double>> fifo_;
  std::vector<std::vector<double>> blocks_;  // while sorted_
  bool sorted_ = false;
  bool always_sorted_ = false;
  mutable std::vector<double> scratch_;  // a small window's values, selected over at a query
};

}  // namespace gpuscale
