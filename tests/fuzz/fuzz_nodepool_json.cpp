// libFuzzer target: the input as a karpenter.sh/v1 NodePool in JSON (`gpuscale nodepool check`).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/api.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const gpuscale::Json checked = gpuscale::api::nodepool_check(text);
    if (gpuscale::dump_json(checked).empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
