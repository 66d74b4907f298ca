// The replica engine: KV sizing, step time, continuous batching, chunked prefill, preemption,
// abort, gauges, and the calibration against the NVIDIA NIM table.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "serving/engine.hpp"
#include "serving/engine_bench.hpp"
#include "serving/engine_profiles.hpp"
#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"

using namespace gpuscale;

namespace {

// One event per step, so each test sees every step (macro steps have tests of their own below).
EngineConfig default_config() {
  EngineConfig c;
  c.profile = engine_profile("llama-3.3-70b-fp8-tp2-h100-sxm5");
  c.max_decode_substeps = 1;
  return c;
}

// A toy engine for scheduling tests: 10 KV blocks of 16 tokens (one block per GiB), and every step
// takes exactly 10 ms whatever it holds.
EngineConfig toy_config(int gib = 10) {
  EngineConfig c;
  c.profile.name = "toy";
  c.profile.tensor_parallel = 1;
  c.profile.gpu_memory_gib = gib;
  c.profile.kv_bytes_per_token = 67108864.0;  // 16 tokens × 64 MiB = 1 GiB per block
  c.profile.max_model_len = 1 << 20;
  c.profile.step_base_s = 0.001;
  c.profile.step_weights_s = 0.009;
  c.gpu_memory_utilization = 1.0;
  return c;
}

struct Logged {
  EngineEvent::Kind kind;
  std::uint32_t id;
  Micros time;
  bool operator==(const Logged& o) const { return kind == o.kind && id == o.id && time == o.time; }
};

std::ostream& operator<<(std::ostream& os, const Logged& e) {
  const char* names[] = {"FirstToken", "Finished", "Preempted", "PrefillDone", "KvLoadStarted"};
  return os << "{" << names[e.kind] << " " << e.id << " @" << e.time << "}";
}

// A toy engine whose step time is its tokens: 1 ms + 0.1 ms per scheduled token (no memory term),
// so a prefill's length shows in its TTFT. 16-token blocks, one per GiB.
EngineConfig compute_toy_config(int gib) {
  EngineConfig c = toy_config(gib);
  c.profile.step_weights_s = 0;
  c.profile.step_token_s = 1e-4;
  return c;
}

RequestOptions with_prefix(std::uint32_t id, int tokens, RequestRole role = RequestRole::Whole) {
  RequestOptions o;
  o.prefix_id = id;
  o.prefix_tokens = tokens;
  o.role = role;
  return o;
}

RequestOptions as(RequestRole role) { return with_prefix(0, 0, role); }

int used_blocks(const Engine& e) { return e.total_kv_blocks() - e.free_kv_blocks(); }

// One step from `now` with the two-argument begin_step: its KV loads, then end_step's events.
Micros step_pd(Engine& e, Micros now, std::vector<EngineEvent>& log) {
  const Micros end = now + e.begin_step(now, log);
  e.end_step(end, log);
  return end;
}

bool same_events(const std::vector<EngineEvent>& a, const std::vector<EngineEvent>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].kind != b[i].kind || a[i].request_id != b[i].request_id || a[i].time != b[i].time || a[i].tokens != b[i].tokens)
      return false;
  return true;
}

using Ev = EngineEvent;

// Runs one step starting at `now`; returns its end time and appends its events to `log`.
Micros step(Engine& e, Micros now, std::vector<Logged>& log) {
  const Micros end = now + e.begin_step(now);
  std::vector<EngineEvent> out;
  e.end_step(end, out);
  for (const EngineEvent& x : out) log.push_back(Logged{x.kind, x.request_id, x.time});
  return end;
}

}  // namespace

TEST_CASE("KV blocks of the default profile follow vLLM's memory arithmetic", "[engine]") {
  const EngineConfig c = default_config();
  // Per GPU: 79.11 GiB × 0.9 − 33.8 GiB weights − 1.5 GiB activations = 35.899 GiB for KV.
  // A 16-token block holds 16 × 163,840 B (FP8 K+V, 80 layers × 8 heads × 128) = 2.5 MiB for the
  // whole model, 1.25 MiB per GPU at TP2. floor(35.899 × 1024 / 1.25) = floor(29408.5) = 29408.
  CHECK(Engine::compute_num_kv_blocks(c) == 29408);
  Engine e(c);
  CHECK(e.total_kv_blocks() == 29408);
  CHECK(e.total_kv_blocks() * 16 == 470528);  // tokens: about 85 requests of 5000 + 500
  CHECK(e.max_model_len() == 131072);
  CHECK(e.kv_cache_usage() == 0.0);
  // DCGM_FI_DEV_FB_USED: vLLM claims 0.9 × 79.11 GiB at start-up.
  CHECK(e.fb_used_mib_per_gpu() == Approx(72907.776));

  EngineConfig c92 = c;
  c92.gpu_memory_utilization = 0.92;  // current vLLM main's default: 37.4812 GiB → 30704 blocks
  CHECK(Engine::compute_num_kv_blocks(c92) == 30704);

  EngineConfig starved = c;
  starved.gpu_memory_utilization = 0.4;  // 31.6 GiB < 33.8 GiB of weights
  CHECK(Engine::compute_num_kv_blocks(starved) == 0);
  CHECK_THROWS_AS(Engine(starved), InputError);
  CHECK_THROWS_AS(engine_profile("no-such-model"), InputError);
}

TEST_CASE("a lone request: TTFT is its prefill step, ITL the memory-bound decode step", "[engine]") {
  Engine e(default_config());
  REQUIRE(e.add_request(7, 5000, 500, 0));
  CHECK(e.num_requests_waiting() == 1);
  std::vector<Logged> log;
  // Prefill, compute-bound: 0.0076376 + 5000 × 74.87 µs + 12,502,500 pairs × 2 ns = 0.406993 s.
  Micros now = step(e, 0, log);
  CHECK(now == 406993);
  CHECK(log == std::vector<Logged>{{EngineEvent::FirstToken, 7, 406993}});
  CHECK(e.num_requests_running() == 1);
  CHECK(e.num_requests_waiting() == 0);
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 313);  // ceil(5000 / 16)
  // First decode, memory-bound: 0.0076376 + 33.8 GiB / 3.35 TB/s (0.0108337) + 5001 × 80 KiB / 3.35 TB/s
  // (24.454 ns) = 0.018594 s, rounded to 18593 µs from the ends (the engine sums integer picoseconds).
  const Micros t1 = step(e, now, log);
  CHECK(t1 - now == 18593);
  now = t1;
  while (e.has_work()) now = step(e, now, log);
  REQUIRE(log.size() == 2);
  CHECK(log[1] == Logged{EngineEvent::Finished, 7, 9688174});
  const double ttft_ms = 406.993;
  const double itl_ms = (9688174 - 406993) / 499.0 / 1000.0;
  CHECK(ttft_ms == Approx(407).epsilon(0.001));  // NIM: 407 ms
  CHECK(itl_ms == Approx(18.600).epsilon(0.0001));  // NIM: 18.6 ms
  CHECK(e.kv_cache_usage() == 0.0);
  CHECK(e.num_generation_tokens() == 500);

  // A request longer than max_model_len is refused (vLLM answers HTTP 400).
  CHECK_FALSE(e.add_request(8, 131000, 100, now));
  CHECK_FALSE(e.add_request(9, 0, 10, now));
  CHECK_FALSE(e.has_work());
}

TEST_CASE("chunked prefill splits a 20,000-token prompt over 8192-token steps", "[engine]") {
  Engine e(default_config());
  e.add_request(1, 20000, 2, 0);
  e.add_request(2, 100, 2, 0);
  std::vector<Logged> log;
  // Step 1: request 1 takes the whole budget (8192 tokens); request 2 has to wait.
  Micros now = step(e, 0, log);
  CHECK(now == 688090);  // 0.0076376 + 8192 × 74.87 µs + 33,558,528 pairs × 2 ns
  CHECK(e.num_requests_running() == 1);
  CHECK(e.num_requests_waiting() == 1);
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 512);
  // Step 2: the next 8192 tokens, which also attend to the first 8192 (more attention pairs).
  const Micros t2 = step(e, now, log);
  CHECK(t2 - now == 822307);
  now = t2;
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 1024);
  CHECK(log.empty());
  // Step 3: the last 3616 tokens leave 4576 of budget, so request 2's whole prompt joins.
  now = step(e, now, log);
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 1250 + 7);
  CHECK(log == std::vector<Logged>{{EngineEvent::FirstToken, 1, now}, {EngineEvent::FirstToken, 2, now}});
  now = step(e, now, log);
  CHECK(log.size() == 4);
  CHECK(log[2] == Logged{EngineEvent::Finished, 1, now});
  CHECK(log[3] == Logged{EngineEvent::Finished, 2, now});
  CHECK_FALSE(e.has_work());
}

TEST_CASE("max_num_seqs caps the running batch; the rest wait FCFS", "[engine]") {
  EngineConfig c = toy_config(100);
  c.max_num_seqs = 4;
  Engine e(c);
  for (std::uint32_t id = 1; id <= 10; ++id) e.add_request(id, 10, 2, 0);
  std::vector<Logged> log;
  Micros now = step(e, 0, log);
  CHECK(e.num_requests_running() == 4);
  CHECK(e.num_requests_waiting() == 6);
  CHECK(log.size() == 4);
  CHECK(log[0] == Logged{EngineEvent::FirstToken, 1, 10000});
  CHECK(log[3] == Logged{EngineEvent::FirstToken, 4, 10000});
  // Step 2: 1–4 finish; their seats are free only after the step, so 5–8 start at step 3.
  now = step(e, now, log);
  CHECK(e.num_requests_running() == 0);
  now = step(e, now, log);
  CHECK(e.num_requests_running() == 4);
  CHECK(log.back() == Logged{EngineEvent::FirstToken, 8, 30000});
}

