// One model replica: a vLLM-V1-like engine (continuous batching, chunked prefill, paged KV cache,
// preemption by recompute) whose step time comes from a calibrated profile (engine_profiles.hpp).
//
// Pure and event-driven: the caller owns the clock. It calls begin_step when the engine has work
// and is idle, schedules one "step end" event at now + the returned duration, and at that time
// calls end_step, which reports first tokens, completions and preemptions.
//
// Modelled on vllm-project/vllm v1 (vllm/v1/core/sched/scheduler.py, vllm/v1/core/kv_cache_manager.py,
// V1 engine as in the 0.10/0.11 releases, gpu_memory_utilization default 0.9; current main says 0.92,
// real-systems.md §7.2). Prefix caching (on by default in V1) is modelled only where it can hit with
// the lab's unique prompts: a preempted request's own full blocks stay in the free queue, in vLLM's
// eviction order, and whatever survives until it is readmitted is not recomputed. Prefix sharing
// between requests is not modelled. Also not modelled: speculative decoding, async scheduling, the
// priority policy, KV offloading, and the API server's own latency (tokenising, detokenising).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernel/time.hpp"

namespace gpuscale {

// A model on a GPU type at a tensor-parallel degree: memory and step-time coefficients. The named,
// calibrated profiles live in engine_profiles.hpp.
struct EngineProfile {
  std::string name;
  int tensor_parallel = 1;                      // GPUs per pipeline stage (the KV heads and weights of a layer split this way)
  int pipeline_parallel = 1;                    // stages (the layers split this way, a stage per node for multi-node serving)
  int gpus() const { return tensor_parallel * pipeline_parallel; }  // GPUs per replica
  double gpu_memory_gib = 0;                    // GiB per GPU as CUDA reports it (total_gpu_memory)
  double weights_gib_per_gpu = 0;               // GiB of weights per GPU after TP sharding
  double activation_reserve_gib_per_gpu = 0;    // GiB per GPU: activation peak + non-torch memory
  double kv_bytes_per_token = 0;                // bytes of K and V per token, whole model (all layers, all KV heads)
  int max_model_len = 0;                        // tokens: the model's context length (prompt + output)
  // What it was calibrated on and what the checkpoint needs of a GPU (engine_profiles.hpp derives the
  // profile for another GPU, or says why vLLM would not start there).
  std::string gpu_name;                         // karpenter.k8s.aws/instance-gpu-name of the calibration GPU, e.g. "h100"
  std::int64_t gpu_memory_mib = 0;              // karpenter.k8s.aws/instance-gpu-memory of that GPU, MiB
  bool fp8_weights = false;                     // FP8 (W8A8) checkpoint
  bool fp8_kv_cache = false;                    // --kv-cache-dtype fp8

  // Step time, seconds: a roofline. A step streams the weights and the KV of every scheduled
  // sequence from HBM (memory time) and does the matmuls and attention for every scheduled token
  // (compute time); the GPU overlaps the two, so the slower one counts, plus a fixed overhead:
  //   step_base_s + max(step_weights_s + step_kv_token_s × KV tokens read,
  //                     step_token_s × tokens + step_pair_s × attention (query, key) pairs)
  // KV tokens read: each scheduled sequence's context (cached tokens + the new ones). Pairs: a chunk
  // of n new tokens after c cached ones has n·c + n(n+1)/2 (causal). A decode step is memory-bound,
  // a prefill chunk compute-bound. The engine evaluates it exactly in integer picoseconds (each
  // coefficient rounded to 1 ps, each from 0 to 1 s) and rounds the step to the nearest µs.
  double step_base_s = 0;        // seconds per step (launch, sync, scheduling, sampling)
  double step_weights_s = 0;     // seconds to stream the weights once
  double step_kv_token_s = 0;    // seconds per KV token read
  double step_token_s = 0;       // seconds of compute per scheduled token
  double step_pair_s = 0;        // seconds of compute per attention pair

