// engine::parse_json against nlohmann's parser: the same value with the same types, or the same
// refusal, for fixed edge cases, every JSON file of the tests and the corpus, and a deletion and
// two substitutions at every byte of the small ones.
#include <doctest/doctest.h>

#include <filesystem>
#include <algorithm>
#include <string>
#include <vector>

#include "engine/json_parse.h"
#include "engine/node.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {

// parse_json_document gives the document PositionIndex::from_json makes of nlohmann's value, or
// refuses what nlohmann refuses.
bool document_agrees(std::string_view text, const json& expected) {
  std::shared_ptr<const PositionIndex> doc;
  const JsonDocumentRead read = parse_json_document(text, 100000, doc);
  if (expected.is_discarded()) return read == JsonDocumentRead::invalid && !doc;
  if (read != JsonDocumentRead::read || !doc) return false;
  // json_of keeps the last of keys written twice whatever the document holds: same_value also
  // compares the live entries' counts, and the node counts must match (no entry left behind).
  const auto reference = PositionIndex::from_json(expected);
  return identical(doc->json_of(doc->root()), reference->json_of(0)) && doc->size() == reference->size() &&
         same_value(Node(doc.get(), doc->root()), Node(reference.get(), 0));
}

bool agrees(std::string_view text) {
  const json expected = json::parse(text, nullptr, false);
  return identical(parse_json(text), expected) && document_agrees(text, expected);
}


}  // namespace

TEST_SUITE("unit") {

TEST_CASE("identical tells types apart where nlohmann's == does not") {
  CHECK(json(1u) == json(1));
  CHECK_FALSE(identical(json(1u), json(1)));
  CHECK_FALSE(identical(json(0.0), json(-0.0)));
  CHECK_FALSE(identical(json(1.0), json(1)));
  CHECK(identical(json::parse(R"({"a":[1,-2,1.5,"x",null,true]})"), json::parse(R"({"a":[1,-2,1.5,"x",null,true]})")));
  CHECK_FALSE(identical(json::parse(R"({"a":[1]})"), json::parse(R"({"a":[1,2]})")));
  CHECK_FALSE(identical(json::parse(R"({"a":1})"), json::parse(R"({"b":1})")));
  CHECK(identical(json(json::value_t::discarded), json(json::value_t::discarded)));
  CHECK_FALSE(identical(json(json::value_t::discarded), json()));
}

TEST_CASE("parse_json gives nlohmann's value and types for the shapes of JSON") {
  const char* cases[] = {
      // scalars and their types: non-negative integers unsigned, negative signed
      "0", "-0", "7", "-7", "123456789012345678", "-123456789012345678", "1234567890123456789",
      "18446744073709551615", "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
      "1.5", "-0.0", "0.1", "1e5", "1E+5", "1e-5", "2.5e-3", "1e308", "1e309", "-1e309", "1e-400", "4.9e-324",
      "0.30000000000000004", "123456789012345678901234567890.5", "true", "false", "null",
      // numbers that are not
      "01", "-", "-a", "1.", ".5", "1e", "1e+", "+1", "0x10", "1 2", "NaN", "Infinity",
      // strings
      R"("")", R"("a")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u0041\u00e9\u20ac")", R"("\ud83d\ude00")",
      R"("\u0000")", R"("\u003cscript\u003e")", R"("\uD83D\uDE00")", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
      // strings that are not
      R"("\ud83d")", R"("\ude00")", R"("\ud83d\u0041")", R"("\ud83dx")", R"("\u12")", R"("\x")", "\"a",
      "\"\x01\"", "\"\x7f\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"",
      "\"\x80\"", "\"\xff\"", "\"a\x00b\"",
      // containers
      "{}", "[]", "[1,2,3]", R"({"a":1,"b":[true,null,{"c":"d"}]})", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
      R"({"a":1,"a":2})", R"({"a":{"x":1},"a":[2]})", R"({"b":1,"a":2,"c":3})", "[[[[[]]]]]",
      // containers that are not
      "{", "[", "[1,]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "[1 2]", "{}x", "[] []", "",
      "   ", "\xef\xbb\xbf{}", "{\"a\":1}\x00", "{\"a\":1}//", "/* */{}",
  };
  for (const char* c : cases) {
    INFO("text: " << c);
    CHECK(agrees(c));
  }
  // Embedded NULs, which a C string cannot hold.
  CHECK(agrees(std::string_view("[1,\0]", 5)));
  CHECK(agrees(std::string_view("\"a\0\"", 4)));
  // Deeper than the fast reader goes: nlohmann reads it, to the same value.
  std::string deep = std::string(2000, '[') + std::string(2000, ']');
  CHECK(agrees(deep));
  CHECK_FALSE(parse_json(deep).is_discarded());
}

