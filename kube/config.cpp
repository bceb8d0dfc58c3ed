#include "kube/config.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "engine/base64.h"
#include "engine/json.h"
#include "engine/yaml_load.h"


namespace gpuguard::kube {

namespace fs = std::filesystem;
using engine::json;

namespace {

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

// Standard base64 (kubeconfig *-data fields), whitespace ignored; nullopt when invalid.
std::optional<std::string> base64_decode(std::string_view in) {
  std::string s;
  s.reserve(in.size());
  for (char c : in)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') s.push_back(c);
  return engine::base64_decode(s);
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// One named entry of a kubeconfig list (clusters, users, contexts) with the file it came from.
struct Named {
  const json* body = nullptr;  // the `cluster` / `user` / `context` mapping
  fs::path file;
};

struct Merged {
  std::vector<json> docs;  // owns the parsed files
  std::map<std::string, Named> clusters, users, contexts;
  std::string current_context;
  fs::path current_context_file;
};

Unexpected<std::string> fail(const fs::path& file, const std::string& what) {
  return Unexpected<std::string>(file.string() + ": " + what);
}

// Reads the list `key` (entries `{name, <item>: {...}}`) of a kubeconfig into `out`, first wins.
Expected<bool, std::string> read_named(const json& doc, const fs::path& file, std::string_view key, std::string_view item,
                                       std::map<std::string, Named>& out) {
  const json* list = engine::member(doc, key);
  if (!list || list->is_null()) return true;
  if (!list->is_array()) return fail(file, std::string(key) + ": expected a list");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    auto name = engine::string_at(e, "name");
    if (!name) return fail(file, std::string(key) + "[" + std::to_string(i) + "].name: missing");
    const json* body = engine::member(e, item);
    if (body && !body->is_object() && !body->is_null())
      return fail(file, std::string(key) + "[name=" + std::string(*name) + "]." + std::string(item) + ": expected a mapping");
    static const json kEmpty = json::object();
    out.emplace(std::string(*name), Named{body && body->is_object() ? body : &kEmpty, file});
  }
  return true;
}

Expected<bool, std::string> load_kubeconfig(const fs::path& file, bool required, Merged& m) {
  auto text = read_text(file);
  if (!text) {
    if (!required) return false;
    return fail(file, "cannot read the kubeconfig file");
  }
  std::vector<engine::Diagnostic> diags;
  std::optional<json> doc;
  engine::load_yaml_stream(*text, file.string(), engine::YamlLimits{},
                           [&](engine::YamlDocument&& d) {
                             if (!doc) doc = d.body();
                           },
                           diags);
  if (!diags.empty())
    return fail(file, "line " + std::to_string(diags.front().pos.line) + ": " + diags.front().message);
  if (!doc || doc->is_null()) return fail(file, "empty kubeconfig");
  if (!doc->is_object()) return fail(file, "expected a mapping (apiVersion: v1, kind: Config)");
  m.docs.push_back(std::move(*doc));
  const json& d = m.docs.back();
  for (auto [key, item] : {std::pair{"clusters", "cluster"}, std::pair{"users", "user"}, std::pair{"contexts", "context"}}) {
    auto& target = std::string_view(key) == "clusters" ? m.clusters : std::string_view(key) == "users" ? m.users : m.contexts;
    if (auto r = read_named(d, file, key, item, target); !r) return Unexpected<std::string>(r.error());
  }
  if (m.current_context.empty())
    if (auto cc = engine::string_at(d, "current-context"); cc && !cc->empty()) {
      m.current_context = std::string(*cc);
      m.current_context_file = file;
    }
  return true;
}

fs::path resolve_relative(const fs::path& file, std::string_view p) {
  fs::path path(p);
  if (path.is_relative()) path = file.parent_path() / path;
  return path;
}

// `<field>-data` (base64) or `<field>` (a file relative to the kubeconfig); "" when neither.
Expected<std::string, std::string> data_or_file(const Named& n, const std::string& where, const std::string& field) {
  if (auto data = engine::string_at(*n.body, field + "-data"); data && !data->empty()) {
    auto decoded = base64_decode(*data);
    if (!decoded) return fail(n.file, where + "." + field + "-data: not valid base64");
    return *decoded;
  }
  if (const json* f = engine::member(*n.body, field); f && !f->is_null()) {
    if (!f->is_string()) return fail(n.file, where + "." + field + ": expected a file path");
    const fs::path p = resolve_relative(n.file, f->get_ref<const std::string&>());
    auto text = read_text(p);
    if (!text) return fail(n.file, where + "." + field + ": cannot read " + p.string());
    return *text;
  }
  return std::string();
}

std::vector<std::string> split_paths(const std::string& paths) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= paths.size()) {
    const size_t end = paths.find(':', start);
    std::string p = paths.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!p.empty()) out.push_back(std::move(p));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string var(const Environment& env, const std::string& name) {
  auto it = env.vars.find(name);
  return it == env.vars.end() ? "" : it->second;
}

}  // namespace

