#include "kube/resources.h"

#include "engine/kinds.h"
#include "engine/object.h"

namespace gpuguard::kube {

namespace {

struct Entry {
  const char* group;
  std::vector<std::string> versions;
  const char* kind;
};

// Every kind the rules check, read or observe that an API server serves, with the versions to
// look for (preferred first: the version whose schema the rules read). Versions, plurals and
// scopes checked against the CRDs in ../shared/k8s-schemas/crds where they exist.
const std::vector<Entry>& table() {
  static const std::vector<Entry> kTable = {
      {"", {"v1"}, "Namespace"},
      {"", {"v1"}, "Node"},
      {"", {"v1"}, "ConfigMap"},
      {"", {"v1"}, "ResourceQuota"},
      {"", {"v1"}, "LimitRange"},
      {"", {"v1"}, "Pod"},
      {"", {"v1"}, "PodTemplate"},
      {"", {"v1"}, "ReplicationController"},
      {"apps", {"v1"}, "Deployment"},
      {"apps", {"v1"}, "StatefulSet"},
      {"apps", {"v1"}, "ReplicaSet"},
      {"apps", {"v1"}, "DaemonSet"},
      {"batch", {"v1"}, "Job"},
      {"batch", {"v1"}, "CronJob"},
      {"scheduling.k8s.io", {"v1"}, "PriorityClass"},
      {"scheduling.volcano.sh", {"v1beta1"}, "Queue"},
      {"scheduling.volcano.sh", {"v1beta1"}, "PodGroup"},
      {"batch.volcano.sh", {"v1alpha1"}, "Job"},
      {"scheduling.x-k8s.io", {"v1alpha1"}, "PodGroup"},
      // KAI Scheduler: v2 is the only version its CRD serves (deployments/kai-scheduler/crds @72de64fc).
      {"scheduling.run.ai", {"v2"}, "Queue"},
      // The rules read the v1beta1 schema; Kueue 0.15+ stores v1beta2 and serves both.
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "ClusterQueue"},
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "LocalQueue"},
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "ResourceFlavor"},
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "WorkloadPriorityClass"},
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "Cohort"},
      {"kueue.x-k8s.io", {"v1beta1", "v1beta2"}, "Topology"},
      {"nvidia.com", {"v1"}, "ClusterPolicy"},
      {"nvidia.com", {"v1alpha1"}, "NVIDIADriver"},
      {"monitoring.coreos.com", {"v1"}, "PrometheusRule"},
      {"kubeflow.org", {"v1"}, "PyTorchJob"},
      {"kubeflow.org", {"v1"}, "TFJob"},
      // mpi-operator serves v2beta1; the training-operator's v1 MPIJob is the fallback.
      {"kubeflow.org", {"v2beta1", "v1"}, "MPIJob"},
      {"kubeflow.org", {"v1"}, "JAXJob"},
      {"kubeflow.org", {"v1"}, "XGBoostJob"},
      {"kubeflow.org", {"v1"}, "PaddleJob"},
      {"jobset.x-k8s.io", {"v1alpha2"}, "JobSet"},
      {"ray.io", {"v1"}, "RayCluster"},
      {"ray.io", {"v1"}, "RayJob"},
      {"ray.io", {"v1"}, "RayService"},
      {"leaderworkerset.x-k8s.io", {"v1"}, "LeaderWorkerSet"},
      // DRA: v1 since Kubernetes 1.34, v1beta2 in 1.33, v1beta1 in 1.32 (rdma-zone-affinity-missing
      // reads both request shapes).
      {"resource.k8s.io", {"v1", "v1beta2", "v1beta1"}, "ResourceClaimTemplate"},
      {"resource.k8s.io", {"v1", "v1beta2", "v1beta1"}, "ResourceClaim"},
      {"resource.k8s.io", {"v1", "v1beta2", "v1beta1"}, "DeviceClass"},
      // NVIDIA's DRA driver: a ComputeDomain makes the ResourceClaimTemplate its channel names
      // (dra-reference-unknown). v1beta1 is the CRD's only version (NVIDIA/k8s-dra-driver-gpu @22407113).
      {"resource.nvidia.com", {"v1beta1"}, "ComputeDomain"},
  };
  return kTable;
}

}  // namespace

std::string Resource::path(std::string_view version, std::string_view ns) const {
  std::string p = group.empty() ? "/api/" : "/apis/" + group + "/";
  p += version;
  if (namespaced && !ns.empty()) {
    p += "/namespaces/";
    p += ns;
  }
  p += "/";
  p += plural;
  return p;
}

std::optional<Resource> resource_for(const engine::KindRef& kind) {
  for (const auto& e : table()) {
    if (e.group != kind.group || e.kind != kind.kind) continue;
    Resource r;
    r.group = e.group;
    r.versions = e.versions;
    r.kind = e.kind;
    r.plural = engine::resource_of(kind);
    r.namespaced = !engine::is_cluster_scoped(kind.group, kind.kind);
    return r;
  }
  return std::nullopt;
}

std::vector<Resource> resources_for(const std::set<engine::KindRef>& kinds, std::vector<std::string>* unknown) {
  std::vector<Resource> out;
  for (const auto& k : kinds) {
    if (auto r = resource_for(k))
      out.push_back(std::move(*r));
    else if (unknown)
      unknown->push_back(k.group.empty() ? k.kind : k.kind + "." + k.group);
  }
  return out;
}

}  // namespace gpuguard::kube
