// Tests of the CLI's YAML → JSON conversion (cli/yaml_json.cpp): kubectl's scalar rules, the NodePool
// document choice, and hostile input (hangs, alias bombs, deep nesting, bad UTF-8, huge keys), which
// must all end quickly as an InputError that names where.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "gpuscale/errors.hpp"
#include "gpuscale/json.hpp"
#include "yaml_json.hpp"

using namespace gpuscale;

namespace {

// The first (only) document of a YAML text.
Json one(const std::string& yaml, const YamlLimits& limits = {}) {
  const Json docs = yaml_documents_to_json(yaml, limits);
  REQUIRE(docs.size() == 1);
  return docs[0];
}

InputError error_of(const std::string& yaml, const YamlLimits& limits = {}) {
  try {
    yaml_documents_to_json(yaml, limits);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError for: " << yaml.substr(0, 200));
  return InputError("", "");
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A message that names path, position and cause.
struct Expected {
  const char* what;
  std::string yaml;
  const char* path;
  const char* says;  // a part of the message, position included
};

void check_errors(const std::vector<Expected>& cases) {
  for (const Expected& c : cases) {
    INFO(c.what);
    const InputError e = error_of(c.yaml);
    INFO(e.what());
    CHECK(e.path() == c.path);
    CHECK(contains(e.message(), c.says));
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string repeat(const std::string& s, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("plain scalars resolve as go-yaml v2 resolves them (YAML 1.1)", "[yaml]") {
  const Json j = one(
      "booleans: [yes, No, ON, off, y, N, true, False]\n"
      "nulls: [~, null, NULL, ]\n"
      "empty:\n"
      "ints: [50, -7, +3, 0x1F, 010, 0o17, 0b101, 1_000, 0]\n"
      "floats: [1.5, 1e3, .5, -2.5E-1, 1.]\n"
      "strings: [10m, 10%, p5.48xlarge, 1h30m, 1:30, 0x, 0xG, 1_0.5, nan, yess]\n"
      "quoted: [\"yes\", '0', \"010\", \"~\", '', \"1e3\"]\n"
      "tagged: [!!str 10, !!str yes, !!int \"7\"]\n"
      "block: |\n  two\n  lines\n"
      "folded: >\n  one\n  line\n");
  CHECK(j["booleans"] == Json::parse("[true, false, true, false, true, false, true, false]"));
  CHECK(j["nulls"] == Json::parse("[null, null, null]"));
  CHECK(j["empty"].is_null());
  CHECK(j["ints"] == Json::parse("[50, -7, 3, 31, 8, 15, 5, 1000, 0]"));
  CHECK(j["ints"][0].is_number_integer());
  CHECK(j["floats"] == Json::parse("[1.5, 1000.0, 0.5, -0.25, 1.0]"));
  CHECK(j["floats"][1].is_number_float());
  CHECK(j["strings"] == Json::parse(R"(["10m", "10%", "p5.48xlarge", "1h30m", "1:30", "0x", "0xG", "1_0.5", "nan", "yess"])"));
  CHECK(j["quoted"] == Json::parse(R"(["yes", "0", "010", "~", "", "1e3"])"));
  // !!str keeps the text; any other tag resolves like a plain scalar, as before the rewrite.
  CHECK(j["tagged"] == Json::parse(R"(["10", "yes", 7])"));
  CHECK(j["block"] == "two\nlines\n");
  CHECK(j["folded"] == "one line\n");
}

TEST_CASE("`nodes: \"0\"` is a string, `nodes: 0` a number", "[yaml]") {
  CHECK(one("nodes: \"0\"")["nodes"] == "0");
  CHECK(one("nodes: 0")["nodes"] == 0);
  CHECK(one("nodes: 0")["nodes"].is_number_integer());
}

TEST_CASE("integers beyond 64 bits become floats when they look like one, else strings", "[yaml]") {
  const Json j = one(
      "a: 18446744073709551615\n"
      "b: -9223372036854775808\n"
      "c: 99999999999999999999\n"
      "d: 0xFFFFFFFFFFFFFFFFFF\n"
      "e: 08\n");
  CHECK(j["a"].is_number_unsigned());
  CHECK(j["a"].get<std::uint64_t>() == 18446744073709551615ULL);
  CHECK(j["b"].get<std::int64_t>() == INT64_MIN);
  CHECK(j["c"].is_number_float());
  CHECK(j["c"].get<double>() == 1e20);
  CHECK(j["d"] == "0xFFFFFFFFFFFFFFFFFF");
  CHECK(j["e"] == 8.0);  // not octal, but the float pattern (go-yaml v2 does the same)
}

TEST_CASE("numbers JSON cannot hold are errors at their path", "[yaml]") {
  check_errors({
      {"1e400", "spec:\n  weight: 1e400\n", "/spec/weight",
       "line 2, column 11: the number \"1e400\" is beyond the range of a double-precision number"},
      {"-1e400", "w: [1, -1e400]", "/w/1", "beyond the range of a double-precision number"},
      {".inf", "weight: .inf", "/weight", "line 1, column 9: the YAML value .inf (infinity / not-a-number) has no JSON form"},
      {"-.Inf", "weight: -.Inf", "/weight", "has no JSON form"},
      {".NaN", "weight: .NaN", "/weight", "has no JSON form"},
  });
  CHECK(one("w: 1e-400")["w"] == 0.0);  // underflow is kept, as Go keeps it
  CHECK(one("w: 1.7e308")["w"] == 1.7e308);
  CHECK(one("w: \".inf\"")["w"] == ".inf");
}

TEST_CASE("keys keep their text, as given", "[yaml]") {
  const Json j = one("yes: 1\n010: 2\n~x: 3\n\"~\": 4\nnvidia.com/gpu: 5\n.inf: 6\n");
  CHECK(j == Json::parse(R"({"yes": 1, "010": 2, "~x": 3, "~": 4, "nvidia.com/gpu": 5, ".inf": 6})"));
}

TEST_CASE("a stream holds one document per '---', an empty one is null", "[yaml]") {
  const Json docs = yaml_documents_to_json("# c\n---\na: 1\n---\n---\n- b\n...\n");
  CHECK(docs == Json::parse(R"([{"a": 1}, null, ["b"]])"));
  CHECK(yaml_documents_to_json("") == Json::array());
  CHECK(yaml_documents_to_json("# only a comment\n") == Json::array());
}

TEST_CASE("the NodePool document: EC2NodeClass documents are skipped, JSON passes as is", "[yaml]") {
  const std::string pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: gpu}\n";
  const std::string node_class = "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: gpu}\n";
  const Json expected = Json::parse(R"({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"}})");
  CHECK(Json::parse(nodepool_json_text("p.yaml", pool + "---\n" + node_class)) == expected);
  CHECK(Json::parse(nodepool_json_text("p.yaml", "---\n" + node_class + "---\n" + pool + "---\n")) == expected);
  CHECK(Json::parse(nodepool_json_text("-", pool)) == expected);
  const std::string json = "{\"apiVersion\": \"karpenter.sh/v1\"}";
  CHECK(nodepool_json_text("-", json) == json);
  CHECK(nodepool_json_text("pool.json", "not even JSON") == "not even JSON");

  auto message = [](const std::string& text) {
    try {
      nodepool_json_text("p.yaml", text);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(contains(message(pool + "---\n" + pool), "expected one NodePool document in 'p.yaml', found 2"));
  CHECK(contains(message(node_class), "found 0 (documents with apiVersion karpenter.k8s.aws/... are skipped)"));
  CHECK(contains(message("# nothing\n"), "found 0"));
  CHECK(contains(message(pool + "weight: 1e400\n"), "/weight: line 4, column 9: the number"));
}

TEST_CASE("a lone ',' and other text yaml-cpp cannot place end at once", "[yaml][hostile]") {
  const auto t0 = std::chrono::steady_clock::now();
  check_errors({
      {"a lone comma", ",", "", "malformed YAML at line 1, column 1: a ',' outside brackets"},
      {"a comma after a mapping", "a: 1\n,\n", "", "malformed YAML at line 2, column 1: a ',' outside brackets"},
      {"a comma after a list", "- a\n, b\n", "", "line 2, column 1: a ',' outside brackets"},
      {"a mapping after a top-level list", "- a\nb: 1\n", "",
       "malformed YAML at line 2, column 1: this line is outside the top-level list above it"},
  });
  CHECK(seconds_since(t0) < 1.0);
}

TEST_CASE("at most max_documents documents", "[yaml][hostile]") {
  CHECK(yaml_documents_to_json(repeat("---\na: 1\n", 16)).size() == 16);
  const InputError e = error_of(repeat("---\na: 1\n", 17));
  CHECK(contains(e.message(), "line 33, column 1: more than 16 YAML documents in one text"));
}

TEST_CASE("at most max_bytes of text", "[yaml][hostile]") {
  const InputError e = error_of("a: \"" + std::string((256u << 10) + 10, 'x') + "\"\n");
  CHECK(contains(e.message(), "the YAML text is 262160 bytes; at most 262144 are read"));
}

TEST_CASE("anchors and aliases copy values, within a budget (billion laughs)", "[yaml][hostile]") {
  const Json j = one("base: &b {cpu: 4, tags: [a, b]}\ncopy: *b\nname: &n yes\nflag: *n\n*n : key\n");
  CHECK(j["copy"] == j["base"]);
  CHECK(j["flag"] == true);  // an aliased scalar resolves where it lands
  CHECK(j["yes"] == "key");  // ... and as a key keeps its text

  // Nine levels of nine aliases: 520 bytes that would expand to 9^9 values.
  std::string bomb = "a: &a [x,x,x,x,x,x,x,x,x]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    bomb += std::string(1, level) + ": &" + level + " [";
    for (int k = 0; k < 9; ++k) bomb += std::string(k ? "," : "") + "*" + static_cast<char>(level - 1);
    bomb += "]\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  const InputError e = error_of(bomb);
  CHECK(seconds_since(t0) < 1.0);
  CHECK(e.path() == "/f/0");
  CHECK(contains(e.message(), "line 6, column 8: YAML aliases expand to more than 100000 values (an alias bomb?)"));

  // One long string aliased many times is bounded by bytes.
  YamlLimits small;
  small.max_copied_bytes = 1000;
  const InputError bytes = error_of("s: &s \"" + std::string(100, 'x') + "\"\nl: [" + repeat("*s, ", 20) + "*s]\n", small);
  CHECK(contains(bytes.message(), "YAML aliases expand to more than 1000 bytes of text (an alias bomb?)"));

  // Nested anchors copy the same values once per level, aliases or not.
  small = YamlLimits();
  small.max_copied_values = 1000;
  std::string nested;
  for (int k = 0; k < 40; ++k) nested += "&a" + std::to_string(k) + " [";
  nested += repeat("x, ", 100) + "x" + std::string(40, ']');
  const InputError anchors = error_of(nested, small);
  CHECK(contains(anchors.message(), "YAML anchors hold more than 1000 values"));
}

TEST_CASE("aliases: cycles and unknown anchors", "[yaml]") {
  check_errors({
      {"an alias inside its own anchor", "a: &a [1, *a]", "/a/1",
       "line 1, column 11: the alias *a is inside the value it names (&a at line 1, column 4): JSON cannot hold a cycle"},
      {"an unknown alias", "a: 1\nb: *nope\n", "",
       "malformed YAML at line 2, column 4: the alias *nope refers to no anchor"},
      {"anchors belong to their document", "a: &x 1\n---\nb: *x\n", "", "the alias *x refers to no anchor"},
  });
}

TEST_CASE("nesting deeper than 64 levels is an error that names path and line", "[yaml][hostile]") {
  CHECK_NOTHROW(one(std::string(64, '[') + std::string(64, ']')));
  const InputError e65 = error_of(std::string(65, '[') + std::string(65, ']'));
  CHECK(e65.path().rfind("/0/0/0/0/0/0/0/0", 0) == 0);  // 64 of them, shortened by InputError
  CHECK(contains(e65.message(), "line 1, column 65: nested more than 64 levels deep"));

  const auto t0 = std::chrono::steady_clock::now();
  const InputError open = error_of(std::string(100000, '['));
  CHECK(seconds_since(t0) < 2.0);
  CHECK(contains(open.message(), "nested more than 64 levels deep"));

  std::string indented;
  for (int k = 0; k < 70; ++k) indented += std::string(2 * k, ' ') + "k:\n";
  const InputError block = error_of(indented);
  CHECK(contains(block.message(), "line 65, column 129: nested more than 64 levels deep"));

  // Through an alias: the copy would be nested deeper than the limit allows.
  std::string deep_anchor = "a: &d " + std::string(40, '[') + std::string(40, ']') + "\nb: " + std::string(30, '[') +
                            "*d" + std::string(30, ']') + "\n";
  CHECK(contains(error_of(deep_anchor).message(), "nested more than 64 levels deep (through the alias *d)"));
}

TEST_CASE("text must be UTF-8: every scalar is checked", "[yaml][hostile]") {
  check_errors({
      {"overlong '/'", "metadata:\n  name: gpu-\xC0\xAF\n", "/metadata/name",
       "line 2, column 13: \"gpu-\\xc0\\xaf\" is not valid UTF-8 text (at its byte 5)"},
      {"overlong 3 bytes", "a: \"\xE0\x80\xAF\"", "/a", "not valid UTF-8 text"},
      {"surrogate U+D800", "a: x\xED\xA0\x80", "/a", "line 1, column 5: \"x\\xed\\xa0\\x80\" is not valid UTF-8 text (at its byte 2)"},
      {"above U+10FFFF", "a: \xF4\x90\x80\x80", "/a", "not valid UTF-8 text"},
      {"truncated", "a: [\"\xE2\x82\"]", "/a/0", "not valid UTF-8 text"},
      {"a lone continuation byte", "a: |\n  ok\n  \x80\n", "/a", "line 3, column 3: \"ok\\n\\x80\\n\" is not valid UTF-8 text"},
      {"in a key", "spec:\n  k\xFF: 1\n", "/spec", "line 2, column 4: \"k\\xff\" is not valid UTF-8 text"},
      {"Latin-1", "name: caf\xE9\n", "/name", "save the file as UTF-8"},
  });
  const Json ok = one("a: \"é € 😀\"\nb: \"\\u00e9\\U0001F600\"\n");
  CHECK(ok["a"] == "é € 😀");
  CHECK(ok["b"] == "é😀");
  CHECK_NOTHROW(ok.dump());
}

TEST_CASE("byte-order marks and NUL bytes", "[yaml][hostile]") {
  CHECK(one("\xEF\xBB\xBF" "a: 1\n") == Json::parse(R"({"a": 1})"));
  CHECK(contains(error_of("\xEF\xBB\xBF" "a: 1\nb: \xFF\n").message(), "line 2, column 4"));
  CHECK(contains(error_of("\xFF\xFE" "a\0:\0").message(), "the text is UTF-16"));
  CHECK(contains(error_of(std::string("a: 1\nb: x\0y\n", 12)).message(), "line 2, column 5: a NUL byte"));
  // A NUL written as an escape is text like any other, and never cuts a message.
  const std::string nul_key = "\"a\\0b\": 1\n\"a\\0b\": 2\n";
  const InputError e = error_of(nul_key);
  CHECK(e.path() == "/a\\u0000b");
  CHECK(contains(e.message(), "duplicate key \"a\\u0000b\" (first at line 1, again at line 2)"));
  CHECK(std::string(e.what()).find('\0') == std::string::npos);
}

TEST_CASE("duplicate keys name both lines, paths escape '/' and '~'", "[yaml]") {
  check_errors({
      {"duplicate", "a:\n  b: 1\n  c: 2\n  b: 3\n", "/a/b",
       "line 4, column 3: duplicate key \"b\" (first at line 2, again at line 4)"},
      {"duplicate after quoting", "x: 1\n\"x\": 2\n", "/x", "duplicate key \"x\""},
      {"escaped path", "limits:\n  nvidia.com/gpu: 1\n  nvidia.com/gpu: 2\n", "/limits/nvidia.com~1gpu", "duplicate key"},
      {"tilde", "a~b/c:\n  w: .inf\n", "/a~0b~1c/w", "has no JSON form"},
  });
}

TEST_CASE("mapping keys must be text", "[yaml]") {
  check_errors({
      {"flow list key", "[a, b]: x\n", "", "line 1, column 1: a list used as a mapping key"},
      {"explicit list key", "? [a]\n: x\n", "", "line 1, column 3: a list used as a mapping key"},
      {"flow mapping key", "m:\n  {a: 1}: x\n", "/m", "line 2, column 3: a mapping used as a mapping key"},
      {"alias to a list as key", "a: &l [1]\n*l : x\n", "", "line 2, column 1: a list used as a mapping key"},
      {"empty key", ": x\n", "", "line 1, column 1: a mapping key that is empty or null"},
      {"null key", "a: 1\n~: x\n", "", "line 2, column 1: a mapping key that is empty or null"},
      {"null word key", "null: x\n", "", "a mapping key that is empty or null"},
  });
}

TEST_CASE("a 3 MB key is never echoed in full", "[yaml][hostile]") {
  YamlLimits big;
  big.max_bytes = 16u << 20;
  const std::string key(3u << 20, 'k');
  const InputError dup = error_of("? " + key + "\n: 1\n? " + key + "\n: 2\n", big);
  CHECK(contains(dup.message(), "duplicate key \"" + std::string(60, 'k') + "…\" (3145728 bytes)"));
  CHECK(std::string(dup.what()).size() < 1000);

  const InputError inside = error_of("? " + key + "\n: {w: .inf}\n", big);
  CHECK(std::string(inside.what()).size() < 1000);
  CHECK(contains(inside.message(), "has no JSON form"));

  // `key: value` keys are at most 1024 characters in YAML.
  const InputError simple = error_of("a: 1\n" + std::string(1100, 'k') + ": 1\n");
  CHECK(contains(simple.message(), "malformed YAML at line 2, column 1101: a key longer than 1024 characters"));
  CHECK(std::string(simple.what()).size() < 1000);
}

TEST_CASE("syntax errors in plain words, at the line of the mistake", "[yaml]") {
  check_errors({
      {"tab indentation", "a: 1\nb:\n\tc: 2\n", "",
       "malformed YAML at line 3, column 1: a tab in the indentation; YAML indents with spaces only"},
      {"key: value: x", "a: 1\nkey: value: x\nc: 3\n", "",
       "malformed YAML at line 2, column 11: a second ': ' on one line, in \"key: value: x\"; a mapping cannot start on "
       "the line of its key: quote the value (key: \"value: more\") or put the nested mapping on its own, indented lines"},
      {"- a: b: c", "- a: b: c\n", "", "line 1, column 7: a second ': ' on one line, in \"a: b: c\""},
      // yaml-cpp reports the line after: `key:value c` reads as one plain scalar up to line 3's ':'.
      {"no space after ':'", "a: 1\nkey:value\nc: 3\n", "",
       "malformed YAML at line 2, column 4: no space after ':' in \"key:value\"; a key and its value are separated by "
       "': ', a colon and a space"},
      {"no space after ':' in a nested mapping", "b:\n  c:value\n  d: 2\n", "", "line 2, column 4: no space after ':'"},
      {"no ':' at all", "a: 1\nb\nc: 2\n", "", "malformed YAML at line 2, column 1: \"b\" has no ': ' after it"},
      {"no ':' on the last key", "a: 1\nb\n", "", "malformed YAML at line 2, column 1: \"b\" has no ':' after it"},
      {"'-2' for '- 2'", "a:\n- 1\n-2\n", "", "line 3, column 1: \"-2\" has no ':' after it"},
      {"over-indented key", "spec:\n  a: 1\n    b: 2\n", "",
       "malformed YAML at line 3, column 5: this line is indented more than the keys of its mapping (column 3)"},
      {"under-indented key", "spec:\n  template:\n    spec:\n      x: 1\n     y: 2\n", "",
       "malformed YAML at line 5, column 6: this line's indentation lines up with no list or mapping above it; those "
       "it could belong to start in columns 7 (line 4), 5 (line 3), 3 (line 2), 1 (line 1)"},
      {"list item indented less", "a:\n  - x\n - y\n", "",
       "malformed YAML at line 3, column 2: this list item's '-' is in column 2, but the items of the list above "
       "(line 2) have theirs in column 3"},
      {"list item among keys", "a: 1\n- b\n", "", "line 2, column 1: a list item ('- ') among the keys of the mapping"},
      {"list item after a value", "a: b # note\n  - c\n", "", "line 2, column 3: a list item ('- ') under a key that already has a value"},
      {"unclosed [", "a: [1, 2\nb: 3\n", "",
       "malformed YAML at line 2, column 2: expected ',' or ']' here, to go on with or close the list opened with '[' "
       "at line 1, column 4 (is the ']' missing?)"},
      {"unclosed {", "a: {b: 1\nc: 2\n", "", "the mapping opened with '{' at line 1, column 4 (is the '}' missing?)"},
      {"[ closed by }", "a: [x}\n", "",
       "line 1, column 6: a \"}\" where the list opened with '[' at line 1, column 4 is to be closed with ']'"},
      {"stray ]", "a: x]\nb: ]\n", "", "line 2, column 4: a \"]\" that closes nothing"},
      // yaml-cpp accepts an unclosed quote that runs to the end of a text ending with a line break.
      {"unclosed \" at the end", "a: 1\nb: \"abc\nc: 3\n", "",
       "malformed YAML at line 2, column 4: the quote \" opened here is never closed"},
      {"unclosed ' at the end", "b: 'abc\n", "", "line 1, column 4: the quote ' opened here is never closed"},
      {"unclosed \" without a final line break", "b: \"abc", "", "line 1, column 4: the quote \" opened here is never closed"},
      {"unclosed \" before another quote", "a: \"10%\n- b: \"0\"\n", "",
       "malformed YAML at line 1, column 4: the quoted value that starts here runs on to line 2: is its closing \" missing?"},
      {"text after a quoted value", "a: \"x\" y\n", "", "line 1, column 8: more text after a complete value on this line"},
      {"reserved @", "a: @x\n", "", "line 1, column 4: a value cannot start with \"@\" (reserved in YAML); quote it"},
      {"bad escape", "a: \"C:\\dir\"\n", "", "an unknown escape in double quotes"},
      {"columns count characters", "é: \"é\" x\n", "", "line 1, column 8: more text"},
  });
}

TEST_CASE("no input hangs or escapes as anything but an InputError", "[yaml][hostile]") {
  // Short texts from YAML's punctuation, from a fixed-seed LCG: every one ends, as JSON or an InputError.
  const std::vector<std::string> tokens = {"[", "]", "{", "}", ",", ":", ": ", "- ", "? ", "&a ", "*a", "!!str ",
                                           "\"", "'", "\n", " ", "  ", "\t", "# c", "|", ">", "a", "1", "---\n",
                                           "...\n", "!", "%", "@", "\\", "\xC3", "~", "yes", ".inf", "1e400"};
  std::uint64_t state = 42;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33);
  };
  const auto t0 = std::chrono::steady_clock::now();
  int parsed = 0;
  for (int n = 0; n < 3000; ++n) {
    std::string text;
    const std::size_t count = 1 + next() % 24;
    for (std::size_t k = 0; k < count; ++k) text += tokens[next() % tokens.size()];
    try {
      const Json docs = yaml_documents_to_json(text);
      CHECK_NOTHROW(docs.dump());
      ++parsed;
    } catch (const InputError& e) {
      INFO(text);
      CHECK_FALSE(e.message().empty());
    }
  }
  CHECK(parsed > 100);
  CHECK(seconds_since(t0) < 10.0);
}
