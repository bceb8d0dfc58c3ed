#include "webhook/metrics.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <vector>

namespace gpuguard::webhook {

namespace {

// Appends a label value escaped for the exposition format; most values need no escape and are
// appended whole (a series is made for every finding of every admission request).
void append_label_value(std::string& out, std::string_view v) {
  // (string_view::find_first_of calls memchr for every byte of `v`)
  if (std::none_of(v.begin(), v.end(), [](char c) { return c == '\\' || c == '"' || c == '\n'; })) {
    out += v;
    return;
  }
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
}

}  // namespace

std::string label_value(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  append_label_value(out, v);
  return out;
}

namespace {

using Label = std::pair<std::string_view, std::string_view>;

// A series' text: `name{key="value",...}`, the values escaped.
std::string series(std::string_view name, std::span<const Label> labels) {
  size_t size = name.size() + 2;
  for (const auto& [k, v] : labels) size += k.size() + v.size() + 4;
  std::string s;
  s.reserve(size);  // exact unless a value needs escapes
  s += name;
  s += '{';
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) s += ',';
    first = false;
    s += k;
    s += "=\"";
    append_label_value(s, v);
    s += '"';
  }
  s += '}';
  return s;
}
std::string series(std::string_view name, std::initializer_list<Label> labels) {
  return series(name, std::span<const Label>(labels.begin(), labels.size()));
}

std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace

template <size_t N>
double& Metrics::counter_locked(CounterIndex<N>& index, std::string_view name, const std::array<std::string_view, N>& label_names,
                                const Labels<N>& labels) {
  if (auto it = index.find(labels); it != index.end()) return *it->second;
  std::array<Label, N> named;
  for (size_t i = 0; i < N; ++i) named[i] = {label_names[i], labels.values[i]};
  std::string s = series(name, named);
  double& value = counters_[std::move(s)];
  OwnedLabels<N> key;
  for (size_t i = 0; i < N; ++i) key.values[i] = std::string(labels.values[i]);
  index.emplace(std::move(key), &value);
  return value;
}

namespace {
constexpr std::array<std::string_view, 3> kFindingLabels = {"rule", "severity", "mode"};
constexpr std::array<std::string_view, 4> kRequestLabels = {"webhook", "operation", "kind", "decision"};
}  // namespace

namespace {
// A kind as the API server names one: at most 63 characters, whose lower case is a DNS-1035
// label (apiextensions' rule for a CRD's kind): a letter first, letters, digits and '-', no '-'
// last.
bool kind_shaped(std::string_view kind) {
  if (kind.empty() || kind.size() > 63 || std::isalpha(static_cast<unsigned char>(kind.front())) == 0 || kind.back() == '-')
    return false;
  return std::all_of(kind.begin(), kind.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-'; });
}
}  // namespace

void Metrics::duration_locked(std::string_view webhook, double seconds) {
  auto it = durations_.find(webhook);
  if (it == durations_.end()) it = durations_.emplace(std::string(webhook), Histogram{}).first;
  Histogram& h = it->second;
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) ++h.buckets[i];
  ++h.count;
  h.sum += seconds;
}

void Metrics::admission(std::string_view webhook, std::string_view operation, std::string_view kind, std::string_view decision,
                        double seconds, std::span<const FindingLabels> findings) {
  std::lock_guard lock(mu_);
  duration_locked(webhook, seconds);
  // The kind is the client's text: a Kubernetes kind's shape, and at most kMaxKinds of them, or
  // "other" (a client sending made-up kinds would otherwise add a series a request).
  const bool known = kinds_.contains(kind);
  if (!known && (kinds_.size() >= kMaxKinds || !kind_shaped(kind))) kind = "other";
  else if (!known) kinds_.emplace(kind);
  counter_locked(requests_, "gpuguard_admission_requests_total", kRequestLabels, Labels<4>{{webhook, operation, kind, decision}}) += 1;
  for (const FindingLabels& f : findings)
    counter_locked(findings_, "gpuguard_rule_findings_total", kFindingLabels, Labels<3>{{f.rule, f.severity, f.mode}}) += 1;
}

