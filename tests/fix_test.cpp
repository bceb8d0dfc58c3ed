// gpuguard fix (and mutate --write): the rules' fixes written into the files, only the lines they
// concern changed; --dry-run's diff applies with patch -p1 and git apply; charts are reported.

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/mutate.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Whether a program runs here (patch and git are Debian's own packages; a machine may lack them).
bool have(const std::string& program) { return test::run_command({program, "--version"}).exit_code == 0; }

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    const size_t end = nl == std::string::npos ? s.size() : nl + 1;
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

// Line numbers (1-based) of `before` that are not in `after`: the lines off a longest common
// subsequence of the two.
std::set<uint32_t> removed_lines(const std::string& before, const std::string& after) {
  const auto a = split(before), b = split(after);
  std::vector<std::vector<uint32_t>> lcs(a.size() + 1, std::vector<uint32_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;) lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::set<uint32_t> out;
  size_t i = 0, j = 0;
  while (i < a.size()) {
    if (j < b.size() && a[i] == b[j]) {
      ++i, ++j;
    } else if (j < b.size() && lcs[i][j + 1] >= lcs[i + 1][j]) {
      ++j;
    } else {
      out.insert(static_cast<uint32_t>(++i));
    }
  }
  return out;
}

// The file changed only in the lines its fixes concern: each line of `before` that is gone is the
// line of a node an operation of the fix (json_diff of the object before and after) writes at, or
// of that node's parent; every comment is still there.
bool only_fixed_lines(const std::string& before, const std::string& after) {
  const auto a = test::load_objects(before, "before.yaml");
  const auto b = test::load_objects(after, "after.yaml");
  if (a.size() != b.size()) return false;
  std::set<uint32_t> concerned;
  for (size_t i = 0; i < a.size(); ++i) {
    for (const auto& op : engine::json_diff(a[i].body(), b[i].body())) {
      const std::string path = op.value("path", "");
      concerned.insert(a[i].position_of(path).line);
      concerned.insert(a[i].position_of(path.substr(0, path.rfind('/'))).line);
    }
  }
  for (const uint32_t line : removed_lines(before, after)) {
    if (concerned.count(line) == 0) {
      MESSAGE("line " << line << " changed, not a line the fix concerns: " << split(before)[line - 1]);
      return false;
    }
  }
  for (const auto& line : split(before)) {
    const size_t hash = line.find('#');
    if (hash == std::string::npos) continue;
    std::string comment = line.substr(hash);
    while (!comment.empty() && (comment.back() == '\n' || comment.back() == '\r')) comment.pop_back();
    if (after.find(comment) == std::string::npos) return false;
  }
  return true;
}

std::vector<json> bodies(const std::string& text, const std::string& name) {
  std::vector<json> out;
  for (const auto& o : test::load_objects(text, name)) out.push_back(o.body());
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The fixture's `# gpuguard-test:` directives: complete, and its config (flow mappings merged).
struct Directives {
  bool complete = false;
  bool schemas = false;
  json config = json::object();
};
Directives directives(const std::string& text) {
  Directives d;
  std::stringstream ss(text);
  std::string line;
  while (std::getline(ss, line)) {
    const auto at = line.find("# gpuguard-test:");
    if (at == std::string::npos) continue;
    std::string rest = line.substr(at + 16);
    rest.erase(0, rest.find_first_not_of(' '));
    if (rest == "complete") d.complete = true;
    if (rest == "schemas") d.schemas = true;
    if (rest.rfind("config ", 0) == 0) {
      auto objs = test::load_objects(rest.substr(7), "directive");
      REQUIRE(objs.size() == 1);
      d.config.merge_patch(objs[0].body());
    }
  }
  return d;
}

fs::path rules_dir() { return test::source_dir() / "tests" / "rules"; }

void copy_tree(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  fs::copy(from, to, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
}

std::map<std::string, std::string> read_tree(const fs::path& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) out[fs::relative(e.path(), root).string()] = test::read_file(e.path());
  return out;
}

// A hand-written pod: comments, flow style, quoted strings, four-space indentation, an item
// written `-   name`, a second document that no fix concerns.
const char* kHandWritten =
    "# A training pod, written by hand.\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "    name: \"train\"          # quoted on purpose\n"
    "    labels: {app: train, 'tier': \"gpu\"}\n"
    "spec:\n"
    "    containers:\n"
    "    -   name: main\n"
    "        image: 'registry.example/train:1.0'\n"
    "        resources:\n"
    "            requests: {nvidia.com/gpu: 2}   # two GPUs\n"
    "        args: [--epochs, \"10\"]\n"
    "    # the end of the spec\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: untouched}\n"
    "data:\n"
    "  key: \"value\"   # kept\n";

const char* kHandWrittenFixed =
    "# A training pod, written by hand.\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "    name: \"train\"          # quoted on purpose\n"
    "    labels: {app: train, 'tier': \"gpu\"}\n"
    "spec:\n"
    "    containers:\n"
    "    -   name: main\n"
    "        image: 'registry.example/train:1.0'\n"
    "        resources:\n"
    "            requests: {nvidia.com/gpu: 2}   # two GPUs\n"
    "            limits:\n"
    "                nvidia.com/gpu: 2\n"
    "        args: [--epochs, \"10\"]\n"
    "    tolerations:\n"
    "    - effect: NoSchedule\n"
    "      key: nvidia.com/gpu\n"
    "      operator: Exists\n"
    "    # the end of the spec\n"
    "---\n"
    "apiVersion: v1\n"
    "kind: ConfigMap\n"
    "metadata: {name: untouched}\n"
    "data:\n"
    "  key: \"value\"   # kept\n";

}  // namespace

TEST_SUITE("cli") {

TEST_CASE("fix: every rule with a fix, over its mutated and disallowed fixtures: only the fixed lines change, lint is clean, "
          "fix again changes nothing, and --dry-run's diff gives the same bytes through patch -p1 and git apply") {
  test::TempDir tmp;
  std::vector<std::string> fixable;
  for (const auto* r : test::registry().rules())
    if (r->info().has_fix) fixable.push_back(r->info().id);
  REQUIRE(fixable.size() >= 7);

  struct Case {
    std::string rule;
    fs::path file;      // in the tree
    fs::path source;    // the fixture
    fs::path expected;  // the mutated fixture's .out.yaml, or empty
    Directives d;
  };
  std::vector<Case> cases;
  for (const auto& id : fixable) {
    std::vector<std::pair<fs::path, fs::path>> files;
    for (const auto& sub : {"mutated", "disallowed"}) {
      const fs::path dir = rules_dir() / id / sub;
      if (!fs::is_directory(dir)) continue;
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (std::string(sub) == "mutated") {
          if (!name.ends_with(".in.yaml")) continue;
          files.emplace_back(e.path(), dir / (name.substr(0, name.size() - 8) + ".out.yaml"));
        } else if (name.ends_with(".yaml")) {
          files.emplace_back(e.path(), fs::path());
        }
      }
    }
    for (const auto& [src, out] : files) {
      Case c{id, {}, src, out, directives(test::read_file(src))};
      if (c.d.schemas) continue;  // needs ../shared's schemas, which fix does not load
      // Each fixture in its own folder with its config, the other rules' fixes switched off.
      const fs::path dir = tmp.path() / "tree" / (c.d.complete ? "complete" : "plain") / id /
                           (src.parent_path().filename().string() + "-" + src.stem().string());
      json config = c.d.config;
      for (const auto& other : fixable)
        if (other != id) config["rules"][other]["fix"] = false;
      test::write_file(dir / ".gpuguard.yaml", config.dump() + "\n");
      c.file = dir / "in.yaml";
      test::write_file(c.file, test::read_file(src));
      cases.push_back(std::move(c));
    }
  }
  REQUIRE(cases.size() >= 40);
  copy_tree(tmp.path() / "tree", tmp.path() / "patched");
  copy_tree(tmp.path() / "tree", tmp.path() / "applied");

  auto fix_all = [&](const fs::path& root, std::vector<std::string> extra) {
    test::Run out;
    for (const char* part : {"plain", "complete"}) {
      std::vector<std::string> args = {"fix"};
      if (std::string(part) == "complete") args.push_back("--complete");
      args.insert(args.end(), extra.begin(), extra.end());
      args.push_back(part);
      auto r = test::run(args, "", root);
      CHECK_MESSAGE(r.exit_code == 0, r.err);
      out.out += r.out;
      out.err += r.err;
    }
    return out;
  };
  const auto diff = fix_all(tmp.path() / "patched", {"--dry-run"});
  CHECK(read_tree(tmp.path() / "patched") == read_tree(tmp.path() / "tree"));  // --dry-run changes nothing
  const auto first = fix_all(tmp.path() / "tree", {});
  CHECK_FALSE(has(first.err, "not rewritten"));
  CHECK_FALSE(has(first.err, "fix by hand"));


  size_t fixed_files = 0;
  for (const auto& c : cases) {
    CAPTURE(c.source);
    const std::string before = test::read_file(c.source);
    const std::string after = test::read_file(c.file);
    CHECK(only_fixed_lines(before, after));
    if (after != before) ++fixed_files;
    if (!c.expected.empty()) {
      CHECK_MESSAGE(after != before, "the mutated fixture was not fixed");
      CHECK(bodies(after, c.file.string()) == bodies(test::read_file(c.expected), c.expected.string()));
    }
    // No finding of the rule that has a fix is left.
    test::LintOptions o;
    o.only_rules = {c.rule};
    o.complete = c.d.complete;
    o.config_yaml = c.d.config.empty() ? "" : c.d.config.dump();
    for (const auto& f : test::lint(after, o).findings)
      CHECK_MESSAGE(!(f.fix && !f.suppressed), c.source.string() << ":" << f.pos.line << ": still fixable: " << f.message);
  }
  CHECK(fixed_files >= 25);
  size_t fixed_objects = 0;
  for (size_t at = first.err.find(": fixed "); at != std::string::npos; at = first.err.find(": fixed ", at + 1)) ++fixed_objects;
  MESSAGE(cases.size() << " fixtures of " << fixable.size() << " rules, " << fixed_files << " files changed, " << fixed_objects
                       << " objects fixed");

  // Fixed again: nothing changes.
  const auto fixed_tree = read_tree(tmp.path() / "tree");
  const auto second = fix_all(tmp.path() / "tree", {});
  CHECK_FALSE(has(second.err, "fixed "));
  CHECK(read_tree(tmp.path() / "tree") == fixed_tree);

  // The dry run's diff, applied.
  REQUIRE(!diff.out.empty());
  if (have("patch")) {
    auto patch = test::run_command({"patch", "-p1", "--batch", "--no-backup-if-mismatch"}, diff.out, tmp.path() / "patched");
    CHECK_MESSAGE(patch.exit_code == 0, patch.out << patch.err);
    CHECK(read_tree(tmp.path() / "patched") == fixed_tree);
  } else {
    MESSAGE("patch is not installed: the diff is applied with git apply only");
  }
  if (have("git")) {
    test::write_file(tmp.path() / "fix.diff", diff.out);
    auto git = test::run_command({"git", "apply", (tmp.path() / "fix.diff").string()}, "", tmp.path() / "applied");
    CHECK_MESSAGE(git.exit_code == 0, git.err);
    CHECK(read_tree(tmp.path() / "applied") == fixed_tree);
  }
}

TEST_CASE("fix over the examples: only fixed lines change, and a second run has nothing to do") {
  test::TempDir tmp;
  copy_tree(test::source_dir() / "examples", tmp.path() / "examples");
  const auto before = read_tree(tmp.path() / "examples");
  auto r = test::run({"fix", "examples"}, "", tmp.path());
  CHECK_MESSAGE(r.exit_code == 0, r.err);
  CHECK_FALSE(has(r.err, "not rewritten"));
  const auto after = read_tree(tmp.path() / "examples");
  CHECK(after != before);  // the seed's topology pod gets the GPU toleration
  for (const auto& entry : before) {
    const std::string& name = entry.first;
    CAPTURE(name);
    CHECK(only_fixed_lines(entry.second, after.at(name)));
  }
  auto again = test::run({"fix", "--dry-run", "--exit-code", "examples"}, "", tmp.path());
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.out.empty());
}

