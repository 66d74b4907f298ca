// The Kubernetes value formats every object uses (core/src/k8s/): quantities, Go durations, names.
#include <catch2/catch.hpp>

#include <string>

#include "gpuscale/errors.hpp"
#include "k8s/duration.hpp"
#include "k8s/names.hpp"
#include "k8s/pod.hpp"
#include "k8s/quantity.hpp"
#include "scenario/scenario.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kMinute = 60 * kMicrosPerSecond;
constexpr Micros kHour = 60 * kMinute;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("quantities parse to milli-units like Quantity.MilliValue", "[k8s]") {
  CHECK(parse_quantity_milli("500m", "/q") == 500);
  CHECK(parse_quantity_milli("2", "/q") == 2000);
  CHECK(parse_quantity_milli("1.5", "/q") == 1500);
  CHECK(parse_quantity_milli("10Ki", "/q") == 10240000);
  CHECK(parse_quantity_milli("1Gi", "/q") == 1073741824000);
  CHECK(parse_quantity_milli("1k", "/q") == 1000000);
  CHECK(parse_quantity_milli("1M", "/q") == 1000000000);
  CHECK(parse_quantity_milli("1e3", "/q") == 1000000);
  CHECK(parse_quantity_milli("1E3", "/q") == 1000000);
  CHECK(parse_quantity_milli("+.5", "/q") == 500);
  CHECK(parse_quantity_milli("-1.5", "/q") == -1500);
  CHECK(parse_quantity_milli("0.1m", "/q") == 1);   // rounded up
  CHECK(parse_quantity_milli("1n", "/q") == 1);     // rounded up
  CHECK(parse_quantity_milli("-0.1m", "/q") == 0);  // ceil of a negative
  CHECK(parse_quantity_milli("0", "/q") == 0);
  CHECK(parse_quantity_double("0.05", "/q") == 0.05);
  CHECK(parse_quantity_double("10m", "/q") == 0.01);
  CHECK(quantity_milli(Json(20), "/q") == 20000);
  CHECK(quantity_milli(Json(0.1), "/q") == 100);
  CHECK(quantity_milli(Json(2.5e3), "/q") == 2500000);

  for (const char* bad : {"5x", "", "1.2.3", "m", "1e", "1Ki5", " 1", "1 "}) {
    try {
      parse_quantity_milli(bad, "/spec/x");
      FAIL(std::string("accepted ") + bad);
    } catch (const InputError& e) {
      CHECK(e.path() == "/spec/x");
      CHECK(std::string(e.what()).find("not a valid quantity") != std::string::npos);
    }
  }
  CHECK_THROWS_AS(parse_quantity_milli("1E", "/q"), InputError);  // 1 exa = 1e21 milli: out of int64
  CHECK_THROWS_AS(quantity_milli(Json(true), "/q"), InputError);

  CHECK(format_quantity_milli(1500) == "1500m");
  CHECK(format_quantity_milli(2000) == "2");
  CHECK(format_quantity_milli(10000000) == "10k");
  CHECK(format_quantity_milli(6667) == "6667m");
  CHECK(format_quantity_milli(0) == "0");
}

// ---------------------------------------------------------------------------------------------
// Tolerance
// ---------------------------------------------------------------------------------------------

TEST_CASE("Go durations parse to microseconds", "[k8s]") {
  CHECK(parse_duration("1h30m", "/d") == 90 * kMinute);
  CHECK(parse_duration("1.5h", "/d") == 90 * kMinute);
  CHECK(parse_duration("720h", "/d") == 720 * kHour);
  CHECK(parse_duration("0s", "/d") == 0);
  CHECK(parse_duration("0", "/d") == 0);  // Go's one unit-less duration
  CHECK(parse_duration("10m", "/d") == 10 * kMinute);
  CHECK(parse_duration("300ms", "/d") == 300000);
  CHECK(parse_duration(".5s", "/d") == 500000);
  CHECK(parse_duration("1.h", "/d") == kHour);
  CHECK(parse_duration("2h45m30.5s", "/d") == 2 * kHour + 45 * kMinute + 30500000);
  CHECK(parse_duration("1us", "/d") == 1);
  CHECK(parse_duration("1\xC2\xB5s", "/d") == 1);  // µ (U+00B5)
  CHECK(parse_duration("1\xCE\xBCs", "/d") == 1);  // μ (U+03BC)
  CHECK(parse_duration("1500ns", "/d") == 2);      // rounded to the nearest µs
  CHECK(parse_duration("1400ns", "/d") == 1);
  CHECK(parse_duration("+5m", "/d") == 5 * kMinute);
  CHECK(parse_duration("2562047h", "/d") == 2562047 * kHour);  // near Go's int64-nanosecond limit

  for (const char* bad : {"1hr", "10 minutes", "-5m", "", "h", ".s", "1.5.h", "5", "1h 30m", "2562048h", "1d", "-"}) {
    INFO(bad);
    try {
      parse_duration(bad, "/spec/x");
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(e.path() == "/spec/x");
      if (std::string(bad) != "-5m") CHECK(contains(e.message(), "ns, us, µs, ms, s, m, h"));
    }
  }
}

