// libFuzzer target: the input as a `gpuscale schedule` snapshot (docs/schedule.md): one cycle of KAI
// Scheduler or kube-scheduler over the cluster it describes, and the result written out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuscale::Json result = gpuscale::api::schedule(text);
    if (gpuscale::dump_json(result).empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
