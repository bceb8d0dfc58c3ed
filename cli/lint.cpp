// gpuguard lint: the offline linter.

#include <unistd.h>
#if defined(__GLIBC__) && !defined(GPUGUARD_JEMALLOC)
#include <malloc.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <thread>
#include <unordered_map>

#include "cli/commands.h"
#include "cli/lint.h"
#include "cli/output.h"
#include "cli/render.h"
#include "engine/evaluate.h"
#include "engine/kinds.h"
#include "engine/load.h"
#include "engine/node.h"
#include "engine/schema.h"

namespace gpuguard::cli {

namespace {

// Whether a run frees what it made before the process ends. The sanitizer builds do, so that
// LeakSanitizer checks every run of the test suite; the others leave it to the end of the process,
// which takes the pages back at once (freeing a 100,000-object run's kept objects, findings and
// rule states one by one took a quarter of a second), as compilers do with their ASTs.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kTeardown = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kTeardown = true;
#else
constexpr bool kTeardown = false;
#endif
#else
constexpr bool kTeardown = false;
#endif

struct LintOptions {
  std::vector<std::string> paths;
  std::string config_path;
  bool no_config = false;
  bool print_config = false;
  ReportOptions report;
  bool complete = false;
  std::string namespace_;
  size_t max_file_mb = 256;
  std::string schemas;
  std::string schemas_missing;  // --schemas-missing: error, warn, ignore; "" leaves the config's schema-missing
  unsigned jobs = 0;
  RenderOptions render;
  unsigned render_timeout = 120;
  std::string cluster;         // --cluster NAME
  bool one_inventory = false;  // --one-inventory
  bool include_owned = false;  // --include-owned
  bool allow_empty = false;    // --allow-empty
};

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (std::getenv("NO_COLOR")) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  return isatty(STDOUT_FILENO) != 0;
}

// What every scope's evaluation shares.
struct ScopeParams {
  bool complete = false;
  unsigned jobs = 0;
  size_t max_file_mb = 256;
  bool list_checked = false;
  bool no_annotation_exemptions = false;
  bool skip_owned_stdin = false;  // leave out the controller-owned Pods and ReplicaSets read from stdin
  std::shared_ptr<const engine::Plan> plan;  // made for the scope's config and shared by its scopes, or null
};

// What one scope's evaluation gave.
struct ScopeOutcome {
  engine::Result result;
  std::vector<size_t> objects;  // objects added, per input
  size_t skipped = 0;           // controller-owned objects left out
};

// A Pod or ReplicaSet whose controller (ownerReferences, controller: true) is a kind with a pod
// template: the template is linted on the controller, so the object would only repeat its findings
// (what `gpuguard audit` leaves out).
bool made_by_controller(const engine::Object& obj) {
  if (!(obj.is("", "Pod") || obj.is("apps", "ReplicaSet"))) return false;
  const engine::Node refs = obj.metadata()["ownerReferences"];
  if (!refs.is_array()) return false;
  const auto& kinds = engine::pod_template_kinds();
  for (const engine::Node ref : refs) {
    if (!ref.is_object() || !engine::bool_at(ref, "controller").value_or(false)) continue;
    const auto api = engine::string_at(ref, "apiVersion");
    const auto kind = engine::string_at(ref, "kind");
    if (!api || !kind) continue;
    const engine::Gvk gvk = engine::parse_gvk(*api, *kind);
    if (std::find(kinds.begin(), kinds.end(), engine::KindRef{gvk.group, gvk.kind}) != kinds.end()) return true;
  }
  return false;
}

ScopeOutcome evaluate_scope(const std::vector<engine::Input>& inputs, const engine::Config& config, const engine::Registry& registry,
                            const ScopeParams& params, std::vector<engine::Diagnostic> diags,
                            const std::vector<std::shared_ptr<const SourceMap>>& maps) {
#if defined(__GLIBC__) && !defined(GPUGUARD_JEMALLOC)
  // With glibc's malloc: blocks of 256 KiB and more (the growing vectors of findings and rule projections) come from
  // mmap and go back to the system when freed; glibc would otherwise raise this threshold to 32 MiB
  // after the first such free and leave the old copies of grown vectors as holes in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  ScopeOutcome outcome;
  outcome.objects.assign(inputs.size(), 0);
  engine::LoadOptions load;
  load.max_file_bytes = params.max_file_mb << 20;
  unsigned jobs = params.jobs;
  if (jobs == 0) jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  engine::EvalOptions eval_options{params.complete, nullptr, false, {}, jobs};
  eval_options.plan = params.plan;
  eval_options.teardown = kTeardown;
  eval_options.list_checked = params.list_checked;
  if (params.no_annotation_exemptions) eval_options.annotations = engine::AnnotationExemptions::never;
  auto evaluation = std::make_unique<engine::Evaluation>(registry, config, std::move(eval_options));
  engine::Evaluation& eval = *evaluation;
  // Controller-owned Pods and ReplicaSets read from stdin are left out before any rule sees them,
  // so they are checked in input order here, not ahead on the parsing threads.
  const bool skip_owned = params.skip_owned_stdin && std::any_of(inputs.begin(), inputs.end(), [](const engine::Input& in) { return in.is_stdin; });
  auto on_object = [&](engine::Object&& o) {
    const uint32_t input = o.source ? o.source->index : 0xFFFFFFFFu;
    if (skip_owned && input < inputs.size() && inputs[input].is_stdin && made_by_controller(o)) {
      ++outcome.skipped;
      return;
    }
    if (input < outcome.objects.size()) ++outcome.objects[input];
    eval.add(std::move(o));
  };
  std::function<void(std::span<engine::Object>, size_t)> on_parsed;
  if (!skip_owned) on_parsed = [&](std::span<engine::Object> objects, size_t from) { eval.precheck(objects, from); };
  const unsigned used = engine::load_inputs(inputs, load, jobs, on_object, diags, on_parsed);
  eval.set_jobs(used);  // an input read on one thread is finished on one
  eval.add_diagnostics(std::move(diags));
  auto finished = std::make_unique<engine::Result>(eval.finish());
  // An ignore annotation that was not honoured (--no-annotation-exemptions) is said in the
  // finding's message, in every format.
  if (params.no_annotation_exemptions)
    for (auto& f : finished->findings)
      if (!f.suppressed && f.annotation == engine::Finding::Annotation::not_honoured)
        f.message.append(" (").append(f.suppression).append(")");
  // Findings on rendered charts and kustomizations go to their templates and resource files.
  map_to_sources(*finished, maps);
  if (!kTeardown) (void)evaluation.release();  // left to the end of the process (see kTeardown)  NOLINT(bugprone-unused-return-value)
  outcome.result = std::move(*finished);
  return outcome;
}

// Writes every report of `result`; the exit code (0, 1 findings, 2 input errors).
int write_reports(const engine::Result& result, ReportContext& ctx, const Outputs& outputs, const ReportOptions& opts,
                  const char* command) {
  bool reports_ok = true;
  for (const auto& [format, path] : outputs) {
    if (path.empty()) {
      ctx.color = format == "text" && use_color(opts.color);
      write_report(format, result, ctx, std::cout);
      continue;
    }
    ctx.color = false;
    std::ofstream out(path, std::ios::binary);
    write_report(format, result, ctx, out);
    out.close();
    if (!out) {
      std::cerr << "gpuguard " << command << ": cannot write " << path << "\n";
      reports_ok = false;
    }
  }
  if (!reports_ok) return kExitUsage;

  for (const auto& d : result.diagnostics)
    if (d.severity == engine::Severity::error) return kExitUsage;
  if (opts.fail_on == "none") return kExitOk;
  const engine::Severity threshold = *engine::parse_severity(opts.fail_on);
  for (const auto& f : result.findings)
    if (!f.suppressed && f.severity >= threshold) return kExitFindings;
  return kExitOk;
}

namespace fs = std::filesystem;

// One inventory: inputs linted together, under one config, apart from every other scope's.
struct Scope {
  std::string label;  // "cluster prod", the path, or "the paths given"
  std::shared_ptr<const engine::Config> config;
  bool complete = false;
  std::vector<engine::Input> inputs;
  std::vector<std::string> keys;             // each input's identity (input_key), to list it once
  std::unordered_map<std::string, size_t> index;  // key → input
  std::vector<std::vector<size_t>> origins;  // the command line's paths each input came from
};

// A path's identity: absolute and canonical as far as it exists.
std::string path_key(const fs::path& p) {
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  if (ec) return p.lexically_normal().string();
  const fs::path canon = fs::weakly_canonical(abs, ec);
  return (ec ? abs.lexically_normal() : canon).string();
}
std::string input_key(const engine::Input& in) { return in.is_stdin ? std::string("-") : path_key(in.path); }

// Whether `key` is `folder` or below it (both path_key's).
bool within(std::string_view key, std::string_view folder) {
  if (!key.starts_with(folder)) return false;
  return key.size() == folder.size() || folder.ends_with('/') || key[folder.size()] == '/';
}

// The configs of a run, each loaded once, by their file's path_key ("" for the built-in defaults).
class Configs {
 public:
  explicit Configs(const engine::Registry& registry) : registry_(registry) {}
  // Null after printing the config's problems.
  std::shared_ptr<const engine::Config> get(const std::optional<fs::path>& file) {
    const std::string key = file ? path_key(*file) : std::string();
    if (auto it = loaded_.find(key); it != loaded_.end()) return it->second;
    std::shared_ptr<const engine::Config> config;
    if (!file) {
      config = std::make_shared<const engine::Config>(engine::default_config(registry_));
    } else {
      auto loaded = engine::load_config_file(*file, registry_);
      if (!loaded) {
        print_diagnostics(loaded.error());
        return nullptr;
      }
      config = std::make_shared<const engine::Config>(std::move(*loaded));
      // Each cluster's paths, as keys (once per config).
      auto& folders = folders_[config.get()];
      for (const auto& c : config->clusters) {
        folders.emplace_back();
        for (const auto& p : c.resolved) folders.back().push_back(path_key(p));
      }
    }
    loaded_.emplace(key, config);
    return config;
  }
  // The clusters of `config` whose paths hold the input with this key.
  std::vector<const engine::ClusterScope*> clusters_of(const engine::Config& config, std::string_view key) const {
    std::vector<const engine::ClusterScope*> out;
    auto it = folders_.find(&config);
    if (it == folders_.end()) return out;
    for (size_t i = 0; i < config.clusters.size() && i < it->second.size(); ++i)
      for (const auto& folder : it->second[i])
        if (within(key, folder)) {
          out.push_back(&config.clusters[i]);
          break;
        }
    return out;
  }

