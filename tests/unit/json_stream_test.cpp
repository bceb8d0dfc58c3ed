// JSON files and streams (engine/json_stream.h, load_json_stream): each value read as nlohmann
// reads it (the webhook's reader), with positions; what it refuses, refused with the place; the
// shapes that YAML read differently before (surrogate pairs, raw DEL and U+0085, long keys,
// objects one after another); and which inputs are read as JSON.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/evaluate.h"
#include "engine/json_parse.h"
#include "engine/load.h"
#include "engine/node.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {

struct Loaded {
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> diags;
  uint32_t indices = 0;
};

// As JSON only (`yaml` false), or as lint reads it: the rest as YAML from a value that is not JSON.
Loaded load(std::string_view text, uint32_t first_line = 0, bool yaml = false) {
  Loaded l;
  l.indices = load_json_stream(text, "t.json", YamlLimits{}, [&](YamlDocument&& d) { l.docs.push_back(std::move(d)); },
                               l.diags, first_line, yaml);
  return l;
}

// One value: the document holds what nlohmann gives (as PositionIndex::from_json keeps it), with
// no diagnostic but keys written twice; a text nlohmann refuses is refused with a diagnostic, unless it is a stream of
// several values (which nlohmann does not read) or only white space.
bool agrees(std::string_view text) {
  const json expected = json::parse(text, nullptr, false);
  const Loaded l = load(text);
  if (expected.is_discarded()) return !l.diags.empty() || l.indices != 1;
  // A key written twice is reported (as in YAML: kubectl's strict decoding refuses it), and the
  // last value kept, as nlohmann keeps it.
  for (const Diagnostic& d : l.diags)
    if (!d.message.starts_with("duplicate mapping key")) return false;
  if (l.indices != 1) return false;
  if (expected.is_null()) return l.docs.empty();  // a null document is no document, as in YAML
  if (l.docs.size() != 1) return false;
  const auto reference = PositionIndex::from_json(expected);
  return identical(l.docs[0].body(), reference->json_of(0));
}


std::string message(const Loaded& l) { return l.diags.empty() ? std::string() : l.diags[0].message; }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("a JSON value reads as nlohmann reads it: types, numbers, escapes, refusals") {
  const char* cases[] = {
      // scalars: integers beyond int64 become floats (as from_json keeps them), -0 is 0
      "0", "-0", "7", "-7", "1234567890123456789", "18446744073709551615", "18446744073709551616",
      "-9223372036854775808", "-9223372036854775809", "1.5", "-0.0", "0.1", "1e5", "1E+5", "1e-5", "2.5e-3",
      "1e308", "1e309", "-1e309", "1e-400", "4.9e-324", "0.30000000000000004", "123456789012345678901234567890.5",
      "true", "false", "null",
      // not numbers
      "01", "-", "-a", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN", "Infinity", "tru", "nul",
      // strings
      R"("")", R"("a")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u0041\u00e9\u20ac")", R"("\ud83d\ude00")",
      R"("\u0000")", R"("\uD83D\uDE00")", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"", "\"\x7f\"", "\"\xc2\x85\"",
      "\"\xef\xbf\xbe\"", "\"\xe2\x80\xa8\"",
      // not strings
      R"("\ud83d")", R"("\ude00")", R"("\ud83d\u0041")", R"("\ud83dx")", R"("\u12")", R"("\x")", "\"a", "\"a\n\"",
      "\"\x01\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\"\x80\"", "\"\xff\"",
      // containers
      "{}", "[]", "[1,2,3]", R"({"a":1,"b":[true,null,{"c":"d"}]})", " \t\r\n{ \"a\" : [ 1 , 2 ] } \n",
      R"({"a":1,"a":2})", R"({"a":{"x":1},"a":[2]})", R"({"b":1,"a":2,"c":3})", "[[[[[]]]]]", "\xef\xbb\xbf{}",
      R"({"":1})", R"({"a b":{"c/d":{"e~f":[]}}})",
      // not containers
      "{", "[", "[1,]", "{\"a\":1,}", "{\"a\"}", "{\"a\" 1}", "{a:1}", "[1 2]", "{\"a\":1}\x00", "{\"a\":1}//",
      "/* */{}", "{'a':1}", "{\"a\":01}", "[-]", "{\"a\":1 \"b\":2}", "\x80{}", "{}\xef\xbb\xbf",
      // white space only, and streams: not nlohmann's
      "", "   ", "\xef\xbb\xbf", "{}{}", "[] []", "1 2", "{}x", "\"a\"\"b\"", "1{}",
  };
  for (const char* c : cases) {
    INFO("text: " << std::string(c));
    CHECK(agrees(c));
  }
  CHECK(agrees(std::string_view("[1,\0]", 5)));
  CHECK(agrees(std::string_view("\"a\0\"", 4)));
  // The JSON escape of NUL is a string with a NUL in it.
  const Loaded nul = load(R"({"a":"x\u0000y"})");
  REQUIRE(nul.docs.size() == 1);
  CHECK(nul.docs[0].body()["a"].get<std::string>() == std::string("x\0y", 3));
}

