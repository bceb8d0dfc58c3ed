#include "kube/client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string_view>

#include "engine/json_parse.h"

namespace gpuguard::kube {

using engine::json;

namespace {

std::string url_encode(std::string_view s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Every certificate of a PEM bundle.
Expected<std::vector<X509Ptr>, std::string> read_certs(const std::string& pem, const std::string& what) {
  std::vector<X509Ptr> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return Unexpected<std::string>(what + ": " + openssl_error());
  while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.emplace_back(x);
  BIO_free(bio);
  ERR_clear_error();  // the end of the bundle
  if (out.empty()) return Unexpected<std::string>(what + ": no PEM certificate found");
  return out;
}

struct Stat {
  int64_t mtime_ns = 0;
  int64_t size = -1;
  uint64_t ino = 0;
  bool operator==(const Stat&) const = default;
};

std::optional<Stat> stat_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Stat{static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec, static_cast<int64_t>(st.st_size),
              static_cast<uint64_t>(st.st_ino)};
}

// A Status body ({"kind":"Status","code":410,"reason":"Expired","message":...}) into an ApiError.
ApiError status_error(int http_status, const std::string& body, const std::string& what) {
  ApiError e;
  e.status = http_status;
  std::string message;
  json j = engine::parse_json(body);
  if (!j.is_discarded()) {
    if (auto r = engine::string_at(j, "reason")) e.reason = std::string(*r);
    if (auto m = engine::string_at(j, "message")) message = std::string(*m);
    if (e.status == 0)
      if (auto c = engine::int_at(j, "code")) e.status = static_cast<int>(*c);
  }
  if (e.reason.empty()) {
    switch (e.status) {
      case 401: e.reason = "Unauthorized"; break;
      case 403: e.reason = "Forbidden"; break;
      case 404: e.reason = "NotFound"; break;
      case 410: e.reason = "Expired"; break;
      default: break;
    }
  }
  e.message = what + ": HTTP " + std::to_string(e.status) + (e.reason.empty() ? "" : " " + e.reason);
  if (!message.empty()) e.message += ": " + message;
  return e;
}

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

void fill_type(json& item, const std::string& api_version, const std::string& kind) {
  if (!item.is_object()) return;
  if (!engine::string_at(item, "apiVersion")) item["apiVersion"] = api_version;
  if (!engine::string_at(item, "kind")) item["kind"] = kind;
}

std::string api_version_of(const Resource& r, const std::string& version) {
  return r.group.empty() ? version : r.group + "/" + version;
}

}  // namespace

struct Client::Impl {
  ClusterConfig config;
  ClientOptions options;
  bool https = true;
  std::string host;  // without brackets
  int port = 443;
  std::vector<X509Ptr> ca;
  X509Ptr client_cert;
  std::vector<X509Ptr> client_chain;
  PkeyPtr client_key;

  std::mutex token_mu;
  std::string token;
  std::optional<Stat> token_stat;

  std::atomic<bool> stopped{false};
  std::mutex active_mu;
  std::set<httplib::ClientImpl*> active;
  // The sockets of the active connections (fd and socket inode, so a reused fd number is never
  // touched): stop() shuts them down, which also ends a connect or TLS handshake in progress
  // (httplib's own stop() waits for those).
  std::map<httplib::ClientImpl*, std::pair<int, ino_t>> sockets;

  // The token to send: the fixed one, or the token file's content, re-read when the file changed
  // (or when `force`, after a 401).
  std::string current_token(bool force = false) {
    if (config.token_file.empty()) return config.token;
    std::lock_guard lock(token_mu);
    auto st = stat_file(config.token_file);
    if (force || !token_stat || !st || !(*st == *token_stat)) {
      std::ifstream in(config.token_file, std::ios::binary);
      if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string t = ss.str();
        while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
        size_t b = 0;
        while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
        token = t.substr(b);
        token_stat = st;
      }
    }
    return token;
  }

  std::string describe(const std::string& path) const { return "GET " + config.server + path; }