TEST_CASE("KV exhaustion preempts the last running request to the front of the queue", "[engine]") {
  // 10 blocks. A and B (64-token prompts, 40 output tokens) fill 8, then 10 after their first
  // decode. When A needs its 6th block (81 tokens, step 18), B, the last running, is preempted.
  Engine e(toy_config());
  REQUIRE(e.total_kv_blocks() == 10);
  e.add_request(1, 64, 40, 0);
  e.add_request(2, 64, 40, 0);
  std::vector<Logged> log;
  Micros now = 0;
  while (e.num_preemptions() == 0) now = step(e, now, log);
  CHECK(now == 180000);
  CHECK(e.num_requests_running() == 1);
  CHECK(e.num_requests_waiting() == 1);
  // C arrives and would fit, but B is at the head of the queue and FCFS makes C wait behind it.
  e.add_request(3, 16, 2, now);
  while (e.has_work()) now = step(e, now, log);
  CHECK(log == std::vector<Logged>{
                   {EngineEvent::FirstToken, 1, 10000},
                   {EngineEvent::FirstToken, 2, 10000},
                   {EngineEvent::Preempted, 2, 170000},  // stamped with the start of the step that preempted
                   {EngineEvent::Finished, 1, 400000},
                   {EngineEvent::FirstToken, 3, 410000},  // B readmitted ahead of C in the same step
                   {EngineEvent::Finished, 3, 420000},
                   {EngineEvent::Finished, 2, 630000},
               });
  CHECK(e.num_preemptions() == 1);
  // B's 5 full blocks stayed in the free queue (prefix caching); A's growth evicted 2 of them
  // (tail first), so 3 blocks = 48 tokens were not recomputed. vLLM counts a preempted request's
  // lookup apart: B held 64 + 17 tokens when readmitted.
  CHECK(e.num_preempted_prefix_cache_hits() == 48);
  CHECK(e.num_preempted_prefix_cache_queries() == 64 + 17);
  CHECK(e.num_prefix_cache_hits() == 0);
  CHECK(e.num_prefix_cache_queries() == 64 + 64 + 16);
  CHECK(e.free_kv_blocks() == 10);
  CHECK(e.num_generation_tokens() == 40 + 40 + 2);

  EngineConfig no_cache = toy_config();
  no_cache.enable_prefix_caching = false;
  Engine f(no_cache);
  f.add_request(1, 64, 40, 0);
  f.add_request(2, 64, 40, 0);
  now = 0;
  while (f.has_work()) now = step(f, now, log);
  CHECK(f.num_preemptions() == 1);
  CHECK(f.num_preempted_prefix_cache_hits() == 0);
  CHECK(f.num_preempted_prefix_cache_queries() == 0);  // no lookups at all
  CHECK(f.free_kv_blocks() == 10);
}

TEST_CASE("the request that finds no block left preempts itself", "[engine]") {
  // 10 blocks: A (64 tokens) holds 4, B (80 tokens) 5. At the first decode A takes the last free
  // block; B needs a 6th, the only request left to preempt is B itself, and nothing new is
  // admitted in a step that preempted (scheduler.py `if not preempted_reqs`).
  Engine e(toy_config());
  e.add_request(1, 64, 10, 0);
  e.add_request(2, 80, 10, 0);
  std::vector<Logged> log;
  Micros now = 0;
  while (e.has_work()) now = step(e, now, log);
  CHECK(log == std::vector<Logged>{
                   {EngineEvent::FirstToken, 1, 10000},
                   {EngineEvent::FirstToken, 2, 10000},
                   {EngineEvent::Preempted, 2, 10000},
                   {EngineEvent::Finished, 1, 100000},
                   {EngineEvent::Finished, 2, 190000},  // readmitted when A freed its blocks
               });
  CHECK(e.num_preemptions() == 1);
  CHECK(e.num_preempted_prefix_cache_hits() == 80);  // all 5 of B's blocks survived
  CHECK(e.num_preempted_prefix_cache_queries() == 81);
  CHECK(e.free_kv_blocks() == 10);
}

TEST_CASE("abort frees the KV blocks of a waiting, running or in-step request", "[engine]") {
  Engine e(toy_config(100));
  e.add_request(1, 160, 5, 0);  // 10 blocks
  e.add_request(2, 32, 5, 0);   // 2 blocks
  std::vector<Logged> log;
  Micros now = step(e, 0, log);
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 12);
  CHECK(e.abort_request(1));
  CHECK(e.total_kv_blocks() - e.free_kv_blocks() == 2);
  CHECK_FALSE(e.abort_request(1));  // gone already
  CHECK(e.num_requests_running() == 1);

  e.add_request(3, 16, 5, now);
  CHECK(e.num_requests_waiting() == 1);
  CHECK(e.abort_request(3));
  CHECK(e.num_requests_waiting() == 0);

  // Aborted while its step runs: blocks back at once, and the step reports nothing for it.
  e.begin_step(now);
  CHECK(e.abort_request(2));
  CHECK(e.kv_cache_usage() == 0.0);
  std::vector<EngineEvent> out;
  e.end_step(now + 10000, out);
  CHECK(out.empty());
  CHECK_FALSE(e.has_work());
  CHECK_FALSE(e.abort_request(99));

  // The slot an in-step abort left behind is reused safely.
  e.add_request(4, 16, 1, now + 10000);
  now = step(e, now + 10000, log);
  CHECK(log.back() == Logged{EngineEvent::Finished, 4, now});
}

TEST_CASE("busy_time accumulates only while a step runs", "[engine]") {
  Engine e(toy_config());
  CHECK(e.busy_time(5'000'000) == 0);
  e.add_request(1, 16, 2, 1'000'000);
  const Micros d = e.begin_step(1'000'000);
  REQUIRE(d == 10000);
  CHECK(e.in_step());
  CHECK(e.busy_time(1'004'000) == 4000);
  std::vector<EngineEvent> out;
  e.end_step(1'010'000, out);
  CHECK_FALSE(e.in_step());
  CHECK(e.busy_time(2'000'000) == 10000);  // idle since: no change
  // DCGM_FI_DEV_GPU_UTIL = busy share of the sample period, read in time order: [3 s, 4 s) holds
  // one 10 ms step → 1 %.
  const Micros at_3s = e.busy_time(3'000'000);
  e.begin_step(3'000'000);
  e.end_step(3'010'000, out);
  const Micros at_4s = e.busy_time(4'000'000);
  CHECK(at_4s - at_3s == 10000);
  CHECK(at_4s == 20000);
}

TEST_CASE("the closed-loop benchmark is deterministic, with the same bits natively and in WASM", "[engine]") {
  BenchConfig b;
  b.concurrency = 25;
  b.warmup_requests = 25;
  b.measured_requests = 50;
  const BenchResult x = run_closed_loop_bench(default_config(), b);
  const BenchResult y = run_closed_loop_bench(default_config(), b);
  CHECK(x.mean_ttft_s == y.mean_ttft_s);
  CHECK(x.output_tokens_per_s == y.output_tokens_per_s);
  CHECK(x.num_measured == 50);
  // Exact values from the native build; the WASM build must reproduce them bit for bit.
  CHECK(x.num_steps == 1653);
  CHECK(x.mean_ttft_s == 0.89420861999999968);
  CHECK(x.mean_itl_s == 0.039493905410821657);
  CHECK(x.output_tokens_per_s == 607.75931175390713);

  // Saturated: KV-bound, with preemptions and prefix-cache reuse.
  b.concurrency = 150;
  b.warmup_requests = 150;
  b.measured_requests = 150;
  const BenchResult z = run_closed_loop_bench(default_config(), b);
  CHECK(z.num_steps == 2320);
  CHECK(z.num_preemptions == 19);
  CHECK(z.mean_ttft_s == 32.656546126666669);
  CHECK(z.mean_itl_s == 0.10033399553774215);
  CHECK(z.output_tokens_per_s == 880.87417107097872);
}

TEST_CASE("every profile's step coefficients are at or above their physical floors", "[engine]") {
  for (const std::string& name : engine_profile_names()) {
    const EngineProfile p = engine_profile(name);
    INFO(name);
    // The profile states its hardware and its model's work; the floors follow from them.
    REQUIRE(p.hbm_bytes_per_s > 0);
    REQUIRE(p.peak_matmul_flops > 0);
    REQUIRE(p.peak_attention_flops > 0);
    REQUIRE(p.flops_per_token > 0);
    REQUIRE(p.flops_per_pair > 0);
    const StepFloors f = physical_floors(p);
    // Each GPU streams its weight shard and its share of every KV token from HBM; with pipeline
    // stages one batch passes through each in turn, so a step streams every stage's shard.
    CHECK(f.weights_s == Approx(p.weights_gib_per_gpu * p.pipeline_parallel * 1073741824.0 / p.hbm_bytes_per_s));
    CHECK(f.kv_token_s == Approx(p.kv_bytes_per_token / p.tensor_parallel / p.hbm_bytes_per_s));
    CHECK(p.step_weights_s >= f.weights_s);
    CHECK(p.step_kv_token_s >= f.kv_token_s);
    CHECK(p.step_token_s >= f.token_s);
    CHECK(p.step_pair_s >= f.pair_s);
    CHECK(p.step_base_s > 0);
  }
  // The 70B profile's floors in numbers: 33.8 GiB at 3.35 TB/s; 80 KiB per GPU per token.
  const StepFloors f = physical_floors(llama_3_3_70b_fp8_tp2_h100_sxm5());
  CHECK(f.weights_s == Approx(0.010834).epsilon(1e-4));
  CHECK(f.kv_token_s == Approx(2.4454e-8).epsilon(1e-4));
}

namespace {

// genai-perf's figures for one closed-loop run (its definitions, as in engine_bench.hpp).
struct Measured {
  double ttft_ms = 0, itl_ms = 0, tput = 0;  // means over the measured requests; output tokens/s
  std::int64_t measured = 0, preemptions = 0;
};

// A NIM benchmark row as a scenario run through api::run: the gateway and router in front of one
// replica (fixed), `concurrency` closed-loop clients of fixed-size requests, no client timeout that
// could fire. As the benchmark does, the first 10 × concurrency completions are a warm-up and the
// next max(10 × concurrency, 10) are measured; the run is long enough for them (sized from the
// row's own request rate, with room to spare).
Measured nim_row_through_run(int concurrency, int prompt, int output, double nim_ttft_s, double nim_itl_s, std::uint64_t seed) {
  const std::int64_t warmup = 10 * concurrency, measured = std::max(10 * concurrency, 10);
  const double spread_s = 0.5 * concurrency;  // as engine_bench.hpp: breaks the deterministic convoy
  const double rps = concurrency / (nim_ttft_s + (output - 1) * nim_itl_s);
  const double duration_s = std::ceil(spread_s + 1.5 * static_cast<double>(warmup + measured) / rps + 60);
  const Json scenario = {
      {"seed", seed},
      {"duration_s", duration_s},
      {"autoscaler", {{"strategy", "fixed"}, {"replicas", 1}}},
      {"workload",
       {{"concurrency", concurrency},
        {"start_spread_s", spread_s},
        {"timeout_s", 3600},
        {"prompt_tokens", {{"kind", "fixed"}, {"mean", prompt}, {"min", 1}, {"max", prompt}}},
        {"output_tokens", {{"kind", "fixed"}, {"mean", output}, {"min", 1}, {"max", output}}}}},
      {"metrics", {{"scrape_interval_s", 60}}},
      {"output", {{"requests", true}, {"decisions", false}}}};
  const Json result = api::run(scenario.dump());
  struct Done {
    double arrived, first, completed;
  };
  std::vector<Done> done;
  for (const Json& q : result.at("requests")) {
    if (q.at("completed_at").is_null()) continue;
    done.push_back({q.at("arrived_at").get<double>(), q.at("first_token_at").get<double>(), q.at("completed_at").get<double>()});
  }
  std::stable_sort(done.begin(), done.end(), [](const Done& x, const Done& y) { return x.completed < y.completed; });
  REQUIRE(static_cast<std::int64_t>(done.size()) >= warmup + measured);
  Measured m;
  const double from = done[static_cast<std::size_t>(warmup - 1 < 0 ? 0 : warmup - 1)].completed;
  double ttft = 0, itl = 0;
  for (std::int64_t i = warmup; i < warmup + measured; ++i) {
    const Done& d = done[static_cast<std::size_t>(i)];
    ttft += d.first - d.arrived;
    itl += (d.completed - d.first) / (output - 1);
  }
  m.measured = measured;
  m.ttft_ms = 1e3 * ttft / static_cast<double>(measured);
  m.itl_ms = 1e3 * itl / static_cast<double>(measured);
  const double window = done[static_cast<std::size_t>(warmup + measured - 1)].completed - (warmup > 0 ? from : done[0].arrived);
  m.tput = static_cast<double>(measured) * output / window;
  m.preemptions = result.at("summary").at("num_preemptions").get<std::int64_t>();
  return m;
}

}  // namespace

