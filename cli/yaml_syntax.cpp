// yaml-cpp's syntax errors in plain words (yaml_syntax.hpp).
#include "yaml_syntax.hpp"

#include <string>
#include <vector>

#include <yaml-cpp/depthguard.h>

namespace gpuscale {
namespace {

constexpr std::size_t npos = std::string_view::npos;

// ---- yaml-cpp's syntax errors in plain words ---------------------------------------------------------
// yaml-cpp names what its grammar expected ("illegal map value", "end of map not found") at the token
// where it gave up, which is often a line after the mistake. Each explanation below looks at the text
// around that point for the common mistakes and names the line where the mistake is.

// Offsets in `line` of the ':' outside quotes and comments. A quote opens quoted text only where a
// value can start (line start, after a blank or [ { ,), so `it's: x` has one ':'.
std::vector<std::size_t> colons_in(std::string_view line) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    const bool value_start = i == 0 || std::strchr(" \t[{,", line[i - 1]) != nullptr;
    if (c == '#' && value_start) break;
    if ((c == '"' || c == '\'') && value_start) {
      for (++i; i < line.size() && line[i] != c; ++i) {
        if (c == '"' && line[i] == '\\') ++i;
      }
    } else if (c == ':') {
      out.push_back(i);
    }
  }
  return out;
}

// The innermost '[' or '{' between from and pos that is not closed before pos (outside quotes and
// comments), or npos.
std::size_t open_bracket_before(const Source& src, std::size_t from, std::size_t pos) {
  const std::string_view t = src.text();
  std::vector<std::size_t> open;
  for (std::size_t i = from; i < pos && i < t.size(); ++i) {
    const char c = t[i];
    const bool value_start = i == 0 || std::strchr(" \t\r\n[{,", t[i - 1]) != nullptr;
    if (c == '#' && value_start) {
      while (i < pos && t[i] != '\n') ++i;
    } else if ((c == '"' || c == '\'') && value_start) {
      for (++i; i < pos && t[i] != c; ++i) {
        if (c == '"' && t[i] == '\\') ++i;
      }
    } else if (c == '[' || c == '{') {
      open.push_back(i);
    } else if ((c == ']' || c == '}') && !open.empty()) {
      open.pop_back();
    }
  }
  return open.empty() ? npos : open.back();
}

// A ':' that separates a key from its value is followed by a blank or the line end.
bool separates(std::string_view line, std::size_t colon) {
  return colon + 1 >= line.size() || line[colon + 1] == ' ' || line[colon + 1] == '\t';
}

// A tab in the indentation of a line from from_pos's line to to_pos's: yaml-cpp then reports whatever
// it makes of the line, never the tab.
std::string tab_in_indentation(const Source& src, std::size_t from_pos, std::size_t to_pos) {
  for (std::size_t start = src.line_start(from_pos); start <= src.line_start(to_pos);) {
    const std::string_view l = src.line(start);
    const std::size_t first = l.find_first_not_of(" \t");
    if (first != npos && l[first] != '#') {
      const std::size_t tab = l.substr(0, first).find('\t');
      if (tab != npos) return src.where(start + tab) + ": a tab in the indentation; YAML indents with spaces only";
    }
    const std::size_t next = src.text().find('\n', start);
    if (next == npos) break;
    start = next + 1;
  }
  return "";
}

// The column where a list's '-' or a mapping's keys start.
int column_of(const Source& src, const YamlBlock& b) {
  return src.column(src.skip_properties(static_cast<std::size_t>(b.mark.pos)));
}

