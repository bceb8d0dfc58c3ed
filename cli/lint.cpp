// gpuguard lint: the offline linter.

#include <unistd.h>
#if defined(__GLIBC__) && !defined(GPUGUARD_JEMALLOC)
#include <malloc.h>
#endif

#include <cstdlib>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>
#include <memory>

#include "cli/commands.h"
#include "cli/lint.h"
#include "cli/output.h"
#include "cli/render.h"
#include "engine/evaluate.h"
#include "engine/load.h"
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
  unsigned jobs = 0;
  RenderOptions render;
  unsigned render_timeout = 120;
};

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  if (std::getenv("NO_COLOR")) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;
  return isatty(STDOUT_FILENO) != 0;
}

int run_lint(const LintOptions& opts, const engine::Registry& registry) {
  auto loaded = load_run_config(opts.config_path, opts.no_config, registry);
  if (!loaded) return kExitUsage;
  engine::Config config = std::move(*loaded);
  if (!opts.namespace_.empty()) config.settings.default_namespace = opts.namespace_;
  if (opts.print_config) {
    std::cout << engine::print_config(config, registry);
    return kExitOk;
  }
  if (opts.paths.empty()) {
    std::cerr << "gpuguard lint: give files or folders to lint, or - for stdin\n";
    return kExitUsage;
  }
  auto outputs = parse_outputs(opts.report, "lint");
  if (!outputs) return kExitUsage;

  std::vector<engine::Diagnostic> diags;
  if (!opts.schemas.empty()) {
    std::vector<engine::Diagnostic> schema_diags;
    config.settings.schemas = engine::SchemaStore::load(opts.schemas, schema_diags);
    if (!schema_diags.empty() || config.settings.schemas->kinds() == 0) {
      print_diagnostics(schema_diags);
      if (config.settings.schemas->kinds() == 0) std::cerr << opts.schemas << ": no schema found (JSON definitions or CRD YAML files)\n";
      return kExitUsage;
    }
  }
  auto inputs = engine::expand_inputs(opts.paths, diags, true);
  RenderOptions render = opts.render;
  render.namespace_ = opts.namespace_;
  render.max_output_bytes = opts.max_file_mb << 20;
  render.timeout = std::chrono::seconds(opts.render_timeout);
  const auto maps = render_inputs(inputs, render, diags);
  return lint_and_report(inputs, config, registry, opts.complete, opts.jobs, opts.max_file_mb, *outputs, opts.report,
                         std::move(diags), "lint", maps);
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
#if defined(__GLIBC__) && !defined(GPUGUARD_JEMALLOC)
  // With glibc's malloc: blocks of 256 KiB and more (the growing vectors of findings and rule projections) come from
  // mmap and go back to the system when freed; glibc would otherwise raise this threshold to 32 MiB
  // after the first such free and leave the old copies of grown vectors as holes in the heap.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
  engine::LoadOptions load;
  load.max_file_bytes = max_file_mb << 20;
  if (jobs == 0) jobs = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  engine::EvalOptions eval_options{complete, nullptr, false, {}, jobs};
  eval_options.teardown = kTeardown;
  eval_options.list_checked = std::any_of(outputs.begin(), outputs.end(), [](const auto& o) { return o.first == "junit"; });
  if (opts.no_annotation_exemptions) eval_options.annotations = engine::AnnotationExemptions::never;
  auto evaluation = std::make_unique<engine::Evaluation>(registry, config, std::move(eval_options));
  engine::Evaluation& eval = *evaluation;
  const unsigned used = engine::load_inputs(inputs, load, jobs, [&](engine::Object&& o) { eval.add(std::move(o)); }, diags,
                                            [&](std::span<engine::Object> objects, size_t from) { eval.precheck(objects, from); });
  eval.set_jobs(used);  // an input read on one thread is finished on one
  eval.add_diagnostics(std::move(diags));
  auto finished = std::make_unique<engine::Result>(eval.finish());
  // An ignore annotation that was not honoured (--no-annotation-exemptions) is said in the
  // finding's message, in every format.
  if (opts.no_annotation_exemptions)
    for (auto& f : finished->findings)
      if (!f.suppressed && f.annotation == engine::Finding::Annotation::not_honoured)
        f.message.append(" (").append(f.suppression).append(")");
  // Findings on rendered charts and kustomizations go to their templates and resource files.
  map_to_sources(*finished, maps);
  const engine::Result& result = *finished;
  if (!kTeardown) {
    // Left to the end of the process (see kTeardown).
    (void)evaluation.release();  // NOLINT(bugprone-unused-return-value)
    (void)finished.release();    // NOLINT(bugprone-unused-return-value)
  }

  ReportContext ctx;
  ctx.registry = &registry;
  for (const auto& in : inputs) ctx.files.push_back(in.display);
  ctx.show_suppressed = opts.show_suppressed;
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
  sub->add_option("-c,--config", opts->config_path, "config file (default: .gpuguard.yaml found upward from the working directory)");
  sub->add_flag("--no-config", opts->no_config, "ignore any .gpuguard.yaml; use the built-in defaults");
  sub->add_flag("--print-config", opts->print_config, "print the effective configuration and exit");
  add_report_options(sub, opts->report);
  sub->add_flag("--complete", opts->complete,
                "the input is the whole cluster: rules that report missing objects (no quota, unknown class) speak");
  sub->add_option("-n,--namespace", opts->namespace_, "namespace of objects that do not name one (default: default)")->check(namespace_name());
  sub->add_option("--schemas", opts->schemas,
                  "validate objects against the schemas in DIR (Kubernetes JSON definitions, CRD YAML files): rule schema-invalid");
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
