#include "kube/cache.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/evaluate.h"
#include "rules/labels/mig_config_names.h"
#include "rules/operator/prometheus_rules.h"
#include "rules/registry.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::kube {

using engine::json;

namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Whether a ConfigMap holds a config some rule reads: a mig-parted config (MIG Manager), a
// device-plugin config (sharing rules) or a DCGM metrics CSV (gpu-alert-metric-unknown). Read
// with the rules' own readers.
bool configmap_read_by_rules(const engine::Object& cm) {
  std::set<std::string, std::less<>> names;
  if (rules::labels::mig_config_names(cm, names)) return true;
  if (!rules::sharing::device_plugin_configs(cm).empty()) return true;
  std::set<std::string, std::less<>> metrics;
  rules::operator_::dcgm_csv_metrics(engine::member(cm.root(), "data"), metrics);
  return !metrics.empty();
}

std::string key_of(const json& obj) {
  const json* md = engine::member(obj, "metadata");
  std::string ns, name;
  if (md) {
    if (auto n = engine::string_at(*md, "namespace")) ns = std::string(*n);
    if (auto n = engine::string_at(*md, "name")) name = std::string(*n);
  }
  return ns + "/" + name;
}

}  // namespace

std::set<std::string, std::less<>> node_labels_read(const engine::Config& config) {
  std::set<std::string, std::less<>> out{"nvidia.com/gpu.product", "nvidia.com/mig.config"};
  if (auto it = config.rules.find("mig-node-pool-mixed"); it != config.rules.end() && it->second.enabled)
    if (auto pool = engine::string_at(it->second.params.values(), "poolLabel"); pool && !pool->empty())
      out.insert(std::string(*pool));
  return out;
}

std::optional<json> project(json o, const std::set<std::string, std::less<>>& node_labels) {
  if (!o.is_object()) return std::nullopt;
  const auto kind = engine::string_at(o, "kind").value_or("");
  const auto api_version = engine::string_at(o, "apiVersion").value_or("");
  if (kind == "Node" && api_version == "v1") {
    json out = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", json::object()}};
    if (const json* md = engine::member(o, "metadata")) {
      if (auto name = engine::string_at(*md, "name")) out["metadata"]["name"] = *name;
      if (const json* labels = engine::member(*md, "labels"); labels && labels->is_object()) {
        json kept = json::object();
        for (const auto& [k, v] : labels->items())
          if (node_labels.contains(k)) kept[k] = v;
        if (!kept.empty()) out["metadata"]["labels"] = std::move(kept);
      }
    }
    return out;
  }
  if (json* md = engine::member(o, "metadata"); md && md->is_object()) {
    md->erase("managedFields");
    md->erase("resourceVersion");
    if (json* an = engine::member(*md, "annotations"); an && an->is_object()) {
      an->erase("kubectl.kubernetes.io/last-applied-configuration");
      if (an->empty()) md->erase("annotations");
    }
  }
  if (kind == "ConfigMap" && api_version == "v1") {
    o.erase("binaryData");
    if (!configmap_read_by_rules(engine::object_from_json(o))) return std::nullopt;
  }
  return o;
}

namespace {

// "2026-12-03T10:00:00Z" (seconds since the epoch, UTC); "never" for 0.
std::string utc(double unix_seconds) {
  if (unix_seconds <= 0) return "never";
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct Stored {
  std::shared_ptr<engine::Object> obj;  // const once stored
  std::string ns;                       // effective namespace
};

struct Reflector {
  Resource resource;
  ResourceStatus status;
  std::map<std::string, Stored> objects;  // "ns/name" → object (sorted: snapshots are deterministic)
  std::string rv;
  bool absent_logged = false;
  bool keep = true;  // a rule reads the kind
  std::thread thread;
};

}  // namespace

struct ClusterCache::Impl {
  std::shared_ptr<Client> client;
  engine::Config config;
  CacheOptions opt;
  std::set<engine::KindRef> kept;
  std::set<std::string, std::less<>> node_labels;

