// libFuzzer target: the input as a seed (URLs, command lines) and, when it parses, each exercise's
// variant for it. Variants draw parameters and build scenarios without simulating, so this is fast.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/api.hpp"

namespace {

const std::string& definition(int k) {
  static const std::string defs[] = {gpuscale::fuzz::read_exercise("ex1-"), gpuscale::fuzz::read_exercise("ex2-"),
                                     gpuscale::fuzz::read_exercise("ex5-"), gpuscale::fuzz::read_exercise("ex4-")};
  return defs[k];
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  definition(0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::uint64_t seed = 0;
  try {
    seed = gpuscale::api::parse_seed(text);
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
    return 0;
  }
  for (int k = 0; k < 4; ++k) {
    try {
      const gpuscale::Json variant = gpuscale::api::exercise(definition(k), seed);
      if (gpuscale::dump_json(variant).empty()) __builtin_trap();
    } catch (const gpuscale::InputError& e) {
      gpuscale::fuzz::check_input_error(e);
    }
  }
  return 0;
}