// "illegal map value": a ':' YAML cannot use. The text before it is a plain value that ran on from an
// earlier line, or the second value on one line.
std::string explain_map_value(const Source& src, std::size_t pos, const ParseProgress& b) {
  const std::string_view line = src.line(pos);
  const std::size_t start = src.line_start(pos);
  const std::size_t colon = pos - start;
  const std::size_t key = std::min(line.find_first_not_of(" \t-"), colon);
  if (src.column(pos) - src.column(start + key) > 1024) {
    return src.where(pos) + ": a key longer than 1024 characters, YAML's limit for `key: value`; shorten it";
  }
  for (std::size_t c : colons_in(line)) {
    if (c < colon && separates(line, c)) {
      return src.where(pos) + ": a second ': ' on one line, in " + in_quotes(line.substr(key)) +
             "; a mapping cannot start on the line of its key: quote the value (key: \"value: more\") or put the "
             "nested mapping on its own, indented lines";
    }
  }
  const std::size_t prev = src.previous_content_line(pos);
  if (prev != npos) {
    const std::string_view p = src.line(prev);
    const std::string_view p_text = p.substr(p.find_first_not_of(" \t"));
    const std::vector<std::size_t> cs = colons_in(p);
    const bool p_is_key_value = std::any_of(cs.begin(), cs.end(), [&](std::size_t c) { return separates(p, c); });
    if (!cs.empty() && !p_is_key_value) {
      return src.where(prev + cs[0]) + ": no space after ':' in " + in_quotes(p_text) +
             "; a key and its value are separated by ': ', a colon and a space";
    }
    const auto open = b.open_collections();
    const std::size_t content = src.content(start);
    if (p_is_key_value && !open.empty() && open.back().is_map && open.back().indented && content != npos &&
        src.column(content) > column_of(src, open.back())) {
      const std::string p_line = std::to_string(src.line_number(prev));
      return src.where(content) + ": this line is indented more than the keys of its mapping (column " +
             std::to_string(column_of(src, open.back())) + "), so YAML reads it as more of the value on line " + p_line +
             "; line it up with the keys, or, if it belongs under the key of line " + p_line +
             ", leave that key's value empty (`key:` alone on its line)";
    }
    if (cs.empty()) {
      // The run of lines without ':' before this one: the first of them is where a key lost its ':'.
      std::size_t first = prev;
      for (std::size_t q = src.previous_content_line(prev); q != npos && colons_in(src.line(q)).empty();
           q = src.previous_content_line(q)) {
        first = q;
      }
      const std::size_t at = src.content(first);
      return src.where(at) + ": " + in_quotes(src.line(first).substr(at - first)) +
             " has no ': ' after it; in a mapping each line is `key: value` (YAML read on to the ':' of line " +
             std::to_string(src.line_number(pos)) + ")";
    }
  }
  return src.where(pos) + ": a ':' YAML cannot place here; the mistake is at or before this line: a value that "
                          "runs on from the line above, or a line indented differently from its neighbours";
}

// "end of map/sequence not found": a line that fits no indented list or mapping above it.
std::string explain_block_end(const Source& src, std::size_t pos, const ParseProgress& b) {
  const char c = src.at(pos);
  if (pos >= src.text().size()) return src.where(pos) + ": the text ends inside a list or mapping";
  if (c == ',') return src.where(pos) + ": a ',' outside brackets: commas separate items only inside [a, b] and {a: 1}";
  if (src.content(pos) != pos) {
    // A quoted value that began on an earlier line: most likely its closing quote is missing there, and
    // the quote yaml-cpp took for the closing one opens the next value.
    const std::size_t last = src.skip_properties(static_cast<std::size_t>(std::max(0, b.last_mark().pos)));
    if ((src.at(last) == '"' || src.at(last) == '\'') && src.line_number(last) < src.line_number(pos)) {
      return src.where(last) + ": the quoted value that starts here runs on to line " +
             std::to_string(src.line_number(pos)) + ": is its closing " + src.at(last) + " missing?";
    }
    return src.where(pos) + ": more text after a complete value on this line (after a quoted value only a "
                            "# comment may follow); quote the whole value";
  }
  // The indented lists and mappings the line could belong to, innermost (and the one that just ended) first.
  std::vector<YamlBlock> candidates;
  if (const YamlBlock* closed = b.last_closed()) candidates.push_back(*closed);
  const auto open = b.open_collections();
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    if (it->indented) candidates.push_back(*it);
  const int column = src.column(pos);
  const bool item = c == '-' && separates(src.line(pos), pos - src.line_start(pos));
  const auto line_of = [&](const YamlBlock& k) {
    return std::to_string(src.line_number(static_cast<std::size_t>(k.mark.pos)));
  };
  if (const YamlBlock* closed = b.last_closed(); item && closed && !closed->is_map && column_of(src, *closed) != column) {
    return src.where(pos) + ": this list item's '-' is in column " + std::to_string(column) +
           ", but the items of the list above (line " + line_of(*closed) + ") have theirs in column " +
           std::to_string(column_of(src, *closed)) + "; the '-' of one list start in the same column";
  }
  for (const YamlBlock& k : candidates) {
    if (column_of(src, k) != column) continue;
    const std::string from = " from line " + line_of(k);
    if (k.is_map && item) {
      return src.where(pos) + ": a list item ('- ') among the keys of the mapping" + from +
             "; a list is the value of a key: write `key:` alone on its line and the items under it, indented";
    }
    if (k.is_map) return src.where(pos) + ": this line is among the keys of the mapping" + from + " but is not `key: value`";
    return src.where(pos) + ": this line lines up with the items of the list" + from + " but does not start with '- '";
  }
  if (item && !open.empty() && open.back().is_map) {
    return src.where(pos) + ": a list item ('- ') under a key that already has a value; write `key:` alone on its "
                            "line and the items under it";
  }
  // "columns 9 (line 7), 7 (line 7) and 5 (line 5)": where the blocks it could belong to start.
  std::vector<int> columns;
  std::string listed;
  for (const YamlBlock& k : candidates) {
    const int at = column_of(src, k);
    if (columns.size() == 4 || std::find(columns.begin(), columns.end(), at) != columns.end()) continue;
    columns.push_back(at);
    listed += std::string(columns.size() == 1 ? "" : ", ") + std::to_string(at) + " (line " + line_of(k) + ")";
  }
  return src.where(pos) + ": this line's indentation lines up with no list or mapping above it" +
         (columns.empty() ? std::string() : "; those it could belong to start in columns " + listed) +
         ". The keys of one mapping, and the '-' of one list, start in the same column";
}

