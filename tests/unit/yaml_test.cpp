// The YAML loader: Kubernetes' scalar resolution, positions, merge keys, KYAML, hostile input.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>
#include <string>

#include "engine/yaml_emit.h"
#include "engine/yaml_load.h"
#include "tests/support/support.h"

#include <yaml.h>

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

// CPU time of `f`, in seconds (not wall time: other processes on the machine do not count).
template <class F>
double cpu_seconds(F&& f) {
  timespec a{}, b{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  f();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  return static_cast<double>(b.tv_sec - a.tv_sec) + static_cast<double>(b.tv_nsec - a.tv_nsec) * 1e-9;
}

TEST_CASE("hostile: deep flow nesting is refused before libyaml reads it, in linear time, with its place") {
  // libyaml reads a flow nest in time quadratic in its depth (80 KB of '[' took 5-8.6 s in lint,
  // 200 KB 25 s); the loader finds the nest first. A millisecond or so each here: the bound is
  // generous (and more so under the sanitizers).
  const double bound = gpuguard::test::kSanitized ? 10.0 : 1.0;
  for (const std::string& nest : {std::string(40000, '['), std::string(200000, '{'), [] {
                                    std::string m;
                                    for (int i = 0; i < 100000; ++i) m += i % 2 ? "{a: " : "[";
                                    return m;
                                  }()}) {
    const std::string text = "a: 1\n---\nkind: ConfigMap\ndata:\n  x: " + nest + "\n---\nb: 2\n";
    Loaded l;
    const double seconds = cpu_seconds([&] { l = load(text); });
    CAPTURE(nest.substr(0, 8));
    CHECK_MESSAGE(seconds < bound, "loading took " << seconds << " s");
    REQUIRE(l.diags.size() == 1);
    CHECK(l.diags[0].message.find("nesting deeper than 256 levels (the nesting limit)") != std::string::npos);
    // The 257th bracket: line 5, after "  x: " and 256 brackets of the nest.
    CHECK(l.diags[0].pos.line == 5);
    const size_t per = nest.starts_with("[{") ? 0 : 1;
    if (per == 1) CHECK(l.diags[0].pos.col == 6 + 256);
    // The documents before and after it load.
    REQUIRE(l.docs.size() == 2);
    CHECK(l.docs[0].body()["a"] == json(1));
    CHECK(l.docs[1].body()["b"] == json(2));
  }
  // Within the limit: 256 levels of flow style load (the loader's cap counts every level).
  const std::string at_limit = std::string(256, '[') + std::string(256, ']');
  auto ok = load(at_limit + "\n");
  CHECK(ok.diags.empty());
  CHECK(ok.docs.size() == 1);
  auto over = load("[" + at_limit + "]\n");
  REQUIRE(over.diags.size() == 1);
  CHECK(over.diags[0].pos.col == 257);
  // A JSON file: the JSON reader stops at its depth, and the YAML it then tries is refused as fast.
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> diags;
  const std::string json_nest = std::string(200000, '[');
  const double seconds = cpu_seconds([&] {
    load_json_stream(json_nest, "t.json", YamlLimits{}, [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags);
  });
  CHECK_MESSAGE(seconds < bound, "loading took " << seconds << " s");
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].message == "invalid JSON: nesting deeper than 256 levels");
  CHECK(diags[0].pos.col == 257);
}

