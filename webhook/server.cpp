#include "webhook/server.h"

#include "engine/memory.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <cstring>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iostream>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/evaluate.h"
#include "engine/state.h"
#include "kube/cache.h"
#include "kube/client.h"
#include "kube/config.h"
#include "webhook/metrics.h"
#include "webhook/tls.h"

namespace gpuguard::webhook {

using engine::json;

namespace {

// ---------------------------------------------------------------------------------------------
// One JSON object per line on stderr.
class Log {
 public:
  enum Level { debug = 0, info = 1, warn = 2, error = 3 };
  explicit Log(const std::string& level)
      : min_(level == "debug" ? debug : level == "warn" ? warn : level == "error" ? error : info) {}
  [[nodiscard]] bool enabled(Level l) const { return l >= min_; }
  void write(Level l, const std::string& msg, json fields = json::object()) {
    if (!enabled(l)) return;
    static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
    char ts[32];
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json line = {{"ts", ts}, {"level", kNames[l]}, {"msg", msg}};
    for (auto& [k, v] : fields.items()) line[k] = v;
    std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard lock(mu_);
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }

 private:
  Level min_;
  std::mutex mu_;
};

// ---------------------------------------------------------------------------------------------
// A worker pool that grows when every worker is busy (an idle keep-alive connection holds a
// worker in cpp-httplib), up to a maximum, and shrinks back after idling.
class ElasticPool final : public httplib::TaskQueue {
 public:
  ElasticPool(size_t min_threads, size_t max_threads, int idle_seconds)
      : min_(std::max<size_t>(1, min_threads)), max_(std::max(min_, max_threads)), idle_(std::chrono::seconds(std::max(1, idle_seconds))) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < min_; ++i) spawn_locked();
  }
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    jobs_.push_back(std::move(fn));
    // Every queued job needs a worker that is free now: idle workers that have not yet taken
    // a job are counted in idle_workers_.
    if (jobs_.size() > idle_workers_ && live_ < max_) spawn_locked();
    lock.unlock();
    cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    std::list<std::thread> threads;
    {
      std::lock_guard lock(mu_);
      threads.swap(threads_);
    }
    for (auto& t : threads)
      if (t.joinable()) t.join();
  }

 private:
  void spawn_locked() {
    reap_locked();
    ++live_;
    threads_.emplace_back();
    auto self = std::prev(threads_.end());
    *self = std::thread([this, self] { work(self); });
  }

  // Joins the workers that shrank away, so their stacks do not pile up between bursts.
  void reap_locked() {
    for (auto it : finished_) {
      if (it->joinable()) it->join();  // it released the lock on its way out: it has returned, or is about to
      threads_.erase(it);
    }
    finished_.clear();
  }

  void work(std::list<std::thread>::iterator self) {
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_workers_;
      bool got = cv_.wait_for(lock, idle_, [&] { return stopping_ || !jobs_.empty(); });
      --idle_workers_;
      if (!jobs_.empty()) {
        auto fn = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        fn();
        lock.lock();
        continue;
      }
      if (stopping_) break;
      if (!got && live_ > min_) {  // idle long enough: shrink
        reap_locked();  // the workers that shrank before this one have left: join them now
        finished_.push_back(self);
        // Back to the pool's floor: hand the memory the burst's workers freed back to the system.
        if (live_ == min_ + 1) engine::release_free_memory();
        break;
      }
    }
    --live_;
  }

  const size_t min_, max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::list<std::function<void()>> jobs_;
  std::list<std::thread> threads_;  // every worker; joined at shutdown
  std::vector<std::list<std::thread>::iterator> finished_;  // workers that shrank away, to join
  const std::chrono::seconds idle_;
  size_t live_ = 0;
  size_t idle_workers_ = 0;
  bool stopping_ = false;
};

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Files (expanded like `lint` does) and their modification stamps, to notice a changed state.
std::string state_signature(const std::vector<std::string>& paths) {
  std::vector<engine::Diagnostic> ignore;
  std::string sig;
  for (const auto& in : engine::expand_inputs(paths, ignore)) {
    std::error_code ec;
    auto t = std::filesystem::last_write_time(in.path, ec).time_since_epoch().count();
    auto size = std::filesystem::file_size(in.path, ec);
    sig += in.display + "\t" + std::to_string(t) + "\t" + std::to_string(size) + "\n";
  }
  return sig;
}

