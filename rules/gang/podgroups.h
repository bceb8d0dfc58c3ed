#pragma once
// PodGroups (Volcano `scheduling.volcano.sh` and scheduler-plugins `scheduling.x-k8s.io`) and the
// pods that belong to them: pods and pod templates that name the group (Volcano annotation /
// coscheduling label, rules/gang/membership.h), and the workloads a PodGroup names as its owner (a
// Volcano Job, a Kubeflow job, a RayCluster: their controllers create the PodGroup with an
// ownerReference).
//
// Memory: the rules read (keep in the inventory) only the PodGroups and the batch workload kinds
// (`podgroup_read_kinds`), which are few in a cluster. Pods, Deployments, ReplicaSets and the other
// numerous kinds are not kept: `check` projects the few of their templates that name a group into
// the rule's state (`MarkedTemplate`, a handful of strings and numbers). In the webhook, whose
// cluster state holds only the kept kinds, members among those other kinds are not seen.

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
#include "engine/rule.h"
#include "rules/gang/membership.h"

namespace gpuguard::rules::gang {

// The kinds the PodGroup rules keep: both PodGroups and the batch workloads (few, and the owners
// of operator-made PodGroups).
[[nodiscard]] inline const std::vector<engine::KindRef>& podgroup_read_kinds() {
  static const std::vector<engine::KindRef> kKinds = {
      {"scheduling.volcano.sh", "PodGroup"}, {"scheduling.x-k8s.io", "PodGroup"}, {"batch.volcano.sh", "Job"},
      {"kubeflow.org", "PyTorchJob"},        {"kubeflow.org", "TFJob"},           {"kubeflow.org", "MPIJob"},
      {"kubeflow.org", "JAXJob"},            {"kubeflow.org", "XGBoostJob"},      {"kubeflow.org", "PaddleJob"},
      {"jobset.x-k8s.io", "JobSet"},         {"ray.io", "RayCluster"},            {"ray.io", "RayJob"},
      {"batch", "Job"},                      {"apps", "StatefulSet"},
  };
  return kKinds;
}

[[nodiscard]] inline bool is_read_kind(const engine::Object& o) {
  for (const auto& k : podgroup_read_kinds())
    if (o.is(k.group, k.kind)) return true;
  return false;
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
      n = engine::sat_add(n, std::max<int64_t>(*t.replicas, 0));  // (the API refuses negative replicas)
    }
    return n;
  }
};

// A pod template that names a group, with the identity of its object (a projection: no tree).
struct MarkedTemplate {
  std::string ns;
  std::string group;
  bool volcano = true;  // Volcano annotation, else the coscheduling label
  std::string kind, name;
  std::string owner_kind, owner_name;  // the object's controller, if any
  MemberTemplate member;
};

inline MemberTemplate member_template(const engine::Object& o, const engine::PodTemplate& t, const engine::ResourceMatcher& gpus) {
  return MemberTemplate{o.display_name() + (t.role.empty() ? "" : " " + t.role), t.replicas, engine::pod_gpus(t, gpus)};
}

// Appends the templates of `o` that name a group.
inline void project_marked(const engine::Object& o, const std::string& ns, const engine::ResourceMatcher& gpus,
                           engine::Records<MarkedTemplate>& out) {
  std::string owner_kind, owner_name;
  bool owner_read = false;
  for (const auto& t : engine::pod_templates(o)) {
    auto m = template_membership(t);
    if (!m || (m->via != Via::volcano && m->via != Via::coscheduling)) continue;
    if (!owner_read) {
      owner_read = true;
      if (engine::Node refs = engine::path(o.root(), {"metadata", "ownerReferences"}); refs.is_array())
        for (engine::Node ref : refs)
          if (engine::bool_at(ref, "controller") == std::optional<bool>(true)) {
            owner_kind = std::string(engine::string_at(ref, "kind").value_or(""));
            owner_name = std::string(engine::string_at(ref, "name").value_or(""));
            break;
          }
    }
    out.push_back(MarkedTemplate{ns, m->group, m->via == Via::volcano, o.gvk.kind, o.name, owner_kind, owner_name,
                                 member_template(o, t, gpus)});
  }
}

// The projections a PodGroup rule gathers in `check`: marked templates of the kinds it does not keep.
struct MemberState final : engine::RuleState {
  engine::Records<MarkedTemplate> marked;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(engine::RuleState& later) override { engine::append(marked, static_cast<MemberState&>(later).marked); }
};

inline void gather_members(const engine::Object& obj, engine::CheckContext& ctx) {
  if (!obj.is_kubernetes_object() || is_read_kind(obj)) return;  // kept kinds come from the inventory
  auto* st = static_cast<MemberState*>(ctx.state());
  project_marked(obj, ctx.namespace_of_object(), ctx.settings().gpu_resources, st->marked);
}

class MemberIndex {
 public:
  MemberIndex(const engine::Inventory& inv, const engine::ResourceMatcher& gpus, const engine::Records<MarkedTemplate>& gathered)
      : inv_(inv), gpus_(gpus) {
    for (const auto& k : podgroup_read_kinds())
      for (const engine::Object* o : inv.list(k.group, k.kind)) project_marked(*o, inv.namespace_of(*o), gpus, kept_);
    for (const engine::Records<MarkedTemplate>* list : {static_cast<const engine::Records<MarkedTemplate>*>(&kept_), &gathered})
      for (const auto& m : *list) {
        by_group_[{m.ns, m.group, m.volcano}].push_back(&m);
        marked_.insert({m.ns, m.kind, m.name});
      }
  }

  // The members of a PodGroup, when any are known.
  [[nodiscard]] std::optional<Members> members_of(const engine::Object& pg) const {
    const std::string& ns = inv_.namespace_of(pg);
    Members out;
    // Owners named by the PodGroup (a Volcano Job, a Kubeflow job, a RayCluster): all their pods.
    if (engine::Node refs = engine::path(pg.root(), {"metadata", "ownerReferences"}); refs.is_array()) {
      for (engine::Node ref : refs) {
        auto api = engine::string_at(ref, "apiVersion");
        auto kind = engine::string_at(ref, "kind");
        auto name = engine::string_at(ref, "name");
        if (!api || !kind || !name) continue;
        engine::Gvk gvk = engine::parse_gvk(*api, *kind);
        const engine::Object* owner = inv_.find(gvk.group, gvk.kind, ns, *name);
        if (!owner) continue;
        for (const auto& t : engine::pod_templates(*owner)) out.templates.push_back(member_template(*owner, t, gpus_));
      }
    }
    if (out.templates.empty()) {
      auto it = by_group_.find({ns, pg.name, is_volcano_podgroup(pg)});
      if (it != by_group_.end())
        for (const MarkedTemplate* m : it->second)
          // A ReplicaSet of a marked Deployment, a Pod of a marked ReplicaSet: counted once, by its owner.
          if (m->owner_kind.empty() || !marked_.count({ns, m->owner_kind, m->owner_name})) out.templates.push_back(m->member);
    }
    if (out.templates.empty()) return std::nullopt;
    return out;
  }

 private:
  const engine::Inventory& inv_;
  const engine::ResourceMatcher& gpus_;
  engine::Records<MarkedTemplate> kept_;
  std::map<std::tuple<std::string, std::string, bool>, std::vector<const MarkedTemplate*>> by_group_;
  std::set<std::tuple<std::string, std::string, std::string>> marked_;
};

}  // namespace gpuguard::rules::gang
