// mig-resource-invalid: a container requests nvidia.com/mig-<profile> for a profile no GPU has.

#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class MigResourceInvalid final : public Rule {
 public:
  MigResourceInvalid() {
    info_.id = "mig-resource-invalid";
    info_.severity = Severity::error;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "A container requests nvidia.com/mig-<profile> for a profile that no GPU offers";
    info_.rationale =
        "Under the mixed MIG strategy the device plugin advertises one extended resource per profile, "
        "named after it: `nvidia.com/mig-1g.10gb`, `nvidia.com/mig-3g.40gb` (a time-sliced profile "
        "without rename: the same; with `renameByDefault`: `….shared`). A request for a profile that "
        "exists on no GPU (`nvidia.com/mig-3g.30gb`, `nvidia.com/mig-1g.10g`) is accepted by the API "
        "server, but no node will ever advertise it: the pod stays Pending with \"Insufficient "
        "nvidia.com/mig-…\" and a gang or a Job waits forever.\n\n"
        "The profile is looked up in the MIG catalog (`gpuguard explain mig-profile-unknown`), plus the "
        "GPU models `.gpuguard.yaml` adds under `mig.gpus`. Asking for a whole GPU next to a MIG slice, "
        "or for two MIG profiles in one pod, can be scheduled on a node that mixes them, so "
        "`mig-mixed-profiles` reports those as a warning instead.";
    info_.remediation =
        "Request a profile the cluster's GPUs offer (`kubectl describe node` lists the "
        "`nvidia.com/mig-*` resources under Allocatable), or a whole `nvidia.com/gpu`.";
    info_.facts = {
        "facts/nvidia.md §2 — `mixed` strategy: each profile is its own resource `nvidia.com/mig-<profile>` "
        "(k8s-device-plugin `internal/lm/mig-strategy.go`, `strategy.go` @1b826ac); §3 — `renameByDefault` appends `.shared`.",
        "facts/nvidia.md §1.3 — the profiles per GPU model (MIG User Guide, mig-parted @bd7160f).",
    };
    info_.checks = pod_template_kinds();
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: infer
spec:
  containers:
    - name: infer
      image: nvcr.io/nvidia/tritonserver:24.06-py3
      resources:
        limits:
          nvidia.com/mig-3g.30gb: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: infer
spec:
  containers:
    - name: infer
      image: nvcr.io/nvidia/tritonserver:24.06-py3
      resources:
        limits:
          nvidia.com/mig-3g.40gb: 1
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    std::optional<mig::Catalog> catalog;
    for (const auto& t : pod_templates(obj))
      for (const auto& c : containers(t)) {
        const Node res = member(c.body, "resources");
        if (!res) continue;
        for (const char* key : {"limits", "requests"}) {
          const Node l = member(res, key);
          if (!l.is_object()) continue;
          for (const auto [entry_key, v] : l.items()) {
            const std::string name(entry_key);
            auto profile = mig::mig_resource_profile(name);
            if (!profile) continue;
            // A request equal to its limit is reported once, at the limit.
            if (std::string_view(key) == "requests") {
              if (member(member(res, "limits"), name)) continue;
            }
            if (!catalog) catalog.emplace(ctx.settings());
            if (catalog->known_profile(*profile)) continue;
            std::string hint;
            if (!valid_profile_name(*profile)) hint = " (a MIG profile is written <G>g.<GB>gb, e.g. 1g.10gb)";
            ctx.report(c.pointer + "/resources/" + key + "/" + pointer_escape(name),
                       describe(c) + " requests " + name + ", but " + *profile + " is not a MIG profile of any GPU in the catalog" + hint +
                           ": no node advertises this resource, so the pod stays Pending (\"Insufficient " + name + "\")");
          }
        }
      }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_resource_invalid() { return std::make_unique<MigResourceInvalid>(); }

}  // namespace gpuguard::rules
