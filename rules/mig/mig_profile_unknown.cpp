// mig-profile-unknown: a mig-parted entry names a MIG profile the GPUs it targets do not have.

#include <algorithm>

#include "engine/dra.h"
#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using mig::Pending;

// GFD's product label for NVML's name (what NVIDIA's DRA driver publishes as `productName`): the
// sanitiser keeps [A-Za-z0-9-_. ] and joins the words with dashes (facts/nvidia.md §4).
std::string gfd_product(std::string_view nvml) {
  std::string out;
  out.reserve(nvml.size());
  bool space = false;
  for (char c : nvml) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
    if (c == ' ') {
      space = !out.empty();
    } else if (keep) {
      if (space) out += '-';
      space = false;
      out += c;
    }
  }
  return out;
}

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
        "inferences of the facts (DERIVED/UNVERIFIED), not on NVIDIA's tables.\n\n"
        "Through Dynamic Resource Allocation a claim asks for a MIG device with a CEL equality on the attribute "
        "`profile` of NVIDIA's driver (`device.attributes['gpu.nvidia.com'].profile == '1g.10gb'`, usually on the class "
        "`mig.nvidia.com`), in a ResourceClaim, ResourceClaimTemplate or DeviceClass. The driver publishes the profile "
        "as go-nvlib writes it, `<G>g.<GB>gb` with `+me`-style attributes, and only profiles whose compute and GPU "
        "slices are equal (NVIDIA/k8s-dra-driver-gpu `cmd/gpu-kubelet-plugin/mig.go` CommonAttributesMig, `nvlib.go` "
        "skipping `G != C`, `vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/mig_profile.go` String(), @22407113, "
        "v0.4.0-rc.1+14). A value that is no profile of any GPU of the catalog (`1g.10GB`, `mig-1g.10gb`, `3g.30gb`) "
        "matches no device: the claim is never allocated and its pods stay Pending. When the same expression also "
        "requires `productName` (NVML's name, read as GFD's product label), the profile must be one of that model's.\n\n"
        "The catalog:\n\n";
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
    info_.checks.insert(info_.checks.end(), dra_kinds().begin(), dra_kinds().end());
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
    if (obj.gvk.group == kResourceGroup) {
      check_dra(obj, ctx);
      return;
    }
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
  // The `profile` equalities of a DRA object's CEL selectors.
  static void check_dra(const Object& obj, CheckContext& ctx) {
    std::optional<mig::Catalog> catalog;
    for (const auto& [pointer, expression, group] : dra_selector_expressions(obj)) {
      const CelTerm profile = cel_attribute_equality(expression, "profile");
      if (!profile.value) continue;
      if (!catalog) catalog.emplace(ctx.settings());
      const std::string& p = *profile.value;
      // A known size with attributes the catalog does not list (`+me.all`, `-me`) is not judged.
      const std::string_view base = std::string_view(p).substr(0, std::min(p.find('+'), p.find('-')));
      std::string msg;
      msg.reserve(300 + 2 * p.size());
      if (!catalog->known_profile(p) && !catalog->known_profile(base)) {
        std::string why;
        msg.append("profile == '").append(p).append("' matches no MIG device: ");
        if (!valid_profile_name(p, &why))
          msg.append("NVIDIA's DRA driver writes a MIG profile as <G>g.<GB>gb (e.g. 1g.10gb; ").append(why).append(")");
        else
          msg.append(p).append(" is not a MIG profile of any GPU in the catalog (add the GPU under mig.gpus in .gpuguard.yaml if it is new)");
        msg.append(", so the claim is never allocated and its pods stay Pending");
        ctx.report(pointer, std::move(msg));
        continue;
      }
      const CelTerm product = cel_attribute_equality(expression, "productName");
      if (!product.value) continue;
      const MigGpu* g = catalog->by_product(gfd_product(*product.value));
      if (!g || g->profile(p) || g->profile(base)) continue;
      msg.append("profile == '").append(p).append("' matches no MIG device of the ").append(*product.value);
      msg.append(" this expression requires (it offers ").append(mig::profile_list(*g));
      msg.append("), so the claim is never allocated and its pods stay Pending");
      ctx.report(pointer, std::move(msg));
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_profile_unknown() { return std::make_unique<MigProfileUnknown>(); }

}  // namespace gpuguard::rules
