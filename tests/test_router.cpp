// The endpoint picker (core/src/serving/router.cpp): the queue, KV-cache-utilization and prefix-cache
// scorers of the Gateway API Inference Extension, the approximate prefix index, the max-score picker,
// and the EndpointPickerConfig reader.
#include <catch2/catch.hpp>

#include "scenario/scenario.hpp"
#include "serving/router.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

Endpoint endpoint(std::uint64_t server, int waiting, double kv) {
  Endpoint e;
  e.server = server;
  e.waiting = waiting;
  e.kv_usage = kv;
  e.cache_block_size = 16;
  e.cache_num_blocks = 1000;
  return e;
}

EppProfile only(double queue, double kv, double prefix) {
  EppProfile p;
  p.queue_weight = queue;
  p.kv_cache_weight = kv;
  p.prefix_cache_weight = prefix;
  return p;
}

}  // namespace

TEST_CASE("router: a prompt's blocks: whole blocks of the shared prefix, the rest its own, at most 256", "[router]") {
  // 100 prefix tokens in 16-token blocks: 6 whole blocks (96 tokens); a 150-token prompt has 10 blocks,
  // the last partial (hashing.go hashes a trailing partial block too).
  PromptBlocks b = prompt_blocks(7, 100, 150, 16, 256);
  CHECK(b.prefix_id == 7);
  CHECK(b.shared == 6);
  CHECK(b.total == 10);
  CHECK(prompt_blocks(7, 100, 15, 16, 256).total == 0);  // shorter than one block: no hashes
  CHECK(prompt_blocks(7, 100, 5000, 16, 256).total == 256);
  CHECK(prompt_blocks(0, 0, 150, 16, 256).shared == 0);
  CHECK(prompt_blocks(7, 8000, 9000, 16, 256).shared == 256);  // cut with the prompt
}

TEST_CASE("router: the prefix index matches leading blocks and evicts a prefix's first blocks first", "[router]") {
  ApproxPrefixIndex index;
  const PromptBlocks p = prompt_blocks(1, 96, 160, 16, 256);  // 6 shared, 10 in all
  index.add(1, 1000, p);
  CHECK(index.match(p) == std::map<std::uint64_t, int>{{1, 6}});
  index.add(2, 1000, p);
  CHECK(index.match(p) == std::map<std::uint64_t, int>{{1, 6}, {2, 6}});
  // Server 3 holds 8 entries: the 4 own blocks are the most recent, so the prefix loses 2, and the
  // least recent of a run added in order are its first blocks (indexer.go: hashicorp LRU, Add in order).
  index.add(3, 8, p);
  CHECK(index.match(p) == std::map<std::uint64_t, int>{{1, 6}, {2, 6}, {3, 4}});
  // Where no server holds block 0, nothing matches (matchLongestPrefix stops at the first miss).
  ApproxPrefixIndex alone;
  alone.add(3, 8, p);
  CHECK(alone.match(p).empty());
  // An LRU holds the most recent distinct entries: a second request like it leaves the same (its own
  // four blocks, then blocks 2-5 of the prefix).
  alone.add(3, 8, p);
  CHECK(alone.match(p).empty());
  // With room for 12: a request without the prefix and eight own blocks pushes the prefix out; the
  // next request with it brings it back whole.
  ApproxPrefixIndex roomy;
  roomy.add(3, 12, p);
  CHECK(roomy.match(p) == std::map<std::uint64_t, int>{{3, 6}});
  roomy.add(3, 12, prompt_blocks(0, 0, 128, 16, 256));
  CHECK(roomy.match(p).empty());
  roomy.add(3, 12, p);
  CHECK(roomy.match(p) == std::map<std::uint64_t, int>{{3, 6}});
}

