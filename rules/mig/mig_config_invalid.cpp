// mig-config-invalid: a mig-parted config that mig-parted (and so MIG Manager) refuses to load.

#include "rules/all.h"
#include "rules/mig/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using mig::MigPartedDoc;
using mig::Pending;

constexpr std::string_view kMigConfigExample = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: custom-mig-config
  namespace: gpu-operator
data:
  config.yaml: |
    version: v1
    mig-configs:
      all-3g.40gb:
        - devices: all
          mig-enabled: true
          mig-devices:
            "3g.40gb": 2
)";

class MigConfigInvalid final : public Rule {
 public:
  MigConfigInvalid() {
    info_.id = "mig-config-invalid";
    info_.severity = Severity::error;
    info_.category = "mig";
    info_.seed = "9.1";
    info_.summary = "A mig-parted config that mig-parted refuses to load, or that MIG Manager cannot find";
    info_.rationale =
        "MIG Manager (GPU Operator) partitions the GPUs of a node with mig-parted, reading the config "
        "from the `config.yaml` key of its ConfigMap (`default-mig-parted-config`, or the one "
        "`migManager.config.name` names) and applying the named config the node label "
        "`nvidia.com/mig.config` selects. mig-parted parses the whole file strictly: `version` must be "
        "`v1`, any other top-level key is an error, every named config needs at least one entry, each "
        "entry needs `devices` (`all` or a list of GPU indices) and `mig-enabled`, `mig-devices` is "
        "required when MIG is enabled and must be empty when it is not, counts are non-negative with at "
        "least one above zero (unless `{}`), and unknown fields are errors. One bad entry makes the "
        "whole file unreadable: no node can be reconfigured, and `nvidia.com/mig.config.state` goes to "
        "`failed`.\n\n"
        "A `device-filter` must be a string or a list of strings; mig-parted parses each ID with "
        "`strconv.ParseUint` and ignores the error, so a malformed ID (or an unquoted `0x233010DE`, "
        "which YAML reads as an integer and mig-parted then refuses) silently matches no GPU and the "
        "entry is never applied. The rule checks configs in standalone files (documents without "
        "apiVersion/kind that have `mig-configs`), in ConfigMaps, and in the GPU Operator's Helm "
        "values (`migManager.config.data`). A config embedded in a ConfigMap string is parsed again and "
        "findings point at its line in the file.";
    info_.remediation =
        "Fix the entry as the message says. Keep the config under the `config.yaml` key. Quote device "
        "IDs (`\"0x233010DE\"`) and write them as `0x<device><vendor>`, 8 hex digits, optionally "
        "`:0x<subsystem device><subsystem vendor>`.";
    info_.facts = {
        "facts/nvidia.md §2 — mig-parted config format: `api/spec/v1/spec.go` (`Spec.UnmarshalJSON`, "
        "`MigConfigSpec.UnmarshalJSON`: \"unable to parse with missing 'version' field\", \"unknown version\", "
        "\"unexpected field\", \"missing required field\", \"at least one entry in '%v' is required\", \"missing "
        "required field 'mig-devices' when 'mig-enabled' is true\", \"MIG devices included when 'mig-enabled' is "
        "false\") and `pkg/types/mig_config.go` (`AssertValid`: counts ≥ 0, \"all counts for all MigProfiles are 0\") "
        "in NVIDIA/mig-parted @bd7160f; read again in the code corpus for this rule.",
        "facts/nvidia.md §1.4 — `device-filter` syntax `0x<DEVICE><VENDOR>[:0x<SUBDEV><SUBVENDOR>]`; "
        "`MatchesDeviceFilter` in `api/spec/v1/helpers.go` discards the `NewDeviceIDFromString` error "
        "(`pkg/types/device.go`), so a malformed ID matches nothing (verified in the code corpus).",
        "facts/nvidia.md §2 — the ConfigMap key must be `config.yaml` (gpu-operator `deployments/gpu-operator/values.yaml` "
        "@a22dbf6); the profile grammar is go-nvlib `pkg/nvlib/device/mig_profile.go` (§1.1).",
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
      all-3g.40gb:
        - devices: all
          mig-enabled: true
)";
    info_.example_good = std::string(kMigConfigExample);
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<Pending>(); }

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& docs = mig::find_mig_parted(obj);
    if (docs.empty()) return;
    auto& out = *static_cast<Pending*>(ctx.state());
    bool has_config_yaml = false;
    for (const auto& d : docs) has_config_yaml |= d.key_pointer.empty() || d.data_key == "config.yaml";
    for (const auto& d : docs) {
      if (d.parse_error) {
        out.add(ctx, d, "", "does not parse as YAML (" + d.parse_error->second + ", counting lines inside the value); mig-parted cannot load the config");
        continue;
      }
      if (!d.key_pointer.empty() && d.data_key != "config.yaml" && !has_config_yaml)
        out.add(ctx, d, "",
                "MIG Manager reads its config from the key config.yaml; this one is under \"" + d.data_key +
                    "\", so MIG Manager finds no config here");
      check_doc(d, ctx, out);
    }
  }

  void finish(FinishContext& ctx) const override { static_cast<Pending*>(ctx.state())->flush(ctx); }

 private:
  static void check_doc(const MigPartedDoc& d, CheckContext& ctx, Pending& out) {
    const Node root = d.body;
    const Node version = member(root, "version");
    if (!version)
      out.add(ctx, d, "", "version is missing; mig-parted refuses the file (\"unable to parse with missing 'version' field\"): add version: v1");
    else if (!version.is_string() || version.str() != "v1")
      out.add(ctx, d, "/version", "version " + brief(version) + " is not v1; mig-parted refuses the file (\"unknown version\")");
    for (const auto [k, v] : root.items())
      if (k != "version" && k != "mig-configs")
        out.add(ctx, d, pointer_join("", k),
                "unexpected field \"" + std::string(k) + "\"; mig-parted accepts only version and mig-configs and refuses the file");
    const Node mc = member(root, "mig-configs");
    if (!mc) return;
    if (!mc.is_object()) {
      out.add(ctx, d, "/mig-configs", "mig-configs must map config names to lists of entries, got " + brief(mc));
      return;
    }
    if (mc.empty()) {
      out.add(ctx, d, "/mig-configs", "mig-configs is empty; mig-parted requires at least one named config");
      return;
    }
    for (const auto [key, list] : mc.items()) {
      const std::string name(key);
      const std::string cptr = pointer_join("/mig-configs", name);
      if (!list.is_array() || list.empty()) {
        out.add(ctx, d, cptr, "config \"" + name + "\" must be a non-empty list of entries (\"at least one entry in '" + name + "' is required\")");
        continue;
      }
      size_t i = 0;
      for (const Node e : list) check_entry(e, pointer_join(cptr, i++), d, ctx, out);
    }
  }

  static void check_entry(Node e, const std::string& ptr, const MigPartedDoc& d, CheckContext& ctx, Pending& out) {
    if (!e.is_object()) {
      out.add(ctx, d, ptr, "an entry must be a mapping {device-filter, devices, mig-enabled, mig-devices}, got " + brief(e));
      return;
    }
    for (const auto [k, v] : e.items())
      if (k != "device-filter" && k != "devices" && k != "mig-enabled" && k != "mig-devices")
        out.add(ctx, d, pointer_join(ptr, k),
                "unexpected field \"" + std::string(k) + "\" (known: device-filter, devices, mig-enabled, mig-devices); mig-parted refuses the file");
    // devices: "all" or a list of GPU indices.
    if (const Node dev = member(e, "devices")) {
      bool ok = (dev.is_string() && dev.str() == "all");
      if (dev.is_array()) {
        ok = true;
        for (const Node x : dev) ok = ok && !x.is_boolean() && as_int(x).has_value();
      }
      if (!ok)
        out.add(ctx, d, pointer_join(ptr, "devices"), "devices must be \"all\" or a list of GPU indices such as [0, 1], got " + brief(dev) + "; mig-parted refuses the file");
    } else {
      out.add(ctx, d, ptr, "the entry has no devices (\"missing required field: devices\"); write devices: all or a list of GPU indices");
    }
    const Node en = member(e, "mig-enabled");
    if (!en) out.add(ctx, d, ptr, "the entry has no mig-enabled (\"missing required field: mig-enabled\")");
    else if (!en.is_boolean())
      out.add(ctx, d, pointer_join(ptr, "mig-enabled"), "mig-enabled must be true or false, got " + brief(en) + "; mig-parted refuses the file");
    const bool enabled = en.boolean();
    // device-filter: a string or a list of strings, each a PCI device ID.
    if (const Node f = member(e, "device-filter")) {
      const std::string fptr = pointer_join(ptr, "device-filter");
      auto check_id = [&](Node id, const std::string& p) {
        if (!id.is_string()) {
          std::string hint = id.is_number() ? " (unquoted, YAML reads a hex ID as a number: quote it)" : "";
          out.add(ctx, d, p, "device-filter IDs must be strings, got " + brief(id) + hint + "; mig-parted refuses the file");
          return;
        }
        const std::string s(id.str());
        std::string norm = normalize_device_id(s);
        if (norm.empty())
          out.add(ctx, d, p, "device-filter \"" + s + "\" is not 0x<device><vendor> with 8 hex digits (e.g. 0x233010DE, optionally :0x<subsystem>); mig-parted cannot parse it and the filter matches no GPU, so the entry is never applied");
        else if (!norm.ends_with("10DE"))
          out.add(ctx, d, p, "device-filter \"" + s + "\" has vendor " + norm.substr(6) + ", not NVIDIA's 10DE (write device then vendor: 0x<device>10DE); it matches no GPU and the entry is never applied");
      };
      if (f.is_string()) {
        if (!f.str().empty()) check_id(f, fptr);
      } else if (f.is_array()) {
        size_t i = 0;
        for (const Node id : f) check_id(id, pointer_join(fptr, i++));
      } else if (f.is_number()) {
        check_id(f, fptr);
      } else {
        out.add(ctx, d, fptr, "device-filter must be a string or a list of strings, got " + brief(f) + "; mig-parted refuses the file");
      }
    }
    // mig-devices
    const Node md = member(e, "mig-devices");
    const std::string mptr = pointer_join(ptr, "mig-devices");
    if (md && !md.is_null() && !md.is_object()) {
      out.add(ctx, d, mptr, "mig-devices must map profile names to counts, got " + brief(md) + "; mig-parted refuses the file");
      return;
    }
    const bool has_devices = md.is_object();
    if (enabled && !has_devices)
      out.add(ctx, d, md ? mptr : ptr,
              "mig-enabled is true but mig-devices is missing (\"missing required field 'mig-devices' when 'mig-enabled' is true\"); write mig-devices: {} for MIG mode without instances");
    if (en.is_boolean() && !enabled && has_devices && !md.empty())
      out.add(ctx, d, mptr, "mig-enabled is false but mig-devices lists profiles (\"MIG devices included when 'mig-enabled' is false\"); remove them or enable MIG");
    if (!has_devices || md.empty()) return;
    bool any_positive = false, counts_ok = true;
    for (const auto [key, count] : md.items()) {
      const std::string profile(key);
      const std::string pptr = pointer_join(mptr, profile);
      std::string why;
      if (!valid_profile_name(profile, &why))
        out.add(ctx, d, pptr, "\"" + profile + "\" is not a MIG profile name: " + why + "; mig-parted refuses the file");
      auto n = count.is_boolean() ? std::nullopt : as_int(count);
      if (!n) {
        out.add(ctx, d, pptr, profile + ": the count must be an integer, got " + brief(count) + "; mig-parted refuses the file");
        counts_ok = false;
      } else if (*n < 0) {
        out.add(ctx, d, pptr, profile + ": the count " + std::to_string(*n) + " is negative; mig-parted refuses the file");
        counts_ok = false;
      } else if (*n > 0) {
        any_positive = true;
      }
    }
    if (counts_ok && !any_positive)
      out.add(ctx, d, mptr, "every count is 0 (\"all counts for all MigProfiles are 0\"); write mig-devices: {} for no instances");
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_mig_config_invalid() { return std::make_unique<MigConfigInvalid>(); }

}  // namespace gpuguard::rules
