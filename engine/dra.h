#pragma once
// GPUs a pod template gets through Dynamic Resource Allocation (DRA): its `spec.resourceClaims`
// name a ResourceClaimTemplate (`resourceClaimTemplateName`: one claim per pod) or a ResourceClaim
// (`resourceClaimName`: one claim every pod naming it shares) of the pod's namespace; each request
// of the claim names a DeviceClass, and a request is a GPU request when its class is a GPU class.
//
// The claims are other objects, so a template's DRA GPUs are known only once the inventory is (a
// rule's `finish`): `check` keeps the template's claim references (pod_claims, a small
// projection), `finish` resolves them (resolve_dra_gpus). A claim the inventory does not hold makes
// the template's DRA GPUs unknown, and a rule says nothing about what it cannot see.
//
// API shapes read in kubernetes/kubernetes `staging/src/k8s.io/api/resource/{v1,v1beta2,v1beta1}/types.go`
// and `staging/src/k8s.io/api/core/v1/types.go` (PodResourceClaim: "Exactly one of
// ResourceClaimName and ResourceClaimTemplateName must be set"): v1 and v1beta2 put a request's
// class, selectors, mode and count in `exactly` or list sub-requests in `firstAvailable`; v1beta1
// (and v1alpha3) put them on the request itself, `firstAvailable` beside them.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/node.h"
#include "engine/records.h"
#include "engine/rule.h"

