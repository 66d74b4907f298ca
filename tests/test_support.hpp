// Helpers shared by the Catch2 test files: reading the repository's data files.
#pragma once
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace gpuscale::testing {

// A file of the source tree (exercises/, scenarios/, docs/), by path relative to its root.
inline std::string read_text(const std::string& relative) {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/" + relative, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + relative);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace gpuscale::testing
