// engine/node.h: a loaded document read through Node answers as the JSON made from it does, and so
// does a document made from JSON.

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "engine/node.h"
#include "engine/object.h"
#include "engine/yaml_load.h"

using namespace gpuguard::engine;

namespace {

YamlDocument load_one(const std::string& text) {
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> diags;
  load_yaml_stream(text, "t.yaml", YamlLimits{}, [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags);
  REQUIRE(diags.empty());
  REQUIRE(docs.size() == 1);
  return std::move(docs[0]);
}

// Every question a rule asks of a node, asked of the Node and of the JSON value.
void same(Node n, const json& j) {
  REQUIRE(n);
  CHECK(n.is_null() == j.is_null());
  CHECK(n.is_boolean() == j.is_boolean());
  CHECK(n.is_number_integer() == j.is_number_integer());
  CHECK(n.is_number_float() == j.is_number_float());
  CHECK(n.is_number() == j.is_number());
  CHECK(n.is_string() == j.is_string());
  CHECK(n.is_object() == j.is_object());
  CHECK(n.is_array() == j.is_array());
  CHECK(n.size() == j.size());
  CHECK(n.empty() == j.empty());
  CHECK(n.to_json() == j);
  CHECK(brief(n) == brief(j));
  CHECK(as_int(n) == as_int(j));
  if (j.is_string()) CHECK(n.str() == j.get_ref<const std::string&>());
  if (j.is_boolean()) CHECK(n.boolean() == j.get<bool>());
  if (j.is_number_integer()) CHECK(n.integer() == j.get<int64_t>());
  if (j.is_object()) {
    size_t seen = 0;
    for (const auto [key, value] : n.items()) {
      ++seen;
      const json* m = member(j, key);
      REQUIRE(m);
      CHECK(value.key() == key);
      CHECK(member(n, key).id() == value.id());
      CHECK(string_at(n, key) == string_at(j, key));
      CHECK(int_at(n, key) == int_at(j, key));
      CHECK(bool_at(n, key) == bool_at(j, key));
      same(value, *m);
    }
    CHECK(seen == j.size());
    CHECK_FALSE(member(n, "no-such-key"));
  }
  if (j.is_array()) {
    size_t i = 0;
    for (Node item : n) {
      CHECK(item.id() == n.at(i).id());
      same(item, j[i++]);
    }
    CHECK(i == j.size());
    CHECK_FALSE(n.at(j.size()));
  }
  if (!j.is_object()) CHECK(n.items().begin() == n.items().end());  // entries are a mapping's only
}

const char* const kManifest = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: train
  labels: {app: train, tier: "1"}
spec:
  replicas: 2.0
  paused: false
  template:
    spec:
      containers:
        - name: a
          resources:
            limits: {nvidia.com/gpu: 2, memory: 64Gi, cpu: 0.5}
          args: [~, yes, 1e3, "", []]
      tolerations: []
      affinity: {}
base: &b {p: 1, q: 2}
merged: {<<: *b, q: 3, q: 4}
)";

}  // namespace