TEST_CASE("calibration: closed-loop scenarios through api::run reproduce the NVIDIA NIM table within 10 %", "[engine][nim]") {
  // NIM 1.8.0, Llama-3.3-70B-Instruct FP8, TP2 on 2 × H100 80 GB (real-systems.md §7.3).
  // Throughput there is output tokens/s: concurrency × 500 / (TTFT + 499 × ITL) reproduces it.
  struct Row {
    int concurrency, prompt, output;
    double ttft_ms, itl_ms, tput;  // tput 0: not published
    bool saturated;
  };
  const Row rows[] = {
      {1, 5000, 500, 407, 18.6, 52, false},         {5, 5000, 500, 547, 21.8, 218, false},
      {25, 5000, 500, 689, 38.8, 623, false},       {50, 5000, 500, 835, 59.7, 814, false},
      {100, 5000, 500, 7996, 92.9, 917, true},      {150, 5000, 500, 34794, 92.9, 921, true},
      {200, 5000, 500, 61680, 93.1, 921, true},     {250, 5000, 500, 88605, 93.2, 920, true},
      {1, 500, 2000, 48, 18.9, 0, false},
  };
  // 10 % on everything but the unsaturated rows' TTFT: +15 to +17 % at concurrency 5 and 25, so 20 %
  // there. The excess is a lock between two clients: one that arrives within another's prefill step
  // waits for it (about 389 ms), then finishes one decode step after it, and so arrives within its next
  // prefill again, every cycle (jitter of a few ms cannot undo it). At concurrency 5 each lock adds
  // about 78 ms to the mean; the start times give 1 to 4 locks (504, 582, 659, 737 ms; all clients
  // starting at once, as genai-perf does, 737). NIM's 547 ms is 1.5 locks on average. Neither random
  // arrival delays (5-50 ms: worse) nor prefills that are never chunked (unchanged) explain it;
  // NIM 1.8.0 likely serves this profile with TensorRT-LLM, whose scheduling the lab does not model.
  const double tol = 0.10, ttft_tol_unsaturated = 0.20;
  std::string table = "conc  in/out      TTFT ms NIM→sim           ITL ms NIM→sim       out tok/s NIM→sim\n";
  for (const Row& r : rows) {
    // Seeds 1 … 8 (the clients' start times), averaged: the unsaturated rows' TTFT depends on how the
    // clients' prefills interleave, which the start times set (a deterministic engine keeps it).
    Measured x;
    const int seeds = 8;
    for (int k = 1; k <= seeds; ++k) {
      const Measured one = nim_row_through_run(r.concurrency, r.prompt, r.output, r.ttft_ms / 1e3, r.itl_ms / 1e3, k);
      x.ttft_ms += one.ttft_ms / seeds;
      x.itl_ms += one.itl_ms / seeds;
      x.tput += one.tput / seeds;
      x.preemptions += one.preemptions;
    }
    const double e_ttft = x.ttft_ms / r.ttft_ms - 1, e_itl = x.itl_ms / r.itl_ms - 1;
    const double e_tput = r.tput > 0 ? x.tput / r.tput - 1 : 0;
    char line[200];
    std::snprintf(line, sizeof line, "%4d %5d/%-5d %6.0f→%6.0f %+6.1f%%   %5.1f→%5.1f %+5.1f%%   %4.0f→%4.0f %+5.1f%%\n",
                  r.concurrency, r.prompt, r.output, r.ttft_ms, x.ttft_ms, 100 * e_ttft, r.itl_ms, x.itl_ms, 100 * e_itl, r.tput,
                  x.tput, 100 * e_tput);
    table += line;
    INFO(line);
    CHECK(std::abs(e_ttft) <= (r.saturated || r.concurrency == 1 ? tol : ttft_tol_unsaturated));
    CHECK(std::abs(e_itl) <= tol);
    CHECK(std::abs(e_tput) <= tol);
    if (r.saturated) CHECK(x.preemptions > 0);  // KV-bound: about 85 requests fit
    if (r.concurrency <= 50) CHECK(x.preemptions == 0);
  }
  if (std::getenv("GPUSCALE_PRINT_CALIBRATION")) std::cout << table;
}

TEST_CASE("a macro step runs the decode steps of a lone request as one event, with the same times", "[engine]") {
  EngineConfig c = default_config();
  c.max_decode_substeps = 4096;
  Engine e(c);
  REQUIRE(e.add_request(7, 5000, 500, 0));
  std::vector<Logged> log;
  Micros now = step(e, 0, log);  // the prefill step is never coalesced
  CHECK(now == 406993);
  now = step(e, now, log);  // the 499 decode steps, one event
  CHECK(now == 9688174);    // exactly when the per-step engine finishes (test above)
  CHECK(log == std::vector<Logged>{{EngineEvent::FirstToken, 7, 406993}, {EngineEvent::Finished, 7, 9688174}});
  CHECK_FALSE(e.has_work());
  CHECK(e.num_generation_tokens() == 500);
}

TEST_CASE("a request arriving during a macro step joins at the next step boundary", "[engine]") {
  EngineConfig c = default_config();
  c.max_decode_substeps = 4096;
  Engine macro(c);
  Engine plain(default_config());
  std::vector<Logged> log_macro, log_plain;
  for (Engine* e : {&macro, &plain}) REQUIRE(e->add_request(1, 5000, 500, 0));
  Micros t_macro = step(macro, 0, log_macro);
  Micros t_plain = step(plain, 0, log_plain);
  REQUIRE(t_macro == t_plain);
  // The macro engine plans every decode step at once; a second request arrives 1 s later.
  const Micros planned = t_macro + macro.begin_step(t_macro);
  const Micros arrival = 1'406'805;
  CHECK(planned > arrival);
  REQUIRE(macro.add_request(2, 1000, 50, arrival));
  const Micros cut = macro.truncate_step(arrival);
  CHECK(cut > arrival);
  CHECK(cut < planned);
  CHECK(macro.kv_cache_usage(arrival) > macro.kv_cache_usage());  // blocks of the sub-steps begun by then
  std::vector<EngineEvent> out;
  macro.end_step(cut, out);
  // The per-step engine: steps until the one that ends after the arrival, then the same request joins.
  while (t_plain <= arrival) t_plain = step(plain, t_plain, log_plain);
  REQUIRE(plain.add_request(2, 1000, 50, arrival));
  CHECK(t_plain == cut);
  CHECK(macro.num_generation_tokens() == plain.num_generation_tokens());
  CHECK(macro.free_kv_blocks() == plain.free_kv_blocks());
  // From here both run to the end with identical event logs.
  t_macro = cut;
  while (macro.has_work()) t_macro = step(macro, t_macro, log_macro);
  while (plain.has_work()) t_plain = step(plain, t_plain, log_plain);
  CHECK(log_macro.back() == log_plain.back());
}

namespace {

// Runs `e` to completion with requests arriving at given times (each cuts the step under way, as
// the simulation does), and returns every engine event with its time.
struct Arrival {
  Micros at;
  std::uint32_t id;
  int prompt, output;
};
std::vector<Logged> run_with_arrivals(Engine& e, const std::vector<Arrival>& arrivals) {
  std::vector<Logged> log;
  std::vector<EngineEvent> out;
  Micros now = 0, end = 0;
  std::size_t next = 0;
  while (next < arrivals.size() || e.has_work() || e.in_step()) {
    if (!e.in_step() && e.has_work()) end = now + e.begin_step(now);
    if (next < arrivals.size() && (!e.in_step() || arrivals[next].at < end)) {
      now = std::max(now, arrivals[next].at);
      const Arrival& a = arrivals[next++];
      REQUIRE(e.add_request(a.id, a.prompt, a.output, now));
      if (e.in_step()) end = e.truncate_step(now);
      continue;
    }
    now = end;
    out.clear();
    e.end_step(now, out);
    for (const EngineEvent& x : out) log.push_back(Logged{x.kind, x.request_id, x.time});
  }
  return log;
}

}  // namespace

