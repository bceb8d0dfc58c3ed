// The gpuguard binary end to end: exit codes, formats, stdin, config discovery, errors.

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/json.h"
#include "tests/support/support.h"

using namespace gpuguard;
using engine::json;

namespace {
const char* kErrorPod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n  containers:\n  - name: c\n"
    "    resources: {requests: {nvidia.com/gpu: 1}}\n  priorityClassName: training\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n";
const char* kWarningQuota =
    "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q, namespace: a}\nspec: {hard: {limits.nvidia.com/gpu: 4}}\n";
const char* kCleanPod =
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: 1}}\n  priorityClassName: training\n  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n";
}  // namespace

TEST_SUITE("cli") {

TEST_CASE("exit codes: 0 clean, 1 findings at or above --fail-on, 2 input errors") {
  test::TempDir dir;
  test::write_file(dir.path() / "err.yaml", kErrorPod);
  test::write_file(dir.path() / "warn.yaml", kWarningQuota);
  test::write_file(dir.path() / "ok.yaml", kCleanPod);
  test::write_file(dir.path() / "broken.yaml", "a: [1\n");
  auto p = [&](const char* f) { return (dir.path() / f).string(); };
  CHECK(test::run({"lint", "--no-config", p("ok.yaml")}).exit_code == 0);
  CHECK(test::run({"lint", "--no-config", p("err.yaml")}).exit_code == 1);
  CHECK(test::run({"lint", "--no-config", p("warn.yaml")}).exit_code == 0);
  CHECK(test::run({"lint", "--no-config", "--fail-on", "warning", p("warn.yaml")}).exit_code == 1);
  CHECK(test::run({"lint", "--no-config", "--fail-on", "none", p("err.yaml")}).exit_code == 0);
  CHECK(test::run({"lint", "--no-config", p("broken.yaml"), p("ok.yaml")}).exit_code == 2);
  CHECK(test::run({"lint", "--no-config", p("nope.yaml")}).exit_code == 2);
  CHECK(test::run({"lint", "--no-config"}).exit_code == 2);
  CHECK(test::run({"lint", "--bogus-flag", p("ok.yaml")}).exit_code == 2);
  CHECK(test::run({"lint", "--fail-on", "sometimes", p("ok.yaml")}).exit_code == 2);
  CHECK(test::run({}).exit_code == 2);
}

TEST_CASE("a folder that cannot be listed is an input error, and the files beside it are still linted") {
  // As root every folder can be listed: the run drops to nobody (setpriv, util-linux) to see the refusal.
  test::TempDir dir;
  namespace fs = std::filesystem;
  test::write_file(dir.path() / "top" / "ok.yaml", kErrorPod);
  test::write_file(dir.path() / "top" / "locked" / "x.yaml", kErrorPod);
  test::write_file(dir.path() / "shut" / "y.yaml", kErrorPod);
  fs::create_symlink("../../shut/y.yaml", dir.path() / "top" / "locked" / "z.yaml");
  fs::create_symlink("../shut/y.yaml", dir.path() / "top" / "via.yaml");  // into a folder that cannot be searched
  const auto rwx = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                   fs::perms::others_exec;
  fs::permissions(dir.path(), rwx);
  fs::permissions(dir.path() / "top", rwx);
  fs::permissions(dir.path() / "top" / "locked", fs::perms::owner_write | fs::perms::owner_exec |
                                                     fs::perms::group_exec | fs::perms::others_exec);  // searchable, not listable
  fs::permissions(dir.path() / "shut", fs::perms::none);
  std::vector<std::string> argv{test::binary().string(), "lint", "--no-config", "--color", "never",
                                (dir.path() / "top").string(), (dir.path() / "shut").string()};
  if (geteuid() == 0) argv.insert(argv.begin(), {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"});
  auto r = test::run_command(argv);
  CHECK(r.exit_code == 2);
  const std::string top = (dir.path() / "top").string();
  CHECK(r.out.find(top + "/locked: error: cannot read the directory: Permission denied\n") != std::string::npos);
  CHECK(r.out.find((dir.path() / "shut").string() + ": error: cannot read the directory: Permission denied\n") !=
        std::string::npos);
  CHECK(r.out.find(top + "/via.yaml: error: cannot open: Permission denied\n") != std::string::npos);
  CHECK(r.out.find(top + "/ok.yaml:8:28: error: ") != std::string::npos);  // linted all the same
  CHECK(r.out.find("1 error, 0 warnings, 0 info in 1 object (1 file); 3 input errors") != std::string::npos);
  fs::permissions(dir.path() / "top" / "locked", rwx);  // so that the temporary folder can be removed
  fs::permissions(dir.path() / "shut", rwx);
}

TEST_CASE("text output: file:line:col: severity: message [rule], then a summary") {
  test::TempDir dir;
  test::write_file(dir.path() / "err.yaml", kErrorPod);
  auto r = test::run({"lint", "--no-config", "--color", "never", "err.yaml"}, "", dir.path());
  CHECK(r.out.rfind("err.yaml:8:28: error: container \"c\" requests nvidia.com/gpu: 1 without a limit", 0) == 0);
  CHECK(r.out.find("[gpu-request-limit-mismatch]\n") != std::string::npos);
  CHECK(r.out.find("1 error, 0 warnings, 0 info in 1 object (1 file)") != std::string::npos);
  CHECK(r.out.find("\033[") == std::string::npos);
  auto colored = test::run({"lint", "--no-config", "--color", "always", "err.yaml"}, "", dir.path());
  CHECK(colored.out.find("\033[1;31merror") != std::string::npos);
}

TEST_CASE("a malformed file is reported and the rest is still linted") {
  test::TempDir dir;
  test::write_file(dir.path() / "a.yaml", "a: [1\n---\n" + std::string(kErrorPod));
  test::write_file(dir.path() / "b.yaml", kErrorPod);
  auto r = test::run({"lint", "--no-config", "--color", "never", "."}, "", dir.path());
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("a.yaml:2:1: error:") != std::string::npos);  // the broken flow ends at `---`
  CHECK(r.out.find("a.yaml:10:28: error: container") != std::string::npos);
  CHECK(r.out.find("b.yaml:8:28: error: container") != std::string::npos);
  CHECK(r.out.find("1 input error") != std::string::npos);
}

TEST_CASE("stdin with -") {
  auto r = test::run({"lint", "--no-config", "--color", "never", "-"}, kErrorPod);
  CHECK(r.exit_code == 1);
  CHECK(r.out.rfind("<stdin>:8:28: error:", 0) == 0);
}

TEST_CASE("JSON on stdin, as `kubectl get -o json` and `-w -o json` print it: read as JSON, with positions") {
  // Two objects one after another; the second's annotation is a surrogate-pair escape (which YAML
  // refuses), and its GPU request has no limit.
  const std::string pod =
      "{\n  \"apiVersion\": \"v1\", \"kind\": \"Pod\",\n  \"metadata\": {\"name\": \"NAME\", \"annotations\": {\"a\": \"\\ud83d\\ude80\"}},\n"
      "  \"spec\": {\"containers\": [{\"name\": \"c\", \"image\": \"i\",\n"
      "    \"resources\": {\"requests\": {\"nvidia.com/gpu\": 1}}}]}\n}\n";
  auto named = [&](const char* name) { return std::regex_replace(pod, std::regex("NAME"), name); };
  auto r = test::run({"lint", "--no-config", "--color", "never", "--format", "json", "-"}, named("a") + named("b"));
  CHECK(r.exit_code == 1);
  const json doc = json::parse(r.out);
  CHECK(doc["summary"]["objects"] == json(2));
  bool second = false;
  for (const auto& f : doc["findings"])
    if (f["rule"] == json("gpu-request-limit-mismatch") && f["object"]["name"] == json("b")) {
      second = true;
      CHECK(f["line"] == json(11));  // the second object's 5th line
      CHECK(f["column"] == json(32));
    }
  CHECK(second);
  // A syntax error: its place, exit 2, the object before it still linted.
  r = test::run({"lint", "--no-config", "--color", "never", "-"}, named("a") + "{\"kind\": \"Pod\" \"x\"}\n");
  CHECK(r.exit_code == 2);
  CHECK(r.out.find("<stdin>:7:16: error: invalid JSON: expected ',' or '}' after an object member, found '\"'") != std::string::npos);
  CHECK(r.out.find("<stdin>:5:32: error: container \"c\"") != std::string::npos);
  // YAML that starts with '{' (a flow mapping) is read as YAML, as kubectl reads it.
  r = test::run({"lint", "--no-config", "--color", "never", "-"},
                "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: i, "
                "resources: {requests: {nvidia.com/gpu: 1}}}]}}\n");
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("<stdin>:1:113: error: container \"c\"") != std::string::npos);
}

TEST_CASE("--format json") {
  auto r = test::run({"lint", "--no-config", "--format", "json", "-"}, std::string(kErrorPod) + "---\n" + kWarningQuota);
  CHECK(r.exit_code == 1);
  json doc = json::parse(r.out);
  REQUIRE(doc["findings"].size() == 2);
  CHECK(doc["findings"][0]["rule"] == json("gpu-request-limit-mismatch"));
  CHECK(doc["findings"][0]["line"] == json(8));
  CHECK(doc["findings"][0]["pointer"] == json("/spec/containers/0/resources/requests/nvidia.com~1gpu"));
  CHECK(doc["findings"][0]["fix"][0]["op"] == json("add"));
  CHECK(doc["findings"][1]["object"]["namespace"] == json("a"));
  CHECK(doc["summary"]["errors"] == json(1));
  CHECK(doc["summary"]["warnings"] == json(1));
}

TEST_CASE("config: found upward from the working directory, --config, --no-config, errors with positions") {
  test::TempDir dir;
  test::write_file(dir.path() / ".gpuguard.yaml", "rules:\n  gpu-request-limit-mismatch: false\n");
  test::write_file(dir.path() / "sub" / "err.yaml", kErrorPod);
  CHECK(test::run({"lint", "err.yaml"}, "", dir.path() / "sub").exit_code == 0);
  CHECK(test::run({"lint", "--no-config", "err.yaml"}, "", dir.path() / "sub").exit_code == 1);
  test::write_file(dir.path() / "bad.yaml", "rules:\n  gpu-request-limit-mismatch:\n    severity: loud\n");
  auto bad = test::run({"lint", "--config", (dir.path() / "bad.yaml").string(), "err.yaml"}, "", dir.path() / "sub");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("bad.yaml:3:5: error: rules.gpu-request-limit-mismatch.severity") != std::string::npos);
  auto missing = test::run({"lint", "--config", "/no/such/config.yaml", "err.yaml"}, "", dir.path() / "sub");
  CHECK(missing.exit_code == 2);
  // A folder is not an empty config; /dev/zero and a sparse 2 GiB file are refused after 1 MiB
  // is read, not after they fill memory.
  auto folder = test::run({"lint", "--config", dir.path().string(), "err.yaml"}, "", dir.path() / "sub");
  CHECK(folder.exit_code == 2);
  CHECK(folder.err.find("cannot read the config file: it is a directory") != std::string::npos);
  { std::ofstream(dir.path() / "sparse.yaml"); }
  std::filesystem::resize_file(dir.path() / "sparse.yaml", uintmax_t{2} << 30);
  for (const std::string& huge : std::vector<std::string>{"/dev/zero", (dir.path() / "sparse.yaml").string()}) {
    CAPTURE(huge);
    auto r = test::run({"lint", "--config", huge, "err.yaml"}, "", dir.path() / "sub");
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("config file is over 1 MiB") != std::string::npos);
  }
}