TEST_SUITE("unit") {
TEST_CASE("a document read through Node answers as its JSON does") {
  // The duplicate `q` is an error diagnostic; load it apart.
  std::vector<YamlDocument> docs;
  std::vector<Diagnostic> diags;
  load_yaml_stream(kManifest, "t.yaml", YamlLimits{}, [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags);
  REQUIRE(docs.size() == 1);
  const YamlDocument& d = docs[0];
  const Node root(d.positions.get(), d.positions->root());
  same(root, d.body());
  CHECK(path(root, {"spec", "template", "spec", "containers"}).at(0)["name"].str() == "a");
  CHECK(as_int(path(root, {"spec", "replicas"})) == 2);
  CHECK(path(root, {"spec", "replicas"}).is_number_float());
  CHECK_FALSE(path(root, {"spec", "nope", "x"}));
  const Node absent = path(root, {"spec", "nope"});  // answers as null, and never faults
  CHECK(absent.is_null());
  CHECK(absent.size() == 0);
  CHECK(absent.str().empty());
  CHECK(absent.begin() == absent.end());
  CHECK_FALSE(absent["x"]);
  CHECK(path(root, {"merged", "q"}).integer() == 4);
  // A Node stands where a `const json*` did.
  const Node labels = path(root, {"metadata", "labels"});
  CHECK((labels && labels->is_object() && (*labels)["tier"].str() == "1"));
}

TEST_CASE("a document made from JSON reads as the document the loader made") {
  const YamlDocument d = load_one("apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {a: b}}\nspec: {x: [1, 2.5, true, null, {k: v}], big: 18446744073709551615}\n");
  const auto doc = PositionIndex::from_json(d.body());
  same(Node(doc.get(), doc->root()), d.body());
  // The API server reads an integer beyond int64 as a float; so does the document.
  CHECK(Node(doc.get(), doc->root())["spec"]["big"].is_number_float());
}

TEST_CASE("Object::root reads the loader's document, or one made of the body") {
  const YamlDocument d = load_one("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c}]}\n");
  std::vector<Object> objects;
  std::vector<Diagnostic> diags;
  objects_from_document(d.positions, d.start, nullptr, 0, objects, diags);
  REQUIRE(objects.size() == 1);
  CHECK(objects[0].root().doc() == d.positions.get());
  same(objects[0].root(), objects[0].body());
  const Object from_json = object_from_json(d.body());
  CHECK(from_json.root().doc() != nullptr);
  CHECK(from_json.root().doc() != d.positions.get());
  same(from_json.root(), from_json.body());
  CHECK(from_json.root().doc() == from_json.root().doc());  // made once
  CHECK(from_json.doc.get() == from_json.root().doc());     // the object keeps the document, not the JSON
  CHECK_FALSE(from_json.positions);
}

TEST_CASE("same_value compares as nlohmann's == does; sorted_items gives a mapping's entries in key order") {
  const YamlDocument a = load_one("{b: [1, 2.0, x, null, true], a: {k: 1}, c: 3}\n");
  const YamlDocument b = load_one("{a: {k: 1.0}, c: 3, b: [1.0, 2, x, null, true]}\n");  // other order, 1 as 1.0
  const Node x(a.positions.get(), a.positions->root()), y(b.positions.get(), b.positions->root());
  CHECK(same_value(x, y));
  CHECK(a.body() == b.body());  // what nlohmann says
  CHECK(same_value(x, Node(PositionIndex::from_json(a.body()).get(), 0)));
  for (const char* other : {"{b: [1, 2.0, x, null, true], a: {k: 1}, c: 4}", "{b: [1, 2.0, x, null], a: {k: 1}, c: 3}",
                            "{b: [1, 2.0, x, null, true], a: {k: 1}, d: 3}", "{b: [1, 2.0, x, null, 1], a: {k: 1}, c: 3}",
                            "{b: [1, 2.0, x, null, true], a: {k: 1}}", "[1]", "1", "'1'"}) {
    INFO(other);
    const YamlDocument o = load_one(std::string(other) + "\n");
    CHECK_FALSE(same_value(x, Node(o.positions.get(), o.positions->root())));
    CHECK(a.body() != o.body());
  }
  CHECK(same_value(Node(), Node()));  // two absent nodes answer as null
  std::string keys;
  for (const auto& [key, value] : sorted_items(x)) keys += std::string(key) + (value.is_object() ? "{}" : "") + ",";
  CHECK(keys == "a{},b,c,");
  CHECK(sorted_items(x["b"]).empty());  // not a mapping
}

TEST_CASE("an object can read its part of a document made of JSON") {
  const auto doc = PositionIndex::from_json(json::parse(
      R"({"request": {"object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}}}})"));
  PositionIndex::NodeId node = 0;
  REQUIRE(doc->find("/request/object", doc->root(), node));
  const Object o = object_from_node(doc, node);
  CHECK(o.gvk.kind == "Pod");
  CHECK(o.name == "p");
  CHECK(o.namespace_ == "n");
  CHECK(o.root() == Node(doc.get(), node));
  CHECK(o.body() == json::parse(R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "n"}})"));
  CHECK(o.position_of("/metadata/name") == Pos{});  // no positions
}

TEST_CASE("an object from a document makes its JSON only when asked, once; new content replaces the document") {
  const YamlDocument d = load_one(
      "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}\n"
      "- 7\n- {apiVersion: v1, kind: Secret, metadata: {name: b, namespace: team}}\n");
  std::vector<Object> objects;
  std::vector<Diagnostic> diags;
  objects_from_document(d.positions, d.start, nullptr, 0, objects, diags);
  REQUIRE(objects.size() == 2);
  REQUIRE(diags.size() == 1);  // the item that is not an object
  CHECK(diags[0].message.find("item 1 of the List") != std::string::npos);
  CHECK(diags[0].pos.line == 5);
  // Each item reads its own part of the one document.
  Object& cm = objects[0];
  CHECK(cm.doc.get() == d.positions.get());
  PositionIndex::NodeId item0 = 0;
  REQUIRE(d.positions->find("/items/0", d.positions->root(), item0));
  CHECK(cm.root() == Node(d.positions.get(), item0));
  CHECK(cm.item_pointer == "/items/0");
  CHECK(objects[1].item_pointer == "/items/2");
  CHECK(objects[1].namespace_ == "team");
  CHECK(cm.name == "a");
  // Its JSON: made of the document on first use, then the same value every time.
  const json& body = cm.body();
  CHECK(body == d.body()["items"][0]);
  CHECK(&cm.body() == &body);
  same(cm.root(), body);
  // New content: the document goes, root() reads the new body.
  cm.set_body(json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"data", {{"k", "w"}}}});
  CHECK_FALSE(cm.doc);
  CHECK(cm.positions.get() == d.positions.get());  // where its nodes were written stays, for findings
  CHECK(string_at(member(cm.root(), "data"), "k") == std::optional<std::string_view>("w"));
  CHECK(cm.take_body()["data"]["k"] == json("w"));
  CHECK(cm.body().is_null());
  // Taking the body of an object that has only its document copies the value out of it.
  Object& secret = objects[1];
  CHECK(secret.take_body() == d.body()["items"][2]);
  CHECK_FALSE(secret.root());
  CHECK_FALSE(secret.doc);
}
}
