#include "rules/registry.h"

#include "rules/all.h"

namespace gpuguard::rules {

engine::Registry make_registry() {
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(make_dcgm_exporter_disabled());
  rules.push_back(make_deviceclass_extended_resource_conflict());
  rules.push_back(make_dra_claim_invalid());
  rules.push_back(make_dra_reference_unknown());
  rules.push_back(make_dra_shared_claim_replicated());
  rules.push_back(make_gang_priority_class_missing());
  rules.push_back(make_gang_queue_missing());
  rules.push_back(make_gang_scheduler_name_mismatch());
  rules.push_back(make_gang_scheduling_missing());
  rules.push_back(make_gpu_alert_metric_unknown());
  rules.push_back(make_gpu_alerts_missing());
  rules.push_back(make_gpu_operator_upgrade_unsafe());
  rules.push_back(make_gpu_priority_class_missing());
  rules.push_back(make_gpu_product_affinity_missing());
  rules.push_back(make_gpu_product_label_invalid());
  rules.push_back(make_gpu_request_limit_mismatch());
  rules.push_back(make_gpu_toleration_missing());
  rules.push_back(make_gpu_topology_large_request());
  rules.push_back(make_kai_gpu_sharing_invalid());
  rules.push_back(make_kai_nonpreemptible_over_quota());
  rules.push_back(make_kueue_cohort_cycle());
  rules.push_back(make_kueue_gpu_not_covered());
  rules.push_back(make_kueue_lending_over_nominal());
  rules.push_back(make_kueue_limit_without_cohort());
  rules.push_back(make_kueue_namespace_selector_missing());
  rules.push_back(make_kueue_queue_name_missing());
  rules.push_back(make_limitrange_exceeds_quota());
  rules.push_back(make_limitrange_gpu_default_injection());
  rules.push_back(make_limitrange_gpu_default_invalid());
  rules.push_back(make_limitrange_gpu_default_missing());
  rules.push_back(make_mig_config_invalid());
  rules.push_back(make_mig_distributed_training());
  rules.push_back(make_mig_geometry_infeasible());
  rules.push_back(make_mig_mixed_profiles());
  rules.push_back(make_mig_node_pool_mixed());
  rules.push_back(make_mig_profile_unknown());
  rules.push_back(make_mig_resource_invalid());
  rules.push_back(make_namespace_gpu_quota_missing());
  rules.push_back(make_podgroup_min_member_invalid());
  rules.push_back(make_podgroup_min_resources_mismatch());
  rules.push_back(make_priority_class_count());
  rules.push_back(make_priority_class_global_default());
  rules.push_back(make_priority_class_unknown());
  rules.push_back(make_priority_class_value_invalid());
  rules.push_back(make_queue_borrow_limit_missing());
  rules.push_back(make_queue_capability_missing());
  rules.push_back(make_queue_reference_unknown());
  rules.push_back(make_queue_workload_classes_shared());
  rules.push_back(make_quota_gpu_key_ignored());
  rules.push_back(make_quota_gpu_not_integer());
  rules.push_back(make_rdma_zone_affinity_missing());
  rules.push_back(make_schema_invalid());
  rules.push_back(make_schema_missing());
  rules.push_back(make_sharing_config_field_ignored());
  rules.push_back(make_sharing_config_invalid());
  rules.push_back(make_sharing_latency_sensitive());
  rules.push_back(make_sharing_oversubscription());
  rules.push_back(make_volcano_job_invalid());
  rules.push_back(make_volcano_queue_order_invalid());
  rules.push_back(make_zone_label_deprecated());
  return engine::Registry(std::move(rules));
}

}  // namespace gpuguard::rules
