#pragma once
// What a pod template requires of its node's labels: `nodeSelector` entries and the
// `matchExpressions` of required node affinity (preferred affinity only ranks nodes).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "engine/podspec.h"

namespace gpuguard::rules::labels {

// One requirement, viewing the template's strings (valid while its object is): rules look at
// many and report few, so the JSON pointer is made only when asked for.
struct LabelRequirement {
  std::string_view key;
  std::string_view op;     // "=" for nodeSelector, else the operator (In, NotIn, Exists, Gt, Lt, ...)
  std::string_view value;  // one value ("" for Exists/DoesNotExist)

  bool positive() const { return op == "=" || op == "In"; }
  // JSON pointer to the value (or to the expression when it has none).
  [[nodiscard]] std::string pointer() const;

  // Where it is: a nodeSelector entry (term == kSelector), or expression `expr` of term `term`
  // and its value `item` (kNone when the expression has no values).
  static constexpr size_t kSelector = static_cast<size_t>(-1);
  static constexpr size_t kNone = static_cast<size_t>(-1);
  const engine::PodTemplate* tpl = nullptr;
  size_t term = kSelector, expr = 0, item = kNone;
};

// Every requirement of the template, one per value. Values that are not strings are skipped.
[[nodiscard]] std::vector<LabelRequirement> label_requirements(const engine::PodTemplate& t);

}  // namespace gpuguard::rules::labels