// "end of sequence flow / map flow not found": inside [ ] or { }, a value followed by neither ',' nor
// the closing bracket. Name the bracket that is still open.
std::string explain_flow_end(const Source& src, std::size_t pos, const ParseProgress& b, bool is_map) {
  const char close = is_map ? '}' : ']';
  std::string opened = is_map ? " the braces" : " the brackets";
  const auto open = b.open_collections();
  for (auto it = open.rbegin(); it != open.rend(); ++it) {
    if (!it->indented && it->is_map == is_map) {
      const std::size_t at = src.skip_properties(static_cast<std::size_t>(it->mark.pos));
      opened = std::string(" the ") + (is_map ? "mapping" : "list") + " opened with '" + (is_map ? '{' : '[') +
               "' at " + src.where(at);
      break;
    }
  }
  if (pos >= src.text().size()) {
    return src.where(pos) + ": the text ends inside" + opened + ": add the closing '" + close + "'";
  }
  return src.where(pos) + ": expected ',' or '" + close + "' here, to go on with or close" + opened + " (is the '" +
         close + "' missing?)";
}

}  // namespace

std::string explain_syntax_error(const YAML::ParserException& e, const Source& src, const ParseProgress& b) {
  namespace M = YAML::ErrorMsg;
  if (e.mark.pos < 0) return "malformed YAML: " + e.msg;
  const std::size_t pos = static_cast<std::size_t>(e.mark.pos);
  const std::size_t last = b.last_mark().pos >= 0 ? static_cast<std::size_t>(b.last_mark().pos) : 0;
  const auto is = [&](const char* m) { return e.msg == m; };
  const auto starts = [&](const char* m) { return e.msg.rfind(m, 0) == 0; };
  if (const std::string tab = tab_in_indentation(src, std::min(last, pos), pos); !tab.empty()) {
    return "malformed YAML at " + tab;
  }
  if (is(M::MAP_VALUE)) return "malformed YAML at " + explain_map_value(src, pos, b);
  if (is(M::END_OF_MAP) || is(M::END_OF_SEQ)) return "malformed YAML at " + explain_block_end(src, pos, b);
  if (is(M::END_OF_SEQ_FLOW) || is(M::END_OF_MAP_FLOW)) {
    return "malformed YAML at " + explain_flow_end(src, pos, b, is(M::END_OF_MAP_FLOW));
  }
  const std::string c = in_quotes(std::string(1, src.at(pos)));
  std::string words;
  if (is(M::FLOW_END)) {
    // yaml-cpp's scanner reads ahead of the events, so the bracket still open is found in the text.
    const std::size_t opener = open_bracket_before(src, src.line_start(std::min(last, pos)), pos);
    if (opener == npos) {
      words = "a " + c + " that closes nothing: no '[' or '{' is open here";
    } else {
      const bool is_map = src.at(opener) == '{';
      words = "a " + c + " where the " + (is_map ? "mapping" : "list") + " opened with '" + src.at(opener) + "' at " +
              src.where(opener) + " is to be closed with '" + (is_map ? '}' : ']') + "'";
    }
  } else if (is(M::BLOCK_ENTRY)) {
    words = "a list item ('- ') cannot start here; after a key, write the key alone (`key:`) and the items on the "
            "lines below it";
  } else if (is(M::MAP_KEY)) {
    words = "a '?' (explicit key) cannot go here; if the value starts with '?', quote it";
  } else if (is(M::UNKNOWN_TOKEN)) {
    words = "a value cannot start with " + c + " (reserved in YAML); quote it";
  } else if (starts(M::INVALID_ESCAPE)) {
    words = "an unknown escape in double quotes; write \\\\ for a backslash, or use single quotes, in which a "
            "backslash is plain text";
  } else if (is(M::INVALID_HEX)) {
    words = "a \\x, \\u or \\U escape needs 2, 4 or 8 hexadecimal digits";
  } else if (starts(M::INVALID_UNICODE)) {
    words = "the escape names no Unicode character (surrogates D800-DFFF and values above 10FFFF are none)";
  } else if (is(M::EOF_IN_SCALAR)) {
    words = "the text ends inside a quoted value: a closing quote is missing";
  } else if (is(M::DOC_IN_SCALAR)) {
    words = "a '---' or '...' line inside a quoted value: is a quote above left open?";
  } else if (is(M::UNKNOWN_ANCHOR)) {
    std::size_t end = pos + 1;
    while (end < src.text().size() && std::strchr(" \t\r\n,[]{}", src.at(end)) == nullptr) ++end;
    const std::string name(src.text().substr(pos + 1, end - pos - 1));
    words = "the alias *" + name + " refers to no anchor: mark a value with &" + name + " before it, in the same document";
  } else if (is(M::ALIAS_NOT_FOUND) || is(M::ANCHOR_NOT_FOUND) || is(M::CHAR_IN_ALIAS) || is(M::CHAR_IN_ANCHOR)) {
    words = "a '*' (alias) or '&' (anchor) must be followed by a name; if the value starts with * or &, quote it";
  } else if (is(M::MULTIPLE_TAGS) || is(M::MULTIPLE_ANCHORS)) {
    words = "a value with two tags (!x) or two anchors (&x); keep one";
  } else if (is(M::CHAR_IN_TAG_HANDLE) || is(M::TAG_WITH_NO_SUFFIX) || is(M::END_OF_VERBATIM_TAG)) {
    words = "a malformed tag; if the value starts with '!', quote it";
  } else if (is(M::TAB_IN_INDENTATION)) {
    words = "a tab in the indentation of a block text (| or >); indent with spaces";
  } else if (is(M::ZERO_INDENT_IN_BLOCK) || is(M::CHAR_IN_BLOCK)) {
    words = "after '|' or '>' only an indentation digit 1-9, '+' or '-' and a comment may follow on that line";
  } else if (is(M::YAML_DIRECTIVE_ARGS) || starts(M::YAML_VERSION) || is(M::YAML_MAJOR_VERSION) ||
             is(M::REPEATED_YAML_DIRECTIVE) || is(M::TAG_DIRECTIVE_ARGS) || is(M::REPEATED_TAG_DIRECTIVE)) {
    words = "a malformed %YAML or %TAG directive line; a NodePool needs none: remove it";
  } else if (dynamic_cast<const YAML::DeepRecursion*>(&e) != nullptr) {
    words = "nested too deeply";
  } else {
    words = "the YAML parser stopped here (" + e.msg + ")";
  }
  return "malformed YAML at " + src.where(pos) + ": " + words;
}


}  // namespace gpuscale
