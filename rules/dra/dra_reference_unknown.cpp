// dra-reference-unknown: a pod's claim names a ResourceClaimTemplate or ResourceClaim that does not
// exist in its namespace, or a claim's request names a DeviceClass that does not exist.

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/dra/fields.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// NVIDIA's ComputeDomain (resource.nvidia.com/v1beta1, namespaced): its controller creates the
// ResourceClaimTemplate `spec.channel.resourceClaimTemplate.name` in the ComputeDomain's namespace.
constexpr std::string_view kComputeDomainGroup = "resource.nvidia.com";
constexpr std::string_view kComputeDomain = "ComputeDomain";

struct ClaimRef {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  bool shared = false;  // resourceClaimName (else resourceClaimTemplateName)
  std::string name;
  std::string what;  // "pod template", "pod template (Worker)", "pod"
};

struct ClassRef {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  std::string device_class;
};

struct State final : RuleState {
  Records<ClaimRef> claims;
  Records<ClassRef> classes;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    auto& l = static_cast<State&>(later);
    append(claims, l.claims);
    append(classes, l.classes);
  }
};

// Whether a ComputeDomain of namespace `ns` makes the template `name`.
bool compute_domain_makes(const Inventory& inv, std::string_view ns, std::string_view name) {
  for (const Object* cd : inv.list(kComputeDomainGroup, kComputeDomain, ns))
    if (string_at(path(cd->root(), {"spec", "channel", "resourceClaimTemplate"}), "name") == std::optional<std::string_view>(name))
      return true;
  return false;
}

