#include "rules/labels/mig_config_names.h"

#include "rules/mig/mig_parted.h"

namespace gpuguard::rules::labels {

bool mig_config_names(const engine::Object& cm, std::set<std::string, std::less<>>& out) {
  if (!cm.is("", "ConfigMap")) return false;
  bool found = false;
  for (const auto& doc : mig::find_mig_parted(cm)) {
    if (doc.parse_error || engine::string_at(doc.body, "version") != "v1") continue;
    found = true;
    for (const auto& c : doc.configs()) out.insert(c.name);
  }
  return found;
}

}  // namespace gpuguard::rules::labels
