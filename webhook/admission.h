#pragma once
// AdmissionReview in, AdmissionReview out: the webhook's protocol, independent of HTTP.
//
// admission.k8s.io/v1 (and v1beta1, answered in the version asked). Validation denies on `error`
// findings of rules in enforce mode, returns `warning` findings (and errors in warn mode) as
// Kubernetes warnings, and only logs `info` and audit-mode findings. Mutation applies the fixes
// of the enabled rules and answers a base64 JSON Patch. See facts/webhook.md §1 and §7.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base64.h"
#include "engine/config.h"
#include "engine/inventory.h"
#include "engine/registry.h"
#include "engine/rule.h"

namespace gpuguard::engine {
class Plan;
}

namespace gpuguard::webhook {

enum class Endpoint : uint8_t { validate, mutate };

struct Limits {
  size_t max_body_bytes = 8u << 20;
  uint32_t max_json_depth = 512;
  size_t max_warnings = 30;           // count
  size_t max_warning_chars = 256;     // each (the API server truncates longer ones)
  size_t max_warnings_total = 3500;   // all of ours (the API server drops past 4096 from all sources)
  size_t max_message_chars = 4000;    // the denial message
};

// What happened, for metrics and the log.
struct Outcome {
  std::string uid;
  std::string operation;
  std::string kind;
  std::string namespace_;
  std::string name;
  bool dry_run = false;
  // "allowed", "denied", "warned" (allowed with warnings), "patched", "skipped" (not evaluated),
  // "invalid" (HTTP 400)
  std::string decision;
  std::vector<engine::Finding> findings;  // every finding considered (after onUpdate filtering)
  std::vector<std::pair<std::string, std::string>> rule_errors;  // rule id, what failed
  std::string error;                      // why a request was invalid
};

struct Answer {
  int status = 200;
  std::string body;
};

class Admission {
 public:
  Admission(const engine::Registry& registry, std::shared_ptr<const engine::Config> config, Limits limits = {});

  // Never throws. `state` may be null (no cluster state: cross-object rules stay quiet).
  Answer handle(Endpoint endpoint, std::string_view body, std::string_view content_type,
                const std::shared_ptr<const engine::Inventory>& state, Outcome& outcome) const noexcept;

  [[nodiscard]] const engine::Config& config() const { return *config_; }

 private:
  const engine::Registry& registry_;
  std::shared_ptr<const engine::Config> config_;
  Limits limits_;
  // What depends only on the registry and the config, built once for every request.
  std::shared_ptr<const engine::Plan> plan_;           // every enabled rule (/validate)
  std::shared_ptr<const engine::Plan> mutation_plan_;  // the fixable ones (/mutate); null: none
  // DELETE: per kind some rule reads, the rules that read it (enabled or not: the plan keeps the
  // enabled ones, as the evaluation did).
  std::map<engine::KindRef, std::shared_ptr<const engine::Plan>, engine::KindLess> delete_plans_;
};

// "spec.containers[0].resources.requests[nvidia.com/gpu]" for a JSON pointer.
[[nodiscard]] std::string field_path(std::string_view pointer);

// Base64 (RFC 4648, with padding): the patch of a mutating answer.
using engine::base64_encode;

}  // namespace gpuguard::webhook
