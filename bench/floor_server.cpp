// bench/floor_server: the floor for webhook latency and throughput. A minimal cpp-httplib TLS
// server configured like `gpuguard serve` (TCP_NODELAY, keep-alive, a thread per connection up
// to 64) that parses the AdmissionReview with nlohmann and answers a fixed allow with its uid.
//
//   floor_server CERT KEY PORTFILE     listens on 127.0.0.1 port 0, writes the port to PORTFILE

#include <httplib.h>
#include <netinet/tcp.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: floor_server CERT KEY PORTFILE\n");
    return 2;
  }
  httplib::SSLServer svr(argv[1], argv[2]);
  if (!svr.is_valid()) return 2;
  svr.set_tcp_nodelay(true);
  svr.set_keep_alive_max_count(100000);
  svr.set_keep_alive_timeout(5);
  svr.new_task_queue = [] { return new httplib::ThreadPool(64); };
  auto answer = [](const httplib::Request& req, httplib::Response& res) {
    auto review = nlohmann::json::parse(req.body, nullptr, false);
    std::string uid = review.is_object() && review.contains("request") ? review["request"].value("uid", "") : "";
    nlohmann::json out = {{"apiVersion", "admission.k8s.io/v1"},
                          {"kind", "AdmissionReview"},
                          {"response", {{"uid", uid}, {"allowed", true}}}};
    res.set_content(out.dump(), "application/json");
  };
  svr.Post("/validate", answer);
  svr.Post("/mutate", answer);
  int port = svr.bind_to_any_port("127.0.0.1");
  if (port <= 0) return 2;
  std::ofstream(argv[3]) << port << "\n";
  svr.listen_after_bind();
  return 0;
}