TEST_CASE("macro steps sum their sub-steps exactly, whichever side of the roofline they are on", "[engine]") {
  // Four profiles: memory-bound decode (the calibrated one); decode that turns from memory- to
  // compute-bound as the context grows (attention pairs cost more than KV reads); decode that turns
  // from compute- to memory-bound (a large per-token cost, KV reads dearer than pairs); and steps so
  // short that some round to 0 µs and count as 1 µs. Request 1 decodes alone for about 1.9 s, long
  // enough to cross from one side of the roofline to the other inside one macro step.
  EngineConfig to_compute = toy_config(2000);
  to_compute.profile.step_weights_s = 7e-5;
  to_compute.profile.step_kv_token_s = 1e-8;
  to_compute.profile.step_pair_s = 1e-7;
  to_compute.profile.step_token_s = 1e-6;
  EngineConfig to_memory = toy_config(2000);
  to_memory.profile.step_weights_s = 1e-6;
  to_memory.profile.step_kv_token_s = 1e-7;
  to_memory.profile.step_pair_s = 1e-8;
  to_memory.profile.step_token_s = 1e-4;
  EngineConfig tiny = toy_config(2000);
  tiny.profile.step_base_s = 0;
  tiny.profile.step_weights_s = 1e-7;
  tiny.profile.step_kv_token_s = 1e-12;
  for (const EngineConfig& base : {default_config(), to_compute, to_memory, tiny}) {
    INFO(base.profile.name << " weights " << base.profile.step_weights_s);
    const std::vector<Arrival> arrivals = {{0, 1, 40, 1500},          {1'900'000, 2, 3000, 700},
                                           {1'950'000, 3, 9000, 300}, {2'000'000, 4, 120, 2500},
                                           {5'000'001, 5, 700, 900},  {5'000'002, 6, 16, 64}};
    EngineConfig macro_config = base;
    macro_config.max_decode_substeps = 4096;
    EngineConfig plain_config = base;
    plain_config.max_decode_substeps = 1;
    Engine macro(macro_config), plain(plain_config);
    const std::vector<Logged> a = run_with_arrivals(macro, arrivals);
    const std::vector<Logged> b = run_with_arrivals(plain, arrivals);
    REQUIRE(a.size() == 12);
    CHECK(a == b);
    CHECK(macro.num_generation_tokens() == plain.num_generation_tokens());
    CHECK(macro.busy_time(a.back().time) == plain.busy_time(b.back().time));
  }
}

TEST_CASE("the profile moves onto the GPU a replica got: H200 by the hardware ratios, A100 fails as vLLM does", "[engine]") {
  const EngineConfig c = default_config();
  const EngineProfile& h100 = c.profile;

  // The calibration GPU: the profile unchanged.
  const ProfileOnGpu same = profile_on_gpu(c, "h100", 81920);
  CHECK(same.loads);
  CHECK(same.profile.name == h100.name);
  CHECK(same.profile.step_weights_s == h100.step_weights_s);

  // H200 (p5en): HBM3e 4.8 TB/s and 140 GiB, the same GH100 compute: memory-bound terms scale by
  // 3.35 / 4.8, compute-bound ones stay, and the KV cache grows with the memory.
  const ProfileOnGpu h200 = profile_on_gpu(c, "h200", 143360);
  REQUIRE(h200.loads);
  CHECK(h200.profile.step_weights_s == Approx(h100.step_weights_s * 3.35 / 4.8));
  CHECK(h200.profile.step_kv_token_s == Approx(h100.step_kv_token_s * 3.35 / 4.8));
  CHECK(h200.profile.step_token_s == Approx(h100.step_token_s));
  CHECK(h200.profile.step_base_s == h100.step_base_s);
  CHECK(h200.profile.gpu_memory_gib == Approx(h100.gpu_memory_gib * 143360.0 / 81920.0));
  EngineConfig on_h200 = c;
  on_h200.profile = h200.profile;
  CHECK(Engine::compute_num_kv_blocks(on_h200) > 2 * Engine::compute_num_kv_blocks(c));

  // A100 40 GB (p4d): no FlashAttention 3, so the FP8 KV cache is refused at start-up; the FP8 weights
  // would run weight-only through Marlin; and 0.9 × 39.56 GiB leaves 0.30 GiB per GPU after the weights.
  const ProfileOnGpu a100 = profile_on_gpu(c, "a100", 40960);
  CHECK_FALSE(a100.loads);
  CHECK(a100.error.find("NotImplementedError: FlashAttention does not support fp8 kv-cache on this device") != std::string::npos);
  CHECK(a100.error.find("a100 has 8.0") != std::string::npos);
  CHECK(a100.explanation.find("Marlin W8A16") != std::string::npos);
  CHECK(a100.explanation.find("= 0.30 GiB per GPU for the KV cache") != std::string::npos);
  CHECK_FALSE(profile_on_gpu(c, "a100", 81920).loads);  // p4de: memory enough, the KV cache dtype still not

  // Without the FP8 KV cache the A100 80 GB loads: Marlin's GEMMs at BF16's 312 TFLOPS instead of FP8's
  // 1,979, the weights streamed at 2.039 TB/s.
  EngineConfig bf16_kv = c;
  bf16_kv.profile.fp8_kv_cache = false;
  const ProfileOnGpu p4de = profile_on_gpu(bf16_kv, "a100", 81920);
  REQUIRE(p4de.loads);
  CHECK(p4de.profile.step_token_s == Approx(h100.step_token_s * 1979.0 / 312.0));
  CHECK(p4de.profile.step_weights_s == Approx(h100.step_weights_s * 3.35 / 2.039));
  // On 40 GB a lower memory share leaves nothing for the KV cache: vLLM's "No available memory".
  bf16_kv.gpu_memory_utilization = 0.85;
  const ProfileOnGpu p4d = profile_on_gpu(bf16_kv, "a100", 40960);
  CHECK_FALSE(p4d.loads);
  CHECK(p4d.error.find("ValueError: No available memory for the cache blocks") != std::string::npos);

  // A GPU the lab has no figures for is said so, never run at the calibration GPU's speed.
  const ProfileOnGpu t4 = profile_on_gpu(c, "t4", 16384);
  CHECK_FALSE(t4.loads);
  CHECK(t4.error.find("no hardware figures for t4") != std::string::npos);
}

namespace {

// A seeded storm of arrivals and aborts (client timeouts), driven as the simulation drives an
// engine: each arrival or abort during a step cuts it (truncate_step). Returns every engine event,
// then the counters, as one comparable log.
std::vector<Logged> run_storm(const EngineConfig& config, std::uint64_t seed, int requests) {
  Engine e(config);
  std::uint64_t x = seed;
  auto next = [&x](std::uint64_t n) {  // splitmix64, reduced to [0, n)
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) % n;
  };
  struct Action {
    Micros at;
    bool abort;
    std::uint32_t id;
    int prompt, output;
  };
  std::vector<Action> actions;
  Micros t = 0;
  for (int i = 0; i < requests; ++i) {
    t += static_cast<Micros>(next(60'000));
    const int prompt = 1 + static_cast<int>(next(next(4) == 0 ? 3000 : 300));
    const int output = 1 + static_cast<int>(next(next(3) == 0 ? 700 : 60));
    actions.push_back({t, false, static_cast<std::uint32_t>(i), prompt, output});
    if (next(5) == 0) actions.push_back({t + static_cast<Micros>(next(3'000'000)), true, static_cast<std::uint32_t>(i), 0, 0});
  }
  std::stable_sort(actions.begin(), actions.end(), [](const Action& a, const Action& b) { return a.at < b.at; });
  std::vector<Logged> log;
  std::vector<EngineEvent> out;
  Micros now = 0, end = 0;
  std::size_t k = 0;
  while (k < actions.size() || e.has_work() || e.in_step()) {
    if (!e.in_step() && e.has_work()) end = now + e.begin_step(now);
    if (k < actions.size() && (!e.in_step() || actions[k].at < end)) {
      now = std::max(now, actions[k].at);
      const Action& a = actions[k++];
      const bool took = a.abort ? e.abort_request(a.id) : e.add_request(a.id, a.prompt, a.output, now);
      log.push_back(Logged{a.abort ? EngineEvent::Preempted : EngineEvent::FirstToken, took ? 1u : 0u, now});
      log.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_requests_running()),
                           static_cast<Micros>(e.kv_cache_usage(now) * 1e9)});
      if (e.in_step()) end = e.truncate_step(now);
      continue;
    }
    now = end;
    out.clear();
    e.end_step(now, out);
    for (const EngineEvent& ev : out) log.push_back(Logged{ev.kind, ev.request_id, ev.time});
    log.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.free_kv_blocks()), e.num_requests_waiting()});
  }
  log.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_preemptions()), e.num_generation_tokens()});
  log.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_preempted_prefix_cache_hits()), e.busy_time(now)});
  return log;
}

}  // namespace

TEST_CASE("lazy decoders give every event, gauge and counter of the request-by-request engine", "[engine]") {
  // KV-bound toys (preemption, prefix-cache hits), small token budgets (chunked prefills that run out
  // of budget before and after decoders), odd and large block sizes, a cap on running sequences.
  std::vector<EngineConfig> configs;
  for (const int gib : {40, 200, 4000}) {
    for (const int budget : {64, 512, 8192}) {
      EngineConfig c = toy_config(gib);
      c.max_num_batched_tokens = budget;
      configs.push_back(c);
    }
  }
  EngineConfig odd = toy_config(300);
  odd.block_size = 7;  // no shift; 7 buckets
  odd.profile.kv_bytes_per_token = 67108864.0 * 16 / 7;
  configs.push_back(odd);
  EngineConfig capped = toy_config(4000);
  capped.max_num_seqs = 5;
  configs.push_back(capped);
  EngineConfig one = toy_config(300);
  one.block_size = 1;
  one.profile.kv_bytes_per_token = 67108864.0 * 16;
  configs.push_back(one);
  EngineConfig calibrated = default_config();
  calibrated.max_num_batched_tokens = 2048;
  configs.push_back(calibrated);
  for (const int budget : {2, 3}) {  // a recomputing request left a 1-token chunk beside decoders
    EngineConfig starved = toy_config(40);
    starved.max_num_batched_tokens = budget;
    starved.enable_prefix_caching = false;
    configs.push_back(starved);
  }
  int n = 0;
  std::int64_t preemptions = 0, cache_hits = 0;  // the storms reach the paths that matter
  for (const EngineConfig& base : configs) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      INFO("config " << n << " seed " << seed);
      // The same engine with and without lazy decoders, step for step, with and without macro steps.
      std::vector<std::vector<Logged>> counters;  // and the counters at the end, whatever the steps
      for (const int substeps : {4096, 1}) {
        EngineConfig lazy = base, plain = base;
        lazy.max_decode_substeps = plain.max_decode_substeps = substeps;
        lazy.lazy_decode = true;
        plain.lazy_decode = false;
        const std::vector<Logged> a = run_storm(lazy, seed, 400);
        const std::vector<Logged> b = run_storm(plain, seed, 400);
        preemptions += b[b.size() - 2].id;
        cache_hits += b.back().id;
        counters.push_back({b.end() - 2, b.end()});
        CHECK(a.size() == b.size());
        const auto diff = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
        CHECK(static_cast<std::size_t>(diff.first - a.begin()) == a.size());
        if (diff.first != a.end() && diff.second != b.end()) CHECK(*diff.first == *diff.second);
      }
      // (A decoder aborted during a macro step once lost the tokens of its sub-steps before the abort
      // from vllm:generation_tokens, and took none of their blocks off the free queue's head.)
      CHECK(counters[0] == counters[1]);
    }
    ++n;
  }
  CHECK(preemptions > 1000);
  CHECK(cache_hits > 10000);
}

