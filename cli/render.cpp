// Charts and kustomizations rendered by the user's tools, and findings placed back in the sources.

#include "cli/render.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "engine/node.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace gpuguard::cli {

namespace fs = std::filesystem;
using engine::Diagnostic;
using engine::Input;
using engine::Pos;
using engine::Severity;

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    if (dir.empty()) dir = ".";
    std::string candidate = dir;
    candidate.append("/").append(name);
    std::error_code ec;
    if (access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, ec)) return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return "";
}

ToolRun run_tool(const std::vector<std::string>& argv, std::chrono::seconds timeout, size_t max_out) {
  ToolRun run;
  constexpr size_t kMaxErr = size_t{64} << 10;
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    run.error = std::string("cannot make a pipe: ") + std::strerror(errno);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
      if (fd >= 0) close(fd);
    return run;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // its own process group: a timeout ends what it started too
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0].c_str(), &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (spawned != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    run.error = "cannot run " + argv[0] + ": " + std::strerror(spawned);
    return run;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      run.error = "ran longer than " + std::to_string(timeout.count()) + " s and was stopped";
      break;
    }
    const int n = poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) {
      run.error = std::string("poll: ") + std::strerror(errno);
      break;
    }
    for (auto& p : fds) {
      if (p.fd < 0 || (p.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t got = read(p.fd, buf, sizeof buf);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        close(p.fd);
        p.fd = -1;
        --open_fds;
        continue;
      }
      std::string& to = &p == &fds[0] ? run.out : run.err;
      const size_t room = &p == &fds[0] ? max_out + 1 - std::min(max_out + 1, to.size()) : kMaxErr - std::min(kMaxErr, to.size());
      to.append(buf, std::min(room, static_cast<size_t>(got)));
    }
    if (run.out.size() > max_out) {
      run.error = "wrote more than " + std::to_string(max_out >> 20) + " MiB (--max-file-size) and was stopped";
      break;
    }
  }
  if (!run.error.empty()) kill(-pid, SIGKILL);
  for (auto& p : fds)
    if (p.fd >= 0) close(p.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return run;
}

namespace {

// One line of YAML (rendered, or a template's), as far as the mapping needs it.
struct Line {
  bool content = false;  // not blank, not a comment, not a template action alone
  uint32_t indent = 0;   // column (0-based) of the key or value, after any "- "
  std::string key;       // a mapping key written on the line ("" when none; "\x01" when it is computed by a template)
  std::string_view text; // the line from its key or value on, right-trimmed
};

Line parse_line(std::string_view s) {
  Line l;
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  size_t i = 0;
  for (;;) {
    while (i < s.size() && s[i] == ' ') ++i;
    if (i + 1 < s.size() && s[i] == '-' && s[i + 1] == ' ') {
      ++i;
      continue;
    }
    if (i + 1 == s.size() && s[i] == '-') return l;  // a bare "-": its item starts on the next line
    break;
  }
  if (i >= s.size() || s[i] == '#') return l;
  std::string_view rest = s.substr(i);
  if (rest.starts_with("{{")) {
    const size_t close = rest.find("}}");
    if (close == std::string_view::npos || close + 2 == rest.size()) return l;  // an action alone on its line
  }
  l.content = true;
  l.indent = static_cast<uint32_t>(i);
  l.text = rest;
  if (rest.starts_with("---")) {
    l.content = false;
    return l;
  }
  size_t colon = std::string_view::npos;
  if (rest[0] == '"' || rest[0] == '\'') {
    const size_t q = rest.find(rest[0], 1);
    if (q != std::string_view::npos && q + 1 < rest.size() && rest[q + 1] == ':' && (q + 2 == rest.size() || rest[q + 2] == ' ')) {
      l.key = std::string(rest.substr(1, q - 1));
      return l;
    }
    return l;
  }
  if (rest[0] == '{' || rest[0] == '[' || rest[0] == '|' || rest[0] == '>') return l;
  for (size_t k = 0; k < rest.size(); ++k) {
    if (rest[k] == ':' && (k + 1 == rest.size() || rest[k + 1] == ' ')) {
      colon = k;
      break;
    }
    if (rest[k] == ' ' && k + 1 < rest.size() && rest[k + 1] == '#') break;
  }
  if (colon == std::string_view::npos) return l;
  std::string_view key = rest.substr(0, colon);
  while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
  l.key = key.find("{{") != std::string_view::npos ? std::string("\x01") : std::string(key);
  return l;
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  while (at < text.size()) {
    const size_t nl = text.find('\n', at);
    lines.push_back(text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at));
    if (nl == std::string_view::npos) break;
    at = nl + 1;
  }
  return lines;
}

