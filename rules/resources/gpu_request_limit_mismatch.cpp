// gpu-request-limit-mismatch: GPU requests and limits the API server rejects.

#include <algorithm>
#include <limits>
#include <vector>

#include "engine/quantity.h"
#include "engine/kinds.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class GpuRequestLimitMismatch final : public Rule {
 public:
  GpuRequestLimitMismatch() {
    info_.id = "gpu-request-limit-mismatch";
    info_.severity = Severity::error;
    info_.category = "resources";
    info_.seed = "9.5";
    info_.summary = "A container's GPU request has no limit, differs from its limit, or is not a whole number";
    info_.rationale =
        "GPUs are extended resources, and Kubernetes does not overcommit extended resources. Pod "
        "validation therefore insists that a GPU request comes with a limit (\"Limit must be set for "
        "non overcommitable resources\"), that the two are equal (\"must be equal to nvidia.com/gpu "
        "limit\"), and that the amount is a whole number (\"must be an integer\": `0.5` and `500m` "
        "are refused, `3000m` is 3). The API server rejects such a pod, and a controller that stamps "
        "pods from a template (Deployment, Job, Volcano Job, PyTorchJob, RayCluster) fails on every "
        "pod it tries to create, so the workload never starts.\n\n"
        "A limit alone is fine: the API server copies limits into requests. Every container counts, "
        "init containers and native sidecars included.";
    info_.remediation =
        "Give GPUs as limits only (`limits: {nvidia.com/gpu: 1}`), or set requests and limits to the "
        "same whole number. The fix (and the mutating webhook) adds the missing limit equal to the "
        "request.";
    info_.checks = pod_template_kinds();
    info_.facts = {
        "facts/kubernetes-and-queues.md §1.3 — `validateResourceRequirements` in kubernetes "
        "`pkg/apis/core/validation/validation.go` @000f2605: a request without a limit is a Required "
        "error on `limits` (\"Limit must be set for non overcommitable resources\"), a request "
        "different from the limit is \"must be equal to <name> limit of <qty>\", and "
        "`ValidateResourceQuantityValue` requires integers for extended resources; `SetDefaults_Pod` "
        "copies limits into requests.",
    };
    info_.has_fix = true;
    info_.reads_parts = 0;  // containers' resources only, which every rule reads
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.06-py3
      resources:
        requests:
          nvidia.com/gpu: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: nvcr.io/nvidia/pytorch:24.06-py3
      resources:
        limits:
          nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    for (const auto& t : pod_templates(obj))
      for (const auto& c : containers(t)) check_container(c, ctx);
  }

 private:
  static Node resource_list(Node resources, std::string_view key) {
    const Node l = member(resources, key);
    return l.is_object() ? l : Node();
  }

  // Parses one amount; reports it when it is malformed, negative or fractional (at the pointer
  // `ptr()` makes: most amounts are fine, and need none).
  template <typename Ptr>
  static std::optional<Quantity> amount(Node value, const Container& c, std::string_view name,
                                        std::string_view kind, const Ptr& ptr, CheckContext& ctx) {
    auto q = Quantity::from_node(value);
    if (q && !q->is_negative() && q->is_integer()) return *q;
    const std::string what = describe(c) + ": " + std::string(name) + " " + std::string(kind) + " " + brief(value);
    if (!q)
      ctx.report(ptr(), what + " is not a valid quantity: " + q.error());
    else if (q->is_negative())
      ctx.report(ptr(), what + " must be greater than or equal to 0");
    else
      ctx.report(ptr(), what + " must be a whole number: GPUs are not divisible, and the API server rejects the pod (\"must be an integer\")");
    return std::nullopt;
  }

  // A quantity as a message shows it: its canonical text or, past int64 (where it is held capped),
  // as it is written.
  static std::string shown(const Quantity& q, Node written) {
    if (q != Quantity::from_int(std::numeric_limits<int64_t>::max())) return q.to_string();
    return written.is_string() ? std::string(written.str()) : brief(written);
  }

  void check_container(const Container& c, CheckContext& ctx) const {
    const Node res = member(c.body, "resources");
    if (!res.is_object()) return;
    const Node requests = resource_list(res, "requests");
    const Node limits = resource_list(res, "limits");
    const auto& gpus = ctx.settings().gpu_resources;

    // The GPU resources it names, sorted and distinct (views of the keys of its resources): n log n.
    std::vector<std::string_view> names;
    for (const Node list : {requests, limits})
      for (const auto [name, v] : list.items())
        if (gpus.matches(name)) names.emplace_back(name);
    if (names.empty()) return;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());

    // GPU requests that have no limit; the fix adds them all at once.
    auto missing = [&] {
      json all = json::object();
      if (!requests) return all;
      for (const auto name : names)
        if (const Node rq = member(requests, name); rq && !member(limits, name)) all[std::string(name)] = rq.to_json();
      return all;
    };

    for (const auto name_view : names) {
      auto rptr = [&] { return c.pointer + "/resources/requests/" + pointer_escape(name_view); };
      auto lptr = [&] { return c.pointer + "/resources/limits/" + pointer_escape(name_view); };
      const Node rq = member(requests, name_view);
      const Node lm = member(limits, name_view);
      std::optional<Quantity> rq_q = rq ? amount(rq, c, name_view, "request", rptr, ctx) : std::nullopt;
      std::optional<Quantity> lm_q = lm ? amount(lm, c, name_view, "limit", lptr, ctx) : std::nullopt;
      if (rq && !lm) {
        if (!rq_q) continue;
        const std::string name(name_view);
        std::optional<json> fix;
        if (ctx.fixes_wanted())
          fix = patch_of(limits ? patch_op("add", lptr(), rq.to_json())
                                : patch_op("add", c.pointer + "/resources/limits", missing()));
        ctx.report(rptr(),
                   describe(c) + " requests " + name + ": " + shown(*rq_q, rq) +
                       " without a limit; the API server rejects the pod (\"Limit must be set for non overcommitable "
                       "resources\"): set limits." + name + " to " + shown(*rq_q, rq) + ", or give only the limit",
                   std::move(fix));
        continue;
      }
      if (rq_q && lm_q && *rq_q != *lm_q) {
        const std::string name(name_view);
        ctx.report(rptr(), describe(c) + ": " + name + " request " + shown(*rq_q, rq) + " differs from its limit " +
                               shown(*lm_q, lm) + "; GPUs cannot be overcommitted and the API server rejects the pod (\"must be equal to " +
                               name + " limit\")");
      }
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_request_limit_mismatch() { return std::make_unique<GpuRequestLimitMismatch>(); }

}  // namespace gpuguard::rules