class DraReferenceUnknown final : public Rule {
 public:
  DraReferenceUnknown() {
    info_.id = "dra-reference-unknown";
    // A warning, not an error: the reference may be created moments later (see the rationale), and
    // an error would deny a valid workload at admission.
    info_.severity = Severity::warning;
    info_.category = "dra";
    info_.seed = "9.1";
    info_.summary =
        "A pod's claim names a ResourceClaimTemplate or ResourceClaim that does not exist in its namespace, or a claim's "
        "request names a DeviceClass that does not exist: the pods stay Pending";
    info_.rationale =
        "A pod gets its GPUs through Dynamic Resource Allocation by naming, in `spec.resourceClaims`, a "
        "ResourceClaimTemplate (`resourceClaimTemplateName`) or a ResourceClaim (`resourceClaimName`) of its own "
        "namespace, and each request of the claim names a DeviceClass. The API server checks none of these names: "
        "it accepts the pod, and the pod stays Pending. With a template missing, the resource claim controller "
        "cannot create the pod's claim; with a claim missing, the scheduler waits for it; with a DeviceClass "
        "missing, no device can be allocated for the claim, so every pod that uses it waits. Nothing fails loudly: "
        "the pod's events say why, the workload just never starts.\n\n"
        "A template that NVIDIA's ComputeDomain controller makes is not missing: a ComputeDomain "
        "(`resource.nvidia.com`) of the namespace whose `spec.channel.resourceClaimTemplate.name` is the template's "
        "name creates it (NVIDIA/k8s-dra-driver-gpu @22407113, `api/nvidia.com/resource/v1beta1/computedomain.go`; "
        "`demo/specs/imex/nvbandwidth-test-job-1.yaml` names such a template). Templates other operators make at "
        "run time are not known: exclude the rule for their namespaces if they are used.\n\n"
        "The rule needs the whole cluster to say \"does not exist\", so it speaks only with a complete inventory "
        "(`gpuguard lint --complete`, the webhook's cluster state). It is a warning, never a denial: the API "
        "server accepts the pod and the pod waits for what it names, so a reference made before its target exists "
        "is valid, and it is made so all the time. Helm installs the kinds its install order does not list "
        "(ResourceClaimTemplate, ResourceClaim and DeviceClass among them: helm `pkg/releaseutil/kind_sorter.go`) "
        "after Deployments, StatefulSets and Jobs, and `kubectl apply` sends files in their order; a template "
        "created a moment earlier may also not have reached the webhook's watch yet. Denying would stop a valid "
        "install; the warning says what the pods will wait for.";
    info_.remediation =
        "Create the ResourceClaimTemplate, ResourceClaim or DeviceClass (NVIDIA's DRA driver's chart installs "
        "`gpu.nvidia.com`, `mig.nvidia.com` and, with the ComputeDomain half, `compute-domain-default-channel.nvidia.com`), "
        "or fix the name; claims and templates live in the pod's namespace (`kubectl get resourceclaimtemplates -n <ns>`).";
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{std::string(kResourceGroup), "ResourceClaim"});
    info_.checks.push_back(KindRef{std::string(kResourceGroup), "ResourceClaimTemplate"});
    info_.reads = dra_kinds();
    info_.reads.push_back(KindRef{std::string(kComputeDomainGroup), std::string(kComputeDomain)});
    info_.needs_complete = true;
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "facts/modern-stack.md §1 — how a pod asks (`spec.resourceClaims[]`: `resourceClaimName` | "
        "`resourceClaimTemplateName`, of the pod's namespace; k8s.io/api core/v1 types.go @v0.34.0); the API server's pod "
        "validation (kubernetes `pkg/apis/core/validation/validation.go` validatePodResourceClaim, code index commit "
        "000f2605) checks only that the names are DNS subdomains, not that the objects exist.",
        "A missing DeviceClass: kubernetes `pkg/apis/resource/validation/validation.go` validateDeviceClass checks the "
        "name's format only (code index, commit 009801d9); allocation needs the class (the scheduler's DRA plugin looks "
        "it up for each request).",
        "ComputeDomain: NVIDIA/k8s-dra-driver-gpu @22407113 `api/nvidia.com/resource/v1beta1/computedomain.go` "
        "(spec.channel.resourceClaimTemplate.name; the CRD `deployments/helm/dra-driver-nvidia-gpu/crds/"
        "resource.nvidia.com_computedomains.yaml`: namespaced, v1beta1), facts/modern-stack.md §1.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(# gpuguard lint --complete
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
spec:
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: one-gpu
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            claims: [{name: gpu}]
)";
    info_.example_good = R"(# gpuguard lint --complete
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.nvidia.com
spec:
  selectors:
    - cel: {expression: "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
  namespace: team-a
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
spec:
  template:
    spec:
      restartPolicy: Never
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: one-gpu
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            claims: [{name: gpu}]
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is_kubernetes_object()) return;
    auto* state = static_cast<State*>(ctx.state());
    if (obj.is(kResourceGroup, "ResourceClaim") || obj.is(kResourceGroup, "ResourceClaimTemplate")) {
      const auto shape = dra::claim_shape(obj);
      if (!shape) return;
      const bool tmpl = obj.gvk.kind == "ResourceClaimTemplate";
      const std::string base = tmpl ? "/spec/spec/devices/requests/" : "/spec/devices/requests/";
      const Node requests = tmpl ? path(obj.root(), {"spec", "spec", "devices", "requests"}) : path(obj.root(), {"spec", "devices", "requests"});
      if (!requests.is_array()) return;
      auto add = [&](Node body, const std::string& ptr) {
        const Node cls = member(body, "deviceClassName");
        if (!cls.is_string() || !dra::is_dns1123_subdomain(cls.str())) return;  // dra-claim-invalid's
        ClassRef c;
        c.object = ctx.ref();
        c.pointer = ptr + "/deviceClassName";
        c.pos = ctx.position_of(c.pointer);
        c.device_class = std::string(cls.str());
        state->classes.push_back(std::move(c));
      };
      size_t i = 0;
      for (Node r : requests) {
        const std::string rptr = base + std::to_string(i++);
        if (!r.is_object()) continue;
        if (*shape == dra::ClaimShape::exactly) {
          if (const Node e = member(r, "exactly"); e.is_object()) add(e, rptr + "/exactly");
        } else {
          add(r, rptr);
        }
        if (const Node fa = member(r, "firstAvailable"); fa.is_array()) {
          size_t j = 0;
          for (Node sub : fa) add(sub, rptr + "/firstAvailable/" + std::to_string(j++));
        }
      }
      return;
    }
    for (const auto& t : pod_templates(obj)) {
      const Node rcs = member(t.spec, "resourceClaims");
      if (!rcs.is_array()) continue;
      size_t i = 0;
      for (Node rc : rcs) {
        const std::string p = t.spec_pointer() + "/resourceClaims/" + std::to_string(i++);
        const auto claim = string_at(rc, "resourceClaimName");
        const auto tmpl = string_at(rc, "resourceClaimTemplateName");
        if (claim.has_value() == tmpl.has_value()) continue;  // both or neither: dra-claim-invalid's
        const std::string_view name = claim ? *claim : *tmpl;
        if (!dra::is_dns1123_subdomain(name)) continue;        // refused: dra-claim-invalid's
        ClaimRef c;
        c.object = ctx.ref();
        c.shared = claim.has_value();
        c.pointer = p + (c.shared ? "/resourceClaimName" : "/resourceClaimTemplateName");
        c.pos = ctx.position_of(c.pointer);
        c.name = std::string(name);
        c.what = t.pointer.empty() ? "pod" : t.role.empty() ? "pod template" : "pod template (" + t.role + ")";
        state->claims.push_back(std::move(c));
      }
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;
    auto* state = static_cast<State*>(ctx.state());
    for (const auto& c : state->claims) {
      const std::string& ns = c.object.namespace_();
      const std::string_view kind = c.shared ? "ResourceClaim" : "ResourceClaimTemplate";
      if (inv.find(kResourceGroup, kind, ns, c.name)) continue;
      if (!c.shared && compute_domain_makes(inv, ns, c.name)) continue;
      std::string msg;
      msg.reserve(c.what.size() + kind.size() + ns.size() + c.name.size() + 240);
      msg.append(kind).append(" ").append(ns).append("/").append(c.name);
      const bool pod = c.what == "pod";
      msg.append(" does not exist: ").append(pod ? "the pod stays Pending" : "the pods of this " + c.what + " stay Pending");
      msg.append(" (the API server accepts ").append(pod ? "it" : "them");
      msg.append(c.shared ? "; the scheduler waits for the claim)"
                          : "; the resource claim controller cannot make the claim, and no ComputeDomain of the namespace "
                            "makes the template)");
      ctx.report(c.object, c.pointer, c.pos, std::move(msg));
    }
    for (const auto& c : state->classes) {
      if (inv.find(kResourceGroup, "DeviceClass", "", c.device_class)) continue;
      std::string msg;
      msg.reserve(c.device_class.size() + c.object.kind().size() + 200);
      msg.append("DeviceClass ").append(c.device_class).append(" does not exist: the pods that use this ");
      msg.append(c.object.kind()).append(" stay Pending (no device can be allocated for its request)");
      if (c.device_class == "gpu.nvidia.com" || c.device_class == "mig.nvidia.com" || c.device_class == "vfio.gpu.nvidia.com")
        msg.append(" (NVIDIA's DRA driver's chart creates it: is the driver installed, with resources.gpus.enabled?)");
      ctx.report(c.object, c.pointer, c.pos, std::move(msg));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_dra_reference_unknown() { return std::make_unique<DraReferenceUnknown>(); }

}  // namespace gpuguard::rules
