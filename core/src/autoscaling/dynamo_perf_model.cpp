// Dynamo planner's forward-pass performance model and engine queries (see dynamo_perf_model.hpp).
#include "autoscaling/dynamo_perf_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "kernel/detmath.hpp"

namespace gpuscale::dynamo {

namespace {

constexpr std::int64_t kU32Max = 4294967295LL;
constexpr double kHingeNegTolerance = 1e-6;         // regression.rs HINGE_NEG_TOLERANCE
constexpr std::size_t kPrefillHingeMinObservations = 6;  // PREFILL_HINGE_MIN_OBSERVATIONS
constexpr double kRelativeWeightFloorMs = 25.0;      // RELATIVE_WEIGHT_FLOOR_MS
constexpr int kHingeLogspaceCandidates = 8;          // HINGE_LOGSPACE_CANDIDATES
constexpr std::int64_t kMaxCapacitySearchCandidates = 128;  // engine_query.py MAX_CAPACITY_SEARCH_CANDIDATES

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double d) { return std::isfinite(d); });
}

// Rust's `f64` sum of an iterator: a left fold.
double linear_terms(const std::vector<double>& coef, const std::vector<double>& x) {
  double s = -0.0;
  for (std::size_t i = 0; i < coef.size() && i < x.size(); ++i) s = s + coef[i] * x[i];
  return s;
}

double relative_error_weight(double observed_ms) { return 1.0 / std::max(observed_ms, kRelativeWeightFloorMs); }

std::optional<std::vector<double>> solve_regularized_linear_system(std::vector<std::vector<double>> lhs, std::vector<double> rhs) {
  double scale = 0.0;
  for (std::size_t i = 0; i < lhs.size(); ++i) scale += std::fabs(lhs[i][i]);
  scale = std::max(scale, 1.0);
  const double ridge = scale * 1e-9;
  for (std::size_t i = 1; i < lhs.size(); ++i) lhs[i][i] += ridge;
  return solve_linear_system(std::move(lhs), std::move(rhs));
}

std::optional<RegressionFit> fit_linear_active_set(const std::vector<Observation>& obs, int ndim, const std::vector<int>& active) {
  const std::size_t size = active.size() + 1;
  std::vector<std::vector<double>> lhs(size, std::vector<double>(size, 0.0));
  std::vector<double> rhs(size, 0.0);
  std::vector<double> row(size);
  for (const auto& [x, y] : obs) {
    row[0] = 1.0;
    for (std::size_t k = 0; k < active.size(); ++k) {
      if (static_cast<std::size_t>(active[k]) >= x.size()) return std::nullopt;
      row[k + 1] = x[static_cast<std::size_t>(active[k])];
    }
    for (std::size_t i = 0; i < size; ++i) {
      rhs[i] += row[i] * y;
      for (std::size_t j = 0; j < size; ++j) lhs[i][j] += row[i] * row[j];
    }
  }
  auto solution = solve_linear_system(lhs, rhs);
  if (!solution) solution = solve_regularized_linear_system(lhs, rhs);
  if (!solution) return std::nullopt;
  if (!all_finite(*solution)) return std::nullopt;
  for (std::size_t i = 1; i < solution->size(); ++i) {
    if ((*solution)[i] < 0.0) return std::nullopt;
  }
  RegressionFit fit;
  fit.intercept = (*solution)[0];
  fit.coefficients.assign(static_cast<std::size_t>(ndim), 0.0);
  for (std::size_t k = 0; k < active.size(); ++k) fit.coefficients[static_cast<std::size_t>(active[k])] = (*solution)[k + 1];
  return fit;
}

std::optional<RegressionFit> fit_weighted_hinge_at(const std::vector<Observation>& obs, double knot) {
  const std::size_t size = 3;
  std::vector<std::vector<double>> lhs(size, std::vector<double>(size, 0.0));
  std::vector<double> rhs(size, 0.0);
  for (const auto& [x, y] : obs) {
    if (x.empty()) return std::nullopt;
    const double value = x[0];
    const double row[3] = {1.0, value, std::max(value - knot, 0.0)};
    const double weight = relative_error_weight(y);
    for (std::size_t i = 0; i < size; ++i) {
      const double weighted_i = row[i] * weight;
      rhs[i] += weighted_i * y * weight;
      for (std::size_t j = 0; j < size; ++j) lhs[i][j] += weighted_i * row[j] * weight;
    }
  }
  auto solution = solve_linear_system(lhs, rhs);
  if (!solution) solution = solve_regularized_linear_system(lhs, rhs);
  if (!solution) return std::nullopt;
  RegressionFit fit;
  fit.hinge = true;
  fit.intercept = (*solution)[0];
  fit.left_slope = (*solution)[1];
  fit.right_slope_delta = (*solution)[2];
  fit.knot = knot;
  // WeightedHingeFit::normalize_monotonic_nonnegative
  const double right_slope = fit.left_slope + fit.right_slope_delta;
  if (fit.left_slope < -kHingeNegTolerance || right_slope < -kHingeNegTolerance || !std::isfinite(fit.intercept) ||
      !std::isfinite(fit.left_slope) || !std::isfinite(right_slope)) {
    return std::nullopt;
  }
  fit.left_slope = std::max(fit.left_slope, 0.0);
  fit.right_slope_delta = std::max(right_slope, 0.0) - fit.left_slope;
  return fit;
}

