#pragma once
// The webhook's HTTP/1.1 server, over TLS or plain TCP: Boost.Beast on Boost.Asio, event-driven.
//
// Why not cpp-httplib (README, "The webhook's transport"): Debian's 0.11.4 gives a thread to each
// connection for its whole life and bounds only each recv(), not a request, so a few clients that
// send a byte every few seconds hold every worker; its header limits are compiled into the shared
// library (a million header lines were read into memory). Here a connection costs no thread while
// it waits, and every limit holds whatever a client sends:
//   - the TLS handshake, a whole request (request line, headers and body) and each answer's write
//     have deadlines; an idle kept-alive connection is closed after its own timeout;
//   - the request line and headers are bounded in bytes and in fields (431 past either);
//   - a body must give one Content-Length (411 without, 400 for two or a list), within the limit
//     (413), uncompressed (415), not chunked (411); `Expect: 100-continue` gets the refusal instead
//     of the invitation;
//   - the bodies being read are counted in a memory budget: a connection whose body does not fit
//     stops reading until it does, or until its deadline (503);
//   - at most `max_connections` connections at once: at the limit, one that waits for its client
//     makes room (of the address holding the most connections, the one waiting longest);
//   - pipelined requests are answered in order, each in full.
// Handlers either run on the connection's I/O thread (health, metrics: cheap) or on a pool of
// workers (admission: the rules), so that work never delays the I/O of other connections.

#include <openssl/ssl.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "webhook/budget.h"

namespace gpuguard::webhook::http {

struct Limits {
  std::chrono::milliseconds handshake_timeout{5000};  // TCP accept to the end of the TLS handshake
  std::chrono::milliseconds request_timeout{10000};   // a request's first byte to its last
  std::chrono::milliseconds idle_timeout{5000};       // a kept-alive connection between requests
  std::chrono::milliseconds write_timeout{10000};     // an answer
  size_t max_header_bytes = size_t{16} * 1024;                // request line and header fields
  size_t max_header_fields = 64;
  size_t max_body_bytes = 8u << 20;
  size_t max_connections = 1024;
  size_t max_requests_per_connection = 100000;
};

struct Request {
  std::string method;
  std::string path;    // the target without its query
  std::string target;  // as sent
  std::string content_type;
  std::string body;
  std::string remote;  // the client's address
  // The request's memory share: its body, counted as it arrived.
  BudgetShare* share = nullptr;
  std::chrono::steady_clock::time_point deadline;  // when the client stops waiting (the request's)
};

struct Response {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  bool close = false;  // close the connection after this answer
  std::vector<std::pair<std::string, std::string>> headers;
};

using Handler = std::function<Response(Request&)>;

struct Route {
  std::string method;
  std::string path;
  Handler handler;
  bool on_worker = false;  // run on the worker pool, not on the I/O thread
  bool body = false;       // takes a body (POST): Content-Length required, within the limit
};

// What the transport refused or cut, by reason (metrics).
struct Counters {
  std::map<std::string, uint64_t> refused;  // answered 4xx/5xx before a handler ran, by reason
  std::map<std::string, uint64_t> closed;   // connections closed by the server, by reason
  uint64_t accepted = 0;
  uint64_t open = 0;
};

class Server {
 public:
  struct Options {
    Limits limits;
    // Sets up the server's TLS context (certificates, versions, groups, ciphers); empty: plain
    // HTTP. False, with a message, when it cannot.
    std::function<bool(SSL_CTX&, std::string& error)> tls;
    std::string host = "0.0.0.0";
    int port = 0;            // 0: any free port
    unsigned io_threads = 2;
    Budget* budget = nullptr;             // bodies are counted in it (none: not counted); at least max_body_bytes
    // Workers for the routes that run on them; shared by the servers that are given the same pool.
    std::shared_ptr<class WorkerPool> workers;
    // A refusal or an error answer that is not a route's: counted here as well (metrics).
    std::function<void(std::string_view reason)> on_refused;
  };

  Server(Options options, std::vector<Route> routes);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Sets up TLS, binds and listens; the port (the one chosen when 0 was asked), or -1 with
  // `error` set.
  int listen(std::string& error);
  // Serves on io_threads threads until stop().
  void start();
  // Answers every following request with `Connection: close` (shutting down).
  void draining();
  // Stops accepting, closes idle connections, lets requests in progress finish and waits for them
  // until `grace` passes (false: some were still open), then stops the threads.
  bool stop(std::chrono::milliseconds grace);

  [[nodiscard]] Counters counters() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A fixed pool of threads for handlers that do real work, with a bounded queue (a job past it is
// refused: 503).
class WorkerPool {
 public:
  WorkerPool(unsigned threads, size_t max_queue);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  // False when the queue is full or the pool stopped (the job is not run).
  bool post(std::function<void()> job);
  void stop();
  [[nodiscard]] unsigned threads() const { return static_cast<unsigned>(threads_.size()); }

 private:
  void work();
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  size_t max_queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpuguard::webhook::http
