// The vLLM-V1-like replica engine: scheduler, paged KV accounting and step time (see engine.hpp).
#include "serving/engine.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "gpuscale/errors.hpp"

namespace gpuscale {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

// What a step's duration depends on (engine.hpp, EngineProfile).
struct StepLoad {
  std::int64_t tokens = 0;     // scheduled tokens
  std::int64_t pairs = 0;      // causal attention (query, key) pairs
  std::int64_t kv_tokens = 0;  // KV tokens read
};

// A chunk of n new tokens after `computed` cached ones: new token k (1-based) attends to the cached
// tokens and to k new ones.
inline void add_chunk(StepLoad& load, int computed, int n) {
  load.tokens += n;
  load.kv_tokens += static_cast<std::int64_t>(computed) + n;
  load.pairs += static_cast<std::int64_t>(n) * computed + static_cast<std::int64_t>(n) * (n + 1) / 2;
}

constexpr std::int64_t kPsPerMicro = 1'000'000;

// A coefficient of the profile in integer picoseconds. Integers make a step's time exact, so a run
// of decode steps can be summed in closed form (Engine::macro_elapsed) with the same result as
// step by step.
std::int64_t to_ps(double seconds, const char* name) {
  if (!(seconds >= 0 && seconds <= 1))
    throw InputError("/engine/profile", std::string(name) + " must be from 0 to 1 s");
  return static_cast<std::int64_t>(seconds * 1e12 + 0.5);
}

// Σ_{i=0}^{n-1} floor((a·i + b) / m) for m > 0, in O(log m) by Euclid-like reduction (the AtCoder
// Library's floor_sum). The caller keeps a·n + b, after reducing a and b modulo m, below 2^64.
std::uint64_t floor_sum(std::uint64_t n, std::uint64_t m, std::uint64_t a, std::uint64_t b) {
  std::uint64_t sum = 0;
  while (true) {
    if (a >= m) {
      sum += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const std::uint64_t y_max = a * n + b;
    if (y_max < m) break;
    n = y_max / m;
    b = y_max % m;
    std::swap(m, a);
  }
  return sum;
}

}  // namespace

std::int64_t Engine::compute_num_kv_blocks(const EngineConfig& config) {
  const EngineProfile& p = config.profile;
  // vLLM's memory profiling (vllm/v1/worker/gpu_worker.py determine_available_memory): the KV cache
  // gets requested memory (total × gpu_memory_utilization) minus weights, the activation peak of a
  // max_num_batched_tokens dummy run and non-torch memory (NCCL, CUDA graphs); the activation reserve
  // stands for the last two. Each GPU holds its tensor-parallel share of the KV heads, so a block
  // costs block_size × kv_bytes_per_token / TP bytes on each GPU.
  const double kv_bytes_per_gpu =
      (p.gpu_memory_gib * config.gpu_memory_utilization - p.weights_gib_per_gpu -
       p.activation_reserve_gib_per_gpu) * kBytesPerGiB;
  const double block_bytes_per_gpu =
      static_cast<double>(config.block_size) * p.kv_bytes_per_token / p.tensor_parallel;
  if (kv_bytes_per_gpu <= 0 || block_bytes_per_gpu <= 0) return 0;
  return static_cast<std::int64_t>(std::floor(kv_bytes_per_gpu / block_bytes_per_gpu));
}

Engine::Engine(const EngineConfig& config) : config_(config) {
  const EngineProfile& p = config_.profile;
  cost_.base_ps = to_ps(p.step_base_s, "step_base_s");
  cost_.weights_ps = to_ps(p.step_weights_s, "step_weights_s");
  cost_.kv_token_ps = to_ps(p.step_kv_token_s, "step_kv_token_s");
  cost_.token_ps = to_ps(p.step_token_s, "step_token_s");
  cost_.pair_ps = to_ps(p.step_pair_s, "step_pair_s");
  if (config_.block_size < 1) throw InputError("/engine/block_size", "must be at least 1");
  if ((config_.block_size & (config_.block_size - 1)) == 0) {
    block_shift_ = 0;
    while ((1 << block_shift_) < config_.block_size) ++block_shift_;
  }
  if (config_.max_num_seqs < 1) throw InputError("/engine/max_num_seqs", "must be at least 1");
  if (config_.max_num_batched_tokens < 1)
    throw InputError("/engine/max_num_batched_tokens", "must be at least 1");
  if (config_.profile.tensor_parallel < 1) throw InputError("/engine/profile", "tensor_parallel must be at least 1");
  const std::int64_t blocks = compute_num_kv_blocks(config_);
  if (blocks <= 0)
    throw InputError("/engine/gpu_memory_utilization",
                     "no memory left for the KV cache after the weights and the activation reserve "
                     "(vLLM: \"No available memory for the cache blocks\")");
  total_blocks_ = static_cast<int>(std::min<std::int64_t>(blocks, 1 << 30));
  free_blocks_ = total_blocks_;
  free_queue_.push_back(FreeSegment{kNoOwner, total_blocks_});
  // vLLM refuses to start when one max_model_len sequence does not fit in the KV cache and tells
  // the operator to lower --max-model-len; the lab lowers it instead, so every memory setting runs.
  const std::int64_t capacity_tokens = static_cast<std::int64_t>(total_blocks_) * config_.block_size;
  const int wanted = config_.max_model_len > 0 ? config_.max_model_len : config_.profile.max_model_len;
  max_model_len_ = static_cast<int>(
      std::min<std::int64_t>(std::min<std::int64_t>(wanted > 0 ? wanted : capacity_tokens, capacity_tokens),
                             1 << 30));
  // vLLM claims its whole budget at start-up (weights, activation pool, KV), so the frame buffer in
  // use is constant from then on.
  fb_used_mib_ = config_.profile.gpu_memory_gib * config_.gpu_memory_utilization * 1024.0;
  // The largest step (every KV token read, a full token budget of prefill against a full context)
  // must stay far below 2^63 ps, so that step_micros and macro_elapsed cannot overflow.
  const double worst_kv = static_cast<double>(capacity_tokens) + config_.max_num_batched_tokens;
  const double worst_pairs = static_cast<double>(config_.max_num_batched_tokens) * (max_model_len_ + config_.max_num_batched_tokens);
  const double worst_ps = static_cast<double>(cost_.base_ps) + static_cast<double>(cost_.weights_ps) +
                          static_cast<double>(cost_.kv_token_ps) * worst_kv +
                          static_cast<double>(cost_.token_ps) * config_.max_num_batched_tokens +
                          static_cast<double>(cost_.pair_ps) * worst_pairs;
  if (worst_ps > 1e18) throw InputError("/engine/profile", "step-time coefficients too large: a step could exceed 10^6 s");
  running_.reserve(static_cast<std::size_t>(std::min(config_.max_num_seqs, 4096)));
  batch_.reserve(running_.capacity() + 1);
}

// --- request slots -------------------------------------------------------------------------------

std::uint32_t Engine::new_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  slots_.emplace_back();
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

void Engine::release_slot(std::uint32_t slot) {
  const std::uint32_t id = slots_[slot].id;
  if (const std::uint32_t* at = slot_of_.find(id); at && *at == slot) slot_of_.erase(id);
  slots_[slot] = Request{};
  free_slots_.push_back(slot);
}

// --- the free block queue (vllm/v1/core/block_pool.py FreeKVCacheBlockQueue) ---------------------

void Engine::free_plain(int n) {
  if (n <= 0) return;
  free_blocks_ += n;
  if (!free_queue_.empty() && free_queue_.back().owner == kNoOwner) {
    free_queue_.back().count += n;
  } else {
    free_queue_.push_back(FreeSegment{kNoOwner, n});
  }
}

void Engine::take_free(int n) {
  free_blocks_ -= n;
  while (n > 0) {
    FreeSegment& seg = free_queue_.front();
    const int t = std::min(n, seg.count);
    seg.count -= t;
    n -= t;
    // Evicting a preempted request's cached blocks: they were freed tail first, so it keeps a prefix.
    if (seg.owner != kNoOwner) slots_[seg.owner].cached_blocks -= t;
    if (seg.count == 0) {
      free_queue_.pop_front();
      ++free_queue_head_id_;
    }
  }
  // Segments emptied by readmission may now be at the head.
  while (!free_queue_.empty() && free_queue_.front().count == 0) {
    free_queue_.pop_front();
    ++free_queue_head_id_;
  }
}

Engine::FreeSegment& Engine::segment_of(const Request& r) {
  return free_queue_.at(static_cast<std::size_t>(r.cached_segment - free_queue_head_id_));
}

// --- requests ------------------------------------------------------------------------------------

bool Engine::add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros /*now*/) {
  if (prompt_tokens < 1 || output_tokens < 1) return false;
  if (static_cast<std::int64_t>(prompt_tokens) + output_tokens > max_model_len_) return false;
  const std::uint32_t slot = new_slot();
  Request& r = slots_[slot];
  r.id = id;
  r.prompt_tokens = prompt_tokens;
  r.output_tokens = output_tokens;
  waiting_.push_back(slot);
  slot_of_.set(id, slot);
  return true;
}