  mutable std::mutex mu;  // everything below up to the snapshot
  std::condition_variable cv;
  bool stopping = false;
  bool started = false;
  bool dirty = false;
  std::vector<std::unique_ptr<Reflector>> reflectors;
  std::vector<uint32_t> free_ids;
  uint32_t next_id = 1;
  std::thread builder;

  mutable std::mutex snap_mu;
  mutable std::condition_variable snap_cv;
  std::shared_ptr<const engine::Inventory> snap;
  uint64_t generation = 0;

  void log(const std::string& level, const std::string& message, const Resource& r, json fields = json::object()) const {
    if (!opt.log) return;
    fields["kind"] = r.kind;
    fields["group"] = r.group;
    opt.log(level, message, fields);
  }

  static std::string name_of(const Resource& r) { return r.group.empty() ? r.plural : r.plural + "." + r.group; }

  bool is_stopping() const {
    std::lock_guard lock(mu);
    return stopping;
  }

  // Sleeps unless stopped; false when stopping.
  bool sleep_ms(int ms) {
    std::unique_lock lock(mu);
    return !cv.wait_for(lock, std::chrono::milliseconds(std::max(ms, 0)), [&] { return stopping; });
  }

  // The pause after the n-th failure in a row (n ≥ 1): d = min(backoff_max_ms, backoff_initial_ms ×
  // 2^(n−1)), then uniform in [d/2, d].
  //
  // client-go's reflector (kubernetes/client-go, tools/cache/reflector.go at 32ce75a7d6bc,
  // defaultBackoffInit/Max/Reset/Factor/Jitter and NewReflectorWithOptions) backs off 800 ms × 2,
  // capped at 30 s, with jitter 1.0: apimachinery's wait.Jitter (pkg/util/wait/wait.go at
  // eed236ceee2c) sleeps uniformly in [d, 2d), so up to 60 s ("0.22 QPS" when the API server is
  // unhealthy), and DelayWithReset (pkg/util/wait/backoff.go) puts it back to 800 ms every 2
  // minutes whatever happens. Here: the first retry within 200 ms (one dropped connection costs
  // little), the same factor and cap, the cap the longest sleep, a reset only after a watch that
  // ran (CacheOptions), and proportional jitter ("equal jitter" of
  // https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/) rather than full
  // jitter (uniform in [0, d]): its floor d/2 bounds the attempts in any window. With the
  // defaults, at most 7 watches of a kind in 10 s against a server that ends each at once
  // (100 + 200 + … + 6400 ms = 12.7 s > 10 s; tests/kube/cache_test.cpp), then one every 15–30 s.
  int backoff_delay_ms(int n) const {
    static thread_local std::mt19937 rng(std::random_device{}());
    const int64_t initial = std::max(opt.backoff_initial_ms, 1);
    const int64_t cap = std::max<int64_t>(opt.backoff_max_ms, 1);
    const int shift = std::clamp(n - 1, 0, 30);
    const int64_t base = std::min(cap, initial << shift);
    std::uniform_int_distribution<int64_t> jitter(base / 2, base);
    return static_cast<int>(jitter(rng));
  }

  // Counts a failure of `r` and sleeps its backoff; false when stopping. `error` (when not empty)
  // marks the resource unhealthy with it. Logs `message` with the backoff.
  bool fail(Reflector& r, const std::string& error, const std::string& level, const std::string& message) {
    int delay = 0;
    int n = 0;
    uint64_t total = 0;
    {
      std::lock_guard lock(mu);
      ++r.status.failures;
      if (r.status.consecutive_failures < std::numeric_limits<int>::max()) ++r.status.consecutive_failures;
      n = r.status.consecutive_failures;
      total = r.status.failures;
      delay = backoff_delay_ms(n);
      r.status.last_backoff_ms = delay;
      if (!error.empty()) set_healthy_locked(r, false, error);
    }
    log(level, message + " (failure " + std::to_string(n) + " in a row; next attempt in " + std::to_string(delay) + " ms)",
        r.resource, {{"failures", total}, {"consecutive_failures", n}, {"backoff_ms", delay}});
    return sleep_ms(delay);
  }

