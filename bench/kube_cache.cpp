// bench/kube_cache: the cluster cache synced against the API server double holding N Nodes (the
// ~40 GFD/NFD labels of a real GPU node each) and M ConfigMaps (a few hundred holding configs the
// rules read), in a child process; prints the sync time and the growth of this process's RSS.
//
//   bench_kube_cache [NODES=50000] [CONFIGMAPS=100000] [RELEVANT=300]

#include <fcntl.h>
#include <malloc.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "engine/config.h"
#include "kube/cache.h"
#include "rules/registry.h"
#include "tests/support/apiserver.h"
#include "tests/support/support.h"

extern char** environ;  // NOLINT

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

// The few helpers of tests/support/support.h the double uses.
namespace gpuguard::test {
fs::path source_dir() { return GPUGUARD_SOURCE_DIR; }
std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
void write_file(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }
Run run_command(const std::vector<std::string>& argv, const std::string&, const fs::path&) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  Run r;
  if (posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ) == 0) {
    int st = 0;
    waitpid(pid, &st, 0);
    r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  posix_spawn_file_actions_destroy(&fa);
  return r;
}
TempDir::TempDir() {
  char tmpl[] = "/tmp/gpuguard-bench-XXXXXX";
  path_ = mkdtemp(tmpl);
}
TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}
}  // namespace gpuguard::test

namespace {

double rss_mib() {
  std::ifstream in("/proc/self/statm");
  long pages = 0, resident = 0;
  in >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// ~40 labels of the recorded H100 node: every nvidia.com/ label, the well-known ones, and NFD
// labels up to 40.
json node_labels() {
  const json all = json::parse(test::read_file(test::source_dir() / "tests" / "kube" / "recorded" / "node-labels-h100.json"));
  json out = json::object();
  for (const auto& [k, v] : all.items())
    if (k.starts_with("nvidia.com/") || k.starts_with("kubernetes.io/") || k.starts_with("beta.kubernetes.io/")) out[k] = v;
  for (const auto& [k, v] : all.items())
    if (out.size() < 40 && k.starts_with("feature.node.kubernetes.io/")) out[k] = v;
  return out;
}

void serve(const test::Pki& pki, int nodes, int configmaps, int relevant, int fd) {
  test::ApiServer api(pki);
  api.serve("v1", "Node", "nodes", false);
  api.serve("v1", "ConfigMap", "configmaps", true);
  const json labels = node_labels();
  for (int i = 0; i < nodes; ++i) {
    json l = labels;
    const std::string name = "gpu-node-" + std::to_string(i);
    l["kubernetes.io/hostname"] = name;
    l["node.kubernetes.io/instance-type"] = i % 2 ? "p5.48xlarge" : "p4d.24xlarge";
    api.put({{"apiVersion", "v1"},
             {"kind", "Node"},
             {"metadata",
              {{"name", name},
               {"uid", "6a3f" + std::to_string(1000000 + i)},
               {"labels", l},
               {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}},
               {"managedFields", {{{"manager", "kubelet"}, {"operation", "Update"}, {"apiVersion", "v1"}}}}}},
             {"spec", {{"podCIDR", "10.244." + std::to_string(i % 256) + ".0/24"}}},
             {"status", {{"capacity", {{"cpu", "192"}, {"memory", "2113389528Ki"}, {"nvidia.com/gpu", "8"}}}}}},
            false);
  }
  for (int i = 0; i < configmaps; ++i) {
    const std::string ns = "team-" + std::to_string(i % 2000);
    json data;
    if (i < relevant)
      data = {{"config.yaml", "version: v1\nmig-configs:\n  all-disabled:\n    - devices: all\n      mig-enabled: false\n"
                              "  all-1g.10gb:\n    - devices: all\n      mig-enabled: true\n      mig-devices:\n        \"1g.10gb\": 7\n"}};
    else
      data = {{"ca.crt", "-----BEGIN CERTIFICATE-----\nMIIC/jCCAeagAwIBAgIBADANBgkqhkiG9w0BAQsFADAVMRMwEQYDVQQDEwprdWJl\n-----END CERTIFICATE-----\n"},
              {"app.properties", "color=blue\nreplicas=" + std::to_string(i % 7) + "\n"}};
    api.put({{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "cm-" + std::to_string(i)}, {"namespace", ns}, {"managedFields", {{{"manager", "helm"}}}}}},
             {"data", data}},
            false);
  }
  const int port = api.port();
  (void)!write(fd, &port, sizeof port);
  close(fd);
  pause();  // until the parent kills us
}

}  // namespace

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 50000;
  const int configmaps = argc > 2 ? std::atoi(argv[2]) : 100000;
  const int relevant = argc > 3 ? std::atoi(argv[3]) : 300;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  test::TempDir dir;
  const test::Pki pki = test::make_pki(dir.path());
  int fds[2];
  if (pipe(fds) != 0) return 1;
  const pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    serve(pki, nodes, configmaps, relevant, fds[1]);
    _exit(0);
  }
  close(fds[1]);
  int port = 0;
  if (read(fds[0], &port, sizeof port) != static_cast<ssize_t>(sizeof port)) {
    std::fprintf(stderr, "kube_cache bench: the API server double did not start\n");
    return 1;
  }
  kube::ClusterConfig cfg;
  cfg.server = "https://127.0.0.1:" + std::to_string(port);
  cfg.ca_pem = pki.ca_pem;
  cfg.token = "test-token";
  cfg.source = "bench";

  const engine::Registry registry = rules::make_registry();
  const engine::Config config = engine::default_config(registry);
  kube::CacheOptions opts;
  opts.resources = {*kube::resource_for({"", "Node"}), *kube::resource_for({"", "ConfigMap"})};
  opts.page_size = 500;
  const double rss0 = rss_mib();
  const auto t0 = std::chrono::steady_clock::now();
  auto client = kube::Client::create(cfg);
  if (!client) {
    std::fprintf(stderr, "%s\n", client.error().c_str());
    return 1;
  }
  int rc = 0;
  {
    kube::ClusterCache cache(std::shared_ptr<kube::Client>(std::move(*client)), config, opts);
    cache.start();
    uint64_t gen = 0;
    while (true) {
      auto inv = cache.snapshot();
      if (inv->complete() && inv->list("", "Node").size() == static_cast<size_t>(nodes)) break;
      gen = cache.generation();
      if (!cache.wait_for_generation(gen, 600000)) {
        std::fprintf(stderr, "kube_cache bench: no complete snapshot after 600 s\n");
        rc = 1;
        break;
      }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double before_trim = rss_mib();
    malloc_trim(0);
    const double rss1 = rss_mib();
    auto inv = cache.snapshot();
    std::printf("kube cache: %d nodes (%zu labels each as served), %d configmaps (%d with a rule config)\n", nodes,
                node_labels().size() + 2, configmaps, relevant);
    std::printf("kube cache: synced in %.2f s; kept %zu nodes, %zu configmaps\n", secs, inv->list("", "Node").size(),
                inv->list("", "ConfigMap").size());
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    std::printf("kube cache: RSS growth %.1f MiB (%.1f MiB before malloc_trim; %.1f → %.1f MiB; peak %.1f MiB)\n", rss1 - rss0,
                before_trim - rss0, rss0, rss1, static_cast<double>(ru.ru_maxrss) / 1024.0);
    cache.stop();
  }
  kill(child, SIGTERM);
  waitpid(child, nullptr, 0);
  return rc;
}
