// rdma-zone-affinity-missing: a pod template that uses RDMA with no required zone constraint.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <re2/re2.h>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "engine/json_parse.h"
#include "rules/all.h"
#include "rules/gang/membership.h"
#include "rules/schedulers.h"
#include "rules/topology/common.h"
#include "rules/topology/gang_member.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using namespace topology;

constexpr std::string_view kMultusAnnotation = "k8s.v1.cni.cncf.io/networks";

// Network names of a Multus annotation: "a, ns/b@eth1" or a JSON list of {name, namespace, ...}.
std::vector<std::string> multus_networks(std::string_view value) {
  std::vector<std::string> out;
  size_t first = value.find_first_not_of(" \t\n");
  if (first != std::string_view::npos && value[first] == '[') {
    json list = parse_json(value);
    if (!list.is_array()) return out;
    for (const auto& e : list)
      if (auto n = string_at(e, "name")) out.emplace_back(*n);
    return out;
  }
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(',', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view part = value.substr(start, end - start);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.front()))) part.remove_prefix(1);
    while (!part.empty() && std::isspace(static_cast<unsigned char>(part.back()))) part.remove_suffix(1);
    if (auto slash = part.find('/'); slash != std::string_view::npos) part.remove_prefix(slash + 1);
    if (auto at = part.find('@'); at != std::string_view::npos) part = part.substr(0, at);
    if (!part.empty()) out.emplace_back(part);
    start = end + 1;
  }
  return out;
}

constexpr std::string_view kVolcanoScheduler = "volcano";
// Pod annotations the Volcano PodGroup controller reads into the PodGroup it makes for a plain
// workload (volcano-sh/apis pkg/apis/topology/v1alpha1/labels.go), and KubeRay's labels for the
// PodGroup of a Ray cluster (ray-project/kuberay v1.7.0 batchscheduler/volcano/volcano_scheduler.go).
constexpr std::string_view kVolcanoModeAnnotation = "volcano.sh/network-topology-mode";
constexpr std::string_view kVolcanoTierAnnotation = "volcano.sh/network-topology-highest-tier";
constexpr std::string_view kRayVolcanoTierLabel = "volcano.sh/network-topology-highest-tier-allowed";

