// gpuguard fix: the rules' fixes written back into the source files, changing only the lines the
// fixes concern. Each fix is mutate()'s RFC 6902 patch of an object; engine/source_edit.h turns
// its operations into edits of the object's text; the edited file is read again and must give
// exactly the fixed objects (and every other object as it was), else the objects it does not are
// left as they were and reported. Rendered charts and kustomizations are reported, never written.

#include "cli/fix.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "cli/commands.h"
#include "engine/evaluate.h"
#include "engine/inventory.h"
#include "engine/load.h"
#include "engine/mutate.h"
#include "engine/source_edit.h"
#include "engine/state.h"

namespace gpuguard::cli {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxFileBytes = size_t{256} << 20;

struct Change {
  size_t object = 0;  // index in the input's objects
  engine::json patch;
  engine::json fixed;
  std::vector<std::string> rules;
};

struct Loaded {
  engine::Input input;
  engine::SourceRef source;
  std::string text;
  engine::Syntax syntax = engine::Syntax::yaml;
  std::vector<engine::Object> objects;
  std::vector<Change> changes;
  size_t group = 0;  // its config's
};

struct Group {
  engine::Config config;
  std::vector<size_t> inputs;
};

bool read_text(const engine::Input& in, std::string& text, std::vector<engine::Diagnostic>& diags) {
  if (in.is_stdin) {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (std::cin.bad()) {
      diags.push_back({engine::Severity::error, in.display, {}, "cannot read standard input"});
      return false;
    }
  } else {
    std::error_code ec;
    const auto size = fs::file_size(in.path, ec);
    if (!ec && size > kMaxFileBytes) {
      diags.push_back({engine::Severity::error, in.display, {}, "input is over the size limit of 256 MiB"});
      return false;
    }
    std::ifstream f(in.path, std::ios::binary);
    if (!f) {
      diags.push_back({engine::Severity::error, in.display, {}, std::string("cannot open: ") + std::strerror(errno)});
      return false;
    }
    text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    if (f.bad()) {
      diags.push_back({engine::Severity::error, in.display, {}, "cannot read"});
      return false;
    }
  }
  if (text.size() > kMaxFileBytes) {
    diags.push_back({engine::Severity::error, in.display, {}, "input is over the size limit of 256 MiB"});
    return false;
  }
  return true;
}

// The name a diff gives a file: relative to the working directory when it is below it, else to
// its repository's root (the folder upward holding .git), else its path without the leading '/'.
std::string diff_name(const engine::Input& in) {
  if (in.is_stdin) return "<stdin>";
  std::error_code ec;
  const fs::path abs = fs::absolute(in.path, ec).lexically_normal();
  const fs::path cwd = fs::current_path(ec);
  fs::path rel = abs.lexically_relative(cwd);
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  for (fs::path dir = abs.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    if (fs::exists(dir / ".git", ec)) return abs.lexically_relative(dir).generic_string();
  }
  return abs.relative_path().generic_string();
}

// Writes `text` over `path` through a temporary file in the same folder, renamed over it, with the
// file's mode. The target of a symbolic link is written.
bool write_atomically(const fs::path& given, const std::string& text, std::string& error) {
  std::error_code ec;
  fs::path path = given;
  if (fs::is_symlink(path, ec)) path = fs::canonical(path, ec);
  if (ec) {
    error = ec.message();
    return false;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = std::strerror(errno);
    return false;
  }
  std::string tmpl = (path.parent_path() / ("." + path.filename().string() + ".gpuguard-fix-XXXXXX")).string();
  if (path.parent_path().empty()) tmpl = "." + path.filename().string() + ".gpuguard-fix-XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    error = std::string("cannot create a temporary file beside it: ") + std::strerror(errno);
    return false;
  }
  bool ok = true;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ok = false;
    else done += static_cast<size_t>(n);
  }
  if (ok && ::fchmod(fd, st.st_mode & 07777) != 0) ok = false;
  if (ok && ::fsync(fd) != 0) ok = false;
  if (!ok) error = std::strerror(errno);
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = std::strerror(errno);
  }
  if (ok && ::rename(name.data(), path.c_str()) != 0) {
    ok = false;
    error = std::strerror(errno);
  }
  if (!ok) ::unlink(name.data());
  return ok;
}

