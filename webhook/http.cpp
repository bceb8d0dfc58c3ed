#include "webhook/http.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <atomic>
#include <list>
#include <optional>
#include <utility>

#include "engine/json_write.h"

namespace gpuguard::webhook::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// WorkerPool

WorkerPool::WorkerPool(unsigned threads, size_t max_queue) : max_queue_(std::max<size_t>(1, max_queue)) {
  threads = std::max(1u, threads);
  threads_.reserve(threads);
  for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

WorkerPool::~WorkerPool() { stop(); }

bool WorkerPool::post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || queue_.size() >= max_queue_) return false;
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WorkerPool::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
  std::lock_guard lock(mu_);
  queue_.clear();  // jobs never run: their captures (a connection each) are released here
}

void WorkerPool::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    auto job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();  // jobs catch what their handler throws (Session::run_handler)
    job = nullptr;
    lock.lock();
  }
}

// ---------------------------------------------------------------------------------------------
// The server

namespace {

std::string error_body(std::string_view why) {
  std::string body = R"({"error":)";
  engine::append_json_string(body, why);
  body += '}';
  return body;
}

Response refusal(int status, std::string_view why) {
  Response r;
  r.status = status;
  r.body = error_body(why);
  r.close = true;
  return r;
}

std::string_view view(beast::string_view s) { return {s.data(), s.size()}; }
std::string to_string(beast::string_view s) { return {s.data(), s.size()}; }

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The bytes a connection reads at a time (a TLS record's payload at most).
constexpr size_t kReadChunk = size_t{16} * 1024;
// What a refused client may still send (its body) before the connection is closed, and for how
// long: enough for it to read the answer instead of a reset, never more.
constexpr size_t kLingerBytes = 1u << 20;
constexpr std::chrono::milliseconds kLingerTime{1000};

class SessionBase {
 public:
  virtual ~SessionBase() = default;
  explicit SessionBase(asio::ip::address peer) : peer_(std::move(peer)) {}
  SessionBase(const SessionBase&) = delete;
  SessionBase& operator=(const SessionBase&) = delete;
  // Posted when the server stops: closes the connection if it waits for a request.
  virtual void close_if_idle() = 0;
  // Since when (steady clock, ns) the connection has waited for its client — in the handshake,
  // between requests or reading a request; 0 while the server works on its request or answers.
  [[nodiscard]] int64_t waiting_since() const { return waiting_since_.load(std::memory_order_relaxed); }
  // Closes it (posted: the connection limit is reached and it waited longest).
  virtual void evict() = 0;
  // The client's address.
  [[nodiscard]] const asio::ip::address& peer() const { return peer_; }

 protected:
  void waiting(bool yes) {
    waiting_since_.store(yes ? std::max<int64_t>(1, Clock::now().time_since_epoch().count()) : 0, std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> waiting_since_{0};
  const asio::ip::address peer_;
};

}  // namespace

struct Server::Impl {
  Options options;
  std::vector<Route> routes;

  // Declared before the I/O context, so that they outlive the connections its destructor frees.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::list<std::weak_ptr<SessionBase>> sessions;
  size_t open = 0;
  uint64_t accepted = 0;
  std::map<std::string, uint64_t, std::less<>> refused, closed;
  std::atomic<bool> draining{false};
  std::atomic<bool> stopping{false};

  asio::io_context ioc;
  std::optional<asio::ssl::context> ssl;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer accept_retry{ioc};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::vector<std::thread> threads;

  explicit Impl(Options o, std::vector<Route> r) : options(std::move(o)), routes(std::move(r)) {}

  void count(std::map<std::string, uint64_t, std::less<>>& m, std::string_view reason) {
    std::lock_guard lock(mu);
    auto it = m.find(reason);
    if (it == m.end()) it = m.emplace(std::string(reason), 0).first;
    ++it->second;
  }
  void count_refused(std::string_view reason) {
    count(refused, reason);
    if (options.on_refused) {
      try {
        options.on_refused(reason);
      } catch (...) {  // NOLINT(bugprone-empty-catch): a metric missed, the answer stands
      }
    }
  }
  void count_closed(std::string_view reason) { count(closed, reason); }

  // A connection's place in the registry (for stop()), taken when it starts.
  std::list<std::weak_ptr<SessionBase>>::iterator enlist(const std::shared_ptr<SessionBase>& s) {
    std::lock_guard lock(mu);
    ++open;
    return sessions.insert(sessions.end(), s);
  }
  void delist(std::list<std::weak_ptr<SessionBase>>::iterator it) {
    {
      std::lock_guard lock(mu);
      sessions.erase(it);
      --open;
    }
    cv.notify_all();
  }
  [[nodiscard]] size_t open_now() const {
    std::lock_guard lock(mu);
    return open;
  }

  [[nodiscard]] const Route* find_route(std::string_view method, std::string_view path, bool& path_known) const {
    path_known = false;
    for (const auto& r : routes) {
      if (r.path != path) continue;
      path_known = true;
      if (r.method == method) return &r;
    }
    return nullptr;
  }

  void do_accept();
  void on_accept(const error_code& ec, tcp::socket socket);
};

namespace {

template <class Stream>
class Session final : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  template <class... Args>
  Session(Server::Impl& srv, asio::ip::address peer, tcp::socket socket, Args&&... args)
      : SessionBase(std::move(peer)),
        srv_(srv),
        stream_(std::move(socket), std::forward<Args>(args)...),
        buffer_(kReadChunk + srv.options.limits.max_header_bytes),
        share_(srv.options.budget) {}

  ~Session() override {
    if (enlisted_) srv_.delist(place_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    place_ = srv_.enlist(this->shared_from_this());
    enlisted_ = true;
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->begin(); });
  }

  void close_if_idle() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->idle_) self->close_now();
    });
  }

  void evict() override {
    asio::post(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->waiting_since() != 0) self->close_now();
    });
  }

 private:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  beast::tcp_stream& lowest() { return beast::get_lowest_layer(stream_); }

  void begin() {
    waiting(true);
    if constexpr (kTls) {
      idle_ = true;  // nothing of a request yet: stop() may close it
      lowest().expires_after(srv_.options.limits.handshake_timeout);
      stream_.async_handshake(asio::ssl::stream_base::server, [self = this->shared_from_this()](const error_code& ec) {
        self->idle_ = false;
        if (ec) {
          self->srv_.count_closed(ec == beast::error::timeout ? "handshake-timeout" : "handshake-failed");
          self->close_now();
          return;
        }
        self->wait_request();
      });
    } else {
      wait_request();
    }
  }

  // Between requests: wait for the next one's first bytes, for the idle timeout.
  void wait_request() {
    if (srv_.stopping) {
      close_now();
      return;
    }
    if (requests_ >= srv_.options.limits.max_requests_per_connection) {
      close_now();
      return;
    }
    if (buffer_.size() > 0) {  // a pipelined request
      begin_request();
      return;
    }
    idle_ = true;
    waiting(true);
    lowest().expires_after(srv_.options.limits.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk), [self = this->shared_from_this()](const error_code& ec, size_t n) {
      self->idle_ = false;
      if (ec) {
        if (ec == beast::error::timeout) self->srv_.count_closed("idle");
        self->close_now();
        return;
      }
      self->buffer_.commit(n);
      self->begin_request();
    });
  }

  void begin_request() {
    const Server::Options& o = srv_.options;
    deadline_ = Clock::now() + o.limits.request_timeout;
    lowest().expires_at(deadline_);
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(std::min<size_t>(o.limits.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(static_cast<uint64_t>(o.limits.max_body_bytes));
    bhttp::async_read_header(stream_, buffer_, *parser_, [self = this->shared_from_this()](const error_code& ec, size_t) {
      self->on_header(ec);
    });
  }

  // A read that failed: answer what can be answered, close.
  void read_failed(const error_code& ec, bool in_body) {
    if (ec == beast::error::timeout) {
      srv_.count_closed("request-timeout");
      close_now();
    } else if (ec == bhttp::error::header_limit) {
      refuse(431, "header-too-large",
             "the request line and headers are over " + std::to_string(srv_.options.limits.max_header_bytes) + " bytes");
    } else if (ec == bhttp::error::body_limit) {
      refuse(413, "too-large", "the body is over the limit of " + std::to_string(srv_.options.limits.max_body_bytes) + " bytes");
    } else if (ec == bhttp::error::multiple_content_length) {
      refuse(400, "bad-length", "two Content-Length headers");
    } else if (ec == bhttp::error::bad_content_length) {
      refuse(400, "bad-length", "invalid Content-Length");
    } else if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message || ec == asio::error::eof ||
               ec == asio::ssl::error::stream_truncated || ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      if (in_body || buffer_.size() > 0) srv_.count_closed("incomplete-request");
      close_now();
    } else if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category()) {
      refuse(400, "malformed", "malformed HTTP request: " + ec.message());
    } else {
      close_now();  // a socket or TLS error: nobody to answer
    }
  }

  void on_header(const error_code& ec) {
    if (ec) {
      read_failed(ec, false);
      return;
    }
    const Server::Options& o = srv_.options;
    auto& req = parser_->get();
    size_t fields = 0;
    size_t lengths = 0;
    for (const auto& f : req) {
      ++fields;
      if (f.name() == bhttp::field::content_length) ++lengths;
    }
    if (fields > o.limits.max_header_fields) {
      refuse(431, "header-too-large", "more than " + std::to_string(o.limits.max_header_fields) + " header fields");
      return;
    }
    if (lengths > 1 || (lengths == 1 && req[bhttp::field::content_length].find(',') != beast::string_view::npos)) {
      refuse(400, "bad-length", "more than one Content-Length");
      return;
    }
    // Compressed bodies would be inflated before their size is known, and the API server never
    // compresses; chunked ones have no length to check first (facts/webhook.md §3).
    if (auto ce = view(req[bhttp::field::content_encoding]); !ce.empty() && !iequals(ce, "identity")) {
      refuse(415, "encoded", "a Content-Encoding is not accepted (send the body uncompressed)");
      return;
    }
    if (req.count(bhttp::field::transfer_encoding) > 0) {
      refuse(411, "length-required", "a Content-Length is required (chunked bodies are not accepted)");
      return;
    }
    const std::string_view target = view(req.target());
    const std::string_view path = target.substr(0, target.find('?'));
    const std::string_view method = view(req.method_string());
    bool path_known = false;
    route_ = srv_.find_route(method, path, path_known);
    const uint64_t length = parser_->content_length().value_or(0);
    if (!route_) {
      refuse(404, "", "no such endpoint: " + std::string(method) + " " + std::string(path), /*count=*/false);
      return;
    }
    if (route_->body) {
      if (lengths == 0) {
        refuse(411, "length-required", "a Content-Length is required (chunked bodies are not accepted)");
        return;
      }
      if (length > o.limits.max_body_bytes) {
        refuse(413, "too-large",
               "the body (" + std::to_string(length) + " bytes) is over the limit of " + std::to_string(o.limits.max_body_bytes) + " bytes");
        return;
      }
    } else if (length > 0) {
      refuse(400, "unexpected-body", std::string(method) + " " + std::string(path) + " takes no body");
      return;
    }
    // A client that asks before it sends the body is invited only now that it is acceptable.
    if (length > 0 && iequals(view(req[bhttp::field::expect]), "100-continue")) {
      continue_.emplace(bhttp::status::continue_, 11);
      bhttp::async_write(stream_, *continue_, [self = this->shared_from_this()](const error_code& wec, size_t) {
        self->continue_.reset();
        if (wec) {
          self->read_failed(wec, true);
          return;
        }
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    if (parser_->is_done()) {
      dispatch();
      return;
    }
    bhttp::async_read_some(stream_, buffer_, *parser_, [self = this->shared_from_this()](const error_code& ec, size_t) {
      if (ec) {
        self->read_failed(ec, true);
        return;
      }
      // The body read so far is counted in the memory budget, as it arrives (a client that only
      // announces a large body holds nothing).
      const size_t have = self->parser_->get().body().size();
      if (have > self->share_.bytes() && self->share_.budget() && !self->share_.grow(have - self->share_.bytes())) {
        self->wait_budget(have - self->share_.bytes());
        return;
      }
      self->read_body();
    });
  }

  // The budget is spent: this connection stops reading (TCP holds the client back) until other
  // requests give some back, or its deadline passes (503).
  void wait_budget(size_t need) {
    if (Clock::now() >= deadline_) {
      refuse(503, "busy", "the server is at its memory budget; retry");
      return;
    }
    timer_.expires_after(std::chrono::milliseconds(5));
    timer_.async_wait([self = this->shared_from_this(), need](const error_code& ec) {
      if (ec) {
        self->close_now();
        return;
      }
      if (self->share_.grow(need)) self->read_body();
      else self->wait_budget(need);
    });
  }

  void dispatch() {
    auto msg = parser_->release();
    parser_.reset();
    keep_alive_ = msg.keep_alive();
    auto req = std::make_shared<Request>();
    req->method = to_string(msg.method_string());
    const std::string_view target = view(msg.target());
    req->target = std::string(target);
    req->path = std::string(target.substr(0, target.find('?')));
    req->content_type = to_string(msg[bhttp::field::content_type]);
    req->body = std::move(msg.body());
    error_code ec;
    auto ep = lowest().socket().remote_endpoint(ec);
    if (!ec) req->remote = ep.address().to_string();
    req->share = &share_;
    req->deadline = deadline_;
    waiting(false);
    lowest().expires_never();  // the handler's time is not the client's to use up
    ++requests_;
    const Route* route = route_;
    if (!route->on_worker || !srv_.options.workers) {
      respond(run_handler(*route, *req));
      return;
    }
    auto self = this->shared_from_this();
    bool posted = srv_.options.workers->post([self, route, req] {
      Response r = run_handler(*route, *req);
      asio::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable { self->respond(std::move(r)); });
    });
    if (!posted) refuse(503, "busy", "the server's work queue is full; retry");
  }

  static Response run_handler(const Route& route, Request& req) noexcept {
    try {
      return route.handler(req);
    } catch (...) {
      try {
        return refusal(500, "internal error");
      } catch (...) {
        return Response{500, "{}", "application/json", true, {}};
      }
    }
  }

  void refuse(int status, std::string_view reason, const std::string& why, bool count = true) {
    if (count) srv_.count_refused(reason);
    parser_.reset();
    keep_alive_ = false;
    try {
      respond(refusal(status, why), /*linger=*/true);
    } catch (...) {
      close_now();
    }
  }

  void respond(Response r, bool linger = false) {
    waiting(false);
    share_.release();  // the body is gone with the request
    res_.emplace();
    res_->version(11);
    res_->result(static_cast<unsigned>(r.status));
    res_->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res_->set(k, v);
    const bool keep = keep_alive_ && !r.close && !srv_.draining && !srv_.stopping &&
                      requests_ < srv_.options.limits.max_requests_per_connection;
    res_->keep_alive(keep);
    res_->body() = std::move(r.body);
    res_->prepare_payload();
    lowest().expires_after(srv_.options.limits.write_timeout);
    bhttp::async_write(stream_, *res_, [self = this->shared_from_this(), keep, linger](const error_code& ec, size_t) {
      self->res_.reset();
      if (ec) {
        if (ec == beast::error::timeout) self->srv_.count_closed("write-timeout");
        self->close_now();
        return;
      }
      if (linger) {
        self->linger();
        return;
      }
      if (!keep) {
        self->close_now();
        return;
      }
      self->wait_request();
    });
  }

  // After a refusal: stop sending, let the client's body in flight arrive (read and dropped, on the
  // raw socket) for a moment, so that it reads the answer rather than a reset; then close.
  void linger() {
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) {
      close_now();
      return;
    }
    lowest().expires_after(kLingerTime);
    waiting(true);
    drain_.resize(kReadChunk);
    drain_more();
  }
  void drain_more() {
    lowest().async_read_some(asio::buffer(drain_), [self = this->shared_from_this()](const error_code& ec, size_t n) {
      self->drained_ += n;
      if (ec || self->drained_ >= kLingerBytes) {
        self->close_now();
        return;
      }
      self->drain_more();
    });
  }

  void close_now() {
    error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().close();
  }

  Server::Impl& srv_;
  Stream stream_;
  asio::steady_timer timer_{stream_.get_executor()};
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::optional<bhttp::response<bhttp::empty_body>> continue_;
  std::optional<bhttp::response<bhttp::string_body>> res_;
  BudgetShare share_;
  const Route* route_ = nullptr;
  std::list<std::weak_ptr<SessionBase>>::iterator place_;
  bool enlisted_ = false;
  bool idle_ = false;  // waiting for a request (or the handshake): stop() may close it
  bool keep_alive_ = true;
  size_t requests_ = 0;
  Clock::time_point deadline_;
  std::vector<char> drain_;
  size_t drained_ = 0;
};

