#pragma once
// The webhook's Prometheus metrics (text exposition format 0.0.4).

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace gpuguard::webhook {

class Metrics {
 public:
  // Upper bounds of the duration histogram, in seconds (from 25 µs to 10 s).
  static constexpr std::array<double, 17> kBuckets = {0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001,
                                                      0.0025,   0.005,   0.01,   0.025,   0.05,   0.1,
                                                      0.25,     0.5,     1.0,    2.5,     10.0};

  void request(std::string_view webhook, std::string_view operation, std::string_view kind, std::string_view decision);
  void duration(std::string_view webhook, double seconds);
  void finding(std::string_view rule, std::string_view severity, std::string_view mode);
  void rule_error(std::string_view rule);
  void invalid_request(std::string_view reason);
  void set_state(size_t objects, double last_load_unix);
  void state_reload(bool ok);
  // Watch mode: per kind, when it was last in sync with the API server (list, event or bookmark),
  // whether its watch is healthy and whether the API serves it.
  void set_sync(std::string_view kind, double last_sync_unix, bool healthy, bool installed);
  void set_state_objects(size_t objects);
  void set_certificate_expiry(double unix_seconds);
  void certificate_reload(bool ok);

  [[nodiscard]] std::string render() const;
  // For tests: a counter's value by its full series text, e.g.
  // `gpuguard_certificate_reloads_total{result="ok"}`.
  [[nodiscard]] double value(const std::string& series) const;

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  // A finding counter by its labels: the series text is made once per rule, severity and mode,
  // not for each of the findings of every request (the value lives in counters_, whose nodes
  // stay where they are).
  struct FindingLabels {
    std::string_view rule, severity, mode;
    bool operator==(const FindingLabels&) const = default;
  };
  struct FindingKey {
    std::string rule, severity, mode;
  };
  static FindingLabels labels(const FindingKey& k) { return {k.rule, k.severity, k.mode}; }
  static FindingLabels labels(const FindingLabels& k) { return k; }
  struct FindingHash {
    using is_transparent = void;
    template <class K>
    size_t operator()(const K& k) const {
      const FindingLabels l = labels(k);
      std::hash<std::string_view> h;
      return (h(l.rule) * 31 + h(l.severity)) * 31 + h(l.mode);
    }
  };
  struct FindingEq {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return labels(a) == labels(b); }
  };

  mutable std::mutex mu_;
  std::map<std::string, double> counters_;  // full series text → value
  std::unordered_map<FindingKey, double*, FindingHash, FindingEq> findings_;
  std::map<std::string, double> gauges_;
  std::map<std::string, Histogram> durations_;  // webhook label → histogram
};

// Escapes a label value for the exposition format.
[[nodiscard]] std::string label_value(std::string_view v);

}  // namespace gpuguard::webhook
