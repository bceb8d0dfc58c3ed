// engine::json's objects are FlatMaps (engine/flat_map.h): the same order, values and behaviour as
// nlohmann::json's std::map objects, checked here against nlohmann::json itself.

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/json_parse.h"
#include "engine/yaml_load.h"

using namespace gpuguard::engine;

namespace {

// A key as a JSON pointer token.
std::string escaped(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
  return out;
}

// The same text from both: nlohmann's dump sorts nothing itself, it writes the objects' order.
void same(const json& flat, const nlohmann::json& tree) { CHECK(flat.dump() == tree.dump()); }

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("FlatMap objects behave as nlohmann::json's std::map objects under random edits") {
  std::mt19937 rng(20261204);  // fixed: the same sequence every run
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  const std::vector<std::string> keys = {"", "a", "b", "ab", "apiVersion", "kind", "metadata", "spec", "status", "z",
                                         "\xc3\xa9", "a/b", "a~b", "0", "10", "9", "nvidia.com/gpu", "spec2"};
  for (int round = 0; round < 200; ++round) {
    CAPTURE(round);
    json flat = json::object();
    nlohmann::json tree = nlohmann::json::object();
    for (int step = 0; step < 40; ++step) {
      const std::string& k = keys[pick(keys.size())];
      const int value = static_cast<int>(rng() % 100);
      switch (pick(9)) {
        case 0: flat[k] = value; tree[k] = value; break;
        case 1: flat.erase(k); tree.erase(k); break;
        case 2: flat.emplace(k, value); tree.emplace(k, value); break;
        case 3: {  // a nested object, edited through a pointer
          if (tree.contains(k) && !tree[k].is_object()) break;
          const std::string p = "/" + escaped(k);
          flat[nlohmann::json::json_pointer(p)]["x"] = value;
          tree[nlohmann::json::json_pointer(p)]["x"] = value;
          break;
        }
        case 4: {  // update, insert and push_back from another object
          json other = json::object();
          nlohmann::json other_tree = nlohmann::json::object();
          for (int i = 0; i < 3; ++i) {
            const std::string& o = keys[pick(keys.size())];
            other[o] = i;
            other_tree[o] = i;
          }
          switch (rng() % 3) {
            case 0:
              flat.update(other);
              tree.update(other_tree);
              break;
            case 1:
              flat.insert(other.begin(), other.end());
              tree.insert(other_tree.begin(), other_tree.end());
              break;
            default:  // push_back of a member: inserted unless the key is there
              for (const auto& [o, v] : other_tree.items()) {
                flat.push_back(json::object_t::value_type(o, json(v)));
                tree.push_back(nlohmann::json::object_t::value_type(o, v));
              }
          }
          break;
        }
        case 5: {  // a JSON Patch and a merge patch
          const std::string p = "/" + escaped(k);
          nlohmann::json patch = nlohmann::json::array({{{"op", "add"}, {"path", p}, {"value", value}}});
          flat = flat.patch(json(patch));
          tree = tree.patch(patch);
          nlohmann::json merge = {{keys[pick(keys.size())], nullptr}, {keys[pick(keys.size())], value}};
          flat.merge_patch(json(merge));
          tree.merge_patch(merge);
          break;
        }
        case 6: {  // erase by iterator: the first member
          auto it = flat.begin();
          if (it != flat.end()) {
            const std::string first = it.key();
            flat.erase(it);
            tree.erase(tree.find(first));
          }
          break;
        }
        case 7: CHECK(flat.contains(k) == tree.contains(k)); CHECK(flat.count(k) == tree.count(k)); break;
        default: {
          auto f = flat.find(k);
          auto t = tree.find(k);
          REQUIRE((f == flat.end()) == (t == tree.end()));
          if (f != flat.end()) CHECK(f->dump() == t->dump());
        }
      }
      same(flat, tree);
    }
    // Iteration, items(), comparisons and diffs agree too.
    std::vector<std::string> flat_keys, tree_keys;
    for (const auto& [key, v] : flat.items()) flat_keys.push_back(key);
    for (const auto& [key, v] : tree.items()) tree_keys.push_back(key);
    CHECK(flat_keys == tree_keys);
    json twin = json::parse(tree.dump());
    CHECK(twin == flat);
    CHECK_FALSE(twin != flat);
    json other = flat;
    other["zz"] = 1;
    nlohmann::json other_tree = tree;
    other_tree["zz"] = 1;
    CHECK((flat < other) == (tree < other_tree));
    CHECK((other < flat) == (other_tree < tree));
    CHECK(json::diff(flat, other).dump() == nlohmann::json::diff(tree, other_tree).dump());
    CHECK(nlohmann::json(flat) == tree);
  }
}

TEST_CASE("FlatMap::take: the members of a stack range in key order, the last of equal keys kept") {
  using Map = json::object_t;
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{31}, size_t{32}, size_t{33}, size_t{200}}) {
    CAPTURE(n);
    std::mt19937 rng(static_cast<unsigned>(n));
    std::vector<Map::value_type> stack;
    stack.emplace_back("before", json("untouched"));
    nlohmann::json expect = nlohmann::json::object();
    for (size_t i = 0; i < n; ++i) {
      std::string key = "k" + std::to_string(rng() % (n / 2 + 1));  // repeated keys
      stack.emplace_back(key, json(i));
      expect[key] = i;  // as nlohmann's parser does: the last wins
    }
    Map m = Map::take(stack, 1);
    CHECK(m.size() == expect.size());
    json j(json::value_t::object);
    j.get_ref<json::object_t&>() = std::move(m);
    CHECK(j.dump() == expect.dump());
    CHECK(stack[0].second == "untouched");
  }
  // Already in order: taken as it is.
  std::vector<Map::value_type> sorted = {{"a", json(1)}, {"b", json(2)}, {"c", json(3)}};
  Map m = Map::take(sorted, 0);
  CHECK(json(m).dump() == R"({"a":1,"b":2,"c":3})");
}