namespace {

// A seeded storm with shared prefixes (four prefixes, some requests naming a shorter part of one) and
// the roles of disaggregated serving, driven as a world would drive the engine: start_kv_loads and
// begin_step whenever no step runs, truncate_step after every call made during a step, kv_loaded when
// a load's transfer (2 ms + 3 µs a token) is done, release_kv 1-5 ms after PrefillDone, client aborts
// in every state. `actions`: every event with its time and load size, and the gauges at every call;
// it does not depend on how steps are grouped. `steps`: the free blocks and the queue after each step.
struct PdStorm {
  std::vector<Logged> actions, steps;
  std::int64_t preemptions = 0, hits = 0, loads = 0, empty_loads = 0, prefills_done = 0;
};

PdStorm run_pd_storm(const EngineConfig& config, std::uint64_t seed, int requests) {
  Engine e(config);
  std::uint64_t x = seed * 7919;
  auto next = [&x](std::uint64_t n) {  // splitmix64, reduced to [0, n)
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) % n;
  };
  enum What { Arrive, Abort, Loaded, Release };
  struct Action {
    Micros at;
    std::uint64_t seq;
    What what;
    std::uint32_t id;
    int prompt, output;
    RequestOptions options;
    bool operator>(const Action& o) const { return at != o.at ? at > o.at : seq > o.seq; }
  };
  std::vector<Action> heap;  // min-heap on (at, seq): equal times in the order they were filed
  std::uint64_t seq = 0;
  auto file = [&](Action a) {
    a.seq = seq++;
    heap.push_back(a);
    std::push_heap(heap.begin(), heap.end(), std::greater<Action>());
  };
  const int prefix_length[] = {40, 200, 500, 1200};
  Micros t = 0;
  for (int i = 0; i < requests; ++i) {
    t += static_cast<Micros>(next(60'000));
    RequestOptions o;
    const std::uint64_t role = next(10);
    o.role = role < 2 ? RequestRole::PrefillOnly : role < 4 ? RequestRole::DecodeOnly : RequestRole::Whole;
    if (next(3) != 0) {
      o.prefix_id = 1 + static_cast<std::uint32_t>(next(4));
      const int full = prefix_length[o.prefix_id - 1];
      o.prefix_tokens = full - (next(4) == 0 ? static_cast<int>(next(static_cast<std::uint64_t>(full / 2 + 1))) : 0);
    }
    // (Sometimes the prefix and one token: a DecodeOnly one may then find all but that token cached.)
    const int prompt = o.prefix_tokens + 1 + (next(8) == 0 ? 0 : static_cast<int>(next(next(4) == 0 ? 1500 : 200)));
    const int output = 1 + static_cast<int>(next(next(3) == 0 ? 400 : 60));
    file({t, 0, Arrive, static_cast<std::uint32_t>(i), prompt, output, o});
    if (next(5) == 0) file({t + static_cast<Micros>(next(3'000'000)), 0, Abort, static_cast<std::uint32_t>(i), 0, 0, {}});
    // Every client gives up after 2 minutes. Without it a small KV cache can stall for ever, as
    // vLLM's would: a preempted head that needs blocks held by requests waiting behind it after
    // their KV arrived (it recomputes, preempts itself and starts again).
    file({t + 120'000'000, 0, Abort, static_cast<std::uint32_t>(i), 0, 0, {}});
  }
  PdStorm s;
  std::vector<EngineEvent> out;
  auto handle = [&](std::vector<Logged>& step_log) {
    for (const EngineEvent& ev : out) {
      s.actions.push_back(Logged{ev.kind, ev.request_id, ev.time});
      step_log.push_back(Logged{ev.kind, ev.request_id, ev.time});
      if (ev.kind == EngineEvent::KvLoadStarted) {
        s.actions.push_back(Logged{ev.kind, static_cast<std::uint32_t>(ev.tokens), 0});
        ++s.loads;
        if (ev.tokens == 0) ++s.empty_loads;
        else file({ev.time + 2000 + 3 * static_cast<Micros>(ev.tokens), 0, Loaded, ev.request_id, 0, 0, {}});
      } else if (ev.kind == EngineEvent::PrefillDone) {
        ++s.prefills_done;
        file({ev.time + 1000 + 1000 * static_cast<Micros>(ev.request_id % 5), 0, Release, ev.request_id, 0, 0, {}});
      }
    }
    out.clear();
  };
  Micros now = 0, end = 0;
  while (!heap.empty() || e.has_work() || e.in_step()) {
    if (!e.in_step()) {
      e.start_kv_loads(now, out);
      handle(s.steps);
      if (e.has_work()) {
        end = now + e.begin_step(now, out);
        handle(s.steps);
      }
    }
    if (!heap.empty() && (!e.in_step() || heap.front().at < end)) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<Action>());
      const Action a = heap.back();
      heap.pop_back();
      now = std::max(now, a.at);
      bool took = false;
      switch (a.what) {
        case Arrive: took = e.add_request(a.id, a.prompt, a.output, now, a.options); break;
        case Abort: took = e.abort_request(a.id); break;
        case Loaded: took = e.kv_loaded(a.id, now); break;
        case Release: took = e.release_kv(a.id); break;
      }
      s.actions.push_back(Logged{static_cast<EngineEvent::Kind>(a.what), took ? a.id : 0xFFFFFFFFu, now});
      s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_requests_running()),
                                 static_cast<Micros>(e.kv_cache_usage(now) * 1e9)});
      s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_requests_waiting()),
                                 e.num_kv_loading() * 1000 + e.num_kv_held()});
      if (e.in_step()) end = e.truncate_step(now);
      continue;
    }
    now = end;
    e.end_step(now, out);
    handle(s.steps);
    s.steps.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.free_kv_blocks()), e.num_requests_waiting()});
  }
  s.preemptions = e.num_preemptions();
  s.hits = e.num_prefix_cache_hits() + e.num_preempted_prefix_cache_hits();
  s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_preemptions()), e.num_generation_tokens()});
  s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_prefix_cache_hits()), e.num_prefix_cache_queries()});
  s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.num_preempted_prefix_cache_hits()),
                             e.num_preempted_prefix_cache_queries()});
  s.actions.push_back(Logged{EngineEvent::Finished, static_cast<std::uint32_t>(e.free_kv_blocks()), e.busy_time(now)});
  return s;
}

void check_same(const std::vector<Logged>& a, const std::vector<Logged>& b) {
  CHECK(a.size() == b.size());
  const auto diff = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  CHECK(static_cast<std::size_t>(diff.first - a.begin()) == a.size());
  if (diff.first != a.end() && diff.second != b.end()) CHECK(*diff.first == *diff.second);
}

}  // namespace

TEST_CASE("shared prefixes and disaggregated roles: lazy decoders and macro steps change no event, gauge or counter", "[engine][prefix][pd]") {
  // The configurations of the test above: KV-bound toys, small token budgets, odd and large block
  // sizes, a cap on running sequences, the calibrated profile, budgets of 2 and 3 tokens.
  std::vector<EngineConfig> configs;
  for (const int gib : {40, 200, 4000}) {
    for (const int budget : {64, 512, 8192}) {
      EngineConfig c = toy_config(gib);
      c.max_num_batched_tokens = budget;
      configs.push_back(c);
    }
  }
  EngineConfig odd = toy_config(300);
  odd.block_size = 7;
  odd.profile.kv_bytes_per_token = 67108864.0 * 16 / 7;
  configs.push_back(odd);
  EngineConfig capped = toy_config(4000);
  capped.max_num_seqs = 5;
  configs.push_back(capped);
  EngineConfig one = toy_config(300);
  one.block_size = 1;
  one.profile.kv_bytes_per_token = 67108864.0 * 16;
  configs.push_back(one);
  EngineConfig calibrated = default_config();
  calibrated.max_num_batched_tokens = 2048;
  configs.push_back(calibrated);
  for (const int budget : {2, 3}) {
    EngineConfig starved = toy_config(40);
    starved.max_num_batched_tokens = budget;
    configs.push_back(starved);
  }
  EngineConfig no_cache = toy_config(200);
  no_cache.enable_prefix_caching = false;
  configs.push_back(no_cache);
  int n = 0;
  PdStorm total;
  for (const EngineConfig& base : configs) {
    for (const std::uint64_t seed : {1u, 2u, 3u}) {
      INFO("config " << n << " seed " << seed);
      std::vector<PdStorm> runs;
      for (const int substeps : {1, 4096}) {
        for (const bool lazy : {false, true}) {
          EngineConfig c = base;
          c.max_decode_substeps = substeps;
          c.lazy_decode = lazy;
          runs.push_back(run_pd_storm(c, seed, 300));
        }
      }
      const PdStorm& plain = runs[0];  // one event per step, request by request
      for (const PdStorm& r : runs) check_same(r.actions, plain.actions);
      check_same(runs[1].steps, runs[0].steps);  // step for step, with and without lazy decoders
      check_same(runs[3].steps, runs[2].steps);
      total.preemptions += plain.preemptions;
      total.hits += plain.hits;
      total.loads += plain.loads;
      total.empty_loads += plain.empty_loads;
      total.prefills_done += plain.prefills_done;
    }
    ++n;
  }
  // The storms reach the paths that matter.
  INFO("preemptions " << total.preemptions << " hits " << total.hits << " loads " << total.loads << " empty "
                      << total.empty_loads << " prefills " << total.prefills_done);
  CHECK(total.preemptions > 1000);
  CHECK(total.hits > 100000);
  CHECK(total.loads > 1000);
  CHECK(total.empty_loads > 0);
  CHECK(total.prefills_done > 1000);
}

TEST_CASE("a readmitted request given a 1-token chunk is no decode: macro steps do not count its prompt as output", "[engine]") {
  // Two 1-token prompts with 40 tokens to generate in 3 blocks of 16 and a budget of 2 tokens: request 1
  // is preempted twice, and when it recomputes its prompt beside request 0's decode it gets one token a
  // step. Found by review: macro steps took that chunk for a decode and finished request 1 at 660 ms.
  EngineConfig c = toy_config(3);
  c.max_num_batched_tokens = 2;
  c.enable_prefix_caching = false;
  std::vector<std::vector<Logged>> logs;
  for (const bool lazy : {false, true}) {
    for (const int substeps : {1, 4096}) {
      EngineConfig x = c;
      x.lazy_decode = lazy;
      x.max_decode_substeps = substeps;
      Engine e(x);
      REQUIRE(e.add_request(0, 1, 40, 0));
      REQUIRE(e.add_request(1, 1, 40, 0));
      std::vector<Logged> log;
      Micros now = 0;
      while (e.has_work()) now = step(e, now, log);
      logs.push_back(log);
    }
  }
  const std::vector<Logged>& plain = logs[0];
  REQUIRE(plain.size() == 6);
  CHECK(plain[2] == Logged{EngineEvent::Preempted, 1, 160000});
  CHECK(plain.back() == Logged{EngineEvent::Finished, 1, 720000});
  for (const auto& log : logs) CHECK(log == plain);
}

