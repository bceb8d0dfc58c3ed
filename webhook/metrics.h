#pragma once
// The webhook's Prometheus metrics (text exposition format 0.0.4).

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <span>
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

  // A finding counter's labels.
  struct FindingLabels {
    std::string_view rule, severity, mode;
    bool operator==(const FindingLabels&) const = default;
  };
  // One admission request: its duration in the histogram, its request counter and one count per
  // finding, under one lock (with many connections served on few cores, a thread preempted while
  // it holds the lock stalls every other request: one short hold a request, not one per finding).
  void admission(std::string_view webhook, std::string_view operation, std::string_view kind, std::string_view decision,
                 double seconds, std::span<const FindingLabels> findings);
  void rule_error(std::string_view rule);
  // An admission whose findings (or fixes) of `rule` a gpuguard.io/ignore annotation exempted, as
  // webhook.exemptions allows: once per rule per admission request (Outcome::exempted_rules()).
  void exempted(std::string_view rule);
  void invalid_request(std::string_view reason);
  void set_state(size_t objects, double last_load_unix);
  void state_reload(bool ok);
  // Watch mode: per kind, when it was last in sync with the API server (list, event or bookmark),
  // whether its watch is healthy and whether the API serves it.
  void set_sync(std::string_view kind, double last_sync_unix, bool healthy, bool installed);
  // Watch mode: per kind, the cache's running totals (kube::ResourceStatus, set at each scrape):
  // list and watch failures, each followed by a backoff, and how its watches ended, by reason.
  void set_watch_counts(std::string_view kind, uint64_t failures, const std::map<std::string, uint64_t, std::less<>>& restarts);
  void set_state_objects(size_t objects);
  void set_certificate_expiry(double unix_seconds);
  void certificate_reload(bool ok);
  // A load of the config file (at start, on a change, on SIGHUP), and whether the config in force
  // is the one on disk (false: the file changed into one that does not load; the last good one
  // stays in force).
  void config_reload(bool ok, double unix_now);
  void set_config_matches_disk(bool matches);
  // The HTTP transport's totals (webhook/http.h), set at each scrape: answers it gave before any
  // handler ran and connections it closed, by reason; connections accepted and open; the memory
  // budget's use.
  void set_transport(const std::map<std::string, uint64_t>& refused, const std::map<std::string, uint64_t>& closed,
                     uint64_t accepted, uint64_t open, size_t budget_used, size_t budget_total);

  [[nodiscard]] std::string render() const;
  // For tests: a counter's value by its full series text, e.g.
  // `gpuguard_certificate_reloads_total{result="ok"}`.
  [[nodiscard]] double value(const std::string& series) const;

  // The request counter's distinct kinds; any further kind is counted as "other".
  static constexpr size_t kMaxKinds = 64;

 private:
  struct Histogram {
    std::array<uint64_t, kBuckets.size()> buckets{};
    uint64_t count = 0;
    double sum = 0;
  };
  // Counters by their labels: a series' text is made once per distinct label set, not for every
  // request and finding (the value lives in counters_, whose nodes stay where they are). A key
  // owns its strings; a lookup uses views of the caller's.
  template <size_t N>
  struct Labels {
    std::array<std::string_view, N> values;
    bool operator==(const Labels&) const = default;
  };
  template <size_t N>
  struct OwnedLabels {
    std::array<std::string, N> values;
  };
  template <size_t N>
  static Labels<N> view(const OwnedLabels<N>& k) {
    Labels<N> l;
    for (size_t i = 0; i < N; ++i) l.values[i] = k.values[i];
    return l;
  }
  template <size_t N>
  static Labels<N> view(const Labels<N>& k) { return k; }
  struct LabelsHash {
    using is_transparent = void;
    template <class K>
    size_t operator()(const K& k) const {
      size_t v = 0;
      for (std::string_view s : view(k).values) v = v * 31 + std::hash<std::string_view>{}(s);
      return v;
    }
  };
  struct LabelsEq {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return view(a) == view(b); }
  };
  template <size_t N>
  using CounterIndex = std::unordered_map<OwnedLabels<N>, double*, LabelsHash, LabelsEq>;
  // The counter of `labels` in `index`, made (with its series `name{label_names...}`) when new.
  template <size_t N>
  double& counter_locked(CounterIndex<N>& index, std::string_view name, const std::array<std::string_view, N>& label_names,
                         const Labels<N>& labels);
  void duration_locked(std::string_view webhook, double seconds);

  mutable std::mutex mu_;
  std::map<std::string, double> counters_;  // full series text → value
  CounterIndex<3> findings_;                // rule, severity, mode
  CounterIndex<4> requests_;                // webhook, operation, kind, decision
  std::set<std::string, std::less<>> kinds_;  // the request counter's kinds (kMaxKinds)
  std::map<std::string, double> gauges_;
  std::map<std::string, Histogram, std::less<>> durations_;  // webhook label → histogram
};

// Escapes a label value for the exposition format.
[[nodiscard]] std::string label_value(std::string_view v);

}  // namespace gpuguard::webhook
