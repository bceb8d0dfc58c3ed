#include "rules/registry.h"

#include "rules/all.h"

namespace gpuguard::rules {

engine::Registry make_registry() {
  std::vector<std::unique_ptr<const engine::Rule>> rules;
  rules.push_back(make_dcgm_exporter_disabled());
  rules.push_back(make_gpu_alert_metric_unknown());
  rules.push_back(make_gpu_alerts_missing());
  rules.push_back(make_gpu_operator_upgrade_unsafe());
  rules.push_back(make_gpu_product_label_invalid());
  rules.push_back(make_gpu_request_limit_mismatch());
  rules.push_back(make_gpu_toleration_missing());
  rules.push_back(make_priority_class_count());
  rules.push_back(make_quota_gpu_key_ignored());
  rules.push_back(make_schema_invalid());
  rules.push_back(make_sharing_config_field_ignored());
  rules.push_back(make_sharing_config_invalid());
  rules.push_back(make_sharing_latency_sensitive());
  rules.push_back(make_sharing_oversubscription());
  return engine::Registry(std::move(rules));
}

}  // namespace gpuguard::rules