 private:
  const engine::Registry& registry_;
  std::map<std::string, std::shared_ptr<const engine::Config>> loaded_;
  std::map<const engine::Config*, std::vector<std::vector<std::string>>> folders_;
};

// The config file a path is linted under: --config, else the nearest .gpuguard.yaml upward from the
// path's folder (the working directory for stdin); none with --no-config.
std::optional<fs::path> config_file_for(const std::string& path, const LintOptions& opts) {
  if (opts.no_config) return std::nullopt;
  if (!opts.config_path.empty()) return fs::path(opts.config_path);
  std::error_code ec;
  fs::path start;
  if (path == "-") start = fs::current_path(ec);
  else if (fs::is_directory(path, ec)) start = path;
  else start = fs::path(path).parent_path();
  if (start.empty()) start = ".";
  return engine::find_config_upward(start);
}

// A cluster's path as the command line would name it: relative to the working directory when below it.
std::string display_path(const fs::path& p) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec || !p.is_absolute()) return p.string();
  const fs::path rel = p.lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return p.string();
  return rel.string();
}

int run_lint(const LintOptions& opts, const engine::Registry& registry) {
  Configs configs(registry);
  std::shared_ptr<const engine::SchemaStore> schemas;
  if (!opts.schemas.empty()) {
    std::vector<engine::Diagnostic> schema_diags;
    schemas = engine::SchemaStore::load(opts.schemas, schema_diags);
    if (!schema_diags.empty() || schemas->kinds() == 0) {
      print_diagnostics(schema_diags);
      if (schemas->kinds() == 0) std::cerr << opts.schemas << ": no schema found (JSON definitions or CRD YAML files)\n";
      return kExitUsage;
    }
  }
  // A scope's config: the file's, with a cluster's rules and the command line's namespace and schemas.
  // One per config and cluster, shared by their scopes (a run of 5,000 files given as paths has 5,000).
  std::map<std::pair<const engine::Config*, const engine::ClusterScope*>, std::shared_ptr<const engine::Config>> made;
  auto scope_config = [&](const engine::Config& base, const engine::ClusterScope* cluster) {
    auto& slot = made[{&base, cluster}];
    if (slot) return slot;
    auto c = std::make_shared<engine::Config>(base);
    if (cluster && cluster->rules) c->rules = *cluster->rules;
    if (!opts.namespace_.empty()) c->settings.default_namespace = opts.namespace_;
    if (schemas) c->settings.schemas = schemas;
    // --schemas-missing: what an object no schema describes is (rule schema-missing).
    if (!opts.schemas_missing.empty())
      if (auto it = c->rules.find("schema-missing"); it != c->rules.end()) {
        it->second.enabled = opts.schemas_missing != "ignore";
        if (opts.schemas_missing == "error") it->second.severity = engine::Severity::error;
        if (opts.schemas_missing == "warn") it->second.severity = engine::Severity::warning;
      }
    slot = std::move(c);
    return slot;
  };

  // The paths, and the config everything is linted under when one is forced (--cluster).
  std::vector<std::string> paths = opts.paths;
  std::shared_ptr<const engine::Config> common;  // the one config of every path (--cluster; no path given)
  std::shared_ptr<const engine::Config> forced;  // the one config of every scope (--cluster)
  const engine::ClusterScope* forced_cluster = nullptr;
  if (!opts.cluster.empty() || paths.empty()) {
    std::optional<fs::path> file;
    if (!opts.no_config) {
      std::error_code ec;
      file = opts.config_path.empty() ? engine::find_config_upward(fs::current_path(ec)) : std::optional<fs::path>(opts.config_path);
    }
    auto base = configs.get(file);
    if (!base) return kExitUsage;
    common = base;
    if (!opts.cluster.empty()) {
      forced_cluster = base->cluster(opts.cluster);
      if (!forced_cluster) {
        std::string names;
        for (const auto& c : base->clusters) names.append(names.empty() ? "" : ", ").append(c.name);
        std::cerr << "gpuguard lint: --cluster " << opts.cluster << ": ";
        if (!file) std::cerr << "no .gpuguard.yaml declares clusters (none found upward from the working directory; give --config FILE)\n";
        else if (names.empty()) std::cerr << file->string() << " declares no clusters\n";
        else std::cerr << "no such cluster in " << file->string() << " (its clusters: " << names << ")\n";
        return kExitUsage;
      }
      forced = scope_config(*base, forced_cluster);
      if (paths.empty())
        for (const auto& p : forced_cluster->resolved) paths.push_back(display_path(p));
    } else if (opts.print_config || base->clusters.empty()) {
      forced = scope_config(*base, nullptr);
    } else {
      // No path, and the config declares clusters: every cluster, each its own scope.
      for (const auto& c : base->clusters)
        for (const auto& p : c.resolved)
          if (std::find(paths.begin(), paths.end(), display_path(p)) == paths.end()) paths.push_back(display_path(p));
    }
  }
  if (opts.print_config) {
    if (!forced) {
      auto base = configs.get(config_file_for(paths.front(), opts));
      if (!base) return kExitUsage;
      forced = scope_config(*base, nullptr);
    }
    std::cout << engine::print_config(*forced, registry);
    return kExitOk;
  }
  if (paths.empty()) {
    std::cerr << "gpuguard lint: give files or folders to lint, or - for stdin\n";
    return kExitUsage;
  }
  auto outputs = parse_outputs(opts.report, "lint");
  if (!outputs) return kExitUsage;

  // The scopes, in the order their first input comes, each by its config and name.
  std::vector<Scope> scopes;
  std::map<std::pair<const engine::Config*, std::string>, size_t> scope_index;
  auto scope_for = [&](const engine::Config* base, const std::string& name, const engine::ClusterScope* cluster,
                       std::string label) -> Scope& {
    auto [it, added] = scope_index.emplace(std::make_pair(base, name), scopes.size());
    if (added) {
      Scope s;
      s.label = std::move(label);
      s.config = forced ? forced : scope_config(*base, cluster);
      s.complete = opts.complete || (cluster && cluster->complete);
      scopes.push_back(std::move(s));
    }
    return scopes[it->second];
  };
  std::vector<engine::Diagnostic> diags;  // of the paths themselves
  std::vector<bool> folder_path(paths.size(), false);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    std::shared_ptr<const engine::Config> base = common;
    if (!base) base = configs.get(config_file_for(p, opts));
    if (!base) return kExitUsage;
    const size_t before = diags.size();
    auto inputs = engine::expand_inputs({p}, diags, true);
    std::error_code ec;
    folder_path[i] = p != "-" && fs::is_directory(p, ec);
    if (inputs.empty() && diags.size() == before && folder_path[i] && !opts.allow_empty)
      diags.push_back({engine::Severity::error, p, {},
                       "no Kubernetes manifests under " + p + ": no *.yaml, *.yml or *.json file, Helm chart or Kustomize folder "
                       "(--allow-empty lints nothing without an error)"});
    for (auto& in : inputs) {
      const std::string key = input_key(in);
      std::vector<Scope*> into;
      if (forced_cluster) {
        into.push_back(&scope_for(base.get(), "cluster:" + forced_cluster->name, forced_cluster, "cluster " + forced_cluster->name));
      } else {
        for (const auto* c : configs.clusters_of(*base, key))
          into.push_back(&scope_for(base.get(), "cluster:" + c->name, c, "cluster " + c->name));
        if (into.empty()) {
          const bool one = opts.one_inventory || base->one_inventory;
          if (one) into.push_back(&scope_for(base.get(), "*", nullptr, "the paths given"));
          else into.push_back(&scope_for(base.get(), "path:" + std::to_string(i), nullptr, p == "-" ? std::string("<stdin>") : p));
        }
      }
      for (Scope* s : into) {
        auto [at, added] = s->index.emplace(key, s->inputs.size());
        if (added) {
          s->inputs.push_back(in);
          s->keys.push_back(key);
          s->origins.push_back({i});
        } else {
          s->origins[at->second].push_back(i);
        }
      }
    }
  }

  RenderOptions render = opts.render;
  render.namespace_ = opts.namespace_;
  render.max_output_bytes = opts.max_file_mb << 20;
  render.timeout = std::chrono::seconds(opts.render_timeout);
  ScopeParams params;
  params.jobs = opts.jobs;
  params.max_file_mb = opts.max_file_mb;
  params.list_checked = std::any_of(outputs->begin(), outputs->end(), [](const auto& o) { return o.first == "junit"; });
  params.no_annotation_exemptions = opts.report.no_annotation_exemptions;
  params.skip_owned_stdin = !opts.include_owned;

  // Each scope evaluated on its own; one report of them all, scope after scope. An input in two
  // scopes (a folder two clusters list) is linted in each; a finding both give is reported once.
  auto merged = std::make_unique<engine::Result>();
  std::set<std::string> seen_findings, seen_diags, seen_checked, counted;
  std::vector<size_t> objects_by_path(paths.size(), 0);
  std::vector<std::string> files;
  size_t skipped = 0;
  auto finding_key = [](const engine::Finding& f) {
    std::string k;
    const std::string& file = f.object.source ? f.object.source->path : std::string();
    k.reserve(f.rule.size() + file.size() + f.pointer.size() + f.message.size() + 48);
    k.append(f.rule).append(1, '\0').append(file).append(1, '\0').append(std::to_string(f.pos.line)).append(1, ':');
    k.append(std::to_string(f.pos.col)).append(1, '\0').append(std::to_string(f.object.document)).append(1, '\0');
    k.append(f.object.item_pointer()).append(1, '\0').append(f.pointer).append(1, '\0').append(f.message);
    k.append(f.suppressed ? "\1" : "\2");
    return k;
  };
  std::map<const engine::Config*, std::shared_ptr<const engine::Plan>> plans;
  for (Scope& scope : scopes) {
    std::vector<engine::Diagnostic> scope_diags;
    const auto maps = render_inputs(scope.inputs, render, scope_diags);
    params.complete = scope.complete;
    // The plan of the scope's config, made once (the rules and what they read depend on nothing else).
    auto& plan = plans[scope.config.get()];
    if (!plan) plan = std::make_shared<const engine::Plan>(registry, *scope.config);
    params.plan = plan;
    ScopeOutcome out = evaluate_scope(scope.inputs, *scope.config, registry, params, std::move(scope_diags), maps);
    skipped += out.skipped;
    for (size_t j = 0; j < scope.inputs.size(); ++j) {
      for (size_t origin : scope.origins[j]) objects_by_path[origin] += out.objects[j];
      if (!counted.insert(scope.keys[j]).second) continue;  // linted in an earlier scope too
      files.push_back(scope.inputs[j].display);
      merged->objects += out.objects[j];
    }
    if (scopes.size() == 1) {
      merged->findings = std::move(out.result.findings);
      merged->diagnostics = std::move(out.result.diagnostics);
      merged->checked = std::move(out.result.checked);
      continue;
    }
    for (auto& f : out.result.findings) {
      // A finding on the inventory as a whole ("no PriorityClass") names the one it is about.
      if (f.object.id == engine::kNoObject) f.message.append(" (inventory: ").append(scope.label).append(")");
      if (seen_findings.insert(finding_key(f)).second) merged->findings.push_back(std::move(f));
    }
    for (auto& d : out.result.diagnostics) {
      std::string key = d.file;
      key.append(1, '\0').append(std::to_string(d.pos.line)).append(1, ':').append(std::to_string(d.pos.col)).append(1, '\0').append(d.message);
      if (seen_diags.insert(key).second) merged->diagnostics.push_back(std::move(d));
    }
    for (auto& o : out.result.checked) {
      std::string key = o.source ? o.source->path : std::string();
      key.append(1, '\0').append(std::to_string(o.document)).append(1, '\0').append(o.item_pointer());
      if (seen_checked.insert(key).second) merged->checked.push_back(std::move(o));
    }
  }
  // A folder whose files hold no document at all: nothing was linted there.
  for (size_t i = 0; i < paths.size(); ++i) {
    if (!folder_path[i] || objects_by_path[i] != 0 || opts.allow_empty) continue;
    bool listed = false, plain = true;
    for (const auto& s : scopes)
      for (size_t j = 0; j < s.inputs.size(); ++j)
        if (std::find(s.origins[j].begin(), s.origins[j].end(), i) != s.origins[j].end()) {
          listed = true;
          plain = plain && s.inputs[j].kind == engine::Input::Kind::file;
        }
    const bool errors = std::any_of(merged->diagnostics.begin(), merged->diagnostics.end(), [&](const engine::Diagnostic& d) {
      return d.severity == engine::Severity::error && within(d.file, paths[i]);
    });
    if (listed && plain && !errors)
      diags.push_back({engine::Severity::error, paths[i], {},
                       "no Kubernetes manifests under " + paths[i] + ": its files hold no YAML or JSON document "
                       "(--allow-empty lints nothing without an error)"});
  }
  for (auto& d : diags) merged->diagnostics.push_back(std::move(d));
  if (skipped > 0)
    std::cerr << "gpuguard lint: skipped " << skipped << (skipped == 1 ? " Pod or ReplicaSet" : " Pods and ReplicaSets")
              << " made by a controller from stdin (linted on the controller's template; --include-owned lints them)\n";

  ReportContext ctx;
  ctx.registry = &registry;
  ctx.files = std::move(files);
  ctx.show_suppressed = opts.report.show_suppressed;
  const int code = write_reports(*merged, ctx, *outputs, opts.report, "lint");
  if (!kTeardown) (void)merged.release();  // left to the end of the process (see kTeardown)  NOLINT(bugprone-unused-return-value)
  return code;
}

}  // namespace

