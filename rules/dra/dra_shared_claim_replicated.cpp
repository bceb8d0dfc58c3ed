// dra-shared-claim-replicated: a pod template of several replicas names a GPU ResourceClaim by
// resourceClaimName, so every replica shares the same devices.

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// resource/v1 ResourceClaimReservedForMaxSize (kubernetes/api @10b39a39, the same at v0.34.0).
constexpr int64_t kReservedForMaxSize = 256;

struct Use {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  std::string claim;     // the ResourceClaim's name
  std::string pod_claim; // the pod's claim entry
  int64_t replicas = 0;
  std::string what;      // "pod template", "pod template (Worker)"
};

struct State final : RuleState {
  Records<Use> uses;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { append(uses, static_cast<State&>(later).uses); }
};

// NVIDIA's ComputeDomain channel classes (compute-domain-default-channel.nvidia.com,
// compute-domain-daemon.nvidia.com: NVIDIA/k8s-dra-driver-gpu chart templates @22407113): a channel
// is meant to be shared by the workers of a ComputeDomain.
bool compute_domain_class(std::string_view cls) { return cls.starts_with("compute-domain-") && cls.ends_with(".nvidia.com"); }

class DraSharedClaimReplicated final : public Rule {
 public:
  DraSharedClaimReplicated() {
    info_.id = "dra-shared-claim-replicated";
    info_.severity = Severity::warning;
    info_.category = "dra";
    info_.seed = "9.2";
    info_.summary =
        "A pod template of several replicas (a Deployment, StatefulSet, parallel Job, training job, ...) names a GPU "
        "ResourceClaim by resourceClaimName: every replica shares the same devices, on one node";
    info_.rationale =
        "`spec.resourceClaims[].resourceClaimName` names one ResourceClaim object, and every pod that names it uses "
        "the devices allocated to that one claim. In a pod template of several replicas that means: every replica "
        "gets the same GPU(s), the replicas all run on the node where the claim was allocated (its allocation's node "
        "selector), they share the GPU's memory and time without any isolation, and at most "
        "`ResourceClaimReservedForMaxSize` = 256 pods can reserve the claim at once (`status.reservedFor`; "
        "kubernetes/api `resource/v1/types.go`): replicas past that stay Pending. Scaling the Deployment up adds "
        "pods to the same GPU, not GPUs. What a replicated workload means is `resourceClaimTemplateName`: the "
        "resource claim controller makes one claim per pod from the template, and each replica gets devices of "
        "its own (`core/v1` PodResourceClaim).\n\n"
        "Sharing one claim is right when it is meant: a GPU time-sliced or shared with MPS between the containers "
        "of one pod, a ComputeDomain's IMEX channel, which the workers of one ComputeDomain share (NVIDIA's "
        "classes `compute-domain-default-channel.nvidia.com` and `compute-domain-daemon.nvidia.com` are not "
        "reported). Kueue refuses a workload that names a `resourceClaimName` at all (\"KueueDRAIntegration feature "
        "does not support use of resource claims\", facts/modern-stack.md §3).\n\n"
        "Reported for templates known to stand for more than one pod: Deployments, StatefulSets, ReplicaSets "
        "and ReplicationControllers with `replicas` > 1, Jobs and CronJobs with `parallelism` > 1, Kubeflow "
        "replica types, JobSet replicated jobs, Ray worker groups, LeaderWorkerSet groups and Volcano tasks of "
        "more than one pod. A claim the input (or the cluster state) does not hold, or one without a GPU request, "
        "is not reported.";
    info_.remediation =
        "Name a ResourceClaimTemplate with the same requests (`resourceClaimTemplateName`) so that each replica "
        "gets a claim, and devices, of its own. If the replicas really are meant to share one GPU, run one pod with "
        "several containers, or lower the replicas to 1.";
    info_.checks = pod_template_kinds();
    info_.reads = dra_kinds();
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "facts/modern-stack.md §1 — a template gives each pod its own claim; `resourceClaimName` makes all its pods "
        "share the same devices (≤ ResourceClaimReservedForMaxSize = 256 consumers); re-read in kubernetes/api "
        "`resource/v1/types.go` @10b39a39 (ResourceClaimReservedForMaxSize = 256, `reservedFor` \"There can be at most "
        "256 such reservations\") and `core/v1/types.go` (PodResourceClaim).",
        "ComputeDomain channel classes: NVIDIA/k8s-dra-driver-gpu @22407113 "
        "`deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-compute-domain-default-channel.yaml` and "
        "`deviceclass-compute-domain-daemon.yaml`.",
        "Kueue: kubernetes-sigs/kueue @ff69552e `workload_controller.go` (\"KueueDRAIntegration feature does not support "
        "use of resource claims\"), facts/modern-stack.md §3.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.example_bad = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu
  namespace: team-a
spec:
  devices:
    requests:
      - name: gpu
        exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  namespace: team-a
spec:
  replicas: 4
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      resourceClaims:
        - name: gpu
          resourceClaimName: gpu
      containers:
        - name: vllm
          image: vllm/vllm-openai
          resources:
            claims: [{name: gpu}]
)";
    info_.example_good = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu
  namespace: team-a
spec:
  spec:
    devices:
      requests:
        - name: gpu
          exactly: {deviceClassName: gpu.nvidia.com}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: serve
  namespace: team-a
spec:
  replicas: 4
  selector: {matchLabels: {app: serve}}
  template:
    metadata: {labels: {app: serve}}
    spec:
      resourceClaims:
        - name: gpu
          resourceClaimTemplateName: gpu
      containers:
        - name: vllm
          image: vllm/vllm-openai
          resources:
            claims: [{name: gpu}]
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (!obj.is_kubernetes_object()) return;
    for (const auto& t : pod_templates(obj)) {
      if (!t.replicas || *t.replicas <= 1) continue;
      const Node rcs = member(t.spec, "resourceClaims");
      if (!rcs.is_array()) continue;
      size_t i = 0;
      for (Node rc : rcs) {
        const std::string p = t.spec_pointer() + "/resourceClaims/" + std::to_string(i++);
        const auto claim = string_at(rc, "resourceClaimName");
        if (!claim || claim->empty() || member(rc, "resourceClaimTemplateName")) continue;
        Use u;
        u.object = ctx.ref();
        u.pointer = p + "/resourceClaimName";
        u.pos = ctx.position_of(u.pointer);
        u.claim = std::string(*claim);
        u.pod_claim = std::string(string_at(rc, "name").value_or(""));
        u.replicas = *t.replicas;
        u.what = t.pointer.empty() ? "pod" : t.role.empty() ? "pod template" : "pod template (" + t.role + ")";
        static_cast<State*>(ctx.state())->uses.push_back(std::move(u));
      }
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    for (const auto& u : static_cast<State*>(ctx.state())->uses) {
      const Object* claim = inv.find(kResourceGroup, "ResourceClaim", u.object.namespace_(), u.claim);
      if (!claim) continue;  // not in the input: what it gives is unknown
      DraGpus gpus;
      std::string source;
      source.reserve(u.object.namespace_().size() + u.claim.size() + 16);
      source.append("ResourceClaim ").append(u.object.namespace_()).append("/").append(u.claim);
      dra_gpu_requests(&inv, member(claim->root(), "spec"), ctx.settings().gpu_device_classes, u.pod_claim, source, true, gpus);
      std::erase_if(gpus.requests, [](const DraGpuRequest& r) { return compute_domain_class(r.device_class); });
      if (!gpus.any()) continue;
      const DraGpuRequest& r = gpus.requests.front();
      std::string msg;
      msg.reserve(u.what.size() + source.size() + r.device_class.size() + 420);
      msg.append("the ").append(u.what).append(" stands for ").append(std::to_string(u.replicas));
      msg.append(" pods, and each names ").append(source).append(" (DeviceClass ").append(r.device_class);
      msg.append(") by resourceClaimName: every replica shares that one claim's devices, so all of them run on the node "
                 "where it is allocated and share its GPU");
      if (u.replicas > kReservedForMaxSize)
        msg.append(", and only 256 pods can reserve a claim (ResourceClaimReservedForMaxSize): the other ")
            .append(std::to_string(u.replicas - kReservedForMaxSize))
            .append(" stay Pending");
      msg.append("; name a ResourceClaimTemplate (resourceClaimTemplateName) for a claim per pod");
      ctx.report(u.object, u.pointer, u.pos, std::move(msg));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_dra_shared_claim_replicated() { return std::make_unique<DraSharedClaimReplicated>(); }

}  // namespace gpuguard::rules
