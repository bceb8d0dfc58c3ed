#pragma once
// AdmissionReview in, AdmissionReview out: the webhook's protocol, independent of HTTP.
//
// admission.k8s.io/v1 (and v1beta1, answered in the version asked). Validation denies on `error`
// findings of rules in enforce mode, returns `warning` findings (and errors in warn mode) as
// Kubernetes warnings, and only logs `info` and audit-mode findings. Mutation applies the fixes
// of the enabled rules in enforce mode (and `fix` not off) and answers a base64 JSON Patch. An
// object's gpuguard.io/ignore annotation exempts only as webhook.exemptions allows for the
// request's user. See facts/webhook.md §1 and §7.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base64.h"
#include "engine/config.h"
#include "engine/evaluate.h"
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
  // request.userInfo: who sent the request (empty when the review names nobody).
  std::string username;
  std::vector<std::string> groups;
  // Findings (/validate) and fixes (/mutate) an ignore annotation exempted, as webhook.exemptions
  // allows: each is left out of the answer. The server logs every admission that has some (uid,
  // user, rules, reasons) and counts it per rule (exempted_rules(), Metrics::exempted).
  std::vector<engine::Exempted> exempted;
  // The distinct rules of `exempted`, sorted.
  [[nodiscard]] std::vector<std::string> exempted_rules() const;
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

// A finding as a warning, or as one error of a denial: "[rule-id] field.path: message", and the
// note of an ignore annotation that was not honoured, in at most `max` bytes (at least the rule id
// and 64 more). The rule id is always whole and first; a long path is cut; a message that does not
// fit is cut at a sentence or clause boundary where it can (else a word), and the text ends with
// "more: gpuguard explain <rule-id>". Cuts fall between UTF-8 characters.
[[nodiscard]] std::string admission_text(const engine::Finding& f, size_t max);

// The denial's message: "gpuguard: N errors: <error>; <error>..." in at most `max` bytes: the
// errors that fit, whole, then how many more there are.
[[nodiscard]] std::string denial_message(const std::vector<std::string>& errors, size_t max);

// Base64 (RFC 4648, with padding): the patch of a mutating answer.
using engine::base64_encode;

}  // namespace gpuguard::webhook