void print_diagnostics(const std::vector<engine::Diagnostic>& diags) {
  for (const auto& d : diags)
    std::cerr << location(d) << ": " << engine::to_string(d.severity) << ": " << d.message << "\n";
}

std::optional<engine::Config> load_run_config(const std::string& config_path, bool no_config, const engine::Registry& registry) {
  // --config, or the nearest .gpuguard.yaml upward from the working directory.
  engine::Config config = engine::default_config(registry);
  if (no_config) return config;
  std::optional<std::filesystem::path> path;
  if (!config_path.empty()) path = config_path;
  else path = engine::find_config_upward(std::filesystem::current_path());
  if (!path) return config;
  auto loaded = engine::load_config_file(*path, registry);
  if (!loaded) {
    print_diagnostics(loaded.error());
    return std::nullopt;
  }
  return std::move(*loaded);
}

std::optional<Outputs> parse_outputs(const ReportOptions& opts, const char* command) {
  // --format name[=path], repeatable; at most one goes to stdout.
  Outputs outputs;
  int to_stdout = 0;
  for (const auto& f : opts.formats) {
    auto eq = f.find('=');
    std::string name = f.substr(0, eq), path = eq == std::string::npos ? "" : f.substr(eq + 1);
    if (std::find(std::begin(kFormats), std::end(kFormats), name) == std::end(kFormats)) {
      std::cerr << "gpuguard " << command << ": unknown format \"" << name << "\" (text, json, sarif, junit, github, policyreport)\n";
      return std::nullopt;
    }
    if (eq != std::string::npos && path.empty()) {
      std::cerr << "gpuguard " << command << ": --format " << name << "= needs a file name\n";
      return std::nullopt;
    }
    // Two reports into one file: the second would silently replace the first.
    auto same_file = [](const std::string& a, const std::string& b) {
      if (a == b) return true;
      std::error_code ec;
      if (std::filesystem::equivalent(a, b, ec) && !ec) return true;  // both exist: hard links, /dev/stdout
      std::error_code ea, eb;
      const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
      return !ea && !eb && ca == cb;
    };
    for (const auto& [other_name, other_path] : outputs)
      if (!path.empty() && !other_path.empty() && same_file(other_path, path)) {
        std::cerr << "gpuguard " << command << ": --format " << other_name << " and --format " << name << " both write " << path << "\n";
        return std::nullopt;
      }
    to_stdout += path.empty() ? 1 : 0;
    outputs.emplace_back(name, path);
  }
  if (to_stdout > 1) {
    std::cerr << "gpuguard " << command << ": only one --format may write to stdout; give the others a file (--format sarif=out.sarif)\n";
    return std::nullopt;
  }
  if (outputs.empty() || to_stdout == 0) outputs.emplace_back("text", "");
  return outputs;
}

