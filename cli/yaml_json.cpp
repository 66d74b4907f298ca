// YAML → JSON for the CLI: a yaml-cpp event handler that builds the JSON as the parser reads, within
// YamlLimits, and yaml-cpp's syntax errors retold in words a learner can act on, at the right line.
#include "yaml_json.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

namespace gpuscale {
namespace {

constexpr std::size_t npos = std::string_view::npos;

// User text in a message: quoted, shortened, control characters escaped (gpuscale/errors.hpp).
std::string in_quotes(std::string_view s) { return quote_for_message(std::string(s)); }

// ---- UTF-8 ------------------------------------------------------------------------------------------

// Length of the UTF-8 sequence that starts at s[i], or 0 if there is none: overlong forms, surrogates
// (U+D800..U+DFFF), code points above U+10FFFF and truncated sequences are not UTF-8.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  const auto tail = [&](std::size_t k) { return (byte(k) & 0xC0u) == 0x80u; };
  const unsigned b0 = byte(0), b1 = byte(1);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return tail(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 > 0x9F)) return 0;  // overlong, surrogate
    return tail(1) && tail(2) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 > 0x8F)) return 0;  // overlong, above U+10FFFF
    return tail(1) && tail(2) && tail(3) ? 4 : 0;
  }
  return 0;  // a continuation byte, C0/C1 (always overlong) or F5..FF
}

// Offset of the first byte of s, from `from` on, that starts no UTF-8 sequence; npos if none.
std::size_t invalid_utf8_at(std::string_view s, std::size_t from = 0) {
  for (std::size_t i = from; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return npos;
}

// ---- Plain scalars, as kubectl resolves them ---------------------------------------------------------
// kubectl turns YAML into JSON with sigs.k8s.io/yaml over go-yaml v2, which resolves plain scalars the
// YAML 1.1 way: quoted scalars stay strings; plain ones become null, booleans (true/yes/on/y ...),
// integers (decimal, 0x hex, 0 octal, 0b binary), floats, or else strings ("10m", "10%", "p5.48xlarge").
// So `weight: 50` is a number, `nodes: "0"` a string, and `nodes: 0` a number the NodePool rejects.

bool yaml_int(const std::string& text, Json& out) {
  std::string s;
  for (char c : text)
    if (c != '_') s += c;
  std::size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  int base = 10;
  if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) base = 16, i += 2;
  else if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'B')) base = 2, i += 2;
  else if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'o' || s[i + 1] == 'O')) base = 8, i += 2;
  else if (s.size() - i > 1 && s[i] == '0') base = 8, i += 1;
  if (i >= s.size()) return false;
  unsigned long long v = 0;
  for (; i < s.size(); ++i) {
    int d = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0'
            : std::isxdigit(static_cast<unsigned char>(s[i])) ? std::tolower(static_cast<unsigned char>(s[i])) - 'a' + 10
                                                                : 99;
    if (d >= base) return false;
    // Beyond 64 bits: not an integer; a decimal one is then a float (go-yaml does the same).
    if (v > (~0ULL - unsigned(d)) / unsigned(base)) return false;
    v = v * unsigned(base) + unsigned(d);
  }
  if (neg) {
    if (v > (1ULL << 63)) return false;
    out = v == (1ULL << 63) ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(v);
  } else if (v > static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
    out = static_cast<std::uint64_t>(v);
  } else {
    out = static_cast<std::int64_t>(v);
  }
  return true;
}

// ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$  (go-yaml's yamlStyleFloat)
bool yaml_float(const std::string& s, Json& out) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (digits() == 0) return false;
  } else {
    if (digits() == 0) return false;
    if (i < s.size() && s[i] == '.') {
      ++i;
      digits();
    }
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  if (i != s.size()) return false;
  const double v = std::strtod(s.c_str(), nullptr);
  // strtod overflows to ±inf, which JSON cannot hold (it would print as null). Underflow to 0 or a
  // subnormal is kept, as Go's ParseFloat keeps it.
  if (std::isinf(v)) {
    throw InputError("", "the number " + in_quotes(s) +
                             " is beyond the range of a double-precision number (magnitude at most about 1.8e308)");
  }
  out = v;
  return true;
}

