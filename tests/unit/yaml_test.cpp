// The YAML loader: Kubernetes' scalar resolution, positions, merge keys, KYAML, hostile input.

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "engine/yaml_emit.h"
#include "engine/yaml_load.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {

struct Loaded {
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> diags;
};

Loaded load(const std::string& text, YamlLimits limits = {}) {
  Loaded l;
  load_yaml_stream(text, "t.yaml", limits, [&](YamlDocument&& d) { l.docs.push_back(std::move(d)); }, l.diags);
  return l;
}

json value_of(const std::string& scalar_yaml) {
  auto l = load("v: " + scalar_yaml + "\n");
  REQUIRE_MESSAGE(l.diags.empty(), (l.diags.empty() ? "" : l.diags[0].message));
  REQUIRE(l.docs.size() == 1);
  return l.docs[0].body()["v"];
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("scalars resolve as kubectl resolves them (facts/webhook.md §4)") {
  // The table verified with `kubectl label --local -o json` (kubectl v1.32.4).
  CHECK(value_of("yes") == json(true));
  CHECK(value_of("on") == json(true));
  CHECK(value_of("y") == json(true));
  CHECK(value_of("True") == json(true));
  CHECK(value_of("NO") == json(false));
  CHECK(value_of("off") == json(false));
  CHECK(value_of("010") == json(8));
  CHECK(value_of("0x1F") == json(31));
  CHECK(value_of("0o17") == json(15));
  CHECK(value_of("0b101") == json(5));
  CHECK(value_of("12_000") == json(12000));
  CHECK(value_of("1.0").is_number_float());
  CHECK(value_of("1.0").get<double>() == 1.0);
  CHECK(value_of("1e3").get<double>() == 1000.0);
  CHECK(value_of("\"1\"") == json("1"));
  CHECK(value_of("'010'") == json("010"));
  CHECK(value_of("~").is_null());
  CHECK(value_of("null").is_null());
  CHECK(value_of("").is_null());
  CHECK(value_of("2001-12-14") == json("2001-12-14"));
  CHECK(value_of("9223372036854775808").is_number_float());
  CHECK(value_of("9223372036854775807") == json(INT64_MAX));
  CHECK(value_of("-9223372036854775808") == json(INT64_MIN));
}

TEST_CASE("go-yaml v2 corner cases of resolve.go") {
  CHECK(value_of("08").get<double>() == 8.0);   // not octal: falls through to the float regex
  CHECK(value_of("09").get<double>() == 9.0);
  CHECK(value_of("+12") == json(12));
  CHECK(value_of("-0x10") == json(-16));
  CHECK(value_of(".5").get<double>() == 0.5);
  CHECK(value_of("1e400") == json("1e400"));    // ParseFloat overflows: stays a string
  CHECK(value_of("yEs") == json("yEs"));
  // Every word of the table, and the same word one character longer (a string): the words are
  // at most five characters, and the resolver stops looking at longer scalars early.
  for (const char* w : {"~", "null", "Null", "NULL", "n", "N", "no", "No", "NO", "y", "Y", "yes", "Yes", "YES", "true",
                        "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"}) {
    CHECK_MESSAGE(value_of(w).is_primitive(), w);
    CHECK_FALSE_MESSAGE(value_of(w).is_string(), w);
    CHECK_MESSAGE(value_of(std::string(w) + "s") == json(std::string(w) + "s"), w);
  }
  CHECK(value_of("FALSE") == json(false));
  CHECK(value_of("FALSEY") == json("FALSEY"));
  CHECK(value_of("nvidia.com/gpu") == json("nvidia.com/gpu"));
  CHECK(value_of("nan") == json("nan"));
  CHECK(value_of("NaN") == json("NaN"));
  CHECK(value_of("Infinity") == json("Infinity"));
  CHECK(value_of("1:2") == json("1:2"));
  CHECK(value_of("0x") == json("0x"));
  CHECK(value_of("1_000.5").get<double>() == 1000.5);
  CHECK(value_of("._5") == json("._5"));
  CHECK(value_of("!!str 010") == json("010"));
  CHECK(value_of("!!int \"10\"") == json(10));
  CHECK(value_of("!!float 1").get<double>() == 1.0);
  CHECK(value_of("!!bool yes") == json(true));
  CHECK(value_of("!!null ~").is_null());
  CHECK(value_of("!custom yes") == json("yes"));
  CHECK(value_of("! yes") == json(true));       // the non-specific tag resolves like a plain scalar
  CHECK(value_of("!!binary aGVsbG8=") == json("hello"));
  CHECK(value_of("|\n  line\n") == json("line\n"));
}

TEST_CASE("a tag that does not fit its value is an error, as in go-yaml") {
  auto l = load("v: !!int abc\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message == "cannot decode !!str `abc` as a !!int");
  CHECK(l.diags[0].pos == Pos{1, 4});
  CHECK(load("v: !!binary '%%%'\n").diags.size() == 1);
}

TEST_CASE("infinities and NaN cannot become JSON: the document is refused") {
  for (const char* v : {".inf", "-.Inf", ".NaN", "+.INF"}) {
    auto l = load(std::string("a: 1\nv: ") + v + "\n");
    CHECK(l.docs.empty());
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags[0].pos == Pos{2, 4});
  }
}

TEST_CASE("keys are converted to strings as sigs.k8s.io/yaml does") {
  auto l = load("on: a\n1: b\n010: c\n1.5: d\ntrue: e\n\"yes\": f\n1e3: g\n");
  REQUIRE(l.docs.size() == 1);
  const json& b = l.docs[0].body();
  CHECK(b["true"] == json("e"));  // `on` and `true` both become "true": the later one wins
  CHECK(b["1"] == json("b"));
  CHECK(b["8"] == json("c"));
  CHECK(b["1.5"] == json("d"));
  CHECK(b["yes"] == json("f"));
  CHECK(b["1000"] == json("g"));
  CHECK(load("~: x\n").diags.size() == 1);  // a null key has no JSON form
}

TEST_CASE("positions: every node, 1-based, keys at their key") {
  auto l = load("# comment\napiVersion: v1\nkind: Pod\nspec:\n  containers:\n    - name: a\n      image: x\n    - name: b\n");
  REQUIRE(l.docs.size() == 1);
  const auto& p = *l.docs[0].positions;
  CHECK(l.docs[0].start == Pos{2, 1});
  CHECK(p.resolve("/kind") == Pos{3, 1});
  CHECK(p.resolve("/spec/containers") == Pos{5, 3});
  CHECK(p.resolve("/spec/containers/0") == Pos{6, 7});
  CHECK(p.resolve("/spec/containers/1/name") == Pos{8, 7});
  CHECK(p.resolve("/spec/containers/0/image") == Pos{7, 7});
  // A missing field resolves to its deepest existing ancestor.
  CHECK(p.resolve("/spec/containers/0/resources/limits") == Pos{6, 7});
  CHECK(p.resolve("/spec/nope") == Pos{4, 1});
}

TEST_CASE("positions count lines across documents and characters, not bytes") {
  auto l = load("a: 1\n---\nb: 2\n---\nname: \"héllo\"\nc: 3\nd: é: x\n");
  // The third document is malformed YAML? No: `d: é: x` is an error (mapping values not allowed).
  REQUIRE(l.docs.size() == 2);
  CHECK(l.docs[1].positions->resolve("/b") == Pos{3, 1});
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].pos.line == 7);
  CHECK(l.diags[0].pos.col == 5);
  auto u = load("k: \"é\"\nv: [1, 2]\n");
  CHECK(u.docs[0].positions->resolve("/v/1") == Pos{2, 8});
  auto w = load("é: [1, 2]\n");
  CHECK(w.docs[0].positions->resolve("/é/1") == Pos{1, 8});
}

