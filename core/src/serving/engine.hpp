// One model replica: a vLLM-V1-like engine (continuous batching, chunked prefill, paged KV cache,
// preemption by recompute) whose step time comes from a calibrated profile (engine_profiles.hpp).
//
// Pure and event-driven: the caller owns the clock. It calls begin_step when the engine has work
// and is idle, schedules one "step end" event at now + the returned duration, and at that time
// calls end_step, which reports first tokens, completions and preemptions.
//
// Modelled on vllm-project/vllm v1 (vllm/v1/core/sched/scheduler.py, vllm/v1/core/kv_cache_manager.py,
// vllm/v1/core/block_pool.py, V1 engine as in the 0.10/0.11 releases, gpu_memory_utilization default
// 0.9; current main says 0.92, real-systems.md §7.2).
//
// Prefix caching (on by default in V1) hits full blocks only. A request's prompt is unique except for
// a shared prefix it may name (RequestOptions::prefix_id: a system prompt, a set of RAG documents):
// the full blocks of that prefix are shared between requests, reference-counted while in use and kept
// in the free queue, hashed, until evicted; a preempted request's own full blocks stay there too and
// only it can hit them. Freeing appends a request's blocks tail first and allocation pops the head,
// so a prefix loses its trailing blocks first (docs/model.md, "Prefix caching").
//
// Disaggregated prefill/decode as vLLM runs it with the NIXL connector
// (vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py): a PrefillOnly request computes its
// prompt, samples one token and keeps its blocks until the decode side has read them (release_kv); a
// DecodeOnly request gets blocks for the KV another engine computed, waits while it is loaded
// (kv_loaded) and then computes only its last prompt token before decoding.
//
// Not modelled: speculative decoding, async scheduling, the priority policy, KV offloading, and the
// API server's own latency (tokenising, detokenising).
//
// The calls a caller with DecodeOnly or PrefillOnly requests makes (one whose requests are all Whole
// can keep to add_request, abort_request, has_work, begin_step, truncate_step and end_step, as before):
//   - whenever no step is under way and something changed (add_request, kv_loaded, release_kv,
//     abort_request, end_step): start_kv_loads(now, events), then, if has_work(), begin_step(now,
//     events) and an end_step event at now + its duration;
//   - during a step, after add_request, abort_request, kv_loaded or release_kv: truncate_step(now)
//     (each can change what the next step boundary schedules);
//   - on KvLoadStarted: time the transfer of its `tokens`, then kv_loaded(id, then);
//   - on PrefillDone: hand the request to a decode engine, release_kv(id) once it has read the KV.
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
  bool enable_prefix_caching = true;   // V1 default: shared prefixes and a preempted request's own surviving blocks hit
  // Simulation speed only: up to this many consecutive pure-decode steps run as one event (a
  // "macro step") when nothing can change the batch in between. 1 = one event per step. Results
  // are identical either way (tests/test_simulation.cpp proves it), provided the caller calls
  // truncate_step after every add_request, abort_request, kv_loaded and release_kv made during a
  // step. A step that starts a KV load is never coalesced. A macro step costs
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
  // Keep each step's ForwardPassMetrics (forward_pass): Dynamo's instrumented scheduler publishes
  // them for its planner. Off unless a planner reads the pool (it costs a pass over the batch and
  // the waiting queue per step).
  bool record_forward_passes = false;
};

// One iteration as Dynamo's instrumented vLLM scheduler reports it (ai-dynamo/dynamo
// components/src/dynamo/vllm/instrumented_scheduler.py _extract_scheduled and _compute_queued;
// components/src/dynamo/common/forward_pass_metrics.py). An idle heartbeat is all zeros.
struct ForwardPass {
  Micros wall = 0;  // the iteration's time (schedule to output); 0: the idle heartbeat
  // scheduled_requests: a prefill is a request still computing its prompt (a new one or a chunked
  // continuation), with the tokens this iteration computes for it; a decode one counts its context
  // (num_computed_tokens at schedule time)
  std::int64_t prefill_requests = 0, prefill_tokens = 0;
  std::int64_t decode_requests = 0, decode_kv_tokens = 0;
  // queued_requests, what waits unscheduled: WAITING ones count as prefill (their tokens so far);
  // PREEMPTED ones and those loading remote KV as decode (their computed context)
  std::int64_t queued_prefill_requests = 0, queued_prefill_tokens = 0;
  std::int64_t queued_decode_requests = 0, queued_decode_kv_tokens = 0;
};