double weighted_hinge_rmse(const std::vector<Observation>& obs, const RegressionFit& fit) {
  double s = -0.0;
  for (const auto& [x, y] : obs) {
    const double residual = (fit.predict(x) - y) * relative_error_weight(y);
    s = s + residual * residual;
  }
  const double mse = s / static_cast<double>(std::max<std::size_t>(obs.size(), 1));
  return std::sqrt(mse);
}

// engine_query.py _ceil_u32 (nullopt where it raises).
std::optional<std::int64_t> ceil_u32(double value) {
  if (!std::isfinite(value)) return std::nullopt;
  if (value <= 0) return 0;
  const double r = std::ceil(value);
  if (r > static_cast<double>(kU32Max)) return std::nullopt;
  return static_cast<std::int64_t>(r);
}

std::int64_t sat_mul_u32(std::int64_t a, std::int64_t b) { return std::min(kU32Max, a * b); }

// aic_adapter.py _ceil_nonnegative.
std::int64_t ceil_nonnegative(double v) { return v <= 0 ? 0 : static_cast<std::int64_t>(std::ceil(v)); }

bool sla_ok(std::optional<double> value_s, std::optional<double> sla_s) {
  if (!sla_s) return true;
  return value_s.has_value() && *value_s <= *sla_s;
}

// engine_query.py _select_capacity with OptimizationTarget.THROUGHPUT.
void select_capacity(std::optional<EngineCapacity>& best, const EngineCapacity& candidate) {
  if (!best) {
    best = candidate;
    return;
  }
  if (!best->eligible && candidate.eligible) {
    best = candidate;
    return;
  }
  if (best->eligible && !candidate.eligible) return;
  if (candidate.rps > best->rps) best = candidate;
}

std::optional<double> ms_to_s(std::optional<double> ms) {
  if (!ms) return std::nullopt;
  return *ms / 1000.0;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// samples.rs
// ------------------------------------------------------------------------------------------------

BucketedSamples::BucketedSamples(const PerfModelOptions& options, int ndim)
    : min_(static_cast<std::size_t>(ndim), std::numeric_limits<double>::infinity()),
      max_(static_cast<std::size_t>(ndim), -std::numeric_limits<double>::infinity()),
      max_observations_(static_cast<std::size_t>(std::max(1, options.max_observations))) {
  const auto count = static_cast<std::size_t>(std::max(1, options.bucket_count));
  buckets_per_axis_ = ndim == 1 ? count : static_cast<std::size_t>(std::sqrt(static_cast<double>(count)));  // integer_sqrt
  buckets_per_axis_ = std::max<std::size_t>(buckets_per_axis_, 1);
}

std::vector<std::size_t> BucketedSamples::key(const std::vector<double>& x) const {
  std::vector<std::size_t> k(x.size(), 0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double lo = min_[i], hi = max_[i];
    if (hi <= lo) continue;
    auto idx = static_cast<long long>((x[i] - lo) / (hi - lo) * static_cast<double>(buckets_per_axis_));  // `as isize`
    idx = std::clamp<long long>(idx, 0, static_cast<long long>(buckets_per_axis_) - 1);
    k[i] = static_cast<std::size_t>(idx);
  }
  return k;
}

bool BucketedSamples::add(const std::vector<double>& x, double y) {
  if (x.size() != min_.size() || !all_finite(x)) return false;
  bool changed = false;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (x[i] < min_[i]) {
      min_[i] = x[i];
      changed = true;
    }
    if (x[i] > max_[i]) {
      max_[i] = x[i];
      changed = true;
    }
  }
  if (changed && total_ > 0) {  // rebuild_buckets under the new bounds
    const std::vector<Observation> all = observations();
    buckets_.clear();
    for (const Observation& o : all) buckets_[key(o.first)].push_back(o);
  }
  buckets_[key(x)].push_back({x, y});
  ++total_;
  if (total_ > max_observations_) {
    // retire_from_fattest_bucket: Rust's max_by_key keeps the last of equal maxima; here in key order.
    auto fattest = buckets_.end();
    for (auto it = buckets_.begin(); it != buckets_.end(); ++it) {
      if (fattest == buckets_.end() || it->second.size() >= fattest->second.size()) fattest = it;
    }
    if (fattest != buckets_.end() && !fattest->second.empty()) {
      fattest->second.erase(fattest->second.begin());
      --total_;
      if (fattest->second.empty()) buckets_.erase(fattest);
    }
  }
  return true;
}

