// sharing-config-invalid: a device-plugin sharing config that the NVIDIA device plugin refuses, so
// the node advertises no GPUs.

#include <algorithm>
#include <cctype>

#include "engine/inventory.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class SharingConfigInvalid final : public Rule {
 public:
  SharingConfigInvalid() {
    info_.id = "sharing-config-invalid";
    info_.severity = Severity::error;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary = "A device-plugin sharing config that the NVIDIA device plugin refuses, so the node advertises no GPUs";
    info_.rationale =
        "Time-slicing and MPS are configured in a device-plugin config file (`version: v1`, `flags`, "
        "`sharing`), usually kept in a ConfigMap that the GPU Operator (`devicePlugin.config.name`) or the "
        "device plugin chart (`config.name`, or inline under `config.map`) mounts. The device plugin reads it "
        "when it starts. A config it refuses makes it exit, so the node advertises **no** GPUs until the "
        "config is fixed. (Fields it does not know are dropped without a warning; `sharing-config-field-ignored` "
        "reports those.)\n\n"
        "The rule checks what the plugin's own parser and start-up checks refuse:\n\n"
        "- `version` other than `v1` (\"unknown version\");\n"
        "- `sharing.timeSlicing` or `sharing.mps` without `resources`, or with an empty list (\"no resources specified\");\n"
        "- a resource without `name` or `replicas`, or with `replicas` below 2 (\"number of replicas must be >= 2\");\n"
        "- MPS on a MIG resource (`nvidia.com/mig-*`: \"sharing using MPS is not supported for MIG devices\") or "
        "with `flags.migStrategy: mixed` (\"using --mig-strategy=mixed is not supported with MPS\");\n"
        "- fields of the wrong type (`replicas: \"4\"`, a `sharing` that is not a mapping).\n\n"
        "Configs are found in ConfigMap data values (any key whose value is YAML with `sharing` or `flags`), "
        "in standalone config files, and in Helm values under `config.map.<key>` (nvidia-device-plugin chart) "
        "or `devicePlugin.config.data.<key>` (gpu-operator chart). Findings point at the key; the message "
        "names the field inside the embedded config.\n\n"
        "Across objects: a ClusterPolicy with `spec.mig.strategy: mixed` whose `spec.devicePlugin.config.name` "
        "names a ConfigMap in the input with an MPS config is reported too, because the GPU Operator runs the "
        "device plugin with the ClusterPolicy's MIG strategy (which takes precedence over the config file's "
        "`flags.migStrategy`).";
    info_.remediation =
        "Fix the field the message names. A working time-slicing config:\n\n"
        "```yaml\nversion: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 4\n```\n\n"
        "For MPS use full GPUs only (`nvidia.com/gpu`, `migStrategy: none`).";
    info_.facts = {
        "facts/nvidia.md §3 — config schema, `replicas` ≥ 2, non-empty `resources`, MPS only on full GPUs "
        "and not with the mixed strategy [KDP].",
        "Checked in the upstream source (k8s-device-plugin `api/config/v1/replicas.go`): "
        "`TimeSlicing.UnmarshalJSON` looks up `renameByDefault`, `failRequestsGreaterThanOne` and "
        "`resources` by exact key and fails with \"no resources specified\"; `ReplicatedResource.UnmarshalJSON` "
        "fails with \"no resource name specified\", \"no replicas specified\" and \"number of replicas must be >= 2\". "
        "`config.go` `parseConfigFrom` uses non-strict `sigs.k8s.io/yaml.Unmarshal` (unknown fields dropped) and "
        "refuses a version other than v1. `cmd/nvidia-device-plugin/main.go` `validateFlags` refuses MPS with "
        "`--mig-strategy=mixed`; `internal/plugin` `getMPSOptions` refuses MPS on MIG devices.",
        "The GPU Operator passing `spec.mig.strategy` to the device plugin (environment `MIG_STRATEGY`, which "
        "`NewConfig` ranks above the config file) rests on a third-party report of exactly this crash loop after "
        "selecting an MPS config under `mig.strategy: mixed`; the Operator's `MigStrategyEnvName` is set for the "
        "validator in `controllers/object_controls.go`, the device-plugin line was not found in the index (UNVERIFIED).",
    };
    info_.checks = {KindRef{"", "ConfigMap"}, KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.reads = {KindRef{"", "ConfigMap"}, KindRef{"nvidia.com", "ClusterPolicy"}};
    info_.example_bad = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        failRequestsGreaterThanOne: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    for (const auto& cfg : sharing::device_plugin_configs(obj)) {
      for (const auto& p : sharing::validate_device_plugin_config(cfg.config)) {
        if (p.ignored) continue;  // sharing-config-field-ignored
        if (cfg.key.empty() && cfg.pointer.empty()) {
          ctx.report(p.path, p.message);  // a standalone file: the pointer is the field itself
          continue;
        }
        ctx.report(cfg.pointer, "device-plugin config `" + cfg.key + "`: " + p.message);
      }
    }
  }

  void finish(FinishContext& ctx) const override {
    const Inventory& inv = ctx.inventory();
    for (const Object* cp : inv.list("nvidia.com", "ClusterPolicy")) {
      const Node root = cp->root();
      const Node mig = path(root, {"spec", "mig"});
      if (!mig || string_at(mig, "strategy") != "mixed") continue;
      const Node cfg = path(root, {"spec", "devicePlugin", "config"});
      auto name = cfg ? string_at(cfg, "name") : std::nullopt;
      if (!name || name->empty()) continue;
      for (const Object* cm : inv.list("", "ConfigMap")) {
        if (cm->name != *name) continue;
        for (const auto& c : sharing::device_plugin_configs(*cm)) {
          if (sharing::sharing_strategy(c.config) != "mps") continue;
          const std::string msg = cp->display_name() + " runs the device plugin with spec.mig.strategy: mixed, and " +
                                  cm->display_name() + " key `" + c.key + "` configures MPS: the device plugin exits with "
                                  "\"using --mig-strategy=mixed is not supported with MPS\" on every node using that config; use "
                                  "mig.strategy none or single there, or time-slicing";
          if (ctx.in_focus(*cp) && !ctx.in_focus(*cm))
            ctx.report(*cp, "/spec/mig/strategy", msg);
          else
            ctx.report(*cm, c.pointer, msg);
        }
      }
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_sharing_config_invalid() { return std::make_unique<SharingConfigInvalid>(); }

}  // namespace gpuguard::rules