TEST_CASE("merge keys resolve in go-yaml v2 order") {
  auto l = load(
      "base: &b {p: 1, q: 2}\n"
      "other: &o {q: 3, r: 4}\n"
      "after: {<<: *b, q: 9}\n"    // explicit keys after a merge win
      "before: {q: 9, <<: *b}\n"   // a merge overwrites keys before it (go-yaml v2, not the spec)
      "list: {<<: [*b, *o]}\n"     // earlier maps in the list win
      "quoted: {\"<<\": 1}\n");
  REQUIRE(l.diags.empty());
  const json& b = l.docs[0].body();
  CHECK(b["after"] == json({{"p", 1}, {"q", 9}}));
  CHECK(b["before"] == json({{"p", 1}, {"q", 2}}));
  CHECK(b["list"] == json({{"p", 1}, {"q", 2}, {"r", 4}}));
  CHECK(b["quoted"] == json({{"<<", 1}}));
  // A merged key points at the anchor's text.
  CHECK(l.docs[0].positions->resolve("/after/p") == Pos{1, 11});
  CHECK(l.docs[0].positions->resolve("/after/q") == Pos{3, 17});
  auto bad = load("a: {<<: 1}\n");
  REQUIRE(bad.diags.size() == 1);
  CHECK(bad.diags[0].message == "map merge requires map or sequence of maps as the value");
}

