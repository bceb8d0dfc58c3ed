#pragma once
// Inputs → objects: files, folders (recursive), stdin; YAML streams, JSON streams, Lists.

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/object.h"
#include "engine/yaml_load.h"

namespace gpuguard::engine {

struct LoadOptions {
  YamlLimits yaml;
  size_t max_file_bytes = 256u << 20;
  // load_inputs reads less input than this on the calling thread, whatever `jobs` says: starting
  // threads costs what they would save (engine/load.cpp has the measurements).
  size_t threaded_min_bytes = 256u << 10;
  // Whether a YAML text with Go template actions that does not load gets the one error that says it
  // is a template (load_text); not for text a tool rendered, where `{{` is data.
  bool template_check = true;
};

struct Input {
  std::string display;  // what messages call it ("<stdin>" for -)
  std::filesystem::path path;
  bool is_stdin = false;
  // A file (or stdin), or a folder read as a whole by a tool: a Helm chart (it holds Chart.yaml)
  // or a Kustomize kustomization (kustomization.yaml, .yml or Kustomization). The command renders
  // the folder and sets `text`.
  enum class Kind : uint8_t { file, chart, kustomization };
  Kind kind = Kind::file;
  // The input's text when it is already in memory (a rendered chart): read instead of `path`.
  std::shared_ptr<const std::string> text;
};

// The kind of folder `dir` is: a chart, a kustomization (not a Component, which is built only as a
// part of another), or a plain folder (Kind::file).
[[nodiscard]] Input::Kind folder_kind(const std::filesystem::path& dir);

// Expands the command line's paths in order: "-" is stdin, a file is itself (whatever its name),
// a folder is every *.yaml, *.yml and *.json below it (sorted, hidden entries skipped). A path
// that does not exist yields a diagnostic.
// With `whole_folders` (gpuguard lint), a Helm chart or Kustomize folder, given or met while
// listing, is one input of its kind (not listed further), and a path inside one (a template, a
// values file: what pre-commit passes) stands for it: the nearest such folder upward, up to a
// folder holding `.git`. The inputs are then distinct.
[[nodiscard]] std::vector<Input> expand_inputs(const std::vector<std::string>& paths, std::vector<Diagnostic>& diags,
                                               bool whole_folders = false);

// Reads an input (at most max_file_bytes) and yields its objects in order. Problems are
// diagnostics; what can be read is still yielded.
void load_input(const Input& input, uint32_t index, const LoadOptions& options,
                const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags);

// How an input is read: as YAML (engine/yaml_load.h), or as JSON (engine/json_stream.h,
// load_json_stream: what is not JSON from some value on is read as YAML from there): a *.json
// file, and, as kubectl decides, any other input but a *.yaml or *.yml file (stdin, a file named
// otherwise) whose first character other than ASCII white space (and a UTF-8 byte order mark)
// is '{'. UTF-16 text (with its byte order mark) is YAML's: libyaml decodes it. `name` is the
// input's path ("<stdin>" for stdin).
enum class Syntax : uint8_t { yaml, json };
[[nodiscard]] Syntax input_syntax(std::string_view name, std::string_view text);

// The same for text already in memory (a test, a part of a file). `first_line` and
// `first_document` place a part of a larger file. Returns the number of document indices used.
uint32_t load_text(std::string_view text, const SourceRef& source, const LoadOptions& options,
                   const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags,
                   uint32_t first_line = 0, uint32_t first_document = 0, Syntax syntax = Syntax::yaml);

// Every input, parsed by `jobs` threads: whole files, and parts of a large file split at its
// document markers — unless there is one such unit of work, or less input than
// options.threaded_min_bytes, which the calling thread reads in turn. Returns the threads used (1,
// or `jobs`), for the work that follows. `on_object` is called on the calling thread, in input
// order, as the sequential load would call it; so are diagnostics appended. `on_parsed`, when
// given and threads are used, is called first on the thread that parses them, as they are parsed, so that work that
// needs no order (Evaluation::precheck) runs in parallel too, while the object is fresh in that
// thread's caches: with the objects of one part parsed so far and the index of the first not
// handed over before. It runs whether or not the parts before are read yet: an object's
// `document` counts from the start of its part until `on_object` has it (then from the start of
// its input). Memory stays bounded: only a few parsed parts wait at a time.
unsigned load_inputs(const std::vector<Input>& inputs, const LoadOptions& options, unsigned jobs,
                     const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags,
                     const std::function<void(std::span<Object>, size_t)>& on_parsed = {});

}  // namespace gpuguard::engine
