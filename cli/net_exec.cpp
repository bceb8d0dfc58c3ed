// gpuguard's serve and audit (cli/net.h): run gpuguard-net, from the folder gpuguard itself was
// started from, with the same arguments.

#include <openssl/crypto.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

#include "cli/net.h"
#include "cli/version.h"

namespace gpuguard::cli {

namespace {

int saved_argc = 0;
char** saved_argv = nullptr;

int exec_net(const char* command) {
  if (std::getenv(kNetMarker)) {
    std::cerr << "gpuguard " << command << ": the program run as " << kNetProgram
              << " was gpuguard again (a link or a copy of it?): install gpuguard-net from the same build beside gpuguard\n";
    return kExitNetUnusable;
  }
  std::error_code ec;
  // The program's own file, not argv[0]: gpuguard may have been found on PATH or through a link.
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) {
    std::cerr << "gpuguard " << command << ": cannot find gpuguard's own folder (/proc/self/exe: " << ec.message() << ")\n";
    return kExitNetMissing;
  }
  const std::string net = (self.parent_path() / kNetProgram).string();
  std::vector<char*> args;
  args.push_back(const_cast<char*>(net.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast): execv's signature
  for (int i = 1; i < saved_argc; ++i) args.push_back(saved_argv[i]);
  args.push_back(nullptr);
  const std::string version(kVersion);
  setenv(kNetMarker, version.c_str(), 1);
  execv(net.c_str(), args.data());
  const int err = errno;  // execv returns only when it failed
  unsetenv(kNetMarker);
  std::cerr << "gpuguard " << command << ": cannot run " << net << ": " << std::strerror(err) << " (" << kNetProgram
            << " is installed beside gpuguard: it carries the webhook server and the Kubernetes client)\n";
  return err == ENOENT ? kExitNetMissing : kExitNetUnusable;
}

}  // namespace

bool start_program(int argc, char** argv) {
  saved_argc = argc;
  saved_argv = argv;
  OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, nullptr);
  return true;
}

int run_serve(const engine::Registry& registry, const webhook::ServerOptions& opts) {
  (void)registry;
  (void)opts;
  return exec_net("serve");
}

int run_audit(const engine::Registry& registry, const AuditOptions& opts) {
  (void)registry;
  (void)opts;
  return exec_net("audit");
}

}  // namespace gpuguard::cli