TEST_CASE("what YAML read differently: surrogate pairs, DEL, U+0085, long keys, a stream of objects") {
  // Python's json.dump writes an emoji as a surrogate pair; YAML refused the escape.
  const Loaded emoji = load(R"({"metadata":{"annotations":{"note":"GPU \ud83d\ude80"}}})");
  REQUIRE(emoji.diags.empty());
  CHECK(emoji.docs.at(0).body()["metadata"]["annotations"]["note"] == "GPU \xf0\x9f\x9a\x80");
  // Raw DEL and NEL are characters of a JSON string; YAML refused the first and read the second as
  // a line break (a space once folded).
  const Loaded raw = load("{\"a\":\"x\x7fy\",\"b\":\"x\xc2\x85y\"}");
  REQUIRE(raw.diags.empty());
  CHECK(raw.docs.at(0).body()["a"] == "x\x7fy");
  CHECK(raw.docs.at(0).body()["b"] == "x\xc2\x85y");
  // A key of any length (YAML's implicit keys stop at 1,024 characters).
  const std::string key(5000, 'k');
  const Loaded longkey = load("{\"" + key + "\": 1}");
  REQUIRE(longkey.diags.empty());
  CHECK(longkey.docs.at(0).body()[key] == 1);
  // Objects one after another, as `kubectl get -w -o json` prints them: one document each.
  const Loaded stream = load("{\"kind\":\"A\"}{\"kind\":\"B\"}\n{\"kind\":\"C\"}\n[]\n");
  CHECK(stream.diags.empty());
  REQUIRE(stream.docs.size() == 4);
  CHECK(stream.indices == 4);
  CHECK(stream.docs[1].index == 1);
  CHECK(stream.docs[1].body()["kind"] == "B");
  CHECK(stream.docs[2].start == Pos{2, 1});
}

