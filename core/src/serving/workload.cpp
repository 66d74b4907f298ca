// Piecewise-constant Poisson arrivals and token-count draws.
#include "serving/workload.hpp"

#include <algorithm>
#include <cmath>

#include "kernel/detmath.hpp"

namespace gpuscale {

TokenSampler::TokenSampler(const TokenDistribution& d) : dist(d) {
  // Lognormal with the given mean and coefficient of variation:
  // sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2.
  const double sigma2 = det_log(1.0 + d.cv * d.cv);
  mu = det_log(d.mean) - sigma2 / 2;
  sigma = std::sqrt(sigma2);
}

std::int32_t draw_tokens(const TokenDistribution& d, Rng& rng) { return TokenSampler(d).draw(rng); }

std::int32_t TokenSampler::draw(Rng& rng) const {
  const TokenDistribution& d = dist;
  for (int attempt = 0; attempt < 64; ++attempt) {
    double v;
    if (d.kind == TokenDistributionKind::Fixed) {
      v = d.mean;
    } else if (d.kind == TokenDistributionKind::Uniform) {
      v = static_cast<double>(rng.uniform_int(d.min, d.max));
    } else if (d.kind == TokenDistributionKind::Exponential) {
      // Inverse CDF: F(x) = 1 - e^(-x / mean), so x = -mean ln(1 - u); 1 - u is in (0, 1], so the log
      // is finite. det_log, not std::log: the same bits on every platform.
      v = -d.mean * det_log(1.0 - rng.uniform());
    } else {
      v = rng.lognormal(mu, sigma);
    }
    auto n = static_cast<std::int64_t>(v + 0.5);
    if (n >= d.min && n <= d.max) return static_cast<std::int32_t>(n);
    if (d.kind == TokenDistributionKind::Fixed) break;
  }
  return static_cast<std::int32_t>(d.kind == TokenDistributionKind::Fixed ? std::min(std::max<std::int64_t>(std::int64_t(d.mean + 0.5), d.min), d.max) : d.max);
}

Workload::Workload(const WorkloadConfig& config, std::uint64_t seed, Micros end)
    : config_(config),
      phases_(effective_phases(config)),
      end_(end),
      arrivals_(Rng::stream(seed, "workload.arrivals")),
      prompts_(Rng::stream(seed, "workload.prompt_tokens")),
      outputs_(Rng::stream(seed, "workload.output_tokens")),
      prompt_sampler_(config.prompt_tokens),
      output_sampler_(config.output_tokens),
      models_(Rng::stream(seed, "workload.models")),
      starts_(Rng::stream(seed, "workload.client_starts")),
      prefix_picks_(Rng::stream(seed, "workload.prefix_picks")) {
  phase_end_ = phases_.empty() ? 0 : phases_[0].duration_s;
  for (const ModelShare& m : config.models) model_share_total_ += m.share;
  // Each prefix's length from a stream of its own (so the picks' stream stays the same whatever the
  // lengths are), and weights k^-s = e^(-s ln k) with the deterministic log and exp.
  Rng lengths = Rng::stream(seed, "workload.prefix_tokens");
  const TokenSampler prefix_sampler(config.prefixes.tokens);
  double cum = 0;
  for (std::int64_t k = 1; k <= config.prefixes.count; ++k) {
    prefix_tokens_.push_back(prefix_sampler.draw(lengths));
    cum += config.prefixes.zipf_s > 0 ? det_exp(-config.prefixes.zipf_s * det_log(static_cast<double>(k))) : 1.0;
    prefix_weight_cum_.push_back(cum);
  }
}

void Workload::draw_prefix(Request& out) {
  if (prefix_tokens_.empty()) return;
  // Two draws per request whatever the outcome, so every later request's pick is the same whether
  // or not this one carries a prefix.
  const double carry = prefix_picks_.uniform();
  const double u = prefix_picks_.uniform() * prefix_weight_cum_.back();
  if (carry >= config_.prefixes.share) return;
  std::size_t k = 0;
  while (k + 1 < prefix_weight_cum_.size() && u >= prefix_weight_cum_[k]) ++k;
  out.prefix_id = static_cast<std::uint32_t>(k + 1);
  out.prefix_tokens = prefix_tokens_[k];
  out.prompt_tokens += out.prefix_tokens;
}

std::int32_t Workload::draw_model() {
  // Only a mix of two or more models draws (from its own stream, so a one-model workload's requests
  // are the same whatever the mix would have been).
  if (config_.models.size() < 2) return 0;
  double u = models_.uniform() * model_share_total_;
  for (std::size_t i = 0; i + 1 < config_.models.size(); ++i) {
    if (u < config_.models[i].share) return static_cast<std::int32_t>(i);
    u -= config_.models[i].share;
  }
  return static_cast<std::int32_t>(config_.models.size() - 1);
}

bool Workload::next(Request& out) {
  if (phases_.empty()) return false;
  const double end_s = micros_to_seconds(end_);
  // Poisson with a piecewise-constant rate: draw a gap at the current phase's rate; if it crosses
  // the phase end, restart from the boundary at the next phase's rate (memorylessness makes this exact).
  for (;;) {
    if (t_ >= end_s) return false;
    double rate = phases_[phase_].rate_rps;
    double candidate = rate > 0 ? t_ + arrivals_.exponential(rate) : phase_end_;
    if (rate > 0 && candidate < phase_end_) {
      t_ = candidate;
      break;
    }
    t_ = phase_end_;
    phase_ = (phase_ + 1) % phases_.size();  // phases repeat to fill the duration
    phase_end_ += phases_[phase_].duration_s;
  }
  if (t_ >= end_s) return false;
  return request_at(seconds_to_micros(t_), out);
}

Micros Workload::client_start() {
  return config_.start_spread_s > 0 ? seconds_to_micros(starts_.uniform(0, config_.start_spread_s)) : 0;
}

bool Workload::request_at(Micros at, Request& out) {
  if (at >= end_) return false;
  out.id = next_id_++;
  out.arrived_at = at;
  out.prompt_tokens = prompt_sampler_.draw(prompts_);
  out.output_tokens = output_sampler_.draw(outputs_);
  out.model = draw_model();
  out.prefix_id = 0;
  out.prefix_tokens = 0;
  draw_prefix(out);
  return true;
}

}  // namespace gpuscale
