#include <doctest/doctest.h>

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <thread>

#include "engine/load.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;
namespace fs = std::filesystem;
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

TEST_CASE("links: a loop and a link to nothing say so, given or found in a folder") {
  TempDir dir;
  write_file(dir.path() / "ok.yaml", "a: 1\n");
  fs::create_symlink("a.yaml", dir.path() / "b.yaml");
  fs::create_symlink("b.yaml", dir.path() / "a.yaml");
  fs::create_symlink("gone.yaml", dir.path() / "dangling.yaml");
  fs::create_symlink("sub/../dangling.yaml", dir.path() / "chain.yaml");  // through a folder and back
  fs::create_symlink("ok.yaml", dir.path() / "good.yaml");
  fs::create_directory(dir.path() / "sub");
  fs::create_symlink(".", dir.path() / "self");  // a folder link: not followed
  std::vector<Diagnostic> diags;
  auto inputs = expand_inputs({(dir.path() / "a.yaml").string(), (dir.path() / "dangling.yaml").string(),
                               (dir.path() / "none.yaml").string(), (dir.path() / "chain.yaml").string()}, diags);
  CHECK(inputs.empty());
  REQUIRE(diags.size() == 4);
  CHECK(diags[0].message == "Too many levels of symbolic links");
  CHECK(diags[1].message == "a symbolic link to nothing (gone.yaml)");
  CHECK(diags[2].message == "no such file or directory");
  CHECK(diags[3].message == "a symbolic link to nothing (sub/../dangling.yaml -> gone.yaml)");
  diags.clear();
  inputs = expand_inputs({dir.path().string()}, diags);
  REQUIRE(inputs.size() == 2);  // good.yaml and ok.yaml
  CHECK(inputs[0].path.filename() == "good.yaml");
  CHECK(inputs[1].path.filename() == "ok.yaml");
  REQUIRE(diags.size() == 4);  // in path order, whatever order the folder lists them in
  std::vector<std::string> named;
  for (const auto& d : diags) named.push_back(fs::path(d.file).filename().string() + ": " + d.message);
  CHECK(named[0] == "a.yaml: Too many levels of symbolic links");
  CHECK(named[1] == "b.yaml: Too many levels of symbolic links");
  CHECK(named[2] == "chain.yaml: a symbolic link to nothing (sub/../dangling.yaml -> gone.yaml)");
  CHECK(named[3] == "dangling.yaml: a symbolic link to nothing (gone.yaml)");
}

TEST_CASE("folders: a long chain of links, links to folders and FIFOs named as manifests, errors in path order") {
  TempDir dir;
  write_file(dir.path() / "gone" / "keep.txt", "");
  for (int i = 1; i <= 5; ++i)
    fs::create_symlink("l" + std::to_string(i + 1) + ".yaml", dir.path() / ("l" + std::to_string(i) + ".yaml"));
  fs::create_symlink("l1.yaml", dir.path() / "a-b.yaml");  // sorts after "a/x.yaml", as a path
  fs::create_directory(dir.path() / "a");
  fs::create_symlink("nothing.yaml", dir.path() / "a" / "x.yaml");
  fs::create_symlink("gone", dir.path() / "folder.yaml");  // a link to a folder, named as a manifest
  REQUIRE(mkfifo((dir.path() / "pipe.yaml").c_str(), 0600) == 0);  // read only when named
  write_file(dir.path() / "a" / "ok.yaml", "a: 1\n");
  std::vector<Diagnostic> diags;
  auto inputs = expand_inputs({dir.path().string()}, diags);
  REQUIRE(inputs.size() == 1);
  CHECK(inputs[0].path == dir.path() / "a" / "ok.yaml");
  std::vector<std::string> named;
  for (const auto& d : diags) named.push_back(fs::relative(d.file, dir.path()).string() + ": " + d.message);
  CHECK(named == std::vector<std::string>{
                     "a/x.yaml: a symbolic link to nothing (nothing.yaml)",
                     "a-b.yaml: a symbolic link to nothing (l1.yaml -> ... -> l6.yaml)",
                     "l1.yaml: a symbolic link to nothing (l2.yaml -> ... -> l6.yaml)",
                     "l2.yaml: a symbolic link to nothing (l3.yaml -> ... -> l6.yaml)",
                     "l3.yaml: a symbolic link to nothing (l4.yaml -> l5.yaml -> l6.yaml)",
                     "l4.yaml: a symbolic link to nothing (l5.yaml -> l6.yaml)",
                     "l5.yaml: a symbolic link to nothing (l6.yaml)",
                 });
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

TEST_CASE("a List in a List is unpacked too (kubectl's FlattenListVisitor), with positions and pointers") {
  std::vector<Diagnostic> diags;
  std::vector<Object> objects;
  load_text("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: Pod\n"
            "    metadata: {name: inner}\n  - 7\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: outer}\n",
            nullptr, LoadOptions{}, [&](Object&& o) { objects.push_back(std::move(o)); }, diags);
  REQUIRE(objects.size() == 2);
  CHECK(objects[0].name == "inner");
  CHECK(objects[0].item_pointer == "/items/0/items/0");
  CHECK(objects[0].pos == Pos{7, 5});
  CHECK(objects[0].position_of("/metadata/name") == Pos{9, 16});
  CHECK(objects[1].name == "outer");
  CHECK(objects[1].item_pointer == "/items/1");
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].pos == Pos{10, 5});
  CHECK(diags[0].message == "item /items/0/items/1 of the List is not a Kubernetes object (it needs apiVersion and kind)");
}

