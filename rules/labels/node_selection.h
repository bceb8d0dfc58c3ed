#pragma once
// What a pod template requires of its node's labels: `nodeSelector` entries and the
// `matchExpressions` of required node affinity (preferred affinity only ranks nodes).

#include <string>
#include <vector>

#include "engine/podspec.h"

namespace gpuguard::rules::labels {

struct LabelRequirement {
  std::string key;
  std::string op;       // "=" for nodeSelector, else the operator (In, NotIn, Exists, Gt, Lt, ...)
  std::string value;    // one value ("" for Exists/DoesNotExist)
  std::string pointer;  // JSON pointer to the value (or to the expression when it has none)
  bool positive() const { return op == "=" || op == "In"; }
};

// Every requirement of the template, one per value. Values that are not strings are skipped.
[[nodiscard]] std::vector<LabelRequirement> label_requirements(const engine::PodTemplate& t);

}  // namespace gpuguard::rules::labels
