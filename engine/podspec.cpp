#include "engine/podspec.h"

#include <algorithm>
#include <unordered_map>
#include <memory>
#include <utility>
#include <vector>

namespace gpuguard::engine {

Node PodTemplate::metadata() const {
  Node m = member(tmpl, "metadata");
  return m.is_object() ? m : Node();
}

namespace {

std::optional<int64_t> mul(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a || !b) return std::nullopt;
  return sat_mul(*a, *b);
}

// Adds the template at `ptr` (relative to `base`, which is at `base_ptr`) when it has a spec.
void add(std::vector<PodTemplate>& out, Node holder, std::string ptr, std::optional<int64_t> replicas,
         std::string role) {
  Node spec = member(holder, "spec");
  if (!spec || !spec->is_object()) return;
  out.push_back(PodTemplate{std::move(ptr), holder, spec, replicas, std::move(role), {}, 0, {}});
}

void add_at(std::vector<PodTemplate>& out, Node parent, std::string_view key, const std::string& parent_ptr,
            std::optional<int64_t> replicas, std::string role) {
  Node t = member(parent, key);
  if (t.is_object()) add(out, t, pointer_join(parent_ptr, key), replicas, std::move(role));
}

int64_t int_or(Node j, std::string_view key, int64_t dflt) { return int_at(j, key).value_or(dflt); }

// KubeRay: headGroupSpec and workerGroupSpecs under `spec_ptr`.
void ray_cluster_spec(std::vector<PodTemplate>& out, Node rc, const std::string& ptr) {
  if (Node head = member(rc, "headGroupSpec"); head && head->is_object())
    add_at(out, *head, "template", pointer_join(ptr, "headGroupSpec"), 1, "head");
  if (Node workers = member(rc, "workerGroupSpecs"); workers && workers->is_array()) {
    size_t i = 0;
    for (Node w : workers) {
      const size_t index = i++;
      if (!w.is_object()) continue;
      std::optional<int64_t> replicas = int_at(w, "replicas");
      if (!replicas) replicas = int_at(w, "minReplicas");
      if (!replicas) replicas = 0;
      std::string role(string_at(w, "groupName").value_or("worker"));
      add_at(out, w, "template", pointer_join(pointer_join(ptr, "workerGroupSpecs"), index),
             mul(replicas, int_or(w, "numOfHosts", 1)), role);
    }
  }
}

// Kubeflow training-operator replica maps (replicas default to 1), in key order (Master before
// Worker, as the API server's map and the JSON of an AdmissionReview have them; the document has
// them as written).
void replica_map(std::vector<PodTemplate>& out, Node spec, std::string_view key) {
  Node specs = member(spec, key);
  if (!specs || !specs->is_object()) return;
  std::string base = pointer_join("/spec", key);
  for (const auto& [rtype, rs] : sorted_items(specs))
    if (rs.is_object()) add_at(out, rs, "template", pointer_join(base, rtype), int_or(rs, "replicas", 1), std::string(rtype));
}

// Every pod template of the object, without containers (pod_views adds them).
std::vector<PodTemplate> make_templates(const Object& obj) {
  std::vector<PodTemplate> out;
  if (!obj.is_kubernetes_object()) return out;
  Node body = obj.root();
  const std::string& g = obj.gvk.group;
  const std::string& k = obj.gvk.kind;
  Node spec = member(body, "spec");

  if (g.empty() && k == "Pod") {
    add(out, body, "", 1, "");
    return out;
  }
  if (g.empty() && k == "PodTemplate") {
    add_at(out, body, "template", "", std::nullopt, "");
    return out;
  }
  if (!spec || !spec->is_object()) return out;

  if ((g == "apps" && (k == "Deployment" || k == "StatefulSet" || k == "ReplicaSet")) ||
      (g.empty() && k == "ReplicationController")) {
    add_at(out, *spec, "template", "/spec", int_or(*spec, "replicas", 1), "");
  } else if (g == "apps" && k == "DaemonSet") {
    add_at(out, *spec, "template", "/spec", std::nullopt, "");
  } else if (g == "batch" && k == "Job") {
    add_at(out, *spec, "template", "/spec", int_or(*spec, "parallelism", 1), "");
  } else if (g == "batch" && k == "CronJob") {
    Node jt = member(*spec, "jobTemplate");
    Node js = jt ? member(*jt, "spec") : Node();
    if (js && js->is_object())
      add_at(out, *js, "template", "/spec/jobTemplate/spec", int_or(*js, "parallelism", 1), "");
  } else if (g == "batch.volcano.sh" && k == "Job") {
    if (Node tasks = member(*spec, "tasks"); tasks && tasks->is_array()) {
      size_t i = 0;
      for (Node t : tasks) {
        const size_t index = i++;
        if (!t.is_object()) continue;
        add_at(out, t, "template", pointer_join("/spec/tasks", index), int_or(t, "replicas", 0),
               std::string(string_at(t, "name").value_or("")));
      }
    }
  } else if (g == "kubeflow.org") {
    if (k == "PyTorchJob") replica_map(out, *spec, "pytorchReplicaSpecs");
    else if (k == "TFJob") replica_map(out, *spec, "tfReplicaSpecs");
    else if (k == "MPIJob") replica_map(out, *spec, "mpiReplicaSpecs");
    else if (k == "JAXJob") replica_map(out, *spec, "jaxReplicaSpecs");
    else if (k == "XGBoostJob") replica_map(out, *spec, "xgbReplicaSpecs");
    else if (k == "PaddleJob") replica_map(out, *spec, "paddleReplicaSpecs");
  } else if (g == "jobset.x-k8s.io" && k == "JobSet") {
    if (Node rjs = member(*spec, "replicatedJobs"); rjs && rjs->is_array()) {
      size_t i = 0;
      for (Node rj : rjs) {
        const size_t index = i++;
        Node jt = member(rj, "template");
        Node js = jt ? member(*jt, "spec") : Node();
        if (!js || !js->is_object()) continue;
        std::string base = pointer_join("/spec/replicatedJobs", index) + "/template/spec";
        add_at(out, *js, "template", base, mul(int_or(rj, "replicas", 1), int_or(*js, "parallelism", 1)),
               std::string(string_at(rj, "name").value_or("")));
      }
    }
  } else if (g == "ray.io") {
    if (k == "RayCluster") ray_cluster_spec(out, *spec, "/spec");
    else if (k == "RayJob") {
      if (Node rc = member(*spec, "rayClusterSpec"); rc && rc->is_object())
        ray_cluster_spec(out, *rc, "/spec/rayClusterSpec");
      add_at(out, *spec, "submitterPodTemplate", "/spec", 1, "submitter");
    } else if (k == "RayService") {
      if (Node rc = member(*spec, "rayClusterConfig"); rc && rc->is_object())
        ray_cluster_spec(out, *rc, "/spec/rayClusterConfig");
    }
  } else if (g == "leaderworkerset.x-k8s.io" && k == "LeaderWorkerSet") {
    if (Node lwt = member(*spec, "leaderWorkerTemplate"); lwt && lwt->is_object()) {
      int64_t groups = int_or(*spec, "replicas", 1);
      int64_t size = int_or(*lwt, "size", 1);
      const std::string base = "/spec/leaderWorkerTemplate";
      if (member(*lwt, "leaderTemplate")) {
        add_at(out, *lwt, "leaderTemplate", base, groups, "leader");
        add_at(out, *lwt, "workerTemplate", base, sat_mul(groups, sat_add(size, -1)), "worker");
      } else {
        add_at(out, *lwt, "workerTemplate", base, sat_mul(groups, size), "worker");
      }
    }
  }
  return out;
}

void add_containers(PodTemplate& t) {
  std::vector<Container>& out = t.all_containers;
  const std::string spec_ptr = t.spec_pointer();
  auto list = [&](std::string_view key, Container::Kind kind) {
    Node arr = member(*t.spec, key);
    if (!arr || !arr->is_array()) return;
    const std::string base = pointer_join(spec_ptr, key);
    size_t i = 0;
    for (Node c : arr) {
      const size_t index = i++;
      if (!c.is_object()) continue;
      Container::Kind ck = kind;
      if (kind == Container::Kind::init && string_at(c, "restartPolicy") == std::optional<std::string_view>("Always"))
        ck = Container::Kind::sidecar;
      out.push_back(Container{c, pointer_join(base, index), string_at(c, "name").value_or(""), ck});
    }
  };
  list("initContainers", Container::Kind::init);
  list("containers", Container::Kind::regular);
  t.ephemeral_from = out.size();
  list("ephemeralContainers", Container::Kind::ephemeral);
}

}  // namespace

