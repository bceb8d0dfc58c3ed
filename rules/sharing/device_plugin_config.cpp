#include "rules/sharing/device_plugin_config.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "engine/positions.h"
#include "engine/yaml_load.h"

namespace gpuguard::rules::sharing {

using engine::json;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Go's encoding/json: an exact key match wins, else the first case-insensitive one.
const json* go_member(const json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  if (const json* exact = engine::member(j, key)) return exact;
  for (const auto& [k, v] : j.items())
    if (iequals(k, key)) return &v;
  return nullptr;
}

// A string that might hold a device-plugin config: cheap test before parsing.
bool worth_parsing(std::string_view s) {
  return s.find("sharing") != std::string_view::npos || s.find("flags") != std::string_view::npos;
}

std::optional<json> parse(std::string_view text) {
  std::optional<json> out;
  std::vector<engine::Diagnostic> diags;
  engine::load_yaml_stream(text, "<embedded>", engine::YamlLimits{}, [&](engine::YamlDocument&& d) {
    if (!out) out = std::move(d.body);
  }, diags);
  return out;
}

void from_map(const json& map, const std::string& base, std::vector<DevicePluginConfig>& out) {
  if (!map.is_object()) return;
  for (const auto& [key, value] : map.items()) {
    if (!value.is_string()) continue;
    const auto& text = value.get_ref<const std::string&>();
    if (!worth_parsing(text)) continue;
    auto parsed = parse(text);
    if (!parsed || !looks_like_device_plugin_config(*parsed)) continue;
    out.push_back({engine::pointer_join(base, key), key, std::move(*parsed)});
  }
}

}  // namespace

bool looks_like_device_plugin_config(const json& j) {
  if (!j.is_object()) return false;
  if (const json* v = engine::member(j, "version"); v && !v->is_string()) return false;
  if (engine::member(j, "mig-configs")) return false;  // a mig-parted config
  return engine::member(j, "sharing") != nullptr || engine::member(j, "flags") != nullptr;
}

std::vector<DevicePluginConfig> device_plugin_configs(const engine::Object& obj) {
  std::vector<DevicePluginConfig> out;
  if (obj.is("", "ConfigMap")) {
    if (const json* data = engine::member(obj.body, "data")) from_map(*data, "/data", out);
    return out;
  }
  if (obj.is_kubernetes_object()) return out;
  // Not a Kubernetes object: a standalone config file, or Helm values embedding configs.
  if (looks_like_device_plugin_config(obj.body)) {
    out.push_back({"", "", obj.body});
    return out;
  }
  if (const json* map = engine::path(obj.body, {"config", "map"})) from_map(*map, "/config/map", out);
  if (const json* data = engine::path(obj.body, {"devicePlugin", "config", "data"}))
    from_map(*data, "/devicePlugin/config/data", out);
  return out;
}

const json* sharing_section(const json& config, std::string_view name) {
  const json* sharing = go_member(config, "sharing");
  if (!sharing) return nullptr;
  const json* s = go_member(*sharing, name);
  return s && !s->is_null() ? s : nullptr;
}

std::string sharing_strategy(const json& config) {
  auto replicated = [](const json* section) {
    if (!section) return false;
    const json* resources = engine::member(*section, "resources");
    if (!resources || !resources->is_array()) return false;
    return std::any_of(resources->begin(), resources->end(), [](const json& r) {
      auto n = engine::int_at(r, "replicas");
      return n && *n > 1;
    });
  };
  if (replicated(sharing_section(config, "mps"))) return "mps";
  if (replicated(sharing_section(config, "timeSlicing"))) return "time-slicing";
  return "none";
}

}  // namespace gpuguard::rules::sharing
