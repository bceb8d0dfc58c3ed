// charts/gpuguard with the real helm 3.17.2: lint and template for each certificate mode and a
// values matrix; every rendered object validated against the Kubernetes definitions; the
// webhook configurations' safety properties; RBAC and rules in step with the rules' metadata.
// And the Dockerfile's runtime packages against what the binary links.

#include <algorithm>
#include <doctest/doctest.h>

#include <filesystem>
#include <regex>
#include <set>

#include "engine/json.h"
#include "engine/schema.h"
#include "rules/docs.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using engine::json;

namespace {

fs::path helm() { return test::source_dir() / "build" / "tools" / "helm"; }
fs::path chart() { return test::source_dir() / "charts" / "gpuguard"; }

struct Rendered {
  int exit_code = 0;
  std::string err;
  std::vector<engine::Object> objects;
  [[nodiscard]] const engine::Object* find(const std::string& kind, const std::string& name = "") const {
    for (const auto& o : objects)
      if (o.gvk.kind == kind && (name.empty() || o.name == name)) return &o;
    return nullptr;
  }
};

Rendered render(const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {helm().string(), "template", "rel", chart().string(), "--namespace", "gpuguard-system"};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  test::TempDir home;  // helm wants a writable cache and config
  std::vector<std::string> env = {"env", "HOME=" + home.path().string(), "HELM_CACHE_HOME=" + (home.path() / "cache").string(),
                                  "HELM_CONFIG_HOME=" + (home.path() / "config").string(), "HELM_DATA_HOME=" + (home.path() / "data").string()};
  env.insert(env.end(), argv.begin(), argv.end());
  auto r = test::run_command(env);
  Rendered out{r.exit_code, r.err, {}};
  if (r.exit_code == 0) out.objects = test::load_objects(r.out, "rendered.yaml");
  return out;
}

const std::vector<std::vector<std::string>>& matrix() {
  static const std::vector<std::vector<std::string>> m = {
      {},
      {"certificates.mode=cert-manager"},
      {"certificates.mode=cert-manager", "certificates.certManager.issuerRef.name=corp-ca", "certificates.certManager.issuerRef.kind=ClusterIssuer"},
      {"certificates.mode=secret", "certificates.secretName=my-tls", "certificates.caBundle=Zm9v"},
      {"priorityClassName=system-cluster-critical", "podAntiAffinity=required", "webhook.failurePolicy=Fail", "replicaCount=3"},
      {"serviceMonitor.enabled=true", "prometheusRule.enabled=true", "webhook.mutating.templates=true", "webhook.excludeNamespaces={ci,sandbox}"},
      {"replicaCount=1", "webhook.validating.enabled=false"},
  };
  return m;
}

}  // namespace

