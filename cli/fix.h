#pragma once
// gpuguard fix (and `gpuguard mutate --write`): the rules' fixes written back into the source
// files, changing only the lines the fixes concern (engine/source_edit.h).

#include <string>
#include <vector>

#include "cli/render.h"
#include "engine/registry.h"

namespace gpuguard::cli {

struct FixOptions {
  std::vector<std::string> paths;
  std::string config_path;
  bool no_config = false;
  std::vector<std::string> state;
  bool complete = false;
  bool dry_run = false;
  bool exit_code = false;
  bool templates = true;  // also controllers' pod templates (mutate --write: only with --templates)
  std::vector<std::string> rules;  // --rule: only these rules' fixes
  std::string namespace_;
  std::string as;
  std::vector<std::string> as_groups;
  RenderOptions render;
  std::string command = "fix";  // in messages
};

// Exit codes as lint's and mutate's: 0 nothing to fix, or fixed; 1 with `exit_code` when
// something was (or with `dry_run` would be) changed or is left to fix by hand; 2 input errors.
[[nodiscard]] int run_fix(const FixOptions& opts, const engine::Registry& registry);

}  // namespace gpuguard::cli
