#pragma once
// A minimal Kubernetes API client over cpp-httplib + OpenSSL: GET with a bearer token or a
// client certificate, paged lists, watch streams and discovery. Thread-safe: each call opens
// (or reuses, per thread) its own connection. Never throws; errors are values.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/expected.h"
#include "engine/json.h"
#include "kube/config.h"
#include "kube/resources.h"

namespace gpuguard::kube {

struct ApiError {
  int status = 0;           // HTTP status; 0 for a transport error (connect, TLS, timeout)
  std::string reason;       // the Status object's reason ("Expired", "NotFound", "Forbidden") if any
  std::string message;      // a sentence for the log: what was asked and what went wrong
};

struct ListPage {
  std::vector<engine::json> items;  // each with apiVersion and kind filled in (the API leaves them out of list items)
  std::string resource_version;     // the list's metadata.resourceVersion
  std::string continue_token;       // "" on the last page
};

struct WatchEvent {
  std::string type;       // ADDED, MODIFIED, DELETED, BOOKMARK (ERROR is returned as an ApiError)
  engine::json object;
};

struct ClientOptions {
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 30000;   // a list page or discovery request
  size_t max_response_bytes = 256u << 20;  // a list page larger than this is an error
  size_t max_event_bytes = 16u << 20;      // one watch event
};

class Client {
 public:
  [[nodiscard]] static Expected<std::unique_ptr<Client>, std::string> create(ClusterConfig config,
                                                                             ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // GET a path (with query) → parsed JSON body, or the error (a Status body decoded into it).
  [[nodiscard]] Expected<engine::json, ApiError> get(const std::string& path_and_query);

  // The server's Kubernetes version as "<major>.<minor>" (GET /version), for the config's
  // kubernetesVersion; an ApiError when it cannot be read or read as a version.
  [[nodiscard]] Expected<std::string, ApiError> server_version();

  // The version of `resource` the server serves (first of resource.versions found in discovery:
  // GET /api/v1 or /apis/<group>/<version>, looking for the plural), or an ApiError with status
  // 404 when none is served (the CRD is not installed).
  [[nodiscard]] Expected<std::string, ApiError> discover(const Resource& resource);

  // One page of a list (limit / continue). A 410 on a continue token comes back as ApiError{410}.
  [[nodiscard]] Expected<ListPage, ApiError> list(const Resource& resource, const std::string& version,
                                                  const std::string& ns, size_t limit,
                                                  const std::string& continue_token);
  // Every page.
  [[nodiscard]] Expected<ListPage, ApiError> list_all(const Resource& resource, const std::string& version,
                                                      const std::string& ns = "", size_t limit = 500);

  // A watch from `resource_version` with allowWatchBookmarks=true and timeoutSeconds; calls
  // on_event for each event until the server ends the stream (returns success), on_event returns
  // false, or stop() is called. An ERROR event (410 Expired, …) returns its ApiError.
  // `on_open` (optional) is called once the server has accepted the watch (HTTP 200), before any
  // event: a watch with nothing to report is then known to be running.
  [[nodiscard]] Expected<void, ApiError> watch(const Resource& resource, const std::string& version,
                                               const std::string& resource_version, int timeout_seconds,
                                               const std::function<bool(WatchEvent&&)>& on_event,
                                               const std::function<void()>& on_open = nullptr);

  // Ends every call in progress (watches included) promptly; later calls fail at once.
  void stop();

  [[nodiscard]] const ClusterConfig& config() const;

 private:
  struct Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "<major>.<minor>" of a /version body: {"major": "1", "minor": "34+"} (managed clusters add a
// '+'), else its gitVersion ("v1.34.2-eks-…"); nullopt when neither reads as one.
[[nodiscard]] std::optional<std::string> parse_server_version(const engine::json& body);

}  // namespace gpuguard::kube