// The JSON value of a plain scalar; an InputError (no path yet) when JSON cannot hold it.
Json yaml_plain_scalar(const std::string& s) {
  static const char* kNull[] = {"", "~", "null", "Null", "NULL"};
  static const char* kTrue[] = {"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "true", "True", "TRUE"};
  static const char* kFalse[] = {"n", "N", "no", "No", "NO", "off", "Off", "OFF", "false", "False", "FALSE"};
  for (const char* w : kNull)
    if (s == w) return nullptr;
  for (const char* w : kTrue)
    if (s == w) return true;
  for (const char* w : kFalse)
    if (s == w) return false;
  std::string l = s;
  for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (l == ".inf" || l == "+.inf" || l == "-.inf" || l == ".nan") {
    throw InputError("", "the YAML value " + s + " (infinity / not-a-number) has no JSON form");
  }
  Json out;
  if (yaml_int(s, out) || yaml_float(s, out)) return out;
  return s;
}

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
    const std::size_t nl = pos == 0 ? npos : text_.rfind('\n', pos - 1);
    return nl == npos ? 0 : nl + 1;
  }
  // The line that holds pos, without its line end.
  std::string_view line(std::size_t pos) const {
    const std::size_t start = line_start(pos);
    std::size_t end = text_.find('\n', start);
    if (end == npos) end = text_.size();
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
    return i == npos || l[i] == '#' ? npos : line_start(pos) + i;
  }
  // Offset of the start of the nearest earlier line with content; npos if none.
  std::size_t previous_content_line(std::size_t pos) const {
    for (std::size_t start = line_start(pos); start > 0;) {
      start = line_start(start - 1);
      if (content(start) != npos) return start;
    }
    return npos;
  }

  // Where a node's content starts, after its tag (!x, !<...>), anchor (&x), blanks and comments: the
  // opening quote or bracket of a node whose Mark points at its properties.
  std::size_t skip_properties(std::size_t i) const {
    while (i < text_.size()) {
      const char c = text_[i];
      if (c == '!' && starts_with(i, "!<")) {
        const std::size_t end = text_.find('>', i);
        i = end == npos ? text_.size() : end + 1;
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

// ---- The event handler: YAML events → JSON ----------------------------------------------------------

class JsonBuilder final : public YAML::EventHandler {
 public:
  JsonBuilder(const Source& source, const YamlLimits& limits) : source_(source), limits_(limits) {}

  // A list or mapping the parser is in (or left last), for explaining a syntax error.
  struct Block {
    bool is_map = false;
    bool indented = false;  // block style (indented lines), not [...] / {...}
    YAML::Mark mark;
  };
  std::vector<Block> open_collections() const {
    std::vector<Block> out;
    for (const Frame& f : stack_) out.push_back({f.is_map, f.indented, f.mark});
    return out;
  }
  // The indented list or mapping that ended last: a line that lines up with nothing often meant it.
  const Block* last_closed() const { return has_closed_ ? &closed_ : nullptr; }
  // Where the last value or collection started: the parser read correctly up to there.
  const YAML::Mark& last_mark() const { return last_mark_; }

  Json take_documents() { return std::move(documents_); }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (!documents_.empty() && !source_.starts_with(static_cast<std::size_t>(mark.pos), "---")) stray_document(mark);
    if (documents_.size() >= static_cast<std::size_t>(limits_.max_documents)) {
      fail_at(mark, "more than " + std::to_string(limits_.max_documents) + " YAML documents in one text");
    }
    document_mark_ = mark;
    anchors_.clear();  // yaml-cpp numbers anchors per document
    root_ = nullptr;
  }
  void OnDocumentEnd() override { documents_.push_back(std::move(root_)); }

  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    last_mark_ = mark;
    if (!stack_.empty()) {
      const Frame& f = stack_.back();
      // yaml-cpp reads a line of an indented mapping that has no ':' as a key without a value, and
      // reports it by giving that value the key's own position. YAML forbids such a line.
      if (f.is_map && f.indented && f.has_key && mark.pos == f.key_mark.pos) {
        fail_syntax(mark, in_quotes(f.key) + " has no ':' after it: each line of a mapping is `key: value` (and a "
                      "list item starts with '- ', a dash and a space)");
      }
    }
    Node node;
    node.mark = mark;
    remember(anchor, node);
    place(std::move(node));
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, const std::string& value) override {
    last_mark_ = mark;
    if (const std::size_t bad = invalid_utf8_at(value); bad != npos) {
      // The scalar holds the text's bytes as they were: point at the bad one there if it can be found.
      const std::size_t in_text = invalid_utf8_at(source_.text(), static_cast<std::size_t>(mark.pos));
      fail_at(in_text != npos ? in_text : static_cast<std::size_t>(mark.pos),
              in_quotes(value) + " is not valid UTF-8 text (at its byte " + std::to_string(bad + 1) +
                  "); save the file as UTF-8");
    }
    check_quote_closed(mark);
    Node node;
    node.kind = Kind::Scalar;
    node.mark = mark;
    node.text = value;
    node.tag = tag;
    node.bytes = value.size();
    remember(anchor, node);
    place(std::move(node));
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    last_mark_ = mark;
    const auto it = anchors_.find(anchor);
    if (it == anchors_.end()) fail_at(mark, "this alias refers to no anchor");  // yaml-cpp checks first
    const Anchored& a = it->second;
    if (!a.complete) {
      fail_at(mark, "the alias *" + a.name + " is inside the value it names (&" + a.name + " at " +
                        source_.where(static_cast<std::size_t>(a.node.mark.pos)) + "): JSON cannot hold a cycle");
    }
    if (depth() + a.node.height > limits_.max_depth) {
      fail_at(mark, "nested more than " + std::to_string(limits_.max_depth) + " levels deep (through the alias *" +
                        a.name + ")");
    }
    count_copy(expanded_, a.node, mark, "aliases expand to", "(an alias bomb?)");
    Node node = a.node;
    node.mark = mark;
    place(std::move(node));
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    open(false, mark, anchor, style);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    open(true, mark, anchor, style);
  }
  void OnMapEnd() override { close(); }

 private:
  enum class Kind { Null, Scalar, Collection };
  // A complete value on its way into its parent (or into the anchor table).
  struct Node {
    Kind kind = Kind::Null;
    YAML::Mark mark;
    std::string text, tag;   // a scalar is resolved where it lands: as a key it stays text ("yes", "010")
    Json value;              // a collection
    std::size_t values = 1;  // values in it, itself included: what an alias to it copies
    std::size_t bytes = 0;   // bytes of its scalars and keys
    int height = 0;          // lists and mappings nested in it, itself included
  };
  struct Frame {
    bool is_map = false;
    bool indented = false;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    Json value;
    std::size_t values = 1;
    std::size_t bytes = 0;
    int height = 1;
    // mappings: the key whose value is being read, and each key's line for duplicate-key messages
    bool has_key = false;
    std::string key;
    YAML::Mark key_mark;
    std::unordered_map<std::string, int> key_lines;
  };
  struct Anchored {
    std::string name;
    bool complete = false;  // false while its list or mapping is still being read
    Node node;
  };
  // Values copied, counted over the whole stream: in values (lists and keys count too) and in bytes (one
  // long string aliased many times).
  struct Copies {
    std::size_t values = 0, bytes = 0;
  };

  int depth() const { return static_cast<int>(stack_.size()); }

  // The JSON Pointer of the value being read (while a key is read: of its mapping).
  std::string path() const {
    std::string p;
    for (const Frame& f : stack_) {
      if (!f.is_map) p += "/" + std::to_string(f.value.size());
      else if (f.has_key) p += "/" + json_pointer_token(f.key);
    }
    return p;
  }

  [[noreturn]] void fail_at(std::size_t pos, const std::string& message) const {
    throw InputError(path(), source_.where(pos) + ": " + message);
  }
  [[noreturn]] void fail_at(const YAML::Mark& mark, const std::string& message) const {
    fail_at(static_cast<std::size_t>(mark.pos), message);
  }
  // A mistake in the YAML text itself, which yaml-cpp lets through: reported as its syntax errors are.
  [[noreturn]] void fail_syntax(std::size_t pos, const std::string& message) const {
    throw InputError("", "malformed YAML at " + source_.where(pos) + ": " + message);
  }
  [[noreturn]] void fail_syntax(const YAML::Mark& mark, const std::string& message) const {
    fail_syntax(static_cast<std::size_t>(mark.pos), message);
  }

  // A few hundred bytes of nested aliases (billion laughs) expand to gigabytes; and each anchored list
  // or mapping is copied for its aliases, so `&a [&b [&c [...]]]` would copy the same values 64 times.
  // Both kinds of copy have their budget.
  void count_copy(Copies& copies, const Node& node, const YAML::Mark& mark, const char* what, const char* why) {
    copies.values += node.values;
    copies.bytes += node.bytes;
    if (copies.values > limits_.max_copied_values) {
      fail_at(mark, std::string("YAML ") + what + " more than " + std::to_string(limits_.max_copied_values) +
                        " values " + why);
    }
    if (copies.bytes > limits_.max_copied_bytes) {
      fail_at(mark, std::string("YAML ") + what + " more than " + std::to_string(limits_.max_copied_bytes) +
                        " bytes of text " + why);
    }
  }

  void remember(YAML::anchor_t anchor, const Node& node) {
    if (anchor == 0) return;
    Anchored& a = anchors_[anchor];
    a.name = std::move(anchor_name_);
    a.complete = true;
    a.node = node;
  }

  void open(bool is_map, const YAML::Mark& mark, YAML::anchor_t anchor, YAML::EmitterStyle::value style) {
    last_mark_ = mark;
    if (depth() >= limits_.max_depth) {
      fail_at(mark, "nested more than " + std::to_string(limits_.max_depth) + " levels deep");
    }
    Frame f;
    f.is_map = is_map;
    f.indented = style != YAML::EmitterStyle::Flow;
    f.mark = mark;
    f.anchor = anchor;
    f.value = is_map ? Json::object() : Json::array();
    if (anchor != 0) {
      Anchored& a = anchors_[anchor];
      a.name = std::move(anchor_name_);
      a.complete = false;
      a.node.mark = mark;
    }
    stack_.push_back(std::move(f));
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    if (f.indented) {
      closed_ = {f.is_map, true, f.mark};
      has_closed_ = true;
    }
    Node node;
    node.kind = Kind::Collection;
    node.mark = f.mark;
    node.value = std::move(f.value);
    node.values = f.values;
    node.bytes = f.bytes;
    node.height = f.height;
    if (f.anchor != 0) {
      // the copy kept for the aliases
      count_copy(anchored_, node, f.mark, "anchors hold", "(each anchored list or mapping is kept for its aliases)");
      Anchored& a = anchors_[f.anchor];
      a.complete = true;
      a.node = node;
    }
    place(std::move(node));
  }

  // A scalar's JSON value. Quoted scalars (tagged "!" by yaml-cpp) and !!str ones are strings; plain
  // ones ("?") and those with any other tag resolve like go-yaml's plain scalars.
  Json scalar_value(const Node& node) const {
    if (node.tag == "!" || node.tag == "tag:yaml.org,2002:str") return node.text;
    try {
      return yaml_plain_scalar(node.text);
    } catch (const InputError& e) {
      fail_at(node.mark, e.message());
    }
  }

  void place(Node node) {
    if (stack_.empty()) {
      root_ = node.kind == Kind::Collection ? std::move(node.value) : node.kind == Kind::Scalar ? scalar_value(node) : Json();
      return;
    }
    Frame& f = stack_.back();
    if (f.is_map && !f.has_key) {
      take_key(f, node);
    } else {
      Json value = node.kind == Kind::Collection ? std::move(node.value)
                   : node.kind == Kind::Scalar   ? scalar_value(node)
                                                 : Json();
      if (f.is_map) {
        f.value[f.key] = std::move(value);
        f.has_key = false;
      } else {
        f.value.push_back(std::move(value));
      }
    }
    f.values += node.values;
    f.bytes += node.bytes;
    f.height = std::max(f.height, node.height + 1);
  }

  void take_key(Frame& f, const Node& node) {
    if (node.kind == Kind::Null) {
      fail_at(node.mark, "a mapping key that is empty or null (`: value`, `~: value`, `null: value`); JSON keys are "
                         "text: write the key, in quotes if it is ~ or null");
    }
    // Refused once the key is complete: yaml-cpp reads an unclosed `[[[` as lists that are keys, and
    // the unclosed bracket is then the error to report.
    if (node.kind == Kind::Collection) {
      fail_at(node.mark, std::string("a ") + (node.value.is_array() ? "list" : "mapping") +
                             " used as a mapping key (`[a, b]: x`, `{a: 1}: x`, `? - a`); JSON keys are text: write "
                             "the key as plain or quoted text");
    }
    const int line = node.mark.line + 1;
    const auto [first, inserted] = f.key_lines.emplace(node.text, line);
    if (!inserted) {
      throw InputError(path() + "/" + json_pointer_token(node.text),
                       source_.where(static_cast<std::size_t>(node.mark.pos)) + ": duplicate key " + in_quotes(node.text) +
                           " (first at line " + std::to_string(first->second) + ", again at line " +
                           std::to_string(line) + "); a mapping names each key once");
    }
    f.key = node.text;
    f.key_mark = node.mark;
    f.has_key = true;
  }

  // yaml-cpp accepts a quoted scalar that runs to the end of the text if the text ends with a line
  // break, as if the quote were closed there: the rest of the file silently becomes one string.
  void check_quote_closed(const YAML::Mark& mark) const {
    const std::string_view t = source_.text();
    const std::size_t open = source_.skip_properties(static_cast<std::size_t>(mark.pos));
    const char quote = source_.at(open);
    if (quote != '"' && quote != '\'') return;  // plain, or a block scalar (| or >)
    for (std::size_t k = open + 1; k < t.size(); ++k) {
      if (quote == '"' && t[k] == '\\') ++k;                                            // an escape
      else if (quote == '\'' && t[k] == '\'' && k + 1 < t.size() && t[k + 1] == '\'') ++k;  // '' is a '
      else if (t[k] == quote) return;
    }
    fail_syntax(open, std::string("the quote ") + quote + " opened here is never closed, so the rest of the text "
                                                      "became part of this value; add the closing " + quote);
  }

  // A document after the first must start with '---'. yaml-cpp instead ends a document where its
  // top-level value ends and reads what follows as another one (`- a` then `b: 1` are two documents);
  // and for a token it cannot place (a lone ',') it returns an empty document without moving on, forever.
  [[noreturn]] void stray_document(const YAML::Mark& mark) const {
    const char c = source_.at(static_cast<std::size_t>(mark.pos));
    if (c == ',') fail_syntax(mark, "a ',' outside brackets: commas separate items only inside [a, b] and {a: 1, b: 2}");
    if (mark.pos == document_mark_.pos) {
      fail_syntax(mark, "YAML cannot read past " + in_quotes(std::string(1, c)) + " here; if it is text, quote it");
    }
    const Json& previous = documents_.back();
    const char* what = previous.is_object() ? "mapping" : previous.is_array() ? "list" : "value";
    fail_syntax(mark, std::string("this line is outside the top-level ") + what +
                      " above it, which ended on an earlier line: check its indentation (two documents are "
                      "separated by a '---' line)");
  }

  const Source& source_;
  const YamlLimits& limits_;
  Json documents_ = Json::array();
  Json root_;
  YAML::Mark document_mark_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  std::string anchor_name_;  // from OnAnchor, for the node event that follows it
  Copies expanded_;  // by aliases
  Copies anchored_;  // kept for anchored lists and mappings
  YAML::Mark last_mark_;
  Block closed_;
  bool has_closed_ = false;
};

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
int column_of(const Source& src, const JsonBuilder::Block& b) {
  return src.column(src.skip_properties(static_cast<std::size_t>(b.mark.pos)));
}

// "illegal map value": a ':' YAML cannot use. The text before it is a plain value that ran on from an
// earlier line, or the second value on one line.
std::string explain_map_value(const Source& src, std::size_t pos, const JsonBuilder& b) {
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
std::string explain_block_end(const Source& src, std::size_t pos, const JsonBuilder& b) {
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
  std::vector<JsonBuilder::Block> candidates;
  if (const JsonBuilder::Block* closed = b.last_closed()) candidates.push_back(*closed);
  const auto open = b.open_collections();
  for (auto it = open.rbegin(); it != open.rend(); ++it)
    if (it->indented) candidates.push_back(*it);
  const int column = src.column(pos);
  const bool item = c == '-' && separates(src.line(pos), pos - src.line_start(pos));
  const auto line_of = [&](const JsonBuilder::Block& k) {
    return std::to_string(src.line_number(static_cast<std::size_t>(k.mark.pos)));
  };
  if (const JsonBuilder::Block* closed = b.last_closed(); item && closed && !closed->is_map && column_of(src, *closed) != column) {
    return src.where(pos) + ": this list item's '-' is in column " + std::to_string(column) +
           ", but the items of the list above (line " + line_of(*closed) + ") have theirs in column " +
           std::to_string(column_of(src, *closed)) + "; the '-' of one list start in the same column";
  }
  for (const JsonBuilder::Block& k : candidates) {
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
  for (const JsonBuilder::Block& k : candidates) {
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
std::string explain_flow_end(const Source& src, std::size_t pos, const JsonBuilder& b, bool is_map) {
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

std::string explain(const YAML::ParserException& e, const Source& src, const JsonBuilder& b) {
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

}  // namespace

Json yaml_documents_to_json(const std::string& text, const YamlLimits& limits) {
  if (text.size() > limits.max_bytes) {
    throw InputError("", "the YAML text is " + std::to_string(text.size()) + " bytes; at most " +
                             std::to_string(limits.max_bytes) + " are read");
  }
  // yaml-cpp skips a UTF-8 byte-order mark and counts positions after it: so do the messages.
  std::string_view body = text;
  if (body.rfind("\xEF\xBB\xBF", 0) == 0) body.remove_prefix(3);
  const Source src(body);
  // yaml-cpp reads the text as UTF-16 or UTF-32 if it starts with their byte-order mark or has NUL bytes
  // among its first four; its positions would then mean nothing here. YAML text holds no NUL anyway.
  if (body.rfind("\xFE\xFF", 0) == 0 || body.rfind("\xFF\xFE", 0) == 0) {
    throw InputError("", "the text is UTF-16 (it starts with a UTF-16 byte-order mark); save it as UTF-8");
  }
  if (const std::size_t nul = body.find('\0'); nul != npos) {
    throw InputError("", src.where(nul) + ": a NUL byte, which YAML text cannot hold (is the file UTF-16? save it "
                                         "as UTF-8)");
  }
  std::istringstream in{std::string(body)};
  JsonBuilder builder(src, limits);
  try {
    YAML::Parser parser(in);
    // Ends: every document after the first starts with a '---' the parser consumes (JsonBuilder checks),
    // and there are at most max_documents.
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::ParserException& e) {
    throw InputError("", explain(e, src, builder));
  } catch (const YAML::Exception& e) {
    throw InputError("", "malformed YAML: " + e.msg);
  }
  return builder.take_documents();
}

std::string nodepool_json_text(const std::string& path_or_name, const std::string& text) {
  const std::string& path = path_or_name;
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  // .json files are JSON (syntax errors reported as JSON); other text is JSON if it parses as such, else YAML.
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) return text;
  if (first != std::string::npos && text[first] == '{' && Json::accept(text)) return text;
  std::vector<Json> pools;
  for (Json& doc : yaml_documents_to_json(text)) {
    if (doc.is_null()) continue;  // an empty document
    if (doc.is_object() && doc.contains("apiVersion") && doc["apiVersion"].is_string() &&
        doc["apiVersion"].get<std::string>().rfind("karpenter.k8s.aws/", 0) == 0) {
      continue;
    }
    pools.push_back(std::move(doc));
  }
  if (pools.size() != 1) {
    throw InputError("", "expected one NodePool document in '" + path + "', found " + std::to_string(pools.size()) +
                             " (documents with apiVersion karpenter.k8s.aws/... are skipped)");
  }
  return pools[0].dump();
}

}  // namespace gpuscale
