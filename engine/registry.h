#pragma once
// An explicit, sorted list of rules (no static self-registration).

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/rule.h"

namespace gpuguard::engine {

class Registry {
 public:
  Registry() = default;
  // Takes the rules; they are sorted by id, and ids must be unique.
  explicit Registry(std::vector<std::unique_ptr<const Rule>> rules);
  [[nodiscard]] std::span<const Rule* const> rules() const { return rules_; }
  [[nodiscard]] const Rule* find(std::string_view id) const;

 private:
  std::vector<std::unique_ptr<const Rule>> owned_;
  std::vector<const Rule*> rules_;
};

}  // namespace gpuguard::engine
