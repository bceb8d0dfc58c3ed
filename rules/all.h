#pragma once
// One factory per rule; rules/registry.cpp lists them all.

#include <memory>

#include "engine/rule.h"

namespace gpuguard::rules {

std::unique_ptr<const engine::Rule> make_dcgm_exporter_disabled();
std::unique_ptr<const engine::Rule> make_gpu_alert_metric_unknown();
std::unique_ptr<const engine::Rule> make_gpu_alerts_missing();
std::unique_ptr<const engine::Rule> make_gpu_operator_upgrade_unsafe();
std::unique_ptr<const engine::Rule> make_gpu_product_label_invalid();
std::unique_ptr<const engine::Rule> make_gpu_request_limit_mismatch();
std::unique_ptr<const engine::Rule> make_gpu_toleration_missing();
std::unique_ptr<const engine::Rule> make_priority_class_count();
std::unique_ptr<const engine::Rule> make_quota_gpu_key_ignored();
std::unique_ptr<const engine::Rule> make_schema_invalid();
std::unique_ptr<const engine::Rule> make_sharing_config_field_ignored();
std::unique_ptr<const engine::Rule> make_sharing_config_invalid();
std::unique_ptr<const engine::Rule> make_sharing_latency_sensitive();
std::unique_ptr<const engine::Rule> make_sharing_oversubscription();

}  // namespace gpuguard::rules
