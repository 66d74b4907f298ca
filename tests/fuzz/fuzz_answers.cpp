// libFuzzer target: exercise answers. The first byte picks the exercise ('0' 1, '1' 2, '2' 5, '3' 3,
// '4' 4, and so on modulo 5), the rest is the answer JSON, read the way api::grade reads it and then by
// that exercise's parse_answer. Grading a valid answer simulates (seconds for exercise 5), so only the
// reading is fuzzed here.
#include <cstddef>
#include <cstdint>
#include <string>

#include "exercises/exercise.hpp"
#include "fuzz_support.hpp"
#include "gpuscale/json.hpp"

namespace {

const gpuscale::Json& definition1() {
  static const gpuscale::Json def = gpuscale::parse_json_text(gpuscale::fuzz::read_exercise("ex1-"));
  return def;
}

const gpuscale::Json& definition4() {
  static const gpuscale::Json def = gpuscale::parse_json_text(gpuscale::fuzz::read_exercise("ex4-"));
  return def;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  definition1();
  definition4();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const gpuscale::Json answer = gpuscale::parse_json_text(text, 64 * 1024);  // api::grade's limit
    switch ((data[0] + 2) % 5) {
      case 0: {
        const gpuscale::exercise1::Answer a = gpuscale::exercise1::parse_answer(definition1(), answer);
        if (a.b && a.b->empty()) __builtin_trap();
        break;
      }
      case 1: {
        const gpuscale::exercise2::Answer a = gpuscale::exercise2::parse_answer(answer);
        if (a.pool.has_value() == !a.error.empty()) __builtin_trap();
        if (!a.error.empty() && a.error.size() >= 6000) __builtin_trap();
        break;
      }
      case 2:
        gpuscale::exercise5::parse_answer(answer);
        break;
      case 3:
        gpuscale::exercise3::parse_answer(answer);
        break;
      default: {
        const gpuscale::exercise4::Answer a = gpuscale::exercise4::parse_answer(definition4(), answer);
        if ((a.prefill && a.prefill->empty()) || (a.decode && a.decode->empty())) __builtin_trap();
        break;
      }
    }
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
