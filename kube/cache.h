#pragma once
// The cluster state the webhook evaluates against, kept current by list + watch (a reflector per
// resource) without ever calling the API server inside an admission request.
//
// Each resource: discover its version (not installed → skipped with one log line, retried every
// crd_retry_ms), list it in pages, then watch from the list's resourceVersion with bookmarks;
// re-list on 410 Gone; back off on failures (see CacheOptions). Objects are kept as projections (only
// what the rules read: Nodes keep metadata.name and the labels rules read, ConfigMaps are kept
// only when they hold a config a rule reads, managedFields and last-applied annotations are
// dropped everywhere). snapshot() is an immutable engine::Inventory rebuilt (debounced) after
// changes; it is complete only while every installed resource is synced and watched.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/inventory.h"
#include "kube/client.h"
#include "kube/resources.h"

namespace gpuguard::kube {

struct CacheOptions {
  std::vector<Resource> resources;   // what to list and watch
  size_t page_size = 500;
  int watch_timeout_seconds = 300;   // server-side timeout of one watch (randomised up to 2x)
  // Failures back off. A failure: a discovery or list that fails, a watch that fails (transport
  // error, HTTP error, an ERROR event, 410 Gone, an event that is not JSON or too large, a stream
  // cut mid-line), and a watch the server ends within min_watch_ms of asking for it, whatever it
  // delivered. The n-th failure in a row sleeps d = min(backoff_max_ms, backoff_initial_ms × 2^(n−1))
  // with equal jitter: uniform in [d/2, d]. The count of failures in a row goes back to 0 only
  // when a watch has run min_watch_ms (seen at its next event or at its end): a list that works,
  // or a watch that opens, does not reset it. (client-go's reflector, tools/cache/reflector.go:
  // a watch under 1 s with no event is a failure, 800 ms × 2 capped at 30 s, jitter [d, 2d);
  // cache.cpp's backoff() cites it.)
  int backoff_initial_ms = 200;
  int backoff_max_ms = 30000;
  int min_watch_ms = 1000;
  int crd_retry_ms = 60000;          // how often an absent resource is looked for again
  int debounce_ms = 100;             // how long changes gather before a new snapshot
  // Logging hook: level ("info", "warn", "error"), message, JSON fields. Default: nothing.
  std::function<void(const std::string&, const std::string&, const engine::json&)> log;
  // Node labels kept besides the ones the enabled rules read (nvidia.com/gpu.product,
  // nvidia.com/mig.config, mig-node-pool-mixed's poolLabel). Nodes keep only these labels: all
  // of a node's GFD/NFD labels would cost ~9 KB a node (440 MB for 50,000 nodes).
  std::vector<std::string> node_labels;
};

struct ResourceStatus {
  Resource resource;
  std::string version;        // served version ("" until discovered)
  bool installed = false;     // served by the API server
  bool synced = false;        // initial list done
  bool healthy = false;       // synced and its watch running (or absent and looked for)
  double last_sync_unix = 0;  // last list or watch event (bookmarks included)
  size_t objects = 0;         // objects kept
  std::string last_error;
  // Failures (CacheOptions: discovery, list and watch attempts that failed, and watches that
  // ended within min_watch_ms), each followed by a backoff; since start().
  uint64_t failures = 0;
  int consecutive_failures = 0;  // failures since a watch last ran min_watch_ms (the backoff's exponent)
  int last_backoff_ms = 0;       // the latest backoff slept (0 before the first)
  // How watches ended, since start(): "closed" (by the server, after min_watch_ms: its timeout),
  // "short" (by the server, within min_watch_ms), "expired" (410 Gone), "error" (anything else).
  std::map<std::string, uint64_t, std::less<>> watch_restarts;
};

class ClusterCache {
 public:
  ClusterCache(std::shared_ptr<Client> client, const engine::Config& config, CacheOptions options);
  ~ClusterCache();  // stops
  ClusterCache(const ClusterCache&) = delete;
  ClusterCache& operator=(const ClusterCache&) = delete;

  void start();
  // Stops the reflectors and the client (a watch blocked on a quiet stream ends at once; the
  // client then fails every call, so give the cache a client of its own).
  void stop();

  // Every resource listed once (absent ones count: there is nothing to list).
  [[nodiscard]] bool ready() const;
  // The latest snapshot (never null after start(); empty and incomplete before the first lists).
  [[nodiscard]] std::shared_ptr<const engine::Inventory> snapshot() const;
  // Bumped with every new snapshot.
  [[nodiscard]] uint64_t generation() const;
  // Waits (bounded) until generation() > after; true if it did.
  bool wait_for_generation(uint64_t after, int timeout_ms) const;
  [[nodiscard]] std::vector<ResourceStatus> status() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The projection the cache keeps of an API object (exposed for tests): nullopt when the object is
// not kept at all (a ConfigMap holding no config a rule reads). `node_labels` are the Node labels
// kept.
[[nodiscard]] std::optional<engine::json> project(engine::json object, const std::set<std::string, std::less<>>& node_labels);

// The Node labels the enabled rules of `config` read.
[[nodiscard]] std::set<std::string, std::less<>> node_labels_read(const engine::Config& config);

}  // namespace gpuguard::kube