TEST_CASE("fix keeps comments, flow style, quoting and indentation; CRLF, no final newline, stdin, JSON, --exit-code") {
  test::TempDir tmp;
  const fs::path f = tmp.path() / "pod.yaml";
  test::write_file(f, kHandWritten);
  auto r = test::run({"fix", "--no-config", "--exit-code", "pod.yaml"}, "", tmp.path());
  CHECK_MESSAGE(r.exit_code == 1, r.err);
  CHECK(has(r.err, "pod.yaml:2: fixed Pod train (gpu-toleration-missing, gpu-request-limit-mismatch)"));
  CHECK(test::read_file(f) == kHandWrittenFixed);
  // Nothing left: exit 0, the file as it was.
  r = test::run({"fix", "--no-config", "--exit-code", "pod.yaml"}, "", tmp.path());
  CHECK(r.exit_code == 0);
  CHECK(test::read_file(f) == kHandWrittenFixed);

  SUBCASE("CRLF line endings stay CRLF") {
    test::write_file(f, replace_all(kHandWritten, "\n", "\r\n"));
    r = test::run({"fix", "--no-config", "pod.yaml"}, "", tmp.path());
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(test::read_file(f) == replace_all(kHandWrittenFixed, "\n", "\r\n"));
  }
  SUBCASE("stdin: the fixed stream on stdout; mutate --write is the same operation") {
    r = test::run({"fix", "--no-config", "-"}, kHandWritten, tmp.path());
    CHECK(r.exit_code == 0);
    CHECK(r.out == kHandWrittenFixed);
    test::write_file(f, kHandWritten);
    r = test::run({"mutate", "--write", "--no-config", "pod.yaml"}, "", tmp.path());
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(test::read_file(f) == kHandWrittenFixed);
  }
  SUBCASE("a file without a final newline keeps none; its diff says so and applies") {
    const std::string text =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - name: c\n        resources:\n          requests:\n            nvidia.com/gpu: \"1\"";
    test::write_file(f, text);
    test::write_file(tmp.path() / "copy" / "pod.yaml", text);
    r = test::run({"fix", "--no-config", "--rule", "gpu-request-limit-mismatch", "--dry-run", "pod.yaml"}, "", tmp.path());
    CHECK(r.exit_code == 0);
    CHECK(has(r.out, "--- a/pod.yaml\n+++ b/pod.yaml\n@@ -8,4 +8,6 @@\n"));
    CHECK(has(r.out, "\n\\ No newline at end of file\n"));
    CHECK(test::read_file(f) == text);
    const std::string diff = r.out;
    r = test::run({"fix", "--no-config", "--rule", "gpu-request-limit-mismatch", "pod.yaml"}, "", tmp.path());
    const std::string fixed = test::read_file(f);
    CHECK(fixed == text + "\n          limits:\n            nvidia.com/gpu: \"1\"");
    if (have("patch")) {
      auto p = test::run_command({"patch", "-p1", "--batch"}, diff, tmp.path() / "copy");
      CHECK_MESSAGE(p.exit_code == 0, p.out << p.err);
      CHECK(test::read_file(tmp.path() / "copy" / "pod.yaml") == fixed);
    }
  }
  SUBCASE("a byte order mark and characters of several bytes before the edits; input errors exit 2") {
    const std::string text =
        "\xEF\xBB\xBF# D\xC3\xBCsseldorf \xE8\xAE\xAD\xE7\xBB\x83\napiVersion: v1\nkind: Pod\nmetadata: {name: \"tr\xC3\xA4in\"}\nspec:\n"
        "  containers:\n  - name: c  # \xC3\xA9\n    resources: {requests: {nvidia.com/gpu: 1}}  # \xC3\xBC\n";
    test::write_file(f, text);
    r = test::run({"fix", "--no-config", "pod.yaml"}, "", tmp.path());
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    CHECK(test::read_file(f) == replace_all(text, "{requests: {nvidia.com/gpu: 1}}", "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 1}}") +
                                    "  tolerations:\n  - effect: NoSchedule\n    key: nvidia.com/gpu\n    operator: Exists\n");
    CHECK(test::run({"fix", "--no-config", "missing.yaml"}, "", tmp.path()).exit_code == 2);
    CHECK(test::run({"fix", "--no-config", "--rule", "no-such-rule", "pod.yaml"}, "", tmp.path()).exit_code == 2);
  }
  SUBCASE("documents libyaml cannot read are skipped, as the loader skips them; the others are fixed; exit 2") {
    const std::string text =
        "a: [1\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"
        "---\nb: {\n---\n# x\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n";
    test::write_file(f, text);
    r = test::run({"fix", "--no-config", "pod.yaml"}, "", tmp.path());
    CHECK(r.exit_code == 2);
    CHECK(has(r.err, "pod.yaml:3: fixed Pod a (gpu-toleration-missing)"));
    CHECK(has(r.err, "pod.yaml:11: fixed Pod b (gpu-toleration-missing)"));
    CHECK(test::read_file(f) ==
          replace_all(text, "{limits: {nvidia.com/gpu: 1}}}]}", "{limits: {nvidia.com/gpu: 1}}}], tolerations: [{effect: NoSchedule, key: nvidia.com/gpu, operator: Exists}]}") +
              "  tolerations:\n    - effect: NoSchedule\n      key: nvidia.com/gpu\n      operator: Exists\n");
  }
  SUBCASE("JSON stays JSON") {
    const fs::path j = tmp.path() / "pod.json";
    test::write_file(j, "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"p\"},\n  \"spec\": {\n"
                        "    \"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"nvidia.com/gpu\": 1}}}]\n  }\n}\n");
    r = test::run({"fix", "--no-config", "pod.json"}, "", tmp.path());
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    const std::string fixed = test::read_file(j);
    const json parsed = json::parse(fixed);
    CHECK(parsed["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1);
    CHECK(parsed["spec"]["tolerations"].size() == 1);
    CHECK(has(fixed, "\n  \"metadata\": {\"name\": \"p\"},\n"));
  }
}

TEST_CASE("fix refuses what it cannot edit safely: anchors, charts; the file stays as it was") {
  test::TempDir tmp;
  const std::string anchored =
      "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    resources: &r\n"
      "      requests: {nvidia.com/gpu: 1}\n  - name: d\n    resources: *r\n";
  test::write_file(tmp.path() / "a.yaml", anchored);
  auto r = test::run({"fix", "--no-config", "--exit-code", "a.yaml"}, "", tmp.path());
  CHECK(r.exit_code == 1);
  CHECK(has(r.err, "a.yaml:1: warning: Pod a (gpu-toleration-missing, gpu-request-limit-mismatch) not rewritten: it uses "
                   "YAML anchors, aliases or merge keys (line 7); fix by hand"));
  CHECK(test::read_file(tmp.path() / "a.yaml") == anchored);

  const fs::path helm = test::source_dir() / "build" / "tools" / "helm";
  if (!fs::exists(helm)) return;  // the chart case needs helm (scripts/test-tools.sh)
  const fs::path chart = tmp.path() / "chart";
  test::write_file(chart / "Chart.yaml", "apiVersion: v2\nname: gpu-app\nversion: 0.1.0\n");
  test::write_file(chart / "values.yaml", "gpus: 1\n");
  const std::string tpl =
      "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  containers:\n  - name: main\n    resources:\n"
      "      requests:\n        nvidia.com/gpu: {{ .Values.gpus }}\n";
  test::write_file(chart / "templates" / "pod.yaml", tpl);
  r = test::run_command({"env", "HOME=" + tmp.path().string(), "HELM_CACHE_HOME=" + (tmp.path() / "cache").string(),
                         "HELM_CONFIG_HOME=" + (tmp.path() / "config").string(), "HELM_DATA_HOME=" + (tmp.path() / "data").string(),
                         test::binary().string(), "fix", "--no-config", "--exit-code", "--helm", helm.string(), "chart"},
                        "", tmp.path());
  CHECK_MESSAGE(r.exit_code == 1, r.err);
  CHECK(has(r.err, "templates/pod.yaml:"));
  CHECK(has(r.err, ": warning: fix by hand (gpu-toleration-missing, gpu-request-limit-mismatch, in a rendered chart, not rewritten): Pod "));

  CHECK(test::read_file(chart / "templates" / "pod.yaml") == tpl);
  CHECK(r.out.empty());
}

}  // TEST_SUITE
