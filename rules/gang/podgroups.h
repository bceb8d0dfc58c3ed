#pragma once
// PodGroups (Volcano `scheduling.volcano.sh` and scheduler-plugins `scheduling.x-k8s.io`) and the
// pods that belong to them, found in the inventory: pods and pod templates that name the group
// (Volcano annotation / coscheduling label, rules/gang/membership.h), and the workloads a PodGroup
// names as its owner (a Volcano Job, a Kubeflow job, a RayCluster: their controllers create the
// PodGroup with an ownerReference). One pass over the inventory builds the index; look-ups are maps.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "engine/podspec.h"
#include "engine/quantity.h"
#include "rules/gang/membership.h"

namespace gpuguard::rules::gang {

// The kinds a PodGroup rule reads to find members: both PodGroups and every pod-template holder.
[[nodiscard]] inline std::vector<engine::KindRef> podgroup_member_kinds() {
  std::vector<engine::KindRef> kinds = {{"scheduling.volcano.sh", "PodGroup"}, {"scheduling.x-k8s.io", "PodGroup"}};
  for (const auto& k : engine::pod_template_kinds()) kinds.push_back(k);
  return kinds;
}

// One pod template that contributes members: how many pods, and the GPUs each one asks for.
struct MemberTemplate {
  std::string where;  // "Pod team/a", "PyTorchJob team/x Worker"
  std::optional<int64_t> replicas;
  std::map<std::string, engine::Quantity, std::less<>> gpus;  // per pod
};

struct Members {
  std::vector<MemberTemplate> templates;
  // Pods that will ever exist at once; nullopt when some template's count depends on the cluster.
  [[nodiscard]] std::optional<int64_t> pods() const {
    int64_t n = 0;
    for (const auto& t : templates) {
      if (!t.replicas) return std::nullopt;
      n += *t.replicas;
    }
    return n;
  }
};

class MemberIndex {
 public:
  MemberIndex(const engine::Inventory& inv, const engine::ResourceMatcher& gpus) : inv_(inv), gpus_(gpus) {
    // Objects that carry a group mark on some template, keyed by the group they name.
    for (const auto& k : engine::pod_template_kinds()) {
      for (const engine::Object* o : inv.list(k.group, k.kind)) {
        const std::string& ns = inv.namespace_of(*o);
        for (const auto& t : engine::pod_templates(*o)) {
          auto m = template_membership(t);
          if (!m || (m->via != Via::volcano && m->via != Via::coscheduling)) continue;
          const bool volcano = m->via == Via::volcano;
          by_group_[{ns, m->group, volcano}].push_back({o, t.pointer});
          marked_.insert({ns, o->gvk.kind, o->name});
        }
      }
    }
  }

  // The members of a PodGroup, when any are in the inventory.
  [[nodiscard]] std::optional<Members> members_of(const engine::Object& pg) const {
    const std::string& ns = inv_.namespace_of(pg);
    Members out;
    // Owners named by the PodGroup (a Volcano Job, a Kubeflow job, a RayCluster): all their pods.
    if (const json* refs = engine::path(pg.body, {"metadata", "ownerReferences"}); refs && refs->is_array()) {
      for (const json& ref : *refs) {
        auto api = engine::string_at(ref, "apiVersion");
        auto kind = engine::string_at(ref, "kind");
        auto name = engine::string_at(ref, "name");
        if (!api || !kind || !name) continue;
        engine::Gvk gvk = engine::parse_gvk(*api, *kind);
        const engine::Object* owner = inv_.find(gvk.group, gvk.kind, ns, *name);
        if (!owner) continue;
        for (const auto& t : engine::pod_templates(*owner)) add(out, *owner, t);
      }
    }
    if (out.templates.empty()) {
      auto it = by_group_.find({ns, pg.name, is_volcano_podgroup(pg)});
      if (it != by_group_.end()) {
        for (const auto& [o, pointer] : it->second) {
          if (owned_by_marked(*o, ns)) continue;  // its owner's template already counts its pods
          for (const auto& t : engine::pod_templates(*o))
            if (t.pointer == pointer) add(out, *o, t);
        }
      }
    }
    if (out.templates.empty()) return std::nullopt;
    return out;
  }

 private:
  void add(Members& out, const engine::Object& o, const engine::PodTemplate& t) const {
    std::string where = o.display_name() + (t.role.empty() ? "" : " " + t.role);
    out.templates.push_back(MemberTemplate{std::move(where), t.replicas, engine::pod_gpus(t, gpus_)});
  }

  // A ReplicaSet of a marked Deployment, a Pod of a marked ReplicaSet, ...: counted once, by its owner.
  [[nodiscard]] bool owned_by_marked(const engine::Object& o, const std::string& ns) const {
    const json* refs = engine::path(o.body, {"metadata", "ownerReferences"});
    if (!refs || !refs->is_array()) return false;
    for (const json& ref : *refs) {
      if (engine::bool_at(ref, "controller") != std::optional<bool>(true)) continue;
      auto kind = engine::string_at(ref, "kind");
      auto name = engine::string_at(ref, "name");
      if (kind && name && marked_.count({ns, std::string(*kind), std::string(*name)})) return true;
    }
    return false;
  }

  const engine::Inventory& inv_;
  const engine::ResourceMatcher& gpus_;
  std::map<std::tuple<std::string, std::string, bool>, std::vector<std::pair<const engine::Object*, std::string>>> by_group_;
  std::set<std::tuple<std::string, std::string, std::string>> marked_;
};

}  // namespace gpuguard::rules::gang
