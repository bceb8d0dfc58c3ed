// sharing-config-invalid: a device-plugin sharing config that the NVIDIA device plugin refuses
// (or silently ignores), so the node advertises no GPUs or shares nothing.

#include <algorithm>
#include <cctype>

#include "engine/inventory.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

struct Problem {
  std::string path;  // JSON pointer inside the config
  std::string message;
};

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The section of sharing (timeSlicing or mps): fields are looked up by exact name in the plugin's
// UnmarshalJSON (a map[string]json.RawMessage), so a misspelt or differently cased key is ignored.
void check_section(const json& section, const std::string& base, bool mps, const std::string& mig_strategy,
                   std::vector<Problem>& out) {
  const std::string name = mps ? "mps" : "timeSlicing";
  if (!section.is_object()) {
    out.push_back({base, "sharing." + name + " must be a mapping; the device plugin fails to parse the config and does not start"});
    return;
  }
  static const char* const kKnown[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources"};
  for (const auto& [k, v] : section.items()) {
    if (std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* f) { return k == f; })) continue;
    std::string hint;
    for (const char* f : kKnown)
      if (iequals(k, f)) hint = " (the field is `" + std::string(f) + "`, case-sensitive)";
    out.push_back({pointer_join(base, k), "unknown field `" + k + "` in sharing." + name + hint +
                                              ": the device plugin ignores it without a word, so it has no effect"});
  }
  for (const char* flag : {"renameByDefault", "failRequestsGreaterThanOne"}) {
    const json* v = member(section, flag);
    if (v && !v->is_boolean() && !v->is_null())
      out.push_back({pointer_join(base, flag), "sharing." + name + "." + flag + " must be true or false, not " + brief(*v) +
                                                   ": the device plugin fails to parse the config and does not start"});
  }
  const json* resources = member(section, "resources");
  if (!resources || resources->is_null() || (resources->is_array() && resources->empty())) {
    out.push_back({resources ? pointer_join(base, "resources") : base,
                   "sharing." + name + " has no resources: the device plugin refuses the config (\"no resources specified\") and does not start"});
    return;
  }
  if (!resources->is_array()) {
    out.push_back({pointer_join(base, "resources"), "sharing." + name + ".resources must be a list: the device plugin fails to parse the config"});
    return;
  }
  for (size_t i = 0; i < resources->size(); ++i) {
    const json& r = (*resources)[i];
    const std::string rp = pointer_join(pointer_join(base, "resources"), i);
    const std::string where = "sharing." + name + ".resources[" + std::to_string(i) + "]";
    if (!r.is_object()) {
      out.push_back({rp, where + " must be a mapping with name and replicas: the device plugin fails to parse the config"});
      continue;
    }
    auto rname = string_at(r, "name");
    if (!member(r, "name"))
      out.push_back({rp, where + " has no name: the device plugin refuses the config (\"no resource name specified\")"});
    else if (!rname)
      out.push_back({pointer_join(rp, "name"), where + ".name must be a string: the device plugin fails to parse the config"});
    const json* replicas = member(r, "replicas");
    if (!replicas) {
      out.push_back({rp, where + " has no replicas: the device plugin refuses the config (\"no replicas specified\")"});
    } else if (auto n = as_int(*replicas); !n) {
      out.push_back({pointer_join(rp, "replicas"), where + ".replicas must be an integer, not " + brief(*replicas) +
                                                       ": the device plugin fails to parse the config"});
    } else if (*n < 2) {
      out.push_back({pointer_join(rp, "replicas"), where + ".replicas is " + std::to_string(*n) +
                                                       ": the device plugin refuses the config (\"number of replicas must be >= 2\") and does not start; "
                                                       "use 2 or more, or remove the resource to stop sharing it"});
    }
    if (mps && rname) {
      std::string_view res = *rname;
      if (res.starts_with("nvidia.com/")) res.remove_prefix(11);
      if (res.starts_with("mig-"))
        out.push_back({pointer_join(rp, "name"), where + " shares MIG resource " + std::string(*rname) +
                                                     " with MPS: the device plugin refuses it (\"sharing using MPS is not supported for MIG devices\"); "
                                                     "MPS works only with full GPUs (nvidia.com/gpu)"});
    }
  }
  if (mps && mig_strategy == "mixed")
    out.push_back({base, "MPS sharing with flags.migStrategy: mixed: the device plugin exits with \"using --mig-strategy=mixed is not supported with MPS\" "
                         "(unless a --mig-strategy flag or MIG_STRATEGY variable overrides the config); use migStrategy none, or time-slicing"});
}