// What a request is to this engine in disaggregated serving (vLLM's kv_transfer_params with the NIXL
// connector, as the disaggregated proxy sets them).
enum class RequestRole : std::uint8_t {
  Whole,        // an ordinary request: prefill and decode here
  PrefillOnly,  // do_remote_decode (the proxy sends max_tokens=1): the prompt and one sampled token,
                // then PrefillDone; the KV stays until release_kv (request_finished: delay_free_blocks)
  DecodeOnly,   // do_remote_prefill: the prompt's KV is loaded from a prefill engine (KvLoadStarted,
                // kv_loaded), then the last prompt token is computed here and the output decoded
};

// Per-request options of add_request. The defaults are an ordinary request with a unique prompt.
struct RequestOptions {
  // A shared prefix: requests naming the same prefix_id have identical first tokens, up to the
  // shorter prefix_tokens, so they share its full KV blocks (block i iff (i + 1) × block_size ≤
  // prefix_tokens). 0 = none; ids up to 2^32 − 2.
  std::uint32_t prefix_id = 0;
  int prefix_tokens = 0;  // tokens: how many of the prompt's first tokens are the prefix (0 … prompt_tokens)
  using Role = RequestRole;
  Role role = Role::Whole;
};

struct EngineEvent {
  enum Kind : std::uint8_t {
    FirstToken,    // the step that finished the prefill sampled the first output token
    Finished,      // the last output token; the request has left the engine and freed its KV
    Preempted,     // KV ran out: the request lost its KV and went back to the front of the waiting queue
    PrefillDone,   // PrefillOnly: its prompt is computed and one token sampled; it has left the batch
                   // and holds its KV blocks until release_kv (no FirstToken or Finished follows)
    KvLoadStarted, // DecodeOnly: blocks allocated and `tokens` tokens of KV to load (prompt − 1 − the
                   // local prefix-cache hit); the caller calls kv_loaded when they have arrived. With
                   // tokens 0 nothing is loaded (the local cache held it all): the request is scheduled
                   // as an ordinary one and no kv_loaded is expected
  };
  Kind kind;
  std::uint32_t request_id;
  Micros time;     // FirstToken/Finished/PrefillDone: the step end; Preempted: the step start, when the
                   // scheduler preempted; KvLoadStarted: when the scheduler allocated the blocks
  int tokens = 0;  // KvLoadStarted: tokens of KV to load; 0 otherwise
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
  // nothing, if prompt + output exceeds max_model_len (vLLM answers HTTP 400; a PrefillOnly request
  // counts one output token, the proxy's max_tokens=1), a count is < 1, or the options are not
  // consistent (prefix_tokens outside 0 … prompt_tokens, prefix_id 2^32 − 1). A PrefillOnly request
  // generates one token whatever output_tokens says.
  bool add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros now, const RequestOptions& options);
  bool add_request(std::uint32_t id, int prompt_tokens, int output_tokens, Micros now);  // default options
  // The client gave up: remove it from waiting or running, or drop it while its KV loads or is held
  // after PrefillDone, and free its KV. True if it was here. O(requests in the engine); a request in
  // the step under way simply produces nothing at end_step.
  bool abort_request(std::uint32_t id);

  // A DecodeOnly request's KV has arrived (its KvLoadStarted transfer is done): from now on it waits
  // as an ordinary request with prompt − 1 tokens computed (its full prefix blocks become cached),
  // and its next step computes the last prompt token and samples its first output token. False (and
  // nothing done) if the request is not loading.
  bool kv_loaded(std::uint32_t id, Micros now);
  // A PrefillOnly request's KV has been read by the decode side: its blocks are freed as a finished
  // request's are (its prefix blocks stay cached). False (and nothing done) if it is not held.
  bool release_kv(std::uint32_t id);
  // The scheduler's pass over the waiting queue while no step runs (vLLM's engine core keeps calling
  // schedule() while requests wait for remote KV): with nothing running, allocates the blocks of the
  // DecodeOnly requests it reaches, FCFS (a head that does not fit blocks the queue; a request whose
  // KV is loading is passed over), and appends their KvLoadStarted events. It stops at the first
  // request that would run: that is begin_step's. Does nothing during a step or while requests run:
  // the next begin_step's scheduler allocates them after the running requests have their blocks, as
  // schedule() does. Call it whenever no step is under way, before has_work().
  void start_kv_loads(Micros now, std::vector<EngineEvent>& out);

  // A step would schedule something: a request is running, or the first waiting request that is
  // not loading its KV can be admitted now. A request waiting for its KV, or for blocks that only
  // a release_kv, an abort or a finished load can free, is not work.
  bool has_work() const { return running_live_ > 0 || (num_waiting() > 0 && (num_roles_ == 0 || waiting_head_runs())); }
  bool in_step() const { return in_step_; }

  // Schedules one batch (precondition: has_work() && !in_step()) and returns its duration (≥ 1 µs;
  // exactly 1 µs when it schedules nothing, its only running request having preempted itself).
  // When the batch is pure decode, the waiting queue cannot join it (empty, or its head does not fit)
  // and the KV cache has room, the returned duration covers several identical decode steps back to
  // back (up to the first completion). Appends to `out` a KvLoadStarted for each DecodeOnly request
  // whose blocks its scheduler allocated (at `now`).
  Micros begin_step(Micros now, std::vector<EngineEvent>& out);
  // The same; the KvLoadStarted events, if any, are appended by this step's end_step instead (still
  // stamped with the step start: the request cannot run before the step ends either way).
  Micros begin_step(Micros now);
  // A request arrived or was aborted during the step: vLLM's scheduler sees it at the next step
  // boundary, so a macro step is cut at the first sub-step boundary after `now`. Returns the step's
  // (possibly earlier) end time. A decoder aborted during a macro step is settled here, when the
  // engine learns the time: the blocks and tokens of its sub-steps until then count.
  Micros truncate_step(Micros now);
  // Applies the batch started by begin_step (precondition: in_step()); appends to `out` the step's
  // KV loads (one-argument begin_step only) and preemptions, then first tokens, PrefillDone and
  // completions in batch order.
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
  // vllm:prefix_cache_queries and vllm:prefix_cache_hits, tokens: at each admission that looks the
  // cache up (a new request, a DecodeOnly one when its blocks are allocated), the tokens it holds
  // and the tokens found cached. A request that was preempted counts in the preempted pair instead
  // (vllm/v1/metrics/stats.py PrefixCacheStats.record: preempted_queries, preempted_hits).
  std::int64_t num_prefix_cache_queries() const { return prefix_queries_[0]; }
  std::int64_t num_prefix_cache_hits() const { return prefix_hits_[0]; }
  std::int64_t num_preempted_prefix_cache_queries() const { return prefix_queries_[1]; }
  std::int64_t num_preempted_prefix_cache_hits() const { return prefix_hits_[1]; }
  // Tokens of the prefix (prefix_id, its first prefix_tokens tokens) a request would find cached here
  // now: the leading full blocks in use or still in the free queue (a precise prefix-cache scorer).
  // Not capped by the request's own length (admission recomputes at least its last token).
  int cached_prefix_tokens(std::uint32_t prefix_id, int prefix_tokens) const;
  int num_kv_loading() const { return num_loading_; }  // DecodeOnly requests whose KV is loading
  int num_kv_held() const { return num_held_; }        // PrefillOnly requests holding KV until release_kv
  int total_kv_blocks() const { return total_blocks_; }
  int free_kv_blocks() const { return free_blocks_; }
  int max_model_len() const { return max_model_len_; }  // tokens, after lowering to the KV capacity
  // The newest ForwardPassMetrics at `now` (EngineConfig::record_forward_passes): the last iteration
  // that ended by then (a macro step's sub-steps each count), or the idle heartbeat once the engine
  // has gone idle after running. Empty before the first iteration or when not recording.
  bool forward_pass(Micros now, ForwardPass& out) const;
  const EngineConfig& config() const { return config_; }

 private:
  static constexpr std::uint32_t kNoOwner = 0xffffffffu;
  static constexpr std::uint32_t kCopyBit = 0x80000000u;  // FreeSegment::owner of a cached prefix block
  static constexpr std::uint32_t kNone = 0xffffffffu;     // no prefix block (PrefixChain, PrefixCopy links)
  // Where a request is beyond waiting and running (vLLM RequestStatus).
  enum class Phase : std::uint8_t {
    Ready,        // an ordinary request, waiting or running
    NeedsRemote,  // DecodeOnly, waiting, no blocks yet (do_remote_prefill not yet handled)
    Loading,      // DecodeOnly, waiting with its blocks: WAITING_FOR_REMOTE_KVS
    Held,         // PrefillOnly after PrefillDone: out of the batch, blocks kept until release_kv
  };
  struct Request {
    std::uint32_t id = 0;
    int prompt_tokens = 0;
    int output_tokens = 0;   // tokens to generate in total
    int num_output = 0;      // tokens generated so far
    int num_computed = 0;    // tokens whose KV is in the cache (reset by preemption)
    int num_blocks = 0;      // KV blocks held
    int cached_blocks = 0;   // preempted and waiting: its full blocks still in the free queue
    std::uint32_t prefix_id = 0;  // its shared prefix (RequestOptions), 0 = none
    int prefix_blocks = 0;   // full blocks of that prefix (0 without one or without prefix caching)
    int num_copies = 0;      // its leading blocks that are cached prefix blocks (copies_of_[slot])
    std::uint64_t cached_segment = 0;  // the id in free_queue_ of the cached_blocks' segment (while cached_blocks > 0)
    RequestRole role = RequestRole::Whole;
    Phase phase = Phase::Ready;
    bool special = false;    // a shared prefix or a role: end_step's checks for them (one test for the rest)
    bool gone = false;       // finished, or aborted while in the batch: release at end_step
    bool aborted = false;    // aborted while waiting: its entry in waiting_ is skipped when it reaches the head
    bool running = false;    // in running_ (vLLM self.running)
    bool decoding = false;   // one of the lazy decoders: the fields below hold, not the ones above
    bool preempted_before = false;  // request.num_preemptions > 0 (the prefix-cache counters it goes to)
    std::uint64_t seq = 0;   // admission number (from 1): running_ is in this order, and so is the batch
    // A lazy decoder's num_computed and num_output are their values when decode_clock_ was `mark`;
    // each later decode step adds one to both. Its blocks (shared prefix blocks included) are
    // blocks_for(num_computed) between steps.
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
  // the tail). `owner` is the waiting preempted request whose cached blocks these are, kNoOwner, or
  // kCopyBit | a cached prefix block (count 1, or 0 once a hit took it out of the queue).
  struct FreeSegment {
    std::uint32_t owner;
    int count;
  };
  // One cached full block of a shared prefix (block_pool.py: a block with a hash). Several copies of
  // the same block can exist (requests that computed it at the same time); a lookup takes the first
  // registered (get_cached_block: "If there are duplicated blocks, we return the first block").
  struct PrefixCopy {
    std::uint32_t prefix = 0;    // index in prefixes_
    int index = 0;               // block index in the prefix
    int refs = 0;                // requests holding it; 0 = in the free queue, evictable
    std::uint32_t prev = kNone, next = kNone;  // the copies of the same block, in registration order
    std::uint64_t queue_pos = 0; // its entry in free_queue_ while refs == 0
  };
  struct PrefixChain {
    std::uint32_t first = kNone, last = kNone;
  };
  struct Prefix {
    std::uint32_t id = 0;
    int copies = 0;                   // cached copies of its blocks (the entry goes with the last)
    std::vector<PrefixChain> blocks;  // per block index
  };
  // What admitting a waiting request takes (kv_cache_manager.get_computed_blocks, allocate_slots).
  struct Admission {
    int hit = 0;       // blocks found cached: prefix blocks, then its own (a preempted request's)
    int free_hit = 0;  // of those, blocks in the free queue (a hit takes them out of it)
    int prefix_hit = 0;
    int n = 0;         // tokens scheduled
    int need = 0;      // new blocks
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
  void take_from_head(int n);  // take_free without the count
  [[gnu::noinline]] void take_copies_from_head(int n);
  FreeSegment& segment_of(const Request& r);
  // Frees a request's blocks as kv_cache_manager.free does, tail first: its own blocks (with
  // keep_own, the full ones as its cached segment), then its prefix blocks in reverse order, each
  // to the free queue only when its last holder lets go.
  [[gnu::noinline]] void free_request_blocks(std::uint32_t slot, bool keep_own, std::uint64_t* plain_at = nullptr);
  void free_finished(std::uint32_t slot) {  // a finished or aborted request's: nothing of its own stays cached
    Request& r = slots_[slot];
    if (r.num_copies > 0) return free_request_blocks(slot, false);
    free_plain(r.num_blocks);
    r.num_blocks = 0;
  }
  // Prefix blocks: the leading cached blocks a request's prefix has (at most `limit`), and how many
  // of those are free; taking them (block_pool.touch); caching its newly computed ones; letting one go.
  // (The rare paths are kept out of line, [[gnu::noinline]], so that the step's hot functions stay
  // as small as they were: inlined, they cost every step a few instructions of register saves.)
  const Prefix* find_prefix(std::uint32_t prefix_id) const;
  int prefix_run(const Request& r, int limit, int& free_in_run) const;
  [[gnu::noinline]] void touch_prefix(std::uint32_t slot, int blocks);
  [[gnu::noinline]] void cache_prefix_blocks(std::uint32_t slot);
  void release_copy(std::uint32_t copy);
  [[gnu::noinline]] void evict_copy(std::uint32_t copy);
  [[gnu::noinline]] void hold_prefilled(std::uint32_t slot, Micros now, std::vector<EngineEvent>& out);
  [[gnu::noinline]] void flush_extras(Micros now, std::vector<EngineEvent>& out);  // end_step: end_step_extras_
  std::uint32_t enqueue(std::uint32_t id, int prompt_tokens, int output_tokens);  // add_request: a new slot at the back of waiting
  Admission admission_of(const Request& r, int budget) const;
  // The least the head's admission can ever take while nothing is freed or cached (macro steps).
  int least_demand(const Request& r, int budget) const;
  bool start_remote_load(std::uint32_t slot, Micros now, std::vector<EngineEvent>& out, bool& waiting_stays);
  // vLLM's waiting loop (scheduler.py schedule(), "Next, schedule the WAITING requests"); with no
  // `load` (no step) it only allocates for DecodeOnly requests. Returns waiting_stays (begin_step).
  bool schedule_waiting(Micros now, int& budget, detail::StepLoad* load, std::vector<EngineEvent>& out);
  bool waiting_head_runs() const;  // has_work() with nothing running
  void leave(std::uint32_t slot);  // the request is gone for good: its slot back to the pool
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
  std::vector<std::vector<std::uint32_t>> copies_of_;  // per slot: the prefix blocks it holds, leading first
  int num_roles_ = 0;                      // requests here with a role other than Whole (has_work)
  int num_loading_ = 0;                    // Phase::Loading
  int num_held_ = 0;                       // Phase::Held
  int num_needs_remote_ = 0;               // Phase::NeedsRemote
  // The prefix cache: cached prefix blocks (recycled through free_copies_), the prefixes that have
  // any (prefix id → index, looked up only, never iterated).
  std::vector<PrefixCopy> copies_;
  std::vector<std::uint32_t> free_copies_;
  std::vector<Prefix> prefixes_;
  std::vector<std::uint32_t> free_prefixes_;
  detail::IdSlotMap prefix_of_;
  std::vector<std::uint32_t> skipped_;     // schedule_waiting: loading requests passed over, put back at the head
  std::vector<EngineEvent> deferred_kv_;   // KvLoadStarted of a one-argument begin_step, for its end_step
  bool end_step_extras_ = false;           // deferred_kv_ or macro_aborts_ has something for end_step
  int kv_loads_started_ = 0;               // by the step under way's scheduler
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
  // ForwardPassMetrics (record_forward_passes): the step under way's first iteration (pass_valid_:
  // it schedules tokens; vLLM skips an empty one), the last one published, and when the last step
  // ended (a later begin_step means the engine went idle between: the heartbeat).
  ForwardPass pass_, last_pass_;
  bool pass_valid_ = false, has_last_pass_ = false;
  Micros last_step_end_ = -1;
  void record_pass(Micros now, std::int64_t tokens);
  ForwardPass pass_at(int substep) const;
  Micros busy_before_ = 0;  // busy µs of finished steps
  // The macro step under way: sub-steps of pure decode after the first (planned by begin_step).
  int substeps_ = 1;                 // sub-steps in the step under way (1 = an ordinary step)
  std::int64_t decode_kv0_ = 0;      // KV tokens read by the first sub-step; each later one reads B more
  Micros step_end_ = 0;              // when the step under way ends
  int substeps_started(Micros now) const;  // sub-steps begun by `now` (boundaries at or before it)
  // Decoders aborted during the macro step under way, for truncate_step: their context and blocks at
  // the abort, and the free queue's plain run their own blocks joined.
  struct MacroAbort {
    int num_computed, num_blocks;
    std::uint64_t plain_at;
  };
  std::vector<MacroAbort> macro_aborts_;
  [[gnu::noinline]] void settle_macro_aborts(Micros now);
  int substeps_ending_by(Micros now) const;  // sub-steps of the macro step that end at or before `now`
  int plan_substeps();               // how many pure-decode sub-steps the batch can run unchanged
  std::int64_t num_preemptions_ = 0;
  std::int64_t num_generation_tokens_ = 0;
  std::int64_t prefix_queries_[2] = {0, 0};  // tokens looked up: [0] requests never preempted, [1] preempted ones
  std::int64_t prefix_hits_[2] = {0, 0};     // tokens found cached, the same way
  void count_lookup(const Request& r, int tokens, int hit_tokens) {
    if (!config_.enable_prefix_caching) return;  // no lookup (prefix_cache_lookup_enabled)
    prefix_queries_[r.preempted_before] += tokens;
    prefix_hits_[r.preempted_before] += hit_tokens;
  }
};

}  // namespace gpuscale
