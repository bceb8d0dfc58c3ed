#include "tests/support/support.h"

#include <algorithm>

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <doctest/doctest.h>
#include <fstream>
#include <sstream>

#include "engine/load.h"
#include "rules/registry.h"

extern char** environ;

namespace gpuguard::test {

namespace fs = std::filesystem;

namespace {
bool g_skipped = false;
}

fs::path source_dir() { return GPUGUARD_SOURCE_DIR; }

std::optional<fs::path> shared_dir() {
  fs::path p = GPUGUARD_SHARED_DIR;
  if (const char* env = std::getenv("GPUGUARD_SHARED")) p = env;
  std::error_code ec;
  if (fs::is_directory(p / "corpus", ec)) return fs::weakly_canonical(p, ec);
  return std::nullopt;
}

size_t min_json_files() { return shared_dir() ? 10 : 5; }
size_t min_json_bytes() { return shared_dir() ? 12000 : 1000; }

fs::path binary() { return GPUGUARD_BINARY; }

void skip(const std::string& why) {
  MESSAGE("skipped: " << why);
  g_skipped = true;
}
bool skipped() { return g_skipped; }

const engine::Registry& registry() {
  static const engine::Registry r = rules::make_registry();
  return r;
}

std::vector<fs::path> test_files(std::string_view extension) {
  std::vector<fs::path> dirs{source_dir() / "tests", source_dir() / "examples"};
  if (auto shared = shared_dir()) dirs.push_back(*shared / "corpus");
  std::vector<fs::path> files;
  for (const auto& d : dirs)
    for (const auto& e : fs::recursive_directory_iterator(d))
      if (e.is_regular_file() && e.path().extension() == extension) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << text;
}

std::vector<engine::Object> load_objects(const std::string& text, const std::string& file) {
  std::vector<engine::Object> out;
  std::vector<engine::Diagnostic> diags;
  auto src = std::make_shared<engine::SourceFile>(engine::SourceFile{file, 0});
  engine::load_text(text, src, engine::LoadOptions{}, [&](engine::Object&& o) { out.push_back(std::move(o)); }, diags);
  for (const auto& d : diags) FAIL_CHECK(file << ":" << d.pos.line << ":" << d.pos.col << ": " << d.message);
  return out;
}

std::shared_ptr<const engine::Inventory> state_without(const std::vector<engine::Object>& objects, size_t skip,
                                                       const engine::Config& config, bool complete) {
  auto inv = std::make_shared<engine::Inventory>(engine::kinds_read(registry(), config));
  inv->set_complete(complete);
  uint32_t id = 0;
  for (size_t i = 0; i < objects.size(); ++i) {
    engine::Object o = objects[i];
    o.id = id++;
    if (i == skip || !o.is_kubernetes_object()) continue;
    const std::string ns = engine::effective_namespace(o, config);
    inv->add(std::make_shared<engine::Object>(std::move(o)), ns);
  }
  return inv;
}

engine::Result lint(const std::string& text, const LintOptions& options) {
  engine::Config config = engine::default_config(registry());
  if (!options.config_yaml.empty()) {
    auto c = engine::load_config(options.config_yaml, ".gpuguard.yaml", registry());
    if (!c) {
      for (const auto& d : c.error()) FAIL_CHECK("config " << d.pos.line << ":" << d.pos.col << ": " << d.message);
      return {};
    }
    config = std::move(*c);
  }
  if (options.schemas) config.settings.schemas = shared_schemas();
  engine::EvalOptions eo;
  eo.complete = options.complete;
  eo.fixes = options.fixes;
  for (const auto& r : options.only_rules) eo.only_rules.insert(r);
  // The evaluation keeps references to the config: keep it alive for the call.
  engine::Evaluation eval(registry(), config, eo);
  std::vector<engine::Diagnostic> diags;
  auto src = std::make_shared<engine::SourceFile>(engine::SourceFile{options.file, 0});
  engine::load_text(text, src, engine::LoadOptions{}, [&](engine::Object&& o) { eval.add(std::move(o)); }, diags);
  eval.add_diagnostics(std::move(diags));
  return eval.finish();
}

namespace {
Run run_argv(std::vector<std::string> argv_s, const std::string& stdin_text, const fs::path& cwd, bool search_path);
}

std::shared_ptr<const engine::SchemaStore> shared_schemas() {
  static const std::shared_ptr<const engine::SchemaStore> store = []() -> std::shared_ptr<const engine::SchemaStore> {
    auto shared = shared_dir();
    if (!shared) return nullptr;
    std::vector<engine::Diagnostic> diags;
    auto s = engine::SchemaStore::load(*shared / "k8s-schemas", diags);
    for (const auto& d : diags) FAIL_CHECK(d.file << ": " << d.message);
    return s;
  }();
  return store;
}

Run run(const std::vector<std::string>& args, const std::string& stdin_text, const fs::path& cwd) {
  std::vector<std::string> argv_s{binary().string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return run_argv(std::move(argv_s), stdin_text, cwd, false);
}

Run run_command(const std::vector<std::string>& argv, const std::string& stdin_text, const fs::path& cwd) {
  return run_argv(argv, stdin_text, cwd, true);
}

namespace {
Run run_argv(std::vector<std::string> argv_s, const std::string& stdin_text, const fs::path& cwd, bool search_path) {
  Run r;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  REQUIRE(pipe(in_pipe) == 0);
  REQUIRE(pipe(out_pipe) == 0);
  REQUIRE(pipe(err_pipe) == 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]})
    posix_spawn_file_actions_addclose(&fa, fd);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = search_path ? posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ)
                       : posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  REQUIRE(rc == 0);
  // Feed stdin and drain both outputs without deadlocking.
  size_t written = 0;
  int in_fd = in_pipe[1];
  fcntl(in_fd, F_SETFL, O_NONBLOCK);
  if (stdin_text.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  bool out_open = true, err_open = true;
  char buf[65536];
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    int io = -1, oo = -1, eo = -1;
    if (in_fd >= 0) { fds[n] = {in_fd, POLLOUT, 0}; io = n++; }
    if (out_open) { fds[n] = {out_pipe[0], POLLIN, 0}; oo = n++; }
    if (err_open) { fds[n] = {err_pipe[0], POLLIN, 0}; eo = n++; }
    if (poll(fds, static_cast<nfds_t>(n), -1) < 0) break;
    if (io >= 0 && (fds[io].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in_fd, stdin_text.data() + written, stdin_text.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 || written == stdin_text.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    if (oo >= 0 && (fds[oo].revents & (POLLIN | POLLHUP))) {
      ssize_t k = read(out_pipe[0], buf, sizeof buf);
      if (k <= 0) out_open = false;
      else r.out.append(buf, static_cast<size_t>(k));
    }
    if (eo >= 0 && (fds[eo].revents & (POLLIN | POLLHUP))) {
      ssize_t k = read(err_pipe[0], buf, sizeof buf);
      if (k <= 0) err_open = false;
      else r.err.append(buf, static_cast<size_t>(k));
    }
  }
  if (in_fd >= 0) close(in_fd);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}
}  // namespace

Process::Process(const std::vector<std::string>& args, const fs::path& log_dir, bool command) {
  err_ = log_dir / ("process-" + std::to_string(reinterpret_cast<uintptr_t>(this)) + ".log");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> argv_s;
  if (!command) argv_s.push_back(binary().string());
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = command ? posix_spawnp(&pid_, argv[0], &fa, nullptr, argv.data(), environ)
                   : posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE(rc == 0);
}

Process::~Process() {
  if (!reaped_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void Process::signal(int sig) const { kill(pid_, sig); }

std::string Process::log() const { return read_file(err_); }

bool Process::wait_for_log(const std::string& text, int timeout_ms) const {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (log().find(text) != std::string::npos) return true;
    int status = 0;
    if (!reaped_ && waitpid(pid_, &status, WNOHANG) == pid_) {
      auto* self = const_cast<Process*>(this);
      self->reaped_ = true;
      self->code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return log().find(text) != std::string::npos;
    }
    if (reaped_) return false;
    usleep(10000);
  }
  return false;
}

int Process::wait_exit(int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 10) {
    if (reaped_) return code_;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      reaped_ = true;
      code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return code_;
    }
    usleep(10000);
  }
  return -1;
}

TempDir::TempDir() {
  std::string tmpl = (fs::temp_directory_path() / "gpuguard-test-XXXXXX").string();
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

}  // namespace gpuguard::test