bool Engine::abort_request(std::uint32_t id) {
  const std::uint32_t* at = slot_of_.find(id);
  if (!at) return false;
  const std::uint32_t slot = *at;
  Request& r = slots_[slot];
  if (r.gone || r.aborted) return false;
  for (std::size_t i = 0; i < running_.size(); ++i) {
    if (running_[i] != slot) continue;
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    free_plain(r.num_blocks);
    r.num_blocks = 0;
    if (in_batch(slot)) {
      r.gone = true;  // end_step skips it and releases the slot
    } else {
      release_slot(slot);
    }
    return true;
  }
  // Waiting: as if removed from the queue (nothing reads past the head but the count), released
  // when it reaches the head.
  if (r.cached_blocks > 0) segment_of(r).owner = kNoOwner;  // still free, no longer anyone's
  r.cached_blocks = 0;
  r.aborted = true;
  ++aborted_waiting_;
  slot_of_.erase(id);
  return true;
}

void Engine::drop_aborted_head() {
  while (!waiting_.empty() && slots_[waiting_.front()].aborted) {
    const std::uint32_t slot = waiting_.front();
    waiting_.pop_front();
    --aborted_waiting_;
    slots_[slot] = Request{};
    free_slots_.push_back(slot);
  }
}

void Engine::preempt_last_running(Micros now) {
  // scheduler.py: `preempted_req = self.running.pop()`, kv_cache_manager.free(), num_computed_tokens
  // = 0, `self.waiting.prepend_request(preempted_req)`. Generated tokens are kept and will be
  // recomputed as part of the prompt.
  const std::uint32_t slot = running_.back();
  running_.pop_back();
  Request& r = slots_[slot];
  // kv_cache_manager.free() frees the blocks in reverse order, so the tail is evicted first. With
  // prefix caching the full blocks keep their hashes and stay reusable until evicted; the partial
  // last block has no hash.
  const int full = config_.enable_prefix_caching ? std::min(r.num_computed / config_.block_size, r.num_blocks) : 0;
  free_plain(r.num_blocks - full);
  if (full > 0) {
    free_blocks_ += full;
    free_queue_.push_back(FreeSegment{slot, full});
    r.cached_blocks = full;
    r.cached_segment = free_queue_head_id_ + free_queue_.size() - 1;
  }
  r.num_blocks = 0;
  r.num_computed = 0;
  waiting_.push_front(slot);
  ++num_preemptions_;
  preempted_.push_back(EngineEvent{EngineEvent::Preempted, r.id, now});
}

