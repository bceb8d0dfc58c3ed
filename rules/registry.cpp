#include "rules/registry.h"

#include "rules/all.h"

namespace gpuguard::rules {

engine::Registry make_registry() {
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(make_gpu_request_limit_mismatch());
  rules.push_back(make_gpu_toleration_missing());
  rules.push_back(make_mig_config_invalid());
  rules.push_back(make_mig_distributed_training());
  rules.push_back(make_mig_geometry_infeasible());
  rules.push_back(make_mig_mixed_profiles());
  rules.push_back(make_mig_node_pool_mixed());
  rules.push_back(make_mig_profile_unknown());
  rules.push_back(make_mig_resource_invalid());
  rules.push_back(make_priority_class_count());
  rules.push_back(make_quota_gpu_key_ignored());
  rules.push_back(make_schema_invalid());
  return engine::Registry(std::move(rules));
}

}  // namespace gpuguard::rules
