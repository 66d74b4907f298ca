// JSON text at the core's boundary: the Json value type, a parser whose syntax errors are InputErrors,
// and the compact ASCII writer every result goes out through.
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "gpuscale/errors.hpp"

namespace gpuscale {

using Json = nlohmann::json;

// The deepest nesting of arrays and objects any input may have. The lab's documents need a few levels;
// copying or destroying a tree recurses, so a deeper one could overflow the stack.
constexpr std::size_t kMaxJsonDepth = 64;

// Parses text to JSON. Everything wrong is an InputError naming the JSON path being read: a syntax
// error (with line and column), nesting deeper than kMaxJsonDepth, a duplicate key, a number beyond
// the double range, invalid UTF-8, more than max_bytes of text.
Json parse_json_text(const std::string& text, std::size_t max_bytes = 4u << 20);

// One object key as a JSON pointer token: "~" → "~0", "/" → "~1" (RFC 6901).
std::string json_pointer_token(const std::string& key);

// Compact JSON text of a Json value, in ASCII: byte for byte what Json::dump(-1, ' ', true) prints
// (non-ASCII characters as \u escapes), several times faster on long strings (the decision log's
// explanations are most of a result), because runs of bytes that need no escape are copied at once.
// ASCII because the page pays for UTF-8: a browser decodes and parses a one-byte string about
// twice as fast as one with a few "×" and "→" in it. Unlike Json::dump(), invalid UTF-8 in a string
// becomes \ufffd instead of an exception, so an envelope can always be written.
std::string dump_json(const Json& value);
void dump_json(const Json& value, std::string& out);

}  // namespace gpuscale