TEST_CASE("positions: lines and columns in characters, CRLF, a byte order mark, a part of a file") {
  const std::string text =
      "\xef\xbb\xbf{\r\n  \"metadata\": {\"name\": \"gpu\", \"labels\": {\"\xc3\xa9\": \"\xe2\x82\xac\", \"b\": 1}},\r\n"
      "  \"items\": [\n    1,\n    {\"x\": null}\n  ]\n}\n";
  const Loaded l = load(text, 10);
  REQUIRE(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  const PositionIndex& p = *l.docs[0].positions;
  CHECK(l.docs[0].start == Pos{11, 1});                 // after the BOM
  CHECK(p.resolve("/metadata") == Pos{12, 3});          // a key's position
  CHECK(p.resolve("/metadata/name") == Pos{12, 16});
  CHECK(p.resolve("/metadata/labels/b") == Pos{12, 52});  // é and € are one column each
  CHECK(p.resolve("/items/0") == Pos{14, 5});           // an item's own position
  CHECK(p.resolve("/items/1/x") == Pos{15, 6});
  CHECK(p.resolve("/items/1/missing") == Pos{15, 5});  // the deepest node that exists: the item
}

TEST_CASE("errors name the place and what is wrong; the values before an error are kept") {
  struct Case {
    std::string text;
    Pos pos;
    std::string says;
  };
  const Case cases[] = {
      {"{\n  \"a\": 1,\n}\n", {3, 1}, "expected a string key after ','"},
      {"{\"a\": [1, 2,]}", {1, 13}, "expected a value, found ']'"},
      {"{\"a\" 1}", {1, 6}, "expected ':' after the key, found '1'"},
      {"{\"a\": 1 \"b\": 2}", {1, 9}, "expected ',' or '}' after an object member, found '\"'"},
      {"[1 2]", {1, 4}, "expected ',' or ']' after an array item"},
      {"{\"a\": \"x\n\"}", {1, 9}, "a line break inside a string"},
      {"{\"a\": \"x\x01\"}", {1, 9}, "control character U+0001 inside a string (JSON writes it \\u0001)"},
      {"{\"a\": \"\\ud83d\"}", {1, 8}, "a high surrogate"},
      {"{\"a\": \"\\ude00\"}", {1, 8}, "a low surrogate"},
      {"{\"a\": \"\\q\"}", {1, 8}, "invalid escape \\q"},
      {"{\"a\": \"x\\\n\"}", {1, 9}, "invalid escape \\ followed by byte 0x0A"},
      {"{\"a\": \"x\\\x1b[31m\"}", {1, 9}, "invalid escape \\ followed by byte 0x1B"},
      {"{\"\xc3\xa9\": \"\xff\"}", {1, 8}, "ill-formed UTF-8 (byte 0xFF) inside a string"},
      {"{\"a\": 1e999}", {1, 7}, "number 1e999 is too large for a double"},
      {"{\"a\": 01}", {1, 8}, "found '1'"},
      {"{\"a\": -}", {1, 8}, "a digit must follow '-'"},
      {"{\"a\": 1.}", {1, 9}, "a digit must follow '.'"},
      {"{\"a\": 1.5e+}", {1, 12}, "a digit must follow the exponent's 'e'"},
      {"{\"a\": \"\\u12g4\"}", {1, 8}, "\\u must be followed by four hex digits"},
      {"{\"a\": \"\\u12", {1, 8}, "\\u must be followed by four hex digits"},
      {"{\"a\": \"\\ud83d\\u0041\"}", {1, 8}, "a high surrogate (\\uD800-\\uDBFF) must be followed by a low one"},
      {"{\"a\": tru}", {1, 7}, "expected a value, found 't'"},
      {"{\"a\": {\"b\": [", {1, 14}, "the text ends inside an array (3 levels not closed)"},
      {"{\"a\": \"xyz", {1, 7}, "the string that starts here is not closed"},
      {"\"a\"\"b\"", {1, 4}, "expected white space or the end after a top-level value"},
      {"{} x", {1, 4}, "expected a value, found 'x'"},
      {"// c\n{}", {1, 1}, "expected a value, found '/'"},
  };
  for (const Case& c : cases) {
    INFO("text: " << c.text);
    const Loaded l = load(c.text);
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags[0].file == "t.json");
    CHECK(l.diags[0].pos == c.pos);
    CHECK(l.diags[0].message.starts_with("invalid JSON: "));
    CHECK(message(l).find(c.says) != std::string::npos);
  }
  // The objects before the error are read; the error ends the stream (as JSON, and when the rest
  // is not YAML either: two flow mappings in one document).
  for (bool yaml : {false, true}) {
    const Loaded l = load("{\"a\": 1}\n{\"b\": 2}\n{\"c\": }\n{\"d\": 4}\n", 0, yaml);
    CHECK(l.docs.size() == 2);
    CHECK(l.indices == 3);
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags[0].pos == Pos{3, 7});
  }
  // A value longer than the document limit is refused as soon as it is read past, at its start,
  // holding no more than the limit's events; it is not read as YAML.
  YamlLimits tight;
  tight.max_document_bytes = 64;
  std::vector<Diagnostic> over;
  size_t kept = 0;
  std::string list = "[";
  for (int i = 0; i < 5000; ++i) list += i ? ",0" : "0";
  list += "]";
  load_json_stream("{}\n  " + list, "t.json", tight, [&](YamlDocument&&) { ++kept; }, over);
  CHECK(kept == 1);
  REQUIRE(over.size() == 1);
  CHECK(over[0].pos == Pos{2, 3});
  CHECK(over[0].message == "invalid JSON: the value that starts here is longer than the limit of 64 bytes");
  // Too deep: the limit, at the bracket that passes it.
  const Loaded deep = load(std::string(300, '[') + std::string(300, ']'));
  CHECK(deep.docs.empty());
  REQUIRE(deep.diags.size() == 1);
  CHECK(deep.diags[0].pos == Pos{1, 257});
  CHECK(message(deep).find("nesting deeper than 256 levels") != std::string::npos);
  // A scalar over the limit is the builder's error, at the scalar.
  YamlLimits small;
  small.max_scalar_bytes = 8;
  std::vector<Diagnostic> diags;
  size_t docs = 0;
  load_json_stream("{\"a\": \"0123456789\"}", "t.json", small, [&](YamlDocument&&) { ++docs; }, diags);
  CHECK(docs == 0);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].pos == Pos{1, 7});
}

