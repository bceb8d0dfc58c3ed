// schema-missing: with `--schemas`, objects whose kind no schema describes (so schema-invalid
// cannot check them).

#include "engine/kinds.h"
#include "engine/schema.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// Kinds that are never sent to the API server as resources, so no cluster has a schema for them:
// AdmissionReviews (a webhook's request and answer) and component configuration files
// (`*.config.k8s.io`: KubeSchedulerConfiguration, KubeletConfiguration, Kustomization).
bool api_resource(const Object& obj) {
  if (obj.gvk.group == "admission.k8s.io") return false;
  return !std::string_view(obj.gvk.group).ends_with(".config.k8s.io");
}

class SchemaMissing final : public Rule {
 public:
  SchemaMissing() {
    info_.id = "schema-missing";
    info_.severity = Severity::warning;
    info_.category = "schema";
    info_.seed = "9";
    info_.summary = "With --schemas, an object whose kind no given schema describes, so its shape is not checked";
    info_.rationale =
        "`schema-invalid` can only check a kind it has a schema for. A CRD left out of the schema "
        "folder, or an apiVersion the folder does not have (a `v1beta1` manifest checked against "
        "`v1` definitions), is silently not validated: the run looks clean while a misspelt field "
        "goes through. This rule says which objects were not checked, as kubeconform does unless "
        "told to ignore missing schemas. AdmissionReviews and component configuration files "
        "(`*.config.k8s.io` groups, such as KubeSchedulerConfiguration) are not API resources and "
        "have no schema in any cluster: they are left out.\n\n"
        "It runs only when schemas are given (`gpuguard lint --schemas DIR`). `--schemas-missing` "
        "sets what a missing schema is: `warn` (this rule's default severity), `error`, or `ignore` "
        "(the rule is off); `rules: {schema-missing: ...}` in the configuration does the same.";
    info_.remediation =
        "Add the kind's schema to the folder: its CustomResourceDefinition (`kubectl get crd NAME -o "
        "yaml`), its standalone JSON schema (kubeconform's format), or the cluster's OpenAPI "
        "documents (`kubectl get --raw /openapi/v2`, `kubectl get --raw "
        "/openapi/v3/apis/GROUP/VERSION`). If the kind is not meant to be validated, run with "
        "`--schemas-missing=ignore` or disable the rule.";
    info_.checks = {KindRef{"*", "*"}};  // every kind, when a schema folder is given
    info_.facts = {
        "facts/webhook.md §5 — the kubeconform schema formats gpuguard reads (definitions keyed by "
        "x-kubernetes-group-version-kind).",
        "yannh/kubeconform README (checked 2026-12-07): a resource whose schema cannot be found fails "
        "validation unless `-ignore-missing-schemas` is given; CRD schemas are looked up by file "
        "name, e.g. the CRDs catalog's `{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json` "
        "with the kind in lower case.",
    };
    info_.example_bad = R"(# gpuguard lint --schemas DIR   (DIR has kubeflow.org/v1 only)
apiVersion: kubeflow.org/v2
kind: PyTorchJob
metadata:
  name: llm
spec: {}
)";
    info_.example_good = R"(# gpuguard lint --schemas DIR
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: llm
spec:
  pytorchReplicaSpecs: {}
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& store = ctx.settings().schemas;
    if (!store || !obj.is_kubernetes_object() || !api_resource(obj) || store->knows(obj)) return;
    std::string message;
    message.reserve(160);
    message.append("no schema for ").append(obj.api_version).append(" ").append(obj.gvk.kind);
    message.append(" in the --schemas folder: its fields are not validated (add its CRD or JSON schema there)");
    ctx.report("/kind", std::move(message));
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_schema_missing() { return std::make_unique<SchemaMissing>(); }

}  // namespace gpuguard::rules
