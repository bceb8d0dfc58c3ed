// sharing-config-field-ignored: a field of a device-plugin sharing config that the plugin drops
// without a word, so the setting has no effect.

#include "rules/all.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class SharingConfigFieldIgnored final : public Rule {
 public:
  SharingConfigFieldIgnored() {
    info_.id = "sharing-config-field-ignored";
    info_.severity = Severity::warning;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary = "A device-plugin sharing config has a field the NVIDIA device plugin ignores, so the setting has no effect";
    info_.rationale =
        "The device plugin reads its config with a non-strict decoder: a field it does not know is dropped "
        "without a warning and the plugin starts normally. A misspelt `timeSlice:` therefore leaves the node "
        "unshared while its owners believe it time-slices, and a `failrequestsgreaterthanone: true` written in "
        "the wrong case leaves requests for several replicas allowed.\n\n"
        "`sharing` is decoded as Go's encoding/json does, matching `timeSlicing` and `mps` case-insensitively; "
        "any other key under `sharing` is reported. Inside `timeSlicing`/`mps` the plugin looks fields up by "
        "their exact names (`renameByDefault`, `failRequestsGreaterThanOne`, `resources`), so any other key, a "
        "differently cased one included, is reported. This is a warning, not an error: the plugin accepts the "
        "config (`sharing-config-invalid` reports what it refuses). Configs are found where "
        "`sharing-config-invalid` finds them.";
    info_.remediation = "Correct the field name (the message names the one meant, where it differs only in case), or remove it.";
    info_.facts = {
        "facts/nvidia.md §3 — the config schema (`sharing.timeSlicing` / `sharing.mps` with `renameByDefault`, "
        "`failRequestsGreaterThanOne`, `resources`) [KDP `api/config/v1`].",
        "Checked upstream: k8s-device-plugin `api/config/v1/config.go` `parseConfigFrom` uses non-strict "
        "`sigs.k8s.io/yaml.Unmarshal` (unknown fields dropped, struct fields matched case-insensitively); "
        "`replicas.go` `TimeSlicing.UnmarshalJSON` reads a `map[string]json.RawMessage` by exact keys.",
    };
    info_.checks = {KindRef{"", "ConfigMap"}};
    info_.example_bad = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlice:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
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
        resources:
        - name: nvidia.com/gpu
          replicas: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    for (const auto& cfg : sharing::device_plugin_configs(obj))
      for (const auto& p : sharing::validate_device_plugin_config(cfg.config)) {
        if (!p.ignored) continue;
        if (cfg.key.empty() && cfg.pointer.empty())
          ctx.report(p.path, p.message);
        else
          ctx.report(cfg.pointer, "device-plugin config `" + cfg.key + "`: " + p.message);
      }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_sharing_config_field_ignored() { return std::make_unique<SharingConfigFieldIgnored>(); }

}  // namespace gpuguard::rules