bool Engine::in_batch(std::uint32_t slot) const {
  if (!in_step_) return false;
  for (const Scheduled& b : batch_)
    if (b.slot == slot) return true;
  return false;
}

// --- the step ------------------------------------------------------------------------------------

Micros Engine::begin_step(Micros now) {
  batch_.clear();
  preempted_.clear();
  StepLoad load;
  int budget = config_.max_num_batched_tokens;

  // 1. RUNNING requests first, in order: a decode token each, or the next chunk of a prefill.
  const int bs = config_.block_size;
  bool preempted_any = false;
  std::size_t i = 0, num_running = running_.size();
  while (i < num_running && budget > 0) {
    const std::uint32_t slot = running_[i];
    Request& r = slots_[slot];
    const int computed = r.num_computed;
    const int n = std::min(r.prompt_tokens + r.num_output - computed, budget);
    // kv_cache_manager.allocate_slots: blocks for the computed tokens plus the new ones (most
    // decode steps still fit in the last block, so test that first, without a division).
    if (computed + n > r.num_blocks * bs) {
      const int need = blocks_for(computed + n) - r.num_blocks;
      bool preempted_self = false;
      while (need > free_blocks_ && !preempted_self) {
        preempted_self = running_.back() == slot;  // nothing left to preempt but itself
        preempt_last_running(now);
        preempted_any = true;
      }
      num_running = running_.size();
      if (preempted_self) break;
      take_free(need);
      r.num_blocks += need;
    }
    if (n == 1) {  // the common case, a decode: the chunk arithmetic without multiplications
      load.tokens += 1;
      load.kv_tokens += computed + 1;
      load.pairs += computed + 1;
    } else {
      add_chunk(load, computed, n);
    }
    batch_.emplace_back(slot, n);
    budget -= n;
    ++i;
  }

  // 2. WAITING requests FCFS, only if nothing was preempted this step (scheduler.py
  //    `if not preempted_reqs:`), while budget, max_num_seqs and free blocks allow. Chunked prefill:
  //    a prompt longer than the remaining budget is admitted with a partial chunk.
  // Whether the waiting queue admits nothing for as long as the batch then decodes unchanged: true
  // when it is empty, or when the loop below stops for a reason later pure-decode steps keep (the
  // same budget left and the same number running, no more free blocks).
  bool waiting_stays = true;
  if (!preempted_any) {
    while (budget > 0 && static_cast<int>(running_.size()) < config_.max_num_seqs) {
      drop_aborted_head();
      if (waiting_.empty()) break;
      const std::uint32_t slot = waiting_.front();
      Request& r = slots_[slot];
      const int total = r.prompt_tokens + r.num_output;
      // kv_cache_manager.get_computed_blocks: the cached prefix, at most num_tokens - 1 tokens so
      // the step still computes the logits of the last one.
      const int hit = std::min(r.cached_blocks, (total - 1) / config_.block_size);
      const int n = std::min(total - hit * config_.block_size, budget);
      const int need = blocks_for(hit * config_.block_size + n) - hit;
      if (need + hit > free_blocks_) {  // FCFS: the head waits, and so does everyone behind it
        // Later decode steps leave it the same budget and no more free blocks, but its cached prefix
        // may be evicted meanwhile: need + hit = blocks_for(min(total, hit·block_size + budget)) only
        // falls with hit, to its value at hit 0. Past that too, it waits out every sub-step.
        waiting_stays = blocks_for(std::min(total, budget)) > free_blocks_;
        break;
      }
      if (r.cached_blocks > 0) {
        // Touch the hit blocks (out of the free queue); the rest of its segment stays free, unowned.
        FreeSegment& seg = segment_of(r);
        seg.owner = kNoOwner;
        seg.count -= hit;
        free_blocks_ -= hit;
        r.cached_blocks = 0;
        r.num_blocks = hit;
        r.num_computed = hit * config_.block_size;
        num_prefix_cache_hits_ += r.num_computed;
      }
      take_free(need);
      r.num_blocks += need;
      waiting_.pop_front();
      running_.push_back(slot);
      add_chunk(load, r.num_computed, n);
      batch_.emplace_back(slot, n);
      budget -= n;
    }
  }

  in_step_ = true;
  step_start_ = now;
  substeps_ = 1;
  Micros duration = step_micros(load.tokens, load.kv_tokens, load.pairs);
  // A pure-decode batch that the waiting queue cannot join (nothing waits, or its head does not fit,
  // as when the KV cache is full) runs identical steps until something changes; plan them as one
  // macro step (simulation speed only: every sub-step is timed exactly as a step would be).
  if (!preempted_any && waiting_stays && batch_.size() == running_.size() &&
      static_cast<std::int64_t>(batch_.size()) == load.tokens && config_.max_decode_substeps > 1) {
    decode_kv0_ = load.kv_tokens;
    substeps_ = plan_substeps();
    duration = macro_elapsed(substeps_);
  }
  step_end_ = now + duration;
  return duration;
}

