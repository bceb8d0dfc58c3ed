// quota-gpu-not-integer: a ResourceQuota GPU amount that is not a whole number.

#include "engine/dra.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// The whole part of a non-negative quantity ("1.5" → "1"), and the next whole number ("2").
std::pair<std::string, std::string> whole_parts(const Quantity& q) {
  std::string s = q.to_string();
  auto dot = s.find('.');
  std::string whole = dot == std::string::npos ? s : s.substr(0, dot);
  // Add one to the decimal digits (no overflow: quantities are capped far below any digit limit).
  std::string next = whole;
  int i = static_cast<int>(next.size()) - 1;
  while (i >= 0 && next[static_cast<size_t>(i)] == '9') next[static_cast<size_t>(i--)] = '0';
  if (i < 0) next.insert(next.begin(), '1');
  else ++next[static_cast<size_t>(i)];
  return {whole, next};
}

class QuotaGpuNotInteger final : public Rule {
 public:
  QuotaGpuNotInteger() {
    info_.id = "quota-gpu-not-integer";
    info_.severity = Severity::error;
    info_.category = "quota";
    info_.seed = "9.5";
    info_.summary = "A ResourceQuota gives a GPU amount that is not a whole number";
    info_.rationale =
        "GPUs are counted whole: a container asks for `1`, `2` or `8` GPUs, never `1.5` (pod validation "
        "refuses fractions with \"must be an integer\"). The quota keys are checked differently:\n\n"
        "- `requests.nvidia.com/gpu` — the only form the quota system counts — is **not** integer-checked "
        "by the API server (`IsIntegerResourceName` is false for names with the `requests.` prefix), so "
        "`requests.nvidia.com/gpu: 1.5` is stored as written. Since pods only ever add whole GPUs, the "
        "quota then never matches its number: the team gets 1 GPU, not the 1.5 someone budgeted, and the "
        "half is silently lost (`2.5` gives 2, `500m` gives none at all).\n"
        "- `limits.nvidia.com/gpu` and the bare `nvidia.com/gpu` are treated as extended resource names, "
        "and a fraction there makes the API server reject the whole quota (\"must be an integer\").\n\n"
        "Either way the quota does not do what it says.\n\n"
        "The Dynamic Resource Allocation key `<class>.deviceclass.resource.k8s.io/devices` of a GPU DeviceClass "
        "(`gpuDeviceClasses`) is an extended resource name to the API server (not in `kubernetes.io/`, no "
        "`requests.` prefix: kubernetes `pkg/apis/core/helper/helpers.go` IsExtendedResourceName, read in the code "
        "index), so `gpu.nvidia.com.deviceclass.resource.k8s.io/devices: 1.5` is rejected (\"must be an integer\"). "
        "(Its `requests.` form is accepted and ignored: `quota-gpu-key-ignored`.)";
    info_.remediation =
        "Write GPU quota amounts as whole numbers (`requests.nvidia.com/gpu: 2`). Decide whether the team "
        "gets the GPU it was half given.";
    info_.checks = {KindRef{"", "ResourceQuota"}};
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.1 (\"Integer rule\") — kubernetes `pkg/apis/core/helper/helpers.go` "
        "@00010901: `IsIntegerResourceName` covers `IsExtendedResourceName`, which is false for names "
        "starting with `requests.`, so `ValidateResourceQuotaSpec` does not integer-check "
        "`requests.nvidia.com/gpu` [D]; `limits.nvidia.com/gpu` and bare `nvidia.com/gpu` count as extended "
        "names and must be integers [D].",
        "facts/kubernetes-and-queues.md §1.3 — pod validation requires integer GPU amounts "
        "(`ValidateResourceQuantityValue`, \"must be an integer\"), so pods only ever use whole GPUs.",
    };
    info_.example_bad = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 1.5
)";
    info_.example_good = R"(apiVersion: v1
kind: ResourceQuota
metadata:
  name: team-a-gpu
  namespace: team-a
spec:
  hard:
    requests.nvidia.com/gpu: 2
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is("", "ResourceQuota")) return;
    const Node hard = path(obj.root(), {"spec", "hard"});
    if (!hard.is_object()) return;
    const auto& gpus = ctx.settings().gpu_resources;
    constexpr std::string_view kDevices = ".deviceclass.resource.k8s.io/devices";
    for (const auto [key, value] : hard.items()) {
      if (key.ends_with(kDevices) && !key.starts_with("requests.")) {
        // A claim count key: an extended resource name when `requests.<key>` is a qualified name
        // (prefix at most 253 characters).
        const std::string_view cls = key.substr(0, key.size() - kDevices.size());
        if (!device_class_matches(cls, ctx.settings().gpu_device_classes) || key.size() + 1 > 253) continue;  // 9 + (size - 8) > 253
        auto q = Quantity::from_node(value);
        if (!q || q->is_integer() || q->is_negative()) continue;
        std::string msg;
        msg.reserve(200 + 2 * key.size());
        msg.append("`").append(key).append(": ").append(q->to_string()).append("` is not a whole number: the API server rejects the "
                                                                               "ResourceQuota (\"must be an integer\"), as it does any "
                                                                               "extended resource; claims are counted in whole devices");
        ctx.report(pointer_join("/spec/hard", key), std::move(msg));
        continue;
      }
      const bool tracked = key.starts_with("requests.");
      std::string_view resource = key;
      if (tracked) resource.remove_prefix(9);
      else if (key.starts_with("limits.")) resource.remove_prefix(7);
      if (!gpus.matches(resource)) continue;
      auto q = Quantity::from_node(value);
      if (!q || q->is_integer() || q->is_negative()) continue;
      const std::string what = "`" + std::string(key) + ": " + q->to_string() + "` is not a whole number";
      const auto [whole, next] = whole_parts(*q);
      if (tracked)
        ctx.report(pointer_join("/spec/hard", key),
                   what + ": the API server accepts it (it does not integer-check `requests.` keys), but pods only "
                          "ask for whole GPUs, so the namespace can use at most " + whole + " " + std::string(resource) +
                          ", never " + q->to_string() + "; write " + whole + " or " + next);
      else
        ctx.report(pointer_join("/spec/hard", key),
                   what + ": the API server rejects the ResourceQuota (\"must be an integer\")");
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_quota_gpu_not_integer() { return std::make_unique<QuotaGpuNotInteger>(); }

}  // namespace gpuguard::rules
