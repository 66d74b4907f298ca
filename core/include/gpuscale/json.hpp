// JSON text at the core's boundary: the Json value type, a parser whose syntax errors are InputErrors,
// and the compact ASCII writer every result goes out through.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuscale/errors.hpp"

namespace gpuscale {

using Json = nlohmann::json;

// Parses text to JSON; a syntax error becomes an InputError at path "" with line/column.
Json parse_json_text(const std::string& text, std::size_t max_bytes = 4u << 20);

// Compact JSON text of a Json value, in ASCII: byte for byte what Json::dump(-1, ' ', true) prints
// (non-ASCII characters as \u escapes), several times faster on long strings (the decision log's
// explanations are most of a result), because runs of bytes that need no escape are copied at once.
// ASCII because the page pays for UTF-8: a browser decodes and parses a one-byte string about
// twice as fast as one with a few "×" and "→" in it. Unlike Json::dump(), invalid UTF-8 in a string
// becomes \ufffd instead of an exception, so an envelope can always be written.
std::string dump_json(const Json& value);
void dump_json(const Json& value, std::string& out);

}  // namespace gpuscale