std::int64_t Engine::step_ps(std::int64_t tokens, std::int64_t kv_tokens, std::int64_t pairs) const {
  const std::int64_t memory = cost_.weights_ps + cost_.kv_token_ps * kv_tokens;
  const std::int64_t compute = cost_.token_ps * tokens + cost_.pair_ps * pairs;
  return cost_.base_ps + std::max(memory, compute);
}

Micros Engine::step_micros(std::int64_t tokens, std::int64_t kv_tokens, std::int64_t pairs) const {
  return std::max<Micros>(1, (step_ps(tokens, kv_tokens, pairs) + kPsPerMicro / 2) / kPsPerMicro);
}

Micros Engine::macro_elapsed(int n) const {
  // Sub-step j (from 0) is the decode step of the batch's B sequences after j earlier ones: it
  // schedules B tokens and reads kv0 + j·B KV tokens, each new token attending to its whole context
  // (as many pairs as KV tokens). So its time in ps is base + max(memory(j), compute(j)), the max of
  // two lines in j, rounded to the nearest µs: step_micros of that load. Summed in closed form.
  const auto B = static_cast<std::int64_t>(batch_.size());
  const std::int64_t mem0 = cost_.weights_ps + cost_.kv_token_ps * decode_kv0_;
  const std::int64_t mem_slope = cost_.kv_token_ps * B;
  const std::int64_t comp0 = cost_.token_ps * B + cost_.pair_ps * decode_kv0_;
  const std::int64_t comp_slope = cost_.pair_ps * B;
  const std::int64_t offset = cost_.base_ps + kPsPerMicro / 2;
  // Σ over j in [from, to) of floor((offset + c0 + slope·j) / 1 µs).
  auto sum = [&](std::int64_t from, std::int64_t to, std::int64_t c0, std::int64_t slope) -> std::int64_t {
    if (to <= from) return 0;
    return static_cast<std::int64_t>(floor_sum(static_cast<std::uint64_t>(to - from), kPsPerMicro,
                                               static_cast<std::uint64_t>(slope),
                                               static_cast<std::uint64_t>(offset + c0 + slope * from)));
  };
  // memory(j) − compute(j) = d0 + ds·j changes sign at most once: find where the max switches lines.
  const std::int64_t d0 = mem0 - comp0, ds = mem_slope - comp_slope, len = n;
  std::int64_t split;  // sub-steps [0, split) take the first line, [split, n) the second
  Micros total;
  if (ds >= 0) {  // compute first, memory once it has caught up
    split = d0 >= 0 ? 0 : ds == 0 ? len : (-d0 + ds - 1) / ds;
    split = std::min(split, len);
    total = sum(0, split, comp0, comp_slope) + sum(split, len, mem0, mem_slope);
  } else {  // memory first, compute once it has caught up
    split = d0 < 0 ? 0 : d0 / -ds + 1;
    split = std::min(split, len);
    total = sum(0, split, mem0, mem_slope) + sum(split, len, comp0, comp_slope);
  }
  // Every step lasts at least 1 µs (step_micros): sub-step times never decrease, so those that
  // round to 0 are a prefix. Rare (a step shorter than 0.5 µs); count them by bisection.
  auto rounds_to_zero = [&](std::int64_t j) {
    const std::int64_t kv = decode_kv0_ + j * B;
    return step_ps(B, kv, kv) + kPsPerMicro / 2 < kPsPerMicro;
  };
  if (len > 0 && rounds_to_zero(0)) {
    std::int64_t lo = 0, hi = len;  // the first sub-step that rounds to at least 1 µs is in [lo, hi]
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (rounds_to_zero(mid)) lo = mid + 1; else hi = mid;
    }
    total += lo;
  }
  return total;
}

