// sharing-oversubscription: time-slicing that lets one container take several replicas, which
// buys it nothing but a larger share of time.

#include "engine/positions.h"
#include "rules/all.h"
#include "rules/sharing/device_plugin_config.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class SharingOversubscription final : public Rule {
 public:
  SharingOversubscription() {
    info_.id = "sharing-oversubscription";
    info_.severity = Severity::warning;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary = "Time-slicing lets a container request more than one replica of a shared GPU";
    info_.rationale =
        "With time-slicing, each of the `replicas` advertised per GPU is only a turn on the same GPU: "
        "replicas share the whole memory and have no memory or fault isolation. A pod that asks for "
        "`nvidia.com/gpu: 2` on a time-sliced node gets two replicas, usually of the same GPU, and with "
        "them no more memory and no more compute — only a larger share of the time slices, taken from "
        "its neighbours. Users who ask for 2 expect two GPUs.\n\n"
        "`failRequestsGreaterThanOne: true` makes the device plugin refuse such requests (the pod fails "
        "with `UnexpectedAdmissionError`), which turns the surprise into a clear error. For time-slicing "
        "the field defaults to **false**, so a config that leaves it out fires too. (For MPS the plugin "
        "sets it to true unless the config says otherwise, so MPS is not checked.)";
    info_.remediation =
        "Set `sharing.timeSlicing.failRequestsGreaterThanOne: true`, and have workloads that need more "
        "than one GPU's worth of memory or compute request whole GPUs on nodes without sharing "
        "(or MIG instances).";
    info_.facts = {
        "facts/nvidia.md §3 — `failRequestsGreaterThanOne` defaults to false for time-slicing and is forced "
        "to true for MPS unless set; with it a request > 1 fails with `UnexpectedAdmissionError`; "
        "time-slicing gives no memory or fault isolation [KDP, CND `gpu-sharing.rst`].",
        "Checked upstream: k8s-device-plugin `api/config/v1/replicas.go` defaults a missing "
        "`failRequestsGreaterThanOne` to `false`; `config.go` sets it to true for MPS only when absent.",
    };
    info_.checks = {KindRef{"", "ConfigMap"}};
    info_.example_bad = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        resources:
        - name: nvidia.com/gpu
          replicas: 4
)";
    info_.example_good = R"(apiVersion: v1
kind: ConfigMap
metadata:
  name: time-slicing-config
  namespace: gpu-operator
data:
  any: |-
    version: v1
    sharing:
      timeSlicing:
        failRequestsGreaterThanOne: true
        resources:
        - name: nvidia.com/gpu
          replicas: 4
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    for (const auto& cfg : sharing::device_plugin_configs(obj)) {
      // Only the strategy the plugin uses: with MPS configured, time-slicing is not applied.
      if (sharing::sharing_strategy(cfg.config) != "time-slicing") continue;
      const Node ts = sharing::sharing_section(cfg.config, "timeSlicing");
      if (!ts.is_object()) continue;
      const Node fail = member(ts, "failRequestsGreaterThanOne");
      if (fail.is_boolean() && fail.boolean()) continue;
      if (fail && !fail.is_boolean() && !fail.is_null()) continue;  // sharing-config-invalid says it
      std::string resources;
      if (const Node rs = member(ts, "resources"); rs.is_array())
        for (const Node r : rs) {
          auto n = int_at(r, "replicas");
          auto name = string_at(r, "name");
          if (!n || *n < 2 || !name) continue;
          resources += (resources.empty() ? "" : ", ") + std::string(*name) + " ×" + std::to_string(*n);
        }
      if (resources.empty()) continue;
      const std::string state = fail ? "failRequestsGreaterThanOne: false" : "failRequestsGreaterThanOne unset (default false)";
      const std::string msg = "time-slicing (" + resources + ") with " + state +
                              ": a pod asking for 2 replicas gets two time slices, usually of the same GPU — no more memory "
                              "and no more compute, only a larger share of time taken from its neighbours; set "
                              "failRequestsGreaterThanOne: true so that such requests fail visibly";
      std::string where = cfg.pointer;
      if (cfg.key.empty() && cfg.pointer.empty()) {
        ctx.report(fail ? "/sharing/timeSlicing/failRequestsGreaterThanOne" : "/sharing/timeSlicing", msg);
        continue;
      }
      ctx.report(where, "device-plugin config `" + cfg.key + "`: " + msg);
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_sharing_oversubscription() { return std::make_unique<SharingOversubscription>(); }

}  // namespace gpuguard::rules
