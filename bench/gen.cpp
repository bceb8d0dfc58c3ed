// bench/gen: a deterministic manifest set of N objects with the mix of a GPU cluster (GPU
// Deployments and Pods with affinity, PodGroups, Volcano Queues, ResourceQuotas, LimitRanges,
// PriorityClasses, mig-parted ConfigMaps, Namespaces; some with defects).
//
//   gen N DIR [--single]     N objects in DIR/manifests-NNNN.yaml (1,000 per file), or one file

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Rng {  // a fixed LCG: the same set on every machine
  uint64_t s = 0x9E3779B97F4A7C15ull;
  uint32_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 33);
  }
  uint32_t below(uint32_t n) { return next() % n; }
};

const char* kProducts[] = {"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S", "Tesla-T4"};

void deployment(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  bool defect = r.below(10) == 0;  // request without limit
  int gpus = 1 << r.below(4);
  o << "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: infer-" << i << "\n  namespace: " << ns
    << "\n  labels: {app: infer-" << i << ", workload-type: " << (r.below(2) ? "inference" : "training") << "}\n"
    << "spec:\n  replicas: " << 1 + r.below(4) << "\n  selector:\n    matchLabels: {app: infer-" << i << "}\n"
    << "  template:\n    metadata:\n      labels: {app: infer-" << i << "}\n    spec:\n"
    << "      priorityClassName: tier-" << r.below(4) << "\n"
    << "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n"
    << "            nodeSelectorTerms:\n              - matchExpressions:\n                  - key: nvidia.com/gpu.product\n"
    << "                    operator: In\n                    values: [" << kProducts[r.below(4)] << "]\n"
    << "      tolerations:\n        - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n"
    << "      containers:\n        - name: server\n          image: nvcr.io/nvidia/tritonserver:24.06-py3\n"
    << "          args: [\"--model-repository=/models\", \"--strict-readiness=true\"]\n"
    << "          ports:\n            - {containerPort: 8000, name: http}\n            - {containerPort: 8001, name: grpc}\n"
    << "          resources:\n            requests: {cpu: \"" << 2 + r.below(6) << "\", memory: " << 8 + r.below(56) << "Gi"
    << (defect ? ", nvidia.com/gpu: " + std::to_string(gpus) : "") << "}\n"
    << "            limits: {memory: 64Gi" << (defect ? "" : ", nvidia.com/gpu: " + std::to_string(gpus)) << "}\n"
    << "          env:\n            - {name: MODEL, value: model-" << r.below(100) << "}\n"
    << "        - name: metrics\n          image: prom/statsd-exporter:v0.26.0\n"
    << "          resources: {requests: {cpu: 50m, memory: 64Mi}, limits: {memory: 128Mi}}\n";
}

void pod(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  // One in twenty has no priority class, product affinity or toleration (the rest are what a
  // training gang's workers look like); one in twenty asks for half a GPU.
  const bool bare = r.below(20) == 0;
  o << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: train-" << i << "\n  namespace: " << ns << "\n"
    << "  annotations: {scheduling.k8s.io/group-name: pg-" << i / 4 << "}\nspec:\n  schedulerName: volcano\n";
  if (!bare) {
    o << "  priorityClassName: tier-" << r.below(4) << "\n"
      << "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
      << "        nodeSelectorTerms:\n          - matchExpressions:\n              - {key: nvidia.com/gpu.product, operator: In, values: ["
      << kProducts[r.below(4)] << "]}\n"
      << "  tolerations:\n    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}\n";
  }
  o << "  containers:\n    - name: train\n      image: nvcr.io/nvidia/pytorch:24.06-py3\n"
    << "      command: [torchrun, --nproc_per_node=8, train.py]\n"
    << "      resources:\n        limits: {nvidia.com/gpu: " << (r.below(20) == 0 ? "0.5" : "8") << ", cpu: \"64\", memory: 512Gi}\n";
}

void podgroup(std::ostream& o, Rng& r, size_t i, const std::string& ns, size_t queues) {
  o << "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: pg-" << i << "\n  namespace: " << ns
    << "\nspec:\n  minMember: " << 1 + r.below(8) << "\n  queue: q-" << r.below(static_cast<uint32_t>(queues)) << "\n  priorityClassName: tier-" << r.below(4)
    << "\n  minResources: {nvidia.com/gpu: " << 8 * (1 + r.below(4)) << ", cpu: \"128\", memory: 512Gi}\n";
}