  // What the hardware and the model say the coefficients cannot go below (physical_floors in
  // engine_profiles.hpp): datasheet peaks per GPU, the model's work. 0 = not stated (toy profiles).
  double hbm_bytes_per_s = 0;       // per GPU: HBM bandwidth
  double peak_matmul_flops = 0;     // per GPU: dense tensor-core peak at the weights' precision
  double peak_attention_flops = 0;  // per GPU: dense peak at the attention kernels' precision
  double flops_per_token = 0;       // whole model: the linear layers' FLOPs per token (2 × their parameters)
  double flops_per_pair = 0;        // whole model: attention FLOPs per (query, key) pair
};

// vLLM serve knobs. Defaults are vLLM's for `vllm serve` on a ≥70 GiB non-A100 GPU (H100/H200):
// vllm/engine/arg_utils.py; real-systems.md §7.2.
struct EngineConfig {
  EngineProfile profile;
  int max_num_seqs = 1024;             // sequences running at once (--max-num-seqs)
  int max_num_batched_tokens = 8192;   // tokens scheduled per step (--max-num-batched-tokens)
  double gpu_memory_utilization = 0.9; // fraction of GPU memory vLLM claims (--gpu-memory-utilization)
  int block_size = 16;                 // tokens per KV block (--block-size)
  int max_model_len = 0;               // tokens (--max-model-len); 0 = the profile's, lowered to the KV capacity if it does not fit
  bool enable_prefix_caching = true;   // V1 default; here it only lets a preempted request reuse its surviving blocks
  // Simulation speed only: up to this many consecutive pure-decode steps run as one event (a
  // "macro step") when nothing can change the batch in between. 1 = one event per step. Results
  // are identical either way (tests/test_simulation.cpp proves it), provided the caller calls
  // truncate_step after every add_request / abort_request made during a step. A macro step costs
  // O(batch) to plan whatever its length: its sub-step times are summed in closed form.
  int max_decode_substeps = 4096;
  // Simulation speed only: the running requests that are decoding advance together, one token a
  // step, so the engine keeps them as aggregates (how many, their total context, how many sit at
  // each offset inside their last KV block, a heap of when each finishes) and a step costs
  // O(prefilling requests + block_size) instead of O(batch). Whenever a step could preempt or run
  // out of token budget, they are written back one by one and the step runs request by request.
  // Results are identical either way (tests/test_engine.cpp proves it). Off for block sizes above
  // kMaxLazyBlockSize, where the per-offset counts would cost more than the batch.
  bool lazy_decode = true;
};

struct EngineEvent {
  enum Kind : std::uint8_t {
    FirstToken,  // the step that finished the prefill sampled the first output token
    Finished,    // the last output token; the request has left the engine and freed its KV
    Preempted,   // KV ran out: the request lost its KV and went back to the front of the waiting queue
  };
  Kind kind;
  std::uint32_t request_id;
  Micros time;  // FirstToken/Finished: the step end; Preempted: the step start, when the scheduler preempted
};

namespace detail {
// What a step's duration depends on.
struct StepLoad {
  std::int64_t tokens = 0;     // scheduled tokens
  std::int64_t pairs = 0;      // causal attention (query, key) pairs
  std::int64_t kv_tokens = 0;  // KV tokens read
};

// FIFO ring that can also push at the front, with no allocation once it has grown to the largest
// size seen. Used for the waiting queue and for the KV free-block queue.
template <typename T>
class Ring {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  T& back() { return buf_[(head_ + size_ - 1) & (buf_.size() - 1)]; }
  T& at(std::size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  const T& at(std::size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  void push_back(const T& v) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = v;
    ++size_;
  }
  void push_front(const T& v) {
    if (size_ == buf_.size()) grow();
    head_ = (head_ + buf_.size() - 1) & (buf_.size() - 1);
    buf_[head_] = v;
    ++size_;
  }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
  }
  void erase_at(std::size_t i) {  // O(n): only for aborts
    for (std::size_t k = i; k + 1 < size_; ++k) at(k) = at(k + 1);
    --size_;
  }

