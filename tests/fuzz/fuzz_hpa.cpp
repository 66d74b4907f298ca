// libFuzzer target: the input as a `gpuscale hpa` document (docs/hpa-cli.md): one sync of one HPA.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuscale::Json decision = gpuscale::api::hpa(text);
    if (gpuscale::dump_json(decision).empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
