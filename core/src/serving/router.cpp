// The endpoint picker's scorers, its approximate prefix index and the max-score picker (see router.hpp).
#include "serving/router.hpp"

#include <algorithm>
#include <iterator>
#include <limits>

namespace gpuscale {

const EppProfile& EppConfig::profile_for(const char* role) const {
  for (const EppProfile& p : profiles)
    if (p.name == role) return p;
  return profiles.front();
}

// hashing.go hashPrompt: the prompt's characters in blocks of blockSizeTokens × 4 (averageCharactersPerToken),
// cut to maxPrefixBlocks blocks; a last partial block is hashed too; a prompt shorter than one block has none.
PromptBlocks prompt_blocks(std::uint32_t prefix_id, int prefix_tokens, int prompt_tokens, int block_size_tokens, int max_blocks) {
  PromptBlocks b;
  if (block_size_tokens <= 0 || prompt_tokens < block_size_tokens) return b;
  const std::int64_t full = prompt_tokens / block_size_tokens;
  const bool partial = prompt_tokens % block_size_tokens != 0;
  b.total = static_cast<int>(std::min<std::int64_t>(full + (partial ? 1 : 0), max_blocks));
  // Block i is the prefix's when all its tokens are (every request with the prefix hashes it alike:
  // the chain seeds each block with the one before).
  if (prefix_id != 0) {
    b.prefix_id = prefix_id;
    b.shared = std::min(prefix_tokens / block_size_tokens, b.total);
  }
  return b;
}

std::map<std::uint64_t, int> ApproxPrefixIndex::match(const PromptBlocks& p) const {
  std::map<std::uint64_t, int> out;
  if (p.prefix_id == 0 || p.shared == 0) return out;
  // The first block no server holds ends the walk (plugin.go matchLongestPrefix: it breaks there).
  std::vector<std::pair<int, int>> held;
  for (const auto& [id, s] : servers_) {
    const auto it = s.of_prefix.find(p.prefix_id);
    if (it != s.of_prefix.end()) held.push_back({it->second->lo, std::min(it->second->hi, p.shared)});
  }
  std::sort(held.begin(), held.end());
  int end = 0;
  for (const auto& [lo, hi] : held) {
    if (lo > end) break;
    end = std::max(end, hi);
  }
  for (const auto& [id, s] : servers_) {
    const auto it = s.of_prefix.find(p.prefix_id);
    if (it == s.of_prefix.end()) continue;
    const int n = std::min(it->second->hi, end) - it->second->lo;
    if (n > 0) out[id] = n;
  }
  return out;
}

// indexer.go Add: each hash moved to the front of the server's LRU in order (the prefix's blocks,
// then the request's own), the least recent evicted past the capacity.
void ApproxPrefixIndex::add(std::uint64_t server, std::int64_t capacity, const PromptBlocks& p) {
  Server& s = servers_[server];
  if (s.capacity == 0) s.capacity = std::max<std::int64_t>(capacity, 1);  // lru.NewWithEvict(size) at the first Add
  if (p.total == 0) return;
  if (p.prefix_id != 0 && p.shared > 0) {
    const auto it = s.of_prefix.find(p.prefix_id);
    if (it != s.of_prefix.end()) {
      s.size -= it->second->hi - it->second->lo;
      // Two own runs that the prefix run kept apart are one now.
      auto after = s.lru.erase(it->second);
      if (after != s.lru.begin() && after != s.lru.end() && after->prefix == 0 && std::prev(after)->prefix == 0) {
        std::prev(after)->hi += after->hi - after->lo;
        s.lru.erase(after);
      }
      s.of_prefix.erase(it);
    }
    s.lru.push_front(Run{p.prefix_id, 0, p.shared});
    s.of_prefix[p.prefix_id] = s.lru.begin();
    s.size += p.shared;
  }
  const int own = p.total - p.shared;
  if (own > 0) {
    if (!s.lru.empty() && s.lru.front().prefix == 0) s.lru.front().hi += own;
    else s.lru.push_front(Run{0, 0, own});
    s.size += own;
  }
  evict(s);
}

void ApproxPrefixIndex::evict(Server& s) {
  while (s.size > s.capacity && !s.lru.empty()) {
    Run& last = s.lru.back();
    const std::int64_t over = s.size - s.capacity;
    const std::int64_t n = std::min<std::int64_t>(over, last.hi - last.lo);
    last.lo += static_cast<int>(n);  // a prefix run loses its least recent blocks: its first ones
    s.size -= n;
    if (last.lo >= last.hi) {
      if (last.prefix != 0) s.of_prefix.erase(last.prefix);
      s.lru.pop_back();
    }
  }
}

void ApproxPrefixIndex::remove_server(std::uint64_t server) { servers_.erase(server); }

std::size_t epp_pick(const EppConfig& config, const EppProfile& profile, const std::vector<Endpoint>& candidates, std::uint32_t prefix_id,
                     int prefix_tokens, int prompt_tokens, ApproxPrefixIndex& index, Rng& ties, PickExplanation* why) {
  const std::size_t n = candidates.size();
  std::vector<double> total(n, 0.0);
  // queue-scorer: (max - q) / (max - min) over the candidates, 1 when they are all equal.
  if (profile.queue_weight != 0) {
    int lo = std::numeric_limits<int>::max(), hi = std::numeric_limits<int>::min();
    for (const Endpoint& e : candidates) {
      lo = std::min(lo, e.waiting);
      hi = std::max(hi, e.waiting);
    }
    for (std::size_t i = 0; i < n; ++i)
      total[i] += profile.queue_weight * (hi == lo ? 1.0 : static_cast<double>(hi - candidates[i].waiting) / static_cast<double>(hi - lo));
  }
  // kv-cache-utilization-scorer: 1 - KVCacheUsagePercent.
  if (profile.kv_cache_weight != 0)
    for (std::size_t i = 0; i < n; ++i) total[i] += profile.kv_cache_weight * (1 - candidates[i].kv_usage);
  // prefix-cache-scorer: matched blocks / the prompt's blocks (0 without blocks). autoTune takes the
  // block size from the first candidate's metrics (plugin.go GetBlockSize).
  const int block_size = config.prefix.auto_tune && candidates.front().cache_block_size > 0 ? candidates.front().cache_block_size
                                                                                           : config.prefix.block_size_tokens;
  const PromptBlocks blocks = prompt_blocks(prefix_id, prefix_tokens, prompt_tokens, block_size, config.prefix.max_prefix_blocks);
  if (profile.prefix_cache_weight != 0 && blocks.total > 0) {
    const std::map<std::uint64_t, int> matched = index.match(blocks);
    for (std::size_t i = 0; i < n; ++i) {
      const auto it = matched.find(candidates[i].server);
      if (it != matched.end()) total[i] += profile.prefix_cache_weight * static_cast<double>(it->second) / static_cast<double>(blocks.total);
    }
  }
  // max-score-picker: shuffled, then stable-sorted by score: one of the highest, each equally likely.
  const double best = *std::max_element(total.begin(), total.end());
  std::vector<std::size_t> top;
  for (std::size_t i = 0; i < n; ++i)
    if (total[i] == best) top.push_back(i);
  const std::size_t chosen = top.size() == 1 ? top.front() : top[static_cast<std::size_t>(ties.uniform_int(static_cast<std::uint64_t>(top.size())))];
  // PreRequest: the chosen server now holds the prompt's blocks; its LRU holds as many as its GPU
  // blocks (autoTune) or lruCapacityPerServer.
  const Endpoint& e = candidates[chosen];
  index.add(e.server, config.prefix.auto_tune && e.cache_num_blocks > 0 ? e.cache_num_blocks : config.prefix.lru_capacity_per_server, blocks);
  if (why) {
    why->scores.clear();
    for (std::size_t i = 0; i < n; ++i) why->scores.push_back({candidates[i].server, total[i]});
    why->prefix_total_blocks = blocks.total;
  }
  return chosen;
}

}  // namespace gpuscale