const PodViews& pod_views(const Object& obj) {
  return obj.views.get<PodViews>([&] {
    PodViews v;
    v.templates = make_templates(obj);
    for (auto& t : v.templates) add_containers(t);
    return v;
  });
}

const std::vector<PodTemplate>& pod_templates(const Object& obj) { return pod_views(obj).templates; }

std::span<const Container> containers(const PodTemplate& t, bool include_ephemeral) {
  std::span<const Container> all(t.all_containers);
  return include_ephemeral ? all : all.first(t.ephemeral_from);
}

std::string describe(const Container& c) {
  std::string kind;
  switch (c.kind) {
    case Container::Kind::regular: kind = "container"; break;
    case Container::Kind::init: kind = "init container"; break;
    case Container::Kind::sidecar: kind = "sidecar container"; break;
    case Container::Kind::ephemeral: kind = "ephemeral container"; break;
  }
  return kind + " \"" + std::string(c.name) + "\"";
}

Quantity PodResources::get(std::string_view resource) const {
  auto it = requests.find(resource);
  return it == requests.end() ? Quantity() : it->second;
}

namespace {

// A resource and the amount a container asks for, a view of the container's key.
using Ask = std::pair<std::string_view, Quantity>;

// One container's effective requests into `out` (cleared first): `requests`, else `limits` for
// each resource (the API server copies limits into absent requests); amounts that do not parse are
// skipped. Only the resources `only` matches, when given (each resource is summed on its own, so
// leaving the others out changes nothing for the ones kept). Returns whether the container names
// one of those with an amount that is not zero, one that does not parse included.
// Linear in the container's resources (a limit's request is looked up by key in `requests`:
// document lookups are indexed for large mappings, engine/positions.h).
bool container_requests(Node c, const ResourceMatcher* only, std::vector<Ask>& out) {
  out.clear();
  bool nonzero = false;
  Node res = member(c, "resources");
  if (!res) return false;
  const Node requests = member(*res, "requests");
  const bool have_requests = requests && requests->is_object();
  if (have_requests) {
    for (const auto entry : requests->items()) {
      const std::string_view name = entry.key;
      if (only && !only->matches(name)) continue;
      auto q = Quantity::from_node(entry.value);
      if (!q || !q->is_zero()) nonzero = true;
      if (q) out.emplace_back(name, *q);
    }
  }
  const Node limits = member(*res, "limits");
  if (limits && limits->is_object()) {
    for (const auto entry : limits->items()) {
      const std::string_view name = entry.key;
      if (only && !only->matches(name)) continue;
      auto q = Quantity::from_node(entry.value);
      if (!q || !q->is_zero()) nonzero = true;
      if (!q) continue;
      // A request of the resource overrides the limit the API server would copy, if it parses.
      if (have_requests) {
        const Node request = member(*requests, name);
        if (request && Quantity::from_node(request)) continue;
      }
      out.emplace_back(name, *q);
    }
  }
  return nonzero;
}

}  // namespace

