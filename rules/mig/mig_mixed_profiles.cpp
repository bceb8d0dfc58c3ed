// mig-mixed-profiles: MIG profiles mixed on one node (seed 9.1: all GPUs of a node use one profile).

#include <algorithm>
#include <bitset>
#include <set>
#include <unordered_map>

#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using mig::MigPartedEntry;
using mig::Pending;

// What an entry makes of its GPUs: "MIG disabled", "MIG enabled, no instances", or its profiles.
std::string layout(const MigPartedEntry& e) {
  if (!e.enabled()) return "MIG disabled";
  std::set<std::string> profiles;
  for (const auto& d : e.mig_devices)
    if (d.count && *d.count > 0) profiles.insert(d.profile);
  if (profiles.empty()) return "MIG enabled without instances";
  std::string s;
  for (const auto& p : profiles) s += (s.empty() ? "" : " + ") + p;
  return s;
}

size_t profile_count(const MigPartedEntry& e) {
  size_t n = 0;
  for (const auto& d : e.mig_devices) n += d.count && *d.count > 0 ? 1 : 0;
  return e.enabled() ? n : 0;
}

constexpr size_t kMaxPairs = 256;

// Which of the first kMaxPairs entries can apply to GPUs of one node: two that one of them has no
// filter, or whose filters share an ID. An index of the IDs makes it linear in the filters' lengths
// (each entry's ID marks the entries that hold it), then one bit per pair.
class SharedNodes {
 public:
  explicit SharedNodes(const std::vector<MigPartedEntry>& entries) : n_(std::min(entries.size(), kMaxPairs)), shares_(n_) {
    struct Holders {
      std::vector<size_t> list;
      std::bitset<kMaxPairs> set;
    };
    std::unordered_map<std::string_view, Holders> holders;
    for (size_t i = 0; i < n_; ++i) {
      if (!entries[i].has_filter) {
        unfiltered_.set(i);
        continue;
      }
      for (const auto& x : entries[i].filter) {
        if (x.empty()) continue;  // an ID that does not parse matches none
        Holders& h = holders[x];
        if (!h.set.test(i)) h.list.push_back(i);
        h.set.set(i);
      }
    }
    for (const auto& [id, h] : holders)
      for (const size_t i : h.list) shares_[i] |= h.set;
  }
  [[nodiscard]] bool may_share_node(size_t i, size_t j) const { return unfiltered_.test(i) || unfiltered_.test(j) || shares_[i].test(j); }

 private:
  size_t n_;
  std::vector<std::bitset<kMaxPairs>> shares_;
  std::bitset<kMaxPairs> unfiltered_;
};

std::string devices_text(const MigPartedEntry& e) {
  const Node d = member(e.body, "devices");
  if (!d) return "its devices";
  if (!d.is_array() || d.size() > 16) return "devices " + brief(d);
  std::string s;
  for (const Node x : d) s += (s.empty() ? "" : ", ") + brief(x);
  return "devices [" + s + "]";
}