 private:
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 16 : buf_.size() * 2);  // capacity stays a power of two
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = at(i);
    buf_.swap(bigger);
    head_ = 0;
  }
  std::vector<T> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};
// Request id → slot: an open-addressing table (linear probing, backward-shift deletion) that
// allocates only when it grows, where std::unordered_map allocated a node per request. Looked up
// only, never iterated. Id 0xFFFFFFFF marks an empty cell (request ids stay below 2^31).
class IdSlotMap {
 public:
  static constexpr std::uint32_t kEmpty = 0xFFFFFFFFu;
  const std::uint32_t* find(std::uint32_t id) const {
    if (cells_.empty()) return nullptr;
    for (std::size_t i = home(id);; i = (i + 1) & mask_) {
      if (cells_[i].id == id) return &cells_[i].slot;
      if (cells_[i].id == kEmpty) return nullptr;
    }
  }
  void set(std::uint32_t id, std::uint32_t slot) {
    if ((size_ + 1) * 2 > cells_.size()) grow();
    std::size_t i = home(id);
    while (cells_[i].id != kEmpty && cells_[i].id != id) i = (i + 1) & mask_;
    if (cells_[i].id == kEmpty) ++size_;
    cells_[i] = {id, slot};
  }
  void erase(std::uint32_t id) {
    if (cells_.empty()) return;
    std::size_t i = home(id);
    while (cells_[i].id != id) {
      if (cells_[i].id == kEmpty) return;
      i = (i + 1) & mask_;
    }
    // Shift back the cells after it that would otherwise be cut off from their home.
    for (std::size_t j = (i + 1) & mask_; cells_[j].id != kEmpty; j = (j + 1) & mask_) {
      const std::size_t h = home(cells_[j].id);
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        cells_[i] = cells_[j];
        i = j;
      }
    }
    cells_[i].id = kEmpty;
    --size_;
  }

 private:
  struct Cell {
    std::uint32_t id = kEmpty;
    std::uint32_t slot = 0;
  };
  std::size_t home(std::uint32_t id) const { return (static_cast<std::size_t>(id) * 2654435761u) & mask_; }
  void grow() {
    std::vector<Cell> old = std::move(cells_);
    cells_.assign(old.empty() ? 64 : old.size() * 2, Cell{});
    mask_ = cells_.size() - 1;
    size_ = 0;
    for (const Cell& c : old) {
      if (c.id != kEmpty) set(c.id, c.slot);
    }
  }
  std::vector<Cell> cells_;
  std::size_t mask_ = 0, size_ = 0;
};
}  // namespace detail

class Engine {
 public:
  static constexpr int kMaxLazyBlockSize = 256;  // EngineConfig::lazy_decode
  // Throws InputError ("/engine/gpu_memory_utilization") if no KV block fits in memory.
  explicit Engine(const EngineConfig& config);

  // KV blocks for this configuration: per GPU, floor((gpu_memory_gib × gpu_memory_utilization −
  // weights − activation reserve) / bytes per block per GPU), where a block per GPU holds
  // block_size × kv_bytes_per_token / (tensor_parallel × pipeline_parallel) bytes (TP shards the KV heads, PP
  // the layers). ≤ 0 if nothing fits.
  static std::int64_t compute_num_kv_blocks(const EngineConfig& config);