TEST_CASE("what is not JSON from some value on is read as YAML from there, as kubectl does") {
  // A flow mapping: YAML, not JSON.
  Loaded l = load("{apiVersion: v1, kind: Pod, metadata: {name: p}}\n", 0, true);
  CHECK(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["metadata"]["name"] == "p");
  CHECK(l.docs[0].positions->resolve("/metadata/name") == Pos{1, 40});
  // JSON objects, then YAML documents: indices and lines go on.
  l = load("{\"kind\": \"A\"} {\"kind\": \"B\"} {kind: C}\n---\nkind: D\nx: [1,]\n", 5, true);
  CHECK(l.diags.empty());
  REQUIRE(l.docs.size() == 4);
  CHECK(l.indices == 4);
  CHECK(l.docs[2].index == 2);
  CHECK(l.docs[2].body()["kind"] == "C");
  CHECK(l.docs[2].start == Pos{6, 29});  // its column on the line the JSON objects share
  CHECK(l.docs[3].index == 3);
  CHECK(l.docs[3].positions->resolve("/x") == Pos{9, 1});
  // A trailing comma: YAML takes it.
  l = load("{\"a\": [1, 2,]}", 0, true);
  CHECK(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  // Neither JSON nor YAML objects: the JSON error. A comment after an object is a YAML scalar, a
  // control character neither.
  l = load("{\"a\": 1}\n// done\n", 0, true);
  CHECK(l.docs.size() == 1);
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].pos == Pos{2, 1});
  CHECK(l.diags[0].message == "invalid JSON: expected a value, found '/'");
  l = load("{\"a\": \"x\x01\"}", 0, true);
  CHECK(l.docs.empty());
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message.starts_with("invalid JSON: control character U+0001"));
}

TEST_CASE("a document's keys and values are bounded, in YAML (both readers) and JSON, aliases' copies counted") {
  YamlLimits limits;
  limits.max_document_nodes = 1000;
  auto first_error = [&](const std::string& text, bool json) {
    std::vector<Diagnostic> diags;
    size_t docs = 0;
    auto count = [&](YamlDocument&&) { ++docs; };
    if (json) load_json_stream(text, "t.json", limits, count, diags);
    else load_yaml_stream(text, "t.yaml", limits, count, diags);
    return std::make_pair(docs, diags.empty() ? Diagnostic{} : diags[0]);
  };
  std::string block = "items:\n", flow = "[", json_list = "[";
  for (int i = 0; i < 2000; ++i) {
    block += "- 0\n";
    flow += i ? ", 0" : "0";
    json_list += i ? ",0" : "0";
  }
  flow += "]\n";
  json_list += "]";
  for (const auto& [text, json] : {std::pair{block, false}, std::pair{flow, false}, std::pair{json_list, true}}) {
    const auto [docs, d] = first_error(text, json);
    CHECK(docs == 0);
    CHECK(d.message == "the document has more than 1000 keys and values (aliases' copies counted): a limit that bounds its memory");
  }
  CHECK(first_error(block, false).second.pos.line == 999);  // the root, `items`, its sequence, then the 998th item
  CHECK(first_error(block, false).second.pos.col == 3);
  CHECK(first_error(json_list, true).second.pos == Pos{1, 2000});
  // The next document is read.
  const auto [docs, d] = first_error(block + "---\nkind: Pod\n", false);
  CHECK(docs == 1);
  // Copies by aliases count.
  std::string anchored = "a: &x [";
  for (int i = 0; i < 400; ++i) anchored += i ? ", 0" : "0";
  anchored += "]\nb: *x\nc: *x\n";
  CHECK(first_error(anchored, false).second.message.starts_with("the document has more than 1000 keys and values"));
  CHECK(first_error(anchored.substr(0, anchored.size() - 7), false).second.message.empty());  // one copy: 804
}