  // A watch ran min_watch_ms: the backoff starts again from backoff_initial_ms.
  void reset_failures(Reflector& r) {
    std::lock_guard lock(mu);
    r.status.consecutive_failures = 0;
  }

  void count_restart(Reflector& r, const char* reason) {
    std::lock_guard lock(mu);
    ++r.status.watch_restarts[reason];
  }

  void mark_dirty_locked() {
    dirty = true;
    cv.notify_all();
  }

  uint32_t alloc_id_locked() {
    if (!free_ids.empty()) {
      const uint32_t id = free_ids.back();
      free_ids.pop_back();
      return id;
    }
    return next_id++;
  }

  // An API object → the kept object (no id yet), or null when it is not kept.
  std::shared_ptr<engine::Object> make_object(json body) const {
    auto p = project(std::move(body), node_labels);
    if (!p) return nullptr;
    auto obj = std::make_shared<engine::Object>(engine::object_from_json(std::move(*p)));
    if (!obj->is_kubernetes_object()) return nullptr;
    return obj;
  }

  // The resource is no longer served (its CRD was deleted): the next round discovers it again.
  void forget_version(Reflector& r) {
    std::lock_guard lock(mu);
    r.status.version.clear();
    r.status.installed = false;
  }

  void set_healthy_locked(Reflector& r, bool healthy, const std::string& error = "") {
    if (r.status.healthy != healthy) mark_dirty_locked();
    r.status.healthy = healthy;
    if (!error.empty() || healthy) r.status.last_error = error;
  }

  // Replaces a resource's objects with a fresh list.
  using Fresh = std::vector<std::pair<std::string, std::shared_ptr<engine::Object>>>;

  // A list page's items → kept objects (projected at once: a page of full objects is the most the
  // cache ever holds, not the whole list).
  void project_page(const Reflector& r, std::vector<json>& items, Fresh& fresh) const {
    if (r.keep)
      for (auto& item : items) {
        std::string key = key_of(item);
        if (auto obj = make_object(std::move(item))) fresh.emplace_back(std::move(key), std::move(obj));
      }
    items.clear();
    items.shrink_to_fit();
  }

  // Every page of a list, projected; the list's resourceVersion.
  Expected<std::string, ApiError> list_projected(const Reflector& r, Fresh& fresh) {
    std::string cont, rv;
    bool first = true;
    while (first || !cont.empty()) {
      auto page = client->list(r.resource, r.status.version, "", opt.page_size, cont);
      if (!page) return Unexpected(page.error());
      if (first) rv = page->resource_version;
      first = false;
      cont = page->continue_token;
      project_page(r, page->items, fresh);
    }
    return rv;
  }

  // Replaces a resource's objects with a fresh list.
  void replace(Reflector& r, Fresh&& fresh, const std::string& rv) {
    std::lock_guard lock(mu);
    std::map<std::string, Stored> next;
    bool changed = false;
    for (auto& [key, obj] : fresh) {
      auto old = r.objects.find(key);
      if (old != r.objects.end() && engine::same_value(old->second.obj->root(), obj->root())) {
        next.emplace(key, std::move(old->second));
        r.objects.erase(old);
        continue;
      }
      if (old != r.objects.end()) {
        obj->id = old->second.obj->id;
        r.objects.erase(old);
      } else {
        obj->id = alloc_id_locked();
      }
      std::string ns = engine::effective_namespace(*obj, config);
      next.emplace(key, Stored{std::move(obj), std::move(ns)});
      changed = true;
    }
    for (auto& [key, s] : r.objects) {
      free_ids.push_back(s.obj->id);
      changed = true;
    }
    r.objects = std::move(next);
    r.rv = rv;
    r.status.objects = r.objects.size();
    r.status.synced = true;
    r.status.last_sync_unix = now_unix();
    set_healthy_locked(r, true);
    if (changed) mark_dirty_locked();
  }

