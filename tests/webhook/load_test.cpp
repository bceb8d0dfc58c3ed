// The webhook under load (issue 9): a flood at twice its measured capacity, certificate rotation
// and SIGTERM while clients keep it busy. Clients are in-process cpp-httplib TLS clients that check
// every answer: HTTP 200, the uid they sent, the decision the pod deserves.

#include <doctest/doctest.h>
#include <httplib.h>

#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include "tests/webhook/fixture.h"

namespace fs = std::filesystem;
using namespace gpuguard;
using namespace gpuguard::test::e2e;
using engine::json;
using Clock = std::chrono::steady_clock;

namespace {

// Pins every thread of a process (threads it starts later inherit it) to one CPU.
void pin_process(int pid, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  for (const auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task"))
    (void)sched_setaffinity(std::stoi(e.path().filename().string()), sizeof set, &set);
}

// Pins the calling thread to the CPUs other than `cpu` (when there are others).
void avoid_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < n; ++c)
    if (c != cpu) CPU_SET(c, &set);
  if (CPU_COUNT(&set) > 0) (void)sched_setaffinity(0, sizeof set, &set);
}

// Resident memory of a process, in KiB (VmRSS of /proc/PID/status).
long rss_kib(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

// An AdmissionReview for a pod that is allowed or denied, split where its uid goes.
std::pair<std::string, std::string> split_template(bool allowed) {
  json review = review_of(gpu_pod(allowed));
  review["request"]["uid"] = "@UID@";
  const std::string text = review.dump();
  const size_t at = text.find("@UID@");
  return {text.substr(0, at), text.substr(at + 5)};
}

struct Tally {
  std::atomic<long> sent{0}, correct{0}, wrong{0}, failed{0};
  std::string first_wrong;  // written once, by the thread that saw it first
  std::atomic<bool> wrong_noted{false};
};

// One client: a connection (kept alive or new per request) posting AdmissionReviews for pods
// that must be denied (odd requests) or allowed (even ones), each with its own uid.
class Client {
 public:
  Client(int port, const std::string& ca, bool keep_alive, int id)
      : cli_("localhost", port), keep_alive_(keep_alive), id_(id) {
    cli_.set_ca_cert_path(ca.c_str());
    cli_.enable_server_certificate_verification(true);
    cli_.set_keep_alive(keep_alive);
    cli_.set_tcp_nodelay(true);  // as Go's clients (the API server's) do
    cli_.set_connection_timeout(5, 0);
    cli_.set_read_timeout(10, 0);
    cli_.set_write_timeout(10, 0);
  }

  // One request; the answer is checked and counted. Cheap on the client's side (bodies made
  // from two templates, answers checked by search), so the clients can outrun the server.
  void once(Tally& t) {
    static const std::pair<std::string, std::string> kDeny = split_template(false), kAllow = split_template(true);
    const long n = seq_++;
    const bool deny = n % 2 == 1;
    const auto& [head, tail] = deny ? kDeny : kAllow;
    const std::string uid = "load-" + std::to_string(id_) + "-" + std::to_string(n);
    ++t.sent;
    auto res = cli_.Post("/validate", head + uid + tail, "application/json");
    if (!res) {
      ++t.failed;
      return;
    }
    const bool ok = res->status == 200 && res->body.find("\"uid\":\"" + uid + "\"") != std::string::npos &&
                    res->body.find(deny ? "\"allowed\":false" : "\"allowed\":true") != std::string::npos;
    if (ok) {
      ++t.correct;
    } else {
      ++t.wrong;
      if (!t.wrong_noted.exchange(true)) t.first_wrong = std::to_string(res->status) + " " + res->body.substr(0, 300);
    }
  }
  [[nodiscard]] bool keep_alive() const { return keep_alive_; }

 private:
  httplib::SSLClient cli_;
  bool keep_alive_;
  int id_;
  long seq_ = 0;
};

// Requests per second `threads` keep-alive clients complete in a closed loop for `ms`.
double capacity(int port, const std::string& ca, int threads, int ms) {
  Tally t;
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i)
    pool.emplace_back([&, i] {
      avoid_cpu(0);
      Client c(port, ca, true, 1000 + i);
      while (!stop) c.once(t);
    });
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  stop = true;
  for (auto& th : pool) th.join();
  REQUIRE_MESSAGE(t.wrong == 0, t.first_wrong);
  return static_cast<double>(t.correct) * 1000.0 / ms;
}

// Open-loop load: `threads` clients (a quarter on new connections per request, the rest kept
// alive) sending on a schedule that adds up to `rate` requests per second, until `stop`.
class Load {
 public:
  Load(int port, std::string ca, int threads, double rate) {
    const auto interval = std::chrono::duration<double>(threads / std::max(rate, 1.0));
    for (int i = 0; i < threads; ++i)
      pool_.emplace_back([this, port, ca, i, interval] {
        avoid_cpu(0);
        Client c(port, ca, i % 4 != 0, i);
        auto next = Clock::now();
        while (!stop_) {
          c.once(tally);
          next += std::chrono::duration_cast<Clock::duration>(interval);
          if (next > Clock::now()) std::this_thread::sleep_until(next);
        }
      });
  }
  ~Load() { finish(); }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;

  void finish() {
    stop_ = true;
    for (auto& th : pool_)
      if (th.joinable()) th.join();
  }
  // Waits (bounded) until `n` more requests were answered correctly.
  void wait_answers(long n) const {
    const long target = tally.correct + n;
    for (int i = 0; i < 2000 && tally.correct < target; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }

  Tally tally;

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> pool_;
};

}  // namespace

