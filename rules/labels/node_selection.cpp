#include "rules/labels/node_selection.h"

#include "engine/positions.h"

namespace gpuguard::rules::labels {

using engine::json;

namespace {
constexpr std::string_view kTerms = "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
}

std::string LabelRequirement::pointer() const {
  const std::string spec = tpl->spec_pointer();
  if (term == kSelector) return engine::pointer_join(spec + "/nodeSelector", key);
  std::string p = engine::pointer_join(engine::pointer_join(engine::pointer_join(spec + std::string(kTerms), term), "matchExpressions"), expr);
  if (item != kNone) p += "/values/" + std::to_string(item);
  return p;
}

std::vector<LabelRequirement> label_requirements(const engine::PodTemplate& t) {
  std::vector<LabelRequirement> out;
  if (const json* ns = engine::member(*t.spec, "nodeSelector"); ns && ns->is_object())
    for (const auto& [k, v] : ns->items())
      if (v.is_string()) out.push_back({k, "=", v.get_ref<const std::string&>(), &t});
  const json* terms = engine::path(*t.spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (!terms || !terms->is_array()) return out;
  for (size_t i = 0; i < terms->size(); ++i) {
    const json* exprs = engine::member((*terms)[i], "matchExpressions");
    if (!exprs || !exprs->is_array()) continue;
    for (size_t j = 0; j < exprs->size(); ++j) {
      const json& e = (*exprs)[j];
      auto key = engine::string_at(e, "key");
      auto op = engine::string_at(e, "operator");
      if (!key || !op) continue;
      const json* values = engine::member(e, "values");
      if (!values || !values->is_array() || values->empty()) {
        out.push_back({*key, *op, "", &t, i, j, LabelRequirement::kNone});
        continue;
      }
      for (size_t k = 0; k < values->size(); ++k)
        if ((*values)[k].is_string()) out.push_back({*key, *op, (*values)[k].get_ref<const std::string&>(), &t, i, j, k});
    }
  }
  return out;
}

}  // namespace gpuguard::rules::labels
