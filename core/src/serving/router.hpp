// The gateway's choice of a replica for a request: least outstanding requests, round robin, or an
// llm-d-like endpoint picker (the Gateway API Inference Extension's EPP): weighted scorers over the
// candidate endpoints, then the max-score picker. Pure: the world passes each candidate's gauges and
// keeps the picker's state (the approximate prefix index, the tie-break stream).
//
// Ported from kubernetes-sigs/gateway-api-inference-extension at a70292c1~1 (2026-06, the last tree
// before the EPP left that repository): pkg/epp/framework/plugins/scheduling/scorer/queuedepth/queue.go,
// scorer/kvcacheutilization/kvcache_utilization.go, scorer/prefix/plugin.go, picker/maxscore/picker.go,
// and the approximate prefix-cache data producer (requestcontrol/dataproducer/approximateprefix:
// plugin.go, hashing.go, indexer.go, types.go).
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernel/rng.hpp"

namespace gpuscale {

// A scheduling profile's scorers and their weights (an EndpointPickerConfig's schedulingProfiles
// entry). A weight of 0 leaves the scorer out.
struct EppProfile {
  std::string name = "default";
  double queue_weight = 2;         // queue-scorer
  double kv_cache_weight = 2;      // kv-cache-utilization-scorer
  double prefix_cache_weight = 3;  // prefix-cache-scorer (llm-d's inference-scheduling defaults: 3, 2, 2)
};

// The approximate prefix-cache producer's parameters (approximateprefix/types.go defaultConfig).
struct PrefixIndexConfig {
  bool auto_tune = true;                 // block size and per-server capacity from the endpoint's metrics
  int block_size_tokens = 16;            // defaultBlockSizeTokens
  int max_prefix_blocks = 256;           // defaultMaxPrefixBlocks
  std::int64_t lru_capacity_per_server = 31250;  // defaultLRUCapacityPerServer
};

struct EppConfig {
  std::vector<EppProfile> profiles{EppProfile{}};  // "prefill" / "decode" by name in P/D, else the first
  PrefixIndexConfig prefix;
  const EppProfile& profile_for(const char* role) const;
};

// A candidate endpoint as the EPP's data layer sees it (it scrapes the model servers every 50 ms).
struct Endpoint {
  std::uint64_t server = 0;   // (pool << 32) | replica: the pod
  int waiting = 0;            // vllm:num_requests_waiting (WaitingQueueSize)
  int running = 0;            // vllm:num_requests_running
  double kv_usage = 0;        // vllm:kv_cache_usage_perc (KVCacheUsagePercent), 0-1
  int cache_block_size = 16;  // vllm:cache_config_info block_size (CacheBlockSize)
  std::int64_t cache_num_blocks = 0;  // num_gpu_blocks (CacheNumBlocks)
};

// A request's prompt as block hashes: its first `shared` blocks are the shared prefix's (the same
// hash chain for every request with that prefix), the rest its own. Token counts stand for the text:
// the plugin's blocks are blockSizeTokens × 4 characters of the prompt.
struct PromptBlocks {
  std::uint32_t prefix_id = 0;  // 0: none
  int shared = 0;               // blocks wholly inside the shared prefix
  int total = 0;                // all the prompt's blocks (the last may be partial), at most max_prefix_blocks
};
PromptBlocks prompt_blocks(std::uint32_t prefix_id, int prefix_tokens, int prompt_tokens, int block_size_tokens, int max_blocks);

// The indexer (indexer.go): per server an LRU of the block hashes routed there, capacity its GPU
// blocks; block hash → the servers holding it. Kept as runs: a prefix's blocks routed together stay
// together, a request's own blocks match nothing later and only take room.
class ApproxPrefixIndex {
 public:
  // matchLongestPrefix: per server, how many of the prompt's leading blocks it holds, over the blocks
  // up to the first that no server holds.
  std::map<std::uint64_t, int> match(const PromptBlocks& p) const;
  // PreRequest: the request's blocks were sent to `server` (created with `capacity` blocks).
  void add(std::uint64_t server, std::int64_t capacity, const PromptBlocks& p);
  void remove_server(std::uint64_t server);

 private:
  struct Run {
    std::uint32_t prefix = 0;  // 0: a request's own blocks (never matched)
    int lo = 0, hi = 0;        // prefix blocks [lo, hi); an own run holds hi - lo blocks
  };
  struct Server {
    std::int64_t capacity = 0, size = 0;
    std::list<Run> lru;  // most recent first; within a prefix run, its block lo is the least recent
    std::map<std::uint32_t, std::list<Run>::iterator> of_prefix;
  };
  void evict(Server& s);
  std::map<std::uint64_t, Server> servers_;
};

// Why the picker chose the endpoint it did (for the decision log).
struct PickExplanation {
  std::vector<std::pair<std::uint64_t, double>> scores;  // each candidate's weighted score, in candidate order
  int prefix_total_blocks = 0;
};

// One scheduling cycle of the EPP over `candidates` (at least one): the weighted sum of the profile's
// scorers, the max-score picker (a seeded shuffle, then the highest score). Returns the index into
// `candidates`; records the request's blocks on the chosen server.
std::size_t epp_pick(const EppConfig& config, const EppProfile& profile, const std::vector<Endpoint>& candidates, std::uint32_t prefix_id,
                     int prefix_tokens, int prompt_tokens, ApproxPrefixIndex& index, Rng& ties, PickExplanation* why);

}  // namespace gpuscale
