// gpuguard-net's serve (cli/net.h): the server is linked in. (Its audit is cli/audit_run.cpp.)

#include <cstdlib>
#include <iostream>
#include <string_view>

#include "cli/net.h"
#include "cli/version.h"
#include "engine/memory.h"

namespace gpuguard::cli {

bool start_program(int argc, char** argv) {
  (void)argc;
  (void)argv;
  const char* by = std::getenv(kNetMarker);
  if (!by) return true;  // run directly
  if (std::string_view(by) != kVersion) {
    std::cerr << "gpuguard-net " << kVersion << " was started by gpuguard " << by
              << ": install both programs from one build\n";
    return false;
  }
  unsetenv(kNetMarker);
  return true;
}

int run_serve(const engine::Registry& registry, const webhook::ServerOptions& opts) {
  engine::use_server_memory();
  return webhook::serve(registry, opts);
}

}  // namespace gpuguard::cli
