#include "webhook/server.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <csignal>
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
#include "engine/json_parse.h"
#include "engine/memory.h"
#include "webhook/budget.h"
#include "webhook/http.h"
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
  // The longest line written: a longer one is cut to the event's identity (write()).
  static constexpr size_t kMaxLine = size_t{16} * 1024;
  // Findings listed in one admission line, and characters of each message kept there.
  static constexpr size_t kMaxFindings = 20;
  static constexpr size_t kMaxMessage = 300;
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
    if (text.size() > kMaxLine) {
      // A line past the cap (a denial of a pod with 30,000 containers) keeps what identifies the
      // event and says how long it was; the findings are in the answer and in `gpuguard lint`.
      json cut = {{"ts", ts}, {"level", kNames[l]}, {"msg", msg}, {"truncated", true}, {"bytes", text.size()}};
      for (const char* key : {"webhook", "uid", "user", "kind", "namespace", "name", "operation", "decision", "error"})
        if (auto it = line.find(key); it != line.end() && (!it->is_string() || it->get_ref<const std::string&>().size() <= 512))
          cut[key] = *it;
      text = cut.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
    std::lock_guard lock(mu_);
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }

 private:
  Level min_;
  std::mutex mu_;
};

// What a review's document costs per value it may hold, beyond the body's own bytes:
// engine::PositionIndex's node (48 bytes) and what the evaluation derives from the object (views,
// findings), measured with the largest reviews of tests/webhook/hostile_test.cpp (README, "The
// webhook's transport").
constexpr size_t kDocumentBytesPerNode = 64;

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

  // With --watch, the API server's Kubernetes version (GET /version): it replaces the config's
  // kubernetesVersion in every config loaded. Set before the first load_config.
  void use_server_kubernetes_version(std::string version) { server_kubernetes_version_ = std::move(version); }

  // Loads the config; false (and the old config kept) when it is invalid.
  bool load_config() {
    engine::Config config = engine::default_config(registry_);
    if (!options_.config_file.empty()) {
      auto loaded = engine::load_config_file(options_.config_file, registry_);
      if (!loaded) {
        std::string first;
        for (const auto& d : loaded.error()) {
          log_.write(Log::error, "invalid config", {{"file", d.file}, {"line", d.pos.line}, {"column", d.pos.col}, {"error", d.message}});
          if (first.empty()) first = d.file + ":" + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + ": " + d.message;
        }
        metrics_.config_reload(false, unix_now());
        metrics_.set_config_matches_disk(false);
        std::lock_guard lock(mu_);
        config_disk_error_ = first.empty() ? "the config does not load" : first;
        return false;
      }
      config = std::move(*loaded);
    }
    if (!server_kubernetes_version_.empty()) config.settings.kubernetes_version = server_kubernetes_version_;
    auto shared = std::make_shared<const engine::Config>(std::move(config));
    Limits limits;
    limits.max_body_bytes = options_.max_body_bytes;
    auto admission = std::make_shared<const Admission>(registry_, shared, limits);
    const double now = unix_now();
    metrics_.config_reload(true, now);
    metrics_.set_config_matches_disk(true);
    std::lock_guard lock(mu_);
    config_ = std::move(shared);
    admission_ = std::move(admission);
    config_ok_ = true;
    config_disk_error_.clear();
    config_loaded_unix_ = now;
    return true;
  }

  // For /readyz: which config is in force and whether it is the file on disk. A file that changed
  // into one that does not load never takes a replica out of service (every replica would read
  // it at once): the last good config stays in force, and this says so.
  [[nodiscard]] json config_status() const {
    std::lock_guard lock(mu_);
    json c = {{"file", options_.config_file.empty() ? json(nullptr) : json(options_.config_file)},
              {"matchesDisk", config_disk_error_.empty()},
              {"loadedAt", config_loaded_unix_}};
    if (!config_disk_error_.empty()) c["error"] = config_disk_error_;
    return c;
  }

  // The budget of the documents reviews become (the bodies have their own: webhook/http.h).
  void set_document_budget(Budget* budget) { budget_ = budget; }
  [[nodiscard]] Budget* document_budget() const { return budget_; }
  // The most values one review may hold: what its document costs must fit in the budget.
  [[nodiscard]] size_t max_document_nodes() const { return budget_ ? budget_->total() / kDocumentBytesPerNode : SIZE_MAX; }

  // Admission requests taken so far (whatever their answer).
  [[nodiscard]] uint64_t answered() const { return answered_.load(std::memory_order_relaxed); }
  void taken() { answered_.fetch_add(1, std::memory_order_relaxed); }

  // Metrics and the log of one answered admission request.
  void account(Endpoint endpoint, const char* name, const Outcome& outcome, double seconds) {
    if (outcome.decision == "invalid") {
      metrics_.invalid_request("malformed");
      log_.write(Log::warn, "invalid request", {{"webhook", name}, {"error", outcome.error}});
      return;
    }
    std::vector<Metrics::FindingLabels> counted;  // /mutate's findings are its fixes, not counted
    if (endpoint == Endpoint::validate) {
      counted.reserve(outcome.findings.size());
      for (const auto& f : outcome.findings) counted.push_back({f.rule, engine::to_string(f.severity), engine::to_string(f.mode)});
    }
    metrics_.admission(name, outcome.operation, outcome.kind, outcome.decision, seconds, counted);
    for (const auto& [rule, e] : outcome.rule_errors) {
      metrics_.rule_error(rule);
      log_.write(Log::error, "rule failed", {{"uid", outcome.uid}, {"rule", rule}, {"error", e}});
    }
    // Every admission an annotation exempted something of: who, what and why (an exemption is
    // the operator's grant, and is audited as such).
    if (!outcome.exempted.empty()) {
      const auto exempted_rules = outcome.exempted_rules();
      // Counted on /validate only: every object /mutate sees reaches /validate too.
      if (endpoint == Endpoint::validate)
        for (const auto& rule : exempted_rules) metrics_.exempted(rule);
      json which = json::array();
      for (const auto& x : outcome.exempted) {
        if (which.size() == Log::kMaxFindings) break;
        which.push_back(json{{"rule", x.rule},
                             {"pointer", x.pointer.substr(0, Log::kMaxMessage)},
                             {"reason", x.reason.substr(0, Log::kMaxMessage)}});
      }
      log_.write(Log::info, "exempted",
                 {{"webhook", name}, {"uid", outcome.uid}, {"user", outcome.username}, {"groups", outcome.groups},
                  {"kind", outcome.kind}, {"namespace", outcome.namespace_}, {"name", outcome.name},
                  {"operation", outcome.operation}, {"rules", exempted_rules}, {"exempted", which}});
    }
    const Log::Level level = outcome.decision == "denied" ? Log::info : Log::debug;
    if (!log_.enabled(level)) return;
    json rules = json::array();
    for (const auto& f : outcome.findings) rules.push_back(f.rule);
    json fields = {{"webhook", name},       {"uid", outcome.uid},           {"user", outcome.username}, {"kind", outcome.kind},
                   {"namespace", outcome.namespace_}, {"name", outcome.name}, {"operation", outcome.operation},
                   {"decision", outcome.decision},    {"rules", rules},       {"dryRun", outcome.dry_run},
                   {"latencyMs", seconds * 1000}};
    // Findings the answer does not carry (info, audit mode) are still in the log, the first
    // kMaxFindings of them, each message cut at kMaxMessage characters.
    json logged = json::array();
    for (const auto& f : outcome.findings) {
      if (logged.size() == Log::kMaxFindings) {
        fields["findingsNotLogged"] = outcome.findings.size() - Log::kMaxFindings;
        break;
      }
      logged.push_back(json{{"rule", f.rule},
                            {"severity", engine::to_string(f.severity)},
                            {"pointer", f.pointer.substr(0, Log::kMaxMessage)},
                            {"message", f.message.size() > Log::kMaxMessage ? f.message.substr(0, Log::kMaxMessage) + "..." : f.message}});
    }
    if (rules.size() > Log::kMaxFindings * 5) rules.erase(rules.begin() + static_cast<std::ptrdiff_t>(Log::kMaxFindings * 5), rules.end());
    fields["rules"] = std::move(rules);
    fields["findings"] = std::move(logged);
    log_.write(level, "admission", fields);
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
  std::string server_kubernetes_version_;  // with --watch (use_server_kubernetes_version); else ""
  bool config_ok_ = false;
  bool state_ok_ = false;
  std::string config_disk_error_;  // why the file on disk is not the config in force ("" when it is)
  double config_loaded_unix_ = 0;
  Budget* budget_ = nullptr;
  std::atomic<uint64_t> answered_{0};
  std::string config_sig_, state_sig_;
};

