// mig-geometry-infeasible: a mig-parted entry asks for MIG instances that cannot be placed together.

#include <map>

#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using mig::Pending;

class MigGeometryInfeasible final : public Rule {
 public:
  MigGeometryInfeasible() {
    info_.id = "mig-geometry-infeasible";
    info_.severity = Severity::error;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "A mig-parted entry asks for MIG instances that do not fit on one GPU";
    info_.rationale =
        "A GPU with MIG has 7 compute slices and 8 memory slices (4 and 4 on an A30 or RTX PRO 6000). "
        "Each GPU-instance profile takes some of each and may start only at fixed memory-slice offsets "
        "(`nvidia-smi mig -lgipp`): `4g` only at 0, `3g` at 0 or 4, `2g` at 0, 2 or 4, a small `1g` "
        "anywhere, `7g` takes the whole GPU; only one instance may hold the media engines (`+me`). "
        "\"Creation of new GPU instance will fail if there is overlap with the already occupied memory "
        "slices.\" So `4g.40gb + 4g.40gb` can never coexist (both need placement 0), nor can `3 × 3g.40gb` "
        "(9 of 7 compute slices), while `4g + 3g`, `3g + 3g` and mig-parted's `all-balanced` "
        "(`2 × 1g + 2g + 3g`) fit.\n\n"
        "mig-parted accepts such an entry when it loads the file; applying it fails on the node, after "
        "MIG Manager has stopped the GPU pods, and the node is left without the layout. The rule runs a "
        "small exact placement search for every GPU model the entry targets (its `device-filter`, or, "
        "without a filter, every model that offers all its profiles: it reports when none of them can hold "
        "the instances). The geometry of most models after the A100/H100 is an inference (the catalog "
        "marks it; see `gpuguard explain mig-profile-unknown`).";
    info_.remediation =
        "Pick a combination that fits: at most 7 compute slices, at most one `4g` or `7g`, at most two "
        "`3g`, at most one `+me`. mig-parted's `all-balanced` (`2 × 1g + 2g + 3g`) or a single profile "
        "per GPU always fit.";
    info_.facts = {
        "facts/nvidia.md §1.1 — `nvidia-smi mig -lgipp` placements on A100-40GB (identical on H100 80GB and H100 NVL); "
        "NVML `nvmlGpuInstancePlacement_t` start/size count memory slices and overlapping creation fails (NVML API docs).",
        "facts/nvidia.md §1.2 — the generic 7-slice geometry table and the feasibility rule (DERIVED: brute-forced, not a "
        "hardware test), with its table of valid and invalid combinations (all covered by tests/unit/mig_test.cpp).",
        "facts/nvidia.md §1.3 — per-model profiles and max counts (MIG User Guide, mig-parted @bd7160f).",
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
      two-4g:
        - device-filter: "0x233010DE"   # H100 80GB HBM3
          devices: all
          mig-enabled: true
          mig-devices:
            "4g.40gb": 2
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
      4g-and-3g:
        - device-filter: "0x233010DE"
          devices: all
          mig-enabled: true
          mig-devices:
            "4g.40gb": 1
            "3g.40gb": 1
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
          bool counts_ok = true, any = false;
          for (const auto& dev : e.mig_devices) {
            counts_ok = counts_ok && dev.count && *dev.count >= 0;
            any = any || (dev.count && *dev.count > 0);
          }
          if (!counts_ok || !any) continue;  // mig-config-invalid's
          const auto t = mig::targets(e, catalog);
          const std::string mptr = pointer_join(e.pointer, "mig-devices");
          std::vector<std::pair<const MigGpu*, MigFit>> fits;
          bool fits_somewhere = false;
          for (const MigGpu* g : t.gpus) {
            std::vector<MigRequest> req;
            bool complete = true;
            for (const auto& dev : e.mig_devices) {
              if (*dev.count == 0) continue;
              const MigProfile* p = g->profile(dev.profile);
              if (!p) complete = false;
              else req.push_back({p, *dev.count});
            }
            if (!complete) continue;  // mig-profile-unknown's
            MigFit f = mig_fit(*g, req);
            fits_somewhere = fits_somewhere || f.ok;
            fits.emplace_back(g, std::move(f));
          }
          if (t.filtered) {
            for (const auto& [g, f] : fits)
              if (!f.ok)
                out.add(ctx, d, mptr,
                        "on " + mig::describe_gpu(*g) + ": " + f.why + "; MIG Manager fails to apply config \"" + c.name + "\" on such a node");
          } else if (!fits.empty() && !fits_somewhere) {
            // Group the GPU models by reason.
            std::map<std::string, std::string> by_reason;
            for (const auto& [g, f] : fits) by_reason[f.why] += (by_reason[f.why].empty() ? "" : ", ") + g->name;
            std::string msg;
            for (const auto& [why, gpus] : by_reason) msg += (msg.empty() ? "" : "; ") + ("on " + gpus + ": " + why);
            out.add(ctx, d, mptr,
                    msg + "; no GPU that offers these profiles can hold them, so MIG Manager fails to apply config \"" + c.name + "\"");
          }
        }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_geometry_infeasible() { return std::make_unique<MigGeometryInfeasible>(); }

}  // namespace gpuguard::rules