// --- prefix caching across requests ---------------------------------------------------------------

TEST_CASE("a shared prefix: blocks in use are shared and counted once, then hit from the free queue, the last token always computed", "[engine][prefix]") {
  Engine e(compute_toy_config(100));  // 100 blocks of 16 tokens; a step is 1 ms + 0.1 ms per token
  const RequestOptions sys = with_prefix(7, 64);  // a 64-token system prompt: blocks 0-3
  std::vector<Logged> log;
  REQUIRE(e.add_request(1, 100, 10, 0, sys));
  // Nothing cached yet: A computes its 100 tokens (11 ms) in 7 blocks; the step's end caches the 4
  // prefix blocks it filled.
  CHECK(e.cached_prefix_tokens(7, 64) == 0);
  Micros now = step(e, 0, log);
  CHECK(now == 11000);
  CHECK(used_blocks(e) == 7);
  CHECK(e.cached_prefix_tokens(7, 64) == 64);
  CHECK(e.cached_prefix_tokens(7, 200) == 64);  // only 4 blocks of that prefix exist
  CHECK(e.cached_prefix_tokens(7, 50) == 48);   // whole blocks of the asker's prefix only
  CHECK(e.cached_prefix_tokens(8, 64) == 0);

  // B (80 tokens, the same prefix) while A decodes: 4 blocks hit, in use by A, so B computes 16
  // tokens in 1 new block. The step: A's decode token + B's 16 = 17 tokens, 2.7 ms, where B alone
  // without the hit would have taken 1 + 8.0 ms. KV: A's 7 + B's 1, the shared 4 counted once.
  REQUIRE(e.add_request(2, 80, 5, now, sys));
  now = step(e, now, log);
  CHECK(now == 13700);
  CHECK(log.back() == Logged{EngineEvent::FirstToken, 2, 13700});
  CHECK(used_blocks(e) == 8);
  CHECK(e.num_prefix_cache_queries() == 100 + 80);
  CHECK(e.num_prefix_cache_hits() == 64);

  // Both decode (1.2 ms a step) until B's 5th token (4 steps), then A alone (1.1 ms) to its 10th.
  while (e.has_work()) now = step(e, now, log);
  CHECK(log == std::vector<Logged>{{EngineEvent::FirstToken, 1, 11000},
                                   {EngineEvent::FirstToken, 2, 13700},
                                   {EngineEvent::Finished, 2, 18500},
                                   {EngineEvent::Finished, 1, 22900}});
  // Everything is free again, and the prefix blocks are still cached (in the free queue).
  CHECK(used_blocks(e) == 0);
  CHECK(e.cached_prefix_tokens(7, 64) == 64);

  // C is all prefix (64 tokens): the hit stops at 63 tokens' whole blocks, 3 (vLLM recomputes the
  // last token to get its logits), taken out of the free queue; it computes 16 tokens (2.6 ms).
  REQUIRE(e.add_request(3, 64, 1, now, sys));
  const Micros d = e.begin_step(now);
  CHECK(d == 2600);
  CHECK(used_blocks(e) == 4);  // 3 hit + 1 new
  std::vector<EngineEvent> out;
  e.end_step(now + d, out);
  CHECK(e.num_prefix_cache_queries() == 100 + 80 + 64);
  CHECK(e.num_prefix_cache_hits() == 64 + 48);
  CHECK(used_blocks(e) == 0);
  CHECK(e.cached_prefix_tokens(7, 64) == 64);  // C's own block 3 cached beside A's

  // Prefix caching off: nothing is shared or counted.
  EngineConfig off = compute_toy_config(100);
  off.enable_prefix_caching = false;
  Engine f(off);
  REQUIRE(f.add_request(1, 100, 1, 0, sys));
  now = step(f, 0, log);
  REQUIRE(f.add_request(2, 80, 1, now, sys));
  CHECK(f.begin_step(now) == 9000);
  CHECK(f.cached_prefix_tokens(7, 64) == 0);
  CHECK(f.num_prefix_cache_queries() == 0);
  CHECK(f.num_prefix_cache_hits() == 0);

  // Options that cannot be: a prefix longer than the prompt, the reserved id.
  CHECK_FALSE(e.add_request(9, 10, 1, now, with_prefix(7, 11)));
  CHECK_FALSE(e.add_request(9, 10, 1, now, with_prefix(0xFFFFFFFFu, 5)));
  CHECK_FALSE(e.add_request(9, 10, 1, now, with_prefix(7, -1)));
}

TEST_CASE("eviction takes a prefix's trailing blocks first", "[engine][prefix]") {
  Engine e(toy_config());  // 10 blocks, 10 ms steps
  std::vector<Logged> log;
  const RequestOptions sys = with_prefix(7, 64);
  // A is its prefix (64 tokens, 4 blocks); finished, it frees them tail first: the free queue is
  // [6 never used, block 3, 2, 1, 0].
  REQUIRE(e.add_request(1, 64, 1, 0, sys));
  Micros now = step(e, 0, log);
  CHECK(e.cached_prefix_tokens(7, 64) == 64);
  // X (no prefix, 7 blocks) takes the 6 unused blocks and evicts block 3.
  REQUIRE(e.add_request(2, 112, 1, now));
  e.begin_step(now);
  CHECK(e.cached_prefix_tokens(7, 64) == 48);
  CHECK(used_blocks(e) == 7);
  std::vector<EngineEvent> out;
  now += 10000;
  e.end_step(now, out);
  // X's 7 blocks went to the tail, behind blocks 2, 1, 0: Y (no prefix, 2 blocks) evicts 2 and 1.
  REQUIRE(e.add_request(3, 32, 1, now));
  e.begin_step(now);
  CHECK(e.cached_prefix_tokens(7, 64) == 16);
  now += 10000;
  e.end_step(now, out);
  // C (all prefix) hits block 0 and computes 48 tokens.
  REQUIRE(e.add_request(4, 64, 1, now, sys));
  now = step(e, now, log);
  CHECK(e.num_prefix_cache_hits() == 16);
  CHECK(e.num_prefix_cache_queries() == 64 + 112 + 32 + 64);
  CHECK(e.free_kv_blocks() == 10);
}

TEST_CASE("a prefix block is hit only once computed, and requests that compute it at once each cache a copy", "[engine][prefix]") {
  EngineConfig c = compute_toy_config(100);
  c.max_num_batched_tokens = 64;
  Engine e(c);
  const RequestOptions sys = with_prefix(7, 96);  // 6 blocks
  std::vector<Logged> log;
  // Step 1: A's first 64-token chunk (7.4 ms); its end caches blocks 0-3.
  REQUIRE(e.add_request(1, 100, 3, 0, sys));
  Micros now = step(e, 0, log);
  CHECK(now == 7400);
  CHECK(e.cached_prefix_tokens(7, 96) == 64);
  // Step 2: A's last 36 tokens, then B (120 tokens) with the 28 tokens of budget left. B hits
  // blocks 0-3 only: blocks 4 and 5 are being computed by A in this very step. 64 tokens, 7.4 ms.
  REQUIRE(e.add_request(2, 120, 2, now, sys));
  now = step(e, now, log);
  CHECK(now == 14800);
  CHECK(e.num_prefix_cache_hits() == 64);
  // A cached blocks 4 and 5; B (92 tokens computed) its own copy of block 4.
  CHECK(e.cached_prefix_tokens(7, 96) == 96);
  // Step 3: A's decode and B's last 28 tokens (3.9 ms); B caches its own copy of block 5.
  now = step(e, now, log);
  CHECK(now == 18700);
  CHECK(used_blocks(e) == 11);  // A 7, B 8 of which 4 are A's
  now = step(e, now, log);  // both decode their last token (1.2 ms)
  CHECK(log == std::vector<Logged>{{EngineEvent::FirstToken, 1, 14800},
                                   {EngineEvent::FirstToken, 2, 18700},
                                   {EngineEvent::Finished, 1, 19900},
                                   {EngineEvent::Finished, 2, 19900}});
  // Freed in batch order, each tail first: [90 plain, A's 5, A's 4, B's 2 plain, B's 5, B's 4,
  // A's 3, 2, 1, 0]. A lookup finds the first copy of each block, A's; when it is evicted B's
  // copy still answers.
  CHECK(used_blocks(e) == 0);
  REQUIRE(e.add_request(3, 91 * 16, 1, now));  // 91 blocks: the 90 plain ones and A's block 5
  while (e.has_work()) now = step(e, now, log);
  CHECK(e.cached_prefix_tokens(7, 96) == 96);
  REQUIRE(e.add_request(4, 48, 1, now));  // 3 blocks: A's block 4 and B's 2 plain ones
  now = step(e, now, log);
  CHECK(e.cached_prefix_tokens(7, 96) == 96);
  REQUIRE(e.add_request(5, 16, 1, now));  // 1 block: B's block 5, the last copy of block 5
  now = step(e, now, log);
  CHECK(e.cached_prefix_tokens(7, 96) == 80);
  CHECK(e.num_prefix_cache_queries() == 100 + 120 + 91 * 16 + 48 + 16);
}

// --- disaggregated prefill and decode -----------------------------------------------------------------