int lint_and_report(const std::vector<engine::Input>& inputs, const engine::Config& config, const engine::Registry& registry,
                    bool complete, unsigned jobs, size_t max_file_mb, const Outputs& outputs, const ReportOptions& opts,
                    std::vector<engine::Diagnostic> diags, const char* command,
                    const std::vector<std::shared_ptr<const SourceMap>>& maps) {
  ScopeParams params;
  params.complete = complete;
  params.jobs = jobs;
  params.max_file_mb = max_file_mb;
  params.list_checked = std::any_of(outputs.begin(), outputs.end(), [](const auto& o) { return o.first == "junit"; });
  params.no_annotation_exemptions = opts.no_annotation_exemptions;
  auto outcome = std::make_unique<ScopeOutcome>(evaluate_scope(inputs, config, registry, params, std::move(diags), maps));
  ReportContext ctx;
  ctx.registry = &registry;
  for (const auto& in : inputs) ctx.files.push_back(in.display);
  ctx.show_suppressed = opts.show_suppressed;
  const int code = write_reports(outcome->result, ctx, outputs, opts, command);
  if (!kTeardown) (void)outcome.release();  // left to the end of the process (see kTeardown)  NOLINT(bugprone-unused-return-value)
  return code;
}

void add_report_options(CLI::App* sub, ReportOptions& opts) {
  sub->add_option("-f,--format", opts.formats,
                  "output format, repeatable, NAME or NAME=FILE: text (default), json, sarif, junit, github, policyreport")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--fail-on", opts.fail_on, "exit 1 when a finding is at or above: error, warning, info or none")
      ->check(CLI::IsMember({"error", "warning", "info", "none"}));
  sub->add_option("--color", opts.color, "colour the text output: auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  sub->add_flag("--show-suppressed", opts.show_suppressed, "also print findings suppressed by annotations or exclusions");
  sub->add_flag("--no-annotation-exemptions", opts.no_annotation_exemptions,
                "gpuguard.io/ignore annotations exempt nothing: report what they name, with a note (the config's exclude still applies)");
}

void add_lint_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto opts = std::make_shared<LintOptions>();
  auto* sub = app.add_subcommand("lint", "Lint manifests: files, folders (recursive), or - for stdin");
  sub->add_option("paths", opts->paths, "files or folders to lint; - reads stdin");
  sub->add_option("-c,--config", opts->config_path,
                  "config file for every path (default: the .gpuguard.yaml found upward from each path; for stdin, from the working directory)");
  sub->add_flag("--no-config", opts->no_config, "ignore any .gpuguard.yaml; use the built-in defaults");
  sub->add_flag("--print-config", opts->print_config, "print the effective configuration and exit");
  add_report_options(sub, opts->report);
  sub->add_flag("--complete", opts->complete,
                "the input is the whole cluster: rules that report missing objects (no quota, unknown class) speak");
  sub->add_option("--cluster", opts->cluster,
                  "lint as the config's cluster NAME (clusters:): its paths when none are given, one inventory with its settings");
  sub->add_flag("--one-inventory", opts->one_inventory,
                "the paths given are one inventory (default: each path is its own; clusters: always apart)");
  sub->add_flag("--include-owned", opts->include_owned,
                "also lint Pods and ReplicaSets from stdin that a controller made (by default they are left out: their templates are linted on the controllers)");
  sub->add_flag("--allow-empty", opts->allow_empty, "a folder with no manifest is not an error (a missing path still is)");
  sub->add_option("-n,--namespace", opts->namespace_, "namespace of objects that do not name one (default: default)")->check(namespace_name());
  sub->add_option("--schemas", opts->schemas,
                  "validate objects against the schemas in DIR (the API server's OpenAPI v2/v3 documents, kubeconform's "
                  "definitions and standalone files, CRD YAML files): rules schema-invalid and schema-missing");
  sub->add_option("--schemas-missing", opts->schemas_missing,
                  "with --schemas, an object whose kind no schema describes: error, warn (rule schema-missing's default) or ignore")
      ->check(CLI::IsMember({"error", "warn", "ignore"}));
  sub->add_option("-j,--jobs", opts->jobs,
                  "threads that parse files (and parts of large files) in parallel; 0: one per core, at most 8 (default); "
                  "input under 256 KiB is read on one")
      ->check(CLI::Range(0u, 256u));
  sub->add_option("--helm", opts->render.helm, "helm program that renders charts (folders with Chart.yaml; default: helm on PATH)");
  sub->add_option("--kustomize", opts->render.kustomize,
                  "kubectl or kustomize program that builds Kustomize folders (default: kubectl on PATH, else kustomize)");
  sub->add_option("--release", opts->render.release, "release name charts are rendered with (default: release-name)");
  sub->add_option("--values", opts->render.values, "values file for helm template, repeatable")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--set", opts->render.sets, "K=V for helm template, repeatable")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--render-timeout", opts->render_timeout, "seconds helm or kustomize may run per folder (default 120)")
      ->check(CLI::Range(1u, 3600u));
  sub->add_option("--max-file-size", opts->max_file_mb, "largest input file in MiB (default 256)")->check(CLI::Range(1, 4096));
  sub->callback([opts, &registry, &exit_code] { exit_code = run_lint(*opts, registry); });
}

}  // namespace gpuguard::cli
