#include <iostream>

#include "cli/commands.h"
#include "cli/version.h"

namespace gpuguard::cli {

void add_version_command(CLI::App& app, int& exit_code) {
  auto* sub = app.add_subcommand("version", "Print gpuguard's version");
  sub->callback([&exit_code] {
    std::cout << "gpuguard " << kVersion << " (commit " << kCommit << ")\n";
    exit_code = kExitOk;
  });
}

}  // namespace gpuguard::cli