TEST_SUITE("chart") {

TEST_CASE("helm lint passes for every certificate mode") {
  if (!fs::exists(helm())) {
    test::skip("helm is not installed (make test runs scripts/test-tools.sh)");
    return;
  }
  for (const auto& sets : matrix()) {
    std::vector<std::string> argv = {helm().string(), "lint", chart().string()};
    for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
    auto r = test::run_command(argv);
    CAPTURE(r.out);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("every rendered object is valid for its Kubernetes schema, and gpuguard finds no error in its own chart") {
  if (!fs::exists(helm()) || !test::shared_schemas()) {
    test::skip("helm or ../shared/k8s-schemas missing");
    return;
  }
  for (const auto& sets : matrix()) {
    auto r = render(sets);
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    std::set<std::string> unchecked;
    for (const auto& o : r.objects) {
      CAPTURE(o.display_name());
      auto problems = test::shared_schemas()->validate(o);
      if (!problems) {
        unchecked.insert(o.gvk.kind);  // CRD kinds without a schema here: Certificate, ServiceMonitor, ...
        continue;
      }
      for (const auto& p : *problems) FAIL_CHECK(o.display_name() << " " << p.pointer << ": " << p.message);
    }
    for (const auto& k : unchecked)
      CHECK_MESSAGE((k == "Certificate" || k == "Issuer" || k == "ServiceMonitor" || k == "PrometheusRule"), "no schema for " << k);
    // gpuguard's own rules over its chart.
    std::string yaml;
    for (const auto& o : r.objects) yaml += "---\n" + o.body().dump() + "\n";
    auto lint = test::lint(yaml);
    for (const auto& f : lint.findings) CHECK_MESSAGE(f.severity != engine::Severity::error, f.rule << ": " << f.message);
  }
}

TEST_CASE("the Deployment: replicas, disruption budget, spread, priority, limits, restricted security context") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  auto r = render({});
  REQUIRE(r.exit_code == 0);
  const auto* d = r.find("Deployment");
  REQUIRE(d);
  const json& spec = d->body()["spec"];
  CHECK(spec["replicas"] == json(2));
  const json& pod = spec["template"]["spec"];
  CHECK(pod["securityContext"]["runAsNonRoot"] == json(true));
  CHECK(pod["securityContext"]["seccompProfile"]["type"] == json("RuntimeDefault"));
  const json& c = pod["containers"][0];
  CHECK(c["securityContext"]["readOnlyRootFilesystem"] == json(true));
  CHECK(c["securityContext"]["allowPrivilegeEscalation"] == json(false));
  CHECK(c["securityContext"]["capabilities"]["drop"] == json({"ALL"}));
  CHECK(c["resources"]["requests"].contains("cpu"));
  CHECK(c["resources"]["limits"].contains("memory"));
  CHECK(pod["affinity"]["podAntiAffinity"].contains("preferredDuringSchedulingIgnoredDuringExecution"));
  CHECK_FALSE(pod.contains("priorityClassName"));
  // The cluster state by list + watch, with the service account's token (RBAC: templates/rbac.yaml).
  CHECK(std::find(c["args"].begin(), c["args"].end(), json("--watch")) != c["args"].end());
  const auto without = render({"watchCluster=false"});
  const json& nowatch = without.find("Deployment")->body()["spec"]["template"]["spec"]["containers"][0]["args"];
  CHECK(std::find(nowatch.begin(), nowatch.end(), json("--watch")) == nowatch.end());
  CHECK(r.find("PodDisruptionBudget"));
  auto strict = render({"priorityClassName=system-cluster-critical", "podAntiAffinity=required"});
  const json& spod = strict.find("Deployment")->body()["spec"]["template"]["spec"];
  CHECK(spod["priorityClassName"] == json("system-cluster-critical"));
  CHECK(spod["affinity"]["podAntiAffinity"].contains("requiredDuringSchedulingIgnoredDuringExecution"));
  CHECK_FALSE(render({"replicaCount=1"}).find("PodDisruptionBudget"));
  // The config the chart mounts is a valid gpuguard config.
  const auto* cm = r.find("ConfigMap");
  REQUIRE(cm);
  auto config = engine::load_config(cm->body()["data"][".gpuguard.yaml"].get<std::string>(), "configmap", test::registry());
  CHECK(config.has_value());
  auto templ = render({"webhook.mutating.templates=true"});
  auto tconfig = engine::load_config(templ.find("ConfigMap")->body()["data"][".gpuguard.yaml"].get<std::string>(), "cm", test::registry());
  REQUIRE(tconfig.has_value());
  CHECK(tconfig->webhook.mutate_templates);
}

TEST_CASE("the webhook configurations: safe by construction") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  for (const auto& sets : matrix()) {
    auto r = render(sets);
    REQUIRE(r.exit_code == 0);
    bool fail = std::find(sets.begin(), sets.end(), "webhook.failurePolicy=Fail") != sets.end();
    for (const char* kind : {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}) {
      const auto* w = r.find(kind);
      if (!w) continue;
      CAPTURE(kind);
      const json& hook = w->body()["webhooks"][0];
      CHECK(hook["sideEffects"] == json("None"));
      CHECK(hook["admissionReviewVersions"] == json({"v1"}));
      CHECK(hook["timeoutSeconds"] == json(5));
      CHECK(hook["failurePolicy"] == json(fail ? "Fail" : "Ignore"));
      const json& excluded = hook["namespaceSelector"]["matchExpressions"][0];
      CHECK(excluded["key"] == json("kubernetes.io/metadata.name"));
      CHECK(excluded["operator"] == json("NotIn"));
      std::set<std::string> names;
      for (const auto& v : excluded["values"]) names.insert(v.get<std::string>());
      CHECK(names.count("kube-system"));
      CHECK(names.count("kube-node-lease"));
      CHECK(names.count("gpuguard-system"));  // its own namespace: no self-deadlock
      CHECK(hook["clientConfig"]["service"]["namespace"] == json("gpuguard-system"));
      if (std::string(kind) == "MutatingWebhookConfiguration") {
        CHECK(hook["reinvocationPolicy"] == json("IfNeeded"));
        REQUIRE(hook["matchConditions"].size() == 2);
        CHECK(hook["matchConditions"][0]["expression"].get<std::string>().find("nvidia.com/") != std::string::npos);
      }
    }
  }
}

TEST_CASE("the registered kinds and the RBAC are the rules' own (gpuguard rbac, the rules' checks)") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  const engine::Config config = engine::default_config(test::registry());
  auto r = render({});
  REQUIRE(r.exit_code == 0);
  CHECK(r.find("ClusterRole")->body()["rules"] == rules::rbac_rules(test::registry(), config));
  CHECK(r.find("ValidatingWebhookConfiguration")->body()["webhooks"][0]["rules"] == rules::validating_webhook_rules(test::registry(), config));
  CHECK(r.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["rules"] == rules::mutating_webhook_rules(test::registry(), config, false));
  auto t = render({"webhook.mutating.templates=true"});
  CHECK(t.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["rules"] == rules::mutating_webhook_rules(test::registry(), config, true));
  // And `gpuguard rbac` prints the same rules.
  auto rbac = test::run({"rbac"});
  auto role = test::load_objects(rbac.out, "rbac.yaml");
  REQUIRE(role.size() == 1);
  CHECK(role[0].body()["rules"] == r.find("ClusterRole")->body()["rules"]);
}

