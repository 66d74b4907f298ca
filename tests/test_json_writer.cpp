// The compact JSON writer prints what Json::dump(-1, ' ', true) prints (ASCII), and survives invalid UTF-8.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "gpuscale/api.hpp"
#include "gpuscale/json.hpp"

using namespace gpuscale;

TEST_CASE("dump_json writes the same ASCII text as Json::dump with ensure_ascii", "[json]") {
  Json doc = Json::parse(R"({
    "b": [true, false, null, 0, -0.0, 1.0, 0.1, 1e-7, 123456789.125, 1e300, -2.5e-310, [], {}, [[1], {"x": ""}]],
    "a": "plain ASCII, \"quotes\", back\\slash, tab\t, newline\n, cr\r, bell\u0007, del\u007f, unit\u001f, bs\b, ff\f",
    "unicode": "× → ≤ é 漢字 🙂 \u0000 end",
    "ints": [0, 1, -1, 9007199254740993, -9223372036854775808, 18446744073709551615]
  })");
  doc["nan"] = std::numeric_limits<double>::quiet_NaN();
  doc["inf"] = -std::numeric_limits<double>::infinity();
  doc["max"] = std::numeric_limits<double>::max();
  doc["min"] = std::numeric_limits<double>::denorm_min();
  doc[""] = "an empty key";
  const std::string text = dump_json(doc);
  CHECK(text == doc.dump(-1, ' ', true));
  CHECK(text.find("\\u00d7 \\u2192 \\u2264 \\u00e9 \\u6f22\\u5b57 \\ud83d\\ude42 \\u0000 end") != std::string::npos);
  CHECK(std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; }));
  CHECK(Json::parse(text) == Json::parse(doc.dump()));  // (NaN and infinities become null)
  // A whole run result, decision log and all.
  const Json run = api::run(R"({"duration_s": 600, "seed": 3, "autoscaler": {"strategy": "gpu_util"}})");
  REQUIRE(run["decisions"].size() > 10);
  CHECK(dump_json(run) == run.dump(-1, ' ', true));
}

TEST_CASE("dump_json replaces invalid UTF-8 with \\ufffd instead of throwing", "[json]") {
  const std::string bad[] = {"\xff", "a\xc3", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "x\x80y"};
  for (const std::string& s : bad) {
    INFO(Json(s).dump(-1, ' ', false, Json::error_handler_t::replace));
    CHECK_THROWS(Json(s).dump());
    const std::string text = dump_json(Json{{"s", s}});
    CHECK(text.find("\\ufffd") != std::string::npos);
    CHECK(Json::parse(text)["s"].is_string());
  }
  // The envelope of an operation whose error message carries such bytes is still valid JSON.
  const std::string env = api::envelope([]() -> Json { throw InputError("/x\xff", "bad byte \xfe here"); });
  const Json parsed = Json::parse(env);
  CHECK(parsed["ok"] == false);
  CHECK(parsed["error"]["message"].get<std::string>().find("bad byte") == 0);
}

TEST_CASE("the envelope puts a result under ok and result", "[json]") {
  const std::string env = api::envelope([] { return Json{{"v", 1}}; });
  CHECK(env == R"({"ok":true,"result":{"v":1}})");
  CHECK(api::envelope([]() -> Json { throw InputError("/a", "no"); }) ==
        R"({"error":{"message":"no","path":"/a"},"ok":false})");
}