TEST_CASE("durations format to the shortest whole-unit text", "[k8s]") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(90 * kMinute) == "1h30m");
  CHECK(format_duration(720 * kHour) == "720h");
  CHECK(format_duration(kHour + 30 * kMicrosPerSecond) == "1h30s");
  CHECK(format_duration(1500) == "1ms500us");
  for (const char* text : {"1h30m", "720h", "10m", "45s", "1h1m1s"}) CHECK(format_duration(parse_duration(text, "")) == text);
}


TEST_CASE("pod templates: scheduler, priority class, labels and pod group are parsed and checked", "[k8s]") {
  PodTemplate base;
  base.name = "vllm";
  const PodTemplate t = parse_pod_template(Json::parse(R"({
    "gpus": 8, "schedulerName": "kai-scheduler", "priorityClassName": "inference",
    "labels": {"kai.scheduler/queue": "team-a", "app": "vllm"},
    "annotations": {"pod-group-name": "pg-llama-0", "karpenter.sh/do-not-disrupt": "true"}
  })"), "/pod", base);
  CHECK(t.name == "vllm");  // fields not given keep the base's
  CHECK(t.gpus == 8);
  CHECK(t.scheduler_name == "kai-scheduler");
  CHECK(t.priority_class_name == "inference");
  CHECK(t.priority == 125);  // KAI's built-in inference class
  CHECK(t.labels.at("kai.scheduler/queue") == "team-a");
  CHECK(t.pod_group == "pg-llama-0");
  CHECK(t.do_not_disrupt);
  CHECK(parse_pod_template(Json::object(), "/pod", base).scheduler_name == "default-scheduler");
  CHECK(parse_pod_template(Json::parse(R"({"priorityClassName": "system-cluster-critical"})"), "/pod", base).priority == 2000000000);
  // An unknown class needs its value; an explicit value wins.
  CHECK(parse_pod_template(Json::parse(R"({"priorityClassName": "batch-low", "priority": -10})"), "/pod", base).priority == -10);

  auto error_of = [&](const char* text) {
    try {
      parse_pod_template(Json::parse(text), "/pod", base);
    } catch (const InputError& e) {
      return e.path() + " " + e.message();
    }
    return std::string("accepted");
  };
  CHECK(contains(error_of(R"({"priorityClassName": "batch-low"})"), "/pod/priorityClassName"));
  CHECK(contains(error_of(R"({"schedulerName": "Not A Name"})"), "/pod/schedulerName"));
  CHECK(contains(error_of(R"({"labels": {"bad key!": "x"}})"), "/pod/labels/bad key!"));
  CHECK(contains(error_of(R"({"labels": {"app": "no spaces allowed"}})"), "label value"));
  CHECK(contains(error_of(R"({"annotations": {"pod-group-name": "UPPER"}})"), "/pod/annotations/pod-group-name"));
  CHECK(contains(error_of(R"({"priority": 2000000000})"), "/pod/priority"));  // user classes stop at 1e9
}

TEST_CASE("a scenario's pods must name a scheduler the lab runs", "[k8s]") {
  try {
    parse_scenario(Json::parse(R"({"cluster": {"preset": "karpenter_when_empty", "inference_pod": {"schedulerName": "volcano"}}})"));
    FAIL("accepted an unknown scheduler");
  } catch (const InputError& e) {
    CHECK(e.path() == "/cluster/inference_pod/schedulerName");
    CHECK(contains(e.message(), "default-scheduler"));
  }
}