std::string short_patch(const engine::json& patch) {
  std::string s = patch.dump(-1, ' ', false, engine::json::error_handler_t::replace);
  if (s.size() > 300) {
    s.resize(300);
    s.append("…");
  }
  return s;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out.append(", ");
    out.append(s);
  }
  return out;
}

engine::Pos root_pos(const engine::Object& obj) {
  if (obj.positions) {
    const engine::Pos p = obj.positions->pos(obj.pos_root);
    if (p.known()) return p;
  }
  return obj.pos;
}

// The objects of `text` (a fixed file read again). A document that does not load is skipped, as in
// the input (whose broken documents stay as they were): what counts is that the objects are the same.
std::optional<std::vector<engine::json>> reload(const Loaded& l, const std::string& text) {
  std::vector<engine::json> bodies;
  std::vector<engine::Diagnostic> diags;
  engine::LoadOptions load;
  load.template_check = false;
  engine::load_text(text, l.source, load, [&](engine::Object&& o) { bodies.push_back(o.body()); }, diags, 0, 0, l.syntax);
  return bodies;
}

// Whether `text` reads as the input's objects with those in `fixed` (indices into changes) fixed.
bool reads_as(const Loaded& l, const std::string& text, const std::vector<size_t>& fixed) {
  const auto bodies = reload(l, text);
  if (!bodies || bodies->size() != l.objects.size()) return false;
  std::vector<const engine::json*> want(l.objects.size(), nullptr);
  for (const size_t c : fixed) want[l.changes[c].object] = &l.changes[c].fixed;
  for (size_t i = 0; i < bodies->size(); ++i) {
    if (want[i] ? (*bodies)[i] != *want[i] : (*bodies)[i] != l.objects[i].body()) return false;
  }
  return true;
}

}  // namespace