Environment Environment::current() {
  Environment env;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "KUBECONFIG", "HOME"})
    if (const char* v = std::getenv(name)) env.vars[name] = v;
  return env;
}

Expected<ClusterConfig, std::string> in_cluster_config(const Environment& env) {
  const std::string host = var(env, "KUBERNETES_SERVICE_HOST");
  const std::string port = var(env, "KUBERNETES_SERVICE_PORT");
  if (host.empty() || port.empty())
    return Unexpected<std::string>(
        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set (is this running in a pod?)");
  ClusterConfig c;
  c.source = "in-cluster";
  const bool ipv6 = host.find(':') != std::string::npos && host.front() != '[';
  c.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  const fs::path token = env.service_account_dir / "token";
  auto t = read_text(token);
  if (!t) return Unexpected<std::string>("in-cluster config: cannot read the service-account token " + token.string());
  c.token_file = token.string();
  const fs::path ca = env.service_account_dir / "ca.crt";
  auto ca_text = read_text(ca);
  if (!ca_text) return Unexpected<std::string>("in-cluster config: cannot read the cluster CA " + ca.string());
  c.ca_pem = *ca_text;
  return c;
}

Expected<ClusterConfig, std::string> kubeconfig_config(const std::string& paths, const std::string& context) {
  const auto files = split_paths(paths);
  if (files.empty()) return Unexpected<std::string>("kubeconfig: no file given");
  Merged m;
  bool any = false;
  for (const auto& f : files) {
    // A single file must exist; in a KUBECONFIG-style list missing files are skipped (as kubectl does).
    auto r = load_kubeconfig(f, files.size() == 1, m);
    if (!r) return Unexpected<std::string>(r.error());
    any = any || *r;
  }
  if (!any) return Unexpected<std::string>(paths + ": none of these kubeconfig files can be read");
  const std::string label = files.size() == 1 ? files.front() : paths;

  std::string ctx_name = context.empty() ? m.current_context : context;
  if (ctx_name.empty()) return Unexpected<std::string>(label + ": current-context is not set and no context was given");
  auto ctx_it = m.contexts.find(ctx_name);
  if (ctx_it == m.contexts.end())
    return Unexpected<std::string>(label + ": context \"" + ctx_name + "\" not found" +
                                   (context.empty() ? " (named by current-context)" : ""));
  const Named& ctx = ctx_it->second;
  const std::string ctx_where = "contexts[name=" + ctx_name + "].context";
  auto cluster_name = engine::string_at(*ctx.body, "cluster");
  if (!cluster_name || cluster_name->empty()) return fail(ctx.file, ctx_where + ".cluster: missing");
  auto cl_it = m.clusters.find(std::string(*cluster_name));
  if (cl_it == m.clusters.end())
    return fail(ctx.file, ctx_where + ".cluster: no cluster named \"" + std::string(*cluster_name) + "\"");
  const Named& cluster = cl_it->second;
  const std::string cl_where = "clusters[name=" + std::string(*cluster_name) + "].cluster";

  ClusterConfig c;
  c.source = label + " (context " + ctx_name + ")";
  auto server = engine::string_at(*cluster.body, "server");
  if (!server || server->empty()) return fail(cluster.file, cl_where + ".server: missing");
  c.server = std::string(*server);
  while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
  if (!c.server.starts_with("https://") && !c.server.starts_with("http://"))
    return fail(cluster.file, cl_where + ".server: expected an https:// URL, got \"" + c.server + "\"");
  auto ca = data_or_file(cluster, cl_where, "certificate-authority");
  if (!ca) return Unexpected<std::string>(ca.error());
  c.ca_pem = *ca;
  if (auto insecure = engine::bool_at(*cluster.body, "insecure-skip-tls-verify")) c.insecure_skip_tls_verify = *insecure;
  if (auto sn = engine::string_at(*cluster.body, "tls-server-name")) c.tls_server_name = std::string(*sn);

  auto user_name = engine::string_at(*ctx.body, "user");
  if (user_name && !user_name->empty()) {
    auto us_it = m.users.find(std::string(*user_name));
    if (us_it == m.users.end())
      return fail(ctx.file, ctx_where + ".user: no user named \"" + std::string(*user_name) + "\"");
    const Named& user = us_it->second;
    const std::string us_where = "users[name=" + std::string(*user_name) + "].user";
    for (const char* unsupported : {"exec", "auth-provider"})
      if (const json* e = engine::member(*user.body, unsupported); e && !e->is_null())
        return fail(user.file, us_where + "." + unsupported + ": " + unsupported +
                                   " credential plugins are not supported; use a token (token or tokenFile) or a client "
                                   "certificate (client-certificate-data and client-key-data)");
    if (engine::member(*user.body, "username") || engine::member(*user.body, "password"))
      return fail(user.file, us_where + ".username: basic authentication is not supported; use a token or a client certificate");
    if (auto tok = engine::string_at(*user.body, "token"); tok && !tok->empty()) c.token = trim(std::string(*tok));
    if (auto tf = engine::string_at(*user.body, "tokenFile"); tf && !tf->empty() && c.token.empty()) {
      const fs::path p = resolve_relative(user.file, *tf);
      if (!read_text(p)) return fail(user.file, us_where + ".tokenFile: cannot read " + p.string());
      c.token_file = p.string();
    }
    auto cert = data_or_file(user, us_where, "client-certificate");
    if (!cert) return Unexpected<std::string>(cert.error());
    auto key = data_or_file(user, us_where, "client-key");
    if (!key) return Unexpected<std::string>(key.error());
    if (cert->empty() != key->empty())
      return fail(user.file, us_where + (cert->empty() ? ".client-key: given without client-certificate"
                                                      : ".client-certificate: given without client-key"));
    c.client_cert_pem = *cert;
    c.client_key_pem = *key;
  }
  return c;
}

Expected<ClusterConfig, std::string> resolve_config(const std::string& kubeconfig_flag, const std::string& context,
                                                    const Environment& env) {
  if (!kubeconfig_flag.empty()) return kubeconfig_config(kubeconfig_flag, context);
  if (auto kc = var(env, "KUBECONFIG"); !kc.empty()) return kubeconfig_config(kc, context);
  if (!var(env, "KUBERNETES_SERVICE_HOST").empty() && context.empty()) return in_cluster_config(env);
  const std::string home = var(env, "HOME");
  if (home.empty())
    return Unexpected<std::string>(
        "no cluster configuration: pass --kubeconfig, set KUBECONFIG, or run in a pod (HOME is not set for ~/.kube/config)");
  return kubeconfig_config((fs::path(home) / ".kube" / "config").string(), context);
}

}  // namespace gpuguard::kube
