// Dynamo planner's load predictors (see dynamo_predictors.hpp).
#include "autoscaling/dynamo_predictors.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernel/detmath.hpp"

namespace gpuscale::dynamo {

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

const char* load_predictor_name(LoadPredictorKind kind) {
  switch (kind) {
    case LoadPredictorKind::Constant: return "constant";
    case LoadPredictorKind::Arima: return "arima";
    case LoadPredictorKind::Kalman: return "kalman";
    case LoadPredictorKind::Prophet: return "prophet";
  }
  return "constant";
}

double det_log1p(double x) {
  const double u = 1.0 + x;
  if (u == 1.0) return x;
  return det_log(u) * x / (u - 1.0);
}

double det_expm1(double x) {
  const double u = det_exp(x);
  if (u == 1.0) return x;
  const double um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  return um1 * x / det_log(u);
}

// predictors.py BasePredictor.add_data_point: NaN → 0; leading zeros skipped until the first non-zero.
bool LoadPredictor::accept(double value) {
  if (std::isnan(value)) value = 0;
  if (value == 0 && !seen_nonzero_) return false;
  if (value != 0) seen_nonzero_ = true;
  buffer_.push_back(value);
  return true;
}

void LoadPredictor::add_data_point(double value) { accept(value); }

double ConstantPredictor::predict_next() {
  explain_ = buffer_.empty() ? "no data yet: 0" : "constant: the last value, " + num(last_value());
  return last_value();
}

KalmanPredictor::KalmanPredictor(const PredictorSettings& s)
    : LoadPredictor(s.kalman_min_points), log1p_(s.log1p) {
  Q_[0][0] = std::max(1e-12, s.kalman_q_level);
  Q_[0][1] = 0;
  Q_[1][0] = 0;
  Q_[1][1] = std::max(1e-12, s.kalman_q_trend);
  R_ = std::max(1e-9, s.kalman_r);
}

// filterpy KalmanFilter.predict: x = F·x; P = alpha² · (F·P)·Fᵀ + Q (alpha² = 1). numpy's dot sums
// the products of a row and a column left to right.
void KalmanPredictor::kf_predict() {
  const double x0 = F_[0][0] * x_[0] + F_[0][1] * x_[1];
  const double x1 = F_[1][0] * x_[0] + F_[1][1] * x_[1];
  x_[0] = x0;
  x_[1] = x1;
  double FP[2][2], FPFt[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) FP[i][j] = F_[i][0] * P_[0][j] + F_[i][1] * P_[1][j];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) FPFt[i][j] = FP[i][0] * F_[j][0] + FP[i][1] * F_[j][1];  // (F·P)·Fᵀ
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) P_[i][j] = 1.0 * FPFt[i][j] + Q_[i][j];
}

// filterpy KalmanFilter.update: y = z − H·x; PHT = P·Hᵀ; S = H·PHT + R; K = PHT·inv(S);
// x = x + K·y; P = (I − K·H)·P·(I − K·H)ᵀ + (K·R)·Kᵀ (Joseph form).
void KalmanPredictor::kf_update(double z) {
  const double y = z - (H_[0] * x_[0] + H_[1] * x_[1]);
  const double PHT[2] = {P_[0][0] * H_[0] + P_[0][1] * H_[1], P_[1][0] * H_[0] + P_[1][1] * H_[1]};
  const double S = (H_[0] * PHT[0] + H_[1] * PHT[1]) + R_;
  const double SI = 1.0 / S;  // numpy.linalg.inv of a 1×1 matrix (LAPACK gesv: 1 / S)
  const double K[2] = {PHT[0] * SI, PHT[1] * SI};
  x_[0] = x_[0] + K[0] * y;
  x_[1] = x_[1] + K[1] * y;
  double IKH[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) IKH[i][j] = (i == j ? 1.0 : 0.0) - K[i] * H_[j];
  double A[2][2], B[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) A[i][j] = IKH[i][0] * P_[0][j] + IKH[i][1] * P_[1][j];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) B[i][j] = A[i][0] * IKH[j][0] + A[i][1] * IKH[j][1];
  const double KR[2] = {K[0] * R_, K[1] * R_};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) P_[i][j] = B[i][j] + KR[i] * K[j];
}

// predictors.py KalmanPredictor.add_data_point.
void KalmanPredictor::add_data_point(double value) {
  if (!accept(value)) return;
  const double raw = buffer_.back();
  const double z = log1p_ ? det_log1p(std::max(0.0, raw)) : raw;
  if (!initialized_) {
    x_[0] = z;
    x_[1] = 0.0;
    initialized_ = true;
  } else {
    if (!has_cached_pred_) kf_predict();  // predict_next already advanced the filter for this interval
    kf_update(z);
  }
  has_cached_pred_ = false;
}

// predictors.py KalmanPredictor.predict_next.
double KalmanPredictor::predict_next() {
  if (!initialized_ || static_cast<int>(buffer_.size()) < minimum_data_points_) {
    explain_ = "Kalman: " + std::to_string(buffer_.size()) + " of " + std::to_string(minimum_data_points_) +
               " points (kalman_min_points), so the last value " + num(last_value());
    return last_value();
  }
  if (!has_cached_pred_) {
    kf_predict();
    cached_pred_ = x_[0];
    has_cached_pred_ = true;
  }
  const double out = log1p_ ? std::max(0.0, det_expm1(cached_pred_)) : cached_pred_;
  explain_ = "Kalman one-step forecast: level " + num(x_[0]) + ", trend " + num(x_[1]) +
             (log1p_ ? " (log1p space, expm1 → " + num(out) + ")" : "");
  return out;
}

std::unique_ptr<LoadPredictor> make_load_predictor(LoadPredictorKind kind, const PredictorSettings& s) {
  switch (kind) {
    case LoadPredictorKind::Constant: return std::make_unique<ConstantPredictor>();
    case LoadPredictorKind::Kalman: return std::make_unique<KalmanPredictor>(s);
    case LoadPredictorKind::Arima:
    case LoadPredictorKind::Prophet: return nullptr;
  }
  return nullptr;
}

}  // namespace gpuscale::dynamo
