#pragma once
// NVIDIA device-plugin configs (facts/nvidia.md §3) wherever they are written: a ConfigMap data
// value (what the GPU Operator's `devicePlugin.config.name` and the device plugin chart's
// `config.name` point at), the chart values that embed them (`config.map.<key>` of the
// nvidia-device-plugin chart, `devicePlugin.config.data.<key>` of the gpu-operator chart), or a
// standalone config file (`--config-file`).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/node.h"
#include "engine/object.h"

namespace gpuguard::rules::sharing {

struct DevicePluginConfig {
  std::string pointer;  // JSON pointer of the config in its object ("" for a standalone file)
  std::string key;      // the ConfigMap / values key naming the config ("" for a standalone file)
  // An embedded config's document, parsed from its string (null for a standalone file: the
  // object's own document holds it).
  std::shared_ptr<const engine::PositionIndex> parsed;
  engine::Node config;  // the config (a mapping)
};

// Whether a parsed YAML value (or a document) is a device-plugin config: a mapping with `sharing`
// or `flags` whose `version` is absent or a string (the plugin defaults a missing version to v1).
[[nodiscard]] bool looks_like_device_plugin_config(engine::Node j);

// Every device-plugin config in the object (none for other objects). Embedded configs that do
// not parse as YAML are skipped: nothing says they were meant as device-plugin configs.
[[nodiscard]] std::vector<DevicePluginConfig> device_plugin_configs(const engine::Object& obj);

// The sharing section the plugin uses: "mps" if sharing.mps has a resource with replicas > 1,
// else "time-slicing" if sharing.timeSlicing has one, else "none" (SharingStrategy() in
// k8s-device-plugin api/config/v1/sharing.go). Keys are matched as Go's encoding/json does
// (case-insensitively).
[[nodiscard]] std::string sharing_strategy(engine::Node config);

// sharing.<name> by Go's case-insensitive field matching; nullptr (absent) when absent or null.
[[nodiscard]] engine::Node sharing_section(engine::Node config, std::string_view name);

// What the device plugin makes of a config: refusals (it exits, the node advertises no GPU) and
// fields it ignores without a word (`ignored`). `path` is a JSON pointer inside the config.
struct ConfigProblem {
  std::string path;
  std::string message;
  bool ignored = false;
};
[[nodiscard]] std::vector<ConfigProblem> validate_device_plugin_config(engine::Node config);

}  // namespace gpuguard::rules::sharing
