// kueue-queue-name-missing: a GPU workload in a Kueue-managed namespace without a queue label.

#include <algorithm>
#include <unordered_map>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

constexpr std::string_view kQueueLabel = "kueue.x-k8s.io/queue-name";

// A GPU workload without the label; decided in `finish`.
struct Unlabelled {
  ObjectRef ref;
  std::string metadata_ptr;  // the metadata Kueue reads the label from
  bool has_metadata = false;
  bool has_labels = false;
  Pos pos;
  // No GPU in its resources, but claims: a GPU workload if they resolve to GPUs (finish).
  std::vector<PodClaim> claims;
};

struct State final : RuleState {
  engine::Records<Unlabelled> unlabelled;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(unlabelled, static_cast<State&>(later).unlabelled); }
};

// Where Kueue reads the queue label of a kind it integrates: the workload's own metadata, or the
// job template's for a CronJob (its JSON pointer, and the metadata itself when it is there).
struct LabelMetadata {
  std::string_view pointer;
  Node value;
};

std::optional<LabelMetadata> label_metadata(const Object& obj) {
  const std::string& g = obj.gvk.group;
  const std::string& k = obj.gvk.kind;
  if (g == "batch" && k == "CronJob") return LabelMetadata{"/spec/jobTemplate/metadata", path(obj.root(), {"spec", "jobTemplate", "metadata"})};
  if ((g.empty() && k == "Pod") || (g == "batch" && k == "Job") || (g == "apps" && (k == "Deployment" || k == "StatefulSet")) ||
      (g == "leaderworkerset.x-k8s.io" && k == "LeaderWorkerSet") || (g == "jobset.x-k8s.io" && k == "JobSet") ||
      (g == "ray.io" && (k == "RayJob" || k == "RayCluster")) ||
      (g == "kubeflow.org" && (k == "PyTorchJob" || k == "TFJob" || k == "MPIJob" || k == "JAXJob" || k == "XGBoostJob" || k == "PaddleJob")))
    return LabelMetadata{"/metadata", member(obj.root(), "metadata")};
  return std::nullopt;
}

// Whether a controller owns the object (a Job of a CronJob or JobSet, a Pod of a Job, a RayCluster
// of a RayJob): Kueue manages the owner, which carries the label.
bool controlled(const Object& obj) {
  const Node owners = member(obj.metadata(), "ownerReferences");
  if (!owners.is_array()) return false;
  return std::any_of(owners.begin(), owners.end(), [](Node o) { return bool_at(o, "controller").value_or(false); });
}

