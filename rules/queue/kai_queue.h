#pragma once
// KAI Scheduler Queues (`scheduling.run.ai/v2`, cluster-scoped), for the queue rules.
//
// NVIDIA/KAI-Scheduler @72de64fc (v0.13.0-rc1+142; these files are the same at the v0.13.0 tag):
// `spec.resources.{gpu,cpu,memory}.{quota, limit, overQuotaWeight}` are float64 with no default
// (pkg/apis/scheduling/v2/resources.go; the CRD deployments/kai-scheduler/crds/
// scheduling.run.ai_queues.yaml gives none; the queue webhook, queue_webhook.go, refuses only a
// missing `resources`). The scheduler copies them as they are: an unset `limit` is 0
// (proportion.go createQueueResourceAttrs → SetQuotaResources MaxAllowed), and isOverLimit
// (plugins/proportion/capacity_policy/max_allowed_check.go) refuses a job whose request of a
// resource is above MaxAllowed − allocated unless MaxAllowed is −1, for the job's queue and each
// ancestor. So a GPU limit left unset lets the queue (and its children) take no GPU at all: KAI's
// docs/queues/README.md says "0 or unset → No additional resources allowed (default)" while its
// example says "default value is -1"; the code decides. An unset `quota` is 0 (no guarantee); −1
// is unlimited for both.

#include <optional>
#include <string>

#include "engine/node.h"
#include "engine/object.h"
#include "rules/schedulers.h"

namespace gpuguard::rules::queue {

inline constexpr double kKaiUnlimited = -1;

struct KaiGpu {
  bool resources = false;        // spec.resources is a mapping
  bool gpu = false;              // spec.resources.gpu is a mapping
  std::optional<double> quota;   // written as a number (nullopt: unset, which KAI reads as 0)
  std::optional<double> limit;   // likewise
  bool odd = false;              // quota or limit written but not a number (the CRD refuses it)
  std::string pointer;           // the deepest of /spec/resources/gpu, /spec/resources, /spec that exists
};

[[nodiscard]] inline KaiGpu kai_gpu(const engine::Object& q) {
  KaiGpu out;
  const engine::Node spec = engine::member(q.root(), "spec");
  const engine::Node resources = engine::member(spec, "resources");
  const engine::Node gpu = engine::member(resources, "gpu");
  out.resources = resources.is_object();
  out.gpu = gpu.is_object();
  out.pointer = out.gpu ? "/spec/resources/gpu" : out.resources ? "/spec/resources" : spec ? "/spec" : "";
  auto number = [&](std::string_view key) -> std::optional<double> {
    const engine::Node n = engine::member(gpu, key);
    if (n.is_null()) return std::nullopt;
    if (!n.is_number()) {
      out.odd = true;
      return std::nullopt;
    }
    return n.number();
  };
  out.quota = number("quota");
  out.limit = number("limit");
  return out;
}

// "4", "0.5", "-1".
[[nodiscard]] inline std::string kai_amount(double v) {
  std::string s = std::to_string(v);
  if (s.find('.') != std::string::npos) {
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
  }
  return s;
}

}  // namespace gpuguard::rules::queue
