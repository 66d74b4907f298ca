// The vLLM-V1-like replica engine: scheduler, paged KV accounting and step time (see engine.hpp).
#include "serving/engine.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "gpuscale/errors.hpp"

namespace gpuscale {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;

using detail::StepLoad;

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
  // stands for the last two. Each GPU holds its tensor-parallel share of the KV heads of its pipeline
  // stage's layers, so a block costs block_size × kv_bytes_per_token / (TP × PP) bytes on each GPU.
  const double kv_bytes_per_gpu =
      (p.gpu_memory_gib * config.gpu_memory_utilization - p.weights_gib_per_gpu -
       p.activation_reserve_gib_per_gpu) * kBytesPerGiB;
  const double block_bytes_per_gpu =
      static_cast<double>(config.block_size) * p.kv_bytes_per_token / p.gpus();
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
  if (config_.profile.tensor_parallel < 1 || config_.profile.pipeline_parallel < 1) {
    throw InputError("/engine/profile", "tensor_parallel and pipeline_parallel must be at least 1");
  }
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
  lazy_ = config_.lazy_decode && config_.block_size <= kMaxLazyBlockSize;
  if (lazy_) decoder_keys_.assign(static_cast<std::size_t>(config_.block_size), 0);
}

// --- request slots -------------------------------------------------------------------------------