int run_fix(const FixOptions& opts, const engine::Registry& registry) {
  const std::string cmd = "gpuguard " + opts.command;
  if (opts.paths.empty()) {
    std::cerr << cmd << ": give files or folders, or - for stdin\n";
    return kExitUsage;
  }
  std::vector<engine::Diagnostic> diags;
  auto inputs = engine::expand_inputs(opts.paths, diags, true);
  size_t stdin_count = 0;
  for (const auto& in : inputs) stdin_count += in.is_stdin ? 1 : 0;
  if (stdin_count > 1) {
    std::cerr << cmd << ": - (stdin) may be given once\n";
    return kExitUsage;
  }

  // Charts and kustomizations are rendered to say what to fix in their templates.
  bool any_rendered = false;
  for (const auto& in : inputs) any_rendered = any_rendered || in.kind != engine::Input::Kind::file;
  std::vector<std::shared_ptr<const SourceMap>> maps;
  if (any_rendered) {
    RenderOptions render = opts.render;
    render.namespace_ = opts.namespace_;
    maps = render_inputs(inputs, render, diags);
  }

  // Config: the one given, else the one found upward from each input (stdin: the working folder).
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of_config;
  auto group_for = [&](const engine::Input& in) -> std::optional<size_t> {
    std::optional<fs::path> path;
    if (!opts.no_config) {
      if (!opts.config_path.empty()) {
        path = opts.config_path;
      } else {
        std::error_code ec;
        fs::path start = in.is_stdin ? fs::current_path(ec) : fs::absolute(in.path, ec);
        if (!in.is_stdin && !fs::is_directory(start, ec)) start = start.parent_path();
        path = engine::find_config_upward(start);
      }
    }
    const std::string key = path ? path->string() : std::string();
    auto it = group_of_config.find(key);
    if (it != group_of_config.end()) return it->second;
    engine::Config config = engine::default_config(registry);
    if (path) {
      auto loaded = engine::load_config_file(*path, registry);
      if (!loaded) {
        for (const auto& d : loaded.error()) diags.push_back(d);
        group_of_config[key] = SIZE_MAX;
        return std::nullopt;
      }
      config = std::move(*loaded);
    }
    if (!opts.namespace_.empty()) config.settings.default_namespace = opts.namespace_;
    config.webhook.mutate_templates = config.webhook.mutate_templates || opts.templates;
    groups.push_back(Group{std::move(config), {}});
    group_of_config[key] = groups.size() - 1;
    return groups.size() - 1;
  };

  std::vector<Loaded> loaded;
  loaded.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const auto g = group_for(inputs[i]);
    if (!g || *g == SIZE_MAX) continue;
    Loaded l;
    l.input = inputs[i];
    l.source = std::make_shared<engine::SourceFile>(engine::SourceFile{inputs[i].display, static_cast<uint32_t>(i)});
    engine::LoadOptions load;
    if (inputs[i].kind == engine::Input::Kind::file) {
      if (!read_text(inputs[i], l.text, diags)) continue;
    } else {
      if (!inputs[i].text) continue;  // not rendered: the diagnostic says why
      l.text = *inputs[i].text;
      load.template_check = false;
    }
    l.syntax = engine::input_syntax(inputs[i].display, l.text);
    engine::load_text(l.text, l.source, load, [&](engine::Object&& o) { l.objects.push_back(std::move(o)); }, diags, 0, 0,
                      l.syntax);
    l.group = *g;
    groups[*g].inputs.push_back(loaded.size());
    loaded.push_back(std::move(l));
  }

  std::shared_ptr<const engine::Inventory> state;
  if (!opts.state.empty() && !groups.empty()) {
    auto s = engine::load_state(opts.state, registry, groups.front().config);
    for (auto& d : s.diagnostics) diags.push_back(std::move(d));
    state = std::move(s.inventory);
  }

  // The fixes, per config: each object over the others of its group (and --state), as lint reads them.
  engine::RequestUser user{opts.as, opts.as_groups};
  const bool has_user = !opts.as.empty() || !opts.as_groups.empty();
  const std::set<std::string> only(opts.rules.begin(), opts.rules.end());
  for (const auto& r : only) {
    if (!registry.find(r)) {
      std::cerr << cmd << ": --rule " << r << ": no such rule (gpuguard rules lists them)\n";
      return kExitUsage;
    }
  }
  for (const auto& group : groups) {
    const engine::Config& config = group.config;
    auto inv = std::make_shared<engine::Inventory>(
        state ? engine::Inventory::layered(state) : engine::Inventory(engine::kinds_read(registry, config)));
    inv->set_complete(opts.complete);
    uint32_t id = 0;
    for (const size_t li : group.inputs) {
      for (auto& o : loaded[li].objects) {
        o.id = id++;
        if (o.is_kubernetes_object())
          inv->add(std::make_shared<engine::Object>(o), engine::effective_namespace(o, config));
      }
    }
    const std::shared_ptr<const engine::Plan> plan = engine::mutation_plan(registry, config, only);
    if (!plan) continue;
    for (const size_t li : group.inputs) {
      Loaded& l = loaded[li];
      for (size_t oi = 0; oi < l.objects.size(); ++oi) {
        const engine::Object& obj = l.objects[oi];
        if (!obj.is_kubernetes_object() || !engine::mutation_applies(obj, config.webhook, true)) continue;
        auto base = std::make_shared<engine::Inventory>(engine::Inventory::layered(inv));
        base->remove(obj.gvk.group, obj.gvk.kind, engine::effective_namespace(obj, config), obj.name);
        engine::MutateOptions mo;
        mo.base = std::move(base);
        mo.complete = opts.complete || (state && state->complete());
        mo.only_rules = only;
        mo.plan = plan;
        mo.annotations = engine::AnnotationExemptions::admission;
        mo.user = has_user ? &user : nullptr;
        engine::MutateResult m = engine::mutate(obj, registry, config, mo);
        for (auto& d : m.diagnostics) diags.push_back(std::move(d));
        if (m.patch.empty()) continue;
        l.changes.push_back(Change{oi, std::move(m.patch), std::move(m.object), std::move(m.rules)});
      }
    }
  }

  bool changed_any = false;
  bool by_hand = false;
  auto note = [&](const std::string& where, const std::string& what) { std::cerr << where << ": " << what << "\n"; };
  for (auto& l : loaded) {
    if (l.changes.empty()) {
      if (l.input.is_stdin && !opts.dry_run) std::cout << l.text;
      continue;
    }
    if (l.input.kind != engine::Input::Kind::file) {
      // Rendered: each fix goes to the template that made the object, by hand.
      engine::Result res;
      for (const auto& c : l.changes) {
        const engine::Object& obj = l.objects[c.object];
        engine::Finding f;
        f.rule = join(c.rules);
        f.object.id = obj.id;
        f.object.document = obj.document;
        f.object.source = obj.source;
        f.object.pos = obj.pos;
        f.object.identity = std::make_shared<engine::ObjectIdentity>(engine::ObjectIdentity{
            obj.item_pointer, obj.api_version, obj.gvk.kind, obj.namespace_, obj.name, obj.id, obj.document});
        f.pointer = c.patch.empty() ? std::string() : c.patch[0].value("path", "");
        f.pos = obj.position_of(f.pointer);
        f.message = obj.display_name() + ": " + short_patch(c.patch);
        res.findings.push_back(std::move(f));
      }
      map_to_sources(res, maps);
      for (const auto& f : res.findings) {
        const std::string file = f.object.source ? f.object.source->path : l.input.display;
        note(file + ":" + std::to_string(f.pos.line), "warning: fix by hand (" + f.rule + ", in a rendered " +
                                                          (l.input.kind == engine::Input::Kind::chart ? "chart" : "kustomization") +
                                                          ", not rewritten): " + f.message);
      }
      by_hand = true;
      if (l.input.is_stdin && !opts.dry_run) std::cout << l.text;
      continue;
    }

    // Source edits, per changed object.
    const engine::YamlSource src(l.text, l.syntax == engine::Syntax::json);
    std::vector<std::vector<engine::TextEdit>> edits(l.changes.size());
    std::vector<size_t> ok;
    for (size_t c = 0; c < l.changes.size(); ++c) {
      const engine::Object& obj = l.objects[l.changes[c].object];
      const engine::Pos at = root_pos(obj);
      const std::string where = l.input.display + ":" + std::to_string(at.line);
      const std::string what = obj.display_name() + " (" + join(l.changes[c].rules) + ")";
      auto refuse = [&](const std::string& why) {
        note(where, "warning: " + what + " not rewritten: " + why + "; fix by hand (gpuguard mutate --diff shows the fix)");
        by_hand = true;
      };
      if (!src.error().empty()) {
        refuse("the file cannot be edited: " + src.error());
        continue;
      }
      const int node = src.node_at(at);
      if (node < 0) {
        refuse("the object's mapping was not found in the text");
        continue;
      }
      uint32_t anchor_line = 0;
      if (src.uses_anchors(node, anchor_line)) {
        refuse("it uses YAML anchors, aliases or merge keys (line " + std::to_string(anchor_line) + ")");
        continue;
      }
      std::string error;
      uint32_t line = 0;
      if (!src.edits_for(node, l.changes[c].patch, edits[c], error, line)) {
        refuse(error + " (line " + std::to_string(line) + ")");
        continue;
      }
      ok.push_back(c);
    }
    // All at once; if the result does not read as intended, halves of them, down to the objects
    // whose own edits do not (so one such object among n costs about 2 log2 n readings, not n).
    auto combine = [&](const std::vector<size_t>& which) {
      std::vector<engine::TextEdit> all;
      for (const size_t c : which) all.insert(all.end(), edits[c].begin(), edits[c].end());
      return engine::apply_edits(l.text, std::move(all));
    };
    std::optional<std::string> fixed = ok.empty() ? std::optional<std::string>(l.text) : combine(ok);
    if (!ok.empty() && (!fixed || !reads_as(l, *fixed, ok))) {
      std::vector<size_t> good;
      std::vector<std::vector<size_t>> todo{ok};
      while (!todo.empty()) {
        std::vector<size_t> which = std::move(todo.back());
        todo.pop_back();
        if (which.size() < ok.size()) {
          const auto text = combine(which);
          if (text && reads_as(l, *text, which)) {
            good.insert(good.end(), which.begin(), which.end());
            continue;
          }
        }
        if (which.size() > 1) {
          const auto half = static_cast<std::ptrdiff_t>(which.size() / 2);
          todo.emplace_back(which.begin() + half, which.end());
          todo.emplace_back(which.begin(), which.begin() + half);
          continue;
        }
        const size_t c = which.front();
        const engine::Object& obj = l.objects[l.changes[c].object];
        note(l.input.display + ":" + std::to_string(root_pos(obj).line),
             "warning: " + obj.display_name() + " (" + join(l.changes[c].rules) +
                 ") not rewritten: its layout could not be edited so that it reads as the fix intends; fix by hand "
                 "(gpuguard mutate --diff shows the fix)");
        by_hand = true;
      }
      std::sort(good.begin(), good.end());
      ok = good;
      fixed = ok.empty() ? std::optional<std::string>(l.text) : combine(ok);
      if (!ok.empty() && (!fixed || !reads_as(l, *fixed, ok))) {
        note(l.input.display, "warning: the fixes of this file could not be written together; fix by hand");
        by_hand = true;
        ok.clear();
        fixed = l.text;
      }
    }
    for (const size_t c : ok) {
      const engine::Object& obj = l.objects[l.changes[c].object];
      note(l.input.display + ":" + std::to_string(root_pos(obj).line),
           std::string(opts.dry_run ? "would fix " : "fixed ") + obj.display_name() + " (" + join(l.changes[c].rules) + ")");
    }
    if (!ok.empty()) changed_any = true;
    if (opts.dry_run) {
      const std::string name = diff_name(l.input);
      std::cout << engine::file_diff(l.text, *fixed, l.input.is_stdin ? name : "a/" + name,
                                     l.input.is_stdin ? name : "b/" + name);
    } else if (l.input.is_stdin) {
      std::cout << *fixed;
    } else if (!ok.empty()) {
      std::string error;
      if (!write_atomically(l.input.path, *fixed, error))
        diags.push_back({engine::Severity::error, l.input.display, {}, "cannot write: " + error});
    }
  }

  bool errors = false;
  for (const auto& d : diags) {
    std::cerr << (d.file.empty() ? std::string("gpuguard") : d.file);
    if (d.pos.known()) std::cerr << ":" << d.pos.line << ":" << d.pos.col;
    std::cerr << ": " << engine::to_string(d.severity) << ": " << d.message << "\n";
    errors = errors || d.severity == engine::Severity::error;
  }
  if (errors) return kExitUsage;
  return opts.exit_code && (changed_any || by_hand) ? kExitFindings : kExitOk;
}

