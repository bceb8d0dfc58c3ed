#pragma once
// A Kubernetes API server double for the kube/ tests and bench: TLS on 127.0.0.1 (port 0), bearer
// token or client-certificate authentication, discovery, paged lists and chunked watch streams in
// the API's own wire format (tests/kube/recorded/), with knobs for the failures a reflector must
// survive: 410 Gone on a watch or a continue token, a dropped watch, a token rotation, a resource
// that appears later, a slow server.

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/json.h"
#include "kube/config.h"

namespace gpuguard::test {

// A CA, a serving certificate (localhost, 127.0.0.1, kubernetes.default.svc) and a client
// certificate signed by it, made with the openssl command in `dir`.
struct Pki {
  std::filesystem::path dir;
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::filesystem::path server_cert, server_key, ca_file;
};
Pki make_pki(const std::filesystem::path& dir);

struct ApiRequest {
  std::string path;
  std::string query;  // the raw query string
  bool watch = false;
};

class ApiServer {
 public:
  // Starts serving at once. `token` is the bearer token accepted (a client certificate signed by
  // the PKI's CA is accepted too).
  ApiServer(const Pki& pki, std::string token = "test-token");
  ~ApiServer();
  ApiServer(const ApiServer&) = delete;
  ApiServer& operator=(const ApiServer&) = delete;

  [[nodiscard]] int port() const;
  [[nodiscard]] std::string url() const;  // https://127.0.0.1:<port>
  // A config for this server: its CA, the current token.
  [[nodiscard]] kube::ClusterConfig config() const;
  // GET /version's answer ({"major": "1", "minor": "34+", "gitVersion": ...}); none (404) until set.
  void set_version(engine::json version);

  // Serves a resource (`installed` false: not yet; install() makes it appear later).
  void serve(const std::string& api_version, const std::string& kind, const std::string& plural, bool namespaced,
             bool installed = true);
  void install(const std::string& api_version, const std::string& plural);

  // Creates or replaces an object (an ADDED / MODIFIED event unless `event` is false: state loaded
  // before any watch); sets and returns its resourceVersion.
  uint64_t put(engine::json object, bool event = true);
  // Deletes an object (DELETED event); 0 when it did not exist.
  uint64_t remove(const std::string& api_version, const std::string& kind, const std::string& ns, const std::string& name);
  [[nodiscard]] uint64_t resource_version() const;

  // Every open watch that asked for bookmarks gets a BOOKMARK at the current resourceVersion.
  void bookmark();
  // Forgets the event history: watches from an older resourceVersion get ERROR 410 Expired.
  void compact();
  // Continue tokens issued so far answer 410 Expired.
  void expire_continue_tokens();
  // Closes every open watch abruptly (no final chunk), as a broken connection would.
  void drop_watches();
  // Ends every open watch cleanly (as the server-side timeout does).
  void end_watches();
  // Accepts only `token` from now on.
  void set_token(std::string token);
  // Delays every answer by `ms`.
  void set_delay_ms(int ms);
  // Writes each watch event in two chunks with a pause between them.
  void set_split_events(bool split);
  // Answers 403 (Forbidden, the API server's RBAC message) for a plural.
  void forbid(const std::string& plural);
  // How each new watch is answered from now on: a server (or a proxy in front of it) gone wrong.
  // Watches already open are not touched; events put meanwhile stay in the history.
  enum class WatchFault {
    none,            // events, as a server does
    close,           // 200, then the end of the stream at once, without an event
    bookmark_close,  // one BOOKMARK at the current resourceVersion, then the end
    cut_line,        // half an event line, then the end of the stream
    not_json,        // a line that is not JSON
    error_event,     // an ERROR event with a 500 Status (the API server's InternalError)
    expired,         // an ERROR event with 410 Expired, whatever the resourceVersion
    not_found,       // 404, while discovery and lists still answer
  };
  void set_watch_fault(WatchFault fault);
  // Watch requests received so far for a path (e.g. "/api/v1/nodes").
  [[nodiscard]] size_t watch_requests(const std::string& path) const;

  [[nodiscard]] int open_watches() const;
  [[nodiscard]] std::vector<ApiRequest> requests() const;
  // Waits (bounded) until `n` watches are open; false on timeout.
  bool wait_for_watches(int n, int timeout_ms = 10000) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Waits (bounded, polling every few ms) until `cond` holds; false on timeout.
bool wait_until(const std::function<bool()>& cond, int timeout_ms = 10000);

}  // namespace gpuguard::test