std::vector<Problem> validate(const json& config) {
  std::vector<Problem> out;
  if (const json* v = member(config, "version"); v && v->is_string() && v->get_ref<const std::string&>() != "v1" &&
                                                   !v->get_ref<const std::string&>().empty())
    out.push_back({"/version", "version " + brief(*v) + ": the device plugin refuses the config (\"unknown version\"); the only version is v1"});
  std::string mig_strategy;
  if (const json* flags = member(config, "flags"))
    if (auto s = string_at(*flags, "migStrategy")) mig_strategy = *s;
  const json* sharing = nullptr;
  std::string sharing_key = "sharing";
  for (const auto& [k, v] : config.items())
    if (iequals(k, "sharing")) {
      sharing = &v;
      sharing_key = k;
      break;
    }
  if (!sharing || sharing->is_null()) return out;
  const std::string base = "/" + pointer_escape(sharing_key);
  if (!sharing->is_object()) {
    out.push_back({base, "sharing must be a mapping (timeSlicing or mps): the device plugin fails to parse the config"});
    return out;
  }
  for (const auto& [k, v] : sharing->items()) {
    const bool ts = iequals(k, "timeSlicing");
    const bool mps = iequals(k, "mps");
    if (!ts && !mps) {
      out.push_back({pointer_join(base, k), "unknown field `" + k + "` in sharing (known: timeSlicing, mps): the device plugin "
                                                "ignores it without a word, so nothing is shared"});
      continue;
    }
    if (v.is_null()) continue;
    check_section(v, pointer_join(base, k), mps, mig_strategy, out);
  }
  return out;
}

class SharingConfigInvalid final : public Rule {
 public:
  SharingConfigInvalid() {
    info_.id = "sharing-config-invalid";
    info_.severity = Severity::error;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary = "A device-plugin sharing config that the NVIDIA device plugin refuses or silently ignores";
    info_.rationale =
        "Time-slicing and MPS are configured in a device-plugin config file (`version: v1`, `flags`, "
        "`sharing`), usually kept in a ConfigMap that the GPU Operator (`devicePlugin.config.name`) or the "
        "device plugin chart (`config.name`, or inline under `config.map`) mounts. The device plugin reads it "
        "when it starts. A config it refuses makes it exit, so the node advertises **no** GPUs until the "
        "config is fixed; a field it does not know is dropped without a warning, so the node silently "
        "shares nothing.\n\n"
        "The rule checks what the plugin's own parser and start-up checks refuse:\n\n"
        "- `version` other than `v1` (\"unknown version\");\n"
        "- `sharing.timeSlicing` or `sharing.mps` without `resources`, or with an empty list (\"no resources specified\");\n"
        "- a resource without `name` or `replicas`, or with `replicas` below 2 (\"number of replicas must be >= 2\");\n"
        "- MPS on a MIG resource (`nvidia.com/mig-*`: \"sharing using MPS is not supported for MIG devices\") or "
        "with `flags.migStrategy: mixed` (\"using --mig-strategy=mixed is not supported with MPS\");\n"
        "- fields of the wrong type;\n"
        "- unknown fields in `sharing` and in its `timeSlicing`/`mps` sections, which the plugin ignores "
        "(it decodes `sharing` case-insensitively, as Go's encoding/json does, but looks up the fields of "
        "`timeSlicing`/`mps` by their exact names).\n\n"
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
      for (const auto& p : validate(cfg.config)) {
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
      const json* mig = path(cp->body, {"spec", "mig"});
      if (!mig || string_at(*mig, "strategy") != "mixed") continue;
      const json* cfg = path(cp->body, {"spec", "devicePlugin", "config"});
      auto name = cfg ? string_at(*cfg, "name") : std::nullopt;
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
