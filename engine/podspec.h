#pragma once
// Pod templates, wherever a kind keeps them (design.md §2 "kind groups"): one accessor gives every
// rule the pod templates of an object, each with its JSON pointer and replica count, so no rule
// walks kinds itself.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/json.h"
#include "engine/node.h"
#include "engine/object.h"
#include "engine/quantity.h"

namespace gpuguard::engine {

// Which resource names count as GPUs: exact names, or prefixes written with a trailing `*`
// (`nvidia.com/mig-*`).
class ResourceMatcher {
 public:
  ResourceMatcher() = default;
  explicit ResourceMatcher(std::vector<std::string> patterns);
  [[nodiscard]] bool matches(std::string_view resource) const;
  [[nodiscard]] const std::vector<std::string>& patterns() const { return patterns_; }

 private:
  std::vector<std::string> patterns_;
};

// A projection made per set of GPU resource patterns (one set per config; a reloaded config may
// bring another): a list that only grows, shared by every thread, kept with what it projects (an
// object's DerivedViews, a pod template). A copy starts empty (it is of another projected thing);
// a move takes the list.
template <typename T>
class ByMatcher {
 public:
  ByMatcher() = default;
  ByMatcher(ByMatcher&& other) noexcept : head_(other.head_.exchange(nullptr)) {}
  ByMatcher(const ByMatcher& /*other*/) noexcept {}
  ByMatcher& operator=(const ByMatcher& other) noexcept {
    if (this != &other) clear();
    return *this;
  }
  ByMatcher& operator=(ByMatcher&& other) noexcept {
    if (this != &other) {
      clear();
      head_.store(other.head_.exchange(nullptr));
    }
    return *this;
  }
  ~ByMatcher() { clear(); }

  // The projection for `gpus`, made by `make()` (which returns a T) the first time it is asked for.
  template <typename Make>
  const T& get(const ResourceMatcher& gpus, Make&& make) const {
    Entry* head = head_.load(std::memory_order_acquire);
    if (const T* v = find(head, gpus)) return *v;
    auto* e = new Entry{gpus.patterns(), make(), head};
    while (!head_.compare_exchange_weak(e->next, e, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (const T* v = find(e->next, gpus)) {  // another thread made it meanwhile
        delete e;
        return *v;
      }
    }
    return e->value;
  }

 private:
  struct Entry {
    std::vector<std::string> patterns;
    T value;
    Entry* next;
  };
  void clear() noexcept {
    for (Entry* e = head_.exchange(nullptr); e;) delete std::exchange(e, e->next);
  }
  static const T* find(const Entry* e, const ResourceMatcher& gpus) {
    for (; e; e = e->next)
      if (e->patterns == gpus.patterns()) return &e->value;
    return nullptr;
  }
  mutable std::atomic<Entry*> head_{nullptr};
};

// GPUs per GPU resource.
using GpuAmounts = std::map<std::string, Quantity, std::less<>>;

// What the rules ask of a pod template's GPUs (pod_gpus, requests_gpu), made once per template.
struct TemplateGpus {
  GpuAmounts per_pod;  // pod_gpus
  bool any = false;    // requests_gpu
};

// A container of a pod spec: regular, init (including native sidecars) or ephemeral.
struct Container {
  Node body;
  std::string pointer;       // e.g. "/spec/template/spec/containers/1"
  std::string_view name;
  enum class Kind : uint8_t { regular, init, sidecar, ephemeral } kind = Kind::regular;
};

struct PodTemplate {
  // JSON pointer to the object holding `metadata` and `spec` of the pod: "" for a Pod itself,
  // "/spec/template" for a Deployment, "/spec/tasks/0/template" for a Volcano Job task, ...
  std::string pointer;
  Node tmpl;  // that object (metadata + spec)
  Node spec;  // its `spec` (a PodSpec); always a mapping
  // Pods this template stands for: replicas (× parallelism, × hosts, …) where the kind has one;
  // nullopt where it depends on the cluster (DaemonSet) or on an autoscaler.
  std::optional<int64_t> replicas;
  // The template's role in its workload: a Kubeflow replica type ("Worker"), a Volcano task, a
  // Ray group, a JobSet replicated job; "" for single-template kinds.
  std::string role;