TEST_CASE("YAML 1.1 booleans as keys: y, n, on, off become \"true\" and \"false\"") {
  auto l = load("y: 1\nn: 2\nx: 3\n");
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body() == json({{"true", 1}, {"false", 2}, {"x", 3}}));
}

TEST_CASE("aliases expand; a merge of an explicit key is not a duplicate") {
  auto l = load("a: &x [1, 2]\nb: *x\nc: &m {k: v}\nd:\n  <<: *m\n  k: w\n");
  REQUIRE(l.diags.empty());
  CHECK(l.docs[0].body()["b"] == json({1, 2}));
  CHECK(l.docs[0].body()["d"] == json({{"k", "w"}}));
}

TEST_CASE("duplicate keys: an error at the second key, the last value kept") {
  auto l = load("a: 1\nb: 2\na: 3\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].pos == Pos{3, 1});
  CHECK(l.diags[0].message.find("duplicate mapping key \"a\"") != std::string::npos);
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["a"] == json(3));
  // Large maps take the hashed path.
  std::string big;
  for (int i = 0; i < 100; ++i) big += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  big += "k7: again\n";
  auto lb = load(big);
  REQUIRE(lb.diags.size() == 1);
  CHECK(lb.diags[0].pos.line == 101);
  CHECK(lb.docs[0].body()["k7"] == json("again"));
}

TEST_CASE("KYAML: flow style with trailing commas") {
  auto l = load("---\n{\n  apiVersion: \"v1\",\n  kind: \"ResourceQuota\",\n  spec: {\n    hard: {\n      requests.cpu: \"1\",\n      limits.memory: \"2Gi\",\n    },\n  },\n  list: [1, 2,],\n}\n");
  REQUIRE(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["spec"]["hard"]["limits.memory"] == json("2Gi"));
  CHECK(l.docs[0].body()["list"] == json({1, 2}));
  CHECK(l.docs[0].positions->resolve("/spec/hard/limits.memory") == Pos{8, 7});
}

