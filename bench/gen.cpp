// bench/gen: a deterministic manifest set of N objects, in one of several shapes (issue 46):
//   mix       the mix of a GPU cluster (GPU Deployments and Pods with affinity, PodGroups, Volcano
//             Queues, ResourceQuotas, LimitRanges, PriorityClasses, mig-parted ConfigMaps,
//             Namespaces; some with defects): about 0.9 findings per object.
//   findings  a snapshot whose PriorityClasses and queues are not in the input and whose GPU pods
//             lack tolerations and model pinning: over 2 findings per object.
//   people    manifests as people write them: comments, flow sequences and mappings
//             (`command: ["torchrun", ...]`, `labels: {app: x}`), block literals (scripts,
//             embedded configs), quoted strings.
//   kubectl   `kubectl get -A -o yaml` output: Lists of 500 items with status, managedFields and
//             the last-applied-configuration annotation.
//   helm      `helm template` output: `# Source:` comments, Helm's labels, quoted values.
//   dra       DRA and KAI workloads: DeviceClasses, ResourceClaimTemplates, Deployments and
//             PyTorchJobs taking GPUs by claim, KAI Queues and fractional-GPU pods.
//
//   gen N DIR [--single] [--set NAME]   N objects in DIR/manifests-NNNN.yaml (1,000 per file), or one file

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

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

// --- findings: a cluster snapshot the rules find much in -------------------------------------

void finding_pod(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  // Names a PriorityClass and a queue the input does not hold; no toleration, no model pinning;
  // one in four asks for a GPU request without a limit.
  const bool request_only = r.below(4) == 0;
  o << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: worker-" << i << "\n  namespace: " << ns
    << "\n  labels: {app: trainer-" << i / 8 << ", role: worker}\n"
    << "  annotations: {scheduling.k8s.io/group-name: job-" << i / 8 << "}\n"
    << "spec:\n  schedulerName: volcano\n  priorityClassName: missing-" << r.below(3) << "\n"
    << "  containers:\n    - name: train\n      image: nvcr.io/nvidia/pytorch:24.06-py3\n"
    << "      command: [\"torchrun\", \"--nnodes=4\", \"--nproc_per_node=8\", \"train.py\", \"--config\", \"/etc/train/config.yaml\"]\n"
    << "      resources:\n";
  if (request_only) o << "        requests: {nvidia.com/gpu: 8, cpu: \"32\"}\n";
  else o << "        limits: {nvidia.com/gpu: 8, cpu: \"64\", memory: 512Gi}\n";
  o << "    - name: sidecar\n      image: busybox\n      args: [sh, -c, \"sleep infinity\"]\n";
}

void finding_deployment(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  o << "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: serve-" << i << "\n  namespace: " << ns
    << "\n  labels: {app: serve-" << i << ", workload-type: inference}\nspec:\n  replicas: " << 1 + r.below(3)
    << "\n  selector: {matchLabels: {app: serve-" << i << "}}\n  template:\n    metadata: {labels: {app: serve-" << i << "}}\n"
    << "    spec:\n      priorityClassName: missing-" << r.below(3) << "\n      containers:\n        - name: server\n"
    << "          image: vllm/vllm-openai:v0.6.0\n          args: [\"--model\", \"meta-llama/Llama-3-8B\", \"--gpu-memory-utilization\", \"0.9\"]\n"
    << "          resources: {limits: {nvidia.com/gpu: " << 1 + r.below(2) << "}}\n";
}

void finding_podgroup(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  o << "apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: job-" << i / 8 << "-pg\n  namespace: " << ns
    << "\nspec:\n  minMember: " << 2 + r.below(6) << "\n  queue: absent-" << r.below(4) << "\n  minResources: {nvidia.com/gpu: 32}\n";
}

void findings_set(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  const uint32_t k = static_cast<uint32_t>(i % 10);
  if (k < 6) finding_pod(o, r, i, ns);
  else if (k < 9) finding_deployment(o, r, i, ns);
  else finding_podgroup(o, r, i, ns);
}