TEST_CASE("every JSON file of the tests, the examples and the corpus reads as nlohmann reads it") {
  const auto files = gpuguard::test::test_files(".json");
  REQUIRE(files.size() >= gpuguard::test::min_json_files());
  for (const auto& f : files) {
    INFO("file: " << f.string());
    CHECK(agrees(gpuguard::test::read_file(f)));
  }
}

TEST_CASE("a JSON value reads as nlohmann reads it after one-byte changes all through small JSON files") {
  // At every `stride`-th byte: deleting it, and setting it to one of a set of bytes that matter to
  // a JSON reader, taken in turn (the fuzz target `json` tries the rest).
  constexpr size_t stride = gpuguard::test::kSanitized ? 11 : 3;
  const std::string bytes = std::string("\"\\{}[],:0-.eEu \n\x01\x7f\x80\xc3\xed\xf4\xff") + std::string(1, '\0');
  size_t checked = 0;
  for (const auto& f : gpuguard::test::test_files(".json")) {
    const std::string text = gpuguard::test::read_file(f);
    if (text.size() > 3000) continue;
    for (size_t i = 0; i < text.size(); i += stride) {
      const std::string cut = text.substr(0, i) + text.substr(i + 1);
      if (!agrees(cut)) FAIL("deleting byte " << i << " of " << f.string());
      std::string changed = text;
      changed[i] = bytes[(i / stride) % bytes.size()];
      if (!agrees(changed)) FAIL("byte " << i << " of " << f.string() << " set to " << static_cast<int>(changed[i]));
      ++checked;
    }
  }
  CHECK(checked > gpuguard::test::min_json_bytes() / (stride * 3));
}

TEST_CASE("lint reads every JSON file of the tests and the corpus as JSON, with the findings, positions, diagnostics and exit code that reading it as YAML gives") {
  // The JSON reader against libyaml, which read JSON files before: what lint reports of each file
  // read both ways (every rule, the whole file as a complete cluster). Files that hold what YAML
  // reads differently (surrogate pairs, raw DEL or U+0085, keys over 1,024 characters, values one
  // after another) are left out where the two disagree on the values themselves; a file one reader
  // refuses must be refused by the other, on the same line.
  if (!gpuguard::test::shared_dir()) MESSAGE("../shared is absent: the corpus's JSON files are not compared, the tests' are");
  struct Report {
    std::vector<std::string> findings;  // line:col rule message
    std::vector<uint32_t> diagnostic_lines;
    int exit_code = 0;
    std::vector<json> bodies;
  };
  const Registry& registry = gpuguard::test::registry();
  const Config config = default_config(registry);
  auto lint = [&](const std::string& text, Syntax syntax) {
    Report r;
    EvalOptions options;
    options.complete = true;
    Evaluation eval(registry, config, options);
    std::vector<Diagnostic> diags;
    auto source = std::make_shared<SourceFile>(SourceFile{"f", 0});
    load_text(text, source, LoadOptions{}, [&](Object&& o) {
      r.bodies.push_back(o.body());
      eval.add(std::move(o));
    }, diags, 0, 0, syntax);
    eval.add_diagnostics(std::move(diags));
    const Result result = eval.finish();
    for (const auto& f : result.findings) {
      r.findings.push_back(std::to_string(f.pos.line) + ":" + std::to_string(f.pos.col) + " " + f.rule + " " + f.message);
      if (f.severity == Severity::error) r.exit_code = 1;
    }
    for (const auto& d : result.diagnostics) r.diagnostic_lines.push_back(d.pos.line);
    if (!result.diagnostics.empty()) r.exit_code = 2;
    return r;
  };
  size_t compared = 0, refused = 0;
  for (const auto& f : gpuguard::test::test_files(".json")) {
    const std::string text = gpuguard::test::read_file(f);
    CAPTURE(f.string());
    const Report as_json = lint(text, Syntax::json);
    const Report as_yaml = lint(text, Syntax::yaml);
    CHECK(as_json.exit_code == as_yaml.exit_code);
    if (as_json.exit_code == 2 || as_yaml.exit_code == 2) {
      // Refused by both, where they found the first problem (the messages are each reader's own).
      REQUIRE(!as_json.diagnostic_lines.empty());
      REQUIRE(!as_yaml.diagnostic_lines.empty());
      CHECK(as_json.diagnostic_lines.front() == as_yaml.diagnostic_lines.front());
      ++refused;
      continue;
    }
    // The same objects (unless the file holds what YAML reads differently), so the same findings
    // at the same places.
    bool same_values = as_json.bodies.size() == as_yaml.bodies.size();
    for (size_t i = 0; same_values && i < as_json.bodies.size(); ++i) same_values = identical(as_json.bodies[i], as_yaml.bodies[i]);
    if (!same_values) continue;
    CHECK(as_json.findings == as_yaml.findings);
    CHECK(as_json.diagnostic_lines == as_yaml.diagnostic_lines);
    ++compared;
  }
  CHECK(compared >= gpuguard::test::min_json_files() - 2);  // a few refused by both
  MESSAGE(compared << " JSON files linted alike both ways, " << refused << " refused by both");
}

