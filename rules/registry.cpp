#include "rules/registry.h"

#include "rules/all.h"

namespace gpuguard::rules {

engine::Registry make_registry() {
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(make_gpu_product_affinity_missing());
  rules.push_back(make_gpu_request_limit_mismatch());
  rules.push_back(make_gpu_toleration_missing());
  rules.push_back(make_gpu_topology_large_request());
  rules.push_back(make_kueue_queue_name_missing());
  rules.push_back(make_priority_class_count());
  rules.push_back(make_quota_gpu_key_ignored());
  rules.push_back(make_rdma_zone_affinity_missing());
  rules.push_back(make_schema_invalid());
  rules.push_back(make_zone_label_deprecated());
  return engine::Registry(std::move(rules));
}

}  // namespace gpuguard::rules