TEST_CASE("pointers with escaped tokens resolve to their keys, which the index keeps in one text") {
  auto l = load("spec:\n  limits:\n    nvidia.com/gpu: 1\n    a~b: 2\n    \"\": 3\n  other: {nvidia.com/gpu: 4}\n");
  REQUIRE(l.diags.empty());
  const PositionIndex& p = *l.docs[0].positions;
  CHECK(p.resolve("/spec/limits/nvidia.com~1gpu") == Pos{3, 5});
  CHECK(p.resolve("/spec/limits/a~0b") == Pos{4, 5});
  CHECK(p.resolve("/spec/limits/") == Pos{5, 5});  // the empty key
  CHECK(p.resolve("/spec/other/nvidia.com~1gpu") == Pos{6, 11});
  CHECK(p.resolve("/spec/limits/nvidia.com/gpu") == Pos{2, 3});  // unescaped: no such key
  PositionIndex::NodeId n = 0;
  REQUIRE(p.find("/spec/limits", p.root(), n));
  std::vector<std::string> keys;
  for (const auto& c : p.children(n)) keys.emplace_back(p.key(c));
  CHECK(keys == std::vector<std::string>{"nvidia.com/gpu", "a~b", ""});
  CHECK_FALSE(p.find("/spec/limits/x", p.root(), n));
}

TEST_CASE("the document keeps every value: replaced entries are skipped, aliases are copies") {
  auto l = load(
      "base: &b {p: 1, q: two}\n"
      "m: {q: 9, <<: *b, r: [x, *b]}\n"
      "d: {a: 1, a: 2}\n");
  REQUIRE(l.diags.size() == 1);  // the duplicate `a`
  const PositionIndex& p = *l.docs[0].positions;
  // json_of(root) is the body; json_of(any node) its part.
  CHECK(p.json_of(p.root()) == l.docs[0].body());
  PositionIndex::NodeId n = 0;
  REQUIRE(p.find("/m", p.root(), n));
  CHECK(p.json_of(n) == json({{"p", 1}, {"q", "two"}, {"r", json::array({"x", {{"p", 1}, {"q", "two"}}})}}));
  // Entries in document order, each key once: `q` written, then replaced by the merge's (go-yaml v2).
  std::vector<std::string> keys;
  for (const auto& c : p.children(n)) keys.emplace_back(p.key(c));
  CHECK(keys == std::vector<std::string>{"p", "q", "r"});
  CHECK(p.children(n).size() == 3);
  CHECK(p.resolve("/m/q") == Pos{1, 17});      // the merged key, at the anchor's text
  CHECK(p.resolve("/m/r/1") == Pos{2, 26});    // an aliased item: at the alias
  CHECK(p.resolve("/m/r/1/q") == Pos{1, 17});  // inside it: the anchor's nodes
  REQUIRE(p.find("/m/r/1/q", p.root(), n));
  CHECK(p.type(n) == PositionIndex::Type::string);
  CHECK(p.string(n) == "two");
  REQUIRE(p.find("/d", p.root(), n));
  keys.clear();
  for (const auto& c : p.children(n)) keys.emplace_back(p.key(c));
  CHECK(keys == std::vector<std::string>{"a"});
  CHECK(p.resolve("/d/a") == Pos{3, 11});
  REQUIRE(p.find("/d/a", p.root(), n));
  CHECK(p.json_of(n) == json(2));
  // A large mapping finds its keys by hash; a replaced entry is skipped there too.
  std::string big = "m:\n";
  for (int i = 0; i < 40; ++i) big += "  k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
  big += "  k3: again\n  <<: {k5: merged, z: 1}\n";
  auto lb = load(big);
  REQUIRE(lb.diags.size() == 1);
  const PositionIndex& q = *lb.docs[0].positions;
  REQUIRE(q.find("/m", q.root(), n));
  CHECK(q.children(n).size() == 41);
  size_t seen = 0;
  for (const auto& c : q.children(n)) seen += q.key(c) == "k3" ? 1 : 0;
  CHECK(seen == 1);
  CHECK(q.resolve("/m/k3") == Pos{42, 3});
  CHECK(q.resolve("/m/k5") == Pos{43, 8});
  CHECK(lb.docs[0].body()["m"]["k5"] == json("merged"));
  CHECK(q.json_of(q.root()) == lb.docs[0].body());
}

