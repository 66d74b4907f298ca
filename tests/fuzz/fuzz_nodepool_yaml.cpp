// libFuzzer target: the input as a YAML file, the CLI's way: the NodePool document of the stream
// (cli/yaml_json) checked as a NodePool, and the whole stream converted to JSON.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "gpuscale/api.hpp"
#include "yaml_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::string json = gpuscale::nodepool_json_text("fuzz.yaml", text);
    const gpuscale::Json checked = gpuscale::api::nodepool_check(json);
    if (gpuscale::dump_json(checked).empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  try {
    const gpuscale::Json documents = gpuscale::yaml_documents_to_json(text);
    if (!documents.is_array()) __builtin_trap();
    if (gpuscale::dump_json(documents).empty()) __builtin_trap();
  } catch (const gpuscale::InputError& e) {
    gpuscale::fuzz::check_input_error(e);
  }
  return 0;
}