TEST_CASE("two --format reports into one file are refused") {
  test::TempDir dir;
  test::write_file(dir.path() / "ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
  const std::string out = (dir.path() / "same.out").string(), alias = (dir.path() / "." / "same.out").string();
  auto r = test::run({"lint", "--no-config", "--format", "json=" + out, "--format", "sarif=" + alias, (dir.path() / "ok.yaml").string()});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--format json and --format sarif both write") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
  auto two = test::run({"lint", "--no-config", "--format", "json=" + out, "--format", "sarif=" + out + ".sarif", (dir.path() / "ok.yaml").string()});
  CHECK(two.exit_code == 0);
}

TEST_CASE("a report that cannot be written to standard output is exit code 2, not a clean run") {
  if (!std::filesystem::exists("/dev/full")) {
    test::skip("no /dev/full");
    return;
  }
  test::TempDir dir;
  test::write_file(dir.path() / "ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
  const std::string bin = test::binary().string(), file = (dir.path() / "ok.yaml").string();
  for (const std::string& args : std::vector<std::string>{"lint --no-config --format sarif " + file, "lint --no-config " + file, "mutate --no-config " + file, "rules",
                                 "explain priority-class-count", "--help", "--version", "lint --help"}) {
    CAPTURE(args);
    auto r = test::run_command({"sh", "-c", "'" + bin + "' " + args + " > /dev/full"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("gpuguard: cannot write to standard output") != std::string::npos);
  }
}

TEST_CASE("--print-config's output loads back as the same configuration; namespaces are DNS-1123 labels") {
  test::TempDir dir;
  // Values and keys a plain scalar would turn into something else: a namespace "yes", params
  // keys "yes" and "010".
  test::write_file(dir.path() / "in.yaml",
                   "defaultNamespace: \"yes\"\nrules:\n  gpu-priority-class-missing:\n    params: {defaults: {\"yes\": high, \"010\": low}}\n");
  auto first = test::run({"lint", "--config", (dir.path() / "in.yaml").string(), "--print-config"});
  REQUIRE(first.exit_code == 0);
  test::write_file(dir.path() / "out.yaml", first.out);
  auto second = test::run({"lint", "--config", (dir.path() / "out.yaml").string(), "--print-config"});
  REQUIRE_MESSAGE(second.exit_code == 0, second.err);
  // The same but for the first line, which names the file.
  CHECK(first.out.substr(first.out.find('\n')) == second.out.substr(second.out.find('\n')));
  CHECK(first.out.find("defaultNamespace: \"yes\"") != std::string::npos);
  // A namespace that is not a DNS-1123 label: refused in the config and on the command line.
  test::write_file(dir.path() / "bad.yaml", "defaultNamespace: Not_Valid!\n");
  auto bad = test::run({"lint", "--config", (dir.path() / "bad.yaml").string(), "--print-config"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("bad.yaml:1:1: error: defaultNamespace: expected a namespace name (a DNS-1123 label") != std::string::npos);
  for (const char* command : {"lint", "mutate", "audit"}) {
    CAPTURE(command);
    auto r = test::run({command, "--no-config", "-n", "Not_Valid!", "x.yaml"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("expected a namespace name") != std::string::npos);
  }
}

TEST_CASE("--print-config prints the effective configuration") {
  test::TempDir dir;
  test::write_file(dir.path() / ".gpuguard.yaml", "rules:\n  priority-class-count: {params: {max: 7}}\n");
  auto r = test::run({"lint", "--print-config"}, "", dir.path());
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("max: 7") != std::string::npos);
  CHECK(r.out.find("gpu-request-limit-mismatch:") != std::string::npos);
  CHECK(r.out.find("nvidia.com/mig-*") != std::string::npos);
}

TEST_CASE("--complete lets rules about missing objects speak") {
  const std::string pc = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: a}\nvalue: 1\n";
  CHECK(test::run({"lint", "--no-config", "--fail-on", "warning", "-"}, pc).exit_code == 0);
  auto r = test::run({"lint", "--no-config", "--fail-on", "warning", "--complete", "-"}, pc);
  CHECK(r.exit_code == 1);
  CHECK(r.out.find("[priority-class-count]") != std::string::npos);
}

TEST_CASE("rules, explain, schema, version") {
  auto rules = test::run({"rules"});
  CHECK(rules.exit_code == 0);
  CHECK(rules.out.find("gpu-request-limit-mismatch") != std::string::npos);
  auto md = test::run({"rules", "--format", "markdown"});
  CHECK(md.out == test::read_file(test::source_dir() / "rules" / "README.md"));
  auto js = test::run({"rules", "--format", "json"});
  CHECK(json::parse(js.out).size() == test::registry().rules().size());
  auto ex = test::run({"explain", "priority-class-count"});
  CHECK(ex.exit_code == 0);
  CHECK(ex.out.find("min (integer, default 3)") != std::string::npos);
  CHECK(test::run({"explain", "no-such-rule"}).exit_code == 2);
  auto sc = test::run({"schema", "config"});
  CHECK(json::parse(sc.out)["title"] == json("gpuguard configuration (.gpuguard.yaml)"));
  auto v = test::run({"version"});
  CHECK(v.out.rfind("gpuguard ", 0) == 0);
}

TEST_CASE("serve and audit run in gpuguard-net beside gpuguard, which loads no network library") {
  // cli/net.h: the program every command starts in does not link cpp-httplib or libssl.
  auto needed = test::run_command({"objdump", "-p", test::binary().string()});
  if (needed.exit_code == 0) {
    for (const char* lib : {"libcpp-httplib", "libssl", "libbrotli", "libz."}) CHECK_MESSAGE(needed.out.find(lib) == std::string::npos, lib);
    auto net = test::run_command({"objdump", "-p", (test::binary().parent_path() / "gpuguard-net").string()});
    CHECK(net.out.find("libcpp-httplib") != std::string::npos);
  }
  // A usage error is the first program's own answer; a valid command line reaches gpuguard-net,
  // which reads the files (the certificate here).
  auto usage = test::run({"serve", "--listen", "nonsense", "--tls-cert", "x", "--tls-key", "y"});
  CHECK(usage.exit_code == 2);
  CHECK(usage.err.find("--listen must be HOST:PORT") != std::string::npos);
  // Seconds must be finite numbers (CLI11's Range lets NaN through; cast to milliseconds it is
  // undefined).
  for (const char* option : {"--reload-interval", "--shutdown-delay", "--grace-period"})
    for (const char* value : {"nan", "inf", "-nan", "1e999", "2x"}) {
      CAPTURE(option);
      CAPTURE(value);
      auto bad = test::run({"serve", "--listen", "127.0.0.1:0", "--tls-cert", "x", "--tls-key", "y", option, value});
      CHECK(bad.exit_code == 2);
      CHECK(bad.err.find(option) != std::string::npos);
    }
  test::TempDir dir;
  auto missing_cert = test::run({"serve", "--listen", "127.0.0.1:0", "--tls-cert", (dir.path() / "none.pem").string(), "--tls-key", "k"});
  CHECK(missing_cert.exit_code == 2);
  CHECK(missing_cert.err.find("cannot load the serving certificate") != std::string::npos);

  // Alone in a folder, gpuguard still lints and mutates, and says what serve and audit miss.
  const auto alone = dir.path() / "gpuguard";
  std::filesystem::copy_file(test::binary(), alone);
  test::write_file(dir.path() / "pod.yaml", kErrorPod);
  auto lint = test::run_command({alone.string(), "lint", "--no-config", (dir.path() / "pod.yaml").string()});
  CHECK(lint.exit_code == 1);
  CHECK(lint.out.find("[gpu-request-limit-mismatch]") != std::string::npos);
  const std::vector<std::vector<std::string>> commands = {{"serve", "--tls-cert", "c", "--tls-key", "k"}, {"audit", "--no-config"}};
  auto run_alone = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv{alone.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_command(argv);
  };
  for (const auto& args : commands) {
    CAPTURE(args[0]);
    auto r = run_alone(args);
    CHECK(r.exit_code == 127);  // as env(1) and shells answer a program they cannot find
    CHECK(r.err.find("gpuguard " + args[0] + ": cannot run " + (dir.path() / "gpuguard-net").string() + ": No such file or directory") !=
          std::string::npos);
  }
  // A gpuguard-net that is gpuguard itself (a link) would run gpuguard again and again: refused.
  std::filesystem::create_symlink("gpuguard", dir.path() / "gpuguard-net");
  for (const auto& args : commands) {
    CAPTURE(args[0]);
    auto r = run_alone(args);
    CHECK(r.exit_code == 126);
    CHECK(r.err.find("gpuguard " + args[0] + ": the program run as gpuguard-net was gpuguard again") != std::string::npos);
  }
  // gpuguard-net started by another version of gpuguard (one of them upgraded alone): refused.
  const auto net = test::binary().parent_path() / "gpuguard-net";
  auto other = test::run_command({"env", "GPUGUARD_NET_EXEC=0.0.0-other", net.string(), "serve", "--tls-cert", "c", "--tls-key", "k"});
  CHECK(other.exit_code == 126);
  CHECK(other.err.find("was started by gpuguard 0.0.0-other: install both programs from one build") != std::string::npos);
}

TEST_CASE("the host's openssl.cnf does not reach gpuguard's hashes") {
  // gpuguard's libcrypto only hashes SARIF fingerprints and encodes base64; a config that loads a
  // provider that is not there made every fingerprint empty while the config was read.
  test::TempDir dir;
  test::write_file(dir.path() / "pod.yaml", kErrorPod);
  test::write_file(dir.path() / "openssl.cnf",
                   "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n[provider_sect]\nbogus = bogus_sect\n"
                   "[bogus_sect]\nmodule = " + (dir.path() / "missing.so").string() + "\nactivate = 1\n");
  const std::vector<std::string> lint = {test::binary().string(), "lint", "--no-config", "-f", "sarif", (dir.path() / "pod.yaml").string()};
  auto plain = test::run_command(lint);
  std::vector<std::string> with_conf = {"env", "OPENSSL_CONF=" + (dir.path() / "openssl.cnf").string()};
  with_conf.insert(with_conf.end(), lint.begin(), lint.end());
  auto configured = test::run_command(with_conf);
  CHECK(configured.exit_code == plain.exit_code);
  CHECK(configured.out == plain.out);
  const json sarif = json::parse(plain.out);
  const auto& result = sarif["runs"][0]["results"][0];
  REQUIRE(result.contains("partialFingerprints"));
  CHECK(result["partialFingerprints"]["gpuguard/v1"].get<std::string>().size() == 32);
}

TEST_CASE("the shipped examples: the seed's own defects are found") {
  auto r = test::run({"lint", "--color", "never", "--complete", "--fail-on", "warning", "examples/"}, "", test::source_dir());
  CHECK(r.exit_code == 1);
  // As a whole cluster, the seed's PodGroup names a queue it never defines (a warning: the queue may
  // be created after it; Volcano's own webhook refuses it meanwhile).
  CHECK(r.out.find("examples/seed/9.4-podgroup.yaml:8:3: warning: PodGroup train-pg names Volcano Queue cq-train, which does not exist") != std::string::npos);
  CHECK(r.out.find("examples/seed/9.5-four-layers.yaml:13:5: warning: `limits.nvidia.com/gpu` has no effect") != std::string::npos);
  CHECK(r.out.find("examples/seed/9.5-four-layers.yaml:28:9: warning: default nvidia.com/gpu: 1 is given by the LimitRanger to every container") != std::string::npos);
  CHECK(r.out.find("[priority-class-count]") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("cli") {

TEST_CASE("gpuguard mutate: the fixed manifests as YAML, in source key order; the input is never changed") {
  test::TempDir dir;
  const std::string pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {app: \"yes\"}\nspec:\n  containers:\n"
                          "  - name: c\n    image: x\n    resources:\n      requests: {nvidia.com/gpu: 1, cpu: \"010\"}\n";
  test::write_file(dir.path() / "pod.yaml", pod);
  auto r = test::run({"mutate", "--no-config", "pod.yaml"}, "", dir.path());
  CHECK(r.exit_code == 0);
  CHECK(r.out ==
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels:\n    app: \"yes\"\nspec:\n  containers:\n    - name: c\n"
        "      image: x\n      resources:\n        requests:\n          nvidia.com/gpu: 1\n          cpu: \"010\"\n"
        "        limits:\n          nvidia.com/gpu: 1\n"
        "  tolerations:\n    - effect: NoSchedule\n      key: nvidia.com/gpu\n      operator: Exists\n");
  CHECK(test::read_file(dir.path() / "pod.yaml") == pod);
  // What it prints reads back as the same object, and mutating that changes nothing.
  auto again = test::run({"mutate", "--no-config", "--exit-code", "-"}, r.out);
  CHECK(again.exit_code == 0);
  CHECK(test::run({"mutate", "--no-config", "--exit-code", "pod.yaml"}, "", dir.path()).exit_code == 1);
  auto diff = test::run({"mutate", "--no-config", "--diff", "pod.yaml"}, "", dir.path());
  CHECK(diff.out.find("+        limits:\n+          nvidia.com/gpu: 1\n") != std::string::npos);
  CHECK(diff.out.rfind("--- a/pod.yaml (Pod default/p)", 0) == std::string::npos);  // the namespace is as written
  auto patch = test::run({"mutate", "--no-config", "--patch", "pod.yaml"}, "", dir.path());
  json p = json::parse(patch.out);
  CHECK(p["rules"] == json({"gpu-toleration-missing", "gpu-request-limit-mismatch"}));  // in source order
  CHECK(p["patch"][0]["path"] == json("/spec/containers/0/resources/limits"));
  CHECK(p["patch"][1]["path"] == json("/spec/tolerations"));
}

TEST_CASE("gpuguard mutate: a string that is not UTF-8 (a !!binary value) is U+FFFD in --patch's JSON, !!binary in its YAML") {
  test::TempDir dir;
  test::write_file(dir.path() / "cfg.yaml",
                   "rules: {gpu-priority-class-missing: {params: {defaults: {team-a: !!binary /3RyYWluaW5n}}}}\n");  // "\xfftraining"
  test::write_file(dir.path() / "pod.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team-a}\n"
                   "spec:\n  containers:\n  - name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n");
  auto r = test::run({"mutate", "-c", "cfg.yaml", "--patch", "pod.yaml"}, "", dir.path());
  REQUIRE(r.exit_code == 0);  // it was an uncaught exception
  json p = json::parse(r.out);
  CHECK(p["patch"][0] == json({{"op", "add"}, {"path", "/spec/priorityClassName"}, {"value", "\xEF\xBF\xBDtraining"}}));
  CHECK(test::run({"mutate", "-c", "cfg.yaml", "--diff", "pod.yaml"}, "", dir.path()).exit_code == 0);
  // The YAML it prints writes such strings back as !!binary (YAML text is UTF-8), keys too; what it
  // prints reads back as the same object.
  test::write_file(dir.path() / "bin.yaml",
                   "apiVersion: v1\nkind: Pod\nmetadata:\n  name: !!binary /3A=\n  namespace: team-a\n"
                   "  annotations: {a: !!binary /w==, ? !!binary /w== : k}\n"
                   "spec:\n  containers:\n  - name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n");
  auto yaml = test::run({"mutate", "--no-config", "bin.yaml"}, "", dir.path());
  REQUIRE(yaml.exit_code == 0);
  CHECK(yaml.out.find("  name: !!binary \"/3A=\"\n") != std::string::npos);
  CHECK(yaml.out.find("    !!binary \"/w==\": k\n") != std::string::npos);
  auto again = test::run({"mutate", "--no-config", "--exit-code", "-"}, yaml.out);
  CHECK(again.exit_code == 0);
  CHECK(again.out == yaml.out);
}

TEST_CASE("gpuguard mutate: block scalars and odd characters of objects it does not change are written back as they read") {
  // The ConfigMap is printed again beside the fixed Pod: its `|2` and `|+` blocks, a control
  // character, U+2028, DEL and JSON's U+FFFF must read back as the same strings, not as YAML that
  // does not parse or says something else.
  test::TempDir dir;
  test::write_file(dir.path() / "in.yaml",
                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scripts}\ndata:\n"
                   "  run.sh: |2\n      indented\n    x\n  keep.txt: |+\n    x\n\n"
                   "  ctl: \"a\\x01b\\n\"\n  ls: \"a\\u2028b\\n\"\n  del: \"a\\x7Fb\"\n  ffff: \"a\\uFFFFb\"\n"
                   "---\napiVersion: v1\nkind: Pod\nmetadata: {name: a}\n"
                   "spec:\n  containers:\n  - name: c\n    image: x\n    resources: {requests: {nvidia.com/gpu: 1}}\n");
  auto out = test::run({"mutate", "--no-config", "in.yaml"}, "", dir.path());
  REQUIRE(out.exit_code == 0);
  auto again = test::run({"mutate", "--no-config", "--exit-code", "-"}, out.out);
  CHECK_MESSAGE(again.exit_code == 0, again.err);
  CHECK(again.out == out.out);
  // Each string as the source had it.
  CHECK(out.out.find("  run.sh: \"  indented\\nx\\n\"\n") != std::string::npos);
  CHECK(out.out.find("  keep.txt: \"x\\n\\n\"\n") != std::string::npos);
  CHECK(out.out.find("  ls: \"a\\u2028b\\n\"\n") != std::string::npos);
  CHECK(out.out.find("  del: \"a\\x7fb\"\n") != std::string::npos);
  CHECK(out.out.find("  ffff: !!binary") != std::string::npos);
}

TEST_CASE("gpuguard mutate: Pods by default, controllers' templates with --templates") {
  const std::string deploy =
      "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n      containers:\n"
      "      - name: c\n        resources: {requests: {nvidia.com/gpu: 1}}\n";
  CHECK(test::run({"mutate", "--no-config", "--exit-code", "-"}, deploy).exit_code == 0);
  auto r = test::run({"mutate", "--no-config", "--templates", "--patch", "-"}, deploy);
  CHECK(json::parse(r.out)["patch"][0]["path"] == json("/spec/template/spec/containers/0/resources/limits"));
  CHECK(test::run({"mutate", "--no-config"}).exit_code == 2);
  CHECK(test::run({"mutate", "--no-config", "-"}, "a: [1\n").exit_code == 2);
}

TEST_CASE("lint --no-annotation-exemptions: the same manifest, its ignore annotation honoured, and not") {
  test::TempDir dir;
  std::string pod = kErrorPod;
  pod.replace(pod.find("metadata: {name: p}"), 19,
              "metadata:\n  name: p\n  annotations: {gpuguard.io/ignore: \"*\", gpuguard.io/ignore-reason: legacy}");
  test::write_file(dir.path() / "pod.yaml", pod);
  auto honoured = test::run({"lint", "--no-config", "--format", "json", "pod.yaml"}, "", dir.path());
  CHECK(honoured.exit_code == 0);
  json h = json::parse(honoured.out);
  CHECK(h["summary"]["suppressed"] == json(1));
  REQUIRE(h["findings"].size() == 1);
  CHECK(h["findings"][0]["suppressed"]["reason"] == json("legacy"));
  for (const char* format : {"json", "text"}) {
    CAPTURE(format);
    auto flagged = test::run({"lint", "--no-config", "--no-annotation-exemptions", "--format", format, "pod.yaml"}, "", dir.path());
    CHECK(flagged.exit_code == 1);
    CHECK(flagged.out.find("(gpuguard.io/ignore not honoured: --no-annotation-exemptions)") != std::string::npos);
  }
  json f = json::parse(test::run({"lint", "--no-config", "--no-annotation-exemptions", "--format", "json", "pod.yaml"}, "", dir.path()).out);
  CHECK(f["summary"]["suppressed"] == json(0));
  CHECK(f["findings"][0]["rule"] == json("gpu-request-limit-mismatch"));
  CHECK_FALSE(f["findings"][0].contains("suppressed"));
  // The config's exclusions still apply: the operator wrote them.
  test::write_file(dir.path() / ".gpuguard.yaml", "exclude: [{name: p, reason: operator}]\n");
  CHECK(test::run({"lint", "--no-annotation-exemptions", "pod.yaml"}, "", dir.path()).exit_code == 0);
}

TEST_CASE("gpuguard mutate: a fix only in enforce mode, not with fix: false; annotations as webhook.exemptions allows") {
  test::TempDir dir;
  test::write_file(dir.path() / "pod.yaml", kErrorPod);
  auto rules = [&](const std::string& config, std::vector<std::string> extra = {}) {
    test::write_file(dir.path() / ".gpuguard.yaml", config);
    std::vector<std::string> args = {"mutate", "--patch", "pod.yaml"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = test::run(args, "", dir.path());
    CHECK_MESSAGE(r.exit_code == 0, r.err);
    return r.out.empty() ? json::array() : json::parse(r.out)["rules"];
  };
  CHECK(rules("{}\n") == json({"gpu-request-limit-mismatch"}));
  CHECK(rules("rules: {gpu-request-limit-mismatch: {mode: audit}}\n").empty());
  CHECK(rules("rules: {gpu-request-limit-mismatch: {mode: warn}}\n").empty());
  CHECK(rules("rules: {gpu-request-limit-mismatch: {fix: false}}\n").empty());

  std::string pod = kErrorPod;
  pod.replace(pod.find("metadata: {name: p}"), 19,
              "metadata:\n  name: p\n  annotations: {gpuguard.io/ignore: gpu-request-limit-mismatch, gpuguard.io/ignore-reason: r}");
  test::write_file(dir.path() / "pod.yaml", pod);
  CHECK(rules("{}\n") == json({"gpu-request-limit-mismatch"}));  // annotations off at admission: the fix applies
  const std::string by_user = "webhook: {exemptions: {annotations: true, allow: [{users: [ci], groups: [admins]}]}}\n";
  CHECK(rules(by_user).size() == 1);  // nobody named: no entry with users matches
  CHECK(rules(by_user, {"--as", "ci"}).empty());
  CHECK(rules(by_user, {"--as", "bob", "--as-group", "x", "--as-group", "admins"}).empty());
  CHECK(rules(by_user, {"--as", "bob", "--as-group", "x"}).size() == 1);
}

TEST_CASE("--jobs: a large run split across threads reports byte for byte what one thread reports") {
  // One file over 8 MiB (parsed in parts by several threads), with what the cross-object rules
  // gather across parts (LimitRanges, quotas, PriorityClasses, PodGroups, namespaces), objects in
  // Lists, ignore annotations and broken documents, plus small files around it.
  test::TempDir dir;
  std::string big;
  for (int i = 0; i < 6000; ++i) {
    const std::string ns = "team-" + std::to_string(i % 37);
    const std::string n = std::to_string(i);
    switch (i % 6) {
      case 0:
        big += "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d" + n + ", namespace: " + ns + "}\nspec:\n  replicas: 2\n"
               "  template:\n    spec:\n      priorityClassName: p" + std::to_string(i % 5) + "\n      containers:\n"
               "      - {name: a, image: x, resources: {limits: {nvidia.com/gpu: " + std::to_string(1 + i % 8) + "}}}\n"
               "      - {name: log, image: y}\n";
        break;
      case 1:
        big += "---\napiVersion: v1\nkind: LimitRange\nmetadata: {name: l" + n + ", namespace: " + ns + "}\nspec:\n  limits:\n"
               "  - {type: Container, default: {nvidia.com/gpu: 1}, max: {nvidia.com/gpu: 8}}\n";
        break;
      case 2:
        big += "---\napiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: g" + n + ", namespace: " + ns +
               "}\nspec: {minMember: 3, queue: q" + std::to_string(i % 4) + "}\n---\napiVersion: v1\nkind: Pod\nmetadata:\n"
               "  name: p" + n + "\n  namespace: " + ns + "\n  annotations: {scheduling.k8s.io/group-name: g" + n + "}\n"
               "spec: {schedulerName: volcano, containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]}\n";
        break;
      case 3:
        big += "---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ResourceQuota\n  metadata: {name: q" + n +
               ", namespace: " + ns + "}\n  spec: {hard: {nvidia.com/gpu: " + std::to_string(i % 9) + "}}\n"
               "- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: i" + n + "\n    namespace: " + ns +
               "\n    annotations: {gpuguard.io/ignore: gpu-toleration-missing}\n"
               "  spec: {containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: 1}}}]}\n";
        break;
      case 4:
        big += "---\napiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: p" + std::to_string(i % 7) + "}\nvalue: " + n + "\n";
        break;
      default:
        big += i % 1200 == 5 ? "---\nkind: [broken\n" : "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n";
    }
    big += "# " + std::string(1200, 'x') + "\n";
  }
  REQUIRE(big.size() > (8u << 20));
  test::write_file(dir.path() / "a.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: first}\n");
  test::write_file(dir.path() / "b.yaml", big);
  test::write_file(dir.path() / "c.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: c, namespace: team-1}\n"
                                          "spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]}\n");
  for (const char* format : {"json", "text"}) {
    CAPTURE(format);
    auto lint = [&](const char* jobs) {
      return test::run({"lint", "--no-config", "--complete", "--show-suppressed", "--format", format, "--jobs", jobs, "."}, "", dir.path());
    };
    const auto one = lint("1");
    CHECK(one.exit_code == 2);  // the broken documents
    CHECK(one.out.size() > 100000);
    for (const char* jobs : {"2", "3", "8"}) {
      CAPTURE(jobs);
      const auto many = lint(jobs);
      CHECK(many.exit_code == one.exit_code);
      CHECK(many.out == one.out);
      CHECK(many.err == one.err);
    }
  }
  // Less input than is worth a thread (engine/load.cpp: under 256 KiB) is read in turn on one,
  // whatever --jobs says; stdin is still cut in two parts, and its documents keep their numbers.
  size_t cut = 0;
  for (int docs = 0; docs < 150; ++docs) cut = big.find("\n---\n", cut + 1);
  const std::string small = big.substr(0, cut + 1) + "---\nkind: [broken\n";
  REQUIRE(small.size() < (256u << 10));
  auto stdin_lint = [&](const char* jobs) {
    return test::run({"lint", "--no-config", "--complete", "--format", "json", "--jobs", jobs, "-"}, small);
  };
  const auto one = stdin_lint("1");
  CHECK(one.exit_code == 2);
  CHECK(json::parse(one.out)["diagnostics"].size() == 2);  // the 6th document, and the last
  const auto two = stdin_lint("2");
  CHECK(two.exit_code == one.exit_code);
  CHECK(two.out == one.out);
  CHECK(two.err == one.err);
}

TEST_CASE("--schemas-missing: an object no schema describes is a warning, an error, or nothing") {
  test::TempDir dir;
  // One kind's standalone schema (kubeconform's form) and two objects: one it describes, one not.
  test::write_file(dir.path() / "schemas" / "priorityclass-scheduling-v1.json",
                   R"({"type": "object", "x-kubernetes-group-version-kind": [{"group": "scheduling.k8s.io", "kind": "PriorityClass", "version": "v1"}],
                       "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "value": {"type": "integer"}}})");
  test::write_file(dir.path() / "in.yaml",
                   "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n---\n"
                   "apiVersion: example.com/v1\nkind: TrainingRun\nmetadata: {name: llm}\n");
  const std::string schemas = (dir.path() / "schemas").string(), in = (dir.path() / "in.yaml").string();
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"lint", "--no-config", "--schemas", schemas, "-f", "json", "--fail-on", "warning"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(in);
    return test::run(args);
  };
  auto severities = [](const test::Run& r) {
    std::vector<std::string> out;
    const json doc = json::parse(r.out);
    for (const auto& f : doc["findings"])
      if (f["rule"].get<std::string>() == "schema-missing") out.push_back(f["severity"].get<std::string>() + " " + f["message"].get<std::string>().substr(0, 40));
    return out;
  };
  const auto plain = run({});
  CHECK(plain.exit_code == 1);
  CHECK(severities(plain) == std::vector<std::string>{"warning no schema for example.com/v1 TrainingRun"});
  const auto error = run({"--schemas-missing", "error"});
  CHECK(severities(error) == std::vector<std::string>{"error no schema for example.com/v1 TrainingRun"});
  const auto ignore = run({"--schemas-missing", "ignore"});
  CHECK(ignore.exit_code == 0);
  CHECK(severities(ignore).empty());
  CHECK(run({"--schemas-missing", "maybe"}).exit_code == 2);
}

}  // TEST_SUITE