TEST_CASE("documents that are not Kubernetes objects are kept as documents") {
  auto objects = gpuguard::test::load_objects("version: v1\nmig-configs: {}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n");
  REQUIRE(objects.size() == 2);
  CHECK_FALSE(objects[0].is_kubernetes_object());
  CHECK(objects[0].body()["version"] == json("v1"));
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

TEST_CASE("every input is read whole, whatever its size, after a larger one and from a pipe") {
  // A ConfigMap padded to exactly `size` bytes: the text is read into one buffer reused from input
  // to input, sized by the file's size, grown when the size is unknown (a pipe).
  auto head = [](const std::string& name) { return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata:\n  pad: \""; };
  auto pad_size = [&](const std::string& name, size_t size) { return size - head(name).size() - 2; };
  auto manifest = [&](const std::string& name, size_t size) { return head(name) + std::string(pad_size(name, size), 'x') + "\"\n"; };
  const std::vector<size_t> sizes = {300000, 100, 65535, 65536, 65537, 131073, 90, 1u << 20};
  TempDir dir;
  std::vector<Input> inputs;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto path = dir.path() / ("f" + std::to_string(i) + ".yaml");
    write_file(path, manifest("cm-" + std::to_string(i), sizes[i]));
    inputs.push_back({path.string(), path, false, Input::Kind::file, nullptr});
  }
  auto pad_of = [](const Object& o) { return o.body()["data"]["pad"].get<std::string>().size(); };
  for (unsigned jobs : {1u, 2u}) {
    CAPTURE(jobs);
    std::vector<Diagnostic> diags;
    std::vector<std::pair<std::string, size_t>> got;
    load_inputs(inputs, LoadOptions{}, jobs, [&](Object&& o) { got.emplace_back(o.name, pad_of(o)); }, diags);
    CHECK(diags.empty());
    REQUIRE(got.size() == sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
      CHECK(got[i].first == "cm-" + std::to_string(i));
      CHECK(got[i].second == pad_size("cm-" + std::to_string(i), sizes[i]));
    }
  }
  // A pipe has no size to go by: read in growing steps, up to the limit and no further.
  for (size_t size : {size_t{70000}, size_t{(1u << 20) - 1}, size_t{(1u << 20) + 1}}) {
    CAPTURE(size);
    auto fifo = dir.path() / ("pipe-" + std::to_string(size));
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const std::string text = manifest("piped", size);
    std::thread writer([&] {
      std::ofstream out(fifo, std::ios::binary);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
    });
    LoadOptions opts;
    opts.max_file_bytes = 1u << 20;
    std::vector<Diagnostic> diags;
    std::vector<size_t> got;
    load_input({fifo.string(), fifo, false, Input::Kind::file, nullptr}, 0, opts, [&](Object&& o) { got.push_back(pad_of(o)); }, diags);
    writer.join();
    if (size <= opts.max_file_bytes) {
      CHECK(diags.empty());
      REQUIRE(got.size() == 1);
      CHECK(got[0] == pad_size("piped", size));
    } else {
      CHECK(got.empty());
      REQUIRE(diags.size() == 1);
      CHECK(diags[0].message.find("over the size limit of 1 MiB") != std::string::npos);
    }
  }
}

