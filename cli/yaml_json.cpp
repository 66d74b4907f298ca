// YAML → JSON for the CLI: a yaml-cpp event handler that builds the JSON as the parser reads, within
// YamlLimits, and yaml-cpp's syntax errors retold in words a learner can act on, at the right line.
#include "yaml_json.hpp"

#include "yaml_syntax.hpp"

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

// ---- The event handler: YAML events → JSON ----------------------------------------------------------

class JsonBuilder final : public YAML::EventHandler, public ParseProgress {
 public:
  JsonBuilder(const Source& source, const YamlLimits& limits) : source_(source), limits_(limits) {}

  using Block = YamlBlock;
  std::vector<Block> open_collections() const override {
    std::vector<Block> out;
    for (const Frame& f : stack_) out.push_back({f.is_map, f.indented, f.mark});
    return out;
  }
  // The indented list or mapping that ended last: a line that lines up with nothing often meant it.
  const Block* last_closed() const override { return has_closed_ ? &closed_ : nullptr; }
  // Where the last value or collection started: the parser read correctly up to there.
  const YAML::Mark& last_mark() const override { return last_mark_; }

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

}  // namespace

namespace {

// One pass of yaml-cpp over the text (already checked for size, encoding and NUL bytes).
Json parse_stream(std::string_view body, const YamlLimits& limits) {
  const Source src(body);
  std::istringstream in{std::string(body)};
  JsonBuilder builder(src, limits);
  try {
    YAML::Parser parser(in);
    // Ends: every document after the first starts with a '---' the parser consumes (JsonBuilder checks),
    // and there are at most max_documents.
    while (parser.HandleNextDocument(builder)) {
    }
  } catch (const YAML::ParserException& e) {
    throw InputError("", explain_syntax_error(e, src, builder));
  } catch (const YAML::Exception& e) {
    throw InputError("", "malformed YAML: " + e.msg);
  }
  return builder.take_documents();
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
  try {
    return parse_stream(body, limits);
  } catch (const InputError&) {
    // yaml-cpp reads a text that ends without a line break differently at its very end (an unclosed
    // `[[a]` becomes lists used as keys). If the text with a final line break fails too, its error
    // is the one to report; values never change, since only failing texts are read twice.
    if (body.empty() || body.back() == '\n') throw;
    const std::string with_newline = std::string(body) + "\n";
    parse_stream(with_newline, limits);  // its error, if it has one, is the one reported
    throw;  // the text with a final line break parses: the first error stands
  }
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

std::string snapshot_json_text(const std::string& path, const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0) return text;
  if (first != std::string::npos && text[first] == '{' && Json::accept(text)) return text;
  std::vector<Json> docs;
  for (Json& doc : yaml_documents_to_json(text))
    if (!doc.is_null()) docs.push_back(std::move(doc));
  if (docs.size() != 1) throw InputError("", "expected one snapshot document in '" + path + "', found " + std::to_string(docs.size()));
  return docs[0].dump();
}

void explain_yaml_value_error(const std::string& yaml_text, const std::string& json_text, const InputError& error) {
  if (error.message().rfind("expected an object, found a string", 0) != 0 || json_text == yaml_text) return;
  const Json doc = Json::parse(json_text, nullptr, false);
  const Json::json_pointer at(error.path().empty() || error.path()[0] != '/' ? std::string() : error.path());
  if (doc.is_discarded() || !doc.contains(at) || !doc.at(at).is_string()) return;
  const std::string text = doc.at(at).get<std::string>();
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 >= text.size() || text[colon + 1] == ' ' || text.find('\n') != npos) return;
  const std::size_t pos = yaml_text.find(text);
  if (pos == npos) return;
  const Source src(yaml_text);
  const std::string key = error.path().substr(error.path().rfind('/') + 1);
  throw InputError("", "malformed YAML at " + src.where(pos + colon) + ": no space after ':' in " + in_quotes(text) +
                           "; a key and its value are separated by ': ', a colon and a space (YAML read " + in_quotes(text) + " as the text of " +
                           in_quotes(key) + ", where a mapping belongs)");
}

}  // namespace gpuscale