void add_fix_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto opts = std::make_shared<FixOptions>();
  auto* sub = app.add_subcommand(
      "fix", "Write the rules' fixes into the files, changing only the lines they concern (charts and overlays: reported)");
  sub->add_option("paths", opts->paths, "files or folders; - reads stdin and writes the fixed stream to stdout");
  sub->add_option("-c,--config", opts->config_path, "config file (default: .gpuguard.yaml found upward from each path)");
  sub->add_flag("--no-config", opts->no_config, "ignore any .gpuguard.yaml");
  sub->add_option("--state", opts->state, "cluster state the fixes may read (namespace defaults): files or folders");
  sub->add_flag("--complete", opts->complete, "the input (with --state) is the whole cluster");
  sub->add_flag("--dry-run", opts->dry_run, "print a unified diff (git apply, patch -p1) and change nothing");
  sub->add_flag("--exit-code", opts->exit_code, "exit 1 when something was (or would be) changed or is left to fix by hand");
  sub->add_option("--rule", opts->rules, "only this rule's fixes (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("-n,--namespace", opts->namespace_, "namespace of objects that do not name one")->check(namespace_name());
  sub->add_option("--as", opts->as, "the user admission would see, for webhook.exemptions.allow's users");
  sub->add_option("--as-group", opts->as_groups, "a group of that user (repeatable)")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--helm", opts->render.helm, "helm program that renders charts (to report their fixes)");
  sub->add_option("--kustomize", opts->render.kustomize, "kubectl or kustomize program that builds overlays (to report their fixes)");
  sub->callback([opts, &registry, &exit_code] { exit_code = run_fix(*opts, registry); });
}

}  // namespace gpuguard::cli