TEST_CASE("the fast reader tells how deeply a document nests") {
  auto depth = [](std::string_view text) {
    json out;
    unsigned d = 99;
    REQUIRE(parse_json_fast(text, out, &d));
    return d;
  };
  CHECK(depth("1") == 0);
  CHECK(depth(R"("[[{")") == 0);  // brackets in a string are text
  CHECK(depth("[]") == 1);
  CHECK(depth(R"({"a": [1, {"b": []}], "c": {}})") == 4);
  CHECK(depth(R"([[], [[["x\"]]"]]]])") == 4);  // an escaped quote does not end the string
  CHECK(depth(std::string(511, '[') + std::string(511, ']')) == 511);
  json out;
  CHECK_FALSE(parse_json_fast(std::string(513, '[') + std::string(513, ']'), out));  // nlohmann's to read
}

TEST_CASE("parse_json_document bounds the nesting, reads keys written twice as nlohmann does, and keeps the order") {
  std::shared_ptr<const PositionIndex> doc;
  const std::string deep = std::string(600, '[') + std::string(600, ']');
  CHECK(parse_json_document(deep, 512, doc) == JsonDocumentRead::too_deep);  // nlohmann's to read, measured first
  CHECK_FALSE(doc);
  CHECK(parse_json_document(std::string(40, '[') + std::string(40, ']'), 39, doc) == JsonDocumentRead::too_deep);
  CHECK(parse_json_document(std::string(40, '[') + std::string(40, ']'), 40, doc) == JsonDocumentRead::read);
  CHECK(parse_json_document("{\"a\":", 512, doc) == JsonDocumentRead::invalid);
  CHECK_FALSE(doc);
  // A key written twice (the fast reader leaves it to nlohmann): the last value, once; among a few
  // keys (compared by their hash bits), among many (sorted), decoded ("\u0061" is "a").
  std::string many;
  for (int i = 0; i < 40; ++i) many += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  struct Twice {
    std::string text;
    std::string key;
    std::string last;
  };
  for (const Twice& t : {Twice{R"({"a":1,"b":2,"a":"3"})", "a", "3"}, Twice{"{" + many + R"("k7":"again"})", "k7", "again"},
                         Twice{R"({"a":1,"b":{"\u0061":0,"a":"x"},"c":2})", "a", ""}}) {
    CAPTURE(t.text);
    CHECK_FALSE(parse_json_document_fast(t.text, doc));
    REQUIRE(parse_json_document(t.text, 512, doc) == JsonDocumentRead::read);
    CHECK(document_agrees(t.text, json::parse(t.text)));
    const Node root(doc.get(), doc->root());
    if (!t.last.empty()) CHECK(root[t.key].str() == t.last);  // as entry() reads it
    else CHECK(root["b"]["a"].str() == "x");
  }
  // The fast reader keeps the members as written (the engine's JSON sorts them).
  REQUIRE(parse_json_document_fast(R"({"b":1,"a":{"d":[true,null],"c":-2.5}})", doc));
  const Node root(doc.get(), doc->root());
  std::string order;
  for (auto [key, value] : root.items()) order += std::string(key) + ",";
  CHECK(order == "b,a,");
  CHECK(root["a"]["d"].at(0).boolean());
  CHECK(root["a"]["c"].number() == -2.5);
  CHECK(root["b"].integer() == 1);
  CHECK_FALSE(root.pos().known());  // no positions
}

TEST_CASE("parse_json reads every JSON file of the tests and the corpus as nlohmann does, itself") {
  auto files = gpuguard::test::test_files(".json");
  REQUIRE(files.size() >= 10);
  for (const auto& f : files) {
    INFO("file: " << f.string());
    std::string text = gpuguard::test::read_file(f);
    CHECK(agrees(text));
    // What Kubernetes sends takes the fast path (nothing there needs nlohmann's).
    json fast;
    std::shared_ptr<const PositionIndex> doc;
    if (!json::parse(text, nullptr, false).is_discarded()) {
      CHECK(parse_json_fast(text, fast));
      CHECK(parse_json_document_fast(text, doc));
    }
  }
}

TEST_CASE("parse_json agrees with nlohmann after one-byte changes all through small JSON files") {
  // At each byte: deleting it, and setting it to two of a set of bytes that matter to a JSON
  // reader, taken in turn (the fuzz target `json` tries the rest). Under the sanitizers, every
  // third byte: the plain build takes them all, and CI runs the fuzz target besides.
  constexpr size_t stride = gpuguard::test::kSanitized ? 3 : 1;
  const std::string bytes = std::string("\"\\{}[],:0-.eEu \x01\x7f\x80\xc3\xed\xf4\xff") + std::string(1, '\0');
  size_t checked = 0;
  for (const auto& f : gpuguard::test::test_files(".json")) {
    std::string text = gpuguard::test::read_file(f);
    if (text.size() > 3000) continue;
    for (size_t i = 0; i < text.size(); i += stride) {
      std::string cut = text.substr(0, i) + text.substr(i + 1);
      if (!agrees(cut)) FAIL("deleting byte " << i << " of " << f.string());
      for (size_t k : {i % bytes.size(), (i * 7 + 3) % bytes.size()}) {
        std::string changed = text;
        changed[i] = bytes[k];
        if (!agrees(changed)) FAIL("byte " << i << " of " << f.string() << " set to " << static_cast<int>(bytes[k]));
      }
      ++checked;
    }
  }
  CHECK(checked > 12000 / stride);
}

}  // TEST_SUITE
