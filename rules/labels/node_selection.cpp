#include "rules/labels/node_selection.h"

#include <algorithm>

#include "engine/positions.h"

namespace gpuguard::rules::labels {

using engine::Node;

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
  if (const Node ns = engine::member(t.spec, "nodeSelector"); ns.is_object()) {
    for (const auto [k, v] : ns.items())
      if (v.is_string()) out.push_back({k, "=", v.str(), &t});
    // In key order, as the API server keeps a map (the document has them as written).
    std::sort(out.begin(), out.end(), [](const LabelRequirement& a, const LabelRequirement& b) { return a.key < b.key; });
  }
  const Node terms = engine::path(t.spec, {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"});
  if (!terms.is_array()) return out;
  size_t i = 0;
  for (const Node term : terms) {
    const size_t term_index = i++;
    const Node exprs = engine::member(term, "matchExpressions");
    if (!exprs.is_array()) continue;
    size_t j = 0;
    for (const Node e : exprs) {
      const size_t expr_index = j++;
      auto key = engine::string_at(e, "key");
      auto op = engine::string_at(e, "operator");
      if (!key || !op) continue;
      const Node values = engine::member(e, "values");
      if (!values.is_array() || values.empty()) {
        out.push_back({*key, *op, "", &t, term_index, expr_index, LabelRequirement::kNone});
        continue;
      }
      size_t k = 0;
      for (const Node v : values) {
        if (v.is_string()) out.push_back({*key, *op, v.str(), &t, term_index, expr_index, k});
        ++k;
      }
    }
  }
  return out;
}

}  // namespace gpuguard::rules::labels