TEST_SUITE("webhook") {

TEST_CASE("a flood at twice the measured capacity for 10 s: no crash, every answer right, memory back to baseline") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  Webhook wh;
  const int pid = wh.proc->pid();
  // The server gets one CPU and the clients the others, so the clients can offer more than the
  // server can take (on one shared CPU they could not outrun it).
  const bool pinned = sysconf(_SC_NPROCESSORS_ONLN) >= 2;
  if (pinned) pin_process(pid, 0);
  // Warm up (arenas, TLS session caches, the pool's first workers), then measure.
  (void)capacity(wh.port, wh.ca(), 4, 500);
  const double cap = capacity(wh.port, wh.ca(), 4, 2000);
  REQUIRE(cap > 0);
  // Baseline: once the memory the warm-up freed went back (the server purges within a second).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  const long baseline = rss_kib(pid);
  REQUIRE(baseline > 0);

  long peak = baseline;
  Load flood(wh.port, wh.ca(), 64, 2 * cap);
  const auto until = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    peak = std::max(peak, rss_kib(pid));
  }
  flood.finish();
  const Tally& t = flood.tally;
  MESSAGE("capacity " << cap << " req/s (4 keep-alive clients); flood scheduled " << 2 * cap << " req/s over 64 clients (a quarter on a new TLS connection per request), sent "
                      << t.sent.load() / 10.0 << " req/s: "
                      << t.correct.load() << " correct, " << t.wrong.load() << " wrong, " << t.failed.load() << " unanswered; RSS baseline "
                      << baseline / 1024 << " MiB, peak " << peak / 1024 << " MiB");
  CHECK_MESSAGE(t.wrong == 0, t.first_wrong);
  CHECK(t.correct > 0);
  // The clients wait for each answer, so once the server is saturated they fall behind their
  // schedule and each keeps a request waiting at the server: demand above what it served, 64
  // requests queued throughout. Under that, it keeps serving at a fair share of its capacity.
  const double served = t.correct.load() / 10.0;
  CHECK_MESSAGE(t.sent.load() < 2 * cap * 10, "the flood never exceeded what the server could take");
  // (Capacity is measured on kept-alive connections; a quarter of the flood's clients pay a TLS
  // handshake per request, so its throughput is lower by design: 49–85 % of capacity here.)
  CHECK_MESSAGE(served > cap / 4, "throughput under overload collapsed: " << served << " of " << cap << " req/s");
  CHECK(wh.proc->wait_exit(0) == -1);  // still running

  // Memory back to baseline once what the flood freed went back (bounded wait): within 8 MiB.
  long after = rss_kib(pid);
  for (int i = 0; i < 100 && after > baseline + 4 * 1024; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    after = rss_kib(pid);
  }
  MESSAGE("RSS after the flood: " << after / 1024 << " MiB");
  if (!test::kSanitized) CHECK(after <= baseline + 8 * 1024);  // ASan's quarantine keeps freed memory on purpose
  // And it still answers right.
  Tally once;
  Client c(wh.port, wh.ca(), false, 9999);
  c.once(once);
  c.once(once);
  CHECK(once.correct == 2);
  wh.proc->signal(SIGTERM);
  CHECK(wh.proc->wait_exit() == 0);
}

TEST_CASE("certificate rotation under load: 16 clients, three rotations, zero failed requests") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  test::TempDir pki;
  make_pki(pki.path(), "server");
  make_pki(pki.path(), "rotated", "server-ca");
  SecretMount mount(pki.path(), pki.path() / "mount");
  mount.publish("server");
  Webhook wh({}, mount.cert(), mount.key());
  const std::string ca = (pki.path() / "server-ca.crt").string();

  Load load(wh.port, ca, 16, 1e9);  // as fast as they can
  load.wait_answers(50);
  for (const char* name : {"rotated", "server", "rotated"}) {
    mount.publish(name);
    wh.proc->signal(SIGHUP);
    REQUIRE(wh.proc->wait_for_log("\"msg\":\"certificate loaded\"", 10000));
    load.wait_answers(50);
  }
  load.finish();
  const Tally& t = load.tally;
  MESSAGE(t.correct.load() << " correct, " << t.wrong.load() << " wrong, " << t.failed.load() << " failed across three rotations");
  CHECK(t.failed == 0);
  CHECK_MESSAGE(t.wrong == 0, t.first_wrong);
  CHECK(t.correct >= 200);
  wh.proc->signal(SIGTERM);
  CHECK(wh.proc->wait_exit() == 0);
}

TEST_CASE("SIGTERM under load: not ready at once, connections told to close, zero failed requests, exit 0") {
  if (!have_tools()) {
    test::skip("tools missing");
    return;
  }
  // The API server stops sending once the endpoint goes (readiness fails); the shutdown delay is
  // that window. Clients here stop when /readyz says 503, as the endpoints controller would.
  Webhook wh({"--shutdown-delay", "2"});
  Load load(wh.port, wh.ca(), 16, 1e9);
  load.wait_answers(100);
  wh.proc->signal(SIGTERM);
  REQUIRE(wh.proc->wait_for_log("shutting down"));
  int ready = 200;
  for (int i = 0; i < 200 && ready == 200; ++i) ready = wh.curl("/readyz").first;
  CHECK(ready == 503);
  load.finish();
  const Tally& t = load.tally;
  MESSAGE(t.correct.load() << " correct, " << t.wrong.load() << " wrong, " << t.failed.load() << " failed");
  CHECK(t.failed == 0);
  CHECK_MESSAGE(t.wrong == 0, t.first_wrong);
  CHECK(wh.proc->wait_exit() == 0);
  CHECK(wh.proc->log().find("\"msg\":\"stopped\"") != std::string::npos);
}

}  // TEST_SUITE