  void apply(Reflector& r, WatchEvent&& ev) {
    std::string rv;
    if (const json* md = engine::member(ev.object, "metadata"))
      if (auto v = engine::string_at(*md, "resourceVersion")) rv = std::string(*v);
    std::shared_ptr<engine::Object> obj;
    std::string key;
    if (ev.type != "BOOKMARK") {
      key = key_of(ev.object);
      if (r.keep && ev.type != "DELETED") obj = make_object(std::move(ev.object));
    }
    std::lock_guard lock(mu);
    if (!rv.empty()) r.rv = rv;
    r.status.last_sync_unix = now_unix();
    set_healthy_locked(r, true);  // an event proves the watch works
    if (ev.type == "BOOKMARK" || !r.keep) return;
    auto old = r.objects.find(key);
    if (ev.type == "DELETED" || !obj) {  // deleted, or no longer holding anything a rule reads
      if (old == r.objects.end()) return;
      free_ids.push_back(old->second.obj->id);
      r.objects.erase(old);
    } else if (old != r.objects.end()) {
      if (engine::same_value(old->second.obj->root(), obj->root())) return;  // nothing a rule reads changed
      obj->id = old->second.obj->id;
      old->second.ns = engine::effective_namespace(*obj, config);
      old->second.obj = std::move(obj);
    } else {
      obj->id = alloc_id_locked();
      std::string ns = engine::effective_namespace(*obj, config);
      r.objects.emplace(key, Stored{std::move(obj), std::move(ns)});
    }
    r.status.objects = r.objects.size();
    mark_dirty_locked();
  }

  void run(Reflector& r) {
    const std::string name = name_of(r.resource);
    while (!is_stopping()) {
      if (r.status.version.empty()) {
        auto v = client->discover(r.resource);
        if (is_stopping()) break;
        if (!v && v.error().status == 404) {
          {
            std::lock_guard lock(mu);
            const bool had = !r.objects.empty() || r.status.installed || !r.status.synced;
            for (auto& [k, s] : r.objects) free_ids.push_back(s.obj->id);
            r.objects.clear();
            r.status.objects = 0;
            r.status.installed = false;
            r.status.synced = true;
            r.status.healthy = true;
            r.status.last_error.clear();
            if (had) mark_dirty_locked();
          }
          if (!r.absent_logged) {
            log("info", name + " is not served (" + v.error().message + "); looking again every " +
                            std::to_string(opt.crd_retry_ms) + " ms",
                r.resource);
            r.absent_logged = true;
          }
          if (!sleep_ms(opt.crd_retry_ms)) break;
          continue;
        }
        if (!v) {
          if (!fail(r, v.error().message, "warn", name + ": discovery failed: " + v.error().message)) break;
          continue;
        }
        {
          std::lock_guard lock(mu);
          r.status.version = *v;
          r.status.installed = true;
        }
        if (r.absent_logged) log("info", name + " is now served (" + *v + ")", r.resource, {{"version", *v}});
        r.absent_logged = false;
      }
      Fresh fresh;
      auto list = list_projected(r, fresh);
      if (is_stopping()) break;
      if (!list) {
        const ApiError& e = list.error();
        if (e.status == 404) {  // the CRD went away: discover again (after a backoff, should discovery disagree)
          forget_version(r);
          if (!fail(r, e.message, "info", name + ": list answered 404; discovering again")) break;
          continue;
        }
        if (!fail(r, e.message, e.status == 410 ? "info" : "warn",
                  name + (e.status == 410 ? ": list continue token expired (410); listing again" : ": list failed: " + e.message)))
          break;
        continue;
      }
      const size_t n = fresh.size();
      replace(r, std::move(fresh), *list);
      log("info", name + ": listed; " + std::to_string(n) + " objects kept", r.resource, {{"resourceVersion", *list}, {"objects", n}});
      watch_loop(r);  // a list that works does not reset the backoff: a watch that runs does
    }
  }

