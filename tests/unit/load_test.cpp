#include <doctest/doctest.h>

#include <algorithm>

#include "engine/load.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
using gpuguard::test::TempDir;
using gpuguard::test::write_file;

TEST_SUITE("unit") {

TEST_CASE("folders: recursive, manifests only, sorted, hidden entries skipped") {
  TempDir dir;
  write_file(dir.path() / "b.yaml", "a: 1\n");
  write_file(dir.path() / "a.yml", "a: 1\n");
  write_file(dir.path() / "sub" / "c.json", "{}\n");
  write_file(dir.path() / "sub" / "notes.txt", "x\n");
  write_file(dir.path() / ".hidden.yaml", "a: 1\n");
  write_file(dir.path() / ".git" / "x.yaml", "a: 1\n");
  std::vector<Diagnostic> diags;
  auto inputs = expand_inputs({dir.path().string(), (dir.path() / "sub" / "notes.txt").string(), "-", "/no/such"}, diags);
  REQUIRE(inputs.size() == 5);
  CHECK(inputs[0].path.filename() == "a.yml");
  CHECK(inputs[1].path.filename() == "b.yaml");
  CHECK(inputs[2].path.filename() == "c.json");
  CHECK(inputs[3].path.filename() == "notes.txt");  // named explicitly: linted whatever its name
  CHECK(inputs[4].is_stdin);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file == "/no/such");
}

TEST_CASE("Lists are unpacked into their items, with positions") {
  auto objects = gpuguard::test::load_objects(
      "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: b, namespace: x}\n");
  REQUIRE(objects.size() == 2);
  CHECK(objects[0].name == "a");
  CHECK(objects[0].item_pointer == "/items/0");
  CHECK(objects[1].namespace_ == "x");
  CHECK(objects[1].pos == Pos{7, 3});
  CHECK(objects[1].position_of("/metadata/name") == Pos{9, 14});
}

TEST_CASE("*List kinds unpack; a List item that is not an object is a diagnostic") {
  std::vector<Diagnostic> diags;
  std::vector<Object> objects;
  load_text("apiVersion: v1\nkind: PodList\nitems:\n- {apiVersion: v1, kind: Pod}\n- 42\n", nullptr, LoadOptions{},
            [&](Object&& o) { objects.push_back(std::move(o)); }, diags);
  CHECK(objects.size() == 1);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].pos == Pos{5, 3});
}

TEST_CASE("documents that are not Kubernetes objects are kept as documents") {
  auto objects = gpuguard::test::load_objects("version: v1\nmig-configs: {}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n");
  REQUIRE(objects.size() == 2);
  CHECK_FALSE(objects[0].is_kubernetes_object());
  CHECK(objects[0].body["version"] == json("v1"));
  CHECK(objects[1].is_kubernetes_object());
  CHECK(objects[1].cluster_scoped());
}

TEST_CASE("a file over the size limit is refused before it is read") {
  TempDir dir;
  write_file(dir.path() / "big.yaml", std::string(3u << 20, '#'));
  write_file(dir.path() / "ok.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n");
  std::vector<Diagnostic> diags;
  auto inputs = expand_inputs({dir.path().string()}, diags);
  LoadOptions opts;
  opts.max_file_bytes = 1u << 20;
  size_t n = 0;
  uint32_t i = 0;
  for (const auto& in : inputs) load_input(in, i++, opts, [&](Object&&) { ++n; }, diags);
  CHECK(n == 1);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].message.find("over the size limit of 1 MiB") != std::string::npos);
}

namespace {

// What a load produced, in the order it was delivered: enough to tell any difference.
std::vector<std::string> load_trace(const std::vector<Input>& inputs, unsigned jobs) {
  std::vector<std::string> trace;
  std::vector<Diagnostic> diags;
  load_inputs(inputs, LoadOptions{}, jobs, [&](Object&& o) {
    trace.push_back(o.source->path + "#" + std::to_string(o.source->index) + " doc " + std::to_string(o.document) + " " +
                    o.name + " " + std::to_string(o.pos.line) + ":" + std::to_string(o.pos.col) + " " +
                    std::to_string(o.position_of("/metadata/name").line));
  }, diags);
  for (const auto& d : diags)
    trace.push_back("diag " + d.file + " " + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + " " + d.message);
  return trace;
}

}  // namespace

TEST_CASE("--jobs: parallel loading gives what the sequential load gives, in the same order") {
  TempDir dir;
  // A large file (split into parts at document markers) with a broken document and a `---`
  // inside a block scalar, which is not a document marker; and small files around it.
  std::string big;
  const std::string padding = "# " + std::string(200, 'x') + "\n";
  for (int i = 0; i < 40000; ++i) {
    big += "---\n" + padding + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-" + std::to_string(i) + "\n";
    if (i % 997 == 0) big += "data:\n  text: |\n    ---\n    not a marker\n";
    if (i == 21000) big += "  labels: {a: [unterminated\n";
  }
  REQUIRE(big.size() > (8u << 20));
  write_file(dir.path() / "a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: first}\n");
  write_file(dir.path() / "b.yaml", big);
  write_file(dir.path() / "c.yaml", "kind: [\n");
  write_file(dir.path() / "d.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: last}\n");
  std::vector<Diagnostic> diags;
  auto inputs = expand_inputs({dir.path().string()}, diags);
  REQUIRE(inputs.size() == 4);
  const auto one = load_trace(inputs, 1);
  CHECK(one.size() == 40000 + 1 + 2);  // every object but the broken one, two diagnostics
  for (unsigned jobs : {2u, 3u, 8u}) {
    CAPTURE(jobs);
    const auto many = load_trace(inputs, jobs);
    REQUIRE(many.size() == one.size());
    auto diff = std::mismatch(one.begin(), one.end(), many.begin());
    CHECK_MESSAGE(diff.first == one.end(), "first difference at " << (diff.first - one.begin()) << ": "
                                                                  << (diff.first == one.end() ? "" : *diff.first + " vs " + *diff.second));
  }
}

TEST_CASE("apiVersion splits into group and version") {
  auto g = parse_gvk("apps/v1", "Deployment");
  CHECK(g.group == "apps");
  CHECK(g.version == "v1");
  auto c = parse_gvk("v1", "Pod");
  CHECK(c.group.empty());
  CHECK(is_cluster_scoped("scheduling.k8s.io", "PriorityClass"));
  CHECK_FALSE(is_cluster_scoped("", "Pod"));
}

}  // TEST_SUITE