void PodSum::add(Container::Kind kind, const Quantity& request) {
  if (kind == Container::Kind::init) {
    if (request + sidecars_ > init_max_) init_max_ = request + sidecars_;
    return;
  }
  sum_ = sum_ + request;
  if (kind == Container::Kind::sidecar) sidecars_ = sidecars_ + request;
}

PodResources pod_requests(const PodTemplate& t) {
  std::map<std::string, PodSum, std::less<>> sums;
  std::vector<Ask> asks;
  for (const auto& c : containers(t)) {
    container_requests(c.body, nullptr, asks);
    for (const auto& [name, q] : asks) {
      auto it = sums.find(name);
      if (it == sums.end()) it = sums.emplace(std::string(name), PodSum{}).first;
      it->second.add(c.kind, q);
    }
  }
  PodResources out;
  for (const auto& [name, sum] : sums) out.requests.emplace(name, sum.total());
  return out;
}

namespace {

// The GPU amounts of a template, each parsed once: it names a handful of GPU resources at most, so
// they are summed in a small vector of views of the keys, not a map.
const TemplateGpus& template_gpus(const PodTemplate& t, const ResourceMatcher& gpus) {
  return t.gpu_facts.get(gpus, [&] {
    TemplateGpus out;
    std::vector<std::pair<std::string_view, PodSum>> sums;  // per resource, in first-seen order
    // Past a few resources (a hostile template naming thousands), where each is in `sums`.
    constexpr size_t kFew = 16;
    std::unordered_map<std::string_view, size_t> index;
    std::vector<Ask> asks;
    for (const auto& c : containers(t)) {
      if (container_requests(c.body, &gpus, asks)) out.any = true;
      for (const auto& ask : asks) {
        size_t at = sums.size();
        if (index.empty()) {
          at = static_cast<size_t>(std::find_if(sums.begin(), sums.end(), [&](const auto& s) { return s.first == ask.first; }) -
                                   sums.begin());
        } else if (auto it = index.find(ask.first); it != index.end()) {
          at = it->second;
        }
        if (at == sums.size()) {
          sums.emplace_back(ask.first, PodSum{});
          if (!index.empty()) index.emplace(ask.first, at);
          else if (sums.size() > kFew)
            for (size_t k = 0; k < sums.size(); ++k) index.emplace(sums[k].first, k);
        }
        sums[at].second.add(c.kind, ask.second);
      }
    }
    for (const auto& [name, sum] : sums)
      if (Quantity total = sum.total(); !total.is_zero()) out.per_pod.emplace(std::string(name), total);
    return out;
  });
}

}  // namespace