std::uint32_t Engine::new_slot() {
  if (!free_slots_.empty()) {
    const std::uint32_t s = free_slots_.back();
    free_slots_.pop_back();
    return s;
  }
  slots_.emplace_back();
  copies_of_.emplace_back();
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

void Engine::release_slot(std::uint32_t slot) {
  const std::uint32_t id = slots_[slot].id;
  if (const std::uint32_t* at = slot_of_.find(id); at && *at == slot) slot_of_.erase(id);
  leave(slot);
}

void Engine::leave(std::uint32_t slot) {
  if (slots_[slot].role != RequestRole::Whole) --num_roles_;
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
  take_from_head(n);
}

void Engine::take_from_head(int n) {
  while (n > 0) {
    FreeSegment& seg = free_queue_.front();
    // A cached prefix block: the same loop out of line (no call in this one keeps it lean).
    if (seg.owner != kNoOwner && (seg.owner & kCopyBit)) return take_copies_from_head(n);
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

void Engine::take_copies_from_head(int n) {
  // take_from_head's loop, evicting the cached prefix blocks it meets.
  while (n > 0) {
    FreeSegment& seg = free_queue_.front();
    const int t = std::min(n, seg.count);
    seg.count -= t;
    n -= t;
    if (seg.owner != kNoOwner) {
      if (seg.owner & kCopyBit) {
        // block_pool.py _maybe_evict_cached_block: a cached prefix block loses its hash.
        if (t > 0) evict_copy(seg.owner & ~kCopyBit);
      } else {
        slots_[seg.owner].cached_blocks -= t;
      }
    }
    if (seg.count == 0) {
      free_queue_.pop_front();
      ++free_queue_head_id_;
    }
  }
  while (!free_queue_.empty() && free_queue_.front().count == 0) {
    free_queue_.pop_front();
    ++free_queue_head_id_;
  }
}

Engine::FreeSegment& Engine::segment_of(const Request& r) {
  return free_queue_.at(static_cast<std::size_t>(r.cached_segment - free_queue_head_id_));
}

void Engine::free_request_blocks(std::uint32_t slot, bool keep_own, std::uint64_t* plain_at) {
  // kv_cache_manager.free → single_type_kv_cache_manager.free: block_pool.free_blocks(reversed(blocks)).
  Request& r = slots_[slot];
  const int own = r.num_blocks - r.num_copies;
  // With prefix caching a preempted request's own full blocks keep their hashes and stay reusable
  // (by it alone: its prompt is unique past the prefix) until evicted; the partial last block has no
  // hash. A finished or aborted request's own blocks can never hit again.
  const int own_full = keep_own && config_.enable_prefix_caching
                           ? std::max(0, std::min(r.num_computed / config_.block_size, r.num_blocks) - r.num_copies)
                           : 0;
  free_plain(own - own_full);
  if (plain_at) *plain_at = free_queue_head_id_ + free_queue_.size() - 1;  // the run they joined
  if (own_full > 0) {
    free_blocks_ += own_full;
    free_queue_.push_back(FreeSegment{slot, own_full});
    r.cached_blocks = own_full;
    r.cached_segment = free_queue_head_id_ + free_queue_.size() - 1;
  }
  if (r.num_copies > 0) {
    std::vector<std::uint32_t>& held = copies_of_[slot];
    for (std::size_t k = held.size(); k-- > 0;) release_copy(held[k]);
    held.clear();
    r.num_copies = 0;
  }
  r.num_blocks = 0;
}

// --- the prefix cache (vllm/v1/core/block_pool.py, kv_cache_utils.py) -------------------------------
//
// Blocks are found by a chain of hashes, each over a full block's tokens and its parent's hash, so a
// request hits the longest run of its leading full blocks that are cached. Here the tokens are known
// only as "the first prefix_tokens of prefix_id", so a cached block is (prefix, index) and a request's
// lookup walks its prefix's blocks from 0 (kv_cache_coordinator find_longest_cache_hit).

const Engine::Prefix* Engine::find_prefix(std::uint32_t prefix_id) const {
  const std::uint32_t* at = prefix_of_.find(prefix_id);
  return at ? &prefixes_[*at] : nullptr;
}

int Engine::prefix_run(const Request& r, int limit, int& free_in_run) const {
  free_in_run = 0;
  const Prefix* p = limit > 0 ? find_prefix(r.prefix_id) : nullptr;
  if (!p) return 0;
  limit = std::min(limit, static_cast<int>(p->blocks.size()));
  int i = 0;
  for (; i < limit; ++i) {
    const std::uint32_t c = p->blocks[static_cast<std::size_t>(i)].first;
    if (c == kNone) break;
    if (copies_[c].refs == 0) ++free_in_run;
  }
  return i;
}

void Engine::touch_prefix(std::uint32_t slot, int blocks) {
  // block_pool.touch: a hit block gains a holder; one with none leaves the free queue.
  if (blocks <= 0) return;
  Request& r = slots_[slot];
  const Prefix& p = prefixes_[*prefix_of_.find(r.prefix_id)];
  std::vector<std::uint32_t>& held = copies_of_[slot];
  for (int i = 0; i < blocks; ++i) {
    const std::uint32_t c = p.blocks[static_cast<std::size_t>(i)].first;
    PrefixCopy& copy = copies_[c];
    if (copy.refs++ == 0) {
      free_queue_.at(static_cast<std::size_t>(copy.queue_pos - free_queue_head_id_)).count = 0;  // dropped at the head
      --free_blocks_;
    }
    held.push_back(c);
  }
  r.num_copies = blocks;
}

void Engine::cache_prefix_blocks(std::uint32_t slot) {
  // kv_cache_manager.cache_blocks → block_pool.cache_full_blocks: the prefix blocks this request has
  // now computed in full get their hashes, so later lookups find them. Not de-duplicated: another
  // request may have computed the same block meanwhile, and both stay cached.
  Request& r = slots_[slot];
  const int full = std::min(r.num_computed / config_.block_size, r.prefix_blocks);
  if (full <= r.num_copies) return;
  std::uint32_t pi;
  if (const std::uint32_t* at = prefix_of_.find(r.prefix_id)) {
    pi = *at;
  } else {
    if (!free_prefixes_.empty()) {
      pi = free_prefixes_.back();
      free_prefixes_.pop_back();
    } else {
      pi = static_cast<std::uint32_t>(prefixes_.size());
      prefixes_.emplace_back();
    }
    prefixes_[pi].id = r.prefix_id;
    prefix_of_.set(r.prefix_id, pi);
  }
  Prefix& p = prefixes_[pi];
  if (static_cast<int>(p.blocks.size()) < full) p.blocks.resize(static_cast<std::size_t>(full));
  std::vector<std::uint32_t>& held = copies_of_[slot];
  for (int i = r.num_copies; i < full; ++i) {
    std::uint32_t c;
    if (!free_copies_.empty()) {
      c = free_copies_.back();
      free_copies_.pop_back();
    } else {
      c = static_cast<std::uint32_t>(copies_.size());
      copies_.emplace_back();
    }
    PrefixChain& chain = p.blocks[static_cast<std::size_t>(i)];
    copies_[c] = PrefixCopy{pi, i, 1, chain.last, kNone, 0};
    if (chain.last != kNone) copies_[chain.last].next = c; else chain.first = c;
    chain.last = c;
    ++p.copies;
    held.push_back(c);
  }
  r.num_copies = full;
}

void Engine::release_copy(std::uint32_t c) {
  PrefixCopy& copy = copies_[c];
  if (--copy.refs > 0) return;
  free_blocks_ += 1;
  free_queue_.push_back(FreeSegment{kCopyBit | c, 1});
  copy.queue_pos = free_queue_head_id_ + free_queue_.size() - 1;
}

void Engine::evict_copy(std::uint32_t c) {
  const PrefixCopy copy = copies_[c];
  Prefix& p = prefixes_[copy.prefix];
  PrefixChain& chain = p.blocks[static_cast<std::size_t>(copy.index)];
  if (copy.prev != kNone) copies_[copy.prev].next = copy.next; else chain.first = copy.next;
  if (copy.next != kNone) copies_[copy.next].prev = copy.prev; else chain.last = copy.prev;
  free_copies_.push_back(c);
  if (--p.copies == 0) {  // nothing of it cached any more
    prefix_of_.erase(p.id);
    p.blocks.clear();
    free_prefixes_.push_back(copy.prefix);
  }
}

int Engine::cached_prefix_tokens(std::uint32_t prefix_id, int prefix_tokens) const {
  if (!config_.enable_prefix_caching || prefix_id == 0 || prefix_id == detail::IdSlotMap::kEmpty || prefix_tokens < config_.block_size) return 0;
  Request probe;
  probe.prefix_id = prefix_id;
  int free_in_run = 0;
  return prefix_run(probe, prefix_tokens / config_.block_size, free_in_run) * config_.block_size;
}

// --- requests ------------------------------------------------------------------------------------

std::uint32_t Engine::enqueue(std::uint32_t id, int prompt_tokens, int output_tokens) {
  const std::uint32_t slot = new_slot();
  Request& r = slots_[slot];
  r.id = id;
  r.prompt_tokens = prompt_tokens;
  r.output_tokens = output_tokens;
  waiting_.push_back(slot);
  slot_of_.set(id, slot);
  return slot;
}

bool Engine::add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros /*now*/) {
  if (prompt_tokens < 1 || output_tokens < 1) return false;
  if (static_cast<std::int64_t>(prompt_tokens) + output_tokens > max_model_len_) return false;
  enqueue(id, prompt_tokens, output_tokens);
  return true;
}

bool Engine::add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros now, const RequestOptions& options) {
  if (options.prefix_id == 0 && options.role == RequestRole::Whole) return add_request(id, prompt_tokens, output_tokens, now);
  if (prompt_tokens < 1 || output_tokens < 1) return false;
  // The disaggregated proxy sends the prefill engine max_tokens=1 (do_remote_decode).
  if (options.role == RequestRole::PrefillOnly) output_tokens = 1;
  if (static_cast<std::int64_t>(prompt_tokens) + output_tokens > max_model_len_) return false;
  if (options.prefix_id != 0 && (options.prefix_id == detail::IdSlotMap::kEmpty || options.prefix_tokens < 0 ||
                                 options.prefix_tokens > prompt_tokens))
    return false;
  const std::uint32_t slot = enqueue(id, prompt_tokens, output_tokens);
  Request& r = slots_[slot];
  if (options.prefix_id != 0 && config_.enable_prefix_caching) {
    r.prefix_id = options.prefix_id;
    r.prefix_blocks = options.prefix_tokens / config_.block_size;
  }
  r.role = options.role;
  r.special = r.prefix_blocks > 0 || r.role != RequestRole::Whole;
  if (r.role != RequestRole::Whole) ++num_roles_;
  if (r.role == RequestRole::DecodeOnly) {
    r.phase = Phase::NeedsRemote;
    ++num_needs_remote_;
  }
  return true;
}

bool Engine::abort_request(std::uint32_t id) {
  const std::uint32_t* at = slot_of_.find(id);
  if (!at) return false;
  const std::uint32_t slot = *at;
  Request& r = slots_[slot];
  if (r.gone || r.aborted) return false;
  if (r.running) {
    if (r.decoding) {
      remove_decoder(slot, in_step_ && lazy_step_);  // its fields up to date; a lazy decoder is never in batch_
    } else if (const auto at = std::find(prefilling_.begin(), prefilling_.end(), slot); at != prefilling_.end()) {
      prefilling_.erase(at);  // (during a step run request by request, prefilling_ is empty)
    }
    r.running = false;  // its entry in running_ is now stale
    --running_live_;
    if (in_step_ && substeps_ > 1) {
      // A decoder of the macro step under way. The blocks its sub-steps begun by the abort took off
      // the free queue's head, and the tokens of those that ended, depend on when it happened:
      // truncate_step(now) takes them and adds them to the run of its own blocks freed here.
      MacroAbort m{r.num_computed, r.num_blocks, 0};
      free_request_blocks(slot, false, &m.plain_at);
      macro_aborts_.push_back(m);
      end_step_extras_ = true;
    } else {
      free_finished(slot);
    }
    if (in_batch(slot)) {
      r.gone = true;  // end_step skips it and releases the slot
    } else {
      release_slot(slot);
    }
    return true;
  }
  if (r.phase == Phase::Held) {  // after PrefillDone: the decode side will never read it
    free_request_blocks(slot, false);
    --num_held_;
    release_slot(slot);
    return true;
  }
  // Waiting: as if removed from the queue (nothing reads past the head but the count), released
  // when it reaches the head. A DecodeOnly request may hold blocks (its KV loading or loaded).
  if (r.cached_blocks > 0) segment_of(r).owner = kNoOwner;  // still free, no longer anyone's
  r.cached_blocks = 0;
  if (r.num_blocks > 0) free_request_blocks(slot, false);
  if (r.phase == Phase::Loading) --num_loading_;
  if (r.phase == Phase::NeedsRemote) --num_needs_remote_;
  r.phase = Phase::Ready;
  r.aborted = true;
  ++aborted_waiting_;
  slot_of_.erase(id);
  return true;
}

bool Engine::kv_loaded(std::uint32_t id, Micros /*now*/) {
  const std::uint32_t* at = slot_of_.find(id);
  if (!at || slots_[*at].phase != Phase::Loading) return false;
  const std::uint32_t slot = *at;
  Request& r = slots_[slot];
  // scheduler.py _update_waiting_for_remote_kv: the received blocks are cached (cache_blocks) and the
  // request waits again with num_computed_tokens = prompt − 1: the last prompt token is computed
  // here, which gives the logits of the first output token.
  r.phase = Phase::Ready;
  --num_loading_;
  r.num_computed = r.prompt_tokens - 1;
  if (r.prefix_blocks > r.num_copies) cache_prefix_blocks(slot);
  return true;
}

bool Engine::release_kv(std::uint32_t id) {
  const std::uint32_t* at = slot_of_.find(id);
  if (!at || slots_[*at].phase != Phase::Held) return false;
  // nixl_connector.py: the decode side's read notification (get_finished → finished_sending) lets the
  // scheduler free the blocks request_finished kept (delay_free_blocks): _free_blocks, as a finished
  // request's.
  const std::uint32_t slot = *at;
  free_request_blocks(slot, false);
  --num_held_;
  release_slot(slot);
  return true;
}

void Engine::drop_aborted_head() {
  while (!waiting_.empty() && slots_[waiting_.front()].aborted) {
    const std::uint32_t slot = waiting_.front();
    waiting_.pop_front();
    --aborted_waiting_;
    leave(slot);
  }
}

void Engine::preempt_last_running(Micros now) {
  // scheduler.py: `preempted_req = self.running.pop()`, kv_cache_manager.free(), num_computed_tokens
  // = 0, `self.waiting.prepend_request(preempted_req)`. Generated tokens are kept and will be
  // recomputed as part of the prompt.
  const std::uint32_t slot = running_.back().slot;
  running_.pop_back();
  --running_live_;
  Request& r = slots_[slot];
  r.running = false;
  // kv_cache_manager.free() frees the blocks in reverse order, so the tail is evicted first.
  free_request_blocks(slot, true);
  r.num_computed = 0;
  r.preempted_before = true;
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

// --- lazy decoders (EngineConfig::lazy_decode) ------------------------------------------------------

void Engine::compact_running() {
  std::size_t w = 0;
  for (const RunningEntry& e : running_)
    if (entry_live(e)) running_[w++] = e;
  running_.resize(w);
}

void Engine::admit(std::uint32_t slot) {
  Request& r = slots_[slot];
  r.running = true;
  r.seq = next_seq_++;
  running_.push_back(RunningEntry{slot, r.seq});
  ++running_live_;
  if (lazy_step_) prefilling_.push_back(slot);  // a step run request by request rebuilds it at its end
}

void Engine::add_decoder(std::uint32_t slot) {
  Request& r = slots_[slot];
  const int bs = config_.block_size;
  r.decoding = true;
  r.mark = decode_clock_;
  const std::int64_t base = r.num_computed - r.mark;
  r.offset_key = static_cast<int>(block_shift_ >= 0 ? base & (bs - 1) : ((base % bs) + bs) % bs);
  ++decoder_keys_[static_cast<std::size_t>(r.offset_key)];
  decoder_base_sum_ += base;
  ++decoders_;
  max_decoder_seq_ = std::max(max_decoder_seq_, r.seq);
  finishes_.push_back(Finish{decode_clock_ + (r.output_tokens - r.num_output), r.seq, slot});
  if (!heap_deferred_) std::push_heap(finishes_.begin(), finishes_.end(), std::greater<Finish>());
}

void Engine::remove_decoder(std::uint32_t slot, bool holds_next_block) {
  Request& r = slots_[slot];
  const std::int64_t advanced = decode_clock_ - r.mark;
  --decoder_keys_[static_cast<std::size_t>(r.offset_key)];
  decoder_base_sum_ -= r.num_computed - r.mark;
  --decoders_;
  r.num_computed += static_cast<int>(advanced);
  r.num_output += static_cast<int>(advanced);
  // Between steps it holds the blocks of its context; during a step it also holds the block its
  // token of this step may have started (begin_lazy took them for every decoder at once).
  r.num_blocks = blocks_for(r.num_computed + (holds_next_block ? 1 : 0));
  r.decoding = false;
  r.mark = 0;
}

void Engine::unlazy_all() {
  for (const RunningEntry& e : running_)
    if (entry_live(e) && slots_[e.slot].decoding) remove_decoder(e.slot, false);
  finishes_.clear();
  prefilling_.clear();
  max_decoder_seq_ = 0;
}

void Engine::relazy_all() {
  compact_running();
  finishes_.clear();
  prefilling_.clear();
  max_decoder_seq_ = 0;
  heap_deferred_ = true;  // one make_heap for all of them
  for (const RunningEntry& e : running_) {
    const Request& r = slots_[e.slot];
    if (decodes_next(r)) {
      add_decoder(e.slot);
    } else {
      prefilling_.push_back(e.slot);
    }
  }
  heap_deferred_ = false;
  std::make_heap(finishes_.begin(), finishes_.end(), std::greater<Finish>());
}

std::int64_t Engine::decoder_blocks_after(std::int64_t e) const {
  if (decoders_ == 0 || e <= 0) return 0;
  const int bs = config_.block_size;
  const int shift = clock_offset();
  // Bucket k holds the decoders whose context mod block_size is (k + shift) mod block_size. Each
  // allocates floor((offset + e) / block_size) blocks in e steps: whole blocks of e, plus one if the
  // remainder crosses the end of its last block. Only two divisions, whatever the block size.
  const std::int64_t whole = block_shift_ >= 0 ? e >> block_shift_ : e / bs;
  const int rest = static_cast<int>(e - whole * bs);
  std::int64_t crossing = 0;  // decoders with offset + rest >= block_size: offset in [bs - rest, bs)
  for (int offset = bs - rest; offset < bs; ++offset) {
    int k = offset - shift;
    if (k < 0) k += bs;
    crossing += decoder_keys_[static_cast<std::size_t>(k)];
  }
  return whole * decoders_ + crossing;
}

int Engine::decoders_needing_block() const {
  // A context that fills its last block exactly (offset 0) needs a new one for the next token.
  const int shift = clock_offset();
  return decoders_ > 0 ? decoder_keys_[static_cast<std::size_t>(shift == 0 ? 0 : config_.block_size - shift)] : 0;
}

bool Engine::begin_lazy(int& budget, StepLoad& load) {
  // The request-by-request loop gives every running request its tokens in admission order until
  // the budget runs out, preempting from the back when blocks run out. When no block runs out and
  // no decoder comes after the request at which the budget runs out, it schedules every decoder
  // and the prefills up to that one, whatever the order: their loads and block takes simply add
  // up. Check that first, without changing anything.
  std::int64_t demand = decoders_;
  std::int64_t need = decoders_needing_block();
  std::size_t scheduled = 0;  // prefills that get tokens: a prefix of prefilling_
  int last_chunk = 0;         // the last one's tokens (fewer than it has left when the budget runs out)
  for (const std::uint32_t slot : prefilling_) {
    if (demand >= budget) {
      if (scheduled == 0) return false;  // it ran out at a decoder, maybe before a prefill
      break;
    }
    const Request& r = slots_[slot];
    const int n = static_cast<int>(std::min<std::int64_t>(r.prompt_tokens + r.num_output - r.num_computed, budget - demand));
    if (demand + n >= budget && r.seq < max_decoder_seq_) return false;  // a decoder after it would get nothing
    demand += n;
    if (r.num_computed + n > r.num_blocks * config_.block_size) need += blocks_for(r.num_computed + n) - r.num_blocks;
    ++scheduled;
    last_chunk = n;
  }
  if (demand > budget || need > free_blocks_) return false;
  // The blocks come off the head of the free queue whoever takes them: one take for all.
  if (need > 0) take_free(static_cast<int>(need));
  for (std::size_t i = 0; i < scheduled; ++i) {
    Request& r = slots_[prefilling_[i]];
    const int n = i + 1 < scheduled ? r.prompt_tokens + r.num_output - r.num_computed : last_chunk;
    r.num_blocks = std::max(r.num_blocks, blocks_for(r.num_computed + n));
    add_chunk(load, r.num_computed, n);
    batch_.emplace_back(prefilling_[i], n);
  }
  // The decoders: a token each, each reading its context and the new token.
  const std::int64_t contexts = decoder_base_sum_ + decoders_ * decode_clock_ + decoders_;
  load.tokens += decoders_;
  load.kv_tokens += contexts;
  load.pairs += contexts;
  budget -= static_cast<int>(demand);
  return true;
}

void Engine::begin_request_by_request(Micros now, int& budget, StepLoad& load, bool& preempted_any) {
  // RUNNING requests first, in order: a decode token each, or the next chunk of a prefill.
  const int bs = config_.block_size;
  std::size_t i = 0, num_running = running_.size();
  while (i < num_running && budget > 0) {
    const std::uint32_t slot = running_[i].slot;
    Request& r = slots_[slot];
    const int computed = r.num_computed;
    const int n = std::min(r.prompt_tokens + r.num_output - computed, budget);
    // kv_cache_manager.allocate_slots: blocks for the computed tokens plus the new ones (most
    // decode steps still fit in the last block, so test that first, without a division).
    if (computed + n > r.num_blocks * bs) {
      const int need = blocks_for(computed + n) - r.num_blocks;
      bool preempted_self = false;
      while (need > free_blocks_ && !preempted_self) {
        preempted_self = running_.back().slot == slot;  // nothing left to preempt but itself
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
}

// --- the waiting queue (scheduler.py schedule(), "Next, schedule the WAITING requests") --------------

Engine::Admission Engine::admission_of(const Request& r, int budget) const {
  const int bs = config_.block_size;
  const int total = r.prompt_tokens + r.num_output;
  Admission a;
  if (r.num_computed > 0) {
    // A DecodeOnly request whose KV arrived: no lookup (num_computed_tokens > 0), its blocks held.
    a.n = std::min(total - r.num_computed, budget);
    a.need = std::max(0, blocks_for(r.num_computed + a.n) - r.num_blocks);
    return a;
  }
  // kv_cache_manager.get_computed_blocks: the cached leading blocks, at most num_tokens − 1 tokens
  // so the step still computes the logits of the last one. First its prefix's blocks; a preempted
  // request's own blocks follow them only if the whole prefix is there (the hash chain).
  const int cap = (total - 1) / bs;
  int free_prefix = 0;
  a.prefix_hit = r.prefix_blocks > 0 ? prefix_run(r, std::min(r.prefix_blocks, cap), free_prefix) : 0;
  const int own = r.cached_blocks > 0 && a.prefix_hit == r.prefix_blocks ? std::min(r.cached_blocks, cap - a.prefix_hit) : 0;
  a.hit = a.prefix_hit + own;
  a.free_hit = free_prefix + own;
  a.n = std::min(total - a.hit * bs, budget);
  a.need = blocks_for(a.hit * bs + a.n) - a.hit;
  return a;
}

int Engine::least_demand(const Request& r, int budget) const {
  if (r.num_computed > 0) return admission_of(r, budget).need;  // nothing cached to lose
  // need + free hits = blocks_for(min(total, hit·block_size + budget)) − hits in use by others. While
  // nothing is freed or cached (a pure-decode macro step), evictions only shorten the hit, and the
  // hits in use are prefix blocks: at least blocks_for(min(total, budget)) − min(prefix, cap).
  const int total = r.prompt_tokens + r.num_output;
  const int in_use = r.prefix_blocks > 0 ? std::min(r.prefix_blocks, (total - 1) / config_.block_size) : 0;
  return blocks_for(std::min(total, budget)) - in_use;
}

bool Engine::start_remote_load(std::uint32_t slot, Micros now, std::vector<EngineEvent>& out, bool& waiting_stays) {
  // A DecodeOnly request reached by the scheduler: get_computed_blocks (the local hit), then the
  // connector's get_num_new_matched_tokens (nixl_connector.py, 0.10: len(prompt) − 1 − computed,
  // loaded asynchronously), allocate_slots for them with delay_cache_blocks, WAITING_FOR_REMOTE_KVS.
  Request& r = slots_[slot];
  const int bs = config_.block_size;
  const int cap = (r.prompt_tokens - 1) / bs;
  int free_hit = 0;
  const int hit = r.prefix_blocks > 0 ? prefix_run(r, std::min(r.prefix_blocks, cap), free_hit) : 0;
  const int tokens = r.prompt_tokens - 1 - hit * bs;
  if (tokens == 0) {
    // Nothing to load (count 0: no async load): scheduled as an ordinary request. The event lets the
    // caller tell the prefill side (update_state_after_alloc with no blocks still notifies it).
    r.phase = Phase::Ready;
    --num_needs_remote_;
    out.push_back(EngineEvent{EngineEvent::KvLoadStarted, r.id, now, 0});
    ++kv_loads_started_;
    return true;
  }
  const int need = blocks_for(r.prompt_tokens - 1) - hit;
  if (need + free_hit > free_blocks_) {  // FCFS: it waits, and so does everyone behind it
    // As for an ordinary head (least_demand): only its hit can change, by evictions, and the hits
    // in use by others are prefix blocks.
    const int in_use = r.prefix_blocks > 0 ? std::min(r.prefix_blocks, cap) : 0;
    waiting_stays = blocks_for(r.prompt_tokens - 1) - in_use > free_blocks_;
    return false;
  }
  count_lookup(r, r.prompt_tokens, hit * bs);
  touch_prefix(slot, hit);
  take_free(need);
  r.num_blocks = hit + need;
  r.num_computed = hit * bs;
  r.phase = Phase::Loading;
  --num_needs_remote_;
  ++num_loading_;
  out.push_back(EngineEvent{EngineEvent::KvLoadStarted, r.id, now, tokens});
  ++kv_loads_started_;
  return true;
}

bool Engine::schedule_waiting(Micros now, int& budget, StepLoad* load, std::vector<EngineEvent>& out) {
  const int bs = config_.block_size;
  bool waiting_stays = true;
  while (budget > 0 && running_live_ < config_.max_num_seqs) {
    drop_aborted_head();
    if (waiting_.empty()) break;
    const std::uint32_t slot = waiting_.front();
    Request& r = slots_[slot];
    if (r.phase != Phase::Ready) {
      if (r.phase == Phase::Loading) {  // "KVTransfer: skip request if still waiting for remote kvs."
        waiting_.pop_front();
        skipped_.push_back(slot);
        continue;
      }
      if (!start_remote_load(slot, now, out, waiting_stays)) break;
      if (r.phase == Phase::Loading) {  // "If loading async, allocate memory and put request into
        waiting_.pop_front();            // the WAITING_FOR_REMOTE_KV state."
        skipped_.push_back(slot);
        continue;
      }
    }
    if (!load) break;  // no step under way: admitting it is begin_step's
    Admission a;
    if (r.prefix_blocks == 0 && r.num_computed == 0) {
      // The common case, no shared prefix: admission_of's arithmetic, inline (it runs every step
      // while requests queue).
      const int total = r.prompt_tokens + r.num_output;
      a.hit = a.free_hit = std::min(r.cached_blocks, (total - 1) / bs);
      a.n = std::min(total - a.hit * bs, budget);
      a.need = blocks_for(a.hit * bs + a.n) - a.hit;
      if (a.need + a.hit > free_blocks_) {  // FCFS: the head waits, and so does everyone behind it
        // Later decode steps leave it the same budget and no more free blocks, but its cached
        // blocks may be evicted meanwhile: need + hit = blocks_for(min(total, hit·block_size +
        // budget)) only falls with hit, to its value at hit 0 (least_demand). Past that too, it
        // waits out every sub-step.
        waiting_stays = blocks_for(std::min(total, budget)) > free_blocks_;
        break;
      }
    } else {
      a = admission_of(r, budget);
      if (a.need + a.free_hit > free_blocks_) {  // FCFS: the head waits, and so does everyone behind it
        // Later decode steps leave it the same budget and no more free blocks; past its least
        // demand it waits out every sub-step.
        waiting_stays = least_demand(r, budget) > free_blocks_;
        break;
      }
    }
    if (r.num_computed == 0) {
      // "Record at admission so unscheduled lookups are not counted." (scheduler.py)
      count_lookup(r, r.prompt_tokens + r.num_output, a.hit * bs);
      if (a.prefix_hit > 0) touch_prefix(slot, a.prefix_hit);
      if (r.cached_blocks > 0) {
        // Touch its own hit blocks (out of the free queue); the rest of its segment stays free, unowned.
        const int own = a.hit - a.prefix_hit;
        FreeSegment& seg = segment_of(r);
        seg.owner = kNoOwner;
        seg.count -= own;
        free_blocks_ -= own;
        r.cached_blocks = 0;
      }
      r.num_blocks = a.hit;
      r.num_computed = a.hit * bs;
    }
    take_free(a.need);
    r.num_blocks += a.need;
    waiting_.pop_front();
    admit(slot);
    add_chunk(*load, r.num_computed, a.n);
    budget -= a.n;
    if (lazy_step_ && decodes_next(r)) {
      // Readmitted with all but its newest token cached: it decodes from this step on.
      prefilling_.pop_back();
      add_decoder(slot);
      continue;
    }
    batch_.emplace_back(slot, a.n);
  }
  // "Put back any skipped requests at the head of the waiting queue", in the order they were met.
  if (!skipped_.empty()) {
    for (std::size_t k = skipped_.size(); k-- > 0;) waiting_.push_front(skipped_[k]);
    skipped_.clear();
  }
  return waiting_stays;
}

void Engine::start_kv_loads(Micros now, std::vector<EngineEvent>& out) {
  // With requests running, schedule() gives them their blocks before the waiting queue's: the next
  // begin_step does this, in order.
  if (in_step_ || running_live_ > 0 || num_needs_remote_ == 0) return;
  int budget = config_.max_num_batched_tokens;
  schedule_waiting(now, budget, nullptr, out);
}

bool Engine::waiting_head_runs() const {
  // With nothing running a step schedules only the waiting queue: something iff the first request
  // that is not loading its KV can be admitted now (a DecodeOnly one without blocks is start_kv_loads').
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    const Request& r = slots_[waiting_.at(i)];
    if (r.aborted || r.phase == Phase::Loading) continue;
    if (r.phase != Phase::Ready) return false;
    const Admission a = admission_of(r, config_.max_num_batched_tokens);
    return a.need + a.free_hit <= free_blocks_;
  }
  return false;
}

// --- the step ------------------------------------------------------------------------------------

Micros Engine::begin_step(Micros now) {
  const Micros d = begin_step(now, deferred_kv_);
  if (!deferred_kv_.empty()) end_step_extras_ = true;
  return d;
}

Micros Engine::begin_step(Micros now, std::vector<EngineEvent>& out) {
  batch_.clear();
  preempted_.clear();
  StepLoad load;
  int budget = config_.max_num_batched_tokens;

  // 1. RUNNING requests first (begin_lazy when that provably gives the same as request by request).
  bool preempted_any = false;
  lazy_step_ = lazy_ && begin_lazy(budget, load);
  if (!lazy_step_) {
    if (lazy_) unlazy_all();
    compact_running();
    begin_request_by_request(now, budget, load, preempted_any);
  }

  // 2. WAITING requests FCFS, only if nothing was preempted this step (scheduler.py
  //    `if not preempted_reqs:`), while budget, max_num_seqs and free blocks allow. Chunked prefill:
  //    a prompt longer than the remaining budget is admitted with a partial chunk.
  // Whether the waiting queue admits nothing for as long as the batch then decodes unchanged: true
  // when it is empty, or when the loop stops for a reason later pure-decode steps keep (the same
  // budget left and the same number running, no more free blocks).
  kv_loads_started_ = 0;
  const bool waiting_stays = preempted_any || waiting_.empty() || schedule_waiting(now, budget, &load, out);
  in_step_ = true;
  step_start_ = now;
  substeps_ = 1;
  // Nothing scheduled (the only running request preempted itself, the other blocks held by KV loads
  // or PrefillOnly requests): vLLM does not run the model for an empty schedule; 1 µs here.
  Micros duration = load.tokens > 0 ? step_micros(load.tokens, load.kv_tokens, load.pairs) : 1;
  // A pure-decode batch that the waiting queue cannot join (nothing waits, or its head does not fit,
  // as when the KV cache is full) runs identical steps until something changes; plan them as one
  // macro step (simulation speed only: every sub-step is timed exactly as a step would be).
  const bool pure_decode = lazy_step_ ? batch_.empty() && decoders_ > 0
                                      : static_cast<int>(batch_.size()) == running_live_ && load.tokens > 0 &&
                                            static_cast<std::int64_t>(batch_.size()) == load.tokens;
  // (A step that started a KV load is never coalesced: its load may end before a later sub-step.)
  if (!preempted_any && waiting_stays && pure_decode && kv_loads_started_ == 0 && config_.max_decode_substeps > 1) {
    macro_batch_ = lazy_step_ ? decoders_ : static_cast<std::int64_t>(batch_.size());
    decode_kv0_ = load.kv_tokens;
    substeps_ = plan_substeps();
    duration = macro_elapsed(substeps_);
  }
  step_end_ = now + duration;
  if (config_.record_forward_passes) record_pass(now, load.tokens);
  return duration;
}

void Engine::record_pass(Micros now, std::int64_t tokens) {
  // An idle gap before this step: the instrumented scheduler published the heartbeat when the
  // engine went idle.
  if (has_last_pass_ && now > last_step_end_) last_pass_ = ForwardPass{};
  pass_valid_ = tokens > 0;
  if (!pass_valid_) return;
  ForwardPass p;
  for (const Scheduled& b : batch_) {
    const Request& r = slots_[b.slot];
    if (r.num_computed < r.prompt_tokens) {  // cached.is_context_phase / a new request
      ++p.prefill_requests;
      p.prefill_tokens += b.num_tokens;
    } else {
      ++p.decode_requests;
      p.decode_kv_tokens += r.num_computed;
    }
  }
  if (lazy_step_) {  // the decoders, as aggregates: each context is its base plus the decode clock
    p.decode_requests += decoders_;
    p.decode_kv_tokens += decoder_base_sum_ + decoders_ * decode_clock_;
  }
  for (std::size_t i = 0; i < waiting_.size(); ++i) {
    const Request& r = slots_[waiting_.at(i)];
    if (r.aborted) continue;
    if (r.phase == Phase::Loading) {  // WAITING_FOR_REMOTE_KVS: num_computed_tokens preset to the KV it loads
      ++p.queued_decode_requests;
      p.queued_decode_kv_tokens += r.prompt_tokens - 1;
    } else if (r.preempted_before) {  // PREEMPTED
      ++p.queued_decode_requests;
      p.queued_decode_kv_tokens += r.num_computed;
    } else {  // WAITING: request.num_tokens
      ++p.queued_prefill_requests;
      p.queued_prefill_tokens += r.prompt_tokens + r.num_output;
    }
  }
  p.wall = substeps_ > 1 ? substep_micros(0) : step_end_ - step_start_;
  pass_ = p;
}

// Sub-step `substep` of the step under way: a macro step's batch decodes unchanged, each sequence one
// token further per sub-step, each sub-step timed on its own.
ForwardPass Engine::pass_at(int substep) const {
  ForwardPass p = pass_;
  if (substeps_ > 1) {
    p.decode_kv_tokens += static_cast<std::int64_t>(substep) * macro_batch_;
    p.wall = substep_micros(substep);
  }
  return p;
}

bool Engine::forward_pass(Micros now, ForwardPass& out) const {
  if (!config_.record_forward_passes) return false;
  if (in_step_ && pass_valid_ && substeps_ > 1) {
    const int ended = substeps_ending_by(now);
    if (ended >= 1) {
      out = pass_at(ended - 1);
      return true;
    }
  }
  if (!has_last_pass_) return false;
  out = in_step_ ? last_pass_ : ForwardPass{};  // idle: the heartbeat
  return true;
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
  // A short run is cheaper summed term by term than by floor_sum's divisions; the same µs either way.
  if (n <= 24) {
    Micros total = 0;
    for (int j = 0; j < n; ++j) total += substep_micros(j);
    return total;
  }
  const std::int64_t B = macro_batch_;
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
  const std::int64_t B = macro_batch_;
  const std::int64_t kv = decode_kv0_ + j * B;
  return step_micros(B, kv, kv);
}

int Engine::plan_substeps() {
  // Every sequence must already have its first token (so the sub-steps sample no first token) and
  // the macro step ends at the first completion.
  int k = config_.max_decode_substeps;
  if (lazy_step_) {  // the decoders: the first finish in the heap, the blocks by offset
    while (!finishes_.empty() && !finish_live(finishes_.front())) {
      std::pop_heap(finishes_.begin(), finishes_.end(), std::greater<Finish>());  // stale: aborted or taken out
      finishes_.pop_back();
    }
    k = static_cast<int>(std::min<std::int64_t>(k, finishes_.front().clock - decode_clock_));
    for (; k > 1; k /= 2)
      if (decoder_blocks_after(k - 1) <= free_blocks_) break;
    return std::max(1, k);
  }
  for (const Scheduled& b : batch_) {
    const Request& r = slots_[b.slot];
    // (A readmitted request recomputing its prompt can get a 1-token chunk when that is all the budget
    // leaves; it is no decode.)
    if (!decodes_next(r)) return 1;
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

void Engine::settle_macro_aborts(Micros now) {
  // As one event per step would have had it: each sub-step begun by `now` took the aborted decoder's
  // next block if it started one, and each that ended by `now` sampled its token; then the abort
  // freed its blocks (the step in progress samples nothing for it).
  const int ended = substeps_ending_by(now);
  const int started = std::min(ended, substeps_ - 1) + 1;
  for (const MacroAbort& m : macro_aborts_) {
    // Taken off the head, ahead of anything freed since (the macro step's plan left every block its
    // sub-steps take free when it began), and freed with its own blocks, before its prefix blocks.
    const int more = blocks_for(m.num_computed + started) - m.num_blocks;
    if (more > 0) {
      take_free(more);
      free_queue_.at(static_cast<std::size_t>(m.plain_at - free_queue_head_id_)).count += more;
      free_blocks_ += more;
    }
    num_generation_tokens_ += ended;
  }
  macro_aborts_.clear();
}

Micros Engine::truncate_step(Micros now) {
  if (end_step_extras_ && !macro_aborts_.empty()) settle_macro_aborts(now);
  if (!in_step_ || substeps_ <= 1) return step_end_;
  // The first boundary strictly after `now`: a step ending exactly at `now` has already begun the next.
  const int ended = substeps_ending_by(now);
  if (ended >= substeps_) return step_end_;
  substeps_ = ended + 1;
  step_end_ = step_start_ + macro_elapsed(substeps_);
  return step_end_;
}

void Engine::end_step(Micros now, std::vector<EngineEvent>& out) {
  if (config_.record_forward_passes) {
    if (pass_valid_) {
      last_pass_ = pass_at(substeps_ - 1);
      has_last_pass_ = true;
    }
    last_step_end_ = now;
  }
  if (end_step_extras_) flush_extras(now, out);
  if (!preempted_.empty()) {
    out.insert(out.end(), preempted_.begin(), preempted_.end());
    preempted_.clear();
  }
  std::int64_t sampled = 0;
  finishing_.clear();
  if (lazy_step_ && decoders_ > 0) {
    // The lazy decoders each decoded a token per sub-step, in blocks allocated as the sub-steps
    // began (the first ones at begin_step), so before anything below is freed.
    const int steps = substeps_;
    const std::int64_t more = decoder_blocks_after(steps - 1);
    if (more > 0) take_free(static_cast<int>(more));
    sampled += static_cast<std::int64_t>(decoders_) * steps;
    decode_clock_ += steps;
    // Those that sampled their last token (plan_substeps ends a macro step at the first of them).
    while (!finishes_.empty()) {
      const Finish f = finishes_.front();
      const bool live = finish_live(f);
      if (live && f.clock > decode_clock_) break;
      std::pop_heap(finishes_.begin(), finishes_.end(), std::greater<Finish>());
      finishes_.pop_back();
      if (live) finishing_.push_back(f);
    }
    std::sort(finishing_.begin(), finishing_.end(), [](const Finish& a, const Finish& b) { return a.seq < b.seq; });
  } else if (substeps_ > 1) {
    // A macro step run request by request: the later sub-steps each decoded one more token, in
    // blocks allocated as they began, so before anything below is freed. The blocks come off the
    // head of the free queue in order whoever takes them, so one take for the whole batch leaves
    // the queue as the per-step takes would.
    const int extra = substeps_ - 1;
    int need = 0;
    for (const Scheduled& b : batch_) {
      Request& r = slots_[b.slot];
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
  // Events in batch order, which is admission order: the lazy finishers merge in by it.
  std::size_t next_finisher = 0;
  auto finish = [&](std::uint32_t slot) {
    Request& r = slots_[slot];
    out.push_back(EngineEvent{EngineEvent::Finished, r.id, now});
    free_finished(slot);  // its own blocks can never hit again; its prefix blocks stay cached
    r.running = false;
    --running_live_;
    release_slot(slot);
  };
  auto finish_lazy_before = [&](std::uint64_t seq) {
    for (; next_finisher < finishing_.size() && finishing_[next_finisher].seq < seq; ++next_finisher) {
      const std::uint32_t slot = finishing_[next_finisher].slot;
      remove_decoder(slot, false);  // after the clock moved on: its blocks are its context's
      finish(slot);
    }
  };
  for (const Scheduled& s : batch_) {
    Request& r = slots_[s.slot];
    if (r.gone) {  // aborted during the step
      release_slot(s.slot);
      continue;
    }
    finish_lazy_before(r.seq);
    r.num_computed += s.num_tokens;
    // Prefix blocks this step filled are cached from now on, for the requests scheduled after it.
    // (vLLM's allocate_slots caches them when the step is scheduled, so a request admitted later in
    // the same schedule() can hit them; here a block is hit only once computed. docs/model.md)
    if (r.special && r.prefix_blocks > r.num_copies) cache_prefix_blocks(s.slot);
    if (r.num_computed < r.prompt_tokens + r.num_output) {  // mid-prefill chunk
      // One token left and the first already sampled (a readmitted request): a decode from now on.
      if (lazy_step_ && decodes_next(r)) add_decoder(s.slot);
      continue;
    }
    // The step computed every known token, so it sampled the next one.
    ++r.num_output;
    ++sampled;
    if (r.special && r.role == RequestRole::PrefillOnly) {
      hold_prefilled(s.slot, now, out);
      continue;
    }
    if (r.num_output == 1) out.push_back(EngineEvent{EngineEvent::FirstToken, r.id, now});
    if (r.num_output == r.output_tokens) {
      finish(s.slot);
    } else if (lazy_step_) {
      add_decoder(s.slot);  // from the next step it decodes a token a step
    }
  }
  finish_lazy_before(next_seq_);
  num_generation_tokens_ += sampled;
  if (lazy_step_) {
    std::size_t w = 0;  // keep the ones still prefilling (none finished, decoding or aborted)
    for (const std::uint32_t slot : prefilling_)
      if (slots_[slot].running && !slots_[slot].decoding) prefilling_[w++] = slot;
    prefilling_.resize(w);
  } else if (lazy_) {
    relazy_all();
  }
  if (running_.size() > 2 * static_cast<std::size_t>(running_live_) + 64) compact_running();
  batch_.clear();
  finishing_.clear();
  busy_before_ += now - step_start_;
  in_step_ = false;
  lazy_step_ = false;
  substeps_ = 1;
}

void Engine::flush_extras(Micros now, std::vector<EngineEvent>& out) {
  if (!macro_aborts_.empty()) settle_macro_aborts(now);  // (the caller should have truncated the step)
  out.insert(out.end(), deferred_kv_.begin(), deferred_kv_.end());
  deferred_kv_.clear();
  end_step_extras_ = false;
}

void Engine::hold_prefilled(std::uint32_t slot, Micros now, std::vector<EngineEvent>& out) {
  // Finished at max_tokens=1 (FINISHED_LENGTH_CAPPED); nixl_connector.py request_finished returns
  // delay_free_blocks: it leaves the batch and keeps its blocks until the decode side has read them.
  Request& r = slots_[slot];
  out.push_back(EngineEvent{EngineEvent::PrefillDone, r.id, now});
  r.running = false;
  --running_live_;
  r.phase = Phase::Held;
  ++num_held_;
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
  std::int64_t need = lazy_step_ ? decoder_blocks_after(extra) : 0;
  for (const Scheduled& b : batch_) {
    const Request& r = slots_[b.slot];
    if (!r.gone) need += blocks_for(r.num_computed + 1 + extra) - r.num_blocks;
  }
  return 1.0 - static_cast<double>(free_blocks_ - need) / total_blocks_;
}

Micros Engine::busy_time(Micros now) const { return busy_before_ + (in_step_ ? now - step_start_ : 0); }

double Engine::fb_used_mib_per_gpu() const { return fb_used_mib_; }

}  // namespace gpuscale
