// The JSON operations every front end offers (core/src/api.cpp): the error envelope, seed parsing,
// malformed input, and the documented examples.
#include <catch2/catch.hpp>

#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "test_support.hpp"
#include "exercises/exercise.hpp"
#include "scenario/scenario.hpp"

using namespace gpuscale;

namespace {

using gpuscale::testing::input_error;
using gpuscale::testing::read_text;

// A one-minute scenario on one fixed replica: enough to produce every part of a result.
const char* kSmallScenario = R"({
  "duration_s": 60,
  "workload": {"preset": "custom", "phases": [{"duration_s": 60, "rate_rps": 1}]},
  "autoscaler": {"strategy": "fixed", "replicas": 1}
})";

}  // namespace

TEST_CASE("envelope wraps results and turns every exception into an error object", "[api]") {
  SECTION("success") {
    const Json out = Json::parse(api::envelope([] { return Json{{"x", 1}}; }));
    CHECK(out == Json{{"ok", true}, {"result", {{"x", 1}}}});
  }
  SECTION("input errors keep their path and message") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw InputError("/autoscaler/hpa/maxReplicas", "is 0"); }));
    CHECK(out == Json{{"ok", false}, {"error", {{"path", "/autoscaler/hpa/maxReplicas"}, {"message", "is 0"}}}});
  }
  SECTION("internal errors become a message at the root") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw std::logic_error("boom"); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("path") == "");
    CHECK(out.at("error").at("message") == "internal error: boom");
  }
  SECTION("running out of memory is reported, not propagated") {
    const Json out = Json::parse(api::envelope([]() -> Json { throw std::bad_alloc(); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("message") == "out of memory");
  }
  SECTION("a real operation's error") {
    const Json out = Json::parse(api::envelope([] { return api::run(R"({"colour": "red"})"); }));
    CHECK(out.at("ok") == false);
    CHECK(out.at("error").at("path") == "/colour");
    CHECK_THAT(out.at("error").at("message").get<std::string>(), Catch::Contains("unknown field"));
  }
}

TEST_CASE("parse_seed accepts whole numbers from 0 to 2^53 and nothing else", "[api]") {
  CHECK(api::parse_seed("0") == 0);
  CHECK(api::parse_seed("42") == 42);
  CHECK(api::parse_seed("007") == 7);
  CHECK(api::parse_seed("9007199254740992") == (std::uint64_t(1) << 53));
  for (const char* bad : {"", "-1", "+1", "1.5", "abc", "1e3", " 1", "1 ", "0x10", "9007199254740993",
                          "18446744073709551616", "99999999999999999999"}) {
    INFO("seed text \"" << bad << "\"");
    const InputError e = input_error([&] { api::parse_seed(bad); });
    CHECK(e.path() == "/seed");
    CHECK_FALSE(e.message().empty());
  }
}

TEST_CASE("malformed JSON is an input error that says where", "[api]") {
  const InputError e = input_error([] { api::run("{\n  \"seed\": 1,\n  oops\n}"); });
  CHECK(e.path() == "");
  CHECK_THAT(e.message(), Catch::Contains("malformed JSON"));
  CHECK_THAT(e.message(), Catch::Contains("line 3"));
  CHECK_THAT(e.message(), Catch::Contains("column"));
  CHECK_THAT(input_error([] { api::run(""); }).message(), Catch::Contains("line 1"));
  CHECK(input_error([] { api::hpa("{"); }).path() == "");
  CHECK(input_error([] { api::run("[1, 2]"); }).path() == "");
}

TEST_CASE("run returns the documented parts of a result", "[api]") {
  const Json r = api::run(kSmallScenario);
  for (const char* key : {"summary", "series", "autoscaler", "decisions", "num_events"}) CHECK(r.contains(key));
  CHECK_FALSE(r.contains("requests"));  // only on request
  CHECK(r.at("autoscaler").at("strategy") == "fixed");
  CHECK(r.at("autoscaler").at("hpa").is_null());
  CHECK(r.at("series").at("t_s").size() == 5);  // scrapes at 0, 15, 30, 45, 60 s
  CHECK(r.at("series").contains("DCGM_FI_DEV_GPU_UTIL"));
  CHECK(r.at("series").contains("kv_cache_usage_perc"));

  Json with_requests = Json::parse(kSmallScenario);
  with_requests["output"] = {{"requests", true}, {"decisions", false}};
  const Json r2 = api::run(with_requests.dump());
  CHECK_FALSE(r2.contains("decisions"));
  CHECK(r2.at("requests").size() == r2.at("summary").at("num_requests").get<std::size_t>());
  CHECK(r2.at("requests_truncated") == false);
  CHECK(r2.at("summary") == r.at("summary"));  // what is reported does not change what happens
}

TEST_CASE("hpa evaluates the documented KEDA example to 4 replicas", "[api]") {
  const Json d = api::hpa(read_text("docs/examples/hpa-keda.json"));
  CHECK(d.at("currentReplicas") == 1);
  CHECK(d.at("desiredReplicas") == 4);
  CHECK(d.at("metricDesiredReplicas") == 4);  // ceil(20 / 5)
  Json doc = Json::parse(read_text("docs/examples/hpa-keda.json"));
  doc["spec"]["maxReplicas"] = 3;
  CHECK(api::hpa(doc.dump()).at("desiredReplicas") == 3);
  doc["spec"]["colour"] = "red";
  CHECK(input_error([&] { api::hpa(doc.dump()); }).path() == "/spec/colour");
}

TEST_CASE("exercise operations load the definition and check its id and the answer text", "[api]") {
  const std::string text = read_text("exercises/ex1-bursty.json");
  CHECK(api::exercise(text, 5) == exercise1::variant(Json::parse(text), 5));

  Json other = Json::parse(text);
  other["id"] = "99";
  CHECK(input_error([&] { api::exercise(other.dump(), 1); }).path() == "/id");
  // A definition that does not fit its grader is an input error, not an internal one.
  other["id"] = "2";
  const InputError misfit = input_error([&] { api::exercise(other.dump(), 1); });
  // Exercise 1's file read as exercise 2's: the first field exercise 2's grader needs and it lacks.
  CHECK(misfit.path() == "/variant/slo_kind");
  CHECK_THAT(misfit.message(), Catch::Contains("is required"));
  other.erase("id");
  CHECK(input_error([&] { api::exercise(other.dump(), 1); }).path() == "/id");
  CHECK(input_error([] { api::exercise("[]", 1); }).path() == "");
  CHECK(input_error([] { api::explain("{", 1); }).path() == "");

  // Answers are checked before anything is simulated.
  const InputError bad = input_error([&] { api::grade(text, 1, "{\"a\": "); });
  CHECK(bad.path() == "/a");  // the value of "a" is missing
  CHECK_THAT(bad.message(), Catch::Contains("malformed JSON"));
  CHECK(input_error([&] { api::grade(text, 1, R"({"a": "twelve"})"); }).path() == "/a");
  const InputError big = input_error([&] { api::grade(text, 1, "\"" + std::string(70000, 'x') + "\""); });
  CHECK_THAT(big.message(), Catch::Contains("bytes"));
}

TEST_CASE("schema and version", "[api]") {
  CHECK(api::schema() == scenario_schema());
  CHECK(std::string(api::version()).size() > 0);
}
