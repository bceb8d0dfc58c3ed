#include "rules/labels/node_selection.h"

#include "engine/positions.h"

namespace gpuguard::rules::labels {

using engine::json;

std::vector<LabelRequirement> label_requirements(const engine::PodTemplate& t) {
  std::vector<LabelRequirement> out;
  const std::string spec = t.spec_pointer();
  if (const json* ns = engine::member(*t.spec, "nodeSelector"); ns && ns->is_object())
    for (const auto& [k, v] : ns->items())
      if (v.is_string()) out.push_back({k, "=", v.get<std::string>(), engine::pointer_join(spec + "/nodeSelector", k)});
  const json* terms = engine::path(*t.spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (!terms || !terms->is_array()) return out;
  const std::string terms_ptr = spec + "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
  for (size_t i = 0; i < terms->size(); ++i) {
    const json* exprs = engine::member((*terms)[i], "matchExpressions");
    if (!exprs || !exprs->is_array()) continue;
    for (size_t j = 0; j < exprs->size(); ++j) {
      const json& e = (*exprs)[j];
      auto key = engine::string_at(e, "key");
      auto op = engine::string_at(e, "operator");
      if (!key || !op) continue;
      const std::string ep = engine::pointer_join(engine::pointer_join(engine::pointer_join(terms_ptr, i), "matchExpressions"), j);
      const json* values = engine::member(e, "values");
      if (!values || !values->is_array() || values->empty()) {
        out.push_back({std::string(*key), std::string(*op), "", ep});
        continue;
      }
      for (size_t k = 0; k < values->size(); ++k)
        if ((*values)[k].is_string())
          out.push_back({std::string(*key), std::string(*op), (*values)[k].get<std::string>(), ep + "/values/" + std::to_string(k)});
    }
  }
  return out;
}

}  // namespace gpuguard::rules::labels
