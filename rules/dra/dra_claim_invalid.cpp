// dra-claim-invalid: what the API server refuses in a ResourceClaim, a ResourceClaimTemplate or a
// pod's claims.

#include <map>
#include <set>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/dra/fields.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// resource/v1 types.go (kubernetes/api @10b39a39, the same at v0.34.0 and v0.36.0).
constexpr size_t kDeviceRequestsMaxSize = 32;               // = AllocationResultsMaxSize
constexpr size_t kFirstAvailableDeviceRequestMaxSize = 8;
constexpr size_t kDeviceSelectorsMaxSize = 32;
constexpr size_t kDeviceConstraintsMaxSize = 32;
constexpr size_t kDeviceConfigMaxSize = 32;
constexpr size_t kCELSelectorExpressionMaxLength = size_t{10} * 1024;
constexpr size_t kOpaqueParametersMaxLength = size_t{10} * 1024;
// DRAAdminNamespaceLabelKey (v1.34 on); v1.33 read resource.k8s.io/admin-access.
constexpr std::string_view kAdminLabel = "resource.kubernetes.io/admin-access";
constexpr std::string_view kAdminLabelOld = "resource.k8s.io/admin-access";

constexpr std::string_view kRequestNameRef =
    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'";

struct AdminRequest {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  std::string path;  // the API server's: spec.devices.requests[i].adminAccess
  std::string what;  // "ResourceClaimTemplate"
};

struct State final : RuleState {
  Records<AdminRequest> admin;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { append(admin, static_cast<State&>(later).admin); }
};

std::string too_many(std::string_view path, size_t n, size_t max) {
  std::string out;
  out.reserve(path.size() + 64);
  out.append(path).append(": Too many: ").append(std::to_string(n)).append(": must have at most ");
  out.append(std::to_string(max)).append(" items");
  return out;
}

// Checks one ResourceClaim spec (a claim's `spec`, a template's `spec.spec`).
class ClaimChecker {
 public:
  ClaimChecker(CheckContext& ctx, dra::ClaimShape shape, std::string what, State* state)
      : ctx_(ctx), shape_(shape), what_(std::move(what)), state_(state) {}

  void check(Node spec, const std::string& ptr) {
    const Node devices = member(spec, "devices");
    if (!devices.is_object()) return;
    const std::string dptr = ptr + "/devices";
    const Node requests = member(devices, "requests");
    // Request names (with their sub-requests), as gatherRequestNames keeps them.
    if (requests.is_array()) {
      for (Node r : requests) {
        const std::string name(string_at(r, "name").value_or(""));
        std::set<std::string>& subs = names_[name];
        if (const Node fa = member(r, "firstAvailable"); fa.is_array())
          for (Node s : fa) subs.insert(std::string(string_at(s, "name").value_or("")));
      }
      if (requests.size() > kDeviceRequestsMaxSize) {
        refuse(dptr + "/requests", too_many(dra::field_path(dptr + "/requests"), requests.size(), kDeviceRequestsMaxSize));
      } else {
        std::set<std::string_view> seen;
        size_t i = 0;
        for (Node r : requests) {
          const std::string rptr = dptr + "/requests/" + std::to_string(i++);
          if (!r.is_object()) continue;
          const auto name = string_at(r, "name");
          if (name && !name->empty() && !seen.insert(*name).second)
            refuse(rptr + "/name", dra::field_path(rptr) + ": Duplicate value: " + dra::quoted(*name));
          request(r, rptr);
        }
      }
    }
    const Node constraints = member(devices, "constraints");
    if (constraints.is_array()) {
      if (constraints.size() > kDeviceConstraintsMaxSize) {
        refuse(dptr + "/constraints",
               too_many(dra::field_path(dptr + "/constraints"), constraints.size(), kDeviceConstraintsMaxSize));
      } else {
        size_t i = 0;
        for (Node c : constraints) request_refs(c, dptr + "/constraints/" + std::to_string(i++));
      }
    }
    const Node config = member(devices, "config");
    if (config.is_array()) {
      if (config.size() > kDeviceConfigMaxSize) {
        refuse(dptr + "/config", too_many(dra::field_path(dptr + "/config"), config.size(), kDeviceConfigMaxSize));
      } else {
        size_t i = 0;
        for (Node c : config) {
          const std::string cptr = dptr + "/config/" + std::to_string(i++);
          if (!c.is_object()) continue;
          request_refs(c, cptr);
          opaque(c, cptr);
        }
      }
    }
  }