TEST_CASE("JSON loads, with positions") {
  auto l = load("{\"apiVersion\": \"v1\", \"kind\": \"Pod\",\n \"spec\": {\"containers\": [{\"name\": \"a\"}]}}");
  REQUIRE(l.diags.empty());
  CHECK(l.docs[0].body()["spec"]["containers"][0]["name"] == json("a"));
  CHECK(l.docs[0].positions->resolve("/spec/containers/0/name") == Pos{2, 27});
  CHECK(l.docs[0].positions->resolve("/spec/containers/0") == Pos{2, 26});
}

TEST_CASE("empty documents are skipped silently") {
  auto l = load("---\n# only a comment\n---\n---\na: 1\n---\n");
  CHECK(l.diags.empty());
  CHECK(l.docs.size() == 1);
  CHECK(load("").docs.empty());
  CHECK(load("\n\n# c\n").diags.empty());
}

TEST_CASE("a malformed document is reported and the next document still loads") {
  auto l = load("a: 1\n---\nb: [1, 2\nc: 3\n---\nd: 4\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].pos.line >= 3);
  REQUIRE(l.docs.size() == 2);
  CHECK(l.docs[0].body()["a"] == json(1));
  CHECK(l.docs[1].body()["d"] == json(4));
  CHECK(l.docs[1].positions->resolve("/d") == Pos{6, 1});
}

TEST_CASE("a second malformed document: libyaml's context line counts from the file's start") {
  auto l = load("a: [1\n---\nb: 2\n---\nc: 3\nd: {x: [1\n---\ne: 5\n");
  REQUIRE(l.diags.size() == 2);
  CHECK(l.diags[1].pos.line == 7);
  CHECK(l.diags[1].message.find("started at line 6, column 8") != std::string::npos);
  CHECK(l.docs.size() == 2);
}

TEST_CASE("an unterminated quote that runs into the next document marker") {
  auto l = load("a: \"open\n---\nb: 2\n");
  CHECK(l.diags.size() == 1);
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["b"] == json(2));
  CHECK(l.docs[0].positions->resolve("/b") == Pos{3, 1});
}

TEST_CASE("tabs in indentation are an error with a position") {
  auto l = load("a:\n\tb: 1\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].pos.line == 2);
}

TEST_CASE("hostile: billion laughs is an error, not an OOM") {
  std::string doc = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  std::string prev = "a";
  for (char c = 'b'; c <= 'i'; ++c) {
    std::string name(1, c);
    doc += name + ": &" + name + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev +
           ",*" + prev + ",*" + prev + ",*" + prev + "]\n";
    prev = name;
  }
  auto l = load(doc + "---\nnext: 1\n");
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message.find("alias expansion budget") != std::string::npos);
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["next"] == json(1));
}

TEST_CASE("hostile: nesting deeper than the cap") {
  std::string deep(10000, '[');
  deep += std::string(10000, ']');
  auto l = load(deep + "\n---\nok: 1\n");
  REQUIRE(!l.diags.empty());
  CHECK(l.diags[0].message.find("nesting deeper than 256") != std::string::npos);
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["ok"] == json(1));
  std::string block;
  for (int i = 0; i < 300; ++i) block += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  CHECK(load(block).diags.size() == 1);
}

TEST_CASE("hostile: a scalar over the limit") {
  YamlLimits limits;
  limits.max_scalar_bytes = 1000;
  auto l = load("a: " + std::string(5000, 'x') + "\n---\nb: 1\n", limits);
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message.find("over the limit of 1000 bytes") != std::string::npos);
  CHECK(l.docs.size() == 1);
}

TEST_CASE("hostile: a document over the size limit stops feeding libyaml") {
  YamlLimits limits;
  limits.max_document_bytes = 200000;
  std::string big = "a: \"" + std::string(1000000, 'x') + "\"\n";
  auto l = load(big, limits);
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message.find("over the size limit") != std::string::npos);
}

