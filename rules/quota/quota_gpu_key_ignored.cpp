// quota-gpu-key-ignored: ResourceQuota keys for GPUs that the quota system never counts.

#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class QuotaGpuKeyIgnored final : public Rule {
 public:
  QuotaGpuKeyIgnored() {
    info_.id = "quota-gpu-key-ignored";
    info_.severity = Severity::warning;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A ResourceQuota limits GPUs with a `limits.<gpu>` or bare `<gpu>` key, which quota ignores";
    info_.rationale =
        "The quota system tracks extended resources only in the form `requests.<name>`: the pod "
        "evaluator records a GPU only as `requests.nvidia.com/gpu` (\"As overcommit is not supported "
        "by extended resources for now, only quota objects in format of \\\"requests.resourceName\\\" "
        "is allowed\"). The API server accepts `limits.nvidia.com/gpu` and a bare `nvidia.com/gpu` "
        "in `spec.hard` without complaint, and then never counts anything against them. A quota that "
        "uses only those keys does not limit GPUs at all: the team can take every GPU in the cluster.\n\n"
        "The seed's own template (9.5) sets `limits.nvidia.com/gpu: 32` next to "
        "`requests.nvidia.com/gpu: 32`; the second line does the work, the first does nothing.";
    info_.remediation =
        "Limit GPUs with `requests.nvidia.com/gpu` (and the same form for MIG and shared resources, "
        "e.g. `requests.nvidia.com/mig-1g.10gb`). Remove the `limits.` and bare keys, or keep them "
        "knowing they are inert.";
    info_.checks = {KindRef{"", "ResourceQuota"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.1 — kubernetes `pkg/quota/v1/evaluator/core/pods.go` "
        "@05e7cb29 matches an extended resource only with the `requests.` prefix, and "
        "`podComputeUsageHelper` records extended resources only as `requests.<name>`; "
        "`ValidateResourceQuotaResourceName` accepts any name containing `/`, so `limits.nvidia.com/gpu` "
        "is accepted and silently ignored. Documentation: "
        "https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-for-extended-resources",
    };
    info_.example_bad = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    limits.nvidia.com/gpu: 32
)";
    info_.example_good = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 32
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("", "ResourceQuota")) return;
    const Node hard = path(obj.root(), {"spec", "hard"});
    if (!hard || !hard.is_object()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    for (const auto [key, value] : hard.items()) {
      std::string resource;
      std::string form;
      if (key.starts_with("limits.") && gpus.matches(key.substr(7))) {
        resource = key.substr(7);
        form = "`" + std::string(key) + "`";
      } else if (gpus.matches(key)) {
        resource = key;
        form = "`" + std::string(key) + "` (without the requests. prefix)";
      } else {
        continue;
      }
      const std::string tracked = "requests." + resource;
      std::string msg = form + " has no effect: the quota system counts " + resource + " only as `" + tracked + "`";
      if (member(hard, tracked))
        msg += ", which this quota already sets; remove this key";
      else
        msg += ", so this quota does not limit " + resource + " at all; use `" + tracked + ": " + brief(value) + "`";
      ctx.report(pointer_join("/spec/hard", key), msg);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_quota_gpu_key_ignored() { return std::make_unique<QuotaGpuKeyIgnored>(); }

}  // namespace gpuguard::rules