bool separator(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
  return line == "---" || (line.starts_with("--- ") && line.find('#') != std::string_view::npos);
}

// A file the objects came from, and its lines (1-based: lines[0] is line 1).
struct SourceText {
  engine::SourceRef ref;
  std::string text;
  std::vector<std::string_view> lines;
};

// The keys above line `at` (0-based) within [from, at), nearest first.
std::vector<std::string> chain(const std::vector<std::string_view>& lines, size_t from, size_t at) {
  std::vector<std::string> keys;
  uint32_t indent = parse_line(lines[at]).indent;
  for (size_t i = at; i-- > from && indent > 0;) {
    const Line l = parse_line(lines[i]);
    if (!l.content || l.key.empty() || l.indent >= indent) continue;
    keys.push_back(l.key);
    indent = l.indent;
  }
  return keys;
}

}  // namespace

class SourceMap {
 public:
  struct Doc {
    uint32_t first = 0, last = 0;  // lines of the rendered text, 1-based, inclusive
    int source = -1;               // into sources_, -1 when not known or not on disk
    uint32_t from = 1, to = 0;     // its section of the source, 1-based, inclusive
    std::string origin;            // helm's `# Source:` path, as helm wrote it
  };
  // A resource of a kustomization: its identity and section.
  struct Resource {
    std::string kind, name, namespace_;
    int source = -1;
    uint32_t from = 1, to = 0;
  };

  uint32_t input = 0;
  bool helm = true;
  std::string tool;  // "helm template", "kubectl kustomize"
  std::shared_ptr<const std::string> rendered;
  std::vector<std::string_view> lines;
  std::vector<Doc> docs;
  std::vector<SourceText> sources;
  std::vector<Resource> resources;

  [[nodiscard]] const Doc* doc_at(uint32_t line) const {
    auto it = std::upper_bound(docs.begin(), docs.end(), line, [](uint32_t l, const Doc& d) { return l < d.first; });
    if (it == docs.begin()) return nullptr;
    return &*std::prev(it);
  }

  // The section of a source that holds the object (kind, name, namespace) of rendered doc `d`.
  [[nodiscard]] std::optional<std::tuple<int, uint32_t, uint32_t>> section(const Doc& d, const engine::ObjectRef& o) const {
    if (helm) {
      if (d.source < 0) return std::nullopt;
      return std::make_tuple(d.source, d.from, d.to);
    }
    // Kustomize changes names (namePrefix, nameSuffix, a hash suffix): the resource of the same
    // kind whose name is the longest part of the rendered one, in the same namespace first.
    const Resource* best = nullptr;
    for (const auto& r : resources) {
      if (r.kind != o.kind() || r.name.empty() || o.name().find(r.name) == std::string::npos) continue;
      auto rank = [&](const Resource& x) { return std::make_pair(x.name.size(), x.namespace_ == o.namespace_() ? 1 : 0); };
      if (!best || rank(r) > rank(*best)) best = &r;
    }
    if (!best) return std::nullopt;
    return std::make_tuple(best->source, best->from, best->to);
  }
};

