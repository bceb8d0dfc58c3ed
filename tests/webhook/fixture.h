#pragma once
// The webhook end-to-end fixture shared by e2e_test.cpp and load_test.cpp: a CA and serving
// certificates made with openssl, `gpuguard serve` on 127.0.0.1 port 0, curl as a client.

#include <doctest/doctest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/json.h"
#include "tests/support/support.h"

namespace gpuguard::test::e2e {

namespace fs = std::filesystem;
using engine::json;

inline const char* kPython = "/usr/bin/python3";

inline fs::path client_py() { return test::source_dir() / "tests" / "webhook" / "client.py"; }

inline bool have_tools() {
  for (const char* t : {"/usr/bin/curl", "/usr/bin/openssl", "/usr/bin/python3"})
    if (!fs::exists(t)) return false;
  return test::run_command({kPython, "-c", "import jsonpatch"}).exit_code == 0;
}

inline void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = test::run_command(argv);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
}

// A CA and a serving certificate for localhost / 127.0.0.1, signed by it.
inline void make_pki(const fs::path& dir, const std::string& name, const std::string& ca = "") {
  const std::string ca_name = ca.empty() ? name + "-ca" : ca;
  if (ca.empty())
    openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
             (dir / (ca_name + ".key")).string(), "-out", (dir / (ca_name + ".crt")).string(), "-days", "2", "-subj",
             "/CN=" + ca_name});
  openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", (dir / (name + ".key")).string(),
           "-out", (dir / (name + ".csr")).string(), "-subj", "/CN=" + name});
  test::write_file(dir / (name + ".ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n");
  openssl({"x509", "-req", "-in", (dir / (name + ".csr")).string(), "-CA", (dir / (ca_name + ".crt")).string(), "-CAkey",
           (dir / (ca_name + ".key")).string(), "-CAcreateserial", "-out", (dir / (name + ".crt")).string(), "-days", "1",
           "-extfile", (dir / (name + ".ext")).string()});
}

struct Webhook {
  test::TempDir dir;
  std::unique_ptr<test::Process> proc;
  int port = 0;
  int metrics_port = 0;

  explicit Webhook(std::vector<std::string> extra = {}, std::string cert = "", std::string key = "") {
    if (cert.empty()) {
      make_pki(dir.path(), "server");
      cert = (dir.path() / "server.crt").string();
      key = (dir.path() / "server.key").string();
    }
    std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key,
                                     "--reload-interval", "0", "--grace-period", "10"};
    args.insert(args.end(), extra.begin(), extra.end());
    proc = std::make_unique<test::Process>(args, dir.path());
    REQUIRE_MESSAGE(proc->wait_for_log("\"msg\":\"listening\""), proc->log());
    std::string log = proc->log();
    auto p = log.find("\"port\":");
    port = std::stoi(log.substr(p + 7));
    if (auto m = log.find("\"metricsPort\":"); m != std::string::npos) metrics_port = std::stoi(log.substr(m + 14));
  }

  [[nodiscard]] std::string url(const std::string& path) const { return "https://127.0.0.1:" + std::to_string(port) + path; }
  [[nodiscard]] std::string ca() const { return (dir.path() / "server-ca.crt").string(); }

  // curl; returns {http code, body}.
  std::pair<int, std::string> curl(const std::string& path, const std::string& body_file = "", std::vector<std::string> extra = {},
                                   const std::string& content_type = "application/json") const {
    std::vector<std::string> argv = {"curl", "-sS", "--max-time", "10", "--cacert", ca(), "-o", "-", "-w", "\n%{http_code}"};
    if (!body_file.empty()) {
      argv.insert(argv.end(), {"-H", "Content-Type: " + content_type, "--data-binary", "@" + body_file});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url(path));
    auto r = test::run_command(argv);
    if (r.exit_code != 0) return {-r.exit_code, r.err};
    auto nl = r.out.rfind('\n');
    return {std::stoi(r.out.substr(nl + 1)), r.out.substr(0, nl)};
  }

  [[nodiscard]] double metric(const std::string& series) const {
    auto [code, body] = curl("/metrics");
    auto p = body.find("\n" + series + " ");
    if (p == std::string::npos) return 0;
    return std::stod(body.substr(p + series.size() + 2));
  }

  fs::path write(const std::string& name, const std::string& text) const {
    test::write_file(dir.path() / name, text);
    return dir.path() / name;
  }
};

inline json gpu_pod(bool with_limit) {
  json res = with_limit ? json{{"limits", {{"nvidia.com/gpu", 1}}}} : json{{"requests", {{"nvidia.com/gpu", 2}, {"cpu", "4"}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "train"}, {"namespace", "ml"}}},
          {"spec", {{"tolerations", {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}}, {"containers", {{{"name", "train"}, {"image", "pytorch"}, {"resources", res}}}}}}};
}

inline json review_of(const json& obj, const std::string& op = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "7f0c3f4e-0000-4000-8000-000000000001"},
            {"kind", {{"group", ""}, {"version", "v1"}, {"kind", obj.value("kind", "Pod")}}},
            {"operation", op},
            {"namespace", "ml"},
            {"object", obj}}}};
}

// A certificate pair mounted as kubelet mounts a Secret: tls.crt and tls.key behind a `..data`
// symlink that publish() swaps atomically to a new generation.
class SecretMount {
 public:
  SecretMount(fs::path pki, fs::path mount) : pki_(std::move(pki)), mount_(std::move(mount)) {
    fs::create_directories(mount_);
  }
  // Publishes <pki>/<name>.crt and .key as the mount's current pair.
  void publish(const std::string& name) {
    fs::path data = mount_ / ("..gen" + std::to_string(gen_++));
    fs::create_directories(data);
    fs::copy_file(pki_ / (name + ".crt"), data / "tls.crt");
    fs::copy_file(pki_ / (name + ".key"), data / "tls.key");
    fs::path tmp = mount_ / "..data_tmp";
    fs::create_directory_symlink(data.filename(), tmp);
    fs::rename(tmp, mount_ / "..data");  // atomic swap
    if (!fs::exists(fs::symlink_status(mount_ / "tls.crt"))) {
      fs::create_symlink("..data/tls.crt", mount_ / "tls.crt");
      fs::create_symlink("..data/tls.key", mount_ / "tls.key");
    }
  }
  [[nodiscard]] std::string cert() const { return (mount_ / "tls.crt").string(); }
  [[nodiscard]] std::string key() const { return (mount_ / "tls.key").string(); }

 private:
  fs::path pki_, mount_;
  int gen_ = 0;
};

}  // namespace gpuguard::test::e2e
