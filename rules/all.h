#pragma once
// One factory per rule; rules/registry.cpp lists them all.

#include <memory>

#include "engine/rule.h"

namespace gpuguard::rules {

std::unique_ptr<const engine::Rule> make_dcgm_exporter_disabled();
std::unique_ptr<const engine::Rule> make_deviceclass_extended_resource_conflict();
std::unique_ptr<const engine::Rule> make_dra_claim_invalid();
std::unique_ptr<const engine::Rule> make_dra_reference_unknown();
std::unique_ptr<const engine::Rule> make_dra_shared_claim_replicated();
std::unique_ptr<const engine::Rule> make_gang_priority_class_missing();
std::unique_ptr<const engine::Rule> make_gang_queue_missing();
std::unique_ptr<const engine::Rule> make_gang_scheduler_name_mismatch();
std::unique_ptr<const engine::Rule> make_gang_scheduling_missing();
std::unique_ptr<const engine::Rule> make_gpu_alert_metric_unknown();
std::unique_ptr<const engine::Rule> make_gpu_alerts_missing();
std::unique_ptr<const engine::Rule> make_gpu_operator_upgrade_unsafe();
std::unique_ptr<const engine::Rule> make_gpu_priority_class_missing();
std::unique_ptr<const engine::Rule> make_gpu_product_affinity_missing();
std::unique_ptr<const engine::Rule> make_gpu_product_label_invalid();
std::unique_ptr<const engine::Rule> make_gpu_request_limit_mismatch();
std::unique_ptr<const engine::Rule> make_gpu_toleration_missing();
std::unique_ptr<const engine::Rule> make_gpu_topology_large_request();
std::unique_ptr<const engine::Rule> make_kai_gpu_sharing_invalid();
std::unique_ptr<const engine::Rule> make_kai_nonpreemptible_over_quota();
std::unique_ptr<const engine::Rule> make_kueue_cohort_cycle();
std::unique_ptr<const engine::Rule> make_kueue_gpu_not_covered();
std::unique_ptr<const engine::Rule> make_kueue_lending_over_nominal();
std::unique_ptr<const engine::Rule> make_kueue_limit_without_cohort();
std::unique_ptr<const engine::Rule> make_kueue_namespace_selector_missing();
std::unique_ptr<const engine::Rule> make_kueue_queue_name_missing();
std::unique_ptr<const engine::Rule> make_limitrange_exceeds_quota();
std::unique_ptr<const engine::Rule> make_limitrange_gpu_default_injection();
std::unique_ptr<const engine::Rule> make_limitrange_gpu_default_invalid();
std::unique_ptr<const engine::Rule> make_limitrange_gpu_default_missing();
std::unique_ptr<const engine::Rule> make_mig_config_invalid();
std::unique_ptr<const engine::Rule> make_mig_distributed_training();
std::unique_ptr<const engine::Rule> make_mig_geometry_infeasible();
std::unique_ptr<const engine::Rule> make_mig_mixed_profiles();
std::unique_ptr<const engine::Rule> make_mig_node_pool_mixed();
std::unique_ptr<const engine::Rule> make_mig_profile_unknown();
std::unique_ptr<const engine::Rule> make_mig_resource_invalid();
std::unique_ptr<const engine::Rule> make_namespace_gpu_quota_missing();
std::unique_ptr<const engine::Rule> make_podgroup_min_member_invalid();
std::unique_ptr<const engine::Rule> make_podgroup_min_resources_mismatch();
std::unique_ptr<const engine::Rule> make_priority_class_count();
std::unique_ptr<const engine::Rule> make_priority_class_global_default();
std::unique_ptr<const engine::Rule> make_priority_class_unknown();
std::unique_ptr<const engine::Rule> make_priority_class_value_invalid();
std::unique_ptr<const engine::Rule> make_queue_borrow_limit_missing();
std::unique_ptr<const engine::Rule> make_queue_capability_missing();
std::unique_ptr<const engine::Rule> make_queue_reference_unknown();
std::unique_ptr<const engine::Rule> make_queue_workload_classes_shared();
std::unique_ptr<const engine::Rule> make_quota_gpu_key_ignored();
std::unique_ptr<const engine::Rule> make_quota_gpu_not_integer();
std::unique_ptr<const engine::Rule> make_rdma_zone_affinity_missing();
std::unique_ptr<const engine::Rule> make_schema_invalid();
std::unique_ptr<const engine::Rule> make_schema_missing();
std::unique_ptr<const engine::Rule> make_sharing_config_field_ignored();
std::unique_ptr<const engine::Rule> make_sharing_config_invalid();
std::unique_ptr<const engine::Rule> make_sharing_latency_sensitive();
std::unique_ptr<const engine::Rule> make_sharing_oversubscription();
std::unique_ptr<const engine::Rule> make_volcano_job_invalid();
std::unique_ptr<const engine::Rule> make_volcano_queue_order_invalid();
std::unique_ptr<const engine::Rule> make_zone_label_deprecated();

}  // namespace gpuguard::rules
