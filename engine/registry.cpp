#include "engine/registry.h"

#include <algorithm>
#include <stdexcept>

namespace gpuguard::engine {

Registry::Registry(std::vector<std::unique_ptr<const Rule>> rules) : owned_(std::move(rules)) {
  for (const auto& r : owned_) rules_.push_back(r.get());
  std::sort(rules_.begin(), rules_.end(), [](const Rule* a, const Rule* b) { return a->info().id < b->info().id; });
  for (size_t i = 1; i < rules_.size(); ++i)
    if (rules_[i - 1]->info().id == rules_[i]->info().id)
      throw std::logic_error("duplicate rule id " + rules_[i]->info().id);
}

const Rule* Registry::find(std::string_view id) const {
  auto it = std::lower_bound(rules_.begin(), rules_.end(), id,
                             [](const Rule* r, std::string_view v) { return r->info().id < v; });
  return it != rules_.end() && (*it)->info().id == id ? *it : nullptr;
}

}  // namespace gpuguard::engine