http::Response json_response(int status, std::string body) {
  http::Response r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

std::vector<http::Route> health_routes(Runtime& rt, const std::function<void()>& refresh_transport) {
  std::vector<http::Route> routes;
  routes.push_back({"GET", "/healthz", [](http::Request&) { return json_response(200, R"({"status":"ok"})"); }});
  routes.push_back({"GET", "/readyz", [&rt](http::Request&) {
                      auto why = rt.not_ready();
                      json body = why.empty() ? json{{"status", "ready"}} : json{{"status", "not ready"}, {"reasons", why}};
                      body["config"] = rt.config_status();
                      return json_response(why.empty() ? 200 : 503, body.dump(-1, ' ', false, json::error_handler_t::replace));
                    }});
  routes.push_back({"GET", "/metrics", [&rt, refresh_transport](http::Request&) {
                      rt.update_state_metrics();
                      if (refresh_transport) refresh_transport();
                      http::Response r;
                      r.body = rt.metrics_.render();
                      r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                      return r;
                    }});
  return routes;
}

// The admission endpoints: run on the worker pool. The document a review becomes is paid for in the
// memory budget before it is built.
http::Handler admission_handler(Runtime& rt, Endpoint endpoint, const char* name) {
  return [&rt, endpoint, name](http::Request& req) -> http::Response {
    const auto start = std::chrono::steady_clock::now();
    rt.taken();
    Runtime::Snapshot snap = rt.snapshot();
    const size_t nodes = engine::json_node_bound(req.body);
    const size_t max_nodes = rt.max_document_nodes();
    if (nodes > max_nodes) {
      rt.metrics_.invalid_request("too-large");
      rt.log_.write(Log::warn, "request refused", {{"webhook", name}, {"error", "too many values"}, {"values", nodes}, {"bytes", req.body.size()}});
      http::Response r = json_response(413, json{{"error", "the review holds up to " + std::to_string(nodes) + " JSON values, over the " +
                                                                std::to_string(max_nodes) + " the memory budget allows one review"}}
                                                .dump());
      r.close = true;
      return r;
    }
    BudgetShare document(rt.document_budget());
    if (!document.grow_by(nodes * kDocumentBytesPerNode, req.deadline)) {
      rt.metrics_.invalid_request("busy");
      http::Response r = json_response(503, R"({"error":"the server is at its memory budget; retry"})");
      r.headers.emplace_back("Retry-After", "1");
      return r;
    }
    Outcome outcome;
    Answer answer = snap.admission->handle(endpoint, req.body, req.content_type, snap.state, outcome);
    std::string().swap(req.body);  // the document holds what it needs
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    http::Response res = json_response(answer.status, std::move(answer.body));
    // The answer is set; the rest is bookkeeping, and nothing failing in it (an allocation) may
    // turn the answer into a 500.
    try {
      // Shutting down: each client closes its kept-alive connection after this answer and opens
      // its next one to an endpoint that stays (no request lost when the listener closes).
      if (rt.shutting_down_) res.close = true;
      rt.account(endpoint, name, outcome, seconds);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the answer stands; the metrics miss one request
    }
    return res;
  };
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
  // --watch: the client first, for the cluster's Kubernetes version, which the config takes.
  std::unique_ptr<kube::Client> watch_client;
  std::string watch_server, watch_source;
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
    watch_client = std::move(*client);
    watch_server = cluster->server;
    watch_source = cluster->source;
    if (auto version = watch_client->server_version()) {
      rt.log_.write(Log::info, "the API server's Kubernetes version replaces the config's kubernetesVersion", {{"version", *version}});
      rt.use_server_kubernetes_version(*version);
    } else {
      rt.log_.write(Log::warn, "cannot read the API server's version: the config's kubernetesVersion stands",
                    {{"error", version.error().message}});
    }
  }
  if (!rt.load_config()) return 2;
  if (!rt.load_certs()) return 2;
  rt.load_state();  // not ready until it loads
  rt.remember_signatures();

  // --watch: list and watch the kinds the enabled rules read; not ready until each is listed.
  // The kinds are those of the config at start-up (a config that reads other kinds needs a restart).
  std::shared_ptr<kube::ClusterCache> cache;
  std::shared_ptr<const engine::Config> watch_config;  // outlives the cache, which reads it
  if (options.watch) {
    watch_config = rt.config();
    const auto& config = watch_config;
    std::vector<std::string> unknown;
    kube::CacheOptions co;
    co.resources = kube::resources_for(engine::kinds_read(registry, *config), &unknown);
    co.log = [&rt](const std::string& level, const std::string& msg, const json& fields) {
      rt.log_.write(level == "error" ? Log::error : level == "warn" ? Log::warn : level == "debug" ? Log::debug : Log::info, msg, fields);
    };
    for (const auto& k : unknown) rt.log_.write(Log::warn, "a kind the rules read cannot be watched", {{"kind", k}});
    cache = std::make_shared<kube::ClusterCache>(std::shared_ptr<kube::Client>(std::move(watch_client)), *config, std::move(co));
    cache->start();
    rt.use_cache(cache);
    rt.log_.write(Log::info, "watching the cluster", {{"server", watch_server}, {"source", watch_source}});
  }

  // The transport (webhook/http.h): the TLS server of the admission endpoints, and the plain-HTTP
  // one of health and metrics when --metrics-addr moves them there. Both share the memory budget's
  // accounting and one pool of workers for the rules.
  // --memory-budget is shared out: a quarter (at least one body of the largest size) for the bodies
  // being read, the rest for the documents being evaluated. Two budgets, so that a document waiting
  // for its part never waits on bodies that wait for theirs.
  const size_t body_share = std::max(options.memory_budget_bytes / 4, options.max_body_bytes);
  Budget budget(body_share);
  Budget documents(options.memory_budget_bytes - std::min(body_share, options.memory_budget_bytes));
  rt.set_document_budget(&documents);
  auto workers = std::make_shared<http::WorkerPool>(options.workers, options.max_queued_requests);
  http::Limits limits;
  limits.handshake_timeout = std::chrono::milliseconds(options.handshake_timeout_ms);
  limits.request_timeout = std::chrono::milliseconds(options.request_timeout_ms);
  limits.idle_timeout = std::chrono::milliseconds(options.idle_timeout_ms);
  limits.write_timeout = std::chrono::milliseconds(options.write_timeout_ms);
  limits.max_header_bytes = options.max_header_bytes;
  limits.max_header_fields = options.max_header_fields;
  limits.max_body_bytes = options.max_body_bytes;
  limits.max_connections = options.max_connections;

  http::Server::Options main_options;
  main_options.limits = limits;
  main_options.host = options.host;
  main_options.port = options.port;
  main_options.io_threads = options.io_threads;
  main_options.budget = &budget;
  main_options.workers = workers;
  main_options.tls = [&rt, &options](SSL_CTX& ctx, std::string& error) { return rt.certs_.configure(ctx, options.client_ca_file, error); };
  main_options.on_refused = [&rt](std::string_view reason) { rt.metrics_.invalid_request(reason); };

  std::unique_ptr<http::Server> side;
  std::unique_ptr<http::Server> svr;
  auto refresh_transport = [&] {
    http::Counters c = svr->counters();
    if (side) {
      http::Counters s = side->counters();
      for (const auto& [k, v] : s.refused) c.refused[k] += v;
      for (const auto& [k, v] : s.closed) c.closed[k] += v;
      c.accepted += s.accepted;
      c.open += s.open;
    }
    rt.metrics_.set_transport(c.refused, c.closed, c.accepted, c.open, budget.used() + documents.used(),
                              budget.total() + documents.total());
  };
  std::vector<http::Route> routes;
  routes.push_back({"POST", "/validate", admission_handler(rt, Endpoint::validate, "validate"), true, true});
  routes.push_back({"POST", "/mutate", admission_handler(rt, Endpoint::mutate, "mutate"), true, true});
  if (!options.metrics_host) {
    for (auto& r : health_routes(rt, refresh_transport)) routes.push_back(std::move(r));
  } else {
    http::Server::Options side_options;
    side_options.limits = limits;
    side_options.host = *options.metrics_host;
    side_options.port = options.metrics_port;
    side_options.io_threads = 1;
    side = std::make_unique<http::Server>(std::move(side_options), health_routes(rt, refresh_transport));
  }
  svr = std::make_unique<http::Server>(std::move(main_options), std::move(routes));

  std::string error;
  const int port = svr->listen(error);
  if (port <= 0) {
    rt.log_.write(Log::error, "cannot set up TLS or listen", {{"host", options.host}, {"port", options.port}, {"error", error}});
    return 2;
  }
  int side_port = 0;
  if (side) {
    side_port = side->listen(error);
    if (side_port <= 0) {
      rt.log_.write(Log::error, "cannot listen for metrics", {{"host", *options.metrics_host}, {"port", options.metrics_port}, {"error", error}});
      return 2;
    }
  }
  svr->start();
  if (side) side->start();
  json where = {{"host", options.host}, {"port", port}};
  if (side) where["metricsPort"] = side_port;
  rt.log_.write(Log::info, "listening", where);

  // Memory a burst or a large review freed goes back to the system within a second, even when no
  // further request comes to make the allocator purge (its RSS is what the pod's limit counts).
  std::mutex house_mu;
  std::condition_variable house_cv;
  bool house_stop = false;
  std::thread housekeeper([&] {
    std::unique_lock lock(house_mu);
    uint64_t seen = rt.answered();
    while (!house_cv.wait_for(lock, std::chrono::seconds(1), [&] { return house_stop; })) {
      const uint64_t now = rt.answered();
      if (now != seen) engine::release_free_memory();
      seen = now;
    }
  });

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

  // Not ready first, so endpoints drain (every answer from now on tells its client to close the
  // connection); then stop accepting, close idle connections and let requests in progress finish,
  // bounded by the grace period.
  rt.shutting_down_ = true;
  svr->draining();
  if (side) side->draining();
  if (options.shutdown_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(options.shutdown_delay_ms));
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  // The last resort: a worker inside a rule when the grace period (and a second more) is over.
  std::thread watchdog([&] {
    std::unique_lock lock(done_mu);
    if (!done_cv.wait_for(lock, std::chrono::milliseconds(options.grace_period_ms + 1000), [&] { return done; })) {
      rt.log_.write(Log::warn, "grace period over; exiting with requests still in progress");
      std::fflush(stderr);
      std::_Exit(0);
    }
  });
  const auto grace = std::chrono::milliseconds(options.grace_period_ms);
  if (!svr->stop(grace)) rt.log_.write(Log::warn, "grace period over; closing the connections still open");
  if (side) side->stop(std::chrono::milliseconds(0));
  workers->stop();
  if (cache) cache->stop();
  {
    std::lock_guard lock(reload_mu);
    stop_reloading = true;
  }
  reload_cv.notify_all();
  reloader.join();
  {
    std::lock_guard lock(house_mu);
    house_stop = true;
  }
  house_cv.notify_all();
  housekeeper.join();
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
