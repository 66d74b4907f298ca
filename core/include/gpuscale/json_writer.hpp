// Compact JSON text of a Json value, in ASCII: byte for byte what Json::dump(-1, ' ', true) prints
// (non-ASCII characters as \u escapes), several times faster on long strings (the decision log's
// explanations are most of a result), because runs of bytes that need no escape are copied at once.
// ASCII because the page pays for UTF-8: a browser decodes and parses a one-byte string about
// twice as fast as one with a few "×" and "→" in it.
#pragma once
#include <string>

#include "gpuscale/json_reader.hpp"

namespace gpuscale {

// Unlike Json::dump(), invalid UTF-8 in a string becomes \ufffd instead of an exception, so an
// envelope can always be written.
std::string dump_json(const Json& value);
void dump_json(const Json& value, std::string& out);

}  // namespace gpuscale
