// sharing-config-invalid: a device-plugin sharing config that the NVIDIA device plugin refuses, so
// the node advertises no GPUs.

#include <algorithm>
#include <cctype>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// NVIDIA's DRA driver's opaque config (NVIDIA/k8s-dra-driver-gpu api/nvidia.com/resource/v1beta1
// @22407113): the fields its strict decoder knows under `sharing`.
constexpr std::string_view kDraDriver = "gpu.nvidia.com";
constexpr std::string_view kDraConfigApi = "resource.nvidia.com/v1beta1";
constexpr std::string_view kTimeSlicingGate = "TimeSlicingSettings";
constexpr std::string_view kMpsGate = "MPSSupport";

bool one_of(std::string_view s, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

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
        "`flags.migStrategy`).\n\n"
        "**Dynamic Resource Allocation.** NVIDIA's DRA driver takes sharing settings from the opaque config of a "
        "ResourceClaim, ResourceClaimTemplate or DeviceClass (`config[].opaque` with `driver: gpu.nvidia.com`, "
        "`parameters: {apiVersion: resource.nvidia.com/v1beta1, kind: GpuConfig | MigDeviceConfig, sharing: ...}`). "
        "Its admission webhook (optional) denies a claim or template whose config it refuses, and its kubelet plugin "
        "refuses the same when it prepares the devices (class configs included), so the pod never starts. The rule "
        "reports, with the driver's own words (`api/nvidia.com/resource/v1beta1/validate.go`, `sharing.go`, "
        "`gpuconfig.go`, `migconfig.go`, `cmd/webhook/main.go`, `cmd/gpu-kubelet-plugin/device_state.go`, "
        "`pkg/featuregates/featuregates.go`, NVIDIA/k8s-dra-driver-gpu @22407113, v0.4.0-rc.1+14):\n\n"
        "- a strategy whose feature gate is off: `TimeSlicing` needs `TimeSlicingSettings`, `MPS` needs `MPSSupport`, "
        "both alpha and off by default. gpuguard cannot see the gates a cluster's driver runs with, and whoever "
        "uses sharing has turned them on, so this is checked only when the parameter `driverFeatureGates` lists "
        "them (its Helm value `featureGates`; `[none]` for a driver with none on): by default a strategy is never "
        "reported for its gate, as an error would deny valid claims at admission;\n"
        "- a strategy other than `TimeSlicing` or `MPS` (the names are case-sensitive);\n"
        "- `timeSlicingConfig.interval` other than `Default`, `Short`, `Medium`, `Long`;\n"
        "- `mpsConfig.defaultActiveThreadPercentage` below 0 or above 100, or not an integer;\n"
        "- `mpsConfig` under `TimeSlicing`, or `timeSlicingConfig` under `MPS` (the kubelet plugin: \"cannot use "
        "MpsConfig with the 'TimeSlicing' strategy\");\n"
        "- a field the strict decoder does not know under `sharing` (e.g. `timeSlicingConfig` in a `MigDeviceConfig`: "
        "time-slicing settings cannot be set on MIG devices).";
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
    info_.checks.insert(info_.checks.end(), dra_kinds().begin(), dra_kinds().end());
    info_.params = {
        ParamSpec{"driverFeatureGates", ParamType::string_list, json::array(),
                  "feature gates enabled on NVIDIA's DRA driver (its Helm value `featureGates`): `TimeSlicingSettings` "
                  "allows the TimeSlicing strategy, `MPSSupport` the MPS one (both off in the driver by default); `none` "
                  "for a driver with neither. Empty (the default): the gates are not known, and not checked",
                  std::nullopt, std::nullopt},
    };
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
    if (obj.gvk.group == kResourceGroup) {
      check_dra(obj, ctx);
      return;
    }
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
  // The sharing settings of NVIDIA's DRA driver in a claim's, template's or class's opaque config:
  // what its webhook (Normalize, Validate after a strict decode) and kubelet plugin refuse. The first
  // problem of each config, as Validate returns the first error.
  static void check_dra(const Object& obj, CheckContext& ctx) {
    const std::string_view kind = obj.gvk.kind;
    std::string base;  // the config list's JSON pointer
    std::string field;  // the driver's field path for it
    if (kind == "DeviceClass") {
      base = "/spec/config";
      field = "spec.config";
    } else if (kind == "ResourceClaim") {
      base = "/spec/devices/config";
      field = "spec.devices.config";
    } else if (kind == "ResourceClaimTemplate") {
      base = "/spec/spec/devices/config";
      field = "spec.spec.devices.config";
    } else {
      return;
    }
    const Node configs = path(obj.root(), {"spec"});
    Node list = kind == "DeviceClass"       ? member(configs, "config")
                : kind == "ResourceClaim" ? path(configs, {"devices", "config"})
                                          : path(configs, {"spec", "devices", "config"});
    if (!list.is_array()) return;
    const auto& gates = ctx.params().strings("driverFeatureGates");
    // Not configured: the cluster's gates are unknown, so no strategy is reported for its gate.
    const bool gates_known = !gates.empty();
    const bool ts_gate = !gates_known || std::find(gates.begin(), gates.end(), kTimeSlicingGate) != gates.end();
    const bool mps_gate = !gates_known || std::find(gates.begin(), gates.end(), kMpsGate) != gates.end();
    size_t i = 0;
    for (Node c : list) {
      const size_t index = i++;
      const Node opaque = member(c, "opaque");
      if (string_at(opaque, "driver") != std::optional<std::string_view>(kDraDriver)) continue;
      const Node params = member(opaque, "parameters");
      if (string_at(params, "apiVersion") != std::optional<std::string_view>(kDraConfigApi)) continue;
      const auto k = string_at(params, "kind");
      const bool gpu = k == std::optional<std::string_view>("GpuConfig");
      if (!gpu && k != std::optional<std::string_view>("MigDeviceConfig")) continue;
      const Node sharing = member(params, "sharing");
      if (!sharing || sharing.is_null()) continue;  // no sharing: the driver's default
      const std::string ptr = base + "/" + std::to_string(index) + "/opaque/parameters";
      std::string at;
      at.reserve(field.size() + 40);
      at.append(field).append("[").append(std::to_string(index)).append("].opaque.parameters");
      auto report = [&](const std::string& pointer, bool decoding, std::string_view error, std::string_view consequence) {
        std::string msg;
        msg.reserve(320 + at.size() + error.size() + consequence.size());
        msg.append(*k).append(" sharing: NVIDIA's DRA driver refuses it: \"");
        msg.append(decoding ? "error decoding object at " : "object at ").append(at).append(decoding ? ": " : " is invalid: ");
        msg.append(error).append("\"");
        if (!consequence.empty()) msg.append(" ").append(consequence);
        else if (kind == "DeviceClass")
          msg.append(" (its kubelet plugin fails to prepare every claim of this class: the pods never start)");
        else
          msg.append(" (its webhook denies the claim; without the webhook the kubelet plugin fails to prepare it and the pods never start)");
        ctx.report(pointer, std::move(msg));
      };
      if (!sharing.is_object()) {
        report(ptr + "/sharing", true, "sharing: expected an object", "");
        continue;
      }
      // The strict decoder: unknown fields, wrong types.
      bool decoded = true;
      for (const auto [key, v] : sharing.items()) {
        if (gpu ? one_of(key, {"strategy", "timeSlicingConfig", "mpsConfig"}) : one_of(key, {"strategy", "mpsConfig"})) continue;
        std::string e;
        e.append("strict decoding error: unknown field \"sharing.").append(key).append("\"");
        report(ptr + "/sharing/" + pointer_escape(key), true, e,
               !gpu && key == "timeSlicingConfig" ? "(time-slicing settings cannot be set on MIG devices)" : "");
        decoded = false;
        break;
      }
      if (!decoded) continue;
      const Node strategy = member(sharing, "strategy");
      const Node tsc = member(sharing, "timeSlicingConfig");
      const Node mpsc = member(sharing, "mpsConfig");
      const std::initializer_list<std::string_view> tsc_fields = {"interval"};
      const std::initializer_list<std::string_view> mps_fields = {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                                                                  "defaultPerDevicePinnedMemoryLimit"};
      for (const bool ts : {true, false}) {
        const Node sub = ts ? tsc : mpsc;
        if (!decoded || !sub || sub.is_null()) continue;
        const std::string_view name = ts ? "timeSlicingConfig" : "mpsConfig";
        std::string e;
        if (!sub.is_object()) {
          e.append("sharing.").append(name).append(": expected an object");
          report(ptr + "/sharing/" + std::string(name), true, e, "");
          decoded = false;
          continue;
        }
        for (const auto [key, v] : sub.items()) {
          if (one_of(key, ts ? tsc_fields : mps_fields)) continue;
          e.append("strict decoding error: unknown field \"sharing.").append(name).append(".").append(key).append("\"");
          report(ptr + "/sharing/" + std::string(name) + "/" + pointer_escape(key), true, e, "");
          decoded = false;
          break;
        }
      }
      if (decoded && strategy && !strategy.is_null() && !strategy.is_string()) {
        report(ptr + "/sharing/strategy", true, "sharing.strategy: expected a string", "");
        decoded = false;
      }
      if (!decoded) continue;
      const std::string_view s = strategy.is_string() ? strategy.str() : std::string_view();
      const std::string sptr = ptr + "/sharing" + (strategy ? "/strategy" : "");
      if (s == "TimeSlicing" && !ts_gate) {
        report(sptr, false, "\"TimeSlicing\" is selected as the GPU sharing strategy, but the \"TimeSlicingSettings\" feature gate is not enabled",
               "(driverFeatureGates lists the gates your driver runs with: add TimeSlicingSettings if it runs with it)");
        continue;
      }
      if (s == "MPS" && !mps_gate) {
        report(sptr, false, "\"MPS\" is selected as the GPU sharing strategy, but the \"MPSSupport\" feature gate is not enabled",
               "(driverFeatureGates lists the gates your driver runs with: add MPSSupport if it runs with it)");
        continue;
      }
      if (s != "TimeSlicing" && s != "MPS") {
        std::string e;
        e.append("unknown GPU sharing strategy: ").append(s.substr(0, 60)).append(", supported GPU sharing strategies: TimeSlicing, MPS");
        report(sptr, false, e, "");
        continue;
      }
      if (s == "TimeSlicing") {
        if (gpu && tsc.is_object()) {
          const Node interval = member(tsc, "interval");
          if (interval && !interval.is_null()) {
            if (!interval.is_string()) {
              report(ptr + "/sharing/timeSlicingConfig/interval", true, "sharing.timeSlicingConfig.interval: expected a string", "");
              continue;
            }
            if (!one_of(interval.str(), {"Default", "Short", "Medium", "Long"})) {
              std::string e;
              e.append("unknown time-slice interval: ").append(interval.str().substr(0, 60));
              e.append(", supported time-slice intervals: Default, Short, Medium, Long");
              report(ptr + "/sharing/timeSlicingConfig/interval", false, e, "");
              continue;
            }
          }
        }
        if (gpu && mpsc && !mpsc.is_null())
          report(ptr + "/sharing/mpsConfig", false, "cannot use MpsConfig with the 'TimeSlicing' strategy",
                 "(the kubelet plugin refuses it when it prepares the claim: the pods never start)");
        continue;
      }
      // MPS.
      if (mpsc.is_object()) {
        const Node pct = member(mpsc, "defaultActiveThreadPercentage");
        if (pct && !pct.is_null()) {
          const int64_t v = pct.is_number_integer() ? as_int(pct).value_or(-1) : -1;
          const std::string pptr = ptr + "/sharing/mpsConfig/defaultActiveThreadPercentage";
          if (!pct.is_number_integer() || !as_int(pct)) {
            report(pptr, true, "defaultActiveThreadPercentage: expected an integer", "");
            continue;
          }
          if (v < 0 || v > 100) {
            report(pptr, false, v < 0 ? "active thread percentage must not be negative" : "active thread percentage must not be greater than 100", "");
            continue;
          }
        }
      }
      if (gpu && tsc && !tsc.is_null())
        report(ptr + "/sharing/timeSlicingConfig", false, "cannot use TimeSlicingConfig with the 'MPS' strategy",
               "(the kubelet plugin refuses it when it prepares the claim: the pods never start)");
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_sharing_config_invalid() { return std::make_unique<SharingConfigInvalid>(); }

}  // namespace gpuguard::rules
