// Helpers shared by the Catch2 test files: reading the repository's data files.
#pragma once
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>

#include "gpuscale/errors.hpp"
#include "exercises/exercise.hpp"
#include "io/json_reader.hpp"

namespace gpuscale::testing {

// A file of the source tree (exercises/, scenarios/, docs/), by path relative to its root.
inline std::string read_text(const std::string& relative) {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + relative);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// No "{name}" placeholder of an exercise text left unfilled.
inline void check_filled(const std::string& text) {
  INFO(text);
  CHECK_FALSE(std::regex_search(text, std::regex("\\{[a-z_]+\\}")));
}

// The InputError `operation` throws (the test fails if it throws none).
template <typename F>
InputError input_error(F&& operation) {
  try {
    operation();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError was thrown");
  return InputError("", "");
}

// grade(definition, seed 1, answer) must reject the answer with an InputError at `path`.
template <typename Grade>
void check_grade_error(Grade&& grade, const Json& definition, const Json& answer, const std::string& path) {
  try {
    grade(definition, 1, answer, GradeContext{});
    FAIL("grade accepted " << answer.dump());
  } catch (const InputError& e) {
    INFO(answer.dump() << " → " << e.what());
    CHECK(e.path() == path);
    CHECK_FALSE(e.message().empty());
  }
}

}  // namespace gpuscale::testing