TEST_CASE("PrefillOnly: PrefillDone at the step that samples its token, blocks held until release_kv", "[engine][pd]") {
  Engine e(compute_toy_config(10));  // 10 blocks
  const RequestOptions pre = with_prefix(3, 32, RequestRole::PrefillOnly);  // a 2-block prefix
  std::vector<Logged> log;
  CHECK_FALSE(e.add_request(9, e.max_model_len(), 1, 0, pre));  // prompt + its one token too long
  REQUIRE(e.add_request(1, 100, 500, 0, pre));  // one token whatever output_tokens says
  Micros now = step(e, 0, log);
  CHECK(now == 11000);  // 100 tokens
  CHECK(log == std::vector<Logged>{{EngineEvent::PrefillDone, 1, 11000}});
  CHECK(e.num_requests_running() == 0);
  CHECK(e.num_requests_waiting() == 0);
  CHECK(e.num_kv_held() == 1);
  CHECK(used_blocks(e) == 7);  // held: counted in KV usage
  CHECK(e.num_generation_tokens() == 1);
  CHECK_FALSE(e.has_work());
  // Q (4 blocks) does not fit in the 3 left: held blocks are not evictable, and it is no work.
  REQUIRE(e.add_request(2, 64, 1, now));
  CHECK(e.num_requests_waiting() == 1);
  CHECK_FALSE(e.has_work());
  CHECK_FALSE(e.release_kv(2));
  CHECK_FALSE(e.kv_loaded(1, now));
  // The decode side has read it: freed as a finished request's, its prefix blocks cached.
  CHECK(e.release_kv(1));
  CHECK_FALSE(e.release_kv(1));
  CHECK(used_blocks(e) == 0);
  CHECK(e.num_kv_held() == 0);
  CHECK(e.cached_prefix_tokens(3, 32) == 32);
  REQUIRE(e.has_work());
  now = step(e, now, log);
  CHECK(now == 18400);  // 64 tokens
  CHECK(log.back() == Logged{EngineEvent::Finished, 2, 18400});
  CHECK(e.cached_prefix_tokens(3, 32) == 32);  // Q took the 8 plain blocks ahead of them
  CHECK_FALSE(e.has_work());
}

TEST_CASE("DecodeOnly: KvLoadStarted with prompt - 1 - local hit tokens, nothing scheduled until kv_loaded", "[engine][pd]") {
  Engine e(compute_toy_config(100));
  std::vector<EngineEvent> ev;
  REQUIRE(e.add_request(1, 100, 3, 0, as(RequestRole::DecodeOnly)));
  CHECK(e.num_requests_waiting() == 1);
  CHECK_FALSE(e.has_work());  // its blocks come from start_kv_loads, not from a step
  e.start_kv_loads(0, ev);
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 1, 0, 99}}));
  CHECK(used_blocks(e) == 7);  // blocks for 99 tokens
  CHECK(e.num_kv_loading() == 1);
  CHECK(e.num_requests_waiting() == 1);  // WAITING_FOR_REMOTE_KVS is in the waiting queue
  CHECK(e.num_requests_running() == 0);
  CHECK_FALSE(e.has_work());
  ev.clear();
  e.start_kv_loads(0, ev);
  CHECK(ev.empty());
  CHECK_FALSE(e.release_kv(1));
  CHECK(e.kv_loaded(1, 5000));
  CHECK_FALSE(e.kv_loaded(1, 5000));
  CHECK(e.num_kv_loading() == 0);
  REQUIRE(e.has_work());
  // One step of one token (1.1 ms) samples the first output token, then it decodes.
  Micros now = 5000;
  std::vector<EngineEvent> log;
  while (e.has_work()) now = step_pd(e, now, log);
  CHECK(same_events(log, {Ev{Ev::FirstToken, 1, 6100}, Ev{Ev::Finished, 1, 8300}}));
  CHECK(e.num_generation_tokens() == 3);
  CHECK(e.num_prefix_cache_queries() == 100);
  CHECK(e.num_prefix_cache_hits() == 0);

  // With the prefix cached here, only the rest is loaded: 99 − 64 tokens.
  const RequestOptions sys = with_prefix(9, 64);
  REQUIRE(e.add_request(2, 64, 1, now, sys));
  log.clear();
  now = step_pd(e, now, log);
  CHECK(e.cached_prefix_tokens(9, 64) == 64);
  REQUIRE(e.add_request(3, 100, 2, now, with_prefix(9, 64, RequestRole::DecodeOnly)));
  ev.clear();
  e.start_kv_loads(now, ev);
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 3, now, 35}}));
  CHECK(used_blocks(e) == 7);  // 4 hit + 3 for the loaded tokens
  CHECK(e.num_prefix_cache_hits() == 64);
  CHECK(e.num_prefix_cache_queries() == 100 + 64 + 100);
  REQUIRE(e.kv_loaded(3, now + 1000));
  log.clear();
  now += 1000;
  while (e.has_work()) now = step_pd(e, now, log);
  CHECK(same_events(log, {Ev{Ev::FirstToken, 3, now - 1100}, Ev{Ev::Finished, 3, now}}));

  // Nothing to load: a 1-token prompt (0 tokens), scheduled at once as an ordinary request.
  REQUIRE(e.add_request(4, 1, 1, now, as(RequestRole::DecodeOnly)));
  ev.clear();
  e.start_kv_loads(now, ev);
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 4, now, 0}}));
  CHECK(e.has_work());
  CHECK_FALSE(e.kv_loaded(4, now));
  log.clear();
  now = step_pd(e, now, log);
  CHECK(same_events(log, {Ev{Ev::FirstToken, 4, now}, Ev{Ev::Finished, 4, now}}));
}

TEST_CASE("DecodeOnly: a head whose blocks do not fit blocks the queue (FCFS), loads start between steps or in a step", "[engine][pd]") {
  Engine e(toy_config());  // 10 blocks, 10 ms steps
  std::vector<EngineEvent> ev, log;
  REQUIRE(e.add_request(1, 128, 5, 0));  // 8 blocks, then 9 from its first decode
  Micros now = step_pd(e, 0, log);
  REQUIRE(e.add_request(2, 100, 2, now, as(RequestRole::DecodeOnly)));  // needs 7 blocks
  REQUIRE(e.add_request(3, 16, 1, now));  // 1 block: would fit, but waits behind it
  e.start_kv_loads(now, ev);  // A runs: the next step's scheduler allocates, after A's block
  CHECK(ev.empty());
  while (e.num_requests_running() > 0) now = step_pd(e, now, log);
  CHECK(now == 50000);
  CHECK(e.num_requests_waiting() == 2);
  // A finished: with nothing running the scheduler's pass allocates D's blocks and stops at W,
  // which the step then admits, passing over D while its KV loads.
  e.start_kv_loads(now, ev);
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 2, 50000, 99}}));
  REQUIRE(e.has_work());
  now = step_pd(e, now, log);
  CHECK(e.num_requests_waiting() == 1);
  CHECK_FALSE(e.has_work());
  REQUIRE(e.kv_loaded(2, 65000));
  now = 65000;
  while (e.has_work()) now = step_pd(e, now, log);
  CHECK(same_events(log, {Ev{Ev::FirstToken, 1, 10000}, Ev{Ev::Finished, 1, 50000}, Ev{Ev::FirstToken, 3, 60000},
                          Ev{Ev::Finished, 3, 60000}, Ev{Ev::FirstToken, 2, 75000}, Ev{Ev::Finished, 2, 85000}}));

  // In a step's own pass: W admitted, D allocated behind it. The one-argument begin_step reports
  // the load at that step's end, stamped with its start.
  Engine f(toy_config());
  REQUIRE(f.add_request(3, 16, 1, 0));
  REQUIRE(f.add_request(2, 100, 2, 0, as(RequestRole::DecodeOnly)));
  ev.clear();
  f.start_kv_loads(0, ev);  // W, ready to run, is at the head: the step's
  CHECK(ev.empty());
  REQUIRE(f.begin_step(0) == 10000);
  f.end_step(10000, ev);
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 2, 0, 99}, Ev{Ev::FirstToken, 3, 10000}, Ev{Ev::Finished, 3, 10000}}));

  // A step that starts a load is never a macro step (the load may end before a later sub-step).
  EngineConfig c = toy_config(100);
  c.max_decode_substeps = 4096;
  Engine g(c);
  REQUIRE(g.add_request(1, 16, 50, 0));
  now = step_pd(g, 0, log);
  REQUIRE(g.add_request(2, 100, 2, now, as(RequestRole::DecodeOnly)));
  ev.clear();
  CHECK(g.begin_step(now, ev) == 10000);  // one decode step, not 49
  CHECK(same_events(ev, {Ev{Ev::KvLoadStarted, 2, now, 99}}));
  g.end_step(now + 10000, ev);
  CHECK(g.begin_step(now + 10000, ev) == 48 * 10000);  // then the rest of A's decode as one
}

TEST_CASE("DecodeOnly: a remote-prefilled request is preempted and recomputes like any other", "[engine][pd]") {
  // The preemption test above with B's KV loaded from elsewhere: 10 blocks, 64-token prompts, 40
  // output tokens. B's 63 loaded tokens take 4 blocks; its first step computes token 64.
  Engine e(toy_config());
  std::vector<EngineEvent> log;
  REQUIRE(e.add_request(1, 64, 40, 0));
  REQUIRE(e.add_request(2, 64, 40, 0, as(RequestRole::DecodeOnly)));
  Micros now = e.begin_step(0, log);  // A's prefill; D's blocks behind it
  REQUIRE(e.kv_loaded(2, 5000));      // its load ends during the step
  e.end_step(now, log);
  while (e.has_work()) now = step_pd(e, now, log);
  // D decodes one step behind A; A's 6th block (step 18) finds none free and preempts D, the last
  // running. D's 4 full blocks stay cached; A's 7th block (step 34) evicts one; readmitted at step
  // 41 D hits 3 blocks, recomputes 32 tokens and samples its 17th token, 23 steps before its 40th.
  CHECK(same_events(log, {Ev{Ev::KvLoadStarted, 2, 0, 63}, Ev{Ev::FirstToken, 1, 10000}, Ev{Ev::FirstToken, 2, 20000},
                          Ev{Ev::Preempted, 2, 170000}, Ev{Ev::Finished, 1, 400000}, Ev{Ev::Finished, 2, 640000}}));
  CHECK(e.num_preemptions() == 1);
  CHECK(e.num_prefix_cache_queries() == 64 + 64);
  CHECK(e.num_prefix_cache_hits() == 0);
  CHECK(e.num_preempted_prefix_cache_queries() == 80);
  CHECK(e.num_preempted_prefix_cache_hits() == 48);
  CHECK(e.num_generation_tokens() == 80);
  CHECK(e.free_kv_blocks() == 10);
}