  // Watches from the last resourceVersion until the resource must be listed again (410 Gone), or
  // discovered again (404), or the cache stops. Every way round the loop either sleeps a backoff or
  // ran a watch for min_watch_ms.
  void watch_loop(Reflector& r) {
    static thread_local std::mt19937 rng(std::random_device{}());
    const std::string name = name_of(r.resource);
    const auto min_watch = std::chrono::milliseconds(std::max(opt.min_watch_ms, 0));
    while (!is_stopping()) {
      std::uniform_int_distribution<int> spread(0, std::max(opt.watch_timeout_seconds, 1));
      const int timeout = std::max(opt.watch_timeout_seconds, 1) + spread(rng);
      std::string from;
      {
        std::lock_guard lock(mu);
        from = r.rv;
      }
      // From the request, as client-go does (Reflector.watch: `start` before WatchWithContext): a
      // server that answers late and then ends the watch at once is not asked more than once per
      // min_watch_ms either.
      const auto asked = std::chrono::steady_clock::now();
      bool ran = false;  // the watch has run min_watch_ms and reset the backoff
      auto res = client->watch(
          r.resource, r.status.version, from, timeout,
          [&](WatchEvent&& ev) {
            if (!ran && std::chrono::steady_clock::now() - asked >= min_watch) {
              ran = true;
              reset_failures(r);
            }
            apply(r, std::move(ev));
            return !is_stopping();
          },
          [&] {  // the server accepted the watch: the resource is current again
            std::lock_guard lock(mu);
            set_healthy_locked(r, true);
          });
      if (is_stopping()) return;
      const auto lasted = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - asked);
      if (!ran && lasted >= min_watch) {
        ran = true;
        reset_failures(r);
      }
      if (res && ran) {  // the server ended the stream (its timeout): watch again from the last version seen
        count_restart(r, "closed");
        std::lock_guard lock(mu);
        set_healthy_locked(r, true);
        continue;
      }
      if (res) {  // ended within min_watch_ms: a failure whatever it delivered (client-go: VeryShortWatchError)
        count_restart(r, "short");
        const std::string why = name + ": the API server ended the watch " + std::to_string(lasted.count()) +
                                " ms after it was asked for (under " + std::to_string(min_watch.count()) + " ms)";
        if (!fail(r, why, "warn", why + "; watching again from resourceVersion " + from)) return;
        continue;
      }
      const ApiError& e = res.error();
      if (e.status == 410) {
        count_restart(r, "expired");
        // Routine once (the history was compacted while the watch was down): the last state stays
        // healthy while it is listed again. A 410 after other failures is not, and backs off longer.
        bool routine = false;
        {
          std::lock_guard lock(mu);
          routine = r.status.consecutive_failures == 0;
        }
        fail(r, routine ? "" : e.message, "info", name + ": watch from resourceVersion " + from + " expired (410); listing again");
        return;
      }
      count_restart(r, "error");
      if (e.status == 404) {  // the CRD went away: discover again
        forget_version(r);
        fail(r, e.message, "info", name + ": watch answered 404; discovering again");
        return;
      }
      if (!fail(r, e.message, "warn",
                name + ": watch failed (" + e.message + "); keeping the last state, watching again from resourceVersion " + from))
        return;
    }
  }

