// kube/config: in-cluster and kubeconfig configurations, and the errors that name file and field.

#include <doctest/doctest.h>

#include <filesystem>

#include "kube/config.h"
#include "tests/support/support.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using kube::ClusterConfig;

namespace {

// "a" → "YQ==", "ab" → "YWI=", "abc" → "YWJj" (both paddings and none).
const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmNhCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K";  // "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n"

std::string kubeconfig(const std::string& cluster, const std::string& user, const std::string& extra = "") {
  return "apiVersion: v1\nkind: Config\ncurrent-context: main\ncontexts:\n- name: main\n  context:\n    cluster: c1\n    user: u1\n" +
         extra + "clusters:\n- name: c1\n  cluster:\n" + cluster + "users:\n- name: u1\n  user:\n" + user;
}

std::string error_of(const kube::Expected<ClusterConfig, std::string>& r) {
  REQUIRE_FALSE(r.has_value());
  return r.error();
}

}  // namespace

TEST_SUITE("kube") {
  TEST_CASE("kubeconfig: token and certificate-authority-data (base64 with and without padding)") {
    test::TempDir dir;
    const fs::path p = dir.path() / "config";
    test::write_file(p, kubeconfig(std::string("    server: https://10.0.0.1:6443/\n    certificate-authority-data: ") + kCaData + "\n",
                                   "    token: abc.def\n"));
    auto c = kube::kubeconfig_config(p.string());
    REQUIRE_MESSAGE(c.has_value(), c.error());
    CHECK(c->server == "https://10.0.0.1:6443");
    CHECK(c->ca_pem == "-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n");
    CHECK(c->token == "abc.def");
    CHECK(c->token_file.empty());
    CHECK(c->source == p.string() + " (context main)");
    CHECK_FALSE(c->insecure_skip_tls_verify);
    for (auto [data, want] : {std::pair{"YQ==", "a"}, std::pair{"YWI=", "ab"}, std::pair{"YWJj", "abc"}, std::pair{"YW\n Jj", "abc"}}) {
      test::write_file(p, kubeconfig(std::string("    server: https://h\n    certificate-authority-data: \"") + data + "\"\n", "    token: t\n"));
      auto d = kube::kubeconfig_config(p.string());
      REQUIRE_MESSAGE(d.has_value(), d.error());
      CHECK(d->ca_pem == want);
    }
  }

  TEST_CASE("kubeconfig: files relative to the kubeconfig, tokenFile, client certificate files") {
    test::TempDir dir;
    fs::create_directories(dir.path() / "kube" / "pki");
    test::write_file(dir.path() / "kube" / "pki" / "ca.crt", "CA");
    test::write_file(dir.path() / "kube" / "pki" / "client.crt", "CERT");
    test::write_file(dir.path() / "kube" / "pki" / "client.key", "KEY");
    test::write_file(dir.path() / "kube" / "token", "tok\n");
    const fs::path p = dir.path() / "kube" / "config";
    test::write_file(p, kubeconfig("    server: https://api.example:6443\n    certificate-authority: pki/ca.crt\n",
                                   "    tokenFile: token\n    client-certificate: pki/client.crt\n    client-key: " +
                                       (dir.path() / "kube" / "pki" / "client.key").string() + "\n"));
    auto c = kube::kubeconfig_config(p.string());
    REQUIRE_MESSAGE(c.has_value(), c.error());
    CHECK(c->ca_pem == "CA");
    CHECK(c->token_file == (dir.path() / "kube" / "token").string());
    CHECK(c->client_cert_pem == "CERT");
    CHECK(c->client_key_pem == "KEY");
  }

  TEST_CASE("kubeconfig: client-certificate-data, insecure-skip-tls-verify, tls-server-name") {
    test::TempDir dir;
    const fs::path p = dir.path() / "config";
    test::write_file(p, kubeconfig("    server: https://127.0.0.1:6443\n    insecure-skip-tls-verify: true\n    tls-server-name: kubernetes.default.svc\n",
                                   "    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n"));
    auto c = kube::kubeconfig_config(p.string());
    REQUIRE_MESSAGE(c.has_value(), c.error());
    CHECK(c->insecure_skip_tls_verify);
    CHECK(c->tls_server_name == "kubernetes.default.svc");
    CHECK(c->client_cert_pem == "CERT");
    CHECK(c->client_key_pem == "KEY");
    CHECK(c->token.empty());
  }

  TEST_CASE("kubeconfig: KUBECONFIG-style lists merge first-wins; a named context; missing files in a list are skipped") {
    test::TempDir dir;
    const fs::path a = dir.path() / "a", b = dir.path() / "b";
    test::write_file(a, "apiVersion: v1\nkind: Config\ncurrent-context: first\nclusters:\n- name: c1\n  cluster:\n    server: https://a:1\n"
                        "users:\n- name: u1\n  user:\n    token: from-a\ncontexts:\n- name: first\n  context:\n    cluster: c1\n    user: u1\n");
    test::write_file(b, "apiVersion: v1\nkind: Config\ncurrent-context: second\nclusters:\n- name: c1\n  cluster:\n    server: https://b:1\n"
                        "- name: c2\n  cluster:\n    server: https://b:2\nusers:\n- name: u1\n  user:\n    token: from-b\n"
                        "contexts:\n- name: second\n  context:\n    cluster: c2\n    user: u1\n");
    const std::string list = a.string() + ":" + (dir.path() / "missing").string() + ":" + b.string();
    auto c = kube::kubeconfig_config(list);
    REQUIRE_MESSAGE(c.has_value(), c.error());
    CHECK(c->server == "https://a:1");
    CHECK(c->token == "from-a");
    auto d = kube::kubeconfig_config(list, "second");
    REQUIRE_MESSAGE(d.has_value(), d.error());
    CHECK(d->server == "https://b:2");  // c2 exists only in b
    CHECK(d->token == "from-a");        // u1 from a wins
    CHECK(d->source == list + " (context second)");
  }

  TEST_CASE("kubeconfig errors name the file and the field") {
    test::TempDir dir;
    const fs::path p = dir.path() / "config";
    const std::string f = p.string() + ": ";
    CHECK(error_of(kube::kubeconfig_config(p.string())) == f + "cannot read the kubeconfig file");
    test::write_file(p, "a: [\n");
    CHECK(error_of(kube::kubeconfig_config(p.string())).starts_with(f + "line "));
    test::write_file(p, kubeconfig("    server: https://h\n", "    token: t\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string(), "other")) == p.string() + ": context \"other\" not found");
    test::write_file(p, kubeconfig("    insecure-skip-tls-verify: true\n", "    token: t\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())) == f + "clusters[name=c1].cluster.server: missing");
    test::write_file(p, kubeconfig("    server: https://h\n    certificate-authority-data: \"not base64!\"\n", "    token: t\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())) == f + "clusters[name=c1].cluster.certificate-authority-data: not valid base64");
    test::write_file(p, kubeconfig("    server: https://h\n    certificate-authority: nowhere.crt\n", "    token: t\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())) ==
          f + "clusters[name=c1].cluster.certificate-authority: cannot read " + (dir.path() / "nowhere.crt").string());
    test::write_file(p, kubeconfig("    server: https://h\n",
                                   "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n"));
    const std::string exec = error_of(kube::kubeconfig_config(p.string()));
    CHECK(exec.starts_with(f + "users[name=u1].user.exec: exec credential plugins are not supported"));
    CHECK(exec.find("use a token") != std::string::npos);
    test::write_file(p, kubeconfig("    server: https://h\n", "    auth-provider:\n      name: gcp\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())).starts_with(f + "users[name=u1].user.auth-provider: auth-provider credential plugins are not supported"));
    test::write_file(p, kubeconfig("    server: https://h\n", "    client-certificate-data: Q0VSVA==\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())) == f + "users[name=u1].user.client-certificate: given without client-key");
    test::write_file(p, "apiVersion: v1\nkind: Config\nclusters: []\n");
    CHECK(error_of(kube::kubeconfig_config(p.string())) == p.string() + ": current-context is not set and no context was given");
    test::write_file(p, kubeconfig("    server: ftp://h\n", "    token: t\n"));
    CHECK(error_of(kube::kubeconfig_config(p.string())) == f + "clusters[name=c1].cluster.server: expected an https:// URL, got \"ftp://h\"");
  }

  TEST_CASE("in-cluster config: service host and port (IPv6 bracketed), token file, CA") {
    test::TempDir dir;
    test::write_file(dir.path() / "token", "sa-token");
    test::write_file(dir.path() / "ca.crt", "CA");
    kube::Environment env;
    env.service_account_dir = dir.path();
    env.vars = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
    auto c = kube::in_cluster_config(env);
    REQUIRE_MESSAGE(c.has_value(), c.error());
    CHECK(c->server == "https://10.96.0.1:443");
    CHECK(c->token_file == (dir.path() / "token").string());
    CHECK(c->token.empty());
    CHECK(c->ca_pem == "CA");
    CHECK(c->source == "in-cluster");
    env.vars["KUBERNETES_SERVICE_HOST"] = "fd00:10:96::1";
    c = kube::in_cluster_config(env);
    REQUIRE(c.has_value());
    CHECK(c->server == "https://[fd00:10:96::1]:443");

    env.vars.erase("KUBERNETES_SERVICE_PORT");
    CHECK(error_of(kube::in_cluster_config(env)).find("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set") != std::string::npos);
    env.vars["KUBERNETES_SERVICE_PORT"] = "443";
    fs::remove(dir.path() / "token");
    CHECK(error_of(kube::in_cluster_config(env)) ==
          "in-cluster config: cannot read the service-account token " + (dir.path() / "token").string());
  }

  TEST_CASE("resolve_config: the flag, else KUBECONFIG, else in-cluster, else ~/.kube/config") {
    test::TempDir dir;
    fs::create_directories(dir.path() / ".kube");
    test::write_file(dir.path() / ".kube" / "config", kubeconfig("    server: https://home\n", "    token: t\n"));
    test::write_file(dir.path() / "flag", kubeconfig("    server: https://flag\n", "    token: t\n"));
    test::write_file(dir.path() / "env", kubeconfig("    server: https://env\n", "    token: t\n"));
    test::write_file(dir.path() / "token", "x");
    test::write_file(dir.path() / "ca.crt", "CA");
    kube::Environment env;
    env.service_account_dir = dir.path();
    env.vars = {{"HOME", dir.path().string()}};
    auto server = [&](const std::string& flag) {
      auto c = kube::resolve_config(flag, "", env);
      REQUIRE_MESSAGE(c.has_value(), c.error());
      return c->server;
    };
    CHECK(server("") == "https://home");
    env.vars["KUBERNETES_SERVICE_HOST"] = "10.0.0.1";
    env.vars["KUBERNETES_SERVICE_PORT"] = "443";
    CHECK(server("") == "https://10.0.0.1:443");
    env.vars["KUBECONFIG"] = (dir.path() / "env").string();
    CHECK(server("") == "https://env");
    CHECK(server((dir.path() / "flag").string()) == "https://flag");
    env.vars.clear();
    CHECK(error_of(kube::resolve_config("", "", env)).starts_with("no cluster configuration"));
  }
}
