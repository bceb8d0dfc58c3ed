#include "rules/labels/mig_config_names.h"

#include <vector>

#include "engine/yaml_load.h"

namespace gpuguard::rules::labels {

using engine::json;

bool mig_config_names(const engine::Object& cm, std::set<std::string, std::less<>>& out) {
  if (!cm.is("", "ConfigMap")) return false;
  const json* data = engine::member(cm.body, "data");
  if (!data || !data->is_object()) return false;
  bool found = false;
  for (const auto& [key, value] : data->items()) {
    if (!value.is_string()) continue;
    const auto& text = value.get_ref<const std::string&>();
    if (text.find("mig-configs") == std::string::npos) continue;
    std::vector<engine::Diagnostic> diags;
    engine::load_yaml_stream(text, "<embedded>", engine::YamlLimits{}, [&](engine::YamlDocument&& d) {
      if (engine::string_at(d.body, "version") != "v1") return;
      const json* configs = engine::member(d.body, "mig-configs");
      if (!configs || !configs->is_object()) return;
      found = true;
      for (const auto& [name, v] : configs->items()) out.insert(name);
    }, diags);
  }
  return found;
}

}  // namespace gpuguard::rules::labels