TEST_CASE("hostile: invalid UTF-8, NUL bytes and binary data") {
  auto bad = load(std::string("a: 1\n---\nb: \xff\xfe\n"));
  REQUIRE(bad.diags.size() == 1);
  CHECK(bad.diags[0].pos.line == 3);
  CHECK(bad.docs.size() == 1);
  auto nul = load(std::string("a: 1\nb: x\0y\n", 12));
  REQUIRE(nul.diags.size() == 1);
  CHECK(nul.diags[0].message.find("control characters") != std::string::npos);
  CHECK(nul.diags[0].pos == Pos{2, 5});
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>((i * 37) & 0xFF);
  CHECK(load(binary).diags.size() == 1);
}

TEST_CASE("hostile: a byte YAML cannot hold is found at any offset of a long plain line") {
  // The scan skips blocks of plain bytes whole: the bad byte at each of 40 offsets (inside, at the
  // edges of, and after whole blocks), and every byte value that is not plain.
  for (size_t at = 0; at < 40; ++at) {
    for (int b : {0x00, 0x01, 0x08, 0x0B, 0x0C, 0x1F, 0x7F, 0x80, 0xFF}) {
      std::string line = "k: " + std::string(at, 'x') + static_cast<char>(b) + "yz\n";
      auto l = load(line + "---\nok: 1\n");
      REQUIRE_MESSAGE(l.diags.size() == 1, ("offset " + std::to_string(at) + " byte " + std::to_string(b)));
      CHECK(l.diags[0].pos == Pos{1, static_cast<uint32_t>(4 + at)});
      CHECK(l.docs.size() == 1);
    }
    // Tab, LF, CR and multi-byte UTF-8 are plain text: nothing to report.
    auto fine = load("k: \"" + std::string(at, 'x') + "\t\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\" # \r\n");
    CHECK(fine.diags.empty());
  }
}

TEST_CASE("hostile: aliases repeating a long key cannot grow the key text past the document limit") {
  YamlLimits limits;
  limits.max_document_bytes = 1000;
  const std::string doc = "a: &A " + std::string(300, 'x') + "\nb:\n  - *A : 1\n  - *A : 2\n  - *A : 3\n  - *A : 4\n";
  auto l = load(doc + "---\nc: 1\n", limits);
  REQUIRE(l.diags.size() == 1);
  CHECK(l.diags[0].message.find("mapping keys add up to more than 1000 bytes") != std::string::npos);
  CHECK(l.diags[0].pos == Pos{6, 5});  // the fourth aliased key
  REQUIRE(l.docs.size() == 1);  // the next document still loads
  CHECK(l.docs[0].body() == json{{"c", 1}});
  // Three of them fit.
  auto fits = load("a: &A " + std::string(300, 'x') + "\nb:\n  - *A : 1\n  - *A : 2\n  - *A : 3\n", limits);
  CHECK(fits.diags.empty());
  REQUIRE(fits.docs.size() == 1);
  CHECK(fits.docs[0].body()["b"][2][std::string(300, 'x')] == json(3));
}

TEST_CASE("hostile: an aliased key written again is a duplicate, not more key text") {
  YamlLimits limits;
  limits.max_document_bytes = 1000;
  auto l = load("a: &A " + std::string(300, 'x') + "\nb: {*A : 1, *A : 2, *A : 3, *A : 4}\n", limits);
  CHECK(l.diags.size() == 3);  // three duplicates; the key's text is counted once
  for (const auto& d : l.diags) CHECK(d.message.find("duplicate mapping key") != std::string::npos);
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["b"] == json{{std::string(300, 'x'), 4}});
}

