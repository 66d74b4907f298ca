// Shared by the libFuzzer targets: the checks every target makes on an InputError, and reading the
// repository's data files. An InputError is an expected outcome; anything else escaping is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gpuscale/errors.hpp"

namespace gpuscale::fuzz {

// Aborts (a finding libFuzzer saves) with the reason and the offending message.
[[noreturn]] inline void malformed(const char* why, const InputError& e) {
  std::fprintf(stderr, "fuzz: malformed InputError (%s): path %zu bytes, message %zu bytes: %.300s\n", why,
               e.path().size(), e.message().size(), e.what());
  std::abort();
}

// Well-formed UTF-8 without control characters, as sanitize_for_message promises (gpuscale/errors.hpp).
inline const char* text_problem(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7F) return "a control character";
    std::size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return "invalid UTF-8";
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return "invalid UTF-8";
    }
    i += n;
  }
  return nullptr;
}

// An InputError must be a short, printable message: what() is path + ": " + message (or the message
// alone) with no NUL before its end, under 6000 bytes, and both parts are sanitised text.
// GPUSCALE_FUZZ_VERBOSE=1 prints each one (to see why a seed is refused: ./fuzz_x corpus/fuzz_x/*).
inline void check_input_error(const InputError& e) {
  static const bool verbose = std::getenv("GPUSCALE_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "fuzz: InputError: %s\n", e.what());
  const std::string expected = e.path().empty() ? e.message() : e.path() + ": " + e.message();
  const std::size_t length = std::strlen(e.what());
  if (length != expected.size() || expected.compare(0, std::string::npos, e.what(), length) != 0) {
    malformed("what() is not path: message, or has a NUL", e);
  }
  if (length >= 6000) malformed("longer than 6000 bytes", e);
  if (e.message().empty()) malformed("empty message", e);
  if (const char* p = text_problem(e.path())) malformed(p, e);
  if (const char* p = text_problem(e.message())) malformed(p, e);
}

// A file of the source tree, by path relative to its root; aborts if it cannot be read (a setup error).
inline std::string read_source_file(const std::string& relative) {
  const std::string path = std::string(GPUSCALE_SOURCE_DIR) + "/" + relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The one exercise definition exercises/<prefix>*.json (e.g. "ex1-"), as text.
inline std::string read_exercise(const std::string& prefix) {
  namespace fs = std::filesystem;
  for (const auto& entry : fs::directory_iterator(fs::path(GPUSCALE_SOURCE_DIR) / "exercises")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && entry.path().extension() == ".json") return read_source_file("exercises/" + name);
  }
  std::fprintf(stderr, "fuzz: no exercises/%s*.json\n", prefix.c_str());
  std::abort();
}

}  // namespace gpuscale::fuzz
