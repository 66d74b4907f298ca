// Compact JSON text of a Json value: byte for byte what Json::dump() prints, several times faster on
// long strings (the decision log's explanations are most of a result), because runs of bytes that
// need no escape are copied at once instead of going one by one through a UTF-8 decoder.
#pragma once
#include <string>

#include "gpuscale/json_reader.hpp"

namespace gpuscale {

// Unlike Json::dump(), invalid UTF-8 in a string becomes U+FFFD instead of an exception, so an
// envelope can always be written.
std::string dump_json(const Json& value);
void dump_json(const Json& value, std::string& out);

}  // namespace gpuscale