class KueueQueueNameMissing final : public Rule {
 public:
  KueueQueueNameMissing() {
    info_.id = "kueue-queue-name-missing";
    info_.severity = Severity::warning;
    info_.category = "queue";
    info_.seed = "9.4";
    info_.summary = "A GPU workload in a Kueue-managed namespace has no `kueue.x-k8s.io/queue-name` label";
    info_.rationale =
        "Kueue admits only workloads that name a LocalQueue with the label `kueue.x-k8s.io/queue-name`; "
        "by default it ignores every job without it (unless the Kueue configuration sets "
        "`manageJobsWithoutQueueName`). Such a GPU job starts at once, outside every ClusterQueue's "
        "quota, fair sharing and preemption, and takes GPUs that admitted workloads were promised.\n\n"
        "A namespace counts as Kueue-managed when the parameter `kueueNamespaces` lists it, or when a "
        "LocalQueue exists in it (in the inventory). Kueue's own defaulting (LocalQueueDefaulting: "
        "beta and on by default since Kueue 0.12, GA in 0.17, always on since 0.19) labels a job "
        "`queue-name: default` when the namespace has a LocalQueue named `default`; the rule is then "
        "silent unless `kueueDefaulting` is false (an older Kueue, or the gate turned off). Objects "
        "owned by a controller (a Job of a CronJob or JobSet, a Pod of a Job) are skipped: Kueue reads "
        "the owner's label. For a CronJob the label belongs on `spec.jobTemplate.metadata`.\n\n";
    info_.rationale.append(kDraGpuTemplateDoc);
    info_.rationale.append(
        " (Kueue charges DRA devices to a ClusterQueue only for a DeviceClass mapped in its configuration's "
        "`resources.deviceClassMappings` — kubernetes-sigs/kueue `pkg/dra/claims.go` @ff69552e, facts/modern-stack.md §3 — "
        "but without the label it does not manage the job at all.)");
    info_.remediation =
        "Add `metadata.labels: {kueue.x-k8s.io/queue-name: <local-queue>}`. The fix adds the namespace's "
        "queue from `defaultQueues` (namespace → LocalQueue), or `default` when a LocalQueue named "
        "`default` exists there and `kueueDefaulting` is false; otherwise there is no fix. Creating a "
        "LocalQueue named `default` in each team namespace lets Kueue (≥ 0.12) do the same itself.";
    info_.checks = {KindRef{"", "Pod"},
                    KindRef{"batch", "Job"},
                    KindRef{"batch", "CronJob"},
                    KindRef{"apps", "Deployment"},
                    KindRef{"apps", "StatefulSet"},
                    KindRef{"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
                    KindRef{"jobset.x-k8s.io", "JobSet"},
                    KindRef{"ray.io", "RayJob"},
                    KindRef{"ray.io", "RayCluster"},
                    KindRef{"kubeflow.org", "PyTorchJob"},
                    KindRef{"kubeflow.org", "TFJob"},
                    KindRef{"kubeflow.org", "MPIJob"},
                    KindRef{"kubeflow.org", "JAXJob"},
                    KindRef{"kubeflow.org", "XGBoostJob"},
                    KindRef{"kubeflow.org", "PaddleJob"}};
    info_.reads = {KindRef{"kueue.x-k8s.io", "LocalQueue"}};
    info_.reads.insert(info_.reads.end(), dra_kinds().begin(), dra_kinds().end());
    info_.facts = {
        "facts/kubernetes-and-queues.md §3 — job label `kueue.x-k8s.io/queue-name` (kueue "
        "`pkg/controller/constants/constants.go`); jobs without it are ignored unless "
        "`manageJobsWithoutQueueName` is set; its default, false, is [U] in the facts and I read it in kueue "
        "`apis/config/v1beta1/configuration_types.go` (\"Defaults to false; therefore, those jobs are not managed and if "
        "they are created unsuspended, they will start immediately\"); default "
        "LocalQueue: a LocalQueue named `default` makes Kueue label jobs `queue-name: default` "
        "(`pkg/controller/jobframework/defaults.go`), gate LocalQueueDefaulting alpha 0.10, beta/on 0.12, GA "
        "0.17, removed (always on) in 0.19.",
        "facts/kubernetes-and-queues.md §5 — the Kubeflow, JobSet and Ray integrations use the same job label.",
    };
    info_.params = {
        ParamSpec{"kueueNamespaces", ParamType::string_list, json::array(),
                  "namespaces whose GPU workloads must go through Kueue (besides those with a LocalQueue in the inventory)",
                  std::nullopt, std::nullopt},
        ParamSpec{"defaultQueues", ParamType::string_map, json::object(),
                  "namespace → LocalQueue the fix puts in the label", std::nullopt, std::nullopt},
        ParamSpec{"kueueDefaulting", ParamType::boolean, true,
                  "Kueue labels jobs with a LocalQueue named `default` itself (LocalQueueDefaulting, Kueue ≥ 0.12)",
                  std::nullopt, std::nullopt},
    };
    info_.has_fix = true;
    info_.reads_parts = kPartLabels;  // the fix adds the label it looks for
    info_.fix_settles = true;
    info_.example_bad = R"(# gpuguard lint: the namespace has a LocalQueue, so Kueue manages it
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a-queue
  namespace: team-a
spec:
  clusterQueue: gpu-cluster-queue
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
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 1
)";
    info_.example_good = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: team-a-queue
  namespace: team-a
spec:
  clusterQueue: gpu-cluster-queue
---
apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels:
    kueue.x-k8s.io/queue-name: team-a-queue
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: train
          image: nvcr.io/nvidia/pytorch:24.06-py3
          resources:
            limits:
              nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    auto mp = label_metadata(obj);
    if (!mp || controlled(obj)) return;
    std::vector<PodClaim> claims;
    if (!requests_gpu(obj, ctx.settings().gpu_resources)) {
      claims = pod_claims(obj);  // GPUs through DRA, perhaps: decided in finish
      if (claims.empty()) return;
    }
    const Node md = mp->value;
    const Node labels = member(md, "labels");
    if (member(labels, kQueueLabel)) return;
    Unlabelled u;
    u.ref = ctx.ref();
    u.metadata_ptr = mp->pointer;
    u.has_metadata = md.is_object();
    u.has_labels = labels.is_object();
    u.pos = ctx.position_of(u.has_labels ? u.metadata_ptr + "/labels" : u.metadata_ptr);  // a missing one: its parent
    u.claims = std::move(claims);
    static_cast<State*>(ctx.state())->unlabelled.push_back(std::move(u));
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    const Inventory& inv = ctx.inventory();
    const auto& listed = ctx.params().strings("kueueNamespaces");
    const json* defaults = member(ctx.params().values(), "defaultQueues");
    const bool defaulting = ctx.params().boolean("kueueDefaulting");
    // Each namespace's LocalQueues are looked at once, whatever its workloads: linear in the
    // workloads and the queues.
    struct Queues {
      size_t count = 0;
      bool has_default = false;
      std::string names;  // the first three, and how many more
    };
    std::unordered_map<std::string_view, Queues> by_namespace;
    for (const auto& u : st->unlabelled) {
      const std::string& ns = u.ref.namespace_();
      if (!u.claims.empty() && !resolve_dra_gpus(inv, ns, u.claims, ctx.settings().gpu_device_classes).any()) continue;
      auto found = by_namespace.find(ns);
      if (found == by_namespace.end()) {
        const auto queues = inv.list("kueue.x-k8s.io", "LocalQueue", ns);
        Queues q;
        q.count = queues.size();
        q.has_default = std::any_of(queues.begin(), queues.end(), [](const Object* x) { return x->name == "default"; });
        for (size_t i = 0; i < queues.size() && i < 3; ++i) q.names += (q.names.empty() ? "" : ", ") + queues[i]->name;
        if (queues.size() > 3) q.names += " and " + std::to_string(queues.size() - 3) + " more";
        found = by_namespace.emplace(ns, std::move(q)).first;
      }
      const Queues& queues = found->second;
      const bool is_listed = std::find(listed.begin(), listed.end(), ns) != listed.end();
      if (!is_listed && queues.count == 0) continue;
      const bool has_default = queues.has_default;
      std::string queue, from;
      if (auto q = defaults ? string_at(*defaults, ns) : std::nullopt; q && !q->empty()) {
        queue = std::string(*q);
        from = "defaultQueues[" + ns + "]";
      } else if (has_default) {
        if (defaulting) continue;  // Kueue's LocalQueueDefaulting labels it `default` itself
        queue = "default";
        from = "the namespace's LocalQueue named default (Kueue's LocalQueueDefaulting is off: kueueDefaulting=false)";
      }
      std::string why;
      if (queues.count > 0) {
        why = "namespace " + ns + " has LocalQueue" + (queues.count == 1 ? " " : "s ") + queues.names;
      } else {
        why = "namespace " + ns + " is listed in kueueNamespaces";
      }
      std::string msg = "GPU workload without the label " + std::string(kQueueLabel) + " although " + why +
                        ": Kueue ignores it (unless manageJobsWithoutQueueName is set), so it runs outside every "
                        "ClusterQueue's GPU quota, fair sharing and preemption";
      std::optional<json> fix;
      if (!queue.empty()) {
        if (ctx.fixes_wanted()) {
          const std::string labels_ptr = u.metadata_ptr + "/labels";
          if (u.has_labels) {
            fix = patch_of(patch_op("add", pointer_join(labels_ptr, kQueueLabel), queue));
          } else {
            json labels(json::value_t::object);
            labels[std::string(kQueueLabel)] = queue;
            if (u.has_metadata) {
              fix = patch_of(patch_op("add", labels_ptr, std::move(labels)));
            } else {
              json metadata(json::value_t::object);
              metadata["labels"] = std::move(labels);
              fix = patch_of(patch_op("add", u.metadata_ptr, std::move(metadata)));
            }
          }
        }
        msg += " (fix: " + std::string(kQueueLabel) + ": " + queue + ", from " + from + ")";
      } else {
        msg += " (name one of the namespace's LocalQueues; defaultQueues gives a fix)";
      }
      ctx.report(u.ref, u.has_labels ? u.metadata_ptr + "/labels" : u.metadata_ptr, u.pos, std::move(msg), std::move(fix));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kueue_queue_name_missing() { return std::make_unique<KueueQueueNameMissing>(); }

}  // namespace gpuguard::rules