std::vector<Observation> BucketedSamples::observations() const {
  std::vector<Observation> out;
  out.reserve(total_);
  for (const auto& [k, bucket] : buckets_) out.insert(out.end(), bucket.begin(), bucket.end());
  return out;
}

// ------------------------------------------------------------------------------------------------
// regression.rs
// ------------------------------------------------------------------------------------------------

double RegressionFit::predict(const std::vector<double>& x) const {
  if (hinge) {
    const double value = x.empty() ? 0.0 : x[0];
    return intercept + left_slope * value + right_slope_delta * std::max(value - knot, 0.0);
  }
  return intercept + linear_terms(coefficients, x);
}

std::string RegressionFit::describe(const char* const* names) const {
  if (hinge) {
    return "hinge fit " + num(intercept) + " ms + " + num(left_slope) + " ms/" + names[0] + " + " + num(right_slope_delta) +
           " ms/" + names[0] + " above " + num(knot);
  }
  std::string s = "linear fit " + num(intercept) + " ms";
  for (std::size_t i = 0; i < coefficients.size(); ++i) s += " + " + num(coefficients[i]) + " ms/" + names[i];
  return s;
}

// Gauss–Jordan elimination with partial pivoting (solve_linear_system). The pivot is the row of the
// largest |a| from the diagonal down, the last of equals (Rust's max_by).
std::optional<std::vector<double>> solve_linear_system(std::vector<std::vector<double>> lhs, std::vector<double> rhs) {
  const std::size_t n = rhs.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r) {
      if (!(std::fabs(lhs[pivot][col]) > std::fabs(lhs[r][col]))) pivot = r;
    }
    if (std::fabs(lhs[pivot][col]) < 1e-12) return std::nullopt;
    std::swap(lhs[col], lhs[pivot]);
    std::swap(rhs[col], rhs[pivot]);
    const double divisor = lhs[col][col];
    for (std::size_t j = col; j < n; ++j) lhs[col][j] /= divisor;
    rhs[col] /= divisor;
    for (std::size_t row = 0; row < n; ++row) {
      if (row == col) continue;
      const double factor = lhs[row][col];
      if (factor == 0.0) continue;
      for (std::size_t j = col; j < n; ++j) lhs[row][j] -= factor * lhs[col][j];
      rhs[row] -= factor * rhs[col];
    }
  }
  return rhs;
}

// fit_linear: the non-negative least-squares solution found by trying every active set of slopes
// (the others fixed at 0) and keeping the smallest squared error (the first of equals).
std::optional<RegressionFit> fit_linear(const std::vector<Observation>& obs, int ndim, int min_observations) {
  if (obs.size() < static_cast<std::size_t>(std::max(0, min_observations))) return std::nullopt;
  std::optional<std::pair<double, RegressionFit>> best;
  const int sets = 1 << ndim;
  for (int mask = 0; mask < sets; ++mask) {
    std::vector<int> active;
    for (int i = 0; i < ndim; ++i) {
      if (mask & (1 << i)) active.push_back(i);
    }
    auto fit = fit_linear_active_set(obs, ndim, active);
    if (!fit) continue;
    double sse = -0.0;
    for (const auto& [x, y] : obs) {
      const double r = fit->predict(x) - y;
      sse = sse + r * r;
    }
    if (!std::isfinite(sse)) continue;
    if (!best || sse < best->first) best = std::make_pair(sse, *fit);
  }
  if (!best) return std::nullopt;
  const bool underdetermined = obs.size() <= static_cast<std::size_t>(ndim);
  const bool load_signal = std::any_of(best->second.coefficients.begin(), best->second.coefficients.end(), [](double c) { return c > 0.0; });
  if (underdetermined || load_signal) return best->second;
  return std::nullopt;
}

std::vector<double> hinge_candidates(const std::vector<Observation>& obs) {
  std::vector<double> sorted;
  for (const auto& o : obs) {
    if (!o.first.empty() && std::isfinite(o.first[0])) sorted.push_back(o.first[0]);
  }
  std::stable_sort(sorted.begin(), sorted.end());
  std::vector<double> xs;
  for (double v : sorted) {
    if (!xs.empty() && std::fabs(v - xs.back()) <= std::numeric_limits<double>::epsilon()) continue;  // dedup_by
    xs.push_back(v);
  }
  if (xs.size() < 3) return {};
  const double mn = xs.front(), mx = xs.back();
  std::vector<double> c;
  for (std::size_t numerator = 1; numerator <= 4; ++numerator) c.push_back(xs[numerator * (xs.size() - 1) / 5]);
  if (mn > 0.0 && mx > mn) {
    const double log_min = det_log(mn), log_max = det_log(mx);
    for (int idx = 1; idx <= kHingeLogspaceCandidates; ++idx) {
      const double t = static_cast<double>(idx) / static_cast<double>(kHingeLogspaceCandidates + 1);
      c.push_back(det_exp(log_min + t * (log_max - log_min)));
    }
  }
  std::vector<double> kept;
  for (double v : c) {
    if (std::isfinite(v) && v > mn && v < mx) kept.push_back(v);
  }
  std::stable_sort(kept.begin(), kept.end());
  std::vector<double> out;
  for (double v : kept) {
    if (!out.empty()) {
      const double scale = std::max(std::max(std::fabs(v), std::fabs(out.back())), 1.0);
      if (std::fabs(v - out.back()) <= scale * 1e-9) continue;
    }
    out.push_back(v);
  }
  return out;
}