  // A request reaches the engine (queued at the back of `waiting`). Returns false, and keeps
  // nothing, if prompt + output exceeds max_model_len (vLLM answers HTTP 400) or a count is < 1.
  bool add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros now);
  // The client gave up: remove it from waiting or running and free its KV. True if it was here.
  // O(requests in the engine); a request in the step under way simply produces nothing at end_step.
  bool abort_request(std::uint32_t id);

  bool has_work() const { return running_live_ > 0 || num_waiting() > 0; }
  bool in_step() const { return in_step_; }

  // Schedules one batch (precondition: has_work() && !in_step()) and returns its duration (≥ 1 µs).
  // When the batch is pure decode, the waiting queue cannot join it (empty, or its head does not fit)
  // and the KV cache has room, the returned duration covers several identical decode steps back to
  // back (up to the first completion).
  Micros begin_step(Micros now);
  // A request arrived or was aborted during the step: vLLM's scheduler sees it at the next step
  // boundary, so a macro step is cut at the first sub-step boundary after `now`. Returns the step's
  // (possibly earlier) end time. A decoder aborted during a macro step is settled here, when the
  // engine learns the time: the blocks and tokens of its sub-steps until then count.
  Micros truncate_step(Micros now);
  // Applies the batch started by begin_step (precondition: in_step()); appends to `out` the step's
  // preemptions, then first tokens and completions in batch order.
  void end_step(Micros now, std::vector<EngineEvent>& out);

  // Gauges and counters under their production names (real-systems.md §6, §7.1).
  int num_requests_waiting() const { return static_cast<int>(num_waiting()); }  // vllm:num_requests_waiting
  int num_requests_running() const { return running_live_; }  // vllm:num_requests_running
  double kv_cache_usage() const;                // vllm:kv_cache_usage_perc: used blocks / total blocks, 0–1
  double kv_cache_usage(Micros now) const;      // the same at `now`, inside a macro step
  // µs with a step under way, from the start up to `now` (not before the last begin/end_step):
  // DCGM_FI_DEV_GPU_UTIL over a sample period = difference of two readings / period.
  Micros busy_time(Micros now) const;
  double fb_used_mib_per_gpu() const;           // DCGM_FI_DEV_FB_USED, MiB: constant once loaded
  std::int64_t num_preemptions() const { return num_preemptions_; }               // vllm:num_preemptions
  std::int64_t num_generation_tokens() const { return num_generation_tokens_; }   // vllm:generation_tokens
  std::int64_t num_prefix_cache_hit_tokens() const { return num_prefix_cache_hits_; }  // vllm:prefix_cache_hits
  int total_kv_blocks() const { return total_blocks_; }
  int free_kv_blocks() const { return free_blocks_; }
  int max_model_len() const { return max_model_len_; }  // tokens, after lowering to the KV capacity
  const EngineConfig& config() const { return config_; }

 private:
  static constexpr std::uint32_t kNoOwner = 0xffffffffu;
  struct Request {
    std::uint32_t id = 0;
    int prompt_tokens = 0;
    int output_tokens = 0;   // tokens to generate in total
    int num_output = 0;      // tokens generated so far
    int num_computed = 0;    // tokens whose KV is in the cache (reset by preemption)
    int num_blocks = 0;      // KV blocks held
    int cached_blocks = 0;   // preempted and waiting: its full blocks still in the free queue
    std::uint64_t cached_segment = 0;  // their segment's id in free_queue_ (valid while cached_blocks > 0)
    bool gone = false;       // finished, or aborted while in the batch: release at end_step
    bool aborted = false;    // aborted while waiting: its entry in waiting_ is skipped when it reaches the head
    bool running = false;    // in running_ (vLLM self.running)
    bool decoding = false;   // one of the lazy decoders: the fields below hold, not the ones above
    std::uint64_t seq = 0;   // admission number (from 1): running_ is in this order, and so is the batch
    // A lazy decoder's num_computed and num_output are their values when decode_clock_ was `mark`;
    // each later decode step adds one to both. Its blocks are blocks_for(num_computed) between steps.
    std::int64_t mark = 0;
    int offset_key = 0;      // (num_computed − mark) mod block_size: its bucket in decoder_keys_
  };
  struct RunningEntry {
    std::uint32_t slot;
    std::uint64_t seq;  // a stale entry (finished, aborted, preempted) no longer matches its slot's
  };
  struct Finish {
    std::int64_t clock;  // decode_clock_ when its last token is sampled
    std::uint64_t seq;
    std::uint32_t slot;
    bool operator>(const Finish& o) const { return clock != o.clock ? clock > o.clock : seq > o.seq; }
  };
  struct Scheduled {
    // Built in place by emplace_back: a temporary built field by field and copied as one 8-byte
    // load stalls store forwarding, which was most of the cost of a step.
    Scheduled(std::uint32_t s, int n) : slot(s), num_tokens(n) {}
    std::uint32_t slot;
    int num_tokens;
  };
  // A run of free blocks in vLLM's free_block_queue (allocation pops the head, freeing appends at
  // the tail). `owner` is the waiting preempted request whose cached blocks these are, or kNoOwner.
  struct FreeSegment {
    std::uint32_t owner;
    int count;
  };

  // The profile's step-time coefficients in integer picoseconds (EngineProfile).
  struct StepCost {
    std::int64_t base_ps = 0, weights_ps = 0, kv_token_ps = 0, token_ps = 0, pair_ps = 0;
  };
  std::int64_t step_ps(std::int64_t tokens, std::int64_t kv_tokens, std::int64_t pairs) const;  // exact
  Micros step_micros(std::int64_t tokens, std::int64_t kv_tokens, std::int64_t pairs) const;  // rounded, ≥ 1
  Micros macro_elapsed(int n) const;  // µs from the macro step's start to the end of its sub-step n - 1
  Micros substep_micros(std::int64_t j) const;  // µs of sub-step j of the macro step under way

  // ceil(tokens / block_size); a shift when block_size is a power of two (the default 16): the
  // division was a visible part of each macro step's per-sequence work.
  int blocks_for(int tokens) const {
    return block_shift_ >= 0 ? (tokens + config_.block_size - 1) >> block_shift_ : (tokens + config_.block_size - 1) / config_.block_size;
  }
  std::uint32_t new_slot();
  void release_slot(std::uint32_t slot);
  void free_plain(int n);
  void take_free(int n);
  FreeSegment& segment_of(const Request& r);
  void preempt_last_running(Micros now);
  bool in_batch(std::uint32_t slot) const;
  bool entry_live(const RunningEntry& e) const { return slots_[e.slot].running && slots_[e.slot].seq == e.seq; }
  bool finish_live(const Finish& f) const { return slots_[f.slot].decoding && slots_[f.slot].seq == f.seq; }
  // Its first token sampled and only its newest token to compute: its next step decodes one token.
  static bool decodes_next(const Request& r) { return r.num_output >= 1 && r.num_computed + 1 == r.prompt_tokens + r.num_output; }
  void compact_running();
  void admit(std::uint32_t slot);       // appends to running_ and prefilling_
  // Lazy decoders: add one (its fields current), bring one's fields up to date and take it out, all of them out.
  void add_decoder(std::uint32_t slot);
  // holds_next_block: during a step whose decoders begin_lazy scheduled (their next token's block is taken).
  void remove_decoder(std::uint32_t slot, bool holds_next_block);
  void unlazy_all();
  void relazy_all();                    // after a step run request by request: decoders back into aggregates
  // Σ over the lazy decoders of floor((offset + e) / block_size), offset = current context mod
  // block_size: the blocks they allocate in e more decode steps after the next one.
  std::int64_t decoder_blocks_after(std::int64_t e) const;
  int decoders_needing_block() const;   // those whose next decode token starts a new block
  int clock_offset() const {            // decode_clock_ mod block_size
    return static_cast<int>(block_shift_ >= 0 ? decode_clock_ & (config_.block_size - 1) : decode_clock_ % config_.block_size);
  }
  bool begin_lazy(int& budget, detail::StepLoad& load);
  void begin_request_by_request(Micros now, int& budget, detail::StepLoad& load, bool& preempted_any);
  std::size_t num_waiting() const { return waiting_.size() - aborted_waiting_; }
  void drop_aborted_head();  // releases aborted entries at the head of waiting_

  EngineConfig config_;
  StepCost cost_;
  int block_shift_ = -1;  // log2(block_size) when it is a power of two, else -1 (blocks_for)
  int total_blocks_ = 0;
  int free_blocks_ = 0;  // = the sum of free_queue_ counts
  int max_model_len_ = 0;
  double fb_used_mib_ = 0;

  std::vector<Request> slots_;             // request storage, reused through free_slots_
  std::vector<std::uint32_t> free_slots_;
  // vLLM self.running, in admission order; finished and aborted entries stay until compacted.
  std::vector<RunningEntry> running_;
  int running_live_ = 0;                   // entries of running_ still running
  std::uint64_t next_seq_ = 1;
  // The lazy decoders (EngineConfig::lazy_decode): every running request whose next step decodes
  // one token, except during and after a step run request by request. The others are prefilling_.
  bool lazy_ = false;                      // lazy_decode and a small enough block size
  bool lazy_step_ = false;                 // the step under way kept the decoders as aggregates
  std::int64_t decode_clock_ = 0;          // decode steps the lazy decoders have run
  int decoders_ = 0;
  std::uint64_t max_decoder_seq_ = 0;      // at least the largest seq among them (not lowered when one leaves)
  std::int64_t decoder_base_sum_ = 0;      // Σ (num_computed − mark): their context is this + decoders_ × decode_clock_
  std::vector<int> decoder_keys_;          // decoders per offset_key
  std::vector<Finish> finishes_;           // min-heap (std::greater) on clock, then seq; stale entries skipped
  std::vector<Finish> finishing_;          // end_step: the decoders that sampled their last token
  bool heap_deferred_ = false;             // relazy_all: add_decoder leaves finishes_ to one make_heap
  std::vector<std::uint32_t> prefilling_;  // running but not lazy decoders, in admission order
  std::int64_t macro_batch_ = 0;           // sequences each sub-step of the macro step under way decodes
  detail::Ring<std::uint32_t> waiting_;    // slots (vLLM self.waiting), aborted ones included until they reach the head
  std::size_t aborted_waiting_ = 0;        // entries of waiting_ that were aborted
  // Request id → slot, for aborts in O(1) (a client timeout in a queue of thousands would otherwise
  // scan and shift it: quadratic). Looked up only, never iterated.
  detail::IdSlotMap slot_of_;
  detail::Ring<FreeSegment> free_queue_;
  std::uint64_t free_queue_head_id_ = 0;   // id of free_queue_.front()
  std::vector<Scheduled> batch_;           // the step under way
  std::vector<EngineEvent> preempted_;     // preemptions of the step under way

  bool in_step_ = false;
  Micros step_start_ = 0;
  Micros busy_before_ = 0;  // busy µs of finished steps
  // The macro step under way: sub-steps of pure decode after the first (planned by begin_step).
  int substeps_ = 1;                 // sub-steps in the step under way (1 = an ordinary step)
  std::int64_t decode_kv0_ = 0;      // KV tokens read by the first sub-step; each later one reads B more
  Micros step_end_ = 0;              // when the step under way ends
  int substeps_started(Micros now) const;  // sub-steps begun by `now` (boundaries at or before it)
  // Decoders aborted during the macro step under way, for truncate_step: their context and blocks at
  // the abort, and the free queue's plain run their blocks joined.
  struct MacroAbort {
    int num_computed, num_blocks;
    std::uint64_t plain_at;
  };
  std::vector<MacroAbort> macro_aborts_;
  void settle_macro_aborts(Micros now);
  int substeps_ending_by(Micros now) const;  // sub-steps of the macro step that end at or before `now`
  int plan_substeps();               // how many pure-decode sub-steps the batch can run unchanged
  std::int64_t num_preemptions_ = 0;
  std::int64_t num_generation_tokens_ = 0;
  std::int64_t num_prefix_cache_hits_ = 0;
};

}  // namespace gpuscale
