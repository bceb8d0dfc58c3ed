// mig-distributed-training: a multi-replica training workload whose pods request MIG slices.

#include <iterator>
#include <limits>
#include <set>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

bool is_training_kind(const Object& obj) {
  const auto& g = obj.gvk.group;
  const auto& k = obj.gvk.kind;
  if (g == "kubeflow.org") return k == "PyTorchJob" || k == "MPIJob" || k == "TFJob" || k == "JAXJob" || k == "PaddleJob";
  return (g == "jobset.x-k8s.io" && k == "JobSet") || (g == "batch.volcano.sh" && k == "Job") || (g == "batch" && k == "Job");
}

class MigDistributedTraining final : public Rule {
 public:
  MigDistributedTraining() {
    info_.id = "mig-distributed-training";
    info_.severity = Severity::warning;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "A multi-replica training workload requests MIG slices: NCCL across MIG instances is not supported";
    info_.rationale =
        "Seed 9.1: training uses whole GPUs (or the largest MIG profile), because NCCL across MIG "
        "instances is limited. NVIDIA's MIG User Guide says plainly \"NCCL is currently not supported "
        "with MIG\"; CUDA P2P works only between MIG instances of the same GPU and CUDA IPC not across "
        "GPU instances, so collective communication falls back to shared memory or the network, if it "
        "works at all (NCCL ≥ 2.31 supports MIG experimentally, with a CUDA 13 driver, without NVLink "
        "P2P or NVLS).\n\n"
        "The rule reports a PyTorchJob, MPIJob, TFJob, JAXJob, PaddleJob, JobSet, Volcano Job or batch Job "
        "whose pods add up to more than one and that request `nvidia.com/mig-*`, and a Volcano PodGroup "
        "with `minMember` > 1 whose `minResources` count MIG slices. A single-pod job on one MIG "
        "slice (fine-tuning, notebooks) is left alone, and so are Deployments (inference replicas do not "
        "talk NCCL to each other).\n\n"
        "MIG slices through Dynamic Resource Allocation count too: a claim (ResourceClaimTemplate or ResourceClaim, in "
        "the input or the cluster state) of the job's pods with a request of NVIDIA's class `mig.nvidia.com`, or a CEL "
        "selector on the attribute `profile` (`device.attributes['gpu.nvidia.com'].profile == '1g.10gb'`), which only "
        "the driver's MIG devices have (NVIDIA/k8s-dra-driver-gpu `cmd/gpu-kubelet-plugin/mig.go` CommonAttributesMig, "
        "`deployments/helm/dra-driver-nvidia-gpu/templates/deviceclass-mig.yaml` @22407113, v0.4.0-rc.1+14). A claim "
        "the input does not hold is not guessed at.";
    info_.remediation =
        "Request whole GPUs (`nvidia.com/gpu`) for distributed training, or run the job as one pod on "
        "the largest profile (`7g.*`). If the job really is a set of independent pods (an indexed Job "
        "of single-GPU tasks), exempt it with the `gpuguard.io/ignore` annotation and a reason.";
    info_.facts = {
        "Seed 9.1 (design.md §1): training uses whole GPUs or the largest MIG; NCCL across MIG instances is limited.",
        "facts/nvidia.md §7 — MIG User Guide deployment-considerations: \"NCCL is currently not supported with MIG\", "
        "P2P only between MIG instances of one GPU (R570), no CUDA IPC across GPU instances; NCCL 2.31 experimental MIG "
        "support (source URL UNVERIFIED in the facts); NVIDIA/nccl#1716 maintainer comment (no CUDA P2P between MIG instances).",
    };
    info_.checks = {KindRef{"kubeflow.org", "PyTorchJob"}, KindRef{"kubeflow.org", "MPIJob"},   KindRef{"kubeflow.org", "TFJob"},
                    KindRef{"kubeflow.org", "JAXJob"},     KindRef{"kubeflow.org", "PaddleJob"}, KindRef{"jobset.x-k8s.io", "JobSet"},
                    KindRef{"batch.volcano.sh", "Job"},    KindRef{"batch", "Job"},              KindRef{"scheduling.volcano.sh", "PodGroup"}};
    info_.reads = dra_kinds();
    info_.example_bad = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: finetune
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/mig-3g.40gb: 1
)";
    info_.example_good = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: finetune
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<mig::DraPending>(); }

  void finish(FinishContext& ctx) const override {
    for (const auto& t : static_cast<mig::DraPending*>(ctx.state())->templates) {
      const DraGpus gpus = resolve_dra_gpus(ctx.inventory(), t.ref.namespace_(), t.claims, ctx.settings().gpu_device_classes);
      const DraGpuRequest* slice = nullptr;
      for (const auto& r : gpus.requests)
        if (mig::dra_mig(r)) {
          slice = &r;
          break;
        }
      if (!slice) continue;
      std::string msg;
      msg.reserve(400 + t.ref.kind().size() + slice->profile.size() + slice->pod_claim.size() + slice->source.size() +
                  slice->request.size() + slice->device_class.size());
      msg.append(t.ref.kind()).append(" runs ").append(std::to_string(t.pods)).append(" pods that get MIG slices");
      if (!slice->profile.empty()) msg.append(" (profile ").append(slice->profile).append(")");
      msg.append(" through DRA (claim ").append(slice->pod_claim).append(": ").append(slice->source).append(", request ");
      msg.append(slice->request).append(", DeviceClass ").append(slice->device_class);
      msg.append("): NCCL is not supported across MIG instances (no CUDA P2P or IPC between GPU instances), so distributed "
                 "training on MIG slices fails or crawls; request whole GPUs (DeviceClass gpu.nvidia.com) (seed 9.1)");
      ctx.report(t.ref, t.pointer, t.pos, std::move(msg));
    }
  }

  void check(const Object& obj, CheckContext& ctx) const override {
    if (obj.is("scheduling.volcano.sh", "PodGroup")) {
      check_pod_group(obj, ctx);
      return;
    }
    if (!is_training_kind(obj)) return;
    int64_t pods = 0;
    std::set<std::string> profiles;
    std::string first_ptr;
    mig::DraTemplate dra;
    for (const auto& t : pod_templates(obj)) {
      const int64_t r = t.replicas.value_or(1);
      if (r <= 0) continue;
      pods = sat_add(pods, r);
      if (auto claims = pod_claims(t.spec); !claims.empty()) {
        if (dra.claims.empty()) dra.pointer = t.spec_pointer() + "/resourceClaims";
        dra.claims.insert(dra.claims.end(), std::make_move_iterator(claims.begin()), std::make_move_iterator(claims.end()));
      }
      for (const auto& c : containers(t))
        for (const auto res : mig::nvidia_resources(c))
          if (auto p = mig::mig_resource_profile(res)) {
            if (profiles.empty()) first_ptr = c.pointer + "/resources";
            profiles.insert("nvidia.com/mig-" + *p);
          }
    }
    if (pods <= 1) return;
    if (profiles.empty()) {
      if (dra.claims.empty()) return;
      dra.ref = ctx.ref();
      dra.pos = ctx.position_of(dra.pointer);
      dra.pods = pods;
      static_cast<mig::DraPending*>(ctx.state())->templates.push_back(std::move(dra));
      return;
    }
    std::string list;
    for (const auto& p : profiles) list += (list.empty() ? "" : ", ") + p;
    ctx.report(first_ptr, obj.gvk.kind + " runs " + std::to_string(pods) + " pods that request " + list +
                              ": NCCL is not supported across MIG instances (no CUDA P2P or IPC between GPU instances), so "
                              "distributed training on MIG slices fails or crawls; request whole GPUs (seed 9.1)");
  }

 private:
  static void check_pod_group(const Object& obj, CheckContext& ctx) {
    const Node spec = member(obj.root(), "spec");
    if (!spec) return;
    auto min_member = int_at(spec, "minMember");
    if (!min_member || *min_member <= 1) return;
    const Node mr = member(spec, "minResources");
    if (!mr.is_object()) return;
    // The first MIG resource in key order (one finding per PodGroup), whatever the document's order.
    std::optional<std::string_view> first;
    for (const auto [name, v] : mr.items()) {
      const std::string_view n = name.starts_with("requests.") ? name.substr(9) : name;
      if (!mig::mig_resource_profile(n)) continue;
      if (!first || name < *first) first = name;
    }
    if (!first) return;
    const std::string name(*first);
    const std::string n = name.starts_with("requests.") ? name.substr(9) : name;
    ctx.report("/spec/minResources/" + pointer_escape(name),
               "PodGroup gangs " + std::to_string(*min_member) + " pods that need " + n +
                   ": a gang on MIG slices is distributed training across MIG instances, which NCCL does not support; request whole GPUs (seed 9.1)");
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_distributed_training() { return std::make_unique<MigDistributedTraining>(); }

}  // namespace gpuguard::rules