std::optional<RegressionFit> fit_weighted_hinge(const std::vector<Observation>& obs) {
  std::optional<std::pair<double, RegressionFit>> best;
  for (double knot : hinge_candidates(obs)) {
    auto fit = fit_weighted_hinge_at(obs, knot);
    if (!fit) continue;
    const double score = weighted_hinge_rmse(obs, *fit);
    if (!best || best->first > score) best = std::make_pair(score, *fit);  // min_by: the first of equals
  }
  if (!best) return std::nullopt;
  return best->second;
}

std::optional<RegressionFit> fit_regression(const std::vector<Observation>& obs, int ndim, int min_observations) {
  // Prefill (the one-dimensional kind) is overhead-heavy at low token counts and slope-heavy at high
  // ones: a weighted hinge avoids the negative intercept a global line can fit (regression.rs).
  if (ndim == 1 && obs.size() >= std::max<std::size_t>(static_cast<std::size_t>(std::max(0, min_observations)), kPrefillHingeMinObservations)) {
    if (auto fit = fit_weighted_hinge(obs)) return fit;
  }
  return fit_linear(obs, ndim, min_observations);
}

BucketedRegression::BucketedRegression(const PerfModelOptions& options, int ndim)
    : samples_(options, ndim), ndim_(ndim), min_observations_(options.min_observations) {}

void BucketedRegression::add_observation(const std::vector<double>& x, double y_ms) {
  if (samples_.add(x, y_ms)) fit_ = fit_regression(samples_.observations(), ndim_, min_observations_);
}

std::optional<double> BucketedRegression::predict(const std::vector<double>& x) const {
  if (!fit_) return std::nullopt;
  return std::max(fit_->predict(x), 1e-6);
}

// ------------------------------------------------------------------------------------------------
// model.rs
// ------------------------------------------------------------------------------------------------

const char* workload_kind_name(WorkloadKind k) {
  switch (k) {
    case WorkloadKind::Prefill: return "prefill";
    case WorkloadKind::Decode: return "decode";
    case WorkloadKind::Mixed: return "mixed";
  }
  return "prefill";
}

namespace {

struct Features {
  WorkloadKind kind;
  std::vector<double> x;
};

// IterationFeatures::from_single_rank.
std::optional<Features> features(const ScheduledWork& w) {
  const bool has_prefill = w.sum_prefill_tokens > 0;
  const bool has_decode = w.num_decode_requests > 0 || w.sum_decode_kv_tokens > 0;
  if (!has_prefill && !has_decode) return std::nullopt;
  if (has_prefill && !has_decode) return Features{WorkloadKind::Prefill, {static_cast<double>(w.sum_prefill_tokens)}};
  if (!has_prefill) {
    return Features{WorkloadKind::Decode, {static_cast<double>(w.num_decode_requests), static_cast<double>(w.sum_decode_kv_tokens)}};
  }
  return Features{WorkloadKind::Mixed, {static_cast<double>(w.sum_prefill_tokens), static_cast<double>(w.sum_decode_kv_tokens)}};
}

}  // namespace

ForwardPassPerfModel::ForwardPassPerfModel(const PerfModelOptions& options)
    : prefill_(options, 1), decode_(options, 2), mixed_(options, 2) {}

const BucketedRegression& ForwardPassPerfModel::store(WorkloadKind k) const {
  switch (k) {
    case WorkloadKind::Prefill: return prefill_;
    case WorkloadKind::Decode: return decode_;
    case WorkloadKind::Mixed: return mixed_;
  }
  return prefill_;
}

std::optional<double> ForwardPassPerfModel::estimate_ms(const ScheduledWork& w) const {
  const auto f = features(w);
  if (!f) return 0.0;  // empty scheduled work
  return store(f->kind).predict(f->x);
}

void ForwardPassPerfModel::tune(const ScheduledWork& w, double wall_time_s) {
  const auto f = features(w);
  if (!f || !std::isfinite(wall_time_s) || wall_time_s <= 0.0) return;
  BucketedRegression& s = f->kind == WorkloadKind::Prefill ? prefill_ : f->kind == WorkloadKind::Decode ? decode_ : mixed_;
  s.add_observation(f->x, wall_time_s * 1000.0);
}

bool ForwardPassPerfModel::any_ready() const { return prefill_.fit() || decode_.fit() || mixed_.fit(); }

std::size_t ForwardPassPerfModel::observation_count() const {
  return prefill_.observation_count() + decode_.observation_count() + mixed_.observation_count();
}