  std::unique_ptr<httplib::ClientImpl> connect(int read_timeout_ms) {
    std::unique_ptr<httplib::ClientImpl> c;
    if (https) {
      auto s = std::make_unique<httplib::SSLClient>(host, port);
      SSL_CTX* ctx = s->ssl_context();
      if (ctx) {
        SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
        if (config.insecure_skip_tls_verify) {
          SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
        } else {
          // Verified by OpenSSL during the handshake (httplib's own check is off: it would add the
          // system store to a configured CA and cannot check a tls-server-name).
          if (!ca.empty()) {
            X509_STORE* store = X509_STORE_new();
            for (const auto& x : ca) X509_STORE_add_cert(store, x.get());
            SSL_CTX_set_cert_store(ctx, store);
          } else {
            SSL_CTX_set_default_verify_paths(ctx);
          }
          X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
          const std::string name = config.tls_server_name.empty() ? host : config.tls_server_name;
          if (is_ip_literal(name))
            X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
          else
            X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
          SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
        }
        if (client_cert && client_key) {
          SSL_CTX_use_certificate(ctx, client_cert.get());
          for (const auto& x : client_chain) SSL_CTX_add1_chain_cert(ctx, x.get());
          SSL_CTX_use_PrivateKey(ctx, client_key.get());
        }
      }
      s->enable_server_certificate_verification(false);
      c = std::move(s);
    } else {
      c = std::make_unique<httplib::ClientImpl>(host, port);
    }
    c->set_connection_timeout(std::chrono::milliseconds(options.connect_timeout_ms));
    c->set_read_timeout(std::chrono::milliseconds(read_timeout_ms));
    c->set_write_timeout(std::chrono::milliseconds(options.request_timeout_ms));
    c->set_keep_alive(true);
    c->set_tcp_nodelay(true);
    c->set_socket_options([this, raw = c.get()](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_KEEPALIVE, &yes, sizeof yes);
      struct stat st {};
      std::lock_guard lock(active_mu);
      if (stopped) ::shutdown(sock, SHUT_RDWR);
      if (fstat(sock, &st) == 0) sockets[raw] = {sock, st.st_ino};
    });
    return c;
  }

  // Registers a connection so that stop() can interrupt it.
  struct Active {
    Impl& impl;
    httplib::ClientImpl* c;
    Active(Impl& i, httplib::ClientImpl* cl) : impl(i), c(cl) {
      std::lock_guard lock(impl.active_mu);
      impl.active.insert(c);
    }
    ~Active() {
      std::lock_guard lock(impl.active_mu);
      impl.active.erase(c);
      impl.sockets.erase(c);
    }
    Active(const Active&) = delete;
    Active& operator=(const Active&) = delete;
  };

  ApiError stopped_error(const std::string& path) const { return ApiError{0, "Stopped", describe(path) + ": the client was stopped"}; }

  // A GET whose body goes to `receive` (false aborts); `on_status` sees the status first.
  // Retries once with a re-read token after a 401 when the token comes from a file.
  Expected<int, ApiError> send(httplib::ClientImpl& c, const std::string& path,
                               const std::function<void(int)>& on_status,
                               const std::function<bool(const char*, size_t)>& receive, std::string* error_body,
                               bool* aborted_by_receiver) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (stopped) return Unexpected(stopped_error(path));
      Active guard(*this, &c);
      if (stopped) return Unexpected(stopped_error(path));
      httplib::Headers headers{{"Accept", "application/json"}, {"User-Agent", "gpuguard"}};
      if (!client_cert || !config.token.empty() || !config.token_file.empty()) {
        const std::string t = current_token(attempt > 0);
        if (!t.empty()) headers.emplace("Authorization", "Bearer " + t);
      }
      int status = 0;
      error_body->clear();
      bool receiver_abort = false;
      auto res = c.Get(
          path, headers,
          [&](const httplib::Response& r) {
            status = r.status;
            on_status(status);
            return true;
          },
          [&](const char* data, size_t len) {
            if (stopped) return false;
            if (status >= 300 || status < 200) {
              if (error_body->size() < (64u << 10)) error_body->append(data, std::min(len, (64u << 10) - error_body->size()));
              return true;
            }
            if (!receive(data, len)) {
              receiver_abort = true;
              return false;
            }
            return true;
          });
      if (aborted_by_receiver) *aborted_by_receiver = receiver_abort;
      if (stopped) return Unexpected(stopped_error(path));
      if (!res) {
        if (receiver_abort) return status;
        return Unexpected(ApiError{0, "", describe(path) + ": " + httplib::to_string(res.error())});
      }
      status = res->status;
      if (status == 401 && attempt == 0 && !config.token_file.empty()) continue;  // a rotated token: read it again
      return status;
    }
    return 401;
  }

  ApiError http_error(int status, const std::string& body, const std::string& path) const {
    ApiError e = status_error(status, body, describe(path));
    if (status == 401)
      e.message += " — the API server rejected the credentials (" +
                   std::string(!config.token_file.empty() ? "token file " + config.token_file
                               : !config.token.empty()    ? "bearer token"
                               : client_cert              ? "client certificate"
                                                          : "no credentials") +
                   " from " + config.source + ")";
    else if (status == 403)
      e.message += " — the identity lacks RBAC permission (grant get, list and watch on this resource)";
    return e;
  }

  // GET → JSON (bounded by max_response_bytes).
  Expected<json, ApiError> get_json(httplib::ClientImpl& c, const std::string& path) {
    std::string body;
    bool too_large = false;
    std::string error_body;
    auto st = send(
        c, path, [](int) {},
        [&](const char* data, size_t len) {
          if (body.size() + len > options.max_response_bytes) {
            too_large = true;
            return false;
          }
          body.append(data, len);
          return true;
        },
        &error_body, nullptr);
    if (!st) return Unexpected(st.error());
    if (too_large)
      return Unexpected(ApiError{*st, "TooLarge",
                                 describe(path) + ": response larger than " + std::to_string(options.max_response_bytes) +
                                     " bytes (lower the page size)"});
    if (*st < 200 || *st >= 300) return Unexpected(http_error(*st, error_body, path));
    json j = engine::parse_json(body);
    if (j.is_discarded()) return Unexpected(ApiError{*st, "BadResponse", describe(path) + ": the response is not JSON"});
    return j;
  }
  Expected<ListPage, ApiError> list_page(httplib::ClientImpl& c, const Resource& resource,
                                       const std::string& version, const std::string& ns, size_t limit,
                                       const std::string& continue_token) {
  std::string path = resource.path(version, ns) + "?limit=" + std::to_string(limit);
  if (!continue_token.empty()) path += "&continue=" + url_encode(continue_token);
  auto j = get_json(c, path);
  if (!j) return Unexpected(j.error());
  ListPage page;
  if (const json* meta = engine::member(*j, "metadata")) {
    if (auto rv = engine::string_at(*meta, "resourceVersion")) page.resource_version = std::string(*rv);
    if (auto cont = engine::string_at(*meta, "continue")) page.continue_token = std::string(*cont);
  }
  json* items = engine::member(*j, "items");
  if (items && items->is_array()) {
    const std::string av = api_version_of(resource, version);
    page.items.reserve(items->size());
    for (auto& item : *items) {
      fill_type(item, av, resource.kind);
      page.items.push_back(std::move(item));
    }
  } else if (items && !items->is_null()) {
    return Unexpected(ApiError{200, "BadResponse", describe(path) + ": items is not a list"});
  }
  return page;
}
};

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() { stop(); }

