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

// What the readers give: nlohmann's value, except for a text with a NUL byte, which is not JSON
// (nlohmann's lexer ends its input at the NUL and reads `7\0garbage` as 7: engine/json_parse.h).
json expected_value(std::string_view text) {
  if (text.find('\0') != std::string_view::npos) return json(json::value_t::discarded);
  return json::parse(text, nullptr, false);
}

bool agrees(std::string_view text) {
  const json expected = expected_value(text);
  json within;
  return identical(parse_json(text), expected) && document_agrees(text, expected) &&
         parse_json_within(text, 100000, within) && identical(within, expected);
}

// A document's memory: its nodes and its text, as reserved.
size_t document_bytes(const PositionIndex& doc) { return doc.held_bytes(); }

// The nodes parse_json_document reserves for a text (engine/json_parse.h): the bound of a text
// over 64 KiB or of one whose size allows more nodes than max_nodes, size / 2 + 1 of another.
size_t reserved_nodes(std::string_view text, size_t max_nodes = SIZE_MAX) {
  const size_t cheap = text.size() / 2 + 1;
  return text.size() > (64u << 10) || cheap > max_nodes ? json_node_bound(text) : cheap;
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

TEST_CASE("a NUL byte after the document, or anywhere, makes the text invalid, where nlohmann reads up to it") {
  using namespace std::string_view_literals;
  for (std::string_view text : {"{\"a\":1}\0"sv, "{\"a\":1}\0garbage"sv, "7\0"sv, "7\0\0\0{}"sv, "\"a\"\0x"sv, "[1]\0 "sv,
                                " \0{}"sv, "\0"sv, "{\"a\":1} \n\0"sv, "\xef\xbb\xbf{\"a\":1}\0x"sv, "{\"a\":1,\"a\":2}\0x"sv}) {
    CAPTURE(text);
    // None is JSON to any of the readers (nlohmann reads some: its lexer takes the NUL for the end
    // of its input).
    CHECK(parse_json(text).is_discarded());
    json within;
    CHECK(parse_json_within(text, 512, within));
    CHECK(within.is_discarded());
    std::shared_ptr<const PositionIndex> doc;
    CHECK(parse_json_document(text, 512, doc) == JsonDocumentRead::invalid);
    CHECK_FALSE(doc);
    CHECK(agrees(text));
  }
  // nlohmann does read the first (the exception the readers make), and the same text without the
  // NUL is read by all.
  CHECK_FALSE(json::parse("{\"a\":1}\0garbage"sv, nullptr, false).is_discarded());
  CHECK(parse_json("{\"a\":1} "sv) == json::parse("{\"a\":1}"));
  // An AdmissionReview with garbage after a NUL (the webhook answered it 200): invalid.
  const std::string review = gpuguard::test::read_file(gpuguard::test::source_dir() / "bench" / "pgo-review.json");
  std::shared_ptr<const PositionIndex> doc;
  REQUIRE(parse_json_document(review, 512, doc) == JsonDocumentRead::read);
  CHECK(parse_json_document(review + std::string(1, '\0') + "{\"garbage\": true}", 512, doc) == JsonDocumentRead::invalid);
  CHECK(parse_json_document(review + std::string(1, '\0'), 512, doc) == JsonDocumentRead::invalid);
}

TEST_CASE("json_node_bound: exact for what the fast reader reads, an upper bound for anything") {
  struct Case {
    std::string text;
    size_t nodes;
  };
  const Case cases[] = {
      {"0", 1}, {"\"a,b[c{\"", 1}, {"[]", 1}, {"[ \n]", 1}, {"{}", 1}, {"[0]", 2}, {"[0,0,0]", 4},
      {"[\"a,\",\"[\",\"{\",\"\\\"\"]", 5}, {"{\"a\":1,\"b\":[true,null,{\"c\":\"d\"}]}", 7},
      {"[[],{},[[]]]", 5}, {"{\"k,\":\"v]\\\\\"}", 2}, {" [ 1 , [ 2 , 3 ] , { } ] ", 6},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    CHECK(json_node_bound(c.text) == c.nodes);
    std::shared_ptr<const PositionIndex> doc;
    REQUIRE(parse_json_document_fast(c.text, doc));
    CHECK(doc->size() == c.nodes);
  }
  // An array of scalars: 1 + its items, whatever they are.
  std::string zeros = "[0";
  for (int i = 1; i < 100000; ++i) zeros += ",0";
  zeros += "]";
  CHECK(json_node_bound(zeros) == 100001);
  // Keys written twice: nlohmann keeps the last, the bound counts both.
  std::shared_ptr<const PositionIndex> doc;
  REQUIRE(parse_json_document(R"({"a":1,"a":[1,2]})", 512, doc) == JsonDocumentRead::read);
  CHECK(json_node_bound(R"({"a":1,"a":[1,2]})") == 5);
  CHECK(doc->size() == 4);
  // Not JSON: a bound all the same (at least 1; an unclosed string ends the text).
  CHECK(json_node_bound("") == 1);
  CHECK(json_node_bound("]]]") == 1);
  CHECK(json_node_bound("[1,2") == 3);
  CHECK(json_node_bound("\"a,b") == 1);
  CHECK(json_node_bound("\"\\") == 1);
  // Every JSON file of the tests and the corpus, and one past 64 KiB (measured before it is
  // read): exact, and the document holds its nodes and text in the room reserved for them (no
  // array grew by doubling).
  auto files = gpuguard::test::test_files(".json");
  REQUIRE(files.size() >= gpuguard::test::min_json_files());
  std::vector<std::string> texts;
  for (const auto& f : files) texts.push_back(gpuguard::test::read_file(f));
  std::string large = "[";
  for (int i = 0; i < 2000; ++i) large += std::string(i ? "," : "") + texts[static_cast<size_t>(i) % texts.size()];
  large += "]";
  REQUIRE(large.size() > (64u << 10));
  texts.push_back(large);
  size_t read = 0;
  for (const std::string& text : texts) {
    if (json::parse(text, nullptr, false).is_discarded()) continue;
    CAPTURE(text.substr(0, 80));
    REQUIRE(parse_json_document(text, 100000, doc) == JsonDocumentRead::read);
    CHECK(doc->size() == json_node_bound(text));
    CHECK(document_bytes(*doc) == reserved_nodes(text) * PositionIndex::node_bytes() + text.size());
    ++read;
  }
  CHECK(read >= gpuguard::test::min_json_files());
}

TEST_CASE("parse_json_document refuses a text whose bound is over max_nodes before it builds anything, on both paths") {
  std::string zeros = "[0";
  for (int i = 1; i < 1000; ++i) zeros += ",0";
  zeros += "]";
  // The fast reader's text, and texts it leaves to nlohmann: a byte order mark, a key written
  // twice, an integer of 20 digits, nesting past its 512 levels.
  const std::string deep = std::string(600, '[') + "0" + std::string(600, ']');
  struct Case {
    std::string text;
    size_t nodes;  // json_node_bound
    size_t held;   // the document's nodes
  };
  const Case cases[] = {
      {zeros, 1001, 1001},
      {"\xef\xbb\xbf" + zeros, 1001, 1001},
      {R"({"a":[1,2,3],"b":0,"a":{"x":1}})", 8, 4},
      {"[12345678901234567890," + zeros.substr(1), 1002, 1002},
      {deep, 601, 601},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text.substr(0, 40));
    REQUIRE(json_node_bound(c.text) == c.nodes);
    std::shared_ptr<const PositionIndex> doc;
    CHECK(parse_json_document(c.text, 1000, doc, c.nodes - 1) == JsonDocumentRead::too_large);
    CHECK_FALSE(doc);
    REQUIRE(parse_json_document(c.text, 1000, doc, c.nodes) == JsonDocumentRead::read);
    CHECK(doc->size() == c.held);
    CHECK(document_agrees(c.text, json::parse(c.text, nullptr, false)));
    // Reserved once (no doubling).
    CHECK(document_bytes(*doc) == reserved_nodes(c.text, c.nodes) * PositionIndex::node_bytes() + c.text.size());
  }
  // The depth is told first; text that is not JSON is measured the same (a refusal, not a build).
  std::shared_ptr<const PositionIndex> doc;
  CHECK(parse_json_document(deep, 599, doc, 10) == JsonDocumentRead::too_deep);
  CHECK(parse_json_document("[0,0,0,0,", 512, doc, 4) == JsonDocumentRead::too_large);
  CHECK(parse_json_document("[0,0,0,0,", 512, doc, 6) == JsonDocumentRead::invalid);
  // The three-argument call: no bound.
  CHECK(parse_json_document(zeros, 512, doc) == JsonDocumentRead::read);
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
  REQUIRE(files.size() >= gpuguard::test::min_json_files());
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
  CHECK(checked > gpuguard::test::min_json_bytes() / stride);
}

}  // TEST_SUITE