void queue(std::ostream& o, Rng& r, size_t i) {
  o << "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata:\n  name: q-" << i << "\nspec:\n  weight: " << 1 + r.below(10)
    << "\n  reclaimable: " << (r.below(2) ? "true" : "false") << "\n  capability: {cpu: 512, memory: 4Ti, nvidia.com/gpu: "
    << 16 * (1 + r.below(8)) << "}\n";
}

void quota(std::ostream& o, Rng& r, const std::string& ns, size_t i) {
  o << "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpu-" << i << "\n  namespace: " << ns << "\nspec:\n  hard:\n"
    << "    requests.nvidia.com/gpu: " << 8 * (1 + r.below(8)) << "\n" << (r.below(3) == 0 ? "    limits.nvidia.com/gpu: 32\n" : "")
    << "    requests.memory: 2Ti\n    pods: \"500\"\n";
}

void limitrange(std::ostream& o, Rng& r, const std::string& ns, size_t i) {
  o << "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: defaults-" << i << "\n  namespace: " << ns << "\nspec:\n  limits:\n"
    << "    - type: Container\n      max: {nvidia.com/gpu: 8}\n      default: {nvidia.com/gpu: 1, memory: 4Gi}\n"
    << "      defaultRequest: {nvidia.com/gpu: 1, memory: 2Gi}\n" << (r.below(2) ? "" : "");
}

void priorityclass(std::ostream& o, Rng& r, size_t i) {
  o << "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: tier-" << i << "\nvalue: " << 1000 * (i + 1) + r.below(10)
    << "\npreemptionPolicy: PreemptLowerPriority\n";
}

void migconfig(std::ostream& o, Rng& r, size_t i) {
  const char* profiles[] = {"\"1g.10gb\": 7", "\"2g.20gb\": 3", "\"3g.40gb\": 2", "\"7g.80gb\": 1"};
  o << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: mig-parted-" << i << "\n  namespace: gpu-operator\n"
    << "  labels: {app: nvidia-mig-manager}\ndata:\n  config.yaml: |\n    version: v1\n    mig-configs:\n"
    << "      all-disabled:\n        - devices: all\n          mig-enabled: false\n"
    << "      custom-" << i << ":\n        - devices: all\n          mig-enabled: true\n          mig-devices:\n            "
    << profiles[r.below(4)] << "\n";
}

void nspace(std::ostream& o, size_t i) {
  o << "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-" << i << "\n  annotations: {gpuguard.io/default-priority-class: tier-1}\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gen N DIR [--single]\n");
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const std::filesystem::path dir = argv[2];
  const bool single = argc > 3 && std::string(argv[3]) == "--single";
  std::filesystem::create_directories(dir);
  Rng r;
  const size_t namespaces = std::max<size_t>(1, n / 200);
  // Queues are named q-0, q-1, ... in the order they are written, and PriorityClasses tier-0 to
  // tier-4 in turn, so that what PodGroups and pods refer to exists (the defects are elsewhere).
  size_t queues = 0;
  for (size_t i = namespaces; i < n; ++i) queues += (i % 100 >= 70 && i % 100 < 75) ? 1 : 0;
  queues = std::max<size_t>(1, queues);
  size_t queues_written = 0, classes_written = 0;
  std::ofstream out;
  size_t file = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!out.is_open() || (!single && i % 1000 == 0)) {
      if (out.is_open()) out.close();
      char name[64];
      std::snprintf(name, sizeof name, "manifests-%04zu.yaml", file++);
      out.open(dir / name, std::ios::binary);
    }
    if (i % 1000 != 0 || single) out << "---\n";
    const std::string ns = "team-" + std::to_string(r.below(static_cast<uint32_t>(namespaces)));
    const uint32_t k = static_cast<uint32_t>(i % 100);
    if (i < namespaces) nspace(out, i);
    else if (k < 40) deployment(out, r, i, ns);
    else if (k < 60) pod(out, r, i, ns);
    else if (k < 70) podgroup(out, r, i, ns, queues);
    else if (k < 75) queue(out, r, queues_written++);
    else if (k < 80) quota(out, r, ns, i);
    else if (k < 85) limitrange(out, r, ns, i);
    else if (k < 87) priorityclass(out, r, classes_written++ % 5);
    else if (k < 92) migconfig(out, r, i);
    else deployment(out, r, i, ns);
  }
  return 0;
}