Micros Engine::substep_micros(std::int64_t j) const {
  const auto B = static_cast<std::int64_t>(batch_.size());
  const std::int64_t kv = decode_kv0_ + j * B;
  return step_micros(B, kv, kv);
}

int Engine::plan_substeps() {
  // Every sequence must already have its first token (so the sub-steps sample no first token) and
  // the macro step ends at the first completion.
  int k = config_.max_decode_substeps;
  for (const Scheduled& b : batch_) {
    const Request& r = slots_[b.slot];
    if (r.num_output < 1) return 1;
    k = std::min(k, r.output_tokens - r.num_output);
  }
  // The blocks the later sub-steps allocate must be free, so that no per-step schedule would have
  // preempted anything; halve k until they are.
  for (; k > 1; k /= 2) {
    std::int64_t need = 0;
    for (const Scheduled& b : batch_) {
      const Request& r = slots_[b.slot];
      need += blocks_for(r.num_computed + k) - r.num_blocks;
    }
    if (need <= free_blocks_) break;
  }
  return std::max(1, k);
}

int Engine::substeps_ending_by(Micros now) const {
  if (now >= step_end_) return substeps_;
  if (now <= step_start_) return 0;
  // Sub-steps of one macro step last nearly the same time (each reads B more KV tokens than the
  // last), so a uniform split of the elapsed time lands on or next to the answer: sum exactly up
  // to there, then walk one sub-step at a time to the last one that ends by `now`.
  const Micros elapsed = now - step_start_, length = step_end_ - step_start_;
  // (An estimate only, so a double is fine: the walk makes the answer exact.)
  int n = std::min(substeps_, static_cast<int>(static_cast<double>(elapsed) / static_cast<double>(length) * substeps_));
  Micros end = step_start_ + macro_elapsed(n);  // when sub-step n - 1 ends (n = 0: the start)
  while (end > now) end -= substep_micros(--n);
  for (Micros d; n < substeps_ && end + (d = substep_micros(n)) <= now; ++n) end += d;
  return n;
}

