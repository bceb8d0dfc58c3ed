// gpuguard-net's serve (cli/net.h): the server is linked in. (Its audit is cli/audit_run.cpp.)

#include "cli/net.h"
#include "engine/memory.h"

namespace gpuguard::cli {

void remember_args(int argc, char** argv) {
  (void)argc;
  (void)argv;
}

int run_serve(const engine::Registry& registry, const webhook::ServerOptions& opts) {
  engine::use_server_memory();
  return webhook::serve(registry, opts);
}

}  // namespace gpuguard::cli