namespace {

constexpr int kMaxKustomizeDepth = 32;

// The resource files a kustomization builds from: its resources, bases and components, folders
// followed to their own kustomization; remote ones are left out.
void kustomize_files(const fs::path& dir, std::set<fs::path>& seen, std::vector<fs::path>& files, int depth) {
  std::error_code ec;
  const fs::path canon = fs::weakly_canonical(dir, ec);
  if (depth > kMaxKustomizeDepth || !seen.insert(canon).second) return;
  fs::path file;
  for (const char* name : {"kustomization.yaml", "kustomization.yml", "Kustomization"})
    if (fs::is_regular_file(dir / name, ec)) {
      file = dir / name;
      break;
    }
  if (file.empty()) return;
  std::ifstream in(file, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<engine::Object> objects;
  std::vector<Diagnostic> ignored;
  engine::LoadOptions load;
  load.template_check = false;
  (void)engine::load_text(text, nullptr, load, [&](engine::Object&& o) { objects.push_back(std::move(o)); }, ignored);
  for (const auto& o : objects) {
    const engine::Node root = o.root();
    for (const char* field : {"resources", "bases", "components"}) {
      const engine::Node list = root[field];
      if (!list.is_array()) continue;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string_view entry = list.at(i).str();
        if (entry.empty() || entry.find("://") != std::string_view::npos || entry.starts_with("github.com/")) continue;
        const fs::path p = dir / fs::path(std::string(entry));
        if (fs::is_directory(p, ec)) kustomize_files(p, seen, files, depth + 1);
        else if (fs::is_regular_file(p, ec)) files.push_back(p.lexically_normal());
      }
    }
  }
}

std::string display_of(const fs::path& p) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  const fs::path abs = fs::absolute(p, ec).lexically_normal();
  if (!ec) {
    const fs::path rel = abs.lexically_relative(cwd);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return p.lexically_normal().string();
}

int add_source(SourceMap& map, std::map<fs::path, int>& index, const fs::path& file) {
  auto it = index.find(file);
  if (it != index.end()) return it->second;
  std::error_code ec;
  int at = -1;
  if (fs::is_regular_file(file, ec) && fs::file_size(file, ec) <= (size_t{16} << 20)) {
    std::ifstream in(file, std::ios::binary);
    SourceText s;
    s.text.assign((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    s.ref = std::make_shared<engine::SourceFile>(engine::SourceFile{display_of(file), map.input});
    at = static_cast<int>(map.sources.size());
    map.sources.push_back(std::move(s));
    // The lines point into the text where it now lives.
    map.sources.back().lines = split_lines(map.sources.back().text);
  }
  index[file] = at;
  return at;
}

void map_helm(SourceMap& map, const fs::path& chart) {
  // Documents: split at "---"; helm starts each with `# Source: <chart name>/<path in the chart>`.
  std::map<fs::path, int> index;
  for (uint32_t i = 0; i < map.lines.size(); ++i) {
    if (separator(map.lines[i]) || map.docs.empty()) {
      map.docs.push_back({i + 1 + (separator(map.lines[i]) ? 1 : 0), 0, -1, 1, 0, {}});
      if (separator(map.lines[i])) continue;
    }
    if (map.lines[i].starts_with("# Source: ") && map.docs.back().origin.empty())
      map.docs.back().origin = std::string(map.lines[i].substr(10));
  }
  for (size_t d = 0; d < map.docs.size(); ++d)
    map.docs[d].last = d + 1 < map.docs.size() ? map.docs[d + 1].first - 2 : static_cast<uint32_t>(map.lines.size());
  // Each template's documents in order, and its sections (split at "---"): the k-th document of a
  // template is its k-th section when the counts agree, else the whole template is searched.
  std::map<std::string, std::vector<size_t>> of_origin;
  for (size_t d = 0; d < map.docs.size(); ++d) {
    auto& doc = map.docs[d];
    if (doc.origin.empty()) continue;
    const size_t slash = doc.origin.find('/');
    if (slash == std::string::npos) continue;
    const fs::path file = chart / doc.origin.substr(slash + 1);
    doc.source = add_source(map, index, file.lexically_normal());
    if (doc.source >= 0) of_origin[doc.origin].push_back(d);
  }
  for (const auto& [origin, docs] : of_origin) {
    const SourceText& src = map.sources[static_cast<size_t>(map.docs[docs.front()].source)];
    std::vector<std::pair<uint32_t, uint32_t>> sections;
    uint32_t start = 1;
    bool content = false;
    for (uint32_t i = 0; i <= src.lines.size(); ++i) {
      const bool end = i == src.lines.size() || separator(src.lines[i]);
      if (end) {
        if (content) sections.emplace_back(start, i);
        start = i + 2;
        content = false;
      } else if (parse_line(src.lines[i]).content) {
        content = true;
      }
    }
    // helm sorts what it renders by kind (its install order), so a template's documents come in
    // their order only among those of one kind: the k-th document of a kind is the k-th section
    // whose literal `kind:` is that kind, when the counts agree; else the whole template.
    auto kind_in = [](const std::vector<std::string_view>& lines, uint32_t first, uint32_t last) {
      for (uint32_t i = first; i <= last && i <= lines.size(); ++i) {
        const Line l = parse_line(lines[i - 1]);
        if (l.content && l.key == "kind" && l.indent == 0) return std::string(l.text);
      }
      return std::string();
    };
    std::map<std::string, std::vector<size_t>> doc_of_kind, section_of_kind;
    for (size_t k = 0; k < docs.size(); ++k)
      doc_of_kind[kind_in(map.lines, map.docs[docs[k]].first, map.docs[docs[k]].last)].push_back(docs[k]);
    for (size_t k = 0; k < sections.size(); ++k) section_of_kind[kind_in(src.lines, sections[k].first, sections[k].second)].push_back(k);
    for (size_t k = 0; k < docs.size(); ++k) {
      auto& doc = map.docs[docs[k]];
      doc.from = 1;
      doc.to = static_cast<uint32_t>(src.lines.size());
    }
    for (const auto& [kind, ds] : doc_of_kind) {
      auto it = section_of_kind.find(kind);
      if (kind.empty() || it == section_of_kind.end() || it->second.size() != ds.size()) continue;
      for (size_t k = 0; k < ds.size(); ++k) std::tie(map.docs[ds[k]].from, map.docs[ds[k]].to) = sections[it->second[k]];
    }
  }
}

void map_kustomize(SourceMap& map, const fs::path& dir) {
  map.helm = false;
  uint32_t start = 1;
  for (uint32_t i = 0; i <= map.lines.size(); ++i) {
    if (i == map.lines.size() || separator(map.lines[i])) {
      if (i + 1 > start) map.docs.push_back({start, i, -1, 1, 0, {}});
      start = i + 2;
    }
  }
  std::set<fs::path> seen;
  std::vector<fs::path> files;
  kustomize_files(dir, seen, files, 0);
  std::map<fs::path, int> index;
  for (const auto& file : files) {
    const int s = add_source(map, index, file);
    if (s < 0) continue;
    const SourceText& src = map.sources[static_cast<size_t>(s)];
    std::vector<engine::Object> objects;
    std::vector<Diagnostic> ignored;
    engine::LoadOptions load;
    load.template_check = false;
    (void)engine::load_text(src.text, nullptr, load, [&](engine::Object&& o) { objects.push_back(std::move(o)); }, ignored);
    for (size_t k = 0; k < objects.size(); ++k) {
      const auto& o = objects[k];
      if (!o.is_kubernetes_object() || !o.pos.known()) continue;
      // Its section: from its document's start to the next object's.
      uint32_t from = o.pos.line;
      while (from > 1 && !separator(src.lines[from - 2])) --from;
      const uint32_t to = k + 1 < objects.size() && objects[k + 1].pos.known() ? objects[k + 1].pos.line - 1
                                                                                 : static_cast<uint32_t>(src.lines.size());
      map.resources.push_back({o.gvk.kind, o.name, o.namespace_, s, from, std::max(from, to)});
    }
  }
}

// The line (and column) of `src` within [from, to] that produced rendered line `at` (1-based) of
// doc `d`: the line with the same literal key and the same keys above it (as far as the template
// writes them), or, for a line without a key, the same text. nullopt when none or several match.
std::optional<Pos> exact_line(const SourceMap& map, const SourceMap::Doc& d, Pos at, const SourceText& src, uint32_t from,
                              uint32_t to) {
  if (at.line < d.first || at.line > d.last || at.line > map.lines.size()) return std::nullopt;
  const Line r = parse_line(map.lines[at.line - 1]);
  if (!r.content) return std::nullopt;
  const std::vector<std::string> rchain = chain(map.lines, d.first - 1, at.line - 1);
  // Lines of the rendered document before `at` with the same key (or text) and the same keys above:
  // when the template has as many equal candidates (a list's items written out one by one), the
  // m-th rendered one came from the m-th.
  size_t rendered_before = 0, rendered_total = 0;
  for (uint32_t i = d.first; i <= d.last && i <= map.lines.size(); ++i) {
    const Line l = parse_line(map.lines[i - 1]);
    if (!l.content || (r.key.empty() ? l.text != r.text : l.key != r.key)) continue;
    if (chain(map.lines, d.first - 1, i - 1) != rchain) continue;
    ++rendered_total;
    if (i < at.line) ++rendered_before;
  }
  int best = -1, ties = 0;
  uint32_t best_line = 0;
  Line best_l;
  std::vector<std::pair<uint32_t, Line>> tied;
  for (uint32_t i = from; i <= to && i <= src.lines.size(); ++i) {
    const Line t = parse_line(src.lines[i - 1]);
    if (!t.content) continue;
    const bool same_text = t.text == r.text;
    if (r.key.empty() ? !same_text : t.key != r.key) continue;
    const std::vector<std::string> tchain = chain(src.lines, from - 1, i - 1);
    if (tchain.empty() && !rchain.empty() && !same_text) continue;
    if (tchain.size() > rchain.size() || !std::equal(tchain.begin(), tchain.end(), rchain.begin())) continue;
    const int score = static_cast<int>(tchain.size()) * 2 + (same_text ? 1 : 0);
    if (score > best) {
      best = score;
      ties = 1;
      best_line = i;
      best_l = t;
      tied.assign(1, {i, t});
    } else if (score == best) {
      ++ties;
      tied.emplace_back(i, t);
    }
  }
  if (best < 0) return std::nullopt;
  if (ties != 1) {
    if (tied.size() != rendered_total || rendered_before >= tied.size()) return std::nullopt;
    std::tie(best_line, best_l) = tied[rendered_before];
  }
  uint32_t col = best_l.indent + 1;
  if (best_l.text == r.text && at.col > r.indent) col = at.col - r.indent + best_l.indent;
  return Pos{best_line, col};
}

// The first line of the object in its section: where it starts (its first key).
Pos first_line(const SourceText& src, uint32_t from, uint32_t to) {
  for (uint32_t i = from; i <= to && i <= src.lines.size(); ++i) {
    const Line l = parse_line(src.lines[i - 1]);
    if (l.content) return Pos{i, l.indent + 1};
  }
  return Pos{from, 1};
}

}  // namespace

std::vector<std::shared_ptr<const SourceMap>> render_inputs(std::vector<Input>& inputs, const RenderOptions& options,
                                                            std::vector<Diagnostic>& diags) {
  std::vector<std::shared_ptr<const SourceMap>> maps;
  std::vector<Input> kept;
  kept.reserve(inputs.size());
  for (auto& in : inputs) {
    if (in.kind == Input::Kind::file || in.text) {
      kept.push_back(std::move(in));
      continue;
    }
    const bool chart = in.kind == Input::Kind::chart;
    std::vector<std::string> argv;
    std::string tool;
    if (chart) {
      const std::string helm = find_program(options.helm.empty() ? "helm" : options.helm);
      if (helm.empty()) {
        diags.push_back({Severity::error, in.display, {},
                         options.helm.empty()
                             ? "a Helm chart, and helm is not on PATH: install Helm 3 (https://helm.sh/docs/intro/install/) or give "
                               "--helm PATH; the chart was not linted"
                             : "a Helm chart, and --helm " + options.helm + " is not an executable program; the chart was not linted"});
        continue;
      }
      argv = {helm, "template", options.release, in.path.string()};
      if (!options.namespace_.empty()) argv.insert(argv.end(), {"--namespace", options.namespace_});
      for (const auto& v : options.values) argv.insert(argv.end(), {"--values", v});
      for (const auto& s : options.sets) argv.insert(argv.end(), {"--set", s});
      tool = "helm template";
    } else {
      std::string program = options.kustomize;
      if (program.empty()) {
        program = find_program("kubectl");
        if (program.empty()) program = find_program("kustomize");
      } else {
        program = find_program(program);
      }
      if (program.empty()) {
        diags.push_back({Severity::error, in.display, {},
                         options.kustomize.empty()
                             ? "a Kustomize folder, and neither kubectl nor kustomize is on PATH: install kubectl "
                               "(https://kubernetes.io/docs/tasks/tools/) or kustomize, or give --kustomize PATH; it was not linted"
                             : "a Kustomize folder, and --kustomize " + options.kustomize + " is not an executable program; it was not linted"});
        continue;
      }
      const bool kubectl = fs::path(program).filename() == "kubectl";
      argv = kubectl ? std::vector<std::string>{program, "kustomize", in.path.string()}
                     : std::vector<std::string>{program, "build", in.path.string()};
      tool = kubectl ? "kubectl kustomize" : "kustomize build";
    }
    ToolRun run = run_tool(argv, options.timeout, options.max_output_bytes);
    if (!run.error.empty() || run.exit_code != 0) {
      std::string err = run.err;
      while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
      if (err.size() > 4000) err.resize(4000);
      std::string message = tool;
      message.append(run.error.empty() ? " failed (exit " + std::to_string(run.exit_code) + ")" : " " + run.error);
      if (!err.empty()) message.append(": ").append(err);
      diags.push_back({Severity::error, in.display, {}, std::move(message)});
      continue;
    }
    auto map = std::make_shared<SourceMap>();
    map->input = static_cast<uint32_t>(kept.size());
    map->tool = tool;
    map->rendered = std::make_shared<const std::string>(std::move(run.out));
    map->lines = split_lines(*map->rendered);
    if (chart) map_helm(*map, in.path);
    else map_kustomize(*map, in.path);
    in.text = map->rendered;
    kept.push_back(std::move(in));
    maps.push_back(std::move(map));
  }
  inputs = std::move(kept);
  return maps;
}

void map_to_sources(engine::Result& result, const std::vector<std::shared_ptr<const SourceMap>>& maps) {
  if (maps.empty()) return;
  std::map<uint32_t, const SourceMap*> by_input;
  for (const auto& m : maps) by_input[m->input] = m.get();
  // Where an object goes: its source's section; nullopt when not known.
  struct Placed {
    const SourceMap* map;
    const SourceMap::Doc* doc;
    const SourceText* src;
    uint32_t from, to;
  };
  auto place = [&](const engine::ObjectRef& o) -> std::optional<Placed> {
    if (o.id == engine::kNoObject || !o.source) return std::nullopt;
    auto it = by_input.find(o.source->index);
    if (it == by_input.end() || it->second->rendered == nullptr) return std::nullopt;
    const SourceMap& map = *it->second;
    if (o.source->path.empty()) return std::nullopt;
    const SourceMap::Doc* doc = map.doc_at(o.pos.line);
    if (!doc) return std::nullopt;
    auto sec = map.section(*doc, o);
    if (!sec) return std::nullopt;
    const auto& [s, from, to] = *sec;
    return Placed{&map, doc, &map.sources[static_cast<size_t>(s)], from, to};
  };
  auto is_rendered = [&](const engine::ObjectRef& o) { return o.source && by_input.count(o.source->index) != 0; };
  for (auto& f : result.findings) {
    if (f.object.id == engine::kNoObject || !is_rendered(f.object)) continue;
    const auto placed = place(f.object);
    const std::string where = "line " + std::to_string(f.pos.line) + " of the " + by_input[f.object.source->index]->tool + " output";
    if (!placed) {
      const auto* map = by_input[f.object.source->index];
      const auto* doc = map->doc_at(f.object.pos.line);
      f.message.append(" (rendered at ").append(where);
      if (doc && !doc->origin.empty()) f.message.append(", from ").append(doc->origin).append(", which is not a file here");
      f.message.append(")");
      continue;
    }
    const auto exact = exact_line(*placed->map, *placed->doc, f.pos, *placed->src, placed->from, placed->to);
    const Pos object_pos = first_line(*placed->src, placed->from, placed->to);
    f.message.append(" (rendered at ").append(where);
    if (!exact) f.message.append("; the object's first line here: the line of the node is not known");
    f.message.append(")");
    f.pos = exact ? *exact : object_pos;
    f.object.source = placed->src->ref;
    f.object.pos = object_pos;
  }
  for (auto& o : result.checked) {
    if (!is_rendered(o)) continue;
    if (const auto placed = place(o)) {
      o.pos = first_line(*placed->src, placed->from, placed->to);
      o.source = placed->src->ref;
    }
  }
  std::stable_sort(result.findings.begin(), result.findings.end(), [](const engine::Finding& a, const engine::Finding& b) {
    auto key = [](const engine::Finding& f) {
      const uint32_t file = f.object.source ? f.object.source->index : 0xFFFFFFFFu;
      static const std::string kNone;
      return std::make_tuple(file, std::cref(f.object.source ? f.object.source->path : kNone), f.pos.line, f.pos.col);
    };
    return key(a) < key(b);
  });
}

}  // namespace gpuguard::cli