std::string config_signature(const std::string& path) {
  if (path.empty()) return "";
  std::error_code ec;
  auto t = std::filesystem::last_write_time(path, ec).time_since_epoch().count();
  auto size = std::filesystem::file_size(path, ec);
  return std::to_string(t) + "/" + std::to_string(size);
}

// ---------------------------------------------------------------------------------------------
// What requests read and reloads replace: swapped whole, under a mutex, never mutated in place.
class Runtime {
 public:
  Runtime(const engine::Registry& registry, const ServerOptions& options)
      : registry_(registry), options_(options), log_(options.log_level), certs_(options.cert_file, options.key_file) {}

  const engine::Registry& registry_;
  const ServerOptions& options_;
  Log log_;
  Metrics metrics_;
  CertStore certs_;
  std::atomic<bool> shutting_down_{false};

  struct Snapshot {
    std::shared_ptr<const Admission> admission;
    std::shared_ptr<const engine::Inventory> state;
  };

  [[nodiscard]] Snapshot snapshot() const {
    std::lock_guard lock(mu_);
    // Watching: the cache's latest snapshot (taken without a call to the API server).
    return {admission_, cache_ ? cache_->snapshot() : state_};
  }

  // Watch mode: the cluster state comes from this cache (set once, before serving).
  void use_cache(std::shared_ptr<kube::ClusterCache> cache) {
    std::lock_guard lock(mu_);
    cache_ = std::move(cache);
  }
  [[nodiscard]] std::shared_ptr<kube::ClusterCache> cache() const {
    std::lock_guard lock(mu_);
    return cache_;
  }
  [[nodiscard]] std::shared_ptr<const engine::Config> config() const {
    std::lock_guard lock(mu_);
    return config_;
  }

  // The watched state's figures, for a scrape of /metrics.
  void update_state_metrics() {
    auto c = cache();
    if (!c) return;
    size_t objects = 0;
    for (const auto& st : c->status()) {
      objects += st.objects;
      const std::string kind = st.resource.group.empty() ? st.resource.kind : st.resource.kind + "." + st.resource.group;
      metrics_.set_sync(kind, st.last_sync_unix, st.healthy, st.installed);
      metrics_.set_watch_counts(kind, st.failures, st.watch_restarts);
    }
    metrics_.set_state_objects(objects);
  }

  // Loads the config; false (and the old config kept) when it is invalid.
  bool load_config() {
    engine::Config config = engine::default_config(registry_);
    if (!options_.config_file.empty()) {
      auto loaded = engine::load_config_file(options_.config_file, registry_);
      if (!loaded) {
        for (const auto& d : loaded.error())
          log_.write(Log::error, "invalid config",
                     {{"file", d.file}, {"line", d.pos.line}, {"column", d.pos.col}, {"error", d.message}});
        return false;
      }
      config = std::move(*loaded);
    }
    auto shared = std::make_shared<const engine::Config>(std::move(config));
    Limits limits;
    limits.max_body_bytes = options_.max_body_bytes;
    auto admission = std::make_shared<const Admission>(registry_, shared, limits);
    std::lock_guard lock(mu_);
    config_ = std::move(shared);
    admission_ = std::move(admission);
    config_ok_ = true;
    return true;
  }

  // Loads the cluster state; false (and the old state kept) when a file is malformed.
  bool load_state() {
    if (options_.state_paths.empty()) return true;
    std::shared_ptr<const engine::Config> config;
    {
      std::lock_guard lock(mu_);
      config = config_;
    }
    engine::StateLoad s = engine::load_state(options_.state_paths, registry_, *config);
    bool ok = true;
    for (const auto& d : s.diagnostics)
      if (d.severity == engine::Severity::error) {
        ok = false;
        log_.write(Log::error, "cannot load state", {{"file", d.file}, {"line", d.pos.line}, {"error", d.message}});
      }
    metrics_.state_reload(ok);
    if (!ok) return false;
    size_t kept = s.inventory->size();
    {
      std::lock_guard lock(mu_);
      state_ = std::move(s.inventory);
      state_ok_ = true;
    }
    metrics_.set_state(kept, unix_now());
    log_.write(Log::info, "state loaded", {{"objects", s.objects}, {"kept", kept}});
    return true;
  }