void Metrics::rule_error(std::string_view rule) {
  auto s = series("gpuguard_rule_errors_total", {{"rule", rule}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
}

void Metrics::exempted(std::string_view rule) {
  auto s = series("gpuguard_admission_exemptions_total", {{"rule", rule}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
}

void Metrics::invalid_request(std::string_view reason) {
  auto s = series("gpuguard_admission_invalid_requests_total", {{"reason", reason}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
}

void Metrics::set_state(size_t objects, double last_load_unix) {
  std::lock_guard lock(mu_);
  gauges_["gpuguard_state_objects"] = static_cast<double>(objects);
  gauges_["gpuguard_state_last_load_timestamp_seconds"] = last_load_unix;
}

void Metrics::set_sync(std::string_view kind, double last_sync_unix, bool healthy, bool installed) {
  auto sync = series("gpuguard_state_last_sync_timestamp_seconds", {{"kind", kind}});
  auto ok = series("gpuguard_state_watch_healthy", {{"kind", kind}});
  std::lock_guard lock(mu_);
  if (installed) gauges_[sync] = last_sync_unix;
  else gauges_.erase(sync);
  gauges_[ok] = healthy ? 1 : 0;
}

void Metrics::set_watch_counts(std::string_view kind, uint64_t failures, const std::map<std::string, uint64_t, std::less<>>& restarts) {
  auto f = series("gpuguard_watch_failures_total", {{"kind", kind}});
  std::vector<std::pair<std::string, double>> ends;
  ends.reserve(restarts.size());
  for (const auto& [reason, n] : restarts)
    ends.emplace_back(series("gpuguard_watch_restarts_total", {{"kind", kind}, {"reason", reason}}), static_cast<double>(n));
  std::lock_guard lock(mu_);
  counters_[f] = static_cast<double>(failures);
  for (auto& [s, v] : ends) counters_[std::move(s)] = v;
}

void Metrics::set_state_objects(size_t objects) {
  std::lock_guard lock(mu_);
  gauges_["gpuguard_state_objects"] = static_cast<double>(objects);
}

void Metrics::state_reload(bool ok) {
  auto s = series("gpuguard_state_reloads_total", {{"result", ok ? "ok" : "error"}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
}

void Metrics::set_certificate_expiry(double unix_seconds) {
  std::lock_guard lock(mu_);
  gauges_["gpuguard_certificate_expiry_timestamp_seconds"] = unix_seconds;
}

void Metrics::certificate_reload(bool ok) {
  auto s = series("gpuguard_certificate_reloads_total", {{"result", ok ? "ok" : "error"}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
}

void Metrics::config_reload(bool ok, double unix_now) {
  auto s = series("gpuguard_config_reloads_total", {{"result", ok ? "ok" : "error"}});
  std::lock_guard lock(mu_);
  counters_[s] += 1;
  if (ok) gauges_["gpuguard_config_last_reload_success_timestamp_seconds"] = unix_now;
}

void Metrics::set_config_matches_disk(bool matches) {
  std::lock_guard lock(mu_);
  gauges_["gpuguard_config_matches_disk"] = matches ? 1 : 0;
}

void Metrics::set_transport(const std::map<std::string, uint64_t>& refused, const std::map<std::string, uint64_t>& closed,
                            uint64_t accepted, uint64_t open, size_t budget_used, size_t budget_total) {
  std::vector<std::pair<std::string, double>> values;
  values.reserve(refused.size() + closed.size());
  for (const auto& [reason, n] : refused) values.emplace_back(series("gpuguard_http_refused_total", {{"reason", reason}}), static_cast<double>(n));
  for (const auto& [reason, n] : closed)
    values.emplace_back(series("gpuguard_http_connections_closed_total", {{"reason", reason}}), static_cast<double>(n));
  std::lock_guard lock(mu_);
  for (auto& [s, v] : values) counters_[std::move(s)] = v;
  counters_["gpuguard_http_connections_accepted_total{}"] = static_cast<double>(accepted);
  gauges_["gpuguard_http_connections_open"] = static_cast<double>(open);
  gauges_["gpuguard_memory_budget_used_bytes"] = static_cast<double>(budget_used);
  gauges_["gpuguard_memory_budget_bytes"] = static_cast<double>(budget_total);
}

double Metrics::value(const std::string& s) const {
  std::lock_guard lock(mu_);
  if (auto it = counters_.find(s); it != counters_.end()) return it->second;
  if (auto it = gauges_.find(s); it != gauges_.end()) return it->second;
  return 0;
}

std::string Metrics::render() const {
  struct Family {
    const char* name;
    const char* type;
    const char* help;
  };
  static constexpr Family kCounters[] = {
      {"gpuguard_admission_requests_total", "counter", "Admission requests answered, by webhook, operation, kind and decision."},
      {"gpuguard_admission_invalid_requests_total", "counter",
       "Requests to the TLS port refused before any rule ran (400, 411, 413, 415, 431, 503), by reason."},
      {"gpuguard_rule_findings_total", "counter", "Findings reported in admission, by rule, severity and enforcement mode."},
      {"gpuguard_rule_errors_total", "counter", "Internal failures of a rule (handled by failureMode)."},
      {"gpuguard_admission_exemptions_total", "counter",
       "Admission requests in which a gpuguard.io/ignore annotation exempted a rule's findings (webhook.exemptions), by rule."},
      {"gpuguard_state_reloads_total", "counter", "Loads of the --state files, by result."},
      {"gpuguard_watch_failures_total", "counter",
       "Watch mode: per kind, lists and watches that failed or whose watch the API server ended within 1 s; each backs off."},
      {"gpuguard_watch_restarts_total", "counter",
       "Watch mode: watches ended, by kind and reason (closed: by the server after 1 s; short: within 1 s; expired: 410; error)."},
      {"gpuguard_certificate_reloads_total", "counter", "Loads of the serving certificate, by result."},
      {"gpuguard_config_reloads_total", "counter", "Loads of the config file (at start, on a change, on SIGHUP), by result."},
      {"gpuguard_http_refused_total", "counter",
       "Requests the HTTP transport answered itself before any handler (431, 413, 411, 415, 400, 503), by reason."},
      {"gpuguard_http_connections_closed_total", "counter",
       "Connections the server closed: timeouts (handshake, request, idle, write), failed handshakes, over the connection limit."},
      {"gpuguard_http_connections_accepted_total", "counter", "Connections accepted."},
  };
  static constexpr Family kGauges[] = {
      {"gpuguard_state_objects", "gauge", "Objects in the cluster state the rules read."},
      {"gpuguard_state_last_load_timestamp_seconds", "gauge", "When the cluster state was last loaded (Unix time)."},
      {"gpuguard_certificate_expiry_timestamp_seconds", "gauge", "notAfter of the serving certificate (Unix time)."},
      {"gpuguard_state_last_sync_timestamp_seconds", "gauge",
       "Watch mode: when each kind was last in sync with the API server (list, event or bookmark; Unix time)."},
      {"gpuguard_state_watch_healthy", "gauge", "Watch mode: 1 while a kind is listed and its watch runs (or it is not installed), else 0."},
      {"gpuguard_config_last_reload_success_timestamp_seconds", "gauge", "When the config file last loaded (Unix time)."},
      {"gpuguard_config_matches_disk", "gauge",
       "1 when the config in force is the file on disk; 0 when the file changed into one that does not load (the last good one stays)."},
      {"gpuguard_http_connections_open", "gauge", "Connections open now."},
      {"gpuguard_memory_budget_used_bytes", "gauge", "Memory the requests in progress hold (bodies, documents), counted against --memory-budget."},
      {"gpuguard_memory_budget_bytes", "gauge", "The memory budget (--memory-budget)."},
  };
  std::lock_guard lock(mu_);
  std::ostringstream o;
  for (const auto& f : kCounters) {
    o << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name << " " << f.type << "\n";
    std::string prefix = std::string(f.name) + "{";
    for (auto it = counters_.lower_bound(prefix); it != counters_.end() && it->first.rfind(prefix, 0) == 0; ++it)
      o << it->first << " " << number(it->second) << "\n";
  }
  for (const auto& f : kGauges) {
    o << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name << " " << f.type << "\n";
    if (auto it = gauges_.find(f.name); it != gauges_.end()) o << f.name << " " << number(it->second) << "\n";
    std::string prefix = std::string(f.name) + "{";
    for (auto it = gauges_.lower_bound(prefix); it != gauges_.end() && it->first.rfind(prefix, 0) == 0; ++it)
      o << it->first << " " << number(it->second) << "\n";
  }
  o << "# HELP gpuguard_admission_duration_seconds Time to evaluate and answer one AdmissionReview, inside the server.\n"
    << "# TYPE gpuguard_admission_duration_seconds histogram\n";
  for (const auto& [webhook, h] : durations_) {
    std::string lv = label_value(webhook);
    for (size_t i = 0; i < kBuckets.size(); ++i)
      o << "gpuguard_admission_duration_seconds_bucket{webhook=\"" << lv << "\",le=\"" << number(kBuckets[i]) << "\"} "
        << h.buckets[i] << "\n";
    o << "gpuguard_admission_duration_seconds_bucket{webhook=\"" << lv << "\",le=\"+Inf\"} " << h.count << "\n"
      << "gpuguard_admission_duration_seconds_sum{webhook=\"" << lv << "\"} " << number(h.sum) << "\n"
      << "gpuguard_admission_duration_seconds_count{webhook=\"" << lv << "\"} " << h.count << "\n";
  }
  return o.str();
}

}  // namespace gpuguard::webhook