// --- people: the shapes people write ---------------------------------------------------------

void people_set(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  switch (i % 4) {
    case 0:
      o << "# Training job for the " << ns << " team. Owner: ml-platform@example.com\n"
        << "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: \"finetune-" << i << "\"\n  namespace: " << ns << "\n"
        << "  labels: {app: finetune, team: \"" << ns << "\", kueue.x-k8s.io/queue-name: team-queue}\n"
        << "spec:\n  backoffLimit: 2   # retries are expensive\n  parallelism: " << 1 + r.below(4) << "\n  template:\n    spec:\n"
        << "      restartPolicy: Never\n      priorityClassName: tier-" << r.below(4) << "\n"
        << "      nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"
        << "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
        << "      containers:\n      - name: train\n        image: 'nvcr.io/nvidia/pytorch:24.06-py3'\n"
        << "        command: [\"/bin/bash\", \"-c\"]\n        args:\n          - |\n"
        << "            set -euo pipefail\n            echo \"starting rank ${RANK:-0}\"\n"
        << "            pip install -r /workspace/requirements.txt\n"
        << "            torchrun --nproc_per_node=8 finetune.py \\\n              --epochs " << 1 + r.below(5)
        << " \\\n              --lr 3e-5 --output /checkpoints/run-" << i << "\n"
        << "        resources:\n          limits:\n            nvidia.com/gpu: 8   # a whole node\n            memory: \"512Gi\"\n";
      break;
    case 1:
      o << "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: serve-config-" << i << "\n  namespace: " << ns << "\n"
        << "data:\n  config.yaml: |\n    model: meta-llama/Llama-3-70B\n    tensor_parallel_size: 4\n"
        << "    max_model_len: 8192\n    # tuned on H100\n    gpu_memory_utilization: 0.92\n"
        << "  launch.sh: >-\n    python -m vllm.entrypoints.openai.api_server\n    --config /etc/serve/config.yaml\n";
      break;
    case 2:
      o << "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: serve-" << i << "\n  namespace: " << ns << "\n"
        << "  annotations:\n    description: \"LLM inference, 4 replicas behind the gateway\"\n"
        << "spec:\n  replicas: 4\n  selector:\n    matchLabels: {app: serve-" << i << "}\n  template:\n"
        << "    metadata:\n      labels: {app: serve-" << i << ", workload-type: inference}\n    spec:\n"
        << "      priorityClassName: tier-" << r.below(4) << "\n"
        << "      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: "
        << "[{matchExpressions: [{key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-H100-80GB-HBM3]}]}]}}}\n"
        << "      tolerations:\n      - key: nvidia.com/gpu\n        operator: Exists\n        effect: NoSchedule\n"
        << "      containers:\n      - name: vllm\n        image: vllm/vllm-openai:v0.6.0\n"
        << "        args: [--config, /etc/serve/config.yaml]\n        ports: [{containerPort: 8000, name: http}]\n"
        << "        env:\n        - {name: HF_HOME, value: /cache}\n        - name: HUGGING_FACE_HUB_TOKEN\n"
        << "          valueFrom: {secretKeyRef: {name: hf-token, key: token}}\n"
        << "        resources: {limits: {nvidia.com/gpu: 4, memory: 256Gi}, requests: {cpu: '16'}}\n"
        << "        volumeMounts: [{name: config, mountPath: /etc/serve}, {name: cache, mountPath: /cache}]\n"
        << "      volumes:\n      - name: config\n        configMap: {name: serve-config-" << i - 1 << "}\n"
        << "      - {name: cache, emptyDir: {medium: Memory, sizeLimit: 32Gi}}\n";
      break;
    default:
      o << "apiVersion: v1\nkind: Service\nmetadata: {name: serve-" << i - 1 << ", namespace: " << ns << "}\n"
        << "spec:\n  selector: {app: serve-" << i - 1 << "}\n  ports: [{port: 80, targetPort: http}]\n";
  }
}