  bool load_certs() {
    auto err = certs_.load();
    metrics_.certificate_reload(!err);
    if (err) {
      log_.write(Log::error, "cannot load the serving certificate", {{"error", *err}});
      return false;
    }
    metrics_.set_certificate_expiry(certs_.current()->not_after);
    return true;
  }

  // Everything that changed on disk (or everything, on SIGHUP).
  void reload(bool force) {
    std::optional<std::string> err;
    if (force ? (err = certs_.load(), true) : certs_.reload_if_changed(err)) {
      metrics_.certificate_reload(!err);
      if (err) log_.write(Log::error, "certificate reload failed; keeping the old one", {{"error", *err}});
      else {
        metrics_.set_certificate_expiry(certs_.current()->not_after);
        log_.write(Log::info, "certificate loaded", {{"notAfter", certs_.current()->not_after}});
      }
    }
    std::string csig = config_signature(options_.config_file);
    bool config_changed = force || csig != config_sig_;
    if (config_changed) {
      config_sig_ = csig;
      if (load_config()) log_.write(Log::info, "config loaded", {{"file", options_.config_file}});
    }
    if (!options_.state_paths.empty()) {
      std::string ssig = state_signature(options_.state_paths);
      if (force || config_changed || ssig != state_sig_) {
        state_sig_ = ssig;
        load_state();
      }
    }
  }

  void remember_signatures() {
    config_sig_ = config_signature(options_.config_file);
    if (!options_.state_paths.empty()) state_sig_ = state_signature(options_.state_paths);
  }

  // Why the webhook is not ready; empty when it is.
  [[nodiscard]] std::vector<std::string> not_ready() const {
    std::vector<std::string> why;
    if (shutting_down_) why.push_back("shutting down");
    std::lock_guard lock(mu_);
    if (!config_ok_) why.push_back("config not loaded");
    if (!options_.state_paths.empty() && !state_ok_) why.push_back("state not loaded");
    if (cache_ && !cache_->ready()) {
      size_t synced = 0, all = 0;
      for (const auto& st : cache_->status()) {
        ++all;
        synced += st.synced || !st.installed ? 1 : 0;
      }
      why.push_back("cluster state not synced yet (" + std::to_string(synced) + " of " + std::to_string(all) + " kinds listed)");
    }
    if (!certs_.valid_now()) why.push_back("no valid serving certificate");
    return why;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const engine::Config> config_;
  std::shared_ptr<const Admission> admission_;
  std::shared_ptr<const engine::Inventory> state_;
  std::shared_ptr<kube::ClusterCache> cache_;
  bool config_ok_ = false;
  bool state_ok_ = false;
  std::string config_sig_, state_sig_;
};

void set_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void add_health_routes(httplib::Server& svr, Runtime& rt) {
  svr.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { set_json(res, 200, R"({"status":"ok"})"); });
  svr.Get("/readyz", [&rt](const httplib::Request&, httplib::Response& res) {
    auto why = rt.not_ready();
    if (why.empty()) set_json(res, 200, R"({"status":"ready"})");
    else set_json(res, 503, json{{"status", "not ready"}, {"reasons", why}}.dump());
  });
  svr.Get("/metrics", [&rt](const httplib::Request&, httplib::Response& res) {
    rt.update_state_metrics();
    res.status = 200;
    res.set_content(rt.metrics_.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

// Debian's cpp-httplib (a shared library) listens with a backlog of 5: a burst of connections (the
// API server filling its connection pool, 200 slow clients) overflows it, and the kernel drops
// SYNs that clients retry only after 1, 2, 4 s. listen() again on the bound socket raises it (the
// kernel caps it at net.core.somaxconn).
constexpr int kListenBacklog = 4096;

// `listen_fd` receives the listening socket (the one socket the options callback sees).
void configure_common(httplib::Server& svr, const ServerOptions& o, const std::shared_ptr<std::atomic<int>>& listen_fd) {
  svr.set_tcp_nodelay(true);
  svr.set_socket_options([listen_fd](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);  // inherited by accepted sockets
    int expected = -1;
    listen_fd->compare_exchange_strong(expected, static_cast<int>(sock));
  });
  svr.set_keep_alive_timeout(o.keep_alive_seconds);
  svr.set_keep_alive_max_count(10000);
  svr.set_read_timeout(o.read_timeout_seconds, 0);
  svr.set_write_timeout(o.write_timeout_seconds, 0);
  svr.set_payload_max_length(o.max_body_bytes + 1);
  size_t min_t = o.min_threads, max_t = o.max_threads;
  int idle_s = o.idle_worker_seconds;
  svr.new_task_queue = [min_t, max_t, idle_s] { return new ElasticPool(min_t, max_t, idle_s); };
  svr.set_exception_handler([](const httplib::Request&, httplib::Response& res, const std::exception_ptr&) {
    set_json(res, 500, R"({"error":"internal error"})");
  });
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404)
      set_json(res, 404, json{{"error", "no such endpoint: " + req.method + " " + req.path}}.dump(-1, ' ', false, json::error_handler_t::replace));
    else if (res.body.empty())
      set_json(res, res.status, json{{"error", "HTTP " + std::to_string(res.status)}}.dump());
  });
}