TEST_CASE("certificates: helm-generated (SANs for the service), cert-manager (injected), an existing secret") {
  if (!fs::exists(helm())) {
    test::skip("helm missing");
    return;
  }
  auto helm_mode = render({});
  const auto* secret = helm_mode.find("Secret");
  REQUIRE(secret);
  const std::string ca = secret->body()["data"]["ca.crt"];
  CHECK(helm_mode.find("ValidatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json(ca));
  CHECK(helm_mode.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json(ca));
  test::TempDir dir;
  auto decode = [&](const std::string& b64, const std::string& name) {
    test::write_file(dir.path() / (name + ".b64"), b64);
    auto r = test::run_command({"openssl", "base64", "-d", "-A", "-in", (dir.path() / (name + ".b64")).string(), "-out",
                                (dir.path() / name).string()});
    REQUIRE(r.exit_code == 0);
    return (dir.path() / name).string();
  };
  const std::string ca_file = decode(ca, "ca.crt");
  const std::string crt_file = decode(secret->body()["data"]["tls.crt"], "tls.crt");
  CHECK(test::run_command({"openssl", "verify", "-CAfile", ca_file, crt_file}).exit_code == 0);
  auto text = test::run_command({"openssl", "x509", "-in", crt_file, "-noout", "-ext", "subjectAltName"});
  CHECK(text.out.find("DNS:rel-gpuguard.gpuguard-system.svc") != std::string::npos);

  auto cm = render({"certificates.mode=cert-manager"});
  CHECK(cm.find("Certificate"));
  CHECK_FALSE(cm.find("Secret"));
  const json& annotations = cm.find("ValidatingWebhookConfiguration")->body()["metadata"]["annotations"];
  CHECK(annotations["cert-manager.io/inject-ca-from"] == json("gpuguard-system/rel-gpuguard"));
  CHECK_FALSE(cm.find("ValidatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"].contains("caBundle"));

  auto existing = render({"certificates.mode=secret", "certificates.secretName=my-tls", "certificates.caBundle=Zm9v"});
  CHECK(existing.find("MutatingWebhookConfiguration")->body()["webhooks"][0]["clientConfig"]["caBundle"] == json("Zm9v"));
  CHECK(existing.find("Deployment")->body()["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] == json("my-tls"));
  CHECK(render({"certificates.mode=secret"}).exit_code != 0);   // no caBundle: refused
  CHECK(render({"certificates.mode=magic"}).exit_code != 0);
}

TEST_CASE("the Dockerfile's build stage has every source folder and library the build needs") {
  const std::string dockerfile = test::read_file(test::source_dir() / "Dockerfile");
  const std::string cmake = test::read_file(test::source_dir() / "CMakeLists.txt");
  // Folders the top-level CMakeLists adds unconditionally (at the start of a line, outside any
  // if()) must be copied in; the optional ones (bench, tests) must be switched off.
  std::regex always(R"((^|\n)add_subdirectory\(([A-Za-z_/]+)\))");
  size_t folders = 0;
  for (std::sregex_iterator it(cmake.begin(), cmake.end(), always), end; it != end; ++it, ++folders) {
    const std::string dir = (*it)[2];
    CHECK_MESSAGE(dockerfile.find("COPY " + dir + " " + dir + "\n") != std::string::npos, "the build stage does not copy " << dir);
  }
  CHECK(folders >= 5);
  CHECK(dockerfile.find("-DGPUGUARD_TESTS=OFF") != std::string::npos);
  CHECK(dockerfile.find("-DGPUGUARD_BENCH=OFF") != std::string::npos);
  // The profile-guided build: its instrumented stage builds bench_admission (bench/, and the test
  // helpers bench/CMakeLists.txt names) and trains on the rules' fixtures and the examples.
  CHECK(dockerfile.find("scripts/pgo-build.sh /build ") != std::string::npos);
  for (const std::string dir : {"bench", "scripts", "examples", "tests"})
    CHECK_MESSAGE(dockerfile.find("COPY " + dir + " " + dir + "\n") != std::string::npos, "the build stage does not copy " << dir);
  const std::string pgo = test::read_file(test::source_dir() / "scripts" / "pgo-build.sh");
  for (const std::string input : {"tests/rules", "examples", "bench/pgo-review.json"}) {
    CHECK_MESSAGE(pgo.find(input) != std::string::npos, "the training does not read " << input);
    CHECK_MESSAGE(std::filesystem::exists(test::source_dir() / input), input << " is missing");
  }
  // Every library package bootstrap.sh installs for the build (the -dev ones, but the tests').
  const std::string bootstrap = test::read_file(test::source_dir() / "scripts" / "bootstrap.sh");
  std::regex dev(R"(\n  (lib[a-z0-9.+-]+-dev|nlohmann-json3-dev)\s)");
  size_t libs = 0;
  for (std::sregex_iterator it(bootstrap.begin(), bootstrap.end(), dev), end; it != end; ++it, ++libs) {
    const std::string pkg = (*it)[1];
    CHECK_MESSAGE(dockerfile.find(" " + pkg + " ") != std::string::npos, "the build stage does not install " << pkg);
  }
  CHECK(libs >= 9);
}

TEST_CASE("the Dockerfile's runtime image carries both programs and every library they link") {
  const std::string dockerfile = test::read_file(test::source_dir() / "Dockerfile");
  CHECK(dockerfile.find("FROM debian:12 AS build") != std::string::npos);
  CHECK(dockerfile.find("USER 65532:65532") != std::string::npos);
  // gpuguard runs gpuguard-net from its own folder (cli/net.h): both are copied there.
  CHECK(dockerfile.find("COPY --from=build /build/cli/gpuguard /build/cli/gpuguard-net /usr/local/bin/\n") != std::string::npos);
  CHECK(dockerfile.find("ENTRYPOINT [\"/usr/local/bin/gpuguard\"]") != std::string::npos);
  for (const fs::path& program : {test::binary(), test::binary().parent_path() / "gpuguard-net"}) {
    CAPTURE(program);
    auto needed = test::run_command({"objdump", "-p", program.string()});
    auto resolved = test::run_command({"ldd", program.string()});
    if (needed.exit_code != 0 || resolved.exit_code != 0) {
      test::skip("objdump or ldd missing");
      return;
    }
    std::regex lib(R"(NEEDED\s+(\S+))");
    for (std::sregex_iterator it(needed.out.begin(), needed.out.end(), lib), end; it != end; ++it) {
      const std::string so = (*it)[1];
      if (so.rfind("ld-linux", 0) == 0) continue;  // the dynamic loader, which ldd names without "=>" (libc6)
      std::smatch m;
      std::regex where("\\s" + std::regex_replace(so, std::regex(R"([.+])"), R"(\$&)") + R"( => (\S+))");
      REQUIRE_MESSAGE(std::regex_search(resolved.out, m, where), so << " not in ldd's output");
      std::string path = fs::canonical(m[1].str()).string();
      auto owner = test::run_command({"dpkg", "-S", path});
      if (owner.exit_code != 0 && path.rfind("/usr/", 0) == 0) owner = test::run_command({"dpkg", "-S", path.substr(4)});
      REQUIRE_MESSAGE(owner.exit_code == 0, path);
      std::string pkg = owner.out.substr(0, owner.out.find(':'));
      if (pkg == "libc6" || pkg == "libstdc++6" || pkg == "libgcc-s1") continue;  // in debian:12-slim
      if (test::kSanitized && (pkg.rfind("libasan", 0) == 0 || pkg.rfind("libubsan", 0) == 0)) continue;  // the sanitizer build's own
      CHECK_MESSAGE(dockerfile.find(" " + pkg + " ") != std::string::npos, so << " comes from " << pkg << ", which the runtime stage does not install");
    }
  }
}

}  // TEST_SUITE