// --- kubectl: what `kubectl get -A -o yaml` prints --------------------------------------------

void kubectl_item(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  // A List item, indented under `items:` as kubectl writes it.
  const bool deploy = i % 3 != 0;
  const std::string name = (deploy ? "infer-" : "train-") + std::to_string(i);
  o << "- apiVersion: " << (deploy ? "apps/v1" : "v1") << "\n  kind: " << (deploy ? "Deployment" : "Pod") << "\n  metadata:\n"
    << "    annotations:\n";
  if (deploy) o << "      deployment.kubernetes.io/revision: \"" << 1 + r.below(9) << "\"\n";
  o << "      kubectl.kubernetes.io/last-applied-configuration: |\n        {\"apiVersion\":\"" << (deploy ? "apps/v1" : "v1")
    << "\",\"kind\":\"" << (deploy ? "Deployment" : "Pod") << "\",\"metadata\":{\"annotations\":{},\"name\":\"" << name
    << "\",\"namespace\":\"" << ns << "\"},\"spec\":{\"containers\":[{\"image\":\"nvcr.io/nvidia/tritonserver:24.06-py3\",\"name\":\"server\","
    << "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}],\"priorityClassName\":\"tier-1\"}}\n"
    << "    creationTimestamp: \"2026-11-" << 10 + r.below(18) << "T0" << r.below(10) << ":12:45Z\"\n";
  if (deploy) o << "    generation: " << 1 + r.below(9) << "\n";
  o << "    labels:\n      app: " << name << "\n    managedFields:\n"
    << "    - apiVersion: " << (deploy ? "apps/v1" : "v1") << "\n      fieldsType: FieldsV1\n      fieldsV1:\n"
    << "        f:metadata:\n          f:annotations:\n            .: {}\n            f:kubectl.kubernetes.io/last-applied-configuration: {}\n"
    << "          f:labels:\n            .: {}\n            f:app: {}\n        f:spec:\n"
    << "          f:containers:\n            k:{\"name\":\"server\"}:\n              .: {}\n              f:image: {}\n"
    << "              f:imagePullPolicy: {}\n              f:name: {}\n              f:resources:\n                .: {}\n"
    << "                f:limits:\n                  .: {}\n                  f:nvidia.com/gpu: {}\n"
    << "          f:priorityClassName: {}\n      manager: kubectl-client-side-apply\n      operation: Update\n"
    << "      time: \"2026-11-20T09:12:45Z\"\n"
    << "    - apiVersion: " << (deploy ? "apps/v1" : "v1") << "\n      fieldsType: FieldsV1\n      fieldsV1:\n        f:status:\n"
    << "          f:conditions:\n            .: {}\n            k:{\"type\":\"Available\"}:\n              .: {}\n"
    << "              f:lastTransitionTime: {}\n              f:status: {}\n              f:type: {}\n"
    << "      manager: kube-controller-manager\n      operation: Update\n      subresource: status\n"
    << "      time: \"2026-11-20T09:13:02Z\"\n"
    << "    name: " << name << "\n    namespace: " << ns << "\n    resourceVersion: \"" << 100000 + r.below(900000) << "\"\n"
    << "    uid: " << std::hex << r.next() << "-" << (r.next() & 0xffff) << "-4" << (r.next() & 0xfff) << "-a" << (r.next() & 0xfff)
    << "-" << r.next() << std::dec << "\n";
  const char* pod_spec_indent = deploy ? "        " : "    ";
  if (deploy) {
    o << "  spec:\n    progressDeadlineSeconds: 600\n    replicas: " << 1 + r.below(4) << "\n    revisionHistoryLimit: 10\n"
      << "    selector:\n      matchLabels:\n        app: " << name << "\n    strategy:\n      rollingUpdate:\n"
      << "        maxSurge: 25%\n        maxUnavailable: 25%\n      type: RollingUpdate\n    template:\n      metadata:\n"
      << "        creationTimestamp: null\n        labels:\n          app: " << name << "\n      spec:\n";
  } else {
    o << "  spec:\n";
  }
  const std::string in(pod_spec_indent);
  o << in << "containers:\n" << in << "- image: nvcr.io/nvidia/tritonserver:24.06-py3\n" << in << "  imagePullPolicy: IfNotPresent\n"
    << in << "  name: server\n" << in << "  resources:\n" << in << "    limits:\n" << in << "      nvidia.com/gpu: \"1\"\n"
    << in << "    requests:\n" << in << "      nvidia.com/gpu: \"1\"\n" << in << "  terminationMessagePath: /dev/termination-log\n"
    << in << "  terminationMessagePolicy: File\n" << in << "dnsPolicy: ClusterFirst\n" << in << "enableServiceLinks: true\n"
    << in << "preemptionPolicy: PreemptLowerPriority\n" << in << "priority: 2000\n" << in << "priorityClassName: tier-1\n"
    << in << "restartPolicy: Always\n" << in << "schedulerName: default-scheduler\n" << in << "securityContext: {}\n"
    << in << "terminationGracePeriodSeconds: 30\n" << in << "tolerations:\n" << in << "- effect: NoSchedule\n"
    << in << "  key: nvidia.com/gpu\n" << in << "  operator: Exists\n";
  if (deploy) {
    o << "  status:\n    availableReplicas: 1\n    conditions:\n    - lastTransitionTime: \"2026-11-20T09:13:02Z\"\n"
      << "      lastUpdateTime: \"2026-11-20T09:13:02Z\"\n      message: Deployment has minimum availability.\n"
      << "      reason: MinimumReplicasAvailable\n      status: \"True\"\n      type: Available\n"
      << "    observedGeneration: 1\n    readyReplicas: 1\n    replicas: 1\n    updatedReplicas: 1\n";
  } else {
    o << "  status:\n    conditions:\n    - lastProbeTime: null\n      lastTransitionTime: \"2026-11-20T09:13:02Z\"\n"
      << "      status: \"True\"\n      type: Ready\n    hostIP: 10.0." << r.below(255) << "." << r.below(255) << "\n"
      << "    phase: Running\n    podIP: 10.244." << r.below(255) << "." << r.below(255) << "\n    qosClass: BestEffort\n"
      << "    startTime: \"2026-11-20T09:12:46Z\"\n";
  }
}