TEST_CASE("which inputs are JSON: *.json, and any other input but *.yaml/*.yml that starts with '{'") {
  CHECK(input_syntax("a/b.json", "apiVersion: v1") == Syntax::json);
  CHECK(input_syntax("B.JSON", "") == Syntax::json);
  CHECK(input_syntax("<stdin>", "\n  {\"kind\": \"Pod\"}") == Syntax::json);
  CHECK(input_syntax("<stdin>", "\xef\xbb\xbf{}") == Syntax::json);
  CHECK(input_syntax("", " {}") == Syntax::json);
  CHECK(input_syntax("manifest.txt", "{}") == Syntax::json);
  CHECK(input_syntax("<stdin>", "kind: Pod\n") == Syntax::yaml);
  CHECK(input_syntax("<stdin>", "[{}]") == Syntax::yaml);  // kubectl sniffs '{' only
  CHECK(input_syntax("<stdin>", "# {\n{a: 1}") == Syntax::yaml);
  CHECK(input_syntax("pod.yaml", "{\"kind\": \"Pod\"}") == Syntax::yaml);
  CHECK(input_syntax("pod.YML", "{}") == Syntax::yaml);
  CHECK(input_syntax("<stdin>", "\f\v {}") == Syntax::json);
  CHECK(input_syntax("pod.json", "\xff\xfe{\0}\0") == Syntax::yaml);  // UTF-16: libyaml decodes it
  CHECK(input_syntax("<stdin>", "\xfe\xff\0{\0}") == Syntax::yaml);

  // Through load_text: a surrogate pair in a .json file is one character, in YAML an error.
  const std::string text = R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","annotations":{"a":"\ud83d\ude80"}}})";
  auto source = std::make_shared<SourceFile>(SourceFile{"pod.json", 0});
  std::vector<Object> objects;
  std::vector<Diagnostic> diags;
  load_text(text, source, LoadOptions{}, [&](Object&& o) { objects.push_back(std::move(o)); }, diags, 0, 0, Syntax::json);
  CHECK(diags.empty());
  REQUIRE(objects.size() == 1);
  CHECK(objects[0].name == "p");
  CHECK(objects[0].position_of("/metadata/name") == Pos{1, 45});
  load_text(text, source, LoadOptions{}, [](Object&&) {}, diags);  // as YAML
  CHECK_FALSE(diags.empty());
  // A file is read as its name and text say, alone or by threads.
  gpuguard::test::TempDir dir;
  gpuguard::test::write_file(dir.path() / "pod.json", text + text);
  gpuguard::test::write_file(dir.path() / "pod.txt", text);
  gpuguard::test::write_file(dir.path() / "pod.yaml", text);
  std::vector<Diagnostic> expand;
  const auto inputs = expand_inputs({(dir.path() / "pod.json").string(), (dir.path() / "pod.txt").string(),
                                     (dir.path() / "pod.yaml").string()}, expand);
  for (unsigned jobs : {1u, 2u}) {
    LoadOptions options;
    options.threaded_min_bytes = 0;
    std::vector<Object> read;
    std::vector<Diagnostic> errors;
    load_inputs(inputs, options, jobs, [&](Object&& o) { read.push_back(std::move(o)); }, errors);
    CHECK(read.size() == 3);  // two from pod.json, one from pod.txt
    REQUIRE(errors.size() == 1);  // pod.yaml, as YAML
    CHECK(errors[0].file.ends_with("pod.yaml"));
  }
}

}  // TEST_SUITE
