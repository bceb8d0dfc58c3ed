#pragma once
// Pod templates, wherever a kind keeps them (design.md §2 "kind groups"): one accessor gives every
// rule the pod templates of an object, each with its JSON pointer and replica count, so no rule
// walks kinds itself.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/object.h"
#include "engine/quantity.h"

namespace gpuguard::engine {

// A container of a pod spec: regular, init (including native sidecars) or ephemeral.
struct Container {
  const json* body = nullptr;
  std::string pointer;       // e.g. "/spec/template/spec/containers/1"
  std::string_view name;
  enum class Kind : uint8_t { regular, init, sidecar, ephemeral } kind = Kind::regular;
};

struct PodTemplate {
  // JSON pointer to the object holding `metadata` and `spec` of the pod: "" for a Pod itself,
  // "/spec/template" for a Deployment, "/spec/tasks/0/template" for a Volcano Job task, ...
  std::string pointer;
  const json* tmpl = nullptr;  // that object (metadata + spec)
  const json* spec = nullptr;  // its `spec` (a PodSpec); never null
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

  [[nodiscard]] std::string spec_pointer() const { return pointer + "/spec"; }
  [[nodiscard]] const json& metadata() const;
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

class ResourceMatcher;

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
// GPUs one pod of the template asks for, per GPU resource (only the nonzero ones).
[[nodiscard]] std::map<std::string, Quantity, std::less<>> pod_gpus(const PodTemplate& t, const ResourceMatcher& gpus);
// Whether any container of the template requests or limits a GPU resource (any amount but zero).
[[nodiscard]] bool requests_gpu(const PodTemplate& t, const ResourceMatcher& gpus);
// Whether any pod template of the object does.
[[nodiscard]] bool requests_gpu(const Object& obj, const ResourceMatcher& gpus);

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

// The GPU resources gpuguard knows without configuration: whole GPUs, time-sliced or MPS shares
// (renameByDefault), and MIG slices under the mixed strategy (facts/nvidia.md).
[[nodiscard]] const std::vector<std::string>& default_gpu_resources();

}  // namespace gpuguard::engine
