#pragma once
// Kinds as the API serves them: the resource (plural) of a kind, for RBAC rules and webhook
// registrations, and the list of kinds that hold pod templates.

#include <initializer_list>
#include <string>
#include <vector>

#include "engine/rule.h"

namespace gpuguard::engine {

// Every kind pod_templates() understands (Pod, the workload controllers, Volcano Job, the
// Kubeflow training jobs, JobSet, KubeRay, LeaderWorkerSet).
[[nodiscard]] const std::vector<KindRef>& pod_template_kinds();
// The same without these kinds (a rule that skips some of them does not list them in `checks`).
[[nodiscard]] std::vector<KindRef> pod_template_kinds_except(std::initializer_list<KindRef> skipped);

// The resource name the API serves a kind under ("PriorityClass" → "priorityclasses").
[[nodiscard]] std::string resource_of(const KindRef& kind);

}  // namespace gpuguard::engine