// A request whose body must not be read, and why.
struct Refusal {
  int status;
  std::string why;
  const char* reason;  // the counter's label
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Chunked bodies bypass cpp-httplib's size limit (facts/webhook.md §3), and compressed ones it
// inflates in memory before any handler could look at the size (1 MiB of gzip is 1 GiB of zeros;
// the API server never compresses), on every method (it reads the bodies of PUT, PATCH and DELETE
// before routing them to a 404). A POST to the TLS server (`admission`) must give its length,
// within the limit.
std::optional<Refusal> refusal(const httplib::Request& req, size_t max, bool admission) {
  if (req.has_header("Content-Encoding") && !iequals(req.get_header_value("Content-Encoding"), "identity"))
    return Refusal{415, "a Content-Encoding is not accepted (send the body uncompressed)", "encoded"};
  if (req.has_header("Transfer-Encoding"))
    return Refusal{411, "a Content-Length is required (chunked bodies are not accepted)", "length-required"};
  if (req.method != "POST" || !admission) return std::nullopt;
  if (!req.has_header("Content-Length"))
    return Refusal{411, "a Content-Length is required (chunked bodies are not accepted)", "length-required"};
  const std::string& cl = req.get_header_value("Content-Length");
  size_t length = 0;
  auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
  if (ec != std::errc{} || p != cl.data() + cl.size()) return Refusal{400, "invalid Content-Length", "bad-length"};
  if (length > max)
    return Refusal{400, "the body (" + std::to_string(length) + " bytes) is over the limit of " + std::to_string(max) + " bytes",
                   "too-large"};
  return std::nullopt;
}

// Refuses what `refusal` refuses before the body is read: in the pre-routing handler, and, for a
// client that sends `Expect: 100-continue` (curl does for large uploads), instead of the
// `100 Continue` that would invite the body. `refused` counts it.
void guard_bodies(httplib::Server& svr, const ServerOptions& o, bool admission, std::function<void(const char*)> refused) {
  auto answer = [refused = std::move(refused)](const Refusal& r, httplib::Response& res) {
    refused(r.reason);
    set_json(res, r.status, json{{"error", r.why}}.dump());
    res.set_header("Connection", "close");
  };
  svr.set_pre_routing_handler([max = o.max_body_bytes, admission, answer](const httplib::Request& req, httplib::Response& res) {
    const auto r = refusal(req, max, admission);
    if (!r) return httplib::Server::HandlerResponse::Unhandled;
    answer(*r, res);
    return httplib::Server::HandlerResponse::Handled;
  });
  svr.set_expect_100_continue_handler([max = o.max_body_bytes, admission, answer](const httplib::Request& req, httplib::Response& res) {
    const auto r = refusal(req, max, admission);
    if (!r) return 100;
    answer(*r, res);
    return r->status;
  });
}

}  // namespace