class MigMixedProfiles final : public Rule {
 public:
  MigMixedProfiles() {
    info_.id = "mig-mixed-profiles";
    info_.severity = Severity::warning;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "MIG profiles are mixed on one node: in a mig-parted config, or in what one pod requests";
    info_.rationale =
        "Seed 9.1: pick one MIG profile per node, by the memory the workloads need, and do not mix "
        "profiles on a node. With the GPU Operator's default `mig.strategy: single`, GPU Feature "
        "Discovery and the device plugin expose MIG devices as plain `nvidia.com/gpu`, which only works "
        "when every GPU of the node has the same profile: with more than one MIG type (or MIG-enabled "
        "next to MIG-disabled GPUs) GFD writes `nvidia.com/gpu.product=<product>-MIG-INVALID` with "
        "count 0 and the node offers no GPU at all. Under `mixed` each profile becomes its own resource "
        "(`nvidia.com/mig-1g.10gb`, …), which works but fragments capacity: a pod waits for one size "
        "while other sizes idle, and the scheduler cannot tell sizes apart without node labels.\n\n"
        "The rule reports (1) a mig-parted entry that puts several profiles on the same GPUs "
        "(mig-parted's `all-balanced` style; once per named config), (2) a named config that gives "
        "different layouts to different GPUs of one node (entries whose device filters can meet on one "
        "node), and (3) a pod template whose containers ask for a whole GPU (`nvidia.com/gpu`) and a MIG "
        "slice, or for more than one MIG profile: such a pod only fits a node that mixes them. These "
        "are not refused by any controller, hence a warning.\n\n"
        "A pod template whose GPUs come through Dynamic Resource Allocation is judged the same way from its claims (in the "
        "input or the cluster state): a request of NVIDIA's MIG class `mig.nvidia.com` (or with a CEL selector on the "
        "attribute `profile`, which only the driver's MIG devices have) beside a request for a whole GPU "
        "(`gpu.nvidia.com`), or requests whose `profile` equalities name different profiles "
        "(`device.attributes['gpu.nvidia.com'].profile == '1g.10gb'` and `== '3g.40gb'`). Alternatives of one "
        "`firstAvailable` request are not summed (one of them is allocated). Read at NVIDIA/k8s-dra-driver-gpu "
        "`cmd/gpu-kubelet-plugin/mig.go` (CommonAttributesMig: `type`, `profile`) and "
        "`deployments/helm/dra-driver-nvidia-gpu/templates/` (deviceclass-gpu.yaml, deviceclass-mig.yaml) @22407113, "
        "v0.4.0-rc.1+14.";
    info_.remediation =
        "Give each node (pool) one profile, e.g. `all-1g.10gb` for inference pools and `all-3g.40gb` "
        "or whole GPUs for training, and select the pool with `nvidia.com/mig.config` and a node "
        "selector. Make a pod request one kind of GPU resource.";
    info_.facts = {
        "Seed 9.1 (design.md §1): all GPUs of a node use one profile.",
        "facts/nvidia.md §2 — `nvidia.com/mig.strategy` (k8s-device-plugin `internal/lm/mig-strategy.go` @1b826ac): under "
        "`single`, more than one MIG type on a node, or MIG-enabled mixed with MIG-disabled GPUs, gives "
        "`gpu.product=<product>-MIG-INVALID` and count 0; `mixed` exposes `nvidia.com/mig-<profile>` per profile; the "
        "GPU Operator's Helm default is `mig.strategy: single`.",
        "facts/nvidia.md §1.3 — mig-parted's `all-balanced` (2 × 1g + 2g + 3g) in `deployments/systemd/config-default.yaml` "
        "and the GPU Operator's `assets/state-mig-manager/0400_configmap.yaml` @a22dbf6.",
    };
    info_.checks = pod_template_kinds();
    info_.checks.push_back(KindRef{"", "ConfigMap"});
    info_.reads = dra_kinds();
    info_.example_bad = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: custom-mig-config
  namespace: gpu-operator
data:
  config.yaml: |
    version: v1
    mig-configs:
      balanced:
        - devices: all
          mig-enabled: true
          mig-devices:
            "1g.10gb": 2
            "2g.20gb": 1
            "3g.40gb": 1
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
      all-1g.10gb:
        - devices: all
          mig-enabled: true
          mig-devices:
            "1g.10gb": 7
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<mig::DraPending>(); }
  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<mig::DraPending*>(ctx.state());
    st->pending.flush(ctx);
    for (const auto& t : st->templates) {
      const DraGpus gpus = resolve_dra_gpus(ctx.inventory(), t.ref.namespace_(), t.claims, ctx.settings().gpu_device_classes);
      std::set<std::string> profiles;
      const DraGpuRequest* whole = nullptr;
      bool has_mig = false;
      for (const auto& r : gpus.requests) {
        if (r.alternative) continue;  // one of several firstAvailable sub-requests: not all of them are allocated
        if (!mig::dra_mig(r)) {
          if (!whole) whole = &r;
          continue;
        }
        has_mig = true;
        if (!r.profile.empty() && !r.profile_unknown) profiles.insert(r.profile);
      }
      std::string list;
      for (const auto& p : profiles) list.append(list.empty() ? "" : ", ").append(p);
      std::string msg;
      msg.reserve(300 + list.size());
      if (whole && has_mig) {
        msg.append("the pod asks through DRA for a whole GPU (DeviceClass ").append(whole->device_class).append(") and a MIG slice");
        if (!list.empty()) msg.append(" (").append(list).append(")");
        msg.append(": only a node with both whole and MIG-partitioned GPUs can run it (seed 9.1: do not mix on a node); use whole GPUs or one MIG profile");
      } else if (profiles.size() > 1) {
        msg.append("the pod asks through DRA for several MIG profiles (").append(list);
        msg.append("): only a node that mixes these profiles can run it (seed 9.1: one profile per node); request one profile");
      } else {
        continue;
      }
      msg.append("; its GPUs come ").append(dra_summary(gpus));
      ctx.report(t.ref, t.pointer, t.pos, std::move(msg));
    }
  }

  void check(const Object& obj, CheckContext& ctx) const override {
    check_pods(obj, ctx);
    const auto& docs = mig::find_mig_parted(obj);
    if (docs.empty()) return;
    auto& out = static_cast<mig::DraPending*>(ctx.state())->pending;
    for (const auto& d : docs)
      for (const auto& c : d.configs()) {
        // (1) one entry with several profiles on the same GPUs.
        size_t mixing = 0;
        const MigPartedEntry* first = nullptr;
        for (const auto& e : c.entries)
          if (profile_count(e) > 1) {
            ++mixing;
            if (!first) first = &e;
          }
        if (first)
          out.add(ctx, d, pointer_join(first->pointer, "mig-devices"),
                  "config \"" + c.name + "\" puts " + layout(*first) + " on the same GPUs" +
                      (mixing > 1 ? " (and " + std::to_string(mixing - 1) + " more entr" + (mixing == 2 ? "y" : "ies") + " mix profiles)" : "") +
                      "; seed 9.1: use one profile per node. Under the default single strategy GFD labels such a node " +
                      "<product>-MIG-INVALID and it offers no GPU; under mixed, capacity fragments by size");
        // (2) different layouts for GPUs of one node. Pairs are compared only when the layouts
        // differ at all, and among the first kMaxPairs entries (a hostile config stays linear in
        // its entries and their filters: SharedNodes).
        std::vector<std::string> layouts;
        for (const auto& e : c.entries) layouts.push_back(layout(e));
        bool reported = std::all_of(layouts.begin(), layouts.end(), [&](const std::string& l) { return l == layouts.front(); });
        const size_t n = std::min(c.entries.size(), kMaxPairs);
        const SharedNodes shared = reported ? SharedNodes({}) : SharedNodes(c.entries);
        for (size_t i = 0; i < n && !reported; ++i)
          for (size_t j = i + 1; j < n && !reported; ++j) {
            const auto& a = c.entries[i];
            const auto& b = c.entries[j];
            const std::string& la = layouts[i];
            const std::string& lb = layouts[j];
            if (la == lb || !shared.may_share_node(i, j)) continue;
            reported = true;
            out.add(ctx, d, b.pointer,
                    "config \"" + c.name + "\" gives " + devices_text(a) + " " + la + " but " + devices_text(b) + " " + lb +
                        ": different layouts on the GPUs of one node; seed 9.1: all GPUs of a node use one profile (under the single strategy GFD labels the node <product>-MIG-INVALID)");
          }
      }
  }

 private:
  void check_pods(const Object& obj, CheckContext& ctx) const {
    for (const auto& t : pod_templates(obj)) {
      std::set<std::string> mig_profiles;
      std::string whole, first_mig_ptr;
      for (const auto& c : containers(t)) {
        for (const auto r : mig::nvidia_resources(c)) {
          if (auto p = mig::mig_resource_profile(r)) {
            if (mig_profiles.empty()) first_mig_ptr = c.pointer + "/resources";
            mig_profiles.insert(*p);
          } else if (r == "nvidia.com/gpu" || r == "nvidia.com/gpu.shared") {
            whole = r;
          }
        }
      }
      if (mig_profiles.empty()) {
        if (!whole.empty()) continue;
        mig::DraTemplate dra;
        dra.claims = pod_claims(t.spec);  // GPUs through DRA, perhaps: decided in finish
        if (dra.claims.empty()) continue;
        dra.ref = ctx.ref();
        dra.pointer = t.spec_pointer() + "/resourceClaims";
        dra.pos = ctx.position_of(dra.pointer);
        static_cast<mig::DraPending*>(ctx.state())->templates.push_back(std::move(dra));
        continue;
      }
      std::string list;
      for (const auto& p : mig_profiles) list += (list.empty() ? "" : ", ") + ("nvidia.com/mig-" + p);
      if (!whole.empty())
        ctx.report(first_mig_ptr, "the pod asks for " + whole + " and " + list +
                                      ": only a node with the mixed strategy and both whole and MIG-partitioned GPUs can run it (seed 9.1: do not mix on a node); use whole GPUs or one MIG profile");
      else if (mig_profiles.size() > 1)
        ctx.report(first_mig_ptr, "the pod asks for several MIG profiles (" + list +
                                      "): only a node that mixes these profiles can run it (seed 9.1: one profile per node); request one profile");
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_mixed_profiles() { return std::make_unique<MigMixedProfiles>(); }

}  // namespace gpuguard::rules