using TlsSession = Session<beast::ssl_stream<beast::tcp_stream>>;
using PlainSession = Session<beast::tcp_stream>;

}  // namespace

void Server::Impl::do_accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](const error_code& ec, tcp::socket socket) { on_accept(ec, std::move(socket)); });
}

void Server::Impl::on_accept(const error_code& ec, tcp::socket socket) {
  if (stopping || !acceptor.is_open()) return;
  if (ec) {
    if (ec == asio::error::operation_aborted) return;
    // Out of descriptors (or memory): try again shortly rather than spin.
    count_closed("accept-failed");
    accept_retry.expires_after(std::chrono::milliseconds(50));
    accept_retry.async_wait([this](const error_code& wec) {
      if (!wec) do_accept();
    });
    return;
  }
  {
    std::lock_guard lock(mu);
    ++accepted;
  }
  error_code peer_error;
  const asio::ip::address peer = socket.remote_endpoint(peer_error).address();
  // At the limit, a connection that waits for its client makes room: of the client address that
  // holds the most connections (the new one counted), the one that has waited longest — in its
  // handshake, idle, or sending a request. Slow or idle clients cannot keep a new one out, and a
  // client that opens connections faster than they are served (a flood from a few addresses)
  // evicts its own, not the API server's. Only when every connection is being answered is the new
  // one closed.
  if (open_now() >= options.limits.max_connections) {
    std::shared_ptr<SessionBase> victim;
    {
      std::lock_guard lock(mu);
      std::vector<std::shared_ptr<SessionBase>> live;
      live.reserve(sessions.size());
      std::map<asio::ip::address, size_t> held;
      ++held[peer];
      for (auto& w : sessions)
        if (auto p = w.lock()) {
          ++held[p->peer()];
          live.push_back(std::move(p));
        }
      auto most = std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
      for (bool anyone : {false, true}) {
        int64_t oldest = INT64_MAX;
        for (auto& p : live) {
          const int64_t since = p->waiting_since();
          if (since != 0 && since < oldest && (anyone || p->peer() == most->first)) {
            oldest = since;
            victim = p;
          }
        }
        if (victim) break;
      }
    }
    if (!victim) {
      count_closed("too-many-connections");
      error_code ignored;
      socket.close(ignored);
      do_accept();
      return;
    }
    count_closed("evicted");
    victim->evict();
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  try {
    if (ssl) std::make_shared<TlsSession>(*this, peer, std::move(socket), *ssl)->start();
    else std::make_shared<PlainSession>(*this, peer, std::move(socket))->start();
  } catch (...) {  // out of memory for one connection: it is dropped, the server goes on
    count_closed("accept-failed");
  }
  do_accept();
}

Server::Server(Options options, std::vector<Route> routes) : impl_(std::make_unique<Impl>(std::move(options), std::move(routes))) {}

Server::~Server() {
  try {
    if (!impl_->threads.empty()) stop(std::chrono::milliseconds(0));
  } catch (...) {  // NOLINT(bugprone-empty-catch): a thread that cannot be joined; the process is ending
  }
}

int Server::listen(std::string& error) {
  Impl& s = *impl_;
  try {
    if (s.options.tls) {
      s.ssl.emplace(asio::ssl::context::tls_server);
      if (!s.options.tls(*s.ssl->native_handle(), error)) return -1;
    }
    error_code ec;
    auto address = asio::ip::make_address(s.options.host, ec);
    if (ec) {
      error = "not an IP address: " + s.options.host;
      return -1;
    }
    tcp::endpoint ep(address, static_cast<unsigned short>(s.options.port));
    s.acceptor.open(ep.protocol(), ec);
    if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor.bind(ep, ec);
    // A burst of connections (the API server filling its pool) must not overflow the backlog; the
    // kernel caps it at net.core.somaxconn.
    if (!ec) s.acceptor.listen(4096, ec);
    if (ec) {
      error = ec.message();
      return -1;
    }
    return s.acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    error = e.what();
    return -1;
  }
}

void Server::start() {
  Impl& s = *impl_;
  s.work.emplace(s.ioc.get_executor());
  asio::post(s.ioc, [&s] { s.do_accept(); });
  const unsigned n = std::max(1u, s.options.io_threads);
  for (unsigned i = 0; i < n; ++i)
    s.threads.emplace_back([&s] {
      for (;;) {
        try {
          s.ioc.run();
          return;
        } catch (...) {  // NOLINT(bugprone-empty-catch): a handler threw (out of memory): serve on
        }
      }
    });
}

void Server::draining() { impl_->draining = true; }

bool Server::stop(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  s.draining = true;
  s.stopping = true;
  asio::post(s.ioc, [&s] {
    error_code ec;
    s.acceptor.close(ec);
    s.accept_retry.cancel();
  });
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    std::lock_guard lock(s.mu);
    for (auto& w : s.sessions)
      if (auto p = w.lock()) live.push_back(std::move(p));
  }
  for (auto& p : live) p->close_if_idle();
  live.clear();
  bool all = false;
  {
    std::unique_lock lock(s.mu);
    all = s.cv.wait_for(lock, grace, [&] { return s.open == 0; });
  }
  s.work.reset();
  if (!all) s.ioc.stop();
  for (auto& t : s.threads)
    if (t.joinable()) t.join();
  s.threads.clear();
  return all;
}

Counters Server::counters() const {
  const Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  Counters c;
  for (const auto& [k, v] : s.refused) c.refused[k] = v;
  for (const auto& [k, v] : s.closed) c.closed[k] = v;
  c.accepted = s.accepted;
  c.open = s.open;
  return c;
}

}  // namespace gpuguard::webhook::http
