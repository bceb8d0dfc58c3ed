#include "tests/support/apiserver.h"

#include <httplib.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include "tests/support/support.h"

namespace gpuguard::test {

namespace fs = std::filesystem;
using engine::json;

namespace {

void openssl(const std::vector<std::string>& args) {
  std::vector<std::string> argv{"openssl"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run_command(argv);
  if (r.exit_code != 0) throw std::runtime_error("openssl failed: " + r.err);
}

std::string b64(const std::string& s) {
  std::string out(4 * ((s.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                                static_cast<int>(s.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> unb64(const std::string& s) {
  if (s.empty() || s.size() % 4) return std::nullopt;
  std::string out(s.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(s.data()),
                                static_cast<int>(s.size()));
  if (n < 0) return std::nullopt;
  size_t pad = (s.back() == '=') + (s[s.size() - 2] == '=');
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

json status(int code, const std::string& reason, const std::string& message) {
  return {{"kind", "Status"}, {"apiVersion", "v1"},  {"metadata", json::object()}, {"status", "Failure"},
          {"message", message}, {"reason", reason}, {"code", code}};
}

std::string group_of(const std::string& api_version) {
  auto slash = api_version.find('/');
  return slash == std::string::npos ? "" : api_version.substr(0, slash);
}

}  // namespace

Pki make_pki(const fs::path& dir) {
  Pki p;
  p.dir = dir;
  auto f = [&](const std::string& n) { return (dir / n).string(); };
  openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f("ca.key"), "-out",
           f("ca.crt"), "-days", "2", "-subj", "/CN=kubernetes-ca"});
  for (const std::string name : {"server", "client"}) {
    openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", f(name + ".key"), "-out",
             f(name + ".csr"), "-subj", name == "server" ? "/CN=kube-apiserver" : "/CN=gpuguard/O=system:masters"});
    write_file(dir / (name + ".ext"),
               name == "server" ? "subjectAltName=DNS:localhost,DNS:kubernetes.default.svc,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
                                : "extendedKeyUsage=clientAuth\n");
    openssl({"x509", "-req", "-in", f(name + ".csr"), "-CA", f("ca.crt"), "-CAkey", f("ca.key"), "-CAcreateserial", "-out",
             f(name + ".crt"), "-days", "1", "-extfile", f(name + ".ext")});
  }
  p.ca_file = dir / "ca.crt";
  p.server_cert = dir / "server.crt";
  p.server_key = dir / "server.key";
  p.ca_pem = read_file(p.ca_file);
  p.client_cert_pem = read_file(dir / "client.crt");
  p.client_key_pem = read_file(dir / "client.key");
  return p;
}

bool wait_until(const std::function<bool()>& cond, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return cond();
}

struct ApiServer::Impl {
  struct Res {
    std::string api_version, kind, plural;
    bool namespaced = true;
    bool installed = true;
    // "ns/name" → the object as a list item: JSON text without apiVersion and kind (the API server
    // leaves the type to the list). Text, not trees: the bench serves 150,000 objects.
    std::map<std::string, std::string> objects;
    [[nodiscard]] json full(const std::string& item) const {
      json o = json::parse(item);
      o["apiVersion"] = api_version;
      o["kind"] = kind;
      return o;
    }
  };
  struct Event {
    uint64_t rv;
    std::string res;  // "apiVersion/plural"
    std::string ns;
    std::string line;  // the encoded event
  };
  struct Watch {
    std::string res;
    std::string ns;
    bool bookmarks = false;
    std::deque<std::string> lines;
    bool drop = false;
    bool end = false;
  };

  std::unique_ptr<httplib::SSLServer> svr;
  std::thread thread;
  int port = 0;
  Pki pki;
  json core_discovery;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stopping = false;
  std::string token;
  std::map<std::string, Res> resources;  // "apiVersion/plural"
  std::vector<Event> history;
  uint64_t rv = 100;
  uint64_t compacted = 0;           // watches from an rv below this get 410
  uint64_t token_epoch = 0;         // continue tokens carry the epoch they were issued in
  uint64_t continue_valid_from = 0; // tokens of an older epoch get 410
  std::set<std::shared_ptr<Watch>> watches;
  int delay_ms = 0;
  engine::json version;  // GET /version's body; null: 404, as before 1.0 (set_version)
  bool split = false;
  std::set<std::string> forbidden;
  std::vector<ApiRequest> log;
  WatchFault fault = WatchFault::none;

  static std::string key(const std::string& api_version, const std::string& plural) { return api_version + "/" + plural; }

  Res* find_kind(const std::string& api_version, const std::string& kind) {
    for (auto& [k, r] : resources)
      if (r.api_version == api_version && r.kind == kind) return &r;
    return nullptr;
  }

  // An event line for watchers of `r`, appended to the history and pushed to open watches.
  void emit_locked(const Res& r, const std::string& type, const json& obj, const std::string& ns) {
    const std::string line = json{{"type", type}, {"object", obj}}.dump() + "\n";
    const std::string k = key(r.api_version, r.plural);
    history.push_back({rv, k, ns, line});
    for (auto& w : watches)
      if (w->res == k && (w->ns.empty() || w->ns == ns)) w->lines.push_back(line);
    cv.notify_all();
  }

  bool authorized(const httplib::Request& req) {
    if (req.ssl) {
      X509* peer = SSL_get_peer_certificate(req.ssl);
      const bool ok = peer && SSL_get_verify_result(req.ssl) == X509_V_OK;
      if (peer) X509_free(peer);
      if (ok) return true;
    }
    std::lock_guard lock(mu);
    return req.get_header_value("Authorization") == "Bearer " + token;
  }

  static void reply(httplib::Response& res, int code, const json& body) {
    res.status = code;
    res.set_content(body.dump(), "application/json");
  }

  void discovery(const httplib::Request& req, httplib::Response& res, const std::string& api_version) {
    std::lock_guard lock(mu);
    std::set<std::string> installed;
    for (const auto& [k, r] : resources)
      if (r.api_version == api_version && r.installed) installed.insert(r.plural);
    if (installed.empty()) {
      reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    json list = json::array();
    if (api_version == "v1") {
      // The recorded entries, for the resources served (subresources included).
      for (const auto& e : core_discovery["resources"]) {
        const std::string name = e.value("name", "");
        if (installed.contains(name.substr(0, name.find('/')))) list.push_back(e);
      }
    }
    for (const auto& [k, r] : resources) {
      if (r.api_version != api_version || !r.installed) continue;
      bool present = false;
      for (const auto& e : list) present = present || e.value("name", "") == r.plural;
      if (present) continue;
      std::string singular = r.kind;
      for (auto& c : singular) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      list.push_back({{"kind", r.kind},
                      {"name", r.plural},
                      {"namespaced", r.namespaced},
                      {"singularName", singular},
                      {"verbs", {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}}});
    }
    (void)req;
    reply(res, 200, {{"apiVersion", "v1"}, {"groupVersion", api_version}, {"kind", "APIResourceList"}, {"resources", list}});
  }

  void collection(const httplib::Request& req, httplib::Response& res, const std::string& api_version, const std::string& ns,
                  const std::string& plural) {
    const bool watch = req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true";
    std::unique_lock lock(mu);
    auto it = resources.find(key(api_version, plural));
    if (it == resources.end() || !it->second.installed) {
      reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    if (forbidden.contains(plural)) {
      const std::string group = group_of(api_version);
      reply(res, 403,
            status(403, "Forbidden",
                   plural + (group.empty() ? "" : "." + group) +
                       " is forbidden: User \"system:serviceaccount:gpuguard:gpuguard\" cannot " + (watch ? "watch" : "list") +
                       " resource \"" + plural + "\" in API group \"" + group + "\" at the cluster scope"));
      return;
    }
    Res& r = it->second;
    if (watch) {
      start_watch(req, res, r, ns, lock);
      return;
    }
    // A list page.
    size_t limit = 0;
    if (req.has_param("limit")) limit = std::stoul(req.get_param_value("limit"));
    uint64_t list_rv = rv;
    std::string start;
    if (req.has_param("continue") && !req.get_param_value("continue").empty()) {
      auto decoded = unb64(req.get_param_value("continue"));
      json tok = decoded ? json::parse(*decoded, nullptr, false) : json();
      if (!tok.is_object()) {
        reply(res, 400, status(400, "BadRequest", "continue key is not valid: illegal base64 data"));
        return;
      }
      list_rv = tok.value("rv", uint64_t{0});
      start = tok.value("start", "");
      if (tok.value("epoch", uint64_t{0}) < continue_valid_from) {
        reply(res, 410,
              status(410, "Expired",
                     "The provided continue parameter is too old to display a consistent list result. You can start a new "
                     "list without the continue parameter, or use the continue token in this response to retrieve the "
                     "remainder of the results. Continuing with the provided token results in an inconsistent list - objects "
                     "that were created, modified, or deleted between the time the first chunk was returned and now may show "
                     "up in the list."));
        return;
      }
    }
    std::string items;
    size_t count = 0;
    auto o = start.empty() ? r.objects.begin() : r.objects.lower_bound(start);
    for (; o != r.objects.end(); ++o) {
      if (!ns.empty() && o->first.substr(0, o->first.find('/')) != ns) continue;
      if (limit && count == limit) break;
      if (count++) items += ",";
      items += o->second;
    }
    json meta = {{"resourceVersion", std::to_string(list_rv)}};
    if (o != r.objects.end()) {
      meta["continue"] = b64(json{{"v", "meta.k8s.io/v1"}, {"rv", list_rv}, {"start", o->first}, {"epoch", token_epoch}}.dump());
      meta["remainingItemCount"] = std::distance(o, r.objects.end());
    }
    const std::string head = json{{"kind", r.kind + "List"}, {"apiVersion", r.api_version}, {"metadata", meta}}.dump();
    lock.unlock();
    std::string body = head.substr(0, head.size() - 1) + ",\"items\":[" + items + "]}";
    res.status = 200;
    res.set_content(std::move(body), "application/json");
  }

  void start_watch(const httplib::Request& req, httplib::Response& res, Res& r, const std::string& ns,
                   std::unique_lock<std::mutex>& lock) {
    if (fault == WatchFault::not_found) {
      reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
      return;
    }
    uint64_t from = 0;
    if (req.has_param("resourceVersion") && !req.get_param_value("resourceVersion").empty())
      from = std::stoull(req.get_param_value("resourceVersion"));
    auto w = std::make_shared<Watch>();
    w->res = key(r.api_version, r.plural);
    w->ns = ns;
    w->bookmarks = req.get_param_value("allowWatchBookmarks") == "true";
    if (from != 0 && from < compacted) {
      json err = status(410, "Expired", "too old resource version: " + std::to_string(from) + " (" + std::to_string(compacted) + ")");
      w->lines.push_back(json{{"type", "ERROR"}, {"object", err}}.dump() + "\n");
      w->end = true;
    } else if (from == 0) {
      for (const auto& [k, item] : r.objects) w->lines.push_back(json{{"type", "ADDED"}, {"object", r.full(item)}}.dump() + "\n");
    } else {
      for (const auto& e : history)
        if (e.rv > from && e.res == w->res && (ns.empty() || e.ns == ns)) w->lines.push_back(e.line);
    }
    if (fault != WatchFault::none) {  // the events above are not sent: the answer is the fault's
      w->lines.clear();
      w->end = true;
      const json bookmark = {{"type", "BOOKMARK"},
                             {"object", {{"kind", r.kind}, {"apiVersion", r.api_version}, {"metadata", {{"resourceVersion", std::to_string(rv)}}}}}};
      const json added = {{"type", "ADDED"}, {"object", r.objects.empty() ? json{{"kind", r.kind}, {"apiVersion", r.api_version}, {"metadata", {{"name", "x"}}}}
                                                                           : r.full(r.objects.begin()->second)}};
      switch (fault) {
        case WatchFault::bookmark_close: w->lines.push_back(bookmark.dump() + "\n"); break;
        case WatchFault::cut_line: {
          const std::string line = added.dump();
          w->lines.push_back(line.substr(0, line.size() / 2));
          break;
        }
        case WatchFault::not_json: w->lines.push_back("<html><body>502 Bad Gateway</body></html>\n"); break;
        case WatchFault::error_event:
          w->lines.push_back(json{{"type", "ERROR"}, {"object", status(500, "InternalError", "an error on the server (\"\") has prevented the request from succeeding")}}.dump() + "\n");
          break;
        case WatchFault::expired:
          w->lines.push_back(json{{"type", "ERROR"}, {"object", status(410, "Expired", "too old resource version: " + std::to_string(from) + " (" + std::to_string(rv) + ")")}}.dump() + "\n");
          break;
        default: break;
      }
    }
    int timeout = 0;
    if (req.has_param("timeoutSeconds")) timeout = std::stoi(req.get_param_value("timeoutSeconds"));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout > 0 ? timeout : 3600);
    watches.insert(w);
    lock.unlock();
    res.status = 200;
    res.set_chunked_content_provider(
        "application/json",
        [this, w, deadline](size_t, httplib::DataSink& sink) {
          std::unique_lock l(mu);
          cv.wait_for(l, std::chrono::milliseconds(20), [&] { return stopping || w->drop || w->end || !w->lines.empty(); });
          if (stopping || w->drop) return false;
          if (w->lines.empty() && !w->end) {
            l.unlock();
            if (!sink.is_writable()) return false;  // the client went away
            l.lock();
          }
          while (!w->lines.empty()) {
            std::string line = std::move(w->lines.front());
            w->lines.pop_front();
            const bool halves = split;
            l.unlock();
            if (halves && line.size() > 2) {
              const size_t half = line.size() / 2;
              if (!sink.write(line.data(), half)) return false;
              std::this_thread::sleep_for(std::chrono::milliseconds(15));
              if (!sink.write(line.data() + half, line.size() - half)) return false;
            } else if (!sink.write(line.data(), line.size())) {
              return false;
            }
            l.lock();
            if (stopping || w->drop) return false;
          }
          if (w->end || std::chrono::steady_clock::now() >= deadline) sink.done();
          return true;
        },
        [this, w](bool) {
          std::lock_guard l(mu);
          watches.erase(w);
        });
  }
};

ApiServer::ApiServer(const Pki& pki, std::string token) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.pki = pki;
  d.token = std::move(token);
  d.core_discovery = json::parse(read_file(source_dir() / "tests" / "kube" / "recorded" / "api__v1.json"));
  const std::string cert = pki.server_cert.string(), key = pki.server_key.string(), ca = pki.ca_file.string();
  d.svr = std::make_unique<httplib::SSLServer>([cert, key, ca](SSL_CTX& ctx) {
    SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
    if (SSL_CTX_use_certificate_chain_file(&ctx, cert.c_str()) != 1) return false;
    if (SSL_CTX_use_PrivateKey_file(&ctx, key.c_str(), SSL_FILETYPE_PEM) != 1) return false;
    // Client certificates are optional (the token is the other way in) but must chain to the CA.
    if (SSL_CTX_load_verify_locations(&ctx, ca.c_str(), nullptr) != 1) return false;
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER, nullptr);
    return true;
  });
  d.svr->new_task_queue = [] { return new httplib::ThreadPool(48); };
  d.svr->set_keep_alive_timeout(1);
  d.svr->set_keep_alive_max_count(100000);
  d.svr->set_tcp_nodelay(true);
  d.svr->set_pre_routing_handler([&d](const httplib::Request& req, httplib::Response& res) {
    int delay = 0;
    {
      std::lock_guard lock(d.mu);
      std::string query;
      for (const auto& [k, v] : req.params) query += (query.empty() ? "" : "&") + k + "=" + v;
      d.log.push_back({req.path, query, req.get_param_value("watch") == "1" || req.get_param_value("watch") == "true"});
      delay = d.delay_ms;
    }
    if (delay > 0) {
      std::unique_lock lock(d.mu);
      d.cv.wait_for(lock, std::chrono::milliseconds(delay), [&] { return d.stopping; });
    }
    if (!d.authorized(req)) {
      Impl::reply(res, 401, status(401, "Unauthorized", "Unauthorized"));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  d.svr->Get(R"(/version)", [&d](const httplib::Request&, httplib::Response& res) {
    std::lock_guard lock(d.mu);
    if (d.version.is_null()) Impl::reply(res, 404, status(404, "NotFound", "the server could not find the requested resource"));
    else Impl::reply(res, 200, d.version);
  });
  d.svr->Get(R"(/api/v1)", [&d](const httplib::Request& req, httplib::Response& res) { d.discovery(req, res, "v1"); });
  d.svr->Get(R"(/apis/([^/]+)/([^/]+))", [&d](const httplib::Request& req, httplib::Response& res) {
    d.discovery(req, res, req.matches[1].str() + "/" + req.matches[2].str());
  });
  d.svr->Get(R"(/api/v1/(?:namespaces/([^/]+)/)?([^/]+))", [&d](const httplib::Request& req, httplib::Response& res) {
    d.collection(req, res, "v1", req.matches[1].str(), req.matches[2].str());
  });
  d.svr->Get(R"(/apis/([^/]+)/([^/]+)/(?:namespaces/([^/]+)/)?([^/]+))", [&d](const httplib::Request& req, httplib::Response& res) {
    d.collection(req, res, req.matches[1].str() + "/" + req.matches[2].str(), req.matches[3].str(), req.matches[4].str());
  });
  d.port = d.svr->bind_to_any_port("127.0.0.1");
  if (d.port <= 0) throw std::runtime_error("the API server double cannot bind 127.0.0.1");
  d.thread = std::thread([&d] { d.svr->listen_after_bind(); });
}

ApiServer::~ApiServer() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  impl_->svr->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

int ApiServer::port() const { return impl_->port; }
std::string ApiServer::url() const { return "https://127.0.0.1:" + std::to_string(impl_->port); }

kube::ClusterConfig ApiServer::config() const {
  kube::ClusterConfig c;
  c.server = url();
  c.ca_pem = impl_->pki.ca_pem;
  std::lock_guard lock(impl_->mu);
  c.token = impl_->token;
  c.source = "test";
  return c;
}

void ApiServer::serve(const std::string& api_version, const std::string& kind, const std::string& plural, bool namespaced,
                      bool installed) {
  std::lock_guard lock(impl_->mu);
  auto& r = impl_->resources[Impl::key(api_version, plural)];
  r.api_version = api_version;
  r.kind = kind;
  r.plural = plural;
  r.namespaced = namespaced;
  r.installed = installed;
}

void ApiServer::install(const std::string& api_version, const std::string& plural) {
  std::lock_guard lock(impl_->mu);
  impl_->resources.at(Impl::key(api_version, plural)).installed = true;
}

uint64_t ApiServer::put(json object, bool event) {
  std::lock_guard lock(impl_->mu);
  auto* r = impl_->find_kind(object.value("apiVersion", ""), object.value("kind", ""));
  if (!r) throw std::runtime_error("the double serves no " + object.value("kind", std::string("?")));
  auto& md = object["metadata"];
  const std::string ns = md.value("namespace", ""), name = md.value("name", "");
  const std::string k = ns + "/" + name;
  const bool existed = r->objects.contains(k);
  md["resourceVersion"] = std::to_string(++impl_->rv);
  if (event) impl_->emit_locked(*r, existed ? "MODIFIED" : "ADDED", object, ns);
  object.erase("apiVersion");
  object.erase("kind");
  r->objects[k] = object.dump();
  return impl_->rv;
}

uint64_t ApiServer::remove(const std::string& api_version, const std::string& kind, const std::string& ns, const std::string& name) {
  std::lock_guard lock(impl_->mu);
  auto* r = impl_->find_kind(api_version, kind);
  if (!r) return 0;
  auto it = r->objects.find(ns + "/" + name);
  if (it == r->objects.end()) return 0;
  json obj = r->full(it->second);
  r->objects.erase(it);
  obj["metadata"]["resourceVersion"] = std::to_string(++impl_->rv);
  impl_->emit_locked(*r, "DELETED", obj, ns);
  return impl_->rv;
}

uint64_t ApiServer::resource_version() const {
  std::lock_guard lock(impl_->mu);
  return impl_->rv;
}

void ApiServer::bookmark() {
  std::lock_guard lock(impl_->mu);
  for (auto& w : impl_->watches) {
    if (!w->bookmarks) continue;
    const auto& r = impl_->resources.at(w->res);
    w->lines.push_back(json{{"type", "BOOKMARK"},
                            {"object",
                             {{"kind", r.kind},
                              {"apiVersion", r.api_version},
                              {"metadata", {{"resourceVersion", std::to_string(impl_->rv)}}}}}}
                           .dump() +
                       "\n");
  }
  impl_->cv.notify_all();
}

void ApiServer::compact() {
  std::lock_guard lock(impl_->mu);
  impl_->compacted = impl_->rv;  // etcd compacted up to the current revision: older ones are gone
  impl_->history.clear();
}

void ApiServer::expire_continue_tokens() {
  std::lock_guard lock(impl_->mu);
  impl_->continue_valid_from = ++impl_->token_epoch;
}

void ApiServer::drop_watches() {
  std::lock_guard lock(impl_->mu);
  for (auto& w : impl_->watches) w->drop = true;
  impl_->cv.notify_all();
}

void ApiServer::end_watches() {
  std::lock_guard lock(impl_->mu);
  for (auto& w : impl_->watches) w->end = true;
  impl_->cv.notify_all();
}

void ApiServer::set_version(engine::json version) {
  std::lock_guard lock(impl_->mu);
  impl_->version = std::move(version);
}

void ApiServer::set_token(std::string token) {
  std::lock_guard lock(impl_->mu);
  impl_->token = std::move(token);
}

void ApiServer::set_delay_ms(int ms) {
  std::lock_guard lock(impl_->mu);
  impl_->delay_ms = ms;
}

void ApiServer::set_split_events(bool split) {
  std::lock_guard lock(impl_->mu);
  impl_->split = split;
}

void ApiServer::forbid(const std::string& plural) {
  std::lock_guard lock(impl_->mu);
  impl_->forbidden.insert(plural);
}

void ApiServer::set_watch_fault(WatchFault fault) {
  std::lock_guard lock(impl_->mu);
  impl_->fault = fault;
}

size_t ApiServer::watch_requests(const std::string& path) const {
  std::lock_guard lock(impl_->mu);
  size_t n = 0;
  for (const auto& r : impl_->log) n += r.watch && r.path == path;
  return n;
}

int ApiServer::open_watches() const {
  std::lock_guard lock(impl_->mu);
  int n = 0;
  for (const auto& w : impl_->watches) n += !w->end && !w->drop;
  return n;
}

std::vector<ApiRequest> ApiServer::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}

bool ApiServer::wait_for_watches(int n, int timeout_ms) const {
  return wait_until([&] { return open_watches() >= n; }, timeout_ms);
}

}  // namespace gpuguard::test