 private:
  void refuse(const std::string& pointer, const std::string& error, std::string_view hint = {}) {
    std::string msg;
    msg.reserve(error.size() + hint.size() + what_.size() + 40);
    msg.append("the API server refuses this ").append(what_).append(": ").append(error);
    if (!hint.empty()) msg.append(" (").append(hint).append(")");
    ctx_.report(pointer, std::move(msg));
  }

  void request(Node r, const std::string& rptr) {
    const Node name = member(r, "name");
    if (!name.is_string() || name.str().empty()) {
      refuse(rptr, dra::field_path(rptr) + ".name: Required value");
    } else if (!is_dns1123_label(name.str())) {
      refuse(rptr + "/name", dra::field_path(rptr) + ".name: Invalid value: " + dra::quoted(name.str()) +
                                 ": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                 "'-', and must start and end with an alphanumeric character");
    }
    const Node first = member(r, "firstAvailable");
    const bool has_first = first.is_array() && !first.empty();
    Node exactly;
    bool has_exactly = false;
    if (shape_ == dra::ClaimShape::exactly) {
      exactly = member(r, "exactly");
      has_exactly = static_cast<bool>(exactly) && !exactly.is_null();
    } else {
      // v1beta1's conversion makes an `exactly` of the request's own fields when any of them is set.
      has_exactly = !string_at(r, "deviceClassName").value_or("").empty() ||
                    (member(r, "selectors") && !member(r, "selectors").is_null()) ||
                    !string_at(r, "allocationMode").value_or("").empty() || int_at(r, "count").value_or(0) != 0 ||
                    (member(r, "adminAccess") && !member(r, "adminAccess").is_null());
      exactly = r;
    }
    const std::string path = dra::field_path(rptr);
    if (!has_first && !has_exactly) {
      std::string hint;
      if (shape_ == dra::ClaimShape::exactly && member(r, "deviceClassName"))
        hint = "in resource.k8s.io/v1 and v1beta2 `deviceClassName`, `selectors`, `allocationMode`, `count` and "
               "`adminAccess` go under `exactly`; written on the request, as v1beta1 did, they are unknown fields";
      refuse(rptr, path + ": Required value: exactly one of `exactly` or `firstAvailable` is required", hint);
      return;
    }
    if (has_first && has_exactly) {
      refuse(rptr, path + ": Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but "
                          "multiple fields are set",
             shape_ == dra::ClaimShape::flat ? "in v1beta1 a request with `firstAvailable` sets no `deviceClassName`, "
                                               "`selectors`, `allocationMode`, `count` or `adminAccess` of its own"
                                             : std::string_view());
      return;
    }
    if (has_first) {
      const std::string fptr = rptr + "/firstAvailable";
      if (first.size() > kFirstAvailableDeviceRequestMaxSize) {
        refuse(fptr, too_many(dra::field_path(fptr), first.size(), kFirstAvailableDeviceRequestMaxSize));
        return;
      }
      std::set<std::string_view> seen;
      size_t i = 0;
      for (Node sub : first) {
        const std::string sptr = fptr + "/" + std::to_string(i++);
        if (!sub.is_object()) continue;
        const auto sname = string_at(sub, "name");
        if (!sname || sname->empty()) refuse(sptr, dra::field_path(sptr) + ".name: Required value");
        else if (!seen.insert(*sname).second)
          refuse(sptr + "/name", dra::field_path(sptr) + ": Duplicate value: " + dra::quoted(*sname));
        exact(sub, sptr, true);
      }
      return;
    }
    if (!exactly.is_object()) return;  // a wrong type: the decoder refuses it, schema-invalid says so
    const std::string eptr = shape_ == dra::ClaimShape::exactly ? rptr + "/exactly" : rptr;
    exact(exactly, eptr, false);
    // adminAccess (only an exact request has it): allowed only in a namespace with the label, decided in finish.
    if (bool_at(exactly, "adminAccess") == std::optional<bool>(true) && state_) {
      AdminRequest a;
      a.object = ctx_.ref();
      a.pointer = eptr + "/adminAccess";
      a.pos = ctx_.position_of(a.pointer);
      // AuthorizedForAdmin names spec.devices.requests[i].adminAccess, for a template too.
      const size_t at = rptr.find("/devices/requests/");
      a.path = "spec." + dra::field_path(rptr.substr(at)) + ".adminAccess";
      a.what = what_;
      state_->admin.push_back(std::move(a));
    }
  }

  // The fields of an exact request or a sub-request (`body`, at `ptr`).
  void exact(Node body, const std::string& ptr, bool sub) {
    const std::string path = dra::field_path(ptr);
    const Node cls = member(body, "deviceClassName");
    const bool class_set = cls.is_string() && !cls.str().empty();
    if (!class_set) {
      refuse(cls ? ptr + "/deviceClassName" : ptr, path + ".deviceClassName: Required value");
    } else if (!dra::is_dns1123_subdomain(cls.str())) {
      std::string hint;
      if (cls.str() == "nvidia.com/gpu")
        hint = "nvidia.com/gpu is the device plugin's resource name; NVIDIA's DRA driver's DeviceClass is gpu.nvidia.com "
               "(mig.nvidia.com for MIG slices)";
      else if (cls.str().find('/') != std::string_view::npos)
        hint = "a DeviceClass name is a DNS subdomain, not a resource name";
      refuse(ptr + "/deviceClassName",
             path + ".deviceClassName: Invalid value: " + dra::quoted(cls.str()) + ": " + std::string(dra::kDns1123SubdomainError),
             hint);
    }
    const Node selectors = member(body, "selectors");
    if (selectors.is_array()) {
      const std::string sptr = ptr + "/selectors";
      if (selectors.size() > kDeviceSelectorsMaxSize) {
        refuse(sptr, too_many(dra::field_path(sptr), selectors.size(), kDeviceSelectorsMaxSize));
      } else {
        size_t i = 0;
        for (Node s : selectors) {
          const std::string p = sptr + "/" + std::to_string(i++);
          const Node cel = member(s, "cel");
          if (!cel.is_object()) {
            refuse(p, dra::field_path(p) + ".cel: Required value");
            continue;
          }
          const Node e = member(cel, "expression");
          if (e.is_string() && e.str().size() > kCELSelectorExpressionMaxLength)
            refuse(p + "/cel/expression", dra::field_path(p) + ".cel.expression: Too long: may not be more than " +
                                              std::to_string(kCELSelectorExpressionMaxLength) + " bytes");
        }
      }
    }
    // v1beta1 defaults mode and count only when the request names a class (its SetDefaults_DeviceRequest);
    // without one, the missing class is the error said.
    if (!sub && shape_ == dra::ClaimShape::flat && !class_set) return;
    const Node mode = member(body, "allocationMode");
    const std::string_view m = mode.is_string() ? mode.str() : std::string_view();
    const Node count = member(body, "count");
    const bool has_n = count.is_number_integer();
    const int64_t n = has_n ? count.integer() : 0;
    if (m == "All") {
      if (n != 0)
        refuse(ptr + "/count", path + ".count: Invalid value: " + std::to_string(n) + ": must not be specified when allocationMode is 'All'",
               "allocationMode All takes every matching device; drop count, or use allocationMode: ExactCount");
    } else if (m.empty() || m == "ExactCount") {
      // count 0 (or none) is defaulted to 1 (SetDefaults_ExactDeviceRequest).
      if (n < 0)
        refuse(ptr + "/count", path + ".count: Invalid value: " + std::to_string(n) + ": must be greater than zero");
    } else if (mode.is_string()) {
      refuse(ptr + "/allocationMode",
             path + ".allocationMode: Unsupported value: " + dra::quoted(m) + ": supported values: \"All\", \"ExactCount\"");
    }
  }

  // A constraint's or config's `requests`: each the name of a request, or request/sub-request.
  void request_refs(Node entry, const std::string& ptr) {
    const Node reqs = member(entry, "requests");
    if (!reqs.is_array()) return;
    if (reqs.size() > kDeviceRequestsMaxSize) {
      refuse(ptr + "/requests", too_many(dra::field_path(ptr + "/requests"), reqs.size(), kDeviceRequestsMaxSize));
      return;
    }
    size_t i = 0;
    for (Node r : reqs) {
      const std::string p = ptr + "/requests/" + std::to_string(i++);
      if (!r.is_string()) continue;
      const std::string_view s = r.str();
      const size_t slash = s.find('/');
      bool found = false;
      if (slash == std::string_view::npos) {
        found = names_.count(std::string(s)) > 0;
      } else if (s.find('/', slash + 1) == std::string_view::npos) {
        auto it = names_.find(std::string(s.substr(0, slash)));
        found = it != names_.end() && it->second.count(std::string(s.substr(slash + 1))) > 0;
      }
      if (!found) refuse(p, dra::field_path(p) + ": Invalid value: " + dra::quoted(s) + ": " + std::string(kRequestNameRef));
    }
  }

  void opaque(Node config, const std::string& ptr) {
    const Node op = member(config, "opaque");
    if (!op) {
      refuse(ptr, dra::field_path(ptr) + ".opaque: Required value");
      return;
    }
    if (!op.is_object()) return;
    const std::string optr = ptr + "/opaque";
    const Node params = member(op, "parameters");
    if (!params || params.is_null()) {
      refuse(optr, dra::field_path(optr) + ".parameters: Required value");
      return;
    }
    // The raw JSON the API server receives: its compact encoding (kubectl sends YAML as compact JSON;
    // Go's encoder escapes <, > and & as \u003c..., so its bytes are never fewer than these).
    const size_t size = params.to_json().dump().size();
    if (size > kOpaqueParametersMaxLength) {
      refuse(optr + "/parameters", dra::field_path(optr) + ".parameters: Too long: may not be more than " +
                                       std::to_string(kOpaqueParametersMaxLength) + " bytes",
             std::to_string(size) + " bytes");
    } else if (!params.is_object()) {
      refuse(optr + "/parameters", dra::field_path(optr) + ".parameters: Invalid value: \"<value omitted>\": must be a valid JSON object");
    }
  }

  CheckContext& ctx_;
  dra::ClaimShape shape_;
  std::string what_;
  State* state_;
  std::map<std::string, std::set<std::string>> names_;
};

// The pod's claims (`spec.resourceClaims`) and its containers' `resources.claims`.
void check_pod_claims(CheckContext& ctx, const Object& obj, const PodTemplate& t) {
  const bool core = obj.gvk.group.empty() || obj.gvk.group == "apps" || obj.gvk.group == "batch";
  const std::string spec_ptr = t.spec_pointer();
  // The API server's path: the object's own for the kinds it validates; the pod's for others
  // (their pods are refused when their controller creates them).
  auto path_of = [&](const std::string& pointer) {
    return core ? dra::field_path(pointer) : "spec." + dra::field_path(pointer.substr(spec_ptr.size()));
  };
  auto refuse = [&](const std::string& pointer, const std::string& error) {
    std::string msg;
    msg.reserve(error.size() + obj.gvk.kind.size() + 48);
    msg.append(core ? "the API server refuses this " : "the API server refuses the pods of this ").append(obj.gvk.kind);
    msg.append(": ").append(error);
    ctx.report(pointer, std::move(msg));
  };
  std::set<std::string_view> names;  // gatherPodResourceClaimNames: every non-empty name
  const Node rcs = member(t.spec, "resourceClaims");
  if (rcs.is_array()) {
    size_t i = 0;
    for (Node rc : rcs) {
      const std::string p = spec_ptr + "/resourceClaims/" + std::to_string(i++);
      if (!rc.is_object()) continue;
      if (auto n = string_at(rc, "name"); n && !n->empty()) names.insert(*n);
      const Node a = member(rc, "resourceClaimName");
      const Node b = member(rc, "resourceClaimTemplateName");
      const bool has_a = a && !a.is_null();
      const bool has_b = b && !b.is_null();
      // The entry as Go's %v shows it would be unreadable; its fields, quoted.
      std::string shown = "{name: " + dra::quoted(string_at(rc, "name").value_or(""));
      if (has_a) shown.append(", resourceClaimName: ").append(a.is_string() ? dra::quoted(a.str()) : brief(a));
      if (has_b) shown.append(", resourceClaimTemplateName: ").append(b.is_string() ? dra::quoted(b.str()) : brief(b));
      shown += "}";
      if (has_a && has_b)
        refuse(p, path_of(p) + ": Invalid value: " + shown + ": at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified");
      else if (!has_a && !has_b)
        refuse(p, path_of(p) + ": Invalid value: " + shown + ": must specify one of: `resourceClaimName`, `resourceClaimTemplateName`" +
                      (member(rc, "source") ? std::string(" (`source` was removed in Kubernetes 1.31: the name goes on the entry itself; "
                                                          "an API server drops the unknown field, or refuses it under strict field validation)")
                                            : std::string()));
    }
  }
  std::string listed;
  for (std::string_view n : names) listed.append(listed.empty() ? "" : ", ").append(n);
  for (const auto& c : t.all_containers) {
    if (c.kind == Container::Kind::ephemeral) continue;
    const Node claims = path(c.body, {"resources", "claims"});
    if (!claims.is_array()) continue;
    std::set<std::string_view> seen;
    size_t j = 0;
    for (Node cl : claims) {
      const std::string p = c.pointer + "/resources/claims/" + std::to_string(j++);
      const Node name = member(cl, "name");
      if (!name.is_string() || name.str().empty()) {
        refuse(p, path_of(p) + ": Required value");
        continue;
      }
      if (!seen.insert(name.str()).second) refuse(p, path_of(p) + ": Duplicate value: " + dra::quoted(name.str()));
      if (names.count(name.str()) == 0)
        refuse(p + "/name", path_of(p) + ": Not found: " + dra::quoted(name.str()) + ": must be one of the names in pod.spec.resourceClaims" +
                                (names.empty() ? std::string(" which is empty") : ": " + listed));
    }
  }
}

class DraClaimInvalid final : public Rule {
 public:
  DraClaimInvalid() {
    info_.id = "dra-claim-invalid";
    info_.severity = Severity::error;
    info_.category = "dra";
    info_.seed = "9.1";
    info_.summary =
        "A ResourceClaim, ResourceClaimTemplate or a pod's claims the API server refuses (count with allocationMode All, "
        "a negative count, both or neither of exactly and firstAvailable, a size limit, a class name that is not a DNS "
        "subdomain, adminAccess outside an admin namespace)";
    info_.rationale =
        "A GPU through Dynamic Resource Allocation is asked for in a ResourceClaim (or a ResourceClaimTemplate, which "
        "makes one per pod) and named by the pod's `spec.resourceClaims`. The API server validates both, and what it "
        "refuses never runs: a template it refuses leaves every pod that names it Pending, a Deployment it refuses "
        "is never created. The rule says what the API server would say, with its own error text:\n\n"
        "- a request has exactly one of `exactly` and `firstAvailable` (`exactly one of \\`exactly\\` or "
        "\\`firstAvailable\\` is required`, `..., but multiple fields are set`). In `resource.k8s.io/v1` and "
        "`v1beta2` the class, selectors, mode, count and adminAccess go under `exactly`; written on the request "
        "itself (v1beta1's shape) they are unknown fields and the request has neither. In `v1beta1` the request's "
        "own fields are its `exactly` (the conversion makes one when any of them is set), so `deviceClassName` "
        "beside `firstAvailable` is both;\n"
        "- `count` with `allocationMode: All` (`must not be specified when allocationMode is 'All'`), a negative "
        "`count` (`must be greater than zero`), a mode other than `ExactCount` and `All`. A `count` of 0 or none is "
        "defaulted to 1 (`SetDefaults_ExactDeviceRequest`; v1beta1 defaults only a request that names a class), "
        "so it is no error;\n"
        "- the size limits of `resource/v1` `types.go`: at most 32 requests (`DeviceRequestsMaxSize`), 8 "
        "`firstAvailable` sub-requests, 32 selectors per request, 32 constraints, 32 config entries, a CEL "
        "expression of 10 KiB (`CELSelectorExpressionMaxLength`) and opaque parameters of 10 KiB "
        "(`OpaqueParametersMaxLength`, counted as the compact JSON a client sends: Go's encoder never sends fewer "
        "bytes);\n"
        "- a `deviceClassName` that is not a DNS subdomain (`nvidia.com/gpu` is the device plugin's resource name; "
        "NVIDIA's DRA driver's class is `gpu.nvidia.com`), a request name that is not a DNS label or is repeated, a "
        "selector without `cel`, a constraint's or config's `requests` naming no request or `request/sub-request` of "
        "the claim, a config without `opaque` or parameters that are not a JSON object;\n"
        "- in a pod (and every pod template): a `spec.resourceClaims` entry with both or neither of "
        "`resourceClaimName` and `resourceClaimTemplateName`, and a container's `resources.claims` name that is no "
        "entry's name (`must be one of the names in pod.spec.resourceClaims`). Deployments, StatefulSets, "
        "DaemonSets, ReplicaSets, Jobs and CronJobs are refused themselves; the pods of other workloads (Kubeflow, "
        "JobSet, Ray, LeaderWorkerSet, Volcano) are refused when their controller creates them;\n"
        "- `adminAccess: true` in a namespace without the label `resource.kubernetes.io/admin-access: \"true\"` "
        "(`Forbidden: admin access to devices requires the \\`resource.kubernetes.io/admin-access: true\\` label "
        "on the containing namespace`, `AuthorizedForAdmin` in the claim and template storage strategies). Only "
        "with a complete inventory, where the Namespace is known. Kubernetes 1.33 read the label "
        "`resource.k8s.io/admin-access` (and enforced it only with the alpha gate DRAAdminAccess on); the rule "
        "accepts either label, so it never refuses what one of those versions accepts.\n\n"
        "NVIDIA's DRA demo specs (NVIDIA/k8s-dra-driver-gpu @22407113, `demo/specs/`, 40 files) checked: the "
        "quickstart v1 and v1beta1 specs, imex and extended-resources give no finding; `mig+mps/sharing-demo-job*.yaml` "
        "and `selectors/pods.yaml` still write a pod claim's name under `source:`, the form Kubernetes 1.31 removed, so "
        "a current API server sees neither name and refuses them (reported, with that hint); their claims are "
        "`resource.k8s.io/v1alpha2`, which the rule does not read.\n\n"
        "Field paths are written as in the object's own apiVersion (v1beta1's requests without `exactly`). CEL "
        "expressions are not compiled: one that does not compile, or exceeds the cost limit, is not found here.";
    info_.remediation =
        "Fix the field the message names, as the message's hint says: put the request's fields under `exactly` in "
        "`resource.k8s.io/v1`, drop `count` from an `All` request, use the class `gpu.nvidia.com`, name the pod's "
        "claim in its `spec.resourceClaims`, or label the namespace `resource.kubernetes.io/admin-access: \"true\"` "
        "when it is meant to hold admin claims (monitoring tools that need in-use devices).";
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{std::string(kResourceGroup), "ResourceClaim"});
    info_.checks.push_back(KindRef{std::string(kResourceGroup), "ResourceClaimTemplate"});
    info_.reads = {KindRef{"", "Namespace"}};
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "facts/modern-stack.md §1 — what the API server rejects in a ResourceClaim; re-read in kubernetes "
        "`pkg/apis/resource/validation/validation.go` (validateDeviceRequest, validateDeviceAllocationMode, "
        "validateDeviceClass = ValidateDNS1123Subdomain, validateSelector, validateCELExpression, validateRequestNameRef, "
        "validateOpaqueConfiguration/validateRawExtension, validateSlice/validateSet's field.TooMany) in the code index "
        "(commit 009801d9, 1.36 development: the texts are those of v1.34 and v1.35 too).",
        "Defaulting: kubernetes `pkg/apis/resource/v1/defaults.go` SetDefaults_ExactDeviceRequest and "
        "SetDefaults_DeviceSubRequest (ExactCount, count 0 → 1); `pkg/apis/resource/v1beta1/defaults.go` defaults only "
        "a request with a deviceClassName; `pkg/apis/resource/v1beta1/conversion.go` "
        "(hasAnyMainRequestFieldsSet: any of the request's own fields makes `exactly`).",
        "Limits: kubernetes/api `resource/v1/types.go` @10b39a39 (v0.36.0): DeviceRequestsMaxSize = "
        "AllocationResultsMaxSize = 32, FirstAvailableDeviceRequestMaxSize = 8, DeviceSelectorsMaxSize = 32, "
        "DeviceConstraintsMaxSize = 32, DeviceConfigMaxSize = 32, CELSelectorExpressionMaxLength = 10 * 1024, "
        "OpaqueParametersMaxLength = 10 * 1024, DRAAdminNamespaceLabelKey = resource.kubernetes.io/admin-access. "
        "Message forms: k8s.io/apimachinery `pkg/util/validation/field/errors.go` @eed236ce (TooMany: \"must have at "
        "most %d items\", TooLong: \"may not be more than %d bytes\").",
        "Pods: kubernetes `pkg/apis/core/validation/validation.go` (code index, commit 000f2605): "
        "validatePodResourceClaim (\"at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
        "specified\", \"must specify one of: `resourceClaimName`, `resourceClaimTemplateName`\"), "
        "validateResourceClaimNames (\"must be one of the names in pod.spec.resourceClaims\"), run by ValidatePodSpec "
        "for pods and pod templates.",
        "Admin access: kubernetes `pkg/registry/resource/utils.go` AuthorizedForAdmin (\"admin access to devices "
        "requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace\", path "
        "spec.devices.requests[i].adminAccess); 1.33's label resource.k8s.io/admin-access (kubernetes/website "
        "feature-gates/DRAAdminAccess.md; test/integration/dra at 1.33).",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: all-gpus
  namespace: team-a
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
            allocationMode: All
            count: 8
)";
    info_.example_good = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: eight-gpus
  namespace: team-a
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly:
            deviceClassName: gpu.nvidia.com
            count: 8
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
      ClaimChecker checker(ctx, *shape, obj.gvk.kind, state);
      checker.check(tmpl ? path(obj.root(), {"spec", "spec"}) : member(obj.root(), "spec"), tmpl ? "/spec/spec" : "/spec");
      return;
    }
    for (const auto& t : pod_templates(obj)) check_pod_claims(ctx, obj, t);
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    if (!inv.complete()) return;  // whether the namespace has the label is known only then
    for (const auto& a : static_cast<State*>(ctx.state())->admin) {
      const Object* ns = inv.find("", "Namespace", "", a.object.namespace_());
      if (!ns) continue;  // no such namespace: the API server refuses the object for that
      if (ns->label(kAdminLabel).str() == "true" || ns->label(kAdminLabelOld).str() == "true") continue;
      std::string msg;
      msg.reserve(a.path.size() + a.what.size() + a.object.namespace_().size() + 320);
      msg.append("the API server refuses this ").append(a.what).append(": ").append(a.path);
      msg.append(": Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on "
                 "the containing namespace (Namespace ");
      msg.append(a.object.namespace_()).append(" has no such label; adminAccess gives access to devices in use by other pods)");
      ctx.report(a.object, a.pointer, a.pos, std::move(msg));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_dra_claim_invalid() { return std::make_unique<DraClaimInvalid>(); }

}  // namespace gpuguard::rules
