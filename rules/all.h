#pragma once
// One factory per rule; rules/registry.cpp lists them all.

#include <memory>

#include "engine/rule.h"

namespace gpuguard::rules {

std::unique_ptr<const engine::Rule> make_gpu_product_affinity_missing();
std::unique_ptr<const engine::Rule> make_gpu_request_limit_mismatch();
std::unique_ptr<const engine::Rule> make_gpu_toleration_missing();
std::unique_ptr<const engine::Rule> make_gpu_topology_large_request();
std::unique_ptr<const engine::Rule> make_kueue_queue_name_missing();
std::unique_ptr<const engine::Rule> make_priority_class_count();
std::unique_ptr<const engine::Rule> make_quota_gpu_key_ignored();
std::unique_ptr<const engine::Rule> make_rdma_zone_affinity_missing();
std::unique_ptr<const engine::Rule> make_schema_invalid();
std::unique_ptr<const engine::Rule> make_zone_label_deprecated();

}  // namespace gpuguard::rules