int Engine::substeps_started(Micros now) const {
  // Sub-step j + 1 begins when sub-step j ends; count the ends at or before `now`.
  return std::min(substeps_ending_by(now), substeps_ - 1) + 1;
}

Micros Engine::truncate_step(Micros now) {
  if (!in_step_ || substeps_ <= 1) return step_end_;
  // The first boundary strictly after `now`: a step ending exactly at `now` has already begun the next.
  const int ended = substeps_ending_by(now);
  if (ended >= substeps_) return step_end_;
  substeps_ = ended + 1;
  step_end_ = step_start_ + macro_elapsed(substeps_);
  return step_end_;
}

void Engine::end_step(Micros now, std::vector<EngineEvent>& out) {
  out.insert(out.end(), preempted_.begin(), preempted_.end());
  preempted_.clear();
  bool any_finished = false;
  std::int64_t sampled = 0;
  if (substeps_ > 1) {
    // A macro step: the later sub-steps each decoded one more token, in blocks allocated as they
    // began, so before anything below is freed. The blocks come off the head of the free queue in
    // order whoever takes them, so one take for the whole batch leaves the queue as the per-step
    // takes would.
    const int extra = substeps_ - 1;
    int need = 0;
    for (const Scheduled& s : batch_) {
      Request& r = slots_[s.slot];
      if (r.gone) continue;  // aborted during the step: released below
      const int more = blocks_for(r.num_computed + 1 + extra) - r.num_blocks;
      need += more;
      r.num_blocks += more;
      r.num_computed += extra;
      r.num_output += extra;
      sampled += extra;
    }
    take_free(need);
  }
  for (const Scheduled& s : batch_) {
    Request& r = slots_[s.slot];
    if (r.gone) {  // aborted during the step
      release_slot(s.slot);
      continue;
    }
    r.num_computed += s.num_tokens;
    if (r.num_computed < r.prompt_tokens + r.num_output) continue;  // mid-prefill chunk
    // The step computed every known token, so it sampled the next one.
    ++r.num_output;
    ++sampled;
    if (r.num_output == 1) out.push_back(EngineEvent{EngineEvent::FirstToken, r.id, now});
    if (r.num_output == r.output_tokens) {
      out.push_back(EngineEvent{EngineEvent::Finished, r.id, now});
      free_plain(r.num_blocks);  // unique prompts: its cached blocks can never hit
      r.num_blocks = 0;
      r.gone = true;
      any_finished = true;
    }
  }
  num_generation_tokens_ += sampled;
  if (any_finished) {
    // One pass keeps running_'s order, instead of an erase from the middle per finished request.
    std::size_t w = 0;
    for (std::size_t k = 0; k < running_.size(); ++k) {
      const std::uint32_t slot = running_[k];
      if (slots_[slot].gone) {
        release_slot(slot);
      } else {
        running_[w++] = slot;
      }
    }
    running_.resize(w);
  }
  batch_.clear();
  busy_before_ += now - step_start_;
  in_step_ = false;
  substeps_ = 1;
}

// --- gauges --------------------------------------------------------------------------------------

double Engine::kv_cache_usage() const {
  // vllm/v1/core/block_pool.py get_usage(): 1 - free / total (cached-but-free blocks count as free).
  return total_blocks_ > 0 ? 1.0 - static_cast<double>(free_blocks_) / total_blocks_ : 0.0;
}

double Engine::kv_cache_usage(Micros now) const {
  if (!in_step_ || substeps_ <= 1 || total_blocks_ <= 0) return kv_cache_usage();
  // Inside a macro step: the blocks the sub-steps begun by `now` would have allocated.
  const int extra = substeps_started(now) - 1;
  std::int64_t need = 0;
  for (const Scheduled& b : batch_) {
    const Request& r = slots_[b.slot];
    if (!r.gone) need += blocks_for(r.num_computed + 1 + extra) - r.num_blocks;
  }
  return 1.0 - static_cast<double>(free_blocks_ - need) / total_blocks_;
}

Micros Engine::busy_time(Micros now) const { return busy_before_ + (in_step_ ? now - step_start_ : 0); }

double Engine::fb_used_mib_per_gpu() const { return fb_used_mib_; }

}  // namespace gpuscale
