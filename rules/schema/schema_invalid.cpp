// schema-invalid: objects the API server would refuse for their shape (unknown fields, types).

#include "engine/kinds.h"
#include "engine/schema.h"
#include "rules/all.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

class SchemaInvalid final : public Rule {
 public:
  SchemaInvalid() {
    info_.id = "schema-invalid";
    info_.severity = Severity::error;
    info_.category = "schema";
    info_.seed = "9";
    info_.summary = "An object does not match its kind's schema: an unknown field, a wrong type, a missing required field";
    info_.rationale =
        "Every rule reads fields by name; a misspelt field (`nodeSelecter`, `resource:`) is not an "
        "error the rules can see, it is simply absent, and the protection it was meant to give is "
        "missing. `kubectl apply` with server-side field validation (`--validate=strict`, the default) "
        "rejects unknown fields and wrong types; an older client or a GitOps tool may drop them "
        "silently instead.\n\n"
        "The rule runs only when schemas are given (`gpuguard lint --schemas DIR`), in the forms "
        "people have: the cluster's own OpenAPI documents (`kubectl get --raw /openapi/v2`, or "
        "`kubectl get --raw /openapi/v3/apis/GROUP/VERSION` per group version), Kubernetes "
        "definitions as kubeconform caches them, kubeconform's per-kind standalone JSON schemas "
        "(yannh/kubernetes-json-schema, and the CRDs catalog's `GROUP/KIND_VERSION.json` with the "
        "kind in lower case) and CustomResourceDefinition YAML files, whose `openAPIV3Schema` is "
        "used. No schema is built into gpuguard, so it checks against the versions your cluster "
        "runs. An int-or-string field takes either, and a quantity a string or a number, as the API "
        "server's decoder does (its OpenAPI documents type both as strings). Validation is strict: "
        "an object schema with properties admits no others unless it sets "
        "`x-kubernetes-preserve-unknown-fields`. Nulls count as absent and `2.0` as `2`, as the API "
        "server's decoder reads them. Kinds without a schema are not checked: `schema-missing` "
        "lists them.";
    info_.remediation =
        "Fix the field the finding names (its spelling, its place, its type). To check against your "
        "cluster's exact versions, point `--schemas` at its definitions and CRDs "
        "(`kubectl get --raw /openapi/v2 > schemas/openapi-v2.json`, `kubectl get crd -o yaml > "
        "schemas/crds.yaml`).";
    info_.checks = {KindRef{"*", "*"}};  // every kind a schema is given for
    info_.facts = {
        "facts/webhook.md §5 — the Kubernetes definitions (yannh/kubeconform fixtures, about Kubernetes "
        "1.32–1.33) and the CRD schemas of the GPU ecosystem in ../shared/k8s-schemas/ are what the "
        "tests validate against; the kubeconform format keys definitions by "
        "`x-kubernetes-group-version-kind`.",
        "facts/webhook.md §4 — sigs.k8s.io/yaml turns YAML into JSON before decoding, and Go's decoder "
        "reads null as the zero value, so null fields are treated as absent.",
    };
    info_.example_bad = R"(# gpuguard lint --schemas DIR
apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: pytorch
      resource:
        limits:
          nvidia.com/gpu: 1
)";
    info_.example_good = R"(# gpuguard lint --schemas DIR
apiVersion: v1
kind: Pod
metadata:
  name: train
spec:
  containers:
    - name: train
      image: pytorch
      resources:
        limits:
          nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    const auto& store = ctx.settings().schemas;
    if (!store) return;
    auto problems = store->validate(obj);
    if (!problems) return;
    for (auto& p : *problems) ctx.report(p.pointer, obj.api_version + " " + obj.gvk.kind + ": " + p.message);
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_schema_invalid() { return std::make_unique<SchemaInvalid>(); }

}  // namespace gpuguard::rules
