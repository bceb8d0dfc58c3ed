#pragma once
// One factory per rule; rules/registry.cpp lists them all.

#include <memory>

#include "engine/rule.h"

namespace gpuguard::rules {

std::unique_ptr<const engine::Rule> make_gpu_request_limit_mismatch();
std::unique_ptr<const engine::Rule> make_gpu_toleration_missing();
std::unique_ptr<const engine::Rule> make_mig_config_invalid();
std::unique_ptr<const engine::Rule> make_mig_distributed_training();
std::unique_ptr<const engine::Rule> make_mig_geometry_infeasible();
std::unique_ptr<const engine::Rule> make_mig_mixed_profiles();
std::unique_ptr<const engine::Rule> make_mig_node_pool_mixed();
std::unique_ptr<const engine::Rule> make_mig_profile_unknown();
std::unique_ptr<const engine::Rule> make_mig_resource_invalid();
std::unique_ptr<const engine::Rule> make_priority_class_count();
std::unique_ptr<const engine::Rule> make_quota_gpu_key_ignored();
std::unique_ptr<const engine::Rule> make_schema_invalid();

}  // namespace gpuguard::rules