// ------------------------------------------------------------------------------------------------
// aic_adapter.py PlannerEnginePerfModel + engine_query.py AicCoreEnginePerfModel
// ------------------------------------------------------------------------------------------------

void MovingAverage::add_after_first_nonzero(double value) {
  if (value > 0.0) seen_nonzero_ = true;
  if (!seen_nonzero_) return;
  value = std::max(0.0, value);
  values_.push_back(value);
  sum_ += value;
  while (values_.size() > max_len_) {
    sum_ -= values_.front();
    values_.erase(values_.begin());
  }
}

PlannerPerfModel::PlannerPerfModel(WorkerType type, const PerfModelOptions& options, const EngineLimits& limits)
    : type_(type),
      limits_(limits),
      model_(options),
      avg_isl_(options.max_observations),
      avg_decode_length_(options.max_observations),
      agg_num_prefill_(options.max_observations),
      agg_prefill_tokens_(options.max_observations) {}

void PlannerPerfModel::observe_for_next_request(const ForwardPassMetrics& f) {
  if (f.num_prefill_requests > 0) {
    avg_isl_.add_after_first_nonzero(static_cast<double>(f.sum_prefill_tokens) / static_cast<double>(f.num_prefill_requests));
  } else {
    avg_isl_.add_after_first_nonzero(0.0);
  }
  if (f.num_decode_requests > 0) {
    avg_decode_length_.add_after_first_nonzero(static_cast<double>(f.sum_decode_kv_tokens) / static_cast<double>(f.num_decode_requests));
  }
}

void PlannerPerfModel::tune(const ForwardPassMetrics& f) {
  ScheduledWork w{f.num_prefill_requests, f.sum_prefill_tokens, f.num_decode_requests, f.sum_decode_kv_tokens};
  model_.tune(w, f.wall_time_s);
  // _AggLoadAverages._observe_iteration (every iteration, idle ones too)
  agg_num_prefill_.add_after_first_nonzero(f.num_prefill_requests > 0 ? static_cast<double>(f.num_prefill_requests) : 0.0);
  agg_prefill_tokens_.add_after_first_nonzero(static_cast<double>(f.sum_prefill_tokens));
}

void PlannerPerfModel::load_benchmark_fpms(const std::vector<ForwardPassMetrics>& fpms) {
  for (const ForwardPassMetrics& f : fpms) observe_for_next_request(f);
  for (const ForwardPassMetrics& f : fpms) tune(f);
}

void PlannerPerfModel::add_observations(const std::vector<ForwardPassMetrics>& fpms) {
  std::vector<const ForwardPassMetrics*> sorted;
  for (const ForwardPassMetrics& f : fpms) sorted.push_back(&f);
  std::stable_sort(sorted.begin(), sorted.end(), [](const ForwardPassMetrics* a, const ForwardPassMetrics* b) { return a->replica < b->replica; });
  for (const ForwardPassMetrics* f : sorted) observe_for_next_request(*f);
  for (const ForwardPassMetrics* f : sorted) tune(*f);
}

std::optional<double> PlannerPerfModel::forward_pass_s(const ScheduledWork& w) const {
  const auto ms = model_.estimate_ms(w);
  if (!ms) return std::nullopt;
  return std::max(0.0, *ms) / 1000.0;
}

std::optional<double> PlannerPerfModel::prefill_time_for_tokens(std::int64_t tokens) const {
  const std::int64_t mbt = limits_.max_num_batched_tokens;
  if (mbt <= 0) return std::nullopt;
  const std::int64_t full = tokens / mbt, tail = tokens % mbt;
  double total = 0.0;
  if (full > 0) {
    const auto d = forward_pass_s(ScheduledWork{1, mbt, 0, 0});
    if (!d) return std::nullopt;
    total = total + *d * static_cast<double>(full);
  }
  if (tail > 0) {
    const auto d = forward_pass_s(ScheduledWork{1, tail, 0, 0});
    if (!d) return std::nullopt;
    total = total + *d;
  }
  return total;
}

std::optional<double> PlannerPerfModel::mixed_chunk_time(std::int64_t tokens, std::int64_t decode_requests, std::int64_t decode_kv) const {
  const std::int64_t mbt = limits_.max_num_batched_tokens;
  if (mbt <= 0) return std::nullopt;
  const std::int64_t full = tokens / mbt, tail = tokens % mbt;
  double total = 0.0;
  if (full > 0) {
    const auto d = forward_pass_s(ScheduledWork{1, mbt, decode_requests, decode_kv});
    if (!d) return std::nullopt;
    total = total + *d * static_cast<double>(full);
  }
  if (tail > 0) {
    const auto d = forward_pass_s(ScheduledWork{1, tail, decode_requests, decode_kv});
    if (!d) return std::nullopt;
    total = total + *d;
  }
  return total;
}

