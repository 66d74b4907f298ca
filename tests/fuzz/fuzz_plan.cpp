// libFuzzer target: the plan designer's input (docs/plan.md), read as api::plan reads it
// (parse_json_text, then plan::parse_plan_input). Making the plan simulates about 25 hours, so only
// the reading is fuzzed here; tests/test_plan.cpp and the bad-input catalogue cover the rest.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/json.hpp"
#include "plan/plan.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuscale::plan::PlanInput in = gpuscale::plan::parse_plan_input(gpuscale::parse_json_text(text));
    // What the reader accepted is within the documented bounds.
    if (in.max_nodes < 1 || in.max_nodes > 64 || in.instance_types.empty() || in.average_rps * in.burst_factor > 25 ||
        in.average_concurrency < 0 || in.average_concurrency > 500) {
      __builtin_trap();
    }
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