namespace gpuguard::engine {

class Inventory;

inline constexpr std::string_view kResourceGroup = "resource.k8s.io";

// (default_gpu_device_classes is in engine/podspec.h, for RunSettings.)

// For the pages of rules that ask whether a template is a GPU template.
inline constexpr std::string_view kDraGpuTemplateDoc =
    "A pod template that gets its GPUs through Dynamic Resource Allocation is a GPU template too: one of its "
    "`spec.resourceClaims` names a ResourceClaimTemplate (`resourceClaimTemplateName`) or a ResourceClaim "
    "(`resourceClaimName`) of its namespace, in the input or the cluster state, with a request (`exactly`, any "
    "`firstAvailable` sub-request, or v1beta1's fields on the request itself) whose DeviceClass is a GPU class: "
    "NVIDIA's DRA driver's `gpu.nvidia.com`, `mig.nvidia.com`, `vfio.gpu.nvidia.com` and classes named "
    "`*.gpu.nvidia.com` (NVIDIA/k8s-dra-driver-gpu `deployments/helm/dra-driver-nvidia-gpu/templates/` "
    "@22407113), or a DeviceClass whose selector requires `device.driver == 'gpu.nvidia.com'`. Such a pod asks "
    "for no `nvidia.com/gpu` in its containers' resources (kubernetes `staging/src/k8s.io/api/resource/v1/types.go`, "
    "`core/v1` PodResourceClaim). A claim the input does not hold is not guessed at: the template is left alone.";
// Whether a DeviceClass name matches one of the patterns (exact names, or `*.suffix`).
[[nodiscard]] bool device_class_matches(std::string_view device_class, const std::vector<std::string>& patterns);

// The kinds resolve_dra_gpus reads from the inventory (a rule that calls it adds them to `reads`).
[[nodiscard]] const std::vector<KindRef>& dra_kinds();

// One entry of a pod template's `spec.resourceClaims`.
struct PodClaim {
  std::string name;            // the entry's name (containers' resources.claims[].name)
  std::string claim;           // resourceClaimName ("" when not set)
  std::string claim_template;  // resourceClaimTemplateName ("" when not set)
};
// The template's claims (entries with neither or both names are left out: the API server refuses
// them, and a rule of its own says so).
[[nodiscard]] std::vector<PodClaim> pod_claims(Node pod_spec);

// The claims of every pod template of the object.
[[nodiscard]] std::vector<PodClaim> pod_claims(const Object& obj);

// For a rule that decides in `check` whether a GPU workload lacks something: a finding that stands
// only if the object's claims give GPUs, held until `finish` resolves them.
struct DraHeld {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  std::string message;
  std::optional<json> fix;
  std::vector<PodClaim> claims;
};
struct DraHeldState final : RuleState {
  Records<DraHeld> held;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { append(held, static_cast<DraHeldState&>(later).held); }
};
// Reports the finding now when `claims` is empty (the object asks for GPUs in its resources), else
// holds it in `held` for report_held.
void report_or_hold(CheckContext& ctx, Records<DraHeld>& held, const std::vector<PodClaim>& claims, std::string pointer,
                    std::string message, std::optional<json> fix = std::nullopt);
// Reports each held finding whose claims give GPUs (in its object's namespace), with where they come
// from appended to the message.
void report_held(FinishContext& ctx, const Records<DraHeld>& held);

// How the devices of a request are shared between the containers and pods that use them, from the
// opaque config of NVIDIA's driver (GpuConfig, MigDeviceConfig: `sharing.strategy`).
enum class DraSharing : uint8_t { none, time_slicing, mps, other };

// A GPU request (or a `firstAvailable` sub-request) of a claim a template uses.
struct DraGpuRequest {
  std::string pod_claim;       // the pod's claim entry
  std::string source;          // "ResourceClaimTemplate team-a/one-gpu" or "ResourceClaim team-a/shared"
  std::string request;         // the request's name ("gpu", or "gpu/big" for a sub-request)
  std::string device_class;
  int64_t count = 1;           // devices (ExactCount's `count`, default 1); for All: 32, the most a claim may get
  bool all = false;            // allocationMode All: every matching device, how many is unknown
  bool alternative = false;    // one of several `firstAvailable` sub-requests: it may not be the one chosen
  bool shared = false;         // the claim is named by resourceClaimName: every pod naming it shares its devices
  bool admin_access = false;
  // A constraint of the claim keeps this request's devices under one PCIe root
  // (`matchAttribute: resource.kubernetes.io/pcieRoot`, which NVIDIA's driver publishes).
  bool pcie_aligned = false;
  DraSharing sharing = DraSharing::none;
  // Equality terms of the request's (and its class's) CEL selectors on the driver's attributes:
  // `device.attributes['gpu.nvidia.com'].profile == '1g.5gb'`. Empty when no selector names the
  // attribute; `*_unknown` when one names it in any other form (never guessed).
  std::string profile, product;
  bool profile_unknown = false, product_unknown = false;
};

struct DraGpus {
  std::vector<DraGpuRequest> requests;  // the GPU requests found
  // Claims (or DeviceClasses named by a request) the inventory does not hold: which GPUs they give is
  // unknown. "ResourceClaimTemplate team-a/x".
  std::vector<std::string> missing;
  // Whether the template gets GPUs through DRA: a GPU request was found.
  [[nodiscard]] bool any() const { return !requests.empty(); }
  // Whether what its claims give is fully known.
  [[nodiscard]] bool known() const { return missing.empty(); }
};

// The claims of `claims` (a template's, in namespace `ns`) resolved against the inventory:
// ResourceClaimTemplates and ResourceClaims of the namespace, DeviceClasses of the cluster. A request
// is a GPU request when its class matches `gpu_classes`, or is a DeviceClass of the inventory whose
// selectors name the driver `gpu.nvidia.com` (`device.driver == 'gpu.nvidia.com'`).
[[nodiscard]] DraGpus resolve_dra_gpus(const Inventory& inv, std::string_view ns, const std::vector<PodClaim>& claims,
                                       const std::vector<std::string>& gpu_classes);
// The same, for the requests of one ResourceClaim spec (`spec` of a ResourceClaim, `spec.spec` of a
// template), with `source` and `pod_claim` copied into each request.
void dra_gpu_requests(const Inventory* inv, Node claim_spec, const std::vector<std::string>& gpu_classes,
                      const std::string& pod_claim, const std::string& source, bool shared, DraGpus& out);

// "through DRA (claim gpu: ResourceClaimTemplate team-a/one-gpu, DeviceClass gpu.nvidia.com)", for a
// message about a template whose GPUs come from claims; "and N more requests" past the first.
[[nodiscard]] std::string dra_summary(const DraGpus& gpus);

// The value a CEL selector compares an attribute of NVIDIA's driver with, when the expression is a
// conjunction (`&&`) of plain comparisons and one of them is `<attr> == '<value>'` on
// `device.attributes['gpu.nvidia.com'].<attr>` (or `["<attr>"]`). nullopt when the expression does not
// name the attribute; "" with `unknown` set when it names it in any other form.
struct CelTerm {
  std::optional<std::string> value;
  bool unknown = false;
};
[[nodiscard]] CelTerm cel_attribute_equality(std::string_view expression, std::string_view attribute);

// Whether the DRAExtendedResource feature gate (KEP-5004: DeviceClass `extendedResourceName`, and
// quota counting claims under `requests.<extended resource>`) is on by default in this Kubernetes
// version ("1.36", "v1.35.2"): beta and on from 1.36 (facts/modern-stack.md §1). A version that does
// not parse counts as the default version.
[[nodiscard]] bool dra_extended_resource_on(std::string_view kubernetes_version);

// Each CEL selector expression of a DeviceClass (`spec.selectors`), ResourceClaim or
// ResourceClaimTemplate (each request's: v1/v1beta2 `exactly`, each `firstAvailable` sub-request,
// v1beta1's request itself), with its JSON pointer; `group` numbers the (sub-)request it belongs to
// (all of a DeviceClass's share 0). Views into the object's tree.
struct DraSelectorExpr {
  std::string pointer;
  std::string_view expression;
  size_t group = 0;
};
[[nodiscard]] std::vector<DraSelectorExpr> dra_selector_expressions(const Object& obj);

}  // namespace gpuguard::engine