  void build() {
    std::vector<std::pair<std::shared_ptr<const engine::Object>, std::string>> all;
    bool complete = true;
    std::string stale;
    double stale_since = 0;
    {
      std::lock_guard lock(mu);
      size_t n = 0;
      for (const auto& r : reflectors) n += r->objects.size();
      all.reserve(n);
      for (const auto& r : reflectors) {
        if (!r->status.synced || !r->status.healthy) complete = false;
        // Listed once, then its watch broke: the last state is kept, and the note says how old.
        // (Short, as it becomes an admission warning: the errors themselves are in the log.)
        if (r->status.synced && !r->status.healthy) {
          const auto& res = r->status.resource;
          stale += (stale.empty() ? "" : ", ") + (res.group.empty() ? res.kind : res.kind + "." + res.group);
          if (stale_since == 0 || r->status.last_sync_unix < stale_since) stale_since = r->status.last_sync_unix;
        }
        for (const auto& [k, s] : r->objects) all.emplace_back(s.obj, s.ns);
      }
    }
    auto inv = std::make_shared<engine::Inventory>(kept);
    for (auto& [obj, ns] : all) inv->add(std::move(obj), std::move(ns));
    inv->set_complete(complete);
    if (!stale.empty())
      inv->set_note("cluster state of " + stale + " stale since " + utc(stale_since) +
                    " (watch failing); checks that need the whole cluster were skipped");
    {
      std::lock_guard lock(snap_mu);
      snap = std::move(inv);
      ++generation;
    }
    snap_cv.notify_all();
  }

  void build_loop() {
    std::unique_lock lock(mu);
    while (true) {
      cv.wait(lock, [&] { return dirty || stopping; });
      if (stopping) return;
      if (cv.wait_for(lock, std::chrono::milliseconds(std::max(opt.debounce_ms, 0)), [&] { return stopping; })) return;
      dirty = false;
      lock.unlock();
      build();
      lock.lock();
    }
  }
};

ClusterCache::ClusterCache(std::shared_ptr<Client> client, const engine::Config& config, CacheOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->client = std::move(client);
  impl_->config = config;
  impl_->opt = std::move(options);
  const engine::Registry registry = rules::make_registry();
  impl_->kept = engine::kinds_read(registry, config);
  impl_->node_labels = node_labels_read(config);
  for (const auto& l : impl_->opt.node_labels) impl_->node_labels.insert(l);
  for (const auto& res : impl_->opt.resources) {
    auto r = std::make_unique<Reflector>();
    r->resource = res;
    r->status.resource = res;
    r->keep = impl_->kept.contains(res.kind_ref());
    impl_->reflectors.push_back(std::move(r));
  }
  auto empty = std::make_shared<engine::Inventory>(impl_->kept);
  impl_->snap = std::move(empty);
}

ClusterCache::~ClusterCache() { stop(); }

void ClusterCache::start() {
  std::lock_guard lock(impl_->mu);
  if (impl_->started || impl_->stopping) return;
  impl_->started = true;
  for (auto& r : impl_->reflectors) {
    Reflector* p = r.get();
    r->thread = std::thread([this, p] { impl_->run(*p); });
  }
  impl_->builder = std::thread([this] { impl_->build_loop(); });
}

void ClusterCache::stop() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping) return;
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->client) impl_->client->stop();  // interrupts blocked watches
  for (auto& r : impl_->reflectors)
    if (r->thread.joinable()) r->thread.join();
  if (impl_->builder.joinable()) impl_->builder.join();
}

bool ClusterCache::ready() const {
  std::lock_guard lock(impl_->mu);
  for (const auto& r : impl_->reflectors)
    if (!r->status.synced) return false;
  return true;
}

std::shared_ptr<const engine::Inventory> ClusterCache::snapshot() const {
  std::lock_guard lock(impl_->snap_mu);
  return impl_->snap;
}

uint64_t ClusterCache::generation() const {
  std::lock_guard lock(impl_->snap_mu);
  return impl_->generation;
}

bool ClusterCache::wait_for_generation(uint64_t after, int timeout_ms) const {
  std::unique_lock lock(impl_->snap_mu);
  return impl_->snap_cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return impl_->generation > after; });
}

std::vector<ResourceStatus> ClusterCache::status() const {
  std::lock_guard lock(impl_->mu);
  std::vector<ResourceStatus> out;
  for (const auto& r : impl_->reflectors) out.push_back(r->status);
  return out;
}

}  // namespace gpuguard::kube