Expected<std::unique_ptr<Client>, std::string> Client::create(ClusterConfig config, ClientOptions options) {
  // A write to a connection the server closed (a TLS close_notify at stop(), a request on a dropped
  // keep-alive connection) must be an error, not SIGPIPE killing the process. httplib's Server does
  // the same on construction; a program that handles SIGPIPE itself keeps its handler.
  if (struct sigaction sa {}; sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL) std::signal(SIGPIPE, SIG_IGN);
  auto impl = std::make_unique<Impl>();
  std::string server = config.server;
  if (server.starts_with("https://")) {
    impl->https = true;
    server = server.substr(8);
  } else if (server.starts_with("http://")) {
    impl->https = false;
    server = server.substr(7);
  } else {
    return Unexpected<std::string>(config.source + ": server \"" + config.server + "\" is not an https:// URL");
  }
  if (auto slash = server.find('/'); slash != std::string::npos) {
    if (server.substr(slash) != "/")
      return Unexpected<std::string>(config.source + ": server \"" + config.server + "\" has a path; gpuguard does not support one");
    server = server.substr(0, slash);
  }
  std::string port;
  if (server.starts_with("[")) {
    const auto close = server.find(']');
    if (close == std::string::npos) return Unexpected<std::string>(config.source + ": bad IPv6 server address " + config.server);
    impl->host = server.substr(1, close - 1);
    if (close + 1 < server.size() && server[close + 1] == ':') port = server.substr(close + 2);
  } else if (auto colon = server.rfind(':'); colon != std::string::npos) {
    impl->host = server.substr(0, colon);
    port = server.substr(colon + 1);
  } else {
    impl->host = server;
  }
  if (impl->host.empty()) return Unexpected<std::string>(config.source + ": server \"" + config.server + "\" names no host");
  impl->port = impl->https ? 443 : 80;
  if (!port.empty()) {
    try {
      impl->port = std::stoi(port);
    } catch (...) {
      return Unexpected<std::string>(config.source + ": bad port in server \"" + config.server + "\"");
    }
  }
  if (!config.ca_pem.empty()) {
    auto certs = read_certs(config.ca_pem, config.source + ": certificate-authority");
    if (!certs) return Unexpected<std::string>(certs.error());
    impl->ca = std::move(*certs);
  }
  if (!config.client_cert_pem.empty()) {
    auto certs = read_certs(config.client_cert_pem, config.source + ": client-certificate");
    if (!certs) return Unexpected<std::string>(certs.error());
    impl->client_cert = std::move(certs->front());
    for (size_t i = 1; i < certs->size(); ++i) impl->client_chain.push_back(std::move((*certs)[i]));
    BIO* bio = BIO_new_mem_buf(config.client_key_pem.data(), static_cast<int>(config.client_key_pem.size()));
    EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
    if (bio) BIO_free(bio);
    if (!key) return Unexpected<std::string>(config.source + ": client-key: not a PEM private key (" + openssl_error() + ")");
    impl->client_key.reset(key);
    if (X509_check_private_key(impl->client_cert.get(), key) != 1) {
      ERR_clear_error();
      return Unexpected<std::string>(config.source + ": client-key does not match client-certificate");
    }
  }
  impl->config = std::move(config);
  impl->options = options;
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

const ClusterConfig& Client::config() const { return impl_->config; }

void Client::stop() {
  if (!impl_) return;
  impl_->stopped = true;
  std::lock_guard lock(impl_->active_mu);
  for (const auto& [c, sock] : impl_->sockets) {
    struct stat st {};
    if (fstat(sock.first, &st) == 0 && st.st_ino == sock.second) ::shutdown(sock.first, SHUT_RDWR);
  }
  for (auto* c : impl_->active) c->stop();
}

Expected<json, ApiError> Client::get(const std::string& path_and_query) {
  auto c = impl_->connect(impl_->options.request_timeout_ms);
  return impl_->get_json(*c, path_and_query);
}

std::optional<std::string> parse_server_version(const engine::json& body) {
  auto digits = [](std::string_view d) {
    return !d.empty() && d.size() <= 4 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  auto major = engine::string_at(body, "major");
  auto minor = engine::string_at(body, "minor");
  if (major && minor) {
    std::string_view mi = *minor;
    while (!mi.empty() && mi.back() == '+') mi.remove_suffix(1);
    if (digits(*major) && digits(mi)) {
      std::string out(*major);
      out.append(".").append(mi);
      return out;
    }
  }
  if (auto git = engine::string_at(body, "gitVersion")) {
    std::string_view g = *git;
    if (g.starts_with('v')) g.remove_prefix(1);
    const size_t dot = g.find('.');
    if (dot == std::string_view::npos) return std::nullopt;
    size_t end = dot + 1;
    while (end < g.size() && g[end] >= '0' && g[end] <= '9') ++end;
    if (digits(g.substr(0, dot)) && digits(g.substr(dot + 1, end - dot - 1))) return std::string(g.substr(0, end));
  }
  return std::nullopt;
}

Expected<std::string, ApiError> Client::server_version() {
  auto body = get("/version");
  if (!body) return Unexpected(body.error());
  if (auto v = parse_server_version(*body)) return *v;
  return Unexpected(ApiError{200, "", "GET /version: no Kubernetes version in the answer (major and minor, or gitVersion)"});
}

Expected<std::string, ApiError> Client::discover(const Resource& resource) {
  auto c = impl_->connect(impl_->options.request_timeout_ms);
  for (const auto& v : resource.versions) {
    const std::string path = resource.group.empty() ? "/api/" + v : "/apis/" + resource.group + "/" + v;
    auto j = impl_->get_json(*c, path);
    if (!j) {
      if (j.error().status == 404) continue;
      return Unexpected(j.error());
    }
    if (const json* list = engine::member(*j, "resources"); list && list->is_array())
      for (const auto& r : *list)
        if (engine::string_at(r, "name") == resource.plural) return v;
  }
  std::string versions;
  for (const auto& v : resource.versions) versions += (versions.empty() ? "" : ", ") + v;
  return Unexpected(ApiError{404, "NotFound",
                             resource.kind + (resource.group.empty() ? "" : "." + resource.group) + ": " + resource.plural +
                                 " is not served in " + (resource.group.empty() ? "" : resource.group + " ") + versions +
                                 " (is the CRD installed?)"});
}

Expected<ListPage, ApiError> Client::list(const Resource& resource, const std::string& version, const std::string& ns,
                                          size_t limit, const std::string& continue_token) {
  auto c = impl_->connect(impl_->options.request_timeout_ms);
  return impl_->list_page(*c, resource, version, ns, limit, continue_token);
}

Expected<ListPage, ApiError> Client::list_all(const Resource& resource, const std::string& version, const std::string& ns,
                                              size_t limit) {
  auto c = impl_->connect(impl_->options.request_timeout_ms);
  ListPage all;
  std::string cont;
  bool first = true;
  while (first || !cont.empty()) {
    auto page = impl_->list_page(*c, resource, version, ns, limit, cont);
    if (!page) return Unexpected(page.error());
    if (first) all.resource_version = page->resource_version;
    first = false;
    cont = page->continue_token;
    for (auto& item : page->items) all.items.push_back(std::move(item));
  }
  return all;
}

Expected<void, ApiError> Client::watch(const Resource& resource, const std::string& version,
                                       const std::string& resource_version, int timeout_seconds,
                                       const std::function<bool(WatchEvent&&)>& on_event,
                                       const std::function<void()>& on_open) {
  std::string path = resource.path(version) + "?watch=1&allowWatchBookmarks=true";
  if (!resource_version.empty()) path += "&resourceVersion=" + url_encode(resource_version);
  if (timeout_seconds > 0) path += "&timeoutSeconds=" + std::to_string(timeout_seconds);
  // No data for longer than the server-side timeout (plus a margin) means the stream is dead.
  auto c = impl_->connect(std::max(timeout_seconds, 1) * 1000 + 30000);
  const std::string av = api_version_of(resource, version);

  std::string buffer;
  std::optional<ApiError> error;
  bool consumer_stop = false;
  auto handle_line = [&](std::string_view line) -> bool {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) return true;
    json j = engine::parse_json(line);
    if (j.is_discarded() || !j.is_object()) {
      error = ApiError{200, "BadResponse", impl_->describe(path) + ": a watch event is not JSON"};
      return false;
    }
    WatchEvent ev;
    if (auto t = engine::string_at(j, "type")) ev.type = std::string(*t);
    if (json* o = engine::member(j, "object")) ev.object = std::move(*o);
    if (ev.type == "ERROR") {
      error = status_error(0, ev.object.dump(), impl_->describe(path));
      if (error->status == 0) error->status = 500;
      return false;
    }
    if (ev.type.empty() || !ev.object.is_object()) {
      error = ApiError{200, "BadResponse", impl_->describe(path) + ": a watch event has no type or object"};
      return false;
    }
    fill_type(ev.object, av, resource.kind);
    if (!on_event(std::move(ev))) {
      consumer_stop = true;
      return false;
    }
    return true;
  };

  std::string error_body;
  bool aborted = false;
  auto st = impl_->send(
      *c, path,
      [&](int status) {
        if (status == 200 && on_open) on_open();
      },
      [&](const char* data, size_t len) {
        buffer.append(data, len);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1)
          if (!handle_line(std::string_view(buffer).substr(start, nl - start))) return false;
        buffer.erase(0, start);
        if (buffer.size() > impl_->options.max_event_bytes) {
          error = ApiError{200, "TooLarge",
                           impl_->describe(path) + ": a watch event is larger than " +
                               std::to_string(impl_->options.max_event_bytes) + " bytes"};
          return false;
        }
        return true;
      },
      &error_body, &aborted);
  if (!st) return Unexpected(st.error());
  if (*st < 200 || *st >= 300) return Unexpected(impl_->http_error(*st, error_body, path));
  if (error) return Unexpected(*error);
  if (consumer_stop) return {};
  if (!buffer.empty()) {
    handle_line(buffer);
    if (error) return Unexpected(*error);
  }
  return {};
}

}  // namespace gpuguard::kube
