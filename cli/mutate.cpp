// gpuguard mutate: the mutating webhook's fixes applied offline. Rewrites its input only with
// --write, which is `gpuguard fix` (cli/fix.h) with mutate's choice of objects (pod templates only
// with --templates).

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/fix.h"
#include "engine/evaluate.h"
#include "engine/load.h"
#include "engine/mutate.h"
#include "engine/state.h"
#include "engine/yaml_emit.h"

namespace gpuguard::cli {

namespace {

struct MutateOptions {
  std::vector<std::string> paths;
  std::string config_path;
  bool no_config = false;
  std::vector<std::string> state;
  bool complete = false;
  bool patch = false;
  bool diff = false;
  bool templates = false;
  bool exit_code = false;
  bool write = false;
  std::string namespace_;
  std::string as;                   // request.userInfo.username, for webhook.exemptions
  std::vector<std::string> as_groups;
};

int run_mutate(const MutateOptions& opts, const engine::Registry& registry) {
  if (opts.write) {
    FixOptions fix;
    fix.paths = opts.paths;
    fix.config_path = opts.config_path;
    fix.no_config = opts.no_config;
    fix.state = opts.state;
    fix.complete = opts.complete;
    fix.exit_code = opts.exit_code;
    fix.templates = opts.templates;
    fix.namespace_ = opts.namespace_;
    fix.as = opts.as;
    fix.as_groups = opts.as_groups;
    fix.command = "mutate --write";
    return run_fix(fix, registry);
  }
  engine::Config config = engine::default_config(registry);
  if (!opts.no_config) {
    std::optional<std::filesystem::path> path;
    if (!opts.config_path.empty()) path = opts.config_path;
    else path = engine::find_config_upward(std::filesystem::current_path());
    if (path) {
      auto loaded = engine::load_config_file(*path, registry);
      if (!loaded) {
        for (const auto& d : loaded.error())
          std::cerr << d.file << ":" << d.pos.line << ":" << d.pos.col << ": error: " << d.message << "\n";
        return kExitUsage;
      }
      config = std::move(*loaded);
    }
  }
  if (!opts.namespace_.empty()) config.settings.default_namespace = opts.namespace_;
  if (opts.templates) config.webhook.mutate_templates = true;
  if (opts.paths.empty()) {
    std::cerr << "gpuguard mutate: give files or folders, or - for stdin\n";
    return kExitUsage;
  }

  std::vector<engine::Diagnostic> diags;
  std::shared_ptr<const engine::Inventory> state;
  if (!opts.state.empty()) {
    auto s = engine::load_state(opts.state, registry, config);
    for (auto& d : s.diagnostics) diags.push_back(std::move(d));
    state = std::move(s.inventory);
  }
  // As the webhook: an ignore annotation exempts a fix only as webhook.exemptions allows, for the
  // user --as names (none: entries that name users or groups do not match).
  engine::RequestUser user{opts.as, opts.as_groups};
  const bool has_user = !opts.as.empty() || !opts.as_groups.empty();
  bool changed_any = false;
  bool first_doc = true;
  const auto inputs = engine::expand_inputs(opts.paths, diags);
  uint32_t index = 0;
  for (const auto& in : inputs) {
    engine::load_input(
        in, index++, engine::LoadOptions{},
        [&](engine::Object&& obj) {
          engine::MutateResult m;
          m.object = obj.body();
          if (obj.is_kubernetes_object() && engine::mutation_applies(obj, config.webhook, true)) {
            engine::MutateOptions mo;
            mo.base = state;
            mo.complete = opts.complete || (state && state->complete());
            mo.annotations = engine::AnnotationExemptions::admission;
            mo.user = has_user ? &user : nullptr;
            m = engine::mutate(obj, registry, config, mo);
            for (auto& d : m.diagnostics) diags.push_back(std::move(d));
          }
          const bool changed = !m.patch.empty();
          changed_any = changed_any || changed;
          const std::string label = in.display + " (" + obj.display_name() + ")";
          if (opts.patch) {
            if (!changed) return;
            engine::json line = {{"file", in.display}, {"document", obj.document}, {"kind", obj.gvk.kind},
                                 {"namespace", obj.namespace_}, {"name", obj.name}, {"rules", m.rules}, {"patch", m.patch}};
            if (!obj.item_pointer.empty()) line["itemPointer"] = obj.item_pointer;
            // Strings that are not UTF-8 (a !!binary value in a fix, a file's name) are written with
            // U+FFFD, as the other JSON outputs write them.
            std::cout << line.dump(-1, ' ', false, engine::json::error_handler_t::replace) << "\n";
          } else if (opts.diff) {
            if (!changed) return;
            const engine::PositionIndex* pos = obj.positions.get();
            std::cout << engine::unified_diff(engine::to_yaml(obj.body(), pos, obj.pos_root),
                                              engine::to_yaml(m.object, pos, obj.pos_root), "a/" + label, "b/" + label);
          } else {
            if (!first_doc) std::cout << "---\n";
            first_doc = false;
            std::cout << engine::to_yaml(m.object, obj.positions.get(), obj.pos_root);
          }
        },
        diags);
  }
  bool errors = false;
  for (const auto& d : diags) {
    std::cerr << (d.file.empty() ? std::string("gpuguard") : d.file);
    if (d.pos.known()) std::cerr << ":" << d.pos.line << ":" << d.pos.col;
    std::cerr << ": " << engine::to_string(d.severity) << ": " << d.message << "\n";
    errors = errors || d.severity == engine::Severity::error;
  }
  if (errors) return kExitUsage;
  return opts.exit_code && changed_any ? kExitFindings : kExitOk;
}

}  // namespace

void add_mutate_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto opts = std::make_shared<MutateOptions>();
  auto* sub = app.add_subcommand("mutate", "Apply the mutating webhook's fixes offline and print the result (--write: into the files, as gpuguard fix)");
  sub->add_option("paths", opts->paths, "files or folders; - reads stdin");
  sub->add_option("-c,--config", opts->config_path, "config file (default: .gpuguard.yaml found upward)");
  sub->add_flag("--no-config", opts->no_config, "ignore any .gpuguard.yaml");
  sub->add_option("--state", opts->state, "cluster state the fixes may read (namespace defaults): files or folders");
  sub->add_flag("--complete", opts->complete, "the input (with --state) is the whole cluster");
  auto* patch = sub->add_flag("--patch", opts->patch, "print each changed object's RFC 6902 JSON Patch (one JSON line per object)");
  auto* diff = sub->add_flag("--diff", opts->diff, "print a unified diff of each changed object")->excludes(patch);
  sub->add_flag("--write", opts->write,
                "write the fixes into the files, changing only the lines they concern (as gpuguard fix; - writes to stdout)")
      ->excludes(patch)
      ->excludes(diff);
  sub->add_flag("--templates", opts->templates, "also fix controllers' pod templates (the webhook mutates Pods only, unless webhook.mutate.templates)");
  sub->add_flag("--exit-code", opts->exit_code, "exit 1 when a fix would change something");
  sub->add_option("-n,--namespace", opts->namespace_, "namespace of objects that do not name one")->check(namespace_name());
  sub->add_option("--as", opts->as,
                  "the user admission would see (request.userInfo.username), for webhook.exemptions.allow's users");
  sub->add_option("--as-group", opts->as_groups, "a group of that user (repeatable), for webhook.exemptions.allow's groups")
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->callback([opts, &registry, &exit_code] { exit_code = run_mutate(*opts, registry); });
}

}  // namespace gpuguard::cli