TEST_CASE("hostile: merges of merges stay as small as their JSON; copies count against the alias budget") {
  // Each level merges a mapping holding the level below: the document's nodes grow with the JSON
  // (the merged value is dropped once its entries are copied), not twice per level.
  std::string doc = "a0: &a0 {x: 1}\n";
  for (int k = 1; k <= 30; ++k)
    doc += "a" + std::to_string(k) + ": &a" + std::to_string(k) + " {<<: {k: *a" + std::to_string(k - 1) + "}}\n";
  auto l = load(doc);
  REQUIRE(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].positions->size() < 2000);
  CHECK(l.docs[0].positions->json_of(l.docs[0].positions->root()) == l.docs[0].body());
  const json body = l.docs[0].body();
  const json* level = &body.at("a30");
  for (int k = 30; k > 0; --k) level = &level->at("k");  // a30.k is a29, ..., down to a0
  CHECK(*level == json{{"x", 1}});
  CHECK(l.docs[0].body()["a2"] == json{{"k", {{"k", {{"x", 1}}}}}});
  // With an anchor inside each merged value the value stays (an alias may name it): the copies
  // double per level, and the budget stops them.
  std::string kept = "a0: &a0 {x: 1}\n";
  for (int k = 1; k <= 30; ++k)
    kept += "a" + std::to_string(k) + ": &a" + std::to_string(k) + " {<<: &m" + std::to_string(k) + " {k: *a" +
            std::to_string(k - 1) + "}}\n";
  auto b = load(kept + "---\nnext: 1\n");
  REQUIRE(b.diags.size() == 1);
  CHECK(b.diags[0].message.find("alias expansion budget") != std::string::npos);
  REQUIRE(b.docs.size() == 1);
  CHECK(b.docs[0].body() == json{{"next", 1}});
}