  // Its containers in the order containers() yields them: init (and native sidecars), regular,
  // then ephemeral from `ephemeral_from` on.
  std::vector<Container> all_containers;
  size_t ephemeral_from = 0;

  // Its GPUs, per GPU matcher (pod_gpus and requests_gpu make and read them).
  ByMatcher<TemplateGpus> gpu_facts;

  [[nodiscard]] std::string spec_pointer() const { return pointer + "/spec"; }
  // Its `metadata` (absent when it has none that is a mapping).
  [[nodiscard]] Node metadata() const;
};

struct PodViews {
  std::vector<PodTemplate> templates;
};

// Every pod template of the object (empty for kinds without one), with its containers: made once
// per object, on first use, and shared by every rule (see DerivedViews in engine/object.h).
[[nodiscard]] const std::vector<PodTemplate>& pod_templates(const Object& obj);
[[nodiscard]] const PodViews& pod_views(const Object& obj);

// The template's containers: init (native sidecars among them), regular, and ephemeral ones when
// asked for.
[[nodiscard]] std::span<const Container> containers(const PodTemplate& t, bool include_ephemeral = false);

// "container \"train\"", "init container \"setup\"", "sidecar container \"proxy\"".
[[nodiscard]] std::string describe(const Container& c);

// One resource of one pod, added up the way the scheduler does (see pod_requests): regular
// containers and native sidecars summed, each init container with the sidecars started before
// it, the larger of the two. Give it the containers' requests in the order containers() yields them.
class PodSum {
 public:
  void add(Container::Kind kind, const Quantity& request);
  [[nodiscard]] Quantity total() const { return init_max_ > sum_ ? init_max_ : sum_; }

 private:
  Quantity sum_, init_max_;
  Quantity sidecars_;  // running while later init containers run
};

// What one pod of a template asks for, per resource, the way the scheduler adds it up: regular
// containers and native sidecars summed, init containers (run one at a time) as a maximum,
// and each container's request taken from `requests`, or from `limits` when the request is
// absent (the API server copies limits into requests). Amounts that do not parse are skipped.
struct PodResources {
  std::map<std::string, Quantity, std::less<>> requests;
  [[nodiscard]] Quantity get(std::string_view resource) const;
};
[[nodiscard]] PodResources pod_requests(const PodTemplate& t);
// GPUs one pod of the template asks for, per GPU resource (only the nonzero ones): added up once
// per template and matcher, and kept with the template.
[[nodiscard]] const GpuAmounts& pod_gpus(const PodTemplate& t, const ResourceMatcher& gpus);
// Whether any container of the template requests or limits a GPU resource (any amount but zero,
// an amount that does not parse included): found once per template and matcher.
[[nodiscard]] bool requests_gpu(const PodTemplate& t, const ResourceMatcher& gpus);
// Whether any pod template of the object does.
[[nodiscard]] bool requests_gpu(const Object& obj, const ResourceMatcher& gpus);

// The GPU resources gpuguard knows without configuration: whole GPUs, time-sliced or MPS shares
// (renameByDefault), and MIG slices under the mixed strategy (facts/nvidia.md).
[[nodiscard]] const std::vector<std::string>& default_gpu_resources();

// The DRA DeviceClasses counted as GPU classes without configuration (engine/dra.h): NVIDIA's DRA
// driver's (`gpu.nvidia.com`, `mig.nvidia.com`, `vfio.gpu.nvidia.com`) and names ending in
// `.gpu.nvidia.com` (its demo's per-profile MIG classes, `mig-1g-12gb.gpu.nvidia.com`), written
// `*.gpu.nvidia.com`.
[[nodiscard]] const std::vector<std::string>& default_gpu_device_classes();

}  // namespace gpuguard::engine