// --- helm: what `helm template` prints --------------------------------------------------------

void helm_set(std::ostream& o, Rng& r, size_t i, const std::string& ns) {
  const std::string release = "rel-" + std::to_string(i / 4);
  const char* labels =
      "    helm.sh/chart: inference-0.4.2\n    app.kubernetes.io/name: inference\n    app.kubernetes.io/instance: ";
  switch (i % 4) {
    case 0:
      o << "# Source: inference/templates/serviceaccount.yaml\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: " << release
        << "-inference\n  namespace: " << ns << "\n  labels:\n" << labels << release << "\n    app.kubernetes.io/version: \"0.6.0\"\n"
        << "    app.kubernetes.io/managed-by: Helm\n";
      break;
    case 1:
      o << "# Source: inference/templates/configmap.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " << release
        << "-inference-config\n  namespace: " << ns << "\n  labels:\n" << labels << release << "\n    app.kubernetes.io/managed-by: Helm\n"
        << "data:\n  MODEL: \"meta-llama/Llama-3-8B\"\n  MAX_MODEL_LEN: \"8192\"\n";
      break;
    case 2:
      o << "# Source: inference/templates/service.yaml\napiVersion: v1\nkind: Service\nmetadata:\n  name: " << release
        << "-inference\n  namespace: " << ns << "\n  labels:\n" << labels << release << "\n    app.kubernetes.io/managed-by: Helm\n"
        << "spec:\n  type: ClusterIP\n  ports:\n    - port: 8000\n      targetPort: http\n      protocol: TCP\n      name: http\n"
        << "  selector:\n    app.kubernetes.io/name: inference\n    app.kubernetes.io/instance: " << release << "\n";
      break;
    default:
      o << "# Source: inference/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: " << release
        << "-inference\n  namespace: " << ns << "\n  labels:\n" << labels << release << "\n    app.kubernetes.io/managed-by: Helm\n"
        << "spec:\n  replicas: " << 1 + r.below(3) << "\n  selector:\n    matchLabels:\n      app.kubernetes.io/name: inference\n"
        << "      app.kubernetes.io/instance: " << release << "\n  template:\n    metadata:\n      annotations:\n"
        << "        checksum/config: " << std::hex << r.next() << r.next() << r.next() << std::dec << "\n      labels:\n"
        << "        app.kubernetes.io/name: inference\n        app.kubernetes.io/instance: " << release << "\n    spec:\n"
        << "      serviceAccountName: " << release << "-inference\n      priorityClassName: \"tier-" << r.below(4) << "\"\n"
        << "      securityContext:\n        {}\n      containers:\n        - name: inference\n          securityContext:\n            {}\n"
        << "          image: \"vllm/vllm-openai:v0.6.0\"\n          imagePullPolicy: IfNotPresent\n          envFrom:\n"
        << "            - configMapRef:\n                name: " << release << "-inference-config\n          ports:\n"
        << "            - name: http\n              containerPort: 8000\n              protocol: TCP\n          resources:\n"
        << "            limits:\n              nvidia.com/gpu: " << 1 + r.below(2) << "\n      nodeSelector:\n"
        << "        nvidia.com/gpu.product: NVIDIA-L40S\n      tolerations:\n        - effect: NoSchedule\n"
        << "          key: nvidia.com/gpu\n          operator: Exists\n";
  }
}