TEST_CASE("hostile: a hundred thousand aliases in a row load in linear time") {
  std::string doc = "a: &a x\nb: [";
  for (int i = 0; i < 100'000; ++i) doc += i ? ",*a" : "*a";
  doc += "]\n";
  auto l = load(doc);
  REQUIRE(l.diags.empty());
  REQUIRE(l.docs.size() == 1);
  CHECK(l.docs[0].body()["b"].size() == 100'000);
  CHECK(l.docs[0].positions->resolve("/b/99999") == Pos{2, 5 + 3 * 99'999});
}

TEST_CASE("hostile: unknown and self-referencing aliases") {
  auto unknown = load("a: *nope\n");
  REQUIRE(unknown.diags.size() == 1);
  CHECK(unknown.diags[0].message == "unknown anchor 'nope' referenced");
  auto self = load("a: &x [1, *x]\n");
  REQUIRE(self.diags.size() == 1);
  CHECK(self.diags[0].message.find("contains it") != std::string::npos);
}

TEST_CASE("collections cannot be keys") {
  CHECK(load("? [a, b]\n: c\n").diags.size() == 1);
  CHECK(load("? {a: b}\n: c\n").diags.size() == 1);
}

TEST_CASE("resolve_plain_scalar is total") {
  for (const char* s : {"", "+", "-", ".", "0", "00", "0b", "0b2", "0o8", "1e", "1e+", "+.5", "-.5", "_", "1__2", "0x_1"}) {
    ResolvedScalar r = resolve_plain_scalar(s);
    CHECK(static_cast<int>(r.type) >= 0);
  }
  CHECK(resolve_plain_scalar("+.5").type == ScalarType::floating);
  CHECK(resolve_plain_scalar("-").type == ScalarType::string);
  CHECK(resolve_plain_scalar("1__2").i == 12);
}

TEST_CASE("an error on a document's own `---` line is reported once, and loading goes on after it") {
  // The error stops the document that starts at that marker: going on from the same marker read it,
  // and reported the error, a second time (the fuzz target `yaml` found it).
  for (const bool block_reader : {true, false}) {
    YamlLimits limits;
    limits.block_reader = block_reader;
    std::vector<Diagnostic> diags;
    std::vector<uint32_t> indices;
    const uint32_t used = load_yaml_stream("a: 1\n--- clusters:\n  - w\n---\nb: 2\n", "f.yaml", limits,
                                           [&](YamlDocument&& d) { indices.push_back(d.index); }, diags);
    CAPTURE(block_reader);
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].pos.line == 2);
    CHECK(diags[0].pos.col == 13);
    CHECK(indices == std::vector<uint32_t>{0, 2});
    CHECK(used == 3);
    // An error just after a document that ends on its own `---` line: the document once, the error once.
    diags.clear();
    indices.clear();
    load_yaml_stream("a: 1\n--- {b: 2}}\n---\nc: 3\n", "f.yaml", limits, [&](YamlDocument&& d) { indices.push_back(d.index); }, diags);
    REQUIRE(diags.size() == 1);
    CHECK(diags[0].pos.line == 2);
    CHECK(diags[0].pos.col == 11);
    CHECK(indices == std::vector<uint32_t>{0, 1, 2});
  }
}

TEST_CASE("the emitter: every string reads back as itself, keys too; a mapping of 100,000 keys in time") {
  // Strings a literal block, a plain or a quoted scalar could get wrong: block scalars that need
  // indentation or chomping indicators, control characters, YAML 1.1's other line breaks (NEL,
  // U+2028, U+2029), DEL, a BOM, U+FFFE/U+FFFF, and ordinary text beside them.
  const std::vector<std::string> strings = {
      "a\nb\n", "a\nb", "x\n\n", "x\n\n\n", "\n", "   \n", "\n a\n", "  lead\nnext\n", "\nlater\n", "a\x01b\n", "a\x01b",
      "a\tb\n", "a\rb\n", "a\x7F" "b", "a\x7F" "b\n", "a\u0085b", "a\u0085b\n", "a\u2028b", "a\u2028b\n", "a\u2029b", "\uFEFF" "bom",
      "a\uFEFF" "b\n", "a\uFFFE" "b", "a\uFFFF" "b\n", "a\u0080b", "a\u009Fb", "caf\u00e9 \u65e5\u672c \U0001F600", "tail  \n",
      "line\n  more\n", "# not a comment\n", "--- \n...\n", "key: value\n", "yes", "010", "~", "", " ", "a\u00A0b", "\"q\" and \\",
      "... x", "...", "--- x",
  };
  // Keys whose escapes make them longer than the 1,024 characters an implicit key may have.
  std::vector<std::string> all = strings;
  std::string accents;
  for (int i = 0; i < 500; ++i) accents += "\u00e9";
  all.push_back(accents + "\x7F");
  all.push_back(std::string(400, '\x01'));
  all.push_back(std::string(600, '"'));
  all.push_back(std::string(2000, 'k'));
  for (const auto& text : all) {
    CAPTURE(text);
    // As a value and as a key, then ordinary non-ASCII text after it (escapes stay local).
    const json object = {{"v", text}, {text.empty() ? "empty" : text, 1}, {"z", "caf\u00e9"}};
    const std::string yaml = to_yaml(object);
    CAPTURE(yaml);
    auto l = load(yaml);
    REQUIRE_MESSAGE(l.diags.empty(), (l.diags.empty() ? "" : l.diags[0].message));
    REQUIRE(l.docs.size() == 1);
    CHECK(l.docs[0].body() == object);
    CHECK(yaml.find(": caf\u00e9\n") != std::string::npos);
  }
  // A literal block ends with its last line: its final line break is the block's own (clip).
  CHECK(to_yaml(json{{"a", "x\ny: z\n"}, {"b", 1}}) == "a: |\n  x\n  y: z\nb: 1\n");
  // Source order from the positions, matched by name: 100,000 keys (this was quadratic, minutes).
  std::string text = "m:\n";
  for (int i = 0; i < 100000; ++i) text += "  k" + std::to_string(99999 - i) + ": " + std::to_string(i) + "\n";
  auto l = load(text);
  REQUIRE(l.docs.size() == 1);
  const std::string out = to_yaml(l.docs[0].body(), l.docs[0].positions.get(), l.docs[0].positions->root());
  CHECK(out.rfind("m:\n  k99999: 0\n  k99998: 1\n", 0) == 0);  // the source's order, not sorted
  CHECK(out.size() == text.size());
}

}  // TEST_SUITE