std::vector<std::int64_t> capacity_batch_sizes(std::int64_t max_batch) {
  std::vector<std::int64_t> out;
  if (max_batch <= 0) return out;
  if (max_batch <= kMaxCapacitySearchCandidates) {
    for (std::int64_t b = 1; b <= max_batch; ++b) out.push_back(b);
    return out;
  }
  const std::int64_t span = max_batch - 1, denominator = kMaxCapacitySearchCandidates - 1;
  for (std::int64_t i = 0; i < kMaxCapacitySearchCandidates; ++i) out.push_back(1 + i * span / denominator);
  return out;
}

// engine_query.py _find_prefill_capacity: a batch of B prefills of `isl` tokens takes the chunked
// prefill time of B·isl tokens; rps = B / that time; the best rps among the batches meeting the TTFT.
std::optional<EngineCapacity> PlannerPerfModel::find_prefill_capacity(std::int64_t isl, std::optional<double> ttft_sla_s) const {
  const std::int64_t mbt = limits_.max_num_batched_tokens;
  const std::int64_t max_batch = isl > mbt ? 1 : std::min(limits_.max_num_seqs, mbt / std::max<std::int64_t>(1, isl));
  if (max_batch == 0) return std::nullopt;
  std::optional<EngineCapacity> best;
  const auto sizes = capacity_batch_sizes(max_batch);
  for (std::int64_t b : sizes) {
    const auto ttft = prefill_time_for_tokens(sat_mul_u32(isl, b));
    if (!ttft) return std::nullopt;
    if (*ttft == 0.0) continue;
    EngineCapacity c;
    c.rps = static_cast<double>(b) / *ttft;
    c.ttft_s = *ttft;
    c.e2e_s = *ttft;
    c.eligible = sla_ok(*ttft, ttft_sla_s) && sla_ok(std::nullopt, std::nullopt);
    c.batch_size = b;
    select_capacity(best, c);
  }
  if (best) {
    best->max_batch = max_batch;
    best->isl = isl;
    best->candidates = static_cast<int>(sizes.size());
  }
  return best;
}

// _find_decode_capacity: B sequences at context isl + osl/2 decode one token each per forward pass;
// rps = B / (osl × ITL); the best rps among the batches meeting the ITL.
std::optional<EngineCapacity> PlannerPerfModel::find_decode_capacity(std::int64_t isl, std::int64_t osl, std::optional<double> itl_sla_s) const {
  if (osl == 0) return std::nullopt;
  const std::int64_t context = std::max<std::int64_t>(1, std::min(kU32Max, isl + osl / 2));
  const std::int64_t max_batch = std::min(limits_.max_num_seqs, limits_.max_kv_tokens / context);
  if (max_batch <= 0) return std::nullopt;
  std::optional<EngineCapacity> best;
  const auto sizes = capacity_batch_sizes(max_batch);
  for (std::int64_t b : sizes) {
    const auto forward = forward_pass_s(ScheduledWork{0, 0, b, sat_mul_u32(b, context)});
    if (!forward) return std::nullopt;
    const double itl = *forward / 1.0;  // accept length 1
    if (itl == 0.0) continue;
    EngineCapacity c;
    c.rps = static_cast<double>(b) / (static_cast<double>(osl) * itl);
    c.itl_s = itl;
    c.eligible = sla_ok(std::nullopt, std::nullopt) && sla_ok(itl, itl_sla_s);
    c.batch_size = b;
    select_capacity(best, c);
  }
  if (best) {
    best->max_batch = max_batch;
    best->isl = isl;
    best->osl = osl;
    best->context_length = context;
    best->candidates = static_cast<int>(sizes.size());
  }
  return best;
}

