// rdma-zone-affinity-missing: a pod template that uses RDMA with no required zone constraint.

#include <algorithm>
#include <cctype>
#include <re2/re2.h>
#include <set>

#include "engine/kinds.h"
#include "engine/json_parse.h"
#include "rules/all.h"
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
        "device-plugin resource.\n\n"
        "**What counts as a zone constraint** (required, never preferred): a `nodeSelector` or "
        "required node affinity that allows exactly one value of `topology.kubernetes.io/zone` (or of "
        "a narrower label in `zoneLabels`, e.g. `kubernetes.io/hostname`); a required pod affinity "
        "with such a `topologyKey` that selects the pod's own gang (any selector when the gang is not "
        "known); Kueue's `kueue.x-k8s.io/podset-required-topology` or `podset-slice-required-topology` "
        "annotation on any level but a region; JobSet's `alpha.jobset.sigs.k8s.io/exclusive-topology` on a label in "
        "`zoneLabels` (it keeps each child Job's pods in one domain, one Job per domain). A preferred "
        "affinity or Kueue's `podset-preferred-topology` is only a score: the scheduler still splits "
        "the job when the preferred zone is full, and the message says so. DaemonSets (one pod per node, "
        "e.g. an RDMA device plugin or a network test) are skipped.\n\n"
        "The severity is `error` because a split RDMA job does not work, not because the API rejects "
        "it; lower it in the config where every RDMA node is in one zone.";
    info_.remediation =
        "Keep the gang in one zone without naming one: a required pod affinity on "
        "`topology.kubernetes.io/zone` that selects the gang's own pods (the first pod may go anywhere: "
        "the scheduler lets a pod that matches its own affinity term start a group). Or require a "
        "zone by node affinity, or use Kueue topology-aware scheduling "
        "(`kueue.x-k8s.io/podset-required-topology`).\n\n"
        "The fix, for a pod that belongs to a gang with a known label (coscheduling "
        "`scheduling.x-k8s.io/pod-group`, Volcano `volcano.sh/job-name`, Kubeflow "
        "`training.kubeflow.org/job-name`, JobSet `jobset.sigs.k8s.io/jobset-name`), adds "
        "`podAffinity.requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: "
        "{<label>: <gang>}}, topologyKey: topology.kubernetes.io/zone}]`.";
    info_.checks = pod_template_kinds_except({KindRef{"apps", "DaemonSet"}});  // skipped below
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
        "Inter-pod affinity: when no pod in the cluster matches a pod's required affinity terms and the pod "
        "matches its own terms, the Filter lets it pass (\"This pod may be the first pod in a series that have "
        "affinity to themselves\", kube-scheduler `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go` "
        "`satisfyPodAffinity`, read in the index), so the first member of the gang chooses the zone.",
    };
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
    };
    info_.has_fix = true;
    info_.reads_parts = kPartPlacement | kPartLabels;  // the gang's labels; the fix's topologyKey pins only when zoneLabels lists it
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

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& rdma_resources = ctx.params().strings("rdmaResources");
    const auto& sriov_resources = ctx.params().strings("sriovResources");
    const re2::RE2* rdma_networks = ctx.params().regex("rdmaNetworks");
    const auto& zone_labels = ctx.params().strings("zoneLabels");
    auto is_zone = [&](std::string_view key) { return std::find(zone_labels.begin(), zone_labels.end(), key) != zone_labels.end(); };
    // A DaemonSet's pods are one per node, not a job whose members talk to each other.
    if (obj.is("apps", "DaemonSet")) return;
    for (const auto& t : pod_templates(obj)) {
      // RDMA signals.
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
      if (signals.empty()) continue;

      const Node spec = t.spec;
      const auto gang = gang_membership(obj, t);
      std::vector<std::string> weak;  // constraints that do not hold the pods in one zone, for the message

      // nodeSelector / required node affinity allowing one zone.
      bool ok = false;
      if (const Node ns = member(spec, "nodeSelector"); ns.is_object())
        for (const auto [k, v] : ns.items())
          if (is_zone(k) && v.is_string()) ok = true;
      if (!ok)
        if (const Node terms = required_node_terms(spec)) {
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
          if (every_term && values.size() == 1) ok = true;
          else if (every_term && values.size() > 1) {
            std::string list;
            for (const auto& v : values) list += (list.empty() ? "" : ", ") + v;
            weak.push_back("its required node affinity allows " + std::to_string(values.size()) + " domains of " + key_seen +
                           " (" + list + "), so its pods may be split across them");
          }
        }
      // Required pod affinity on a zone-or-narrower key over its gang.
      if (!ok)
        if (const Node req = member(affinity_of(spec, "podAffinity"), kRequired); req.is_array())
          for (const Node term : req) {
            auto key = string_at(term, "topologyKey");
            if (!key || !is_zone(*key)) continue;
            if (!gang || gang->label_key.empty() || selects(term, gang->label_key, gang->label_value)) ok = true;
            else weak.push_back("its required pod affinity on " + std::string(*key) + " does not select its own gang (" +
                                gang->label_key + "=" + gang->label_value + ")");
          }
      // Kueue TAS and JobSet exclusive placement.
      const Node ann = member(t.metadata(), "annotations");
      if (!ok && ann)
        for (std::string_view k : {kKueueRequiredTopology, kKueueSliceRequiredTopology})
          if (auto v = string_at(ann, k); v && !v->empty()) {
            if (wider_than_zone(*v)) weak.push_back("Kueue's " + std::string(k) + ": " + std::string(*v) + " is wider than a zone");
            else ok = true;  // a Topology level: zone or narrower (block, rack, host) in every Kueue example
          }
      if (!ok) {
        // On the template (pods of a JobSet carry it), on the JobSet, or on its child Job template
        // (/spec/replicatedJobs/<i>/template/metadata).
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
        for (const Node md : mds)
          if (auto v = string_at(member(md, "annotations"), kJobSetExclusiveTopology)) {
            if (is_zone(*v)) ok = true;
            else weak.push_back(std::string(kJobSetExclusiveTopology) + ": " + std::string(*v) + " is not a zone-or-narrower label (zoneLabels)");
          }
      }
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
      std::string msg = "uses RDMA (" + what + ") but nothing requires its pods to stay in one zone";
      if (gang) msg += " (gang " + gang->group + ": " + gang->via + ")";
      msg += ": RDMA does not cross zones, so members placed in different zones cannot reach each other over RDMA";
      for (const auto& w : weak) msg += "; " + w;
      std::optional<json> fix;
      if (gang && !gang->label_key.empty()) {
        if (ctx.fixes_wanted()) {
          json term = {{"labelSelector", {{"matchLabels", {{gang->label_key, gang->label_value}}}}},
                       {"topologyKey", std::string(kZoneLabel)}};
          fix = add_required_pod_affinity(spec, t.spec_pointer(), term);
        }
        msg += " (fix: a required pod affinity on " + std::string(kZoneLabel) + " over " + gang->label_key + "=" +
               gang->label_value + " keeps the gang in one zone without naming it)";
      } else {
        msg += " (require one zone by node affinity, or a pod affinity on " + std::string(kZoneLabel) + " over the job's pods)";
      }
      const std::string ptr = member(spec, "affinity") ? t.spec_pointer() + "/affinity" : t.spec_pointer();
      ctx.report(ptr, std::move(msg), std::move(fix));
    }
  }

 private:
  static bool wider_than_zone(std::string_view label) {
    return label == "topology.kubernetes.io/region" || label == "failure-domain.beta.kubernetes.io/region";
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