const GpuAmounts& pod_gpus(const PodTemplate& t, const ResourceMatcher& gpus) { return template_gpus(t, gpus).per_pod; }

bool requests_gpu(const PodTemplate& t, const ResourceMatcher& gpus) { return template_gpus(t, gpus).any; }

bool requests_gpu(const Object& obj, const ResourceMatcher& gpus) {
  for (const auto& t : pod_templates(obj))
    if (requests_gpu(t, gpus)) return true;
  return false;
}

ResourceMatcher::ResourceMatcher(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}

bool ResourceMatcher::matches(std::string_view resource) const {
  for (const auto& p : patterns_) {
    if (!p.empty() && p.back() == '*') {
      if (resource.starts_with(std::string_view(p).substr(0, p.size() - 1)) && resource.size() >= p.size()) return true;
    } else if (p == resource) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& default_gpu_resources() {
  static const std::vector<std::string> kDefaults = {"nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-*"};
  return kDefaults;
}

const std::vector<std::string>& default_gpu_device_classes() {
  // NVIDIA/k8s-dra-driver-gpu deployments/helm/.../templates/deviceclass-*.yaml @22407113
  // (facts/modern-stack.md §1).
  static const std::vector<std::string> kDefaults = {"gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
                                                     "*.gpu.nvidia.com"};
  return kDefaults;
}

}  // namespace gpuguard::engine

