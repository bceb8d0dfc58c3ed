#include "engine/kinds.h"

#include <algorithm>
#include <cctype>

namespace gpuguard::engine {

const std::vector<KindRef>& pod_template_kinds() {
  static const std::vector<KindRef> kKinds = {
      {"", "Pod"},
      {"", "PodTemplate"},
      {"", "ReplicationController"},
      {"apps", "Deployment"},
      {"apps", "StatefulSet"},
      {"apps", "ReplicaSet"},
      {"apps", "DaemonSet"},
      {"batch", "Job"},
      {"batch", "CronJob"},
      {"batch.volcano.sh", "Job"},
      {"kubeflow.org", "PyTorchJob"},
      {"kubeflow.org", "TFJob"},
      {"kubeflow.org", "MPIJob"},
      {"kubeflow.org", "JAXJob"},
      {"kubeflow.org", "XGBoostJob"},
      {"kubeflow.org", "PaddleJob"},
      {"jobset.x-k8s.io", "JobSet"},
      {"ray.io", "RayCluster"},
      {"ray.io", "RayJob"},
      {"ray.io", "RayService"},
      {"leaderworkerset.x-k8s.io", "LeaderWorkerSet"},
  };
  return kKinds;
}

std::vector<KindRef> pod_template_kinds_except(std::initializer_list<KindRef> skipped) {
  std::vector<KindRef> out;
  for (const KindRef& k : pod_template_kinds())
    if (std::find(skipped.begin(), skipped.end(), k) == skipped.end()) out.push_back(k);
  return out;
}

std::string resource_of(const KindRef& kind) {
  std::string lower = kind.kind;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  // The API server's pluralisation (k8s.io/apimachinery meta.UnsafeGuessKindToResource).
  if (lower.empty()) return lower;
  if (lower.back() == 's') return lower + "es";
  if (lower.back() == 'y') return lower.substr(0, lower.size() - 1) + "ies";
  return lower + "s";
}

}  // namespace gpuguard::engine