bool wider_than_zone(std::string_view label) {
  return label == "topology.kubernetes.io/region" || label == "failure-domain.beta.kubernetes.io/region";
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Whether a Volcano networkTopology (a Volcano Job's or a PodGroup's spec) keeps the job within one
// HyperNode; when it does not, why, in `weak`. The scheduler bounds a job only in hard mode with a
// tier: JobInfo.IsHardTopologyMode is false without highestTierAllowed (volcano-sh/volcano
// pkg/scheduler/api/job_info.go), which the session sets from highestTierName
// (pkg/scheduler/framework/session.go adjustNetworkTopologySpec); mode defaults to hard (CRD).
bool volcano_topology_bounds(Node nt, const std::string& what, std::vector<std::string>& weak) {
  if (!nt.is_object()) return false;
  const Node mode_node = member(nt, "mode");
  const std::string mode = mode_node ? std::string(string_at(nt, "mode").value_or("")) : "hard";
  if (mode == "soft") {
    weak.push_back(what + " networkTopology mode soft is only a preference");
    return false;
  }
  if (mode != "hard") {
    weak.push_back(what + " networkTopology mode \"" + mode + "\" is neither hard nor soft, so Volcano bounds nothing");
    return false;
  }
  if (as_int(member(nt, "highestTierAllowed"))) return true;
  if (auto name = string_at(nt, "highestTierName"); name && !name->empty()) return true;
  weak.push_back(what + " networkTopology is hard but sets neither highestTierAllowed nor highestTierName, so Volcano bounds nothing");
  return false;
}

// The same for the pod annotations of a plain workload that goes to Volcano (no PodGroup of its
// own): the PodGroup controller makes the PodGroup, hard unless the mode annotation says soft
// (an unknown mode is hard), with the tier annotation as highestTierAllowed
// (parseNetworkTopologyFromPod, pkg/controllers/podgroup/pg_controller_handler.go).
bool volcano_annotation_bounds(Node ann, std::string_view scheduler, std::vector<std::string>& weak) {
  auto mode = string_at(ann, kVolcanoModeAnnotation);
  auto tier = string_at(ann, kVolcanoTierAnnotation);
  if (!mode && !tier) return false;
  if (scheduler != kVolcanoScheduler) {
    weak.push_back("its annotations " + std::string(kVolcanoModeAnnotation) + "/" + std::string(kVolcanoTierAnnotation) +
                   " are read only for pods that go to Volcano (schedulerName volcano)");
    return false;
  }
  if (mode && lower(*mode) == "soft") {
    weak.push_back("its " + std::string(kVolcanoModeAnnotation) + " is soft, only a preference");
    return false;
  }
  if (!tier || !parse_int(*tier)) {
    weak.push_back(std::string("its Volcano network topology has no ") + (tier ? "integer " : "") + std::string(kVolcanoTierAnnotation) +
                   ", so Volcano bounds nothing");
    return false;
  }
  return true;
}

// KubeRay's labels on a RayCluster or RayJob, copied as they are into its Volcano PodGroup's
// networkTopology (mode only when the mode label is there).
bool ray_volcano_bounds(const Object& obj, std::vector<std::string>& weak) {
  auto mode = string_at(member(obj.metadata(), "labels"), kVolcanoModeAnnotation);
  if (!mode) return false;
  if (*mode != "hard") {
    weak.push_back("its label " + std::string(kVolcanoModeAnnotation) + ": " + std::string(*mode) +
                   (*mode == "soft" ? " is only a preference" : " is neither hard nor soft, so Volcano bounds nothing"));
    return false;
  }
  auto tier = string_at(member(obj.metadata(), "labels"), kRayVolcanoTierLabel);
  if (!tier || !parse_int(*tier)) {
    weak.push_back("its Volcano network topology has no integer " + std::string(kRayVolcanoTierLabel) + ", so Volcano bounds nothing");
    return false;
  }
  return true;
}

// Whether a controller made the object from a workload this rule checks itself (a Pod of a Job,
// a ReplicaSet of a Deployment, a worker StatefulSet of a LeaderWorkerSet leader pod) or skips (a
// Pod of a DaemonSet), or whether KAI schedules it and some controller owns it (KAI reads the
// placement on the top owner, which the object does not show).
bool made_by_checked_owner(const Object& obj, bool kai) {
  const Node owners = member(obj.metadata(), "ownerReferences");
  if (!owners.is_array()) return false;
  for (const Node o : owners) {
    if (bool_at(o, "controller") != std::optional<bool>(true)) continue;
    if (kai) return true;
    auto api = string_at(o, "apiVersion");
    auto kind = string_at(o, "kind");
    if (!api || !kind) continue;
    const Gvk gvk = parse_gvk(*api, *kind);
    for (const KindRef& k : pod_template_kinds())
      if (k.group == gvk.group && k.kind == gvk.kind) return true;
  }
  return false;
}

// A DRA claim or claim template (resource.k8s.io ResourceClaim, ResourceClaimTemplate) of the
// input: whether it asks for RDMA devices by itself (a class in rdmaDeviceClasses, a selector
// matching rdmaDeviceSelector) and the device classes it names (an RDMA DeviceClass, known in finish).
struct Claim {
  std::string ns;
  bool is_template = true;
  std::string name;
  std::string rdma;  // why it is RDMA by itself ("" when it is not)
  std::vector<std::string> classes;
};

// A finding that waits for `finish`: the PodGroup its pods name may hold them in one HyperNode,
// and the DRA claims they name may be RDMA.
struct Pending {
  ObjectRef object;
  std::string pointer;
  Pos pos;
  std::string what;     // the RDMA signals known in check ("" when only its DRA claims may be)
  std::string message;  // what holds the pods in one zone, and why not
  std::string remedy;   // what would
  std::optional<json> fix;
  std::string ns;
  std::string volcano_group;
  std::vector<std::pair<bool, std::string>> claims;  // (template?, name) the pods name
};

struct State final : RuleState {
  engine::Records<Pending> pending;
  engine::Records<Claim> claims;
  engine::Records<std::string> rdma_classes;  // DeviceClasses whose selectors pick RDMA devices
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override {
    auto& l = static_cast<State&>(later);
    engine::append(pending, l.pending);
    engine::append(claims, l.claims);
    engine::append(rdma_classes, l.rdma_classes);
  }
};

// The (device class, CEL expressions) of each device request of a DRA claim spec: resource.k8s.io
// v1 and v1beta2 under `exactly`, v1beta1 on the request itself, and every `firstAvailable`
// sub-request (k8s.io/api resource/v1 types.go DeviceRequest).
template <typename Visit>
void device_requests(Node devices, const Visit& visit) {
  const Node requests = member(devices, "requests");
  if (!requests.is_array()) return;
  auto one = [&](Node r) {
    if (!r.is_object()) return;
    std::vector<std::string_view> cel;
    if (const Node sel = member(r, "selectors"); sel.is_array())
      for (const Node x : sel)
        if (auto e = string_at(member(x, "cel"), "expression")) cel.push_back(*e);
    visit(string_at(r, "deviceClassName").value_or(""), cel);
  };
  for (const Node r : requests) {
    one(r);
    one(member(r, "exactly"));
    if (const Node fa = member(r, "firstAvailable"); fa.is_array())
      for (const Node sub : fa) one(sub);
  }
}

class RdmaZoneAffinityMissing final : public Rule {
 public:
  RdmaZoneAffinityMissing() {
    info_.id = "rdma-zone-affinity-missing";
    info_.severity = Severity::error;
    info_.category = "topology";
    info_.seed = "9.3";
    info_.summary = "A pod template uses RDMA but nothing requires its pods (or its gang) to stay in one zone";
    info_.rationale =
        "An RDMA fabric (InfiniBand, RoCE) does not span availability zones. The members of a "
        "distributed job that talk over RDMA must land in one zone, or NCCL falls back to TCP (if it "
        "can) or the job hangs at its first collective; seed 9.3: \"keep RDMA and storage in one "
        "zone\". Nothing in Kubernetes does this by itself: the scheduler places each pod on its own.\n\n"
        "**What counts as RDMA.** Any of: a container that requests (or limits) a resource matching "
        "`rdmaResources` (the RDMA shared device plugin's `rdma/*`, the network operator's "
        "`nvidia.com/hostdev` and `nvidia.com/mlnxnics`); a GPU pod that requests an SR-IOV VF pool "
        "matching `sriovResources` (`*/sriov*`, GPUDirect RDMA over VFs); a Multus annotation "
        "`k8s.v1.cni.cncf.io/networks` naming a network that matches `rdmaNetworks` (default: a name "
        "containing rdma, roce, infiniband or ipoib). Not RDMA: an SR-IOV VF in a pod without a GPU "
        "(plain Ethernet or DPDK as often as RDMA; whether a pool is RDMA is its `isRdma` selector, which "
        "the pod does not show), and a Multus annotation naming other networks: Multus attaches any "
        "secondary network (macvlan, bridge, a VF for DPDK), and RDMA devices reach a pod only through a "
        "device-plugin resource or a DRA claim. RDMA NICs through DRA: a pod template's "
        "`resourceClaims` naming a ResourceClaimTemplate or ResourceClaim of the input whose device request "
        "is of a class in `rdmaDeviceClasses` (DraNet's `dranet.net`), or of a DeviceClass whose selectors "
        "match `rdmaDeviceSelector`, or has a CEL selector matching it (DraNet's attribute "
        "`device.attributes[\"dra.net\"].rdma`: kubernetes-sigs/dranet `examples/distributed_training`, "
        "`examples/demo_gke_rdma` @f258477c, v1.4.0+70). The claims are other objects, so this is seen by "
        "`lint` and `audit` (which list them); the webhook, whose cluster state holds no claims, does not "
        "see it and says nothing about a pod whose only RDMA is a DRA claim.\n\n"
        "**What counts as a zone constraint** (required, never preferred), each scheduler's own way included:\n\n"
        "- a `nodeSelector` or required node affinity that allows exactly one value of "
        "`topology.kubernetes.io/zone` (or of a narrower label in `zoneLabels`, e.g. `kubernetes.io/hostname`);\n"
        "- a required pod affinity with such a `topologyKey` that selects the pod's own gang (any "
        "selector when the gang is not known);\n"
        "- Kueue's `kueue.x-k8s.io/podset-required-topology` or `podset-slice-required-topology` "
        "annotation on any level but a region;\n"
        "- JobSet's `alpha.jobset.sigs.k8s.io/exclusive-topology` on a label in `zoneLabels` (it keeps "
        "each child Job's pods in one domain, one Job per domain);\n"
        "- LeaderWorkerSet's `leaderworkerset.sigs.k8s.io/exclusive-topology` on a label in `zoneLabels`, "
        "on the LeaderWorkerSet: the LWS pod webhook gives each group's leader a required pod affinity "
        "on that key over the group (and an anti-affinity against other groups), and the controller "
        "gives the group's worker StatefulSet a `nodeSelector` on the leader's value of it "
        "(kubernetes-sigs/lws `pkg/webhooks/pod_webhook.go` SetExclusiveAffinities, "
        "`pkg/controllers/pod_controller.go` setNodeSelectorForWorkerPods, @060ab4da, v0.10.0+11). "
        "`leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology` counts when a group is one subgroup "
        "(`subGroupSize` = `size`); with more subgroups it keeps each subgroup in one domain and lets the "
        "group's subgroups land in different zones (on the zone key they must: each subgroup's "
        "anti-affinity keeps the others out of its zone), and LWS's own docs add that related subgroups "
        "should still stay in one zone (`site/content/en/docs/concepts/_index.md`): it is reported;\n"
        "- Volcano network-topology-aware scheduling over HyperNodes: a Volcano Job's or PodGroup's "
        "`networkTopology` in hard mode (the default mode) with `highestTierAllowed` or "
        "`highestTierName` keeps the job in one HyperNode of that tier, HyperNodes being the RDMA "
        "fabric's domains. Hard mode without a tier bounds nothing (JobInfo.IsHardTopologyMode, "
        "volcano-sh/volcano `pkg/scheduler/api/job_info.go` @ed72c7c8, v1.16.0-alpha.1+42), soft mode "
        "is a preference, a task's `partitionPolicy.networkTopology` bounds each partition, not the job. "
        "Pods that name a PodGroup (`scheduling.k8s.io/group-name`) are held by the PodGroup's "
        "`networkTopology` when the PodGroup is in the input or the cluster state; a plain workload "
        "that goes to Volcano by the pod annotations `volcano.sh/network-topology-mode` and "
        "`volcano.sh/network-topology-highest-tier` (`pkg/controllers/podgroup/pg_controller_handler.go`), "
        "and a RayCluster or RayJob by KubeRay's labels `volcano.sh/network-topology-mode: hard` and "
        "`volcano.sh/network-topology-highest-tier-allowed` (ray-project/kuberay v1.7.0 "
        "`batchscheduler/volcano/volcano_scheduler.go`);\n"
        "- KAI Scheduler: `kai.scheduler/topology` and `kai.scheduler/topology-required-placement` on "
        "the top owner (the workload, not its pod templates) on any level but a region, for pods that "
        "go to KAI (`kaiScheduler`). KAI applies no constraint without `kai.scheduler/topology`, and "
        "keeps a PodGroup's pods in one domain of the level (NVIDIA/KAI-Scheduler "
        "`pkg/podgrouper/podgrouper/plugins/defaultgrouper/default_grouper.go`, "
        "`pkg/scheduler/plugins/topology/job_filtering.go` @72de64fc, v0.13.0-rc1+142); but KAI makes "
        "one PodGroup per pod of a batch Job or Deployment (`plugins/job/job_grouper.go`, "
        "`plugins/deployment/deployment_grouper.go`), so for those the placement binds each pod alone "
        "and is reported when they run more than one pod (KAI's `docs/topology` shows a parallel Job "
        "placed as one; its code does not). `topology-preferred-placement` is only a score.\n\n"
        "A preferred affinity or Kueue's `podset-preferred-topology` is only a score: the scheduler "
        "still splits the job when the preferred zone is full, and the message says so. DaemonSets (one "
        "pod per node, e.g. an RDMA device plugin or a network test) and their pods are skipped, and so are "
        "objects a controller makes from a workload this rule checks (a Pod of a Job, a ReplicaSet of a "
        "Deployment, the StatefulSets of a LeaderWorkerSet) and every owned object KAI schedules: the "
        "workload was checked, and what its controller or scheduler adds later (a PodGroup's topology, "
        "the LWS webhook's affinity) is not on them.\n\n"
        "The severity is `error` because a split RDMA job does not work, not because the API rejects "
        "it; lower it in the config where every RDMA node is in one zone.";
    info_.remediation =
        "Keep the gang in one zone without naming one: a required pod affinity on "
        "`topology.kubernetes.io/zone` that selects the gang's own pods (the first pod may go anywhere: "
        "the scheduler lets a pod that matches its own affinity term start a group). Or require a "
        "zone by node affinity, or use the scheduler's placement: Kueue topology-aware scheduling "
        "(`kueue.x-k8s.io/podset-required-topology`), LeaderWorkerSet's `exclusive-topology`, "
        "Volcano's `networkTopology` (hard, with a tier), KAI's `topology-required-placement`.\n\n"
        "The fix, for a pod that belongs to a gang with a known label (coscheduling "
        "`scheduling.x-k8s.io/pod-group`, Volcano `volcano.sh/job-name`, Kubeflow "
        "`training.kubeflow.org/job-name`, JobSet `jobset.sigs.k8s.io/jobset-name`), adds "
        "`podAffinity.requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: "
        "{<label>: <gang>}}, topologyKey: topology.kubernetes.io/zone}]`.";
    info_.checks = pod_template_kinds_except({KindRef{"apps", "DaemonSet"}});  // skipped below
    info_.reads = {KindRef{"scheduling.volcano.sh", "PodGroup"}};
    info_.observes = {KindRef{"resource.k8s.io", "ResourceClaimTemplate"}, KindRef{"resource.k8s.io", "ResourceClaim"},
                      KindRef{"resource.k8s.io", "DeviceClass"}};
    // NOLINTBEGIN(bugprone-suspicious-missing-comma): each fact is one string, written over several lines.
    info_.facts = {
        "Seed 9.3 (design.md §1): keep RDMA and storage in one zone.",
        "facts/kubernetes-and-queues.md §6 — RDMA resource names: k8s-rdma-shared-dev-plugin prefix `rdma` "
        "(`rdma/hca_shared_devices_a`), network-operator `nvidia.com/hostdev`, `nvidia.com/mlnxnics`, SR-IOV "
        "device plugin pools with per-pool prefixes; the Multus annotation `k8s.v1.cni.cncf.io/networks` as a "
        "name list or JSON array; zone label `topology.kubernetes.io/zone`.",
        "facts/kubernetes-and-queues.md §3 — Kueue TAS pod-template annotations "
        "`kueue.x-k8s.io/podset-required-topology`, `-preferred-topology`, `-slice-required-topology` "
        "(kueue `apis/kueue/v1beta2/topology_types.go`).",
        "facts/kubernetes-and-queues.md §4, §5 — gang labels: coscheduling `scheduling.x-k8s.io/pod-group`, "
        "Volcano annotation `scheduling.k8s.io/group-name`; JobSet `alpha.jobset.sigs.k8s.io/exclusive-topology`. "
        "Pod labels read in the upstream source: Volcano `JobNameKey = \"volcano.sh/job-name\"` "
        "(volcano-sh/apis `pkg/apis/batch/v1alpha1/labels.go`), Kubeflow `JobNameLabel = "
        "\"training.kubeflow.org/job-name\"` (training-operator `common_types.go`), JobSet `JobSetNameKey = "
        "\"jobset.sigs.k8s.io/jobset-name\"` (jobset `api/jobset/v1alpha2/jobset_types.go`).",
        "facts/modern-stack.md §4 — LeaderWorkerSet exclusive placement, read at kubernetes-sigs/lws @060ab4da "
        "(v0.10.0+11): `pkg/webhooks/pod_webhook.go` (the leader's affinity and anti-affinity, a subgroup's on "
        "its own hash), `pkg/controllers/pod_controller.go` (the worker StatefulSet's nodeSelector, only for "
        "`exclusive-topology` on the LeaderWorkerSet), `pkg/webhooks/leaderworkerset_webhook.go` "
        "(`subGroupSize` ≤ `size`, size or size − 1 divisible by it).",
        "facts/modern-stack.md §3 — Volcano networkTopology, read at volcano-sh/volcano @ed72c7c8: mode "
        "`+kubebuilder:default=hard` (staging volcano.sh/apis `scheduling/v1beta1/types.go`, "
        "`batch/v1alpha1/job.go`); `IsHardTopologyMode` false without `highestTierAllowed` "
        "(`pkg/scheduler/api/job_info.go`), `highestTierName` translated to it per session and ignored when no "
        "HyperNode has that tier name (`pkg/scheduler/framework/session.go`, docs/design Network Topology "
        "Aware Scheduling.md \"Default Behavior\"); the job controller copies the job's networkTopology to its "
        "PodGroup and a partition's to a subgroup policy (`pkg/controllers/job/job_controller_actions.go`).",
        "facts/modern-stack.md §2 — KAI Scheduler topology, read at NVIDIA/KAI-Scheduler @72de64fc (v0.13 "
        "era; latest release tag v0.13.0): the annotations from the top owner only (`default_grouper.go`), no "
        "constraint without `kai.scheduler/topology` (`job_filtering.go` getJobTopology), pending pods kept in "
        "the domain of the PodGroup's running ones under a required level (getRelevantDomainsWithAllocatedPods), "
        "one PodGroup per pod for batch Jobs and Deployments (`job_grouper.go`, `deployment_grouper.go`). "
        "The [I] fact \"min = group size under LeaderCreated\" is confirmed in `lws_grouper.go`.",
        "Inter-pod affinity: when no pod in the cluster matches a pod's required affinity terms and the pod "
        "matches its own terms, the Filter lets it pass (\"This pod may be the first pod in a series that have "
        "affinity to themselves\", kube-scheduler `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` "
        "`satisfyPodAffinity`, read in the index; re-read in a current copy there, with satisfiesSelfAffinityCheck "
        "and clusterWideAffinityCounts, commit not pinned), so the first member of the gang chooses the zone.",
        "Facts older than a year, re-verified at the current releases: the Kubeflow pod label "
        "`training.kubeflow.org/job-name` (facts: training-operator release-1.9 @078ec30f, 2025-02-13) at "
        "kubeflow/trainer v1.9.4 (4445c12a, 2026-08-18) `pkg/apis/kubeflow.org/v1/common_types.go`; JobSet's "
        "`jobset.sigs.k8s.io/jobset-name` and `alpha.jobset.sigs.k8s.io/exclusive-topology` at "
        "kubernetes-sigs/jobset v0.12.0 (f22e565a) `api/jobset/v1alpha2/jobset_types.go`. The RDMA resource names "
        "(§6) rest on commits of 2026 (rdma-shared-dev-plugin 410b0f32, network-operator b06827e0, "
        "sriov-network-device-plugin 40b6f507).",
        "Releases checked (the code read above is the same there): KAI Scheduler v0.13.0 (5d35ecab; the groupers, the topology plugin and docs/priority, docs/topology, docs/batch unchanged up to @72de64fc), LeaderWorkerSet v0.10.0 (2161f38), Volcano v1.15.1 (0a56ed33: IsHardTopologyMode, parseNetworkTopologyFromPod, the highestTierName translation and the cache's priority look-up as at @ed72c7c8), KubeRay v1.7.0 and v1.6.2, kubeflow/trainer v1.9.4, JobSet v0.12.0.",
    };
    // NOLINTEND(bugprone-suspicious-missing-comma)
    info_.params = {
        ParamSpec{"rdmaResources", ParamType::string_list,
                  json::array({"rdma/*", "nvidia.com/hostdev", "nvidia.com/mlnxnics"}),
                  "resource names that give a container RDMA devices (`*` matches any run of characters)",
                  std::nullopt, std::nullopt},
        ParamSpec{"sriovResources", ParamType::string_list, json::array({"*/sriov*"}),
                  "SR-IOV VF pools: RDMA only in a pod that also requests a GPU (GPUDirect RDMA); a VF alone may be "
                  "plain Ethernet or DPDK",
                  std::nullopt, std::nullopt},
        ParamSpec{"rdmaNetworks", ParamType::regex, "(?i)rdma|roce|infiniband|ipoib",
                  "Multus network names (k8s.v1.cni.cncf.io/networks) that are RDMA networks (RE2, partial match)",
                  std::nullopt, std::nullopt},
        ParamSpec{"zoneLabels", ParamType::string_list,
                  json::array({"topology.kubernetes.io/zone", "kubernetes.io/hostname"}),
                  "node labels whose domains lie within one zone (the zone itself and narrower ones)",
                  std::nullopt, std::nullopt},
        ParamSpec{"rdmaDeviceClasses", ParamType::string_list, json::array({"dranet.net"}),
                  "DRA DeviceClasses whose devices are RDMA NICs (`*` matches any run of characters)", std::nullopt, std::nullopt},
        ParamSpec{"rdmaDeviceSelector", ParamType::regex,
                  R"re(\[\s*"dra\.net"\s*\]\s*(?:\.\s*rdma|\[\s*"rdma"\s*\])\s*(?:==\s*true\b|$|&&|\|\||\)))re",
                  "CEL selectors (of a claim's request or a DeviceClass) that pick RDMA devices (RE2, partial match): "
                  "DraNet's rdma attribute, true",
                  std::nullopt, std::nullopt},
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
    };
    info_.has_fix = true;
    info_.reads_parts = kPartPlacement | kPartLabels | kPartScheduler;  // the gang's labels; the schedulerName (KAI, Volcano); the fix's topologyKey pins only when zoneLabels lists it
    info_.example_bad = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm
  namespace: team-a
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
                  nvidia.com/gpu: 8
                  rdma/rdma_shared_device_a: 1
)";
    info_.example_good = R"(apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm
  namespace: team-a
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          affinity:
            podAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                - labelSelector:
                    matchLabels:
                      training.kubeflow.org/job-name: llm
                  topologyKey: topology.kubernetes.io/zone
          containers:
            - name: pytorch
              image: nvcr.io/nvidia/pytorch:24.06-py3
              resources:
                limits:
                  nvidia.com/gpu: 8
                  rdma/rdma_shared_device_a: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  // Linear in the object's templates, containers, resources and affinity terms.
  void check(const Object& obj, CheckContext& ctx) const override {
    if (obj.gvk.group == "resource.k8s.io") {
      record_dra(obj, ctx);
      return;
    }
    // A DaemonSet's pods are one per node, not a job whose members talk to each other.
    if (obj.is("apps", "DaemonSet") || !obj.is_kubernetes_object()) return;
    const std::string kai_name = ctx.params().string(sched::kKaiSchedulerParam);
    const auto& templates = pod_templates(obj);
    bool kai_any = false;
    for (const auto& t : templates) kai_any = kai_any || sched::kai_template(obj, t, kai_name);
    if (made_by_checked_owner(obj, kai_any)) return;
    const auto& zone_labels = ctx.params().strings("zoneLabels");
    auto is_zone = [&](std::string_view key) { return std::find(zone_labels.begin(), zone_labels.end(), key) != zone_labels.end(); };
    for (const auto& t : templates) {
      std::set<std::string> signals = rdma_signals(t, ctx);
      // DRA claims the pods name: RDMA or not is known in finish, once every claim was seen.
      std::vector<std::pair<bool, std::string>> claims;
      if (const Node rc = member(t.spec, "resourceClaims"); rc.is_array())
        for (const Node c : rc) {
          if (auto n = string_at(c, "resourceClaimTemplateName"); n && !n->empty()) claims.emplace_back(true, std::string(*n));
          else if (auto m = string_at(c, "resourceClaimName"); m && !m->empty()) claims.emplace_back(false, std::string(*m));
        }
      if (signals.empty() && claims.empty()) continue;

      const Node spec = t.spec;
      const auto gang = gang_membership(obj, t);
      std::vector<std::string> weak;  // constraints that do not hold the pods in one zone, for the message

      bool ok = node_constraint(spec, is_zone, weak) || pod_affinity(spec, gang, is_zone, weak);
      const Node ann = member(t.metadata(), "annotations");
      // Kueue TAS.
      if (!ok && ann)
        for (std::string_view k : {kKueueRequiredTopology, kKueueSliceRequiredTopology})
          if (auto v = string_at(ann, k); v && !v->empty()) {
            if (wider_than_zone(*v)) weak.push_back("Kueue's " + std::string(k) + ": " + std::string(*v) + " is wider than a zone");
            else ok = true;  // a Topology level: zone or narrower (block, rack, host) in every Kueue example
          }
      if (!ok) ok = jobset_exclusive(obj, t, is_zone, weak);
      if (!ok && sched::is_lws(obj)) ok = lws_exclusive(obj, t, is_zone, weak);
      if (!ok) ok = kai_placement(obj, t, kai_name, weak);
      std::string volcano_group;
      if (!ok) ok = volcano_placement(obj, t, weak, volcano_group);
      if (ok) continue;

      // Preferred-only constraints.
      if (const Node pref = member(affinity_of(spec, "nodeAffinity"), kPreferred); pref.is_array())
        for (const Node p : pref)
          if (const Node pt = member(p, "preference"))
            for (const Node e : match_expressions(pt))
              if (auto key = string_at(e, "key"); key && is_zone(*key))
                weak.push_back("its node affinity on " + std::string(*key) + " is only preferred");
      if (const Node pref = member(affinity_of(spec, "podAffinity"), kPreferred); pref.is_array())
        for (const Node p : pref)
          if (auto key = string_at(member(p, "podAffinityTerm"), "topologyKey"); key && is_zone(*key))
            weak.push_back("its pod affinity on " + std::string(*key) + " is only preferred");
      if (ann)
        if (auto v = string_at(ann, kKueuePreferredTopology); v && !v->empty())
          weak.push_back("Kueue's " + std::string(kKueuePreferredTopology) + " is only preferred");

      std::string what;
      for (const auto& s : signals) what += (what.empty() ? "" : ", ") + s;
      std::string msg = " but nothing requires its pods to stay in one zone";
      if (gang) msg += " (gang " + gang->group + ": " + gang->via + ")";
      msg += ": RDMA does not cross zones, so members placed in different zones cannot reach each other over RDMA";
      for (const auto& w : weak) msg += "; " + w;
      std::optional<json> fix;
      std::string remedy;
      if (gang && !gang->label_key.empty()) {
        if (ctx.fixes_wanted()) {
          json term = {{"labelSelector", {{"matchLabels", {{gang->label_key, gang->label_value}}}}},
                       {"topologyKey", std::string(kZoneLabel)}};
          fix = add_required_pod_affinity(spec, t.spec_pointer(), term);
        }
        remedy = " (fix: a required pod affinity on " + std::string(kZoneLabel) + " over " + gang->label_key + "=" +
                 gang->label_value + " keeps the gang in one zone without naming it)";
      } else if (sched::is_lws(obj)) {
        remedy = " (annotate the LeaderWorkerSet " + std::string(sched::kLwsExclusiveTopology) +
                 " with a zone-or-narrower label to keep each group in one domain, or require one zone by node affinity)";
      } else {
        remedy = " (require one zone by node affinity, or a pod affinity on " + std::string(kZoneLabel) + " over the job's pods)";
      }
      std::string ptr = member(spec, "affinity") ? t.spec_pointer() + "/affinity" : t.spec_pointer();
      if (!volcano_group.empty() || signals.empty()) {
        // The PodGroup the pods name, if it is in the input or the cluster state, may hold them;
        // their DRA claims, if the input has them, may be RDMA.
        Pos pos = ctx.position_of(ptr);
        static_cast<State*>(ctx.state())->pending.push_back(Pending{ctx.ref(), std::move(ptr), pos, std::move(what), std::move(msg),
                                                                    std::move(remedy), std::move(fix), ctx.namespace_of_object(),
                                                                    std::move(volcano_group), std::move(claims)});
        continue;
      }
      ctx.report(std::move(ptr), "uses RDMA (" + what + ")" + msg + remedy, std::move(fix));
    }
  }

  // Linear in the claims and DeviceClasses seen and the pending findings' claim references (hash
  // look-ups), plus one PodGroup look-up a pending finding.
  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    auto* st = static_cast<State*>(ctx.state());
    std::unordered_set<std::string_view> rdma_classes(st->rdma_classes.begin(), st->rdma_classes.end());
    std::unordered_map<std::string, const Claim*> claims;  // "ns\0T|C\0name"
    auto key = [](std::string_view ns, bool is_template, std::string_view name) {
      std::string k(ns);
      k += '\0';
      k += is_template ? 'T' : 'C';
      k += '\0';
      k += name;
      return k;
    };
    for (const Claim& c : st->claims) claims.emplace(key(c.ns, c.is_template, c.name), &c);
    for (auto& p : st->pending) {
      std::string what = p.what;
      for (const auto& [is_template, name] : p.claims) {
        auto it = claims.find(key(p.ns, is_template, name));
        if (it == claims.end()) continue;
        const Claim& c = *it->second;
        std::string why = c.rdma;
        for (const auto& cls : c.classes)
          if (why.empty() && rdma_classes.count(cls)) why = "DeviceClass " + cls + " selects RDMA devices";
        if (why.empty()) continue;
        what += (what.empty() ? "" : ", ") + std::string(is_template ? "DRA ResourceClaimTemplate " : "DRA ResourceClaim ") + name + ": " + why;
      }
      if (what.empty()) continue;  // its only possible RDMA was a DRA claim, and none is RDMA (or known)
      std::string msg = "uses RDMA (" + what + ")" + p.message;
      if (!p.volcano_group.empty())
        if (const Object* pg = inv.find("scheduling.volcano.sh", "PodGroup", p.ns, p.volcano_group)) {
          std::vector<std::string> weak;
          if (volcano_topology_bounds(path(pg->root(), {"spec", "networkTopology"}), "its PodGroup " + p.volcano_group + "'s", weak)) continue;
          for (const auto& w : weak) msg += "; " + w;
        }
      ctx.report(p.object, p.pointer, p.pos, std::move(msg) + p.remedy, std::move(p.fix));
    }
  }

 private:
  // A DRA object of the input: a claim or claim template (its requests' classes, and whether it
  // picks RDMA devices by itself), or a DeviceClass that picks RDMA devices.
  static void record_dra(const Object& obj, CheckContext& ctx) {
    auto* st = static_cast<State*>(ctx.state());
    const auto& classes = ctx.params().strings("rdmaDeviceClasses");
    const re2::RE2* selector = ctx.params().regex("rdmaDeviceSelector");
    auto rdma_cel = [&](std::string_view e) { return selector && re2::RE2::PartialMatch(e, *selector); };
    const Node spec = member(obj.root(), "spec");
    if (obj.gvk.kind == "DeviceClass") {
      if (const Node sel = member(spec, "selectors"); sel.is_array())
        for (const Node x : sel)
          if (auto e = string_at(member(x, "cel"), "expression"); e && rdma_cel(*e)) {
            st->rdma_classes.push_back(obj.name);
            return;
          }
      return;
    }
    Node devices;
    if (obj.gvk.kind == "ResourceClaimTemplate") devices = path(spec, {"spec", "devices"});
    else if (obj.gvk.kind == "ResourceClaim") devices = member(spec, "devices");
    else return;
    Claim c{ctx.namespace_of_object(), obj.gvk.kind == "ResourceClaimTemplate", obj.name, "", {}};
    device_requests(devices, [&](std::string_view cls, const std::vector<std::string_view>& cel) {
      if (!cls.empty()) {
        if (c.rdma.empty() && glob_any(classes, cls)) c.rdma = "class " + std::string(cls) + " (rdmaDeviceClasses)";
        c.classes.emplace_back(cls);
      }
      for (std::string_view e : cel)
        if (c.rdma.empty() && rdma_cel(e)) c.rdma = "its selector picks RDMA devices";
    });
    st->claims.push_back(std::move(c));
  }

  // RDMA signals of a template: resources, SR-IOV pools of a GPU pod, Multus networks.
  static std::set<std::string> rdma_signals(const PodTemplate& t, CheckContext& ctx) {
    const auto& rdma_resources = ctx.params().strings("rdmaResources");
    const auto& sriov_resources = ctx.params().strings("sriovResources");
    const re2::RE2* rdma_networks = ctx.params().regex("rdmaNetworks");
    std::set<std::string> signals;
    const bool gpu = requests_gpu(t, ctx.settings().gpu_resources);
    for (const auto& c : containers(t)) {
      const Node res = member(c.body, "resources");
      if (!res) continue;
      for (const char* key : {"limits", "requests"}) {
        const Node list = member(res, key);
        if (!list.is_object()) continue;
        for (const auto [name, v] : list.items()) {
          if (!glob_any(rdma_resources, name) && !(gpu && glob_any(sriov_resources, name))) continue;
          auto q = Quantity::from_node(v);
          if (q && q->is_zero()) continue;
          signals.emplace(name);
        }
      }
    }
    if (auto nets = string_at(member(t.metadata(), "annotations"), kMultusAnnotation))
      for (const auto& n : multus_networks(*nets))
        if (rdma_networks && re2::RE2::PartialMatch(n, *rdma_networks)) signals.insert("Multus network " + n);
    return signals;
  }

  // nodeSelector / required node affinity allowing one zone.
  template <typename IsZone>
  static bool node_constraint(Node spec, const IsZone& is_zone, std::vector<std::string>& weak) {
    if (const Node ns = member(spec, "nodeSelector"); ns.is_object())
      for (const auto [k, v] : ns.items())
        if (is_zone(k) && v.is_string()) return true;
    const Node terms = required_node_terms(spec);
    if (!terms) return false;
    std::set<std::string> values;
    bool every_term = true;
    std::string key_seen;
    for (const Node term : terms) {
      bool has = false;
      for (const Node e : match_expressions(term)) {
        auto key = string_at(e, "key");
        if (!key || !is_zone(*key) || string_at(e, "operator") != std::optional<std::string_view>("In")) continue;
        auto vs = expr_values(e);
        if (vs.empty()) continue;
        has = true;
        key_seen = std::string(*key);
        values.insert(vs.begin(), vs.end());
      }
      if (!has) every_term = false;
    }
    if (every_term && values.size() == 1) return true;
    if (every_term && values.size() > 1) {
      std::string list;
      for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
      weak.push_back("its required node affinity allows " + std::to_string(values.size()) + " domains of " + key_seen + " (" + list +
                     "), so its pods may be split across them");
    }
    return false;
  }

  // Required pod affinity on a zone-or-narrower key over its gang.
  template <typename IsZone>
  static bool pod_affinity(Node spec, const std::optional<topology::GangMembership>& gang, const IsZone& is_zone,
                           std::vector<std::string>& weak) {
    const Node req = member(affinity_of(spec, "podAffinity"), kRequired);
    if (!req.is_array()) return false;
    for (const Node term : req) {
      auto key = string_at(term, "topologyKey");
      if (!key || !is_zone(*key)) continue;
      if (!gang || gang->label_key.empty() || selects(term, gang->label_key, gang->label_value)) return true;
      weak.push_back("its required pod affinity on " + std::string(*key) + " does not select its own gang (" + gang->label_key + "=" +
                     gang->label_value + ")");
    }
    return false;
  }

  // JobSet exclusive placement: on the template (pods of a JobSet carry it), on the JobSet, or on
  // its child Job template (/spec/replicatedJobs/<i>/template/metadata).
  template <typename IsZone>
  static bool jobset_exclusive(const Object& obj, const PodTemplate& t, const IsZone& is_zone, std::vector<std::string>& weak) {
    std::vector<Node> mds = {t.metadata()};
    if (obj.is("jobset.x-k8s.io", "JobSet")) {
      mds.push_back(obj.metadata());
      const std::string suffix = "/spec/template";
      if (t.pointer.ends_with(suffix)) {
        const Node root = obj.root();
        PositionIndex::NodeId md = 0;
        if (root.doc()->find(t.pointer.substr(0, t.pointer.size() - suffix.size()) + "/metadata", root.id(), md))
          mds.push_back(Node(root.doc(), md));
      }
    }
    bool ok = false;
    for (const Node md : mds)
      if (auto v = string_at(member(md, "annotations"), kJobSetExclusiveTopology)) {
        if (is_zone(*v)) ok = true;
        else weak.push_back(std::string(kJobSetExclusiveTopology) + ": " + std::string(*v) + " is not a zone-or-narrower label (zoneLabels)");
      }
    return ok;
  }

  // LeaderWorkerSet exclusive placement, read on the LeaderWorkerSet itself.
  template <typename IsZone>
  static bool lws_exclusive(const Object& obj, const PodTemplate& t, const IsZone& is_zone, std::vector<std::string>& weak) {
    if (auto v = string_at(member(obj.metadata(), "annotations"), sched::kLwsExclusiveTopology)) {
      if (is_zone(*v)) return true;
      weak.push_back(std::string(sched::kLwsExclusiveTopology) + ": " + std::string(*v) + " is not a zone-or-narrower label (zoneLabels)");
    }
    if (auto v = string_at(member(obj.metadata(), "annotations"), sched::kLwsSubGroupExclusiveTopology)) {
      const int64_t size = sched::lws_size(obj);
      const Node policy = path(obj.root(), {"spec", "leaderWorkerTemplate", "subGroupPolicy"});
      const int64_t sub = as_int(member(policy, "subGroupSize")).value_or(0);
      const bool leader_excluded = string_at(policy, "subGroupPolicyType") == std::optional<std::string_view>("LeaderExcluded");
      if (!is_zone(*v)) {
        weak.push_back(std::string(sched::kLwsSubGroupExclusiveTopology) + ": " + std::string(*v) + " is not a zone-or-narrower label (zoneLabels)");
      } else if (sub >= size && sub > 0 && !leader_excluded) {
        return true;  // the group is one subgroup, the leader in it
      } else {
        weak.push_back(std::string(sched::kLwsSubGroupExclusiveTopology) + ": " + std::string(*v) + " keeps each subgroup" +
                       (sub > 0 ? " of " + std::to_string(sub) + " pods" : std::string()) + " in one domain of it, but a group of " +
                       std::to_string(size) + " pods has several subgroups" + (leader_excluded ? " (and the leader none)" : "") +
                       ", which may land in different zones (LWS's docs: related subgroups should still stay in one zone)");
      }
    }
    for (std::string_view key : {sched::kLwsExclusiveTopology, sched::kLwsSubGroupExclusiveTopology})
      if (string_at(member(t.metadata(), "annotations"), key))
        weak.push_back("the LeaderWorkerSet controller reads " + std::string(key) + " on the LeaderWorkerSet, not on its templates");
    return false;
  }

  // KAI Scheduler's required placement, read on the top owner (the object, or a CronJob's job template).
  static bool kai_placement(const Object& obj, const PodTemplate& t, const std::string& kai_name, std::vector<std::string>& weak) {
    Node top = member(obj.metadata(), "annotations");
    if (obj.is("batch", "CronJob")) top = path(obj.root(), {"spec", "jobTemplate", "metadata", "annotations"});
    auto required = string_at(top, sched::kKaiRequiredPlacement);
    auto preferred = string_at(top, sched::kKaiPreferredPlacement);
    if (!t.pointer.empty() && (string_at(member(t.metadata(), "annotations"), sched::kKaiRequiredPlacement) ||
                               string_at(member(t.metadata(), "annotations"), sched::kKaiPreferredPlacement)))
      weak.push_back("KAI reads " + std::string(sched::kKaiRequiredPlacement) + " on the top owner (the " + obj.gvk.kind +
                     "), not on its pod templates");
    if ((!required || required->empty()) && (!preferred || preferred->empty())) return false;
    if (!sched::kai_template(obj, t, kai_name)) {
      weak.push_back("its kai.scheduler/topology-* annotations are read only for pods that go to KAI Scheduler (schedulerName " +
                     (kai_name.empty() ? std::string("kai-scheduler") : kai_name) + ")");
      return false;
    }
    if (!required || required->empty()) {
      weak.push_back("KAI's " + std::string(sched::kKaiPreferredPlacement) + " is only preferred");
      return false;
    }
    if (auto topo = string_at(top, sched::kKaiTopology); !topo || topo->empty()) {
      weak.push_back(std::string(sched::kKaiRequiredPlacement) + " without " + std::string(sched::kKaiTopology) +
                     ": KAI applies no topology constraint");
      return false;
    }
    if (wider_than_zone(*required)) {
      weak.push_back("KAI's " + std::string(sched::kKaiRequiredPlacement) + ": " + std::string(*required) + " is wider than a zone");
      return false;
    }
    if (sched::kai_grouping(obj) == sched::KaiGrouping::per_pod && t.replicas.value_or(2) > 1) {
      weak.push_back("KAI makes one PodGroup per pod of a " + obj.gvk.kind + ", so " + std::string(sched::kKaiRequiredPlacement) +
                     " places each pod on its own, not the " + obj.gvk.kind + "'s pods together");
      return false;
    }
    return true;
  }

  // Volcano network topology: the Volcano Job's, a PodGroup's (looked up in finish: `group`), a
  // plain workload's pod annotations, KubeRay's labels.
  static bool volcano_placement(const Object& obj, const PodTemplate& t, std::vector<std::string>& weak, std::string& group) {
    if (obj.is("batch.volcano.sh", "Job")) {
      const Node spec = member(obj.root(), "spec");
      bool ok = volcano_topology_bounds(member(spec, "networkTopology"), "the Volcano Job's", weak);
      if (!ok && t.pointer.starts_with("/spec/tasks/")) {
        PositionIndex::NodeId task = 0;
        const Node root = obj.root();
        if (root.doc()->find(t.pointer.substr(0, t.pointer.size() - std::string_view("/template").size()), root.id(), task))
          if (member(member(Node(root.doc(), task), "partitionPolicy"), "networkTopology"))
            weak.push_back("its task's partitionPolicy.networkTopology bounds each partition, not the job");
      }
      return ok;
    }
    if (obj.gvk.group == "ray.io" && ray_volcano_bounds(obj, weak)) return true;
    const Node ann = member(t.metadata(), "annotations");
    for (std::string_view key : {gang::kVolcanoGroupAnnotation, gang::kVolcanoGroupAnnotationAlt})
      if (auto g = string_at(ann, key); g && !g->empty()) {
        group = std::string(*g);
        return false;
      }
    return volcano_annotation_bounds(ann, sched::template_scheduler(t), weak);
  }

  // Whether a pod-affinity term's label selector selects pods labelled key=value (and asks for no
  // more than labels the gang shares: only that requirement is checked).
  static bool selects(Node term, const std::string& key, const std::string& value) {
    const Node sel = member(term, "labelSelector");
    if (!sel) return false;
    if (auto v = string_at(member(sel, "matchLabels"), key); v && *v == value) return true;
    if (const Node me = member(sel, "matchExpressions"); me.is_array())
      for (const Node e : me)
        if (string_at(e, "key") == std::optional<std::string_view>(key) &&
            string_at(e, "operator") == std::optional<std::string_view>("In")) {
          auto vs = expr_values(e);
          if (vs.size() == 1 && vs[0] == value) return true;
        }
    return false;
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_rdma_zone_affinity_missing() { return std::make_unique<RdmaZoneAffinityMissing>(); }

}  // namespace gpuguard::rules