TEST_CASE("member finds every key of objects of every size around its scan bound") {
  for (size_t n = 0; n <= 20; ++n) {
    CAPTURE(n);
    json object = json::object();
    for (size_t i = 0; i < n; ++i) object["key" + std::to_string(n - i)] = i;
    for (size_t i = 0; i < n; ++i) {
      const json* found = member(object, "key" + std::to_string(n - i));
      REQUIRE(found != nullptr);
      CHECK(*found == i);
    }
    for (const std::string& absent : std::vector<std::string>{"", "key", "key0", "key" + std::to_string(n + 1), "kez1", "jey1"})
      CHECK(member(object, absent) == nullptr);
  }
}

TEST_CASE("objects of many keys out of order are read whole, without a quadratic insertion") {
  // 300,000 keys in descending order: inserted one by one into a sorted vector, each would move
  // every member before it (4.5e10 moves, hours); the readers collect and sort them once.
  constexpr size_t n = 300'000;
  auto key = [](size_t i) {
    std::string k = std::to_string(i);
    return "k" + std::string(6 - k.size(), '0') + k;
  };
  std::string text = "{";
  for (size_t i = n; i-- > 0;) text += "\"" + key(i) + "\":" + std::to_string(i) + (i ? "," : "}");
  auto check = [&](const json& j) {
    REQUIRE(j.is_object());
    CHECK(j.size() == n);
    CHECK(j.begin().key() == key(0));
    CHECK(j.at(key(n - 1)) == n - 1);
    CHECK(j.at(key(n / 2)) == n / 2);
  };
  json fast;
  REQUIRE(parse_json_fast(text, fast));
  check(fast);
  check(parse_json("\xEF\xBB\xBF" + text));  // a BOM: nlohmann's parser, with the engine's builder
  std::vector<Diagnostic> diags;
  std::vector<json> docs;
  std::string yaml;
  for (size_t i = n; i-- > 0;) yaml += key(i) + ": " + std::to_string(i) + "\n";
  load_yaml_stream(yaml, "big.yaml", YamlLimits{}, [&](YamlDocument&& d) { docs.push_back(std::move(d.body())); }, diags);
  CHECK(diags.empty());
  REQUIRE(docs.size() == 1);
  check(docs[0]);
}

}  // TEST_SUITE
