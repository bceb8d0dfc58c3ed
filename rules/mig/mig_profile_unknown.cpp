// mig-profile-unknown: a mig-parted entry names a MIG profile the GPUs it targets do not have.

#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using mig::Pending;

class MigProfileUnknown final : public Rule {
 public:
  MigProfileUnknown() {
    info_.id = "mig-profile-unknown";
    info_.severity = Severity::error;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "A mig-parted entry names a MIG profile that the GPUs it targets do not offer";
    info_.rationale =
        "Profile names carry the memory of one slice, so they differ per GPU model: `3g.40gb` exists on "
        "an A100-80GB or H100-80GB, but an H200 offers `3g.71gb` and an A100-40GB `3g.20gb`. mig-parted "
        "checks only the format of a profile name when it loads the file; the name is matched against "
        "the hardware when the config is applied, and MIG Manager then fails on that node "
        "(`nvidia.com/mig.config.state=failed`), after it has already stopped the node's GPU pods.\n\n"
        "An entry with a `device-filter` targets the GPU models of those PCI IDs: every profile must "
        "exist on each of them (IDs the catalog does not know are not judged). An entry without a filter "
        "applies to whatever GPU the node has; there a profile is unknown only when no GPU of the "
        "catalog offers it, or when no single GPU offers all the entry's profiles together.\n\n"
        "The catalog is compiled in from `rules/data/mig-gpus.yaml`; `.gpuguard.yaml` can add GPU "
        "models under `mig.gpus` (same format) without a rebuild. Entries marked *inferred* rest on "
        "inferences of the facts (DERIVED/UNVERIFIED), not on NVIDIA's tables:\n\n";
    info_.rationale_more = &mig::catalog_markdown;
    info_.remediation =
        "Use the profile names of the targeted GPU (`nvidia-smi mig -lgip` on the node lists them), or "
        "fix the `device-filter`. For a GPU the catalog does not know yet, add it under `mig.gpus` in "
        "`.gpuguard.yaml`.";
    info_.facts = {
        "facts/nvidia.md §1.3 — profiles per GPU model from the MIG User Guide tables 6–11 and mig-parted "
        "`deployments/systemd/config-default.yaml` @bd7160f; PCI IDs from mig-parted's device filters and pci.ids; "
        "DERIVED/UNVERIFIED entries are marked inferred in the catalog.",
        "facts/nvidia.md §2 — \"profile strings are format-checked only and matched against hardware at apply time\" "
        "(mig-parted `pkg/types/mig_config.go`); §1.4 — device-filter semantics (an empty filter matches every GPU).",
    };
    info_.checks = {KindRef{"", "ConfigMap"}};
    info_.example_bad = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: custom-mig-config
  namespace: gpu-operator
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-3g:
        - device-filter: "0x233510DE"   # H200 141GB: its 3g profile is 3g.71gb
          devices: all
          mig-enabled: true
          mig-devices:
            "3g.40gb": 2
)";
    info_.example_good = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: custom-mig-config
  namespace: gpu-operator
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-3g:
        - device-filter: "0x233510DE"
          devices: all
          mig-enabled: true
          mig-devices:
            "3g.71gb": 2
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<Pending>(); }
  void finish(FinishContext& ctx) const override { static_cast<Pending*>(ctx.state())->flush(ctx); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& docs = mig::find_mig_parted(obj);
    if (docs.empty()) return;
    auto& out = *static_cast<Pending*>(ctx.state());
    const mig::Catalog catalog(ctx.settings());
    for (const auto& d : docs)
      for (const auto& c : d.configs())
        for (const auto& e : c.entries) {
          if (!e.enabled()) continue;
          const auto t = mig::targets(e, catalog);
          std::vector<std::string> names;
          for (const auto& dev : e.mig_devices)
            if (dev.count && *dev.count > 0 && valid_profile_name(dev.profile)) names.push_back(dev.profile);
          if (names.empty()) continue;
          const std::string mptr = pointer_join(e.pointer, "mig-devices");
          if (t.filtered) {
            for (const auto& n : names)
              for (const MigGpu* g : t.gpus)
                if (!g->profile(n))
                  out.add(ctx, d, pointer_join(mptr, n),
                          n + " is not a MIG profile of the " + mig::describe_gpu(*g) + " this entry's device-filter targets (it offers " +
                              mig::profile_list(*g) + "); MIG Manager fails to apply config \"" + c.name + "\" on such a node");
            continue;
          }
          bool all_known = true;
          for (const auto& n : names)
            if (!catalog.known_profile(n)) {
              all_known = false;
              out.add(ctx, d, pointer_join(mptr, n),
                      n + " is not a MIG profile of any GPU in the catalog; whatever GPU the node has, MIG Manager fails to apply config \"" +
                          c.name + "\" (add the GPU under mig.gpus in .gpuguard.yaml if it is new)");
            }
          if (!all_known || names.size() < 2) continue;
          bool together = false;
          for (const MigGpu* g : t.gpus) {
            bool all = true;
            for (const auto& n : names) all = all && g->profile(n) != nullptr;
            together = together || all;
          }
          if (!together) {
            std::string list;
            for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
            out.add(ctx, d, mptr,
                    "no GPU in the catalog offers all of " + list + " (their memory sizes belong to different GPU models); MIG Manager fails to apply config \"" +
                        c.name + "\" on any node");
          }
        }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_profile_unknown() { return std::make_unique<MigProfileUnknown>(); }

}  // namespace gpuguard::rules