int serve(const engine::Registry& registry, const ServerOptions& options) {
  // Signals go to one thread; block them before any other thread starts.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Runtime rt(registry, options);
  if (!rt.load_config()) return 2;
  if (!rt.load_certs()) return 2;
  rt.load_state();  // not ready until it loads
  rt.remember_signatures();

  // --watch: list and watch the kinds the enabled rules read; not ready until each is listed.
  // The kinds are those of the config at start-up (a config that reads other kinds needs a restart).
  std::shared_ptr<kube::ClusterCache> cache;
  std::shared_ptr<const engine::Config> watch_config;  // outlives the cache, which reads it
  if (options.watch) {
    auto cluster = kube::resolve_config(options.kubeconfig, options.kube_context, kube::Environment::current());
    if (!cluster) {
      rt.log_.write(Log::error, "cannot configure the Kubernetes client", {{"error", cluster.error()}});
      return 2;
    }
    auto client = kube::Client::create(*cluster);
    if (!client) {
      rt.log_.write(Log::error, "cannot create the Kubernetes client", {{"error", client.error()}});
      return 2;
    }
    watch_config = rt.config();
    const auto& config = watch_config;
    std::vector<std::string> unknown;
    kube::CacheOptions co;
    co.resources = kube::resources_for(engine::kinds_read(registry, *config), &unknown);
    co.log = [&rt](const std::string& level, const std::string& msg, const json& fields) {
      rt.log_.write(level == "error" ? Log::error : level == "warn" ? Log::warn : level == "debug" ? Log::debug : Log::info, msg, fields);
    };
    for (const auto& k : unknown) rt.log_.write(Log::warn, "a kind the rules read cannot be watched", {{"kind", k}});
    cache = std::make_shared<kube::ClusterCache>(std::shared_ptr<kube::Client>(std::move(*client)), *config, std::move(co));
    cache->start();
    rt.use_cache(cache);
    rt.log_.write(Log::info, "watching the cluster", {{"server", cluster->server}, {"source", cluster->source}});
  }

  std::string tls_error;
  httplib::SSLServer svr([&](SSL_CTX& ctx) { return rt.certs_.configure(ctx, options.client_ca_file, tls_error); });
  if (!svr.is_valid()) {
    rt.log_.write(Log::error, "cannot set up TLS", {{"error", tls_error}});
    return 2;
  }
  auto listen_fd = std::make_shared<std::atomic<int>>(-1);
  configure_common(svr, options, listen_fd);

  guard_bodies(svr, options, true, [&rt](const char* reason) { rt.metrics_.invalid_request(reason); });

  auto handler = [&](Endpoint endpoint, const char* name) {
    return [&rt, endpoint, name](const httplib::Request& req, httplib::Response& res) {
      auto start = std::chrono::steady_clock::now();
      Runtime::Snapshot snap = rt.snapshot();
      Outcome outcome;
      Answer answer = snap.admission->handle(endpoint, req.body, req.get_header_value("Content-Type"), snap.state, outcome);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      set_json(res, answer.status, answer.body);
      // The answer is set; the rest is bookkeeping, and nothing failing in it (an allocation) may
      // turn the answer into httplib's 500.
      try {
        // Shutting down: each client closes its kept-alive connection after this answer and opens
        // its next one to an endpoint that stays (no request lost when the listener closes).
        if (rt.shutting_down_) res.set_header("Connection", "close");
        if (answer.status != 200) {
          rt.metrics_.invalid_request("malformed");
          rt.log_.write(Log::warn, "invalid request", {{"webhook", name}, {"error", outcome.error}});
          return;
        }
        std::vector<Metrics::FindingLabels> counted;  // /mutate's findings are its fixes, not counted
        if (endpoint == Endpoint::validate) {
          counted.reserve(outcome.findings.size());
          for (const auto& f : outcome.findings)
            counted.push_back({f.rule, engine::to_string(f.severity), engine::to_string(f.mode)});
        }
        rt.metrics_.admission(name, outcome.operation, outcome.kind, outcome.decision, seconds, counted);
        for (const auto& [rule, e] : outcome.rule_errors) {
          rt.metrics_.rule_error(rule);
          rt.log_.write(Log::error, "rule failed", {{"uid", outcome.uid}, {"rule", rule}, {"error", e}});
        }
        Log::Level level = outcome.decision == "denied" ? Log::info : Log::debug;
        if (rt.log_.enabled(level)) {
          json rules = json::array();
          for (const auto& f : outcome.findings) rules.push_back(f.rule);
          json fields = {{"webhook", name},       {"uid", outcome.uid},           {"kind", outcome.kind},
                         {"namespace", outcome.namespace_}, {"name", outcome.name}, {"operation", outcome.operation},
                         {"decision", outcome.decision},    {"rules", rules},       {"dryRun", outcome.dry_run},
                         {"latencyMs", seconds * 1000}};
          // Findings the answer does not carry (info, audit mode) are still in the log.
          json logged = json::array();
          for (const auto& f : outcome.findings)
            logged.push_back(json{{"rule", f.rule}, {"severity", engine::to_string(f.severity)}, {"pointer", f.pointer}, {"message", f.message}});
          fields["findings"] = logged;
          rt.log_.write(level, "admission", fields);
        }
      } catch (...) {  // NOLINT(bugprone-empty-catch): the answer stands; the metrics miss one request
      }
    };
  };
  svr.Post("/validate", handler(Endpoint::validate, "validate"));
  svr.Post("/mutate", handler(Endpoint::mutate, "mutate"));

  std::unique_ptr<httplib::Server> side;
  if (options.metrics_host) {
    side = std::make_unique<httplib::Server>();
    configure_common(*side, options, std::make_shared<std::atomic<int>>(-1));
    guard_bodies(*side, options, false, [](const char*) {});  // not admission requests: not counted as such
    add_health_routes(*side, rt);
  } else {
    add_health_routes(svr, rt);
  }

  const int port = options.port == 0 ? svr.bind_to_any_port(options.host)
                                     : (svr.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port <= 0) {
    rt.log_.write(Log::error, "cannot listen", {{"host", options.host}, {"port", options.port}});
    return 2;
  }
  if (int fd = listen_fd->load(); fd >= 0 && ::listen(fd, kListenBacklog) != 0)
    rt.log_.write(Log::warn, "cannot raise the listen backlog", {{"error", std::strerror(errno)}});
  int side_port = 0;
  if (side) {
    side_port = options.metrics_port == 0
                    ? side->bind_to_any_port(*options.metrics_host)
                    : (side->bind_to_port(*options.metrics_host, options.metrics_port) ? options.metrics_port : -1);
    if (side_port <= 0) {
      rt.log_.write(Log::error, "cannot listen for metrics", {{"host", *options.metrics_host}, {"port", options.metrics_port}});
      return 2;
    }
  }
  std::thread serving([&] { svr.listen_after_bind(); });
  std::thread side_serving;
  if (side) side_serving = std::thread([&] { side->listen_after_bind(); });
  json where = {{"host", options.host}, {"port", port}};
  if (side) where["metricsPort"] = side_port;
  rt.log_.write(Log::info, "listening", where);

  // Reloads: polled every reload_interval_ms, and at once on SIGHUP.
  std::mutex reload_mu;
  std::condition_variable reload_cv;
  bool stop_reloading = false, forced = false;
  std::thread reloader([&] {
    std::unique_lock lock(reload_mu);
    while (!stop_reloading) {
      auto wake = [&] { return stop_reloading || forced; };
      if (options.reload_interval_ms > 0) reload_cv.wait_for(lock, std::chrono::milliseconds(options.reload_interval_ms), wake);
      else reload_cv.wait(lock, wake);
      if (stop_reloading) break;
      bool force = forced;
      forced = false;
      lock.unlock();
      rt.reload(force);
      lock.lock();
    }
  });

  for (;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (sig == SIGHUP) {
      {
        std::lock_guard lock(reload_mu);
        forced = true;
      }
      reload_cv.notify_all();
      continue;
    }
    rt.log_.write(Log::info, "shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
    break;
  }

  // Not ready first, so endpoints drain; then stop accepting and let in-flight requests finish,
  // bounded by the grace period.
  rt.shutting_down_ = true;
  if (options.shutdown_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options.shutdown_delay_ms));
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (!done_cv.wait_for(lock, std::chrono::milliseconds(options.grace_period_ms), [&] { return done; })) {
      rt.log_.write(Log::warn, "grace period over; exiting with connections still open");
      std::fflush(stderr);
      std::_Exit(0);
    }
  });
  svr.stop();
  if (side) side->stop();
  serving.join();
  if (side_serving.joinable()) side_serving.join();
  if (cache) cache->stop();
  {
    std::lock_guard lock(reload_mu);
    stop_reloading = true;
  }
  reload_cv.notify_all();
  reloader.join();
  {
    std::lock_guard lock(done_mu);
    done = true;
  }
  done_cv.notify_all();
  watchdog.join();
  rt.log_.write(Log::info, "stopped");
  return 0;
}

}  // namespace gpuguard::webhook
