#pragma once
// The API resources gpuguard lists and watches: for each kind the rules know, its group, the
// versions it is served under (in the order the rules understand them best), its plural and scope.

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "engine/rule.h"

namespace gpuguard::kube {

struct Resource {
  std::string group;                  // "" for the core group
  std::vector<std::string> versions;  // candidates, preferred first ("v1beta1", "v1beta2")
  std::string kind;
  std::string plural;                 // engine::resource_of(kind)
  bool namespaced = true;

  [[nodiscard]] engine::KindRef kind_ref() const { return {group, kind}; }
  // "/api/v1/nodes", "/apis/kueue.x-k8s.io/v1beta1/localqueues",
  // "/apis/apps/v1/namespaces/ns/daemonsets" (ns only for namespaced kinds; "" = all namespaces).
  [[nodiscard]] std::string path(std::string_view version, std::string_view ns = "") const;
};

// The resource of a kind, or nullopt when gpuguard does not know the kind ("*", a kind no
// group serves under a name we can list).
[[nodiscard]] std::optional<Resource> resource_for(const engine::KindRef& kind);

// The resources for a set of kinds (unknown kinds are left out and named in `unknown`).
[[nodiscard]] std::vector<Resource> resources_for(const std::set<engine::KindRef>& kinds,
                                                  std::vector<std::string>* unknown = nullptr);

}  // namespace gpuguard::kube
