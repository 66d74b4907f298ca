// Percentiles as the lab reports them: nearest rank, the smallest value with at least a share p of
// the sample at or below it.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace gpuscale {

inline std::size_t nearest_rank(std::size_t n, double p) {
  std::size_t rank = static_cast<std::size_t>(p * static_cast<double>(n) + 0.999999999);
  return std::min(std::max<std::size_t>(rank, 1), n);
}

// One percentile of an unsorted sample (reorders it); 0 for an empty sample.
inline double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  auto nth = v.begin() + static_cast<std::ptrdiff_t>(nearest_rank(v.size(), p) - 1);
  std::nth_element(v.begin(), nth, v.end());
  return *nth;
}

}  // namespace gpuscale