TEST_CASE("deep flow nesting: brackets that are text are not counted") {
  // 300 of each bracket (more than the limit), where YAML reads them as text; each document loads
  // to the value written.
  const std::string b(300, '['), c(300, '{'), e(300, ']');
  struct Case {
    std::string text;
    std::string key;
    std::string value;  // the string the key holds
  };
  const Case cases[] = {
      {"v: \"" + b + "\"\n", "v", b},
      {"v: \"a\\\"" + b + "\"\n", "v", "a\"" + b},
      {"v: '" + c + "''" + b + "'\n", "v", c + "'" + b},
      {"v: |\n  " + b + "\n  " + c + "\n", "v", b + "\n" + c + "\n"},
      {"v: >-\n  " + b + "\n\n  x\n", "v", b + "\nx"},
      {"v: |2\n   " + b + "\n", "v", " " + b + "\n"},
      {"- |\n  " + b + "\n- x\n", "", ""},
      {"v:\n  |\n  " + b + "\n", "v", b + "\n"},
      {"v: a" + b + "\n", "v", "a" + b},
      {"v: a " + b + " " + c + "\n", "v", "a " + b + " " + c},
      {"v: some text\n  " + b + "\n  more\n", "v", "some text " + b + " more"},
      {"- k: x\n  v: text\n    " + b + "\n", "", ""},
      {"# " + b + "\nv: 1 # " + c + "\n", "", ""},
      {"v: !<tag:yaml.org,2002:str> " + std::string("x") + "\nw: \"" + b + "\"\n", "w", b},
      {"%TAG !e! tag:example.com,2000:" + b + "\n---\nv: \"" + b + "\"\n", "v", b},
      {"v: [\"" + b + "\", '" + c + "', a, \"" + e + "\"]\n", "", ""},
      {"v: {k: \"" + b + "\"}\n", "", ""},
      {"v: \"multi\n  line " + b + "\n  end\"\n", "v", "multi line " + b + " end"},
      {"v: &anchor \"" + b + "\"\nw: *anchor\n", "w", b},
      {"? \"" + b + "\"\n: x\n", "", ""},
  };
  for (const Case& k : cases) {
    CAPTURE(k.text.substr(0, 60));
    auto l = load(k.text);
    for (const auto& d : l.diags) CHECK_MESSAGE(d.message.find("nesting deeper") == std::string::npos, d.message);
    CHECK(l.docs.size() == 1);
    if (!k.key.empty() && l.docs.size() == 1) CHECK(l.docs[0].body()[k.key] == json(k.value));
  }
}

TEST_CASE("deep flow nesting: the loader refuses exactly what libyaml nests past the limit") {
  // Generated documents that mix flow collections (some past the limit) with brackets in text:
  // whenever libyaml reads a document to its end, its deepest flow nesting decides whether the
  // loader refuses it. (libyaml reads each here: its nests are at most 300 deep.)
  uint64_t seed = 42;
  auto next = [&](uint64_t n) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % n;
  };
  auto brackets = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += next(2) ? '[' : '{';
    return s;
  };
  auto nest = [&](size_t depth) {
    std::string open, close;
    for (size_t i = 0; i < depth; ++i) {
      if (next(2)) {
        open += "[";
        close.insert(close.begin(), ']');
      } else {
        open += "{k: ";
        close.insert(close.begin(), '}');
      }
    }
    return open + "x" + close;
  };
  size_t refused = 0, loaded = 0;
  for (int round = 0; round < 300; ++round) {
    std::string text;
    const int parts = 1 + static_cast<int>(next(6));
    for (int p = 0; p < parts; ++p) {
      const std::string key = "k" + std::to_string(p) + ": ";
      switch (next(9)) {
        case 0: text += key + nest(250 + next(12)) + "\n"; break;
        case 1: text += key + "\"" + brackets(300) + "\"\n"; break;
        case 2: text += key + "'" + brackets(300) + "'\n"; break;
        case 3: text += key + "|\n  " + brackets(300) + "\n  " + brackets(10) + "\n"; break;
        case 4: text += key + "text" + brackets(300) + "\n"; break;
        case 5: text += key + "text\n  " + brackets(300) + "\n"; break;
        case 6: text += "# " + brackets(300) + "\n"; break;
        case 7: text += key + "\n  - " + nest(next(5)) + "\n  - \"" + brackets(300) + "\"\n"; break;
        default: text += key + "[" + nest(next(3)) + ", \"" + brackets(300) + "\", plain" + brackets(3) + "x]\n"; break;
      }
    }
    // libyaml's deepest flow nesting, if it reads the document to its end.
    yaml_parser_t parser;
    REQUIRE(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    int depth = 0, deepest = 0;
    std::vector<bool> open;  // the collections open: flow or block
    bool read = false;
    for (;;) {
      yaml_event_t ev;
      if (!yaml_parser_parse(&parser, &ev)) break;
      const yaml_event_type_t type = ev.type;
      if (type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) {
        const bool flow = type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                                                            : ev.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
        open.push_back(flow);
        if (flow) deepest = std::max(deepest, ++depth);
      } else if ((type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT) && !open.empty()) {
        if (open.back()) --depth;
        open.pop_back();
      }
      yaml_event_delete(&ev);
      if (type == YAML_STREAM_END_EVENT) {
        read = true;
        break;
      }
    }
    yaml_parser_delete(&parser);
    if (!read) continue;
    CAPTURE(text);
    auto l = load(text);
    bool deep = false;
    for (const auto& d : l.diags) deep |= d.message.find("flow collections") != std::string::npos;
    CHECK(deep == (deepest > 256));
    (deep ? refused : loaded) += 1;
  }
  CHECK(refused > 20);
  CHECK(loaded > 20);
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
