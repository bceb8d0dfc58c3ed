#pragma once
// Helm charts and Kustomize folders as lint input: rendered by the user's own tools (`helm
// template`, `kubectl kustomize` or `kustomize build`), and findings on the rendered objects
// placed back into the sources (helm's `# Source:` template, the line that produced the node).

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/evaluate.h"
#include "engine/load.h"

namespace gpuguard::cli {

struct RenderOptions {
  std::string helm;       // --helm: the program, else `helm` on PATH
  std::string kustomize;  // --kustomize: kubectl (run as `kubectl kustomize`) or kustomize (`kustomize build`), else either on PATH
  std::string release = "release-name";  // helm template's own default
  std::string namespace_;                // --namespace, when given
  std::vector<std::string> values;       // --values FILE, in order
  std::vector<std::string> sets;         // --set K=V, in order
  size_t max_output_bytes = size_t{256} << 20;  // a tool's standard output (the run's --max-file-size)
  std::chrono::seconds timeout{120};     // a tool's run
};

// What a program run without a shell gave: its exit status, standard output and error. `error`
// says why it did not run to its end (not found, killed at a bound).
struct ToolRun {
  int exit_code = -1;
  std::string out, err, error;
};
// Runs argv[0] (a path) with its arguments, no shell, standard input /dev/null; kills it (and its
// process group) when it runs longer than `timeout` or writes more than `max_out` bytes to
// standard output (standard error is kept to its first 64 KiB).
[[nodiscard]] ToolRun run_tool(const std::vector<std::string>& argv, std::chrono::seconds timeout, size_t max_out);
// `name` on PATH (or `name` itself when it has a slash), executable; "" when there is none.
[[nodiscard]] std::string find_program(const std::string& name);

// Where the rendered text of one input came from: per document, the source file (a chart's
// template, a kustomization's resource file) and the section of it that holds the object.
class SourceMap;

// Renders every chart and kustomization input in place (sets its text). A tool that is missing or
// fails is an input error naming the folder (with what to install, or the tool's own stderr); the
// folder then yields no object and the run goes on. Returns the maps, one per rendered input.
std::vector<std::shared_ptr<const SourceMap>> render_inputs(std::vector<engine::Input>& inputs, const RenderOptions& options,
                                                            std::vector<engine::Diagnostic>& diags);

// Places the findings (and the checked objects) of rendered inputs in their sources: the file, the
// line that produced the node when it is known, else the object's first line there; the rendered
// position goes into the message. Re-sorts the findings by file and line.
void map_to_sources(engine::Result& result, const std::vector<std::shared_ptr<const SourceMap>>& maps);

}  // namespace gpuguard::cli