// _find_aggregated_capacity: B decoding sequences, each iteration also prefilling B·isl/osl tokens
// (the new requests' share), within max_num_batched_tokens; TTFT = the chunked prefill of one
// iteration's prefill plus a new request's prompt alongside the decodes.
std::optional<EngineCapacity> PlannerPerfModel::find_aggregated_capacity(std::int64_t isl, std::int64_t osl, std::optional<double> ttft_sla_s,
                                                                         std::optional<double> itl_sla_s) const {
  const std::int64_t mbt = limits_.max_num_batched_tokens;
  if (osl == 0 || mbt <= 1) return std::nullopt;
  const std::int64_t context = std::max<std::int64_t>(1, std::min(kU32Max, isl + osl / 2));
  const std::int64_t decode_max = std::min(limits_.max_num_seqs, limits_.max_kv_tokens / context);
  const std::int64_t hard_cap = std::min(decode_max, std::max<std::int64_t>(1, mbt - 1));
  if (hard_cap <= 0) return std::nullopt;
  std::optional<EngineCapacity> best;
  const auto sizes = capacity_batch_sizes(hard_cap);
  for (std::int64_t b : sizes) {
    // _aggregate_prefill_per_iteration: ceil(B × accept × isl / osl)
    const auto per_iteration = ceil_u32(static_cast<double>(b) * 1.0 * static_cast<double>(isl) / static_cast<double>(std::max<std::int64_t>(1, osl)));
    if (!per_iteration) return std::nullopt;
    const std::int64_t budget = std::max<std::int64_t>(0, mbt - b);  // _prefill_decode_balanced
    if (budget == 0 || *per_iteration > budget) continue;
    const std::int64_t decode_kv = sat_mul_u32(b, context);
    const std::int64_t prefill_tokens = std::min(mbt, *per_iteration);
    const auto forward = forward_pass_s(ScheduledWork{prefill_tokens > 0 ? 1 : 0, prefill_tokens, b, decode_kv});
    if (!forward) return std::nullopt;
    const double itl = *forward / 1.0;
    if (itl == 0.0) continue;
    const auto ttft = mixed_chunk_time(std::min(kU32Max, prefill_tokens + isl), b, decode_kv);
    if (!ttft) return std::nullopt;
    const double e2e = *ttft + itl * static_cast<double>(std::max<std::int64_t>(0, osl - 1));
    EngineCapacity c;
    c.rps = static_cast<double>(b) / (static_cast<double>(osl) * itl);
    c.ttft_s = *ttft;
    c.itl_s = itl;
    c.e2e_s = e2e;
    c.eligible = sla_ok(*ttft, ttft_sla_s) && sla_ok(itl, itl_sla_s) && sla_ok(e2e, std::nullopt);
    c.batch_size = b;
    select_capacity(best, c);
  }
  if (best) {
    best->max_batch = hard_cap;
    best->isl = isl;
    best->osl = osl;
    best->context_length = context;
    best->candidates = static_cast<int>(sizes.size());
  }
  return best;
}

// aic_adapter.py find_engine_capacity_rps: isl = ceil(isl), osl = max(1, ceil(osl)).
std::optional<EngineCapacity> PlannerPerfModel::find_engine_capacity_rps(double isl, double osl, std::optional<double> ttft_sla_ms,
                                                                         std::optional<double> itl_sla_ms) const {
  if (!(isl > 0)) return std::nullopt;
  if (type_ != WorkerType::Prefill && !(osl > 0)) return std::nullopt;
  const auto isl_i = ceil_u32(isl);
  if (!isl_i || *isl_i == 0) return std::nullopt;
  const double osl_c = std::ceil(osl);
  if (!std::isfinite(osl_c) || osl_c > static_cast<double>(kU32Max)) return std::nullopt;
  const std::int64_t osl_i = std::max<std::int64_t>(1, static_cast<std::int64_t>(osl_c));
  const std::int64_t prefill_isl = std::max<std::int64_t>(1, *isl_i);  // _effective_prefill_isl, no KV hit discount
  switch (type_) {
    case WorkerType::Prefill: return find_prefill_capacity(prefill_isl, ms_to_s(ttft_sla_ms));
    case WorkerType::Decode: return find_decode_capacity(*isl_i, osl_i, ms_to_s(itl_sla_ms));
    case WorkerType::Aggregated: return find_aggregated_capacity(prefill_isl, osl_i, ms_to_s(ttft_sla_ms), ms_to_s(itl_sla_ms));
  }
  return std::nullopt;
}

// _synthetic_prefill_fpm then get_queued_prefill_time (one rank).
std::optional<double> PlannerPerfModel::estimate_queued_prefill_time(const ForwardPassMetrics& f, double queue_scale, double decode_scale,
                                                                     bool include_queued_decode, bool add_next_request) const {
  if (type_ == WorkerType::Decode) return std::nullopt;
  const std::int64_t mbt = limits_.max_num_batched_tokens;
  if (mbt <= 0) return std::nullopt;
  double queued_tokens = static_cast<double>(f.queued_prefill_tokens) * queue_scale;
  double queued_requests = static_cast<double>(f.queued_prefill_requests) * queue_scale;
  if (add_next_request && avg_isl() > 0) {
    queued_tokens += avg_isl();
    queued_requests += 1.0;
  }
  queued_tokens *= 1.0;  // × (1 − KV hit rate): none in the lab
  double decode_kv = static_cast<double>(f.sum_decode_kv_tokens);
  double decode_requests = static_cast<double>(f.num_decode_requests);
  if (include_queued_decode) {
    decode_kv += static_cast<double>(f.queued_decode_kv_tokens);
    decode_requests += static_cast<double>(f.queued_decode_requests);
  }
  decode_kv *= decode_scale;
  decode_requests *= decode_scale;
  const std::int64_t tokens = ceil_nonnegative(queued_tokens);
  const std::int64_t requests = ceil_nonnegative(queued_requests);
  const bool aggregated = type_ == WorkerType::Aggregated;
  const std::int64_t sched_decode_req = aggregated ? ceil_nonnegative(decode_requests) : 0;
  const std::int64_t sched_decode_kv = aggregated ? ceil_nonnegative(decode_kv) : 0;

  const std::int64_t full = tokens / mbt, tail = tokens % mbt;
  if (full == 0 && tail == 0) return 0.0;
  std::vector<std::int64_t> breakpoints{0};
  if (full > 0) breakpoints.push_back(full);
  if (tail > 0) breakpoints.push_back(full + 1);
  std::sort(breakpoints.begin(), breakpoints.end());
  breakpoints.erase(std::unique(breakpoints.begin(), breakpoints.end()), breakpoints.end());
  double total = 0.0;
  for (std::size_t i = 0; i + 1 < breakpoints.size(); ++i) {
    const std::int64_t start = breakpoints[i], repeat = breakpoints[i + 1] - breakpoints[i];
    const std::int64_t chunk = start < full ? mbt : start == full ? tail : 0;
    ScheduledWork w;
    w.num_prefill_requests = chunk == 0 ? 0 : std::max<std::int64_t>(1, requests);
    w.sum_prefill_tokens = chunk;
    w.num_decode_requests = sched_decode_req;
    w.sum_decode_kv_tokens = sched_decode_kv;
    const auto d = forward_pass_s(w);
    if (!d) return std::nullopt;
    total = total + *d * static_cast<double>(repeat);
  }
  return total;
}

