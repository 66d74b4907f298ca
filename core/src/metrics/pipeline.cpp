// The realistic metric pipeline (see pipeline.hpp).
#include "metrics/pipeline.hpp"

#include <algorithm>

#include "kernel/rng.hpp"

namespace gpuscale {

Micros loop_phase(std::uint64_t seed, std::string_view target, Micros interval) {
  if (interval <= 0) return 0;
  Rng rng = Rng::stream(seed, target);
  return static_cast<Micros>(rng.uniform_int(static_cast<std::uint64_t>(interval)));
}

Micros last_tick(Micros t, Micros phase, Micros interval) {
  Micros k = (t - phase) / interval;
  if (phase + k * interval > t) --k;  // division truncates toward zero; the grid goes on below zero
  return phase + k * interval;
}

Micros next_tick(Micros t, Micros phase, Micros interval) {
  const Micros last = last_tick(t, phase, interval);
  return last == t ? t : last + interval;
}

void TargetSeries::collect(const DcgmCollection& c, const PipelineTiming& t) {
  collected_.push_back(c);
  prune(c.at, t);
}

void TargetSeries::scrape_vllm(const VllmScrape& s, const PipelineTiming& t) {
  vllm_.push_back(s);
  prune(s.at, t);
}

// Every later query runs at `now` or after, so it sees at least every sample up to now - query_delay:
// of the entries at or before that bound, only the newest can still be returned.
void TargetSeries::prune(Micros now, const PipelineTiming& t) {
  const Micros vllm_bound = now - t.query_delay;
  while (vllm_.size() >= 2 && vllm_[1].at <= vllm_bound) vllm_.pop_front();
  const Micros exporter_bound = last_tick(now - t.query_delay, exporter_phase_, t.scrape_interval);
  while (collected_.size() >= 2 && collected_[1].at <= exporter_bound) collected_.pop_front();
}

ScrapedReplica TargetSeries::query(std::uint32_t replica, Micros now, const PipelineTiming& t) const {
  ScrapedReplica s{};
  s.replica = replica;
  const Micros visible = now - t.query_delay;
  const auto fresh = [&](Micros at) { return at > now - t.lookback; };  // within the lookback delta
  // The newest vLLM scrape a query can see; a failed scrape (no server) makes the series stale.
  const VllmScrape* v = nullptr;
  for (const VllmScrape& e : vllm_) {
    if (e.at > visible) break;
    v = &e;
  }
  if (v && v->up && fresh(v->at)) {
    s.has_vllm_metrics = true;
    s.waiting = v->waiting;
    s.running = v->running;
    s.kv_usage = v->kv_usage;
    s.vllm_scraped_at = v->at;
  }
  // The exporter's newest visible scrape served its newest collection before it.
  const Micros exporter_scrape = last_tick(visible, exporter_phase_, t.scrape_interval);
  const DcgmCollection* c = nullptr;
  for (const DcgmCollection& e : collected_) {
    if (e.at > exporter_scrape) break;
    c = &e;
  }
  if (c && c->has_gpu_metrics && fresh(exporter_scrape)) {
    s.has_gpu_metrics = true;
    s.gpu_util = c->gpu_util;
    s.fb_used_mib = c->fb_used_mib;
    s.dcgm_scraped_at = exporter_scrape;
    s.dcgm_collected_at = c->at;
  }
  s.sampled_at = s.has_vllm_metrics && s.has_gpu_metrics ? std::min(s.vllm_scraped_at, s.dcgm_scraped_at)
                 : s.has_vllm_metrics                    ? s.vllm_scraped_at
                                                         : s.dcgm_scraped_at;
  return s;
}

}  // namespace gpuscale
