// Dynamo planner's load predictors: the next adjustment interval's request count, mean ISL and mean
// OSL, each forecast from its own history of interval observations.
//
// Ported from ai-dynamo/dynamo components/src/dynamo/planner/core/load/predictors.py (Aug 2026):
// BasePredictor (idle-period skipping), ConstantPredictor, KalmanPredictor (filterpy's KalmanFilter,
// filterpy/kalman/kalman_filter.py 1.4.5, predict/update in its evaluation order). Not ported:
//  - ARIMAPredictor (upstream's default): pmdarima.auto_arima — a stepwise order search with KPSS
//    differencing tests and statsmodels' exact-likelihood SARIMAX fitted by L-BFGS. Its result depends
//    on a numerical optimiser's iterates; it cannot be reproduced exactly, and an approximation would
//    be a different predictor under the same name.
//  - ProphetPredictor: Meta's Prophet fits a piecewise-linear trend with changepoints and
//    seasonalities by Stan's L-BFGS MAP optimiser; same reason.
// Deterministic: log1p/expm1 (the log1p mode) are built on det_log/det_exp, so they may differ from
// Python's math.log1p/expm1 in the last bit; numpy's 2×2 products may use fused multiply-adds in
// BLAS where this port rounds each product (most terms here multiply by exactly 0 or 1, where the
// two agree).
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace gpuscale::dynamo {

enum class LoadPredictorKind { Constant, Arima, Kalman, Prophet };
const char* load_predictor_name(LoadPredictorKind kind);  // "constant", "arima", "kalman", "prophet"

struct PredictorSettings {
  bool log1p = false;       // load_predictor_log1p: Kalman works on log1p(value)
  double kalman_q_level = 1.0;  // process noise of the level
  double kalman_q_trend = 0.1;  // process noise of the trend
  double kalman_r = 10.0;       // measurement noise
  int kalman_min_points = 5;    // forecasts start after this many points (before: the last value)
};

// BasePredictor: keeps the observed values, skipping the leading run of zeros (the idle period after
// deployment) until the first non-zero one; NaN counts as 0.
class LoadPredictor {
 public:
  explicit LoadPredictor(int minimum_data_points) : minimum_data_points_(minimum_data_points) {}
  virtual ~LoadPredictor() = default;
  virtual void add_data_point(double value);
  virtual double predict_next() = 0;
  double last_value() const { return buffer_.empty() ? 0.0 : buffer_.back(); }  // get_last_value
  std::size_t size() const { return buffer_.size(); }
  // What the last predict_next did, for the decision log ("last value 12", "Kalman level 11.8 …").
  const std::string& explain() const { return explain_; }

 protected:
  // True if the value was kept (appended).
  bool accept(double value);
  int minimum_data_points_;
  std::vector<double> buffer_;
  bool seen_nonzero_ = false;
  std::string explain_;
};

// next = the most recent value.
class ConstantPredictor : public LoadPredictor {
 public:
  ConstantPredictor() : LoadPredictor(1) {}
  double predict_next() override;
};

// Local linear trend: state [level, trend], F = [[1,1],[0,1]], H = [1,0], P0 = 1000·I,
// Q = diag(max(1e-12, q_level), max(1e-12, q_trend)), R = max(1e-9, r). The first kept point sets the
// level (trend 0) without a filter step; each later point runs predict (unless predict_next already
// advanced the filter for this interval) then update. predict_next advances once per interval and
// caches the level.
class KalmanPredictor : public LoadPredictor {
 public:
  explicit KalmanPredictor(const PredictorSettings& s);
  void add_data_point(double value) override;
  double predict_next() override;
  // The filter's state, for tests: x = [level, trend], P row-major.
  double level() const { return x_[0]; }
  double trend() const { return x_[1]; }
  const double* covariance() const { return &P_[0][0]; }

 private:
  void kf_predict();
  void kf_update(double z);
  bool log1p_;
  double x_[2] = {0, 0};
  double P_[2][2] = {{1000, 0}, {0, 1000}};
  double F_[2][2] = {{1, 1}, {0, 1}};
  double H_[2] = {1, 0};
  double Q_[2][2];
  double R_;
  bool initialized_ = false;
  bool has_cached_pred_ = false;
  double cached_pred_ = 0;
};

// nullptr for the predictors that are not ported (arima, prophet).
std::unique_ptr<LoadPredictor> make_load_predictor(LoadPredictorKind kind, const PredictorSettings& s);

// log1p and expm1 from det_log/det_exp (Goldberg's and Kahan's corrections).
double det_log1p(double x);
double det_expm1(double x);

}  // namespace gpuscale::dynamo