// --- dra: DRA and KAI workloads ----------------------------------------------------------------

void dra_set(std::ostream& o, Rng& r, size_t i, const std::string& ns, size_t first) {
  if (i == first) {
    o << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu.nvidia.com}\nspec:\n  selectors:\n"
      << "  - cel: {expression: \"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'\"}\n";
    return;
  }
  if (i == first + 1) {
    o << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: mig.nvidia.com}\nspec:\n  selectors:\n"
      << "  - cel: {expression: \"device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'\"}\n";
    return;
  }
  const char* products[] = {"NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S"};
  switch (i % 6) {
    case 0:  // a claim template: one or more GPUs of a model
      o << "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: gpus-" << i << "\n  namespace: " << ns
        << "\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.nvidia.com\n"
        << "          count: " << 1 + r.below(4) << "\n          selectors:\n          - cel:\n"
        << "              expression: \"device.attributes['gpu.nvidia.com'].productName == '" << products[r.below(3)] << "'\"\n";
      break;
    case 1:  // a Deployment taking them (every fourth without a PriorityClass)
      o << "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: serve-" << i << "\n  namespace: " << ns
        << "\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: serve-" << i << "}}\n  template:\n"
        << "    metadata: {labels: {app: serve-" << i << "}}\n    spec:\n" << (r.below(4) ? "      priorityClassName: tier-1\n" : "")
        << "      tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
        << "      resourceClaims:\n      - name: gpus\n        resourceClaimTemplateName: gpus-" << i - 1 << "\n"
        << "      containers:\n      - name: server\n        image: vllm/vllm-openai:v0.6.0\n        resources:\n"
        << "          claims: [{name: gpus}]\n";
      break;
    case 2:  // a MIG claim template
      o << "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: mig-" << i << "\n  namespace: " << ns
        << "\nspec:\n  spec:\n    devices:\n      requests:\n      - name: mig\n        exactly:\n          deviceClassName: mig.nvidia.com\n"
        << "          selectors:\n          - cel: {expression: \"device.attributes['gpu.nvidia.com'].profile == '1g.10gb'\"}\n";
      break;
    case 3:  // a PyTorchJob under KAI, on the MIG claim
      o << "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: tune-" << i << "\n  namespace: " << ns
        << "\n  labels: {kai.scheduler/queue: team-" << r.below(8) << "}\nspec:\n  pytorchReplicaSpecs:\n    Worker:\n      replicas: "
        << 1 + r.below(4) << "\n      template:\n        spec:\n          schedulerName: kai-scheduler\n          priorityClassName: tier-2\n"
        << "          resourceClaims: [{name: mig, resourceClaimTemplateName: mig-" << i - 1 << "}]\n"
        << "          containers:\n          - name: pytorch\n            image: nvcr.io/nvidia/pytorch:24.06-py3\n"
        << "            resources: {claims: [{name: mig}]}\n";
      break;
    case 4:  // a KAI Queue
      o << "apiVersion: scheduling.run.ai/v2\nkind: Queue\nmetadata: {name: team-" << i % 8 << "-" << i << "}\nspec:\n"
        << "  parentQueue: default\n  resources:\n    gpu: {quota: " << 8 * r.below(4) << ", limit: " << (r.below(3) ? "32" : "-1")
        << ", overQuotaWeight: 1}\n    cpu: {quota: -1, limit: -1, overQuotaWeight: 1}\n    memory: {quota: -1, limit: -1, overQuotaWeight: 1}\n";
      break;
    default:  // a pod on a fraction of a GPU under KAI
      o << "apiVersion: v1\nkind: Pod\nmetadata:\n  name: notebook-" << i << "\n  namespace: " << ns
        << "\n  labels: {kai.scheduler/queue: team-" << r.below(8) << ", workload-type: " << (r.below(2) ? "inference" : "notebook") << "}\n"
        << "  annotations: {gpu-fraction: \"0." << 1 + r.below(9) << "\"}\nspec:\n  schedulerName: kai-scheduler\n"
        << "  containers:\n  - name: jupyter\n    image: jupyter/pytorch-notebook\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: gen N DIR [--single] [--set mix|findings|people|kubectl|helm|dra]\n");
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const std::filesystem::path dir = argv[2];
  bool single = false;
  std::string set = "mix";
  for (int a = 3; a < argc; ++a) {
    const std::string_view arg(argv[a]);
    if (arg == "--single") single = true;
    else if (arg == "--set" && a + 1 < argc) set = argv[++a];
    else {
      std::fprintf(stderr, "gen: unknown argument %s\n", argv[a]);
      return 2;
    }
  }
  if (set != "mix" && set != "findings" && set != "people" && set != "kubectl" && set != "helm" && set != "dra") {
    std::fprintf(stderr, "gen: unknown set %s (mix, findings, people, kubectl, helm, dra)\n", set.c_str());
    return 2;
  }
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
  if (set != "mix") {
    // The other sets: 1,000 objects a file (a `kubectl get` List of 500 items counts as 500).
    const size_t per_file = 1000;
    for (size_t i = 0; i < n; ++i) {
      const bool new_file = !out.is_open() || (!single && i % per_file == 0);
      if (new_file) {
        if (out.is_open()) out.close();
        char name[64];
        std::snprintf(name, sizeof name, "manifests-%04zu.yaml", file++);
        out.open(dir / name, std::ios::binary);
      }
      const std::string ns = "team-" + std::to_string(r.below(static_cast<uint32_t>(namespaces)));
      if (set == "kubectl") {
        if (i % 500 == 0) out << (new_file ? "" : "---\n") << "apiVersion: v1\nitems:\n";
        kubectl_item(out, r, i, ns);
        if (i % 500 == 499 || i + 1 == n) out << "kind: List\nmetadata:\n  resourceVersion: \"\"\n";
        continue;
      }
      if (!new_file) out << "---\n";
      if (set == "findings") findings_set(out, r, i, ns);
      else if (set == "people") people_set(out, r, i, ns);
      else if (set == "helm") helm_set(out, r, i, ns);
      else dra_set(out, r, i, ns, 0);
    }
    return 0;
  }
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