TEST_CASE("router: the scorers and the max-score picker", "[router]") {
  const EppConfig config;
  ApproxPrefixIndex index;
  Rng ties(1);
  PickExplanation why;
  // Queue scorer alone: (max - q) / (max - min): 1, 0, 0.5; the emptiest queue wins.
  const std::vector<Endpoint> c = {endpoint(10, 0, 0.5), endpoint(11, 4, 0.1), endpoint(12, 2, 0.0)};
  CHECK(epp_pick(config, only(1, 0, 0), c, 0, 0, 200, index, ties, &why) == 0);
  CHECK(why.scores[1].second == 0.0);
  CHECK(why.scores[2].second == 0.5);
  // KV scorer alone: 1 - usage; the emptiest cache wins.
  CHECK(epp_pick(config, only(0, 1, 0), c, 0, 0, 200, index, ties, &why) == 2);
  CHECK(why.scores[0].second == 0.5);
  // Weighted: 2 × queue + 2 × kv: 2 + 1 = 3, 0 + 1.8 = 1.8, 1 + 2 = 3: a tie the seeded draw breaks.
  const std::size_t tie = epp_pick(config, only(2, 2, 0), c, 0, 0, 200, index, ties, &why);
  CHECK((tie == 0 || tie == 2));
  CHECK(why.scores[0].second == 3.0);
  CHECK(why.scores[1].second == Approx(1.8));
  // The prefix scorer sends a request with a prefix where its blocks went before: the picks above
  // recorded nothing shared (no prefix); now server 11 gets one, and with weight 3 it wins the next
  // although its queue is the longest: 3 × 6/10 + 2 × 0 + 2 × 0.9 = 3.6 against 2 × 1 + 2 × 0.5 = 3
  // (server 10) and 2 × 0.5 + 2 × 1 = 3 (server 12).
  const std::vector<Endpoint> one = {endpoint(11, 4, 0.1)};
  CHECK(epp_pick(config, only(2, 2, 3), one, 5, 96, 160, index, ties, nullptr) == 0);
  const std::size_t next = epp_pick(config, only(2, 2, 3), c, 5, 96, 160, index, ties, &why);
  CHECK(why.scores[1].second == Approx(3 * 0.6 + 0 + 2 * 0.9));
  CHECK(next == 1);
  // Equal candidates: the picker's draw, the same for the same seed.
  const std::vector<Endpoint> same = {endpoint(1, 0, 0), endpoint(2, 0, 0), endpoint(3, 0, 0)};
  Rng a(42), b(42);
  ApproxPrefixIndex ia, ib;
  for (int i = 0; i < 20; ++i) CHECK(epp_pick(config, only(2, 2, 0), same, 0, 0, 50, ia, a, nullptr) == epp_pick(config, only(2, 2, 0), same, 0, 0, 50, ib, b, nullptr));
}

TEST_CASE("router: the EndpointPickerConfig in a scenario, and its mistakes", "[router][scenario]") {
  const Json epp = Json::parse(R"({
    "apiVersion": "inference.networking.x-k8s.io/v1alpha1", "kind": "EndpointPickerConfig",
    "plugins": [{"type": "queue-scorer"}, {"type": "kv-cache-utilization-scorer"},
                {"type": "prefix-cache-scorer", "parameters": {"blockSizeTokens": 64, "lruCapacityPerServer": 5000, "autoTune": false}},
                {"type": "max-score-picker"}],
    "schedulingProfiles": [{"name": "default", "plugins": [{"pluginRef": "queue-scorer", "weight": 2},
                                                           {"pluginRef": "kv-cache-utilization-scorer"},
                                                           {"pluginRef": "prefix-cache-scorer", "weight": 3},
                                                           {"pluginRef": "max-score-picker"}]}]})");
  const Scenario s = parse_scenario(Json{{"router", "epp"}, {"epp", epp}});
  REQUIRE(s.epp.profiles.size() == 1);
  CHECK(s.epp.profiles[0].queue_weight == 2);
  CHECK(s.epp.profiles[0].kv_cache_weight == 1);  // loader/defaults.go DefaultScorerWeight
  CHECK(s.epp.profiles[0].prefix_cache_weight == 3);
  CHECK(s.epp.prefix.block_size_tokens == 64);
  CHECK(s.epp.prefix.lru_capacity_per_server == 5000);
  CHECK_FALSE(s.epp.prefix.auto_tune);
  // Without a config, llm-d's defaults: prefix 3, KV 2, queue 2.
  const Scenario d = parse_scenario(Json{{"router", "epp"}});
  CHECK(d.epp.profile_for("decode").prefix_cache_weight == 3);
  const auto error_path = [](Json doc) { return testing::input_error([&] { parse_scenario(doc); }).path(); };
  Json bad = epp;
  bad["plugins"][0]["type"] = "session-affinity-scorer";
  CHECK(error_path(Json{{"router", "epp"}, {"epp", bad}}) == "/epp/plugins/0/type");
  bad = epp;
  bad["schedulingProfiles"][0]["plugins"][1]["pluginRef"] = "kv-scorer";
  CHECK(error_path(Json{{"router", "epp"}, {"epp", bad}}) == "/epp/schedulingProfiles/0/plugins/1/pluginRef");
  CHECK(error_path(Json{{"router", "least_outstanding"}, {"epp", epp}}) == "/epp");
}