TEST_CASE("abort frees what a request holds in every state of disaggregated serving", "[engine][pd]") {
  Engine e(compute_toy_config(10));  // 10 blocks
  std::vector<EngineEvent> ev, log;
  const RequestOptions dec = as(RequestRole::DecodeOnly);
  // Waiting for its blocks, before any pass.
  REQUIRE(e.add_request(1, 100, 2, 0, dec));
  CHECK(e.abort_request(1));
  CHECK(e.num_requests_waiting() == 0);
  e.start_kv_loads(0, ev);
  CHECK(ev.empty());
  // Loading.
  REQUIRE(e.add_request(2, 100, 2, 0, dec));
  e.start_kv_loads(0, ev);
  REQUIRE(used_blocks(e) == 7);
  CHECK(e.abort_request(2));
  CHECK(used_blocks(e) == 0);
  CHECK(e.num_kv_loading() == 0);
  CHECK(e.num_requests_waiting() == 0);
  CHECK_FALSE(e.kv_loaded(2, 0));
  CHECK_FALSE(e.abort_request(2));
  // Loaded, waiting to run.
  REQUIRE(e.add_request(3, 100, 2, 0, dec));
  e.start_kv_loads(0, ev);
  REQUIRE(e.kv_loaded(3, 0));
  CHECK(e.has_work());
  CHECK(e.abort_request(3));
  CHECK(used_blocks(e) == 0);
  CHECK_FALSE(e.has_work());
  // Held after PrefillDone; and a DecodeOnly request blocked behind the held blocks.
  REQUIRE(e.add_request(4, 100, 1, 0, with_prefix(5, 64, RequestRole::PrefillOnly)));
  Micros now = step_pd(e, 0, log);
  REQUIRE(e.num_kv_held() == 1);
  REQUIRE(e.add_request(5, 100, 2, now, dec));
  ev.clear();
  e.start_kv_loads(now, ev);
  CHECK(ev.empty());  // 7 blocks do not fit in 3
  CHECK(e.abort_request(5));
  CHECK(e.abort_request(4));
  CHECK(e.num_kv_held() == 0);
  CHECK(used_blocks(e) == 0);
  CHECK_FALSE(e.release_kv(4));
  CHECK(e.cached_prefix_tokens(5, 64) == 64);
  // Loading with a local hit: its hold on the prefix blocks goes, they stay cached.
  REQUIRE(e.add_request(6, 100, 2, now, with_prefix(5, 64, RequestRole::DecodeOnly)));
  e.start_kv_loads(now, ev);
  CHECK(same_events({ev.back()}, {Ev{Ev::KvLoadStarted, 6, now, 35}}));
  CHECK(used_blocks(e) == 7);
  CHECK(e.abort_request(6));
  CHECK(used_blocks(e) == 0);
  CHECK(e.cached_prefix_tokens(5, 64) == 64);
  CHECK_FALSE(e.has_work());
}

TEST_CASE("ForwardPassMetrics: each iteration's scheduled and queued requests, a macro step's sub-steps, the idle heartbeat", "[engine][fpm]") {
  for (const bool lazy : {false, true}) {
    CAPTURE(lazy);
    EngineConfig c = toy_config(10);  // 10 blocks of 16 tokens; every step 10 ms
    c.max_num_batched_tokens = 32;
    c.max_decode_substeps = 64;
    c.lazy_decode = lazy;
    c.record_forward_passes = true;
    Engine e(c);
    std::vector<EngineEvent> ev;
    ForwardPass f;
    CHECK_FALSE(e.forward_pass(0, f));  // nothing has run
    REQUIRE(e.add_request(1, 40, 10, 0));
    REQUIRE(e.add_request(2, 20, 6, 0));
    // Step 1 (0-10 ms): request 1's first 32-token chunk; request 2 waits (the budget is spent).
    REQUIRE(e.begin_step(0) == 10000);
    CHECK_FALSE(e.forward_pass(5000, f));  // the first iteration has not ended
    e.end_step(10000, ev);
    // Step 2 (10-20 ms): request 1's last 8 prompt tokens and request 2's 20, both prefill.
    REQUIRE(e.begin_step(10000) == 10000);
    REQUIRE(e.forward_pass(15000, f));  // the newest is step 1
    CHECK(f.wall == 10000);
    CHECK(f.prefill_requests == 1);
    CHECK(f.prefill_tokens == 32);
    CHECK(f.decode_requests == 0);
    CHECK(f.queued_prefill_requests == 1);
    CHECK(f.queued_prefill_tokens == 20);
    CHECK(f.queued_decode_requests == 0);
    e.end_step(20000, ev);
    // Step 3: both decode, unchanged until request 2 samples its 6th token: a macro step of 5
    // sub-steps (20-70 ms). Its contexts at the first: 40 and 20 computed tokens.
    REQUIRE(e.begin_step(20000) == 50000);
    REQUIRE(e.forward_pass(25000, f));  // still step 2
    CHECK(f.prefill_requests == 2);
    CHECK(f.prefill_tokens == 28);
    CHECK(f.queued_prefill_requests == 0);
    REQUIRE(e.forward_pass(45000, f));  // sub-steps 0 and 1 have ended: the newest is sub-step 1
    CHECK(f.wall == 10000);
    CHECK(f.prefill_requests == 0);
    CHECK(f.decode_requests == 2);
    CHECK(f.decode_kv_tokens == 62);
    REQUIRE(e.forward_pass(50000, f));  // sub-step 2 ends at 50 ms exactly
    CHECK(f.decode_kv_tokens == 64);
    e.end_step(70000, ev);
    // Request 1 decodes alone, 4 more tokens (70-110 ms); the newest iteration is the macro step's
    // last sub-step, contexts 44 and 24.
    REQUIRE(e.has_work());
    REQUIRE(e.begin_step(70000) == 40000);
    REQUIRE(e.forward_pass(70000, f));
    CHECK(f.wall == 10000);
    CHECK(f.decode_requests == 2);
    CHECK(f.decode_kv_tokens == 68);
    e.end_step(110000, ev);
    CHECK_FALSE(e.has_work());
    REQUIRE(e.forward_pass(150000, f));  // idle: the heartbeat, all zeros
    CHECK(f.wall == 0);
    CHECK(f.decode_requests == 0);
    CHECK(f.decode_kv_tokens == 0);
    // A request after the idle gap: until its first iteration ends, the newest is still the heartbeat.
    REQUIRE(e.add_request(3, 16, 1, 200000));
    REQUIRE(e.begin_step(200000) == 10000);
    REQUIRE(e.forward_pass(205000, f));
    CHECK(f.wall == 0);
    e.end_step(210000, ev);
    REQUIRE(e.forward_pass(210000, f));
    CHECK(f.wall == 0);  // idle again
  }
}

TEST_CASE("ForwardPassMetrics: remote KV loading and preempted requests queue as decode", "[engine][fpm][pd]") {
  EngineConfig c = compute_toy_config(100);
  c.record_forward_passes = true;
  Engine e(c);
  std::vector<EngineEvent> ev;
  // A DecodeOnly request's blocks are allocated while the engine is idle; it waits for its KV.
  REQUIRE(e.add_request(1, 100, 3, 0, as(RequestRole::DecodeOnly)));
  e.start_kv_loads(0, ev);
  REQUIRE(e.num_kv_loading() == 1);
  // An ordinary request runs meanwhile (64 tokens, 1 ms + 6.4 ms).
  REQUIRE(e.add_request(2, 64, 2, 0));
  const Micros d = e.begin_step(0, ev);
  REQUIRE(d == 7400);
  e.end_step(d, ev);
  REQUIRE(e.begin_step(d, ev) > 0);
  ForwardPass f;
  REQUIRE(e.forward_pass(d + 1, f));
  CHECK(f.prefill_requests == 1);
  CHECK(f.prefill_tokens == 64);
  CHECK(f.queued_prefill_requests == 0);
  CHECK(f.queued_decode_requests == 1);     // WAITING_FOR_REMOTE_KVS
  CHECK(f.queued_decode_kv_tokens == 99);   // the prompt less its last token, loaded from the prefill side
}

// The 70B profile at TP4 and TP8, derived from the TP2 calibration with the NVLink all-reduces a
// token pays (engine_profiles.cpp), checked against the two sourced figures for this model on H100
// (real-systems.md §7.3): TP8 spends 35 % of its prefill time in NCCL all-reduce, and two TP4 replicas
// serve 2,048-token prefills 27 % faster than one TP8 on the same 8 GPUs.
TEST_CASE("TP4 and TP8 of the 70B profile reproduce the sourced all-reduce share and TP4-over-TP8 gain", "[engine][tp]") {
  const auto prefill_run = [](const std::string& profile, int replicas, int clients) {
    Json sc = Json::parse(R"({"duration_s": 600, "seed": 1,
      "workload": {"prompt_tokens": {"kind": "fixed", "mean": 2048, "min": 1, "max": 4096}, "output_tokens": {"kind": "fixed", "mean": 1, "min": 1, "max": 16}, "start_spread_s": 5},
      "autoscaler": {"strategy": "fixed"}})");
    sc["engine"] = {{"profile", profile}};
    sc["autoscaler"]["replicas"] = replicas;
    sc["workload"]["concurrency"] = clients;
    return api::run(dump_json(sc)).at("summary");
  };
  // One request at a time on TP8: its TTFT is one 2,048-token prefill step; the all-reduce share of it.
  const Json lone = prefill_run("llama-3.3-70b-fp8-tp8-h100-sxm5", 1, 1);
  const double share = 2048 * allreduce_s_per_token(8) / lone.at("ttft_p50_s").get<double>();
  CHECK(share > 0.28);
  CHECK(share < 0.42);
  // Saturated: 2 × TP4 against 1 × TP8, prompts per second.
  const double tp4 = prefill_run("llama-3.3-70b-fp8-tp4-h100-sxm5", 2, 32).at("num_completed").get<double>();
  const double tp8 = prefill_run("llama-3.3-70b-fp8-tp8-h100-sxm5", 1, 32).at("num_completed").get<double>();
  CHECK(tp4 / tp8 > 1.20);
  CHECK(tp4 / tp8 < 1.35);
  // The derivation keeps the model: the same weights and KV per token in all, split over more GPUs.
  for (int tp : {4, 8}) {
    const EngineProfile p = llama_3_3_70b_fp8_h100_sxm5_at_tp(tp);
    CHECK(p.weights_gib_per_gpu * tp == Approx(33.8 * 2));
    CHECK(p.kv_bytes_per_token == engine_profile("llama-3.3-70b-fp8-tp2-h100-sxm5").kv_bytes_per_token);
    CHECK(p.step_token_s < engine_profile("llama-3.3-70b-fp8-tp2-h100-sxm5").step_token_s);
  }
  CHECK(tensor_parallel_variants("llama-3.3-70b-fp8-tp4-h100-sxm5").size() == 3);
  CHECK(tensor_parallel_variants("llama-3.1-405b-bf16-tp8-pp2-h100-sxm5") == std::vector<std::string>{"llama-3.1-405b-bf16-tp8-pp2-h100-sxm5"});
}
