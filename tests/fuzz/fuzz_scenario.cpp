// libFuzzer target: the input as a scenario (docs/scenario.md). Parsed, then, if it parses, simulated
// under a small work budget, so each input runs in milliseconds, and written out as the result JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/json.hpp"
#include "scenario/scenario.hpp"
#include "sim/budget.hpp"
#include "sim/simulation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuscale::Scenario scenario = gpuscale::parse_scenario_text(text);
    // max_events, max_work, max_series_rows: 1/400 of the documented budget (docs/limits.md). Under ASan,
    // UBSan and libFuzzer's comparison tracing the kernel runs about 100,000 events a second, so a run at
    // this budget takes at most about 0.2 s; scenarios estimated above it are refused before they start.
    const gpuscale::RunResult run = gpuscale::run_simulation(scenario, gpuscale::WorkLimits{20000, 40000, 5000});
    const std::string out = gpuscale::dump_json(gpuscale::result_to_json(run, scenario));
    if (out.empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