// _synthetic_decode_fpm then get_scheduled_decode_itl (one rank).
std::optional<double> PlannerPerfModel::estimate_scheduled_decode_itl(const ForwardPassMetrics& f, double decode_scale, bool include_queued_decode,
                                                                      bool include_queued_prefill_as_kv, bool add_next_request) const {
  if (type_ == WorkerType::Prefill) return std::nullopt;
  const bool aggregated = type_ == WorkerType::Aggregated;
  double decode_kv = static_cast<double>(f.sum_decode_kv_tokens);
  double decode_requests = static_cast<double>(f.num_decode_requests);
  if (include_queued_decode) {
    decode_kv += static_cast<double>(f.queued_decode_kv_tokens);
    decode_requests += static_cast<double>(f.queued_decode_requests);
  }
  if (include_queued_prefill_as_kv) {
    decode_kv += static_cast<double>(f.queued_prefill_tokens);
    decode_requests += static_cast<double>(f.queued_prefill_requests);
  }
  decode_kv *= decode_scale;
  decode_requests *= decode_scale;
  if (add_next_request && avg_decode_length() > 0) {
    decode_kv += avg_decode_length();
    decode_requests += 1.0;
  }
  ScheduledWork w;
  // Aggregated: the synthetic FPM drops the iteration's own prefill, and the engine query puts the
  // learned typical prefill mix in its place (_AggLoadAverages.typical_prefill_for_mixed_itl).
  if (aggregated) {
    const auto tokens = ceil_u32(agg_prefill_tokens_.value());
    const auto requests = ceil_u32(agg_num_prefill_.value());
    if (!tokens || !requests) return std::nullopt;
    w.sum_prefill_tokens = *tokens;
    w.num_prefill_requests = std::max<std::int64_t>(*requests, *tokens > 0 ? 1 : 0);
  }  // a decode worker: get_scheduled_decode_itl keeps no prefill
  w.num_decode_requests = ceil_nonnegative(decode_requests);
  w.sum_decode_kv_tokens = ceil_nonnegative(decode_kv);
  return forward_pass_s(w);
}

// ------------------------------------------------------------------------------------------------
// monitoring/perf_metrics.py
// ------------------------------------------------------------------------------------------------

std::vector<ForwardPassMetrics> prefill_profile_fpms(const PrefillProfile& p) {
  std::vector<ForwardPassMetrics> out;
  for (std::size_t i = 0; i < p.isl.size() && i < p.ttft_ms.size(); ++i) {
    ForwardPassMetrics f;
    f.wall_time_s = p.ttft_ms[i] / 1000.0;
    f.num_prefill_requests = 1;
    f.sum_prefill_tokens = static_cast<std::int64_t>(p.isl[i]);
    out.push_back(f);
  }
  return out;
}

std::vector<ForwardPassMetrics> decode_profile_fpms(const DecodeProfile& d) {
  std::vector<ForwardPassMetrics> out;
  const std::size_t n = std::min({d.x_kv_usage.size(), d.y_context_length.size(), d.z_itl.size()});
  for (std::size_t i = 0; i < n; ++i) {
    // int(round(float(kv_usage) * max_kv_tokens)): Python rounds half to even, as nearbyint does.
    const auto sum_kv = static_cast<std::int64_t>(std::nearbyint(d.x_kv_usage[i] * static_cast<double>(d.max_kv_tokens)));
    const double ctx = d.y_context_length[i];
    const std::int64_t batch =
        ctx > 0 ? std::max<std::int64_t>(1, static_cast<std::int64_t>(std::nearbyint(static_cast<double>(sum_kv) / ctx))) : 1;
    ForwardPassMetrics f;
    f.wall_time_s = d.z_itl[i] / 1000.0;
    f.num_decode_requests = batch;
    f.sum_decode_kv_tokens = sum_kv;
    out.push_back(f);
  }
  return out;
}

}  // namespace gpuscale::dynamo