namespace {

// What a load produced, in the order it was delivered: enough to tell any difference. `threads`
// and `handed_ahead` say how it went: the threads load_inputs used, the objects given to on_parsed.
struct Trace {
  std::vector<std::string> lines;
  unsigned threads = 0;
  size_t handed_ahead = 0;
};
Trace load_trace(const std::vector<Input>& inputs, unsigned jobs, size_t threaded_min_bytes = LoadOptions{}.threaded_min_bytes) {
  Trace t;
  std::vector<Diagnostic> diags;
  LoadOptions options;
  options.threaded_min_bytes = threaded_min_bytes;
  std::atomic<size_t> ahead{0};
  t.threads = load_inputs(
      inputs, options, jobs,
      [&](Object&& o) {
        t.lines.push_back(o.source->path + "#" + std::to_string(o.source->index) + " doc " + std::to_string(o.document) + " " +
                          o.name + " " + std::to_string(o.pos.line) + ":" + std::to_string(o.pos.col) + " " +
                          std::to_string(o.position_of("/metadata/name").line));
      },
      diags, [&](std::span<Object> objects, size_t from) { ahead += objects.size() - from; });
  for (const auto& d : diags)
    t.lines.push_back("diag " + d.file + " " + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + " " + d.message);
  t.handed_ahead = ahead;
  return t;
}

void check_same(const std::vector<std::string>& one, const std::vector<std::string>& many) {
  REQUIRE(many.size() == one.size());
  auto diff = std::mismatch(one.begin(), one.end(), many.begin());
  CHECK_MESSAGE(diff.first == one.end(), "first difference at " << (diff.first - one.begin()) << ": "
                                                                << (diff.first == one.end() ? "" : *diff.first + " vs " + *diff.second));
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
  CHECK(one.threads == 1);
  CHECK(one.handed_ahead == 0);
  CHECK(one.lines.size() == 40000 + 1 + 2);  // every object but the broken one, two diagnostics
  for (unsigned jobs : {2u, 3u, 8u}) {
    CAPTURE(jobs);
    const auto many = load_trace(inputs, jobs);
    CHECK(many.threads == jobs);
    CHECK(many.handed_ahead == 40001);
    check_same(one.lines, many.lines);
    // The same units (the large file in parts) read in turn on the calling thread, as less input
    // than options.threaded_min_bytes would be.
    const auto in_turn = load_trace(inputs, jobs, SIZE_MAX);
    CHECK(in_turn.threads == 1);
    CHECK(in_turn.handed_ahead == 0);
    check_same(one.lines, in_turn.lines);
  }
  // The small files alone: under 256 KiB they are read on one thread, unless told otherwise.
  const std::vector<Input> small = {inputs[0], inputs[2], inputs[3]};
  const auto small_one = load_trace(small, 1);
  CHECK(small_one.lines.size() == 3);  // two objects, one diagnostic
  const auto small_default = load_trace(small, 2);
  CHECK(small_default.threads == 1);
  CHECK(small_default.handed_ahead == 0);
  check_same(small_one.lines, small_default.lines);
  const auto small_threaded = load_trace(small, 2, 0);
  CHECK(small_threaded.threads == 2);
  CHECK(small_threaded.handed_ahead == 2);
  check_same(small_one.lines, small_threaded.lines);
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
