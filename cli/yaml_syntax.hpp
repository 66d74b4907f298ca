// Inside the CLI's YAML reader (yaml_json.cpp): the text with positions as an editor shows them, what
// the parser had read when it stopped, and yaml-cpp's syntax errors retold from both (yaml_syntax.cpp).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>

#include "gpuscale/errors.hpp"

namespace gpuscale {

// User text in a message: quoted, shortened, control characters escaped (gpuscale/errors.hpp).
inline std::string in_quotes(std::string_view s) { return quote_for_message(std::string(s)); }

// ---- Positions ---------------------------------------------------------------------------------------
// yaml-cpp's Mark::pos is a byte offset into the text it read and Mark::line counts '\n' ("\r\n" is one
// line end). Columns are counted here in characters, as an editor shows them, not in bytes.

class Source {
 public:
  explicit Source(std::string_view text) : text_(text) {}

  std::string_view text() const { return text_; }
  char at(std::size_t pos) const { return pos < text_.size() ? text_[pos] : '\0'; }
  bool starts_with(std::size_t pos, std::string_view s) const {
    return pos <= text_.size() && text_.substr(pos, s.size()) == s;
  }

  std::size_t line_start(std::size_t pos) const {
    pos = std::min(pos, text_.size());
    const std::size_t nl = pos == 0 ? std::string_view::npos : text_.rfind('\n', pos - 1);
    return nl == std::string_view::npos ? 0 : nl + 1;
  }
  // The line that holds pos, without its line end.
  std::string_view line(std::size_t pos) const {
    const std::size_t start = line_start(pos);
    std::size_t end = text_.find('\n', start);
    if (end == std::string_view::npos) end = text_.size();
    if (end > start && text_[end - 1] == '\r') --end;
    return text_.substr(start, end - start);
  }
  int line_number(std::size_t pos) const {
    const auto end = text_.begin() + static_cast<std::ptrdiff_t>(std::min(pos, text_.size()));
    return 1 + static_cast<int>(std::count(text_.begin(), end, '\n'));
  }
  int column(std::size_t pos) const {
    pos = std::min(pos, text_.size());
    int n = 1;
    for (std::size_t i = line_start(pos); i < pos; ++i) n += (static_cast<unsigned char>(text_[i]) & 0xC0u) != 0x80u;
    return n;
  }
  std::string where(std::size_t pos) const {
    return "line " + std::to_string(line_number(pos)) + ", column " + std::to_string(column(pos));
  }

  // Offset of the first character of the line holding pos that is not a space or tab; npos if the line
  // is blank or only a comment.
  std::size_t content(std::size_t pos) const {
    const std::string_view l = line(pos);
    const std::size_t i = l.find_first_not_of(" \t");
    return i == std::string_view::npos || l[i] == '#' ? std::string_view::npos : line_start(pos) + i;
  }
  // Offset of the start of the nearest earlier line with content; npos if none.
  std::size_t previous_content_line(std::size_t pos) const {
    for (std::size_t start = line_start(pos); start > 0;) {
      start = line_start(start - 1);
      if (content(start) != std::string_view::npos) return start;
    }
    return std::string_view::npos;
  }

  // Where a node's content starts, after its tag (!x, !<...>), anchor (&x), blanks and comments: the
  // opening quote or bracket of a node whose Mark points at its properties.
  std::size_t skip_properties(std::size_t i) const {
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '!' && starts_with(i, "!<")) {
        const std::size_t end = text_.find('>', i);
        i = end == std::string_view::npos ? text_.size() : end + 1;
      } else if (c == '!' || c == '&') {
        while (i < text_.size() && std::strchr(" \t\r\n,[]{}", text_[i]) == nullptr) ++i;
      } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        ++i;
      } else if (c == '#') {
        while (i < text_.size() && text_[i] != '\n') ++i;
      } else {
        break;
      }
    }
    return i;
  }

 private:
  std::string_view text_;
};

// A list or mapping the parser is in (or left last).
struct YamlBlock {
  bool is_map = false;
  bool indented = false;  // block style (indented lines), not [...] / {...}
  YAML::Mark mark;
};

// What the parser had read when it stopped, for explaining a syntax error.
class ParseProgress {
 public:
  virtual ~ParseProgress() = default;
  virtual std::vector<YamlBlock> open_collections() const = 0;
  // The indented list or mapping that ended last: a line that lines up with nothing often meant it.
  virtual const YamlBlock* last_closed() const = 0;
  // Where the last value or collection started: the parser read correctly up to there.
  virtual const YAML::Mark& last_mark() const = 0;
};

// yaml-cpp's error, in words a learner can act on, at the line where the mistake is:
// "malformed YAML at line L, column C: ...".
std::string explain_syntax_error(const YAML::ParserException& e, const Source& src, const ParseProgress& progress);

}  // namespace gpuscale
