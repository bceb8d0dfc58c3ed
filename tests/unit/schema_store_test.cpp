// engine/schema: `--schemas DIR` reads the schema forms users have — the API server's own OpenAPI
// v2 and v3 documents, kubeconform's cache and per-kind standalone files, the CRDs catalog's
// `<group>/<kind>_<version>.json` — and validates alike from each.

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/schema.h"
#include "tests/support/support.h"

using namespace gpuguard;
using engine::json;
namespace fs = std::filesystem;

namespace {

// The definitions a Deployment needs, as the API server's /openapi/v2 gives them: IntOrString is
// `type: string, format: int-or-string` and Quantity `type: string`.
json v2_definitions() {
  return json::parse(R"({
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object",
      "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                     "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
    "io.k8s.api.apps.v1.Deployment": {"type": "object",
      "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"}},
      "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]},
    "io.k8s.api.apps.v1.DeploymentSpec": {"type": "object", "required": ["selector"],
      "properties": {"replicas": {"type": "integer", "format": "int32"},
        "selector": {"type": "object"},
        "strategy": {"type": "object", "properties": {"rollingUpdate": {"type": "object", "properties": {
          "maxSurge": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.util.intstr.IntOrString"}}}}},
        "resources": {"type": "object", "additionalProperties": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.api.resource.Quantity"}}}}
  })");
}

// The same as an OpenAPI v3 group-version document (/openapi/v3/apis/apps/v1): references into
// components.schemas, wrapped in allOf as the API server writes them.
json v3_document() {
  std::string text = v2_definitions().dump();
  for (size_t at = 0; (at = text.find("#/definitions/", at)) != std::string::npos;) text.replace(at, 14, "#/components/schemas/");
  json schemas = json::parse(text);
  json& meta = schemas["io.k8s.api.apps.v1.Deployment"]["properties"]["metadata"];
  meta = json{{"allOf", json::array({meta})}, {"default", json::object()}};
  return json{{"openapi", "3.0.0"}, {"info", {{"title", "Kubernetes"}, {"version", "v1.34.0"}}}, {"paths", json::object()},
              {"components", {{"schemas", schemas}}}};
}

constexpr const char* kDeployment = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: infer, labels: {app: infer}}
spec:
  replicas: 2
  selector: {}
  strategy: {rollingUpdate: {maxSurge: 1}}
  resources: {memory: 1, cpu: 500m}
)";

constexpr const char* kTypo = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  selector: {}
  replica: 2
  strategy: {rollingUpdate: {maxSurge: [1]}}
)";

std::shared_ptr<engine::SchemaStore> load(const fs::path& dir, std::vector<engine::Diagnostic>& diags) {
  return engine::SchemaStore::load(dir, diags);
}

std::vector<std::string> problems(const engine::SchemaStore& store, const char* yaml) {
  auto objs = test::load_objects(yaml);
  REQUIRE(objs.size() == 1);
  auto p = store.validate(objs[0]);
  REQUIRE_MESSAGE(p.has_value(), "no schema for the object");
  std::vector<std::string> out;
  for (const auto& x : *p) out.push_back(x.pointer + ": " + x.message);
  return out;
}

void check_deployment_schema(const engine::SchemaStore& store) {
  CHECK(problems(store, kDeployment).empty());
  const auto bad = problems(store, kTypo);
  CHECK(std::find(bad.begin(), bad.end(), "/spec/replica: unknown field \"replica\"") != bad.end());
  bool surge = false;
  for (const auto& b : bad) surge = surge || b.rfind("/spec/strategy/rollingUpdate/maxSurge", 0) == 0;
  CHECK_MESSAGE(surge, "maxSurge: [1] is neither an integer nor a string");
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("--schemas: the API server's OpenAPI v2 document (int-or-string and quantities as its decoder reads them)") {
  test::TempDir dir;
  test::write_file(dir.path() / "openapi-v2.json", json{{"swagger", "2.0"}, {"definitions", v2_definitions()}}.dump());
  std::vector<engine::Diagnostic> diags;
  auto store = load(dir.path(), diags);
  CHECK(diags.empty());
  check_deployment_schema(*store);
}

TEST_CASE("--schemas: an OpenAPI v3 group-version document (components.schemas, allOf references)") {
  test::TempDir dir;
  test::write_file(dir.path() / "apis__apps__v1_openapi.json", v3_document().dump());
  std::vector<engine::Diagnostic> diags;
  auto store = load(dir.path(), diags);
  CHECK(diags.empty());
  CHECK(store->kinds() == 1);
  check_deployment_schema(*store);
}

TEST_CASE("--schemas: the OpenAPI v3 index is named as such, not silently ignored") {
  test::TempDir dir;
  test::write_file(dir.path() / "v3.json",
                   R"({"paths": {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=ABC"}, "apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=DEF"}}})");
  std::vector<engine::Diagnostic> diags;
  auto store = load(dir.path(), diags);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].message.find("kubectl get --raw /openapi/v3/apis/apps/v1") != std::string::npos);
  CHECK(store->kinds() == 0);
}

TEST_CASE("--schemas: kubeconform's standalone per-kind files and the CRDs catalog's layout") {
  test::TempDir dir;
  // A Kubernetes kind, as yannh/kubernetes-json-schema's *-standalone-strict folders hold them:
  // references inlined, the kind named by x-kubernetes-group-version-kind.
  json standalone = {{"$schema", "http://json-schema.org/schema#"},
                     {"type", "object"},
                     {"x-kubernetes-group-version-kind", json::array({json{{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"version", "v1"}}})},
                     {"required", json::array({"value"})},
                     {"properties",
                      {{"apiVersion", {{"type", "string"}}},
                       {"kind", {{"type", "string"}}},
                       {"metadata", {{"type", "object"}, {"properties", {{"name", {{"type", "string"}}}}}}},
                       {"value", {{"type", "integer"}}},
                       {"globalDefault", {{"type", "boolean"}}}}}};
  test::write_file(dir.path() / "priorityclass-scheduling-v1.json", standalone.dump());
  // A CRD's, as kubeconform's openapi2jsonschema.py writes it into the CRDs catalog: no
  // group-version-kind inside, the kind in lower case in the file name.
  json crd = {{"type", "object"},
              {"properties",
               {{"apiVersion", {{"type", "string"}}},
                {"kind", {{"type", "string"}}},
                {"metadata", {{"type", "object"}}},
                {"spec", {{"type", "object"}, {"properties", {{"runPolicy", {{"type", "object"}}}, {"nprocPerNode", {{"type", "string"}}}}}}}}}};
  fs::create_directories(dir.path() / "kubeflow.org");
  test::write_file(dir.path() / "kubeflow.org" / "pytorchjob_v1.json", crd.dump());
  std::vector<engine::Diagnostic> diags;
  auto store = load(dir.path(), diags);
  CHECK(diags.empty());
  CHECK(store->kinds() == 2);

  CHECK(problems(*store, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\n").empty());
  auto bad = problems(*store, "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000\nglobaldefault: true\n");
  CHECK(std::find(bad.begin(), bad.end(), "/globaldefault: unknown field \"globaldefault\"") != bad.end());

  CHECK(problems(*store, "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec: {nprocPerNode: auto}\n").empty());
  bad = problems(*store, "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: j}\nspec: {nprocPerNodes: auto}\n");
  CHECK(std::find(bad.begin(), bad.end(), "/spec/nprocPerNodes: unknown field \"nprocPerNodes\"") != bad.end());

  // Another version of the same CRD has no schema: knows() says so, for schema-missing.
  auto other = test::load_objects("apiVersion: kubeflow.org/v2\nkind: PyTorchJob\nmetadata: {name: j}\n");
  CHECK_FALSE(store->knows(other[0]));
  CHECK_FALSE(store->validate(other[0]).has_value());
}

TEST_CASE("--schemas: a JSON Schema that names no kind is an error naming the file, the others still load") {
  test::TempDir dir;
  test::write_file(dir.path() / "loose.json", R"({"type": "object", "properties": {"a": {"type": "string"}}})");
  test::write_file(dir.path() / "openapi-v2.json", json{{"definitions", v2_definitions()}}.dump());
  test::write_file(dir.path() / "package.json", R"({"name": "not-a-schema", "version": "1.0.0"})");
  std::vector<engine::Diagnostic> diags;
  auto store = load(dir.path(), diags);
  REQUIRE(diags.size() == 1);
  CHECK(diags[0].file.find("loose.json") != std::string::npos);
  CHECK(diags[0].message.find("<group>/<kind>_<version>.json") != std::string::npos);
  check_deployment_schema(*store);
}

TEST_CASE("--schemas: kubeconform's definitions as v2 and v3 documents validate the same Deployment alike") {
  auto shared = test::shared_dir();
  if (!shared || !fs::exists(*shared / "k8s-schemas" / "kubernetes-definitions.json")) {
    test::skip("../shared/k8s-schemas is not on this machine");
    return;
  }
  // The kubeconform cache (707 definitions) as it is, and rewritten into the OpenAPI v3 shape.
  const std::string text = test::read_file(*shared / "k8s-schemas" / "kubernetes-definitions.json");
  std::string v3_text = text;
  for (size_t at = 0; (at = v3_text.find("#/definitions/", at)) != std::string::npos;) v3_text.replace(at, 14, "#/components/schemas/");
  json v3 = {{"openapi", "3.0.0"}, {"components", {{"schemas", json::parse(v3_text)["definitions"]}}}};
  test::TempDir a, b;
  test::write_file(a.path() / "definitions.json", text);
  test::write_file(b.path() / "v3.json", v3.dump());
  std::vector<engine::Diagnostic> diags;
  auto from_v2 = load(a.path(), diags);
  auto from_v3 = load(b.path(), diags);
  CHECK(diags.empty());
  CHECK(from_v2->kinds() == from_v3->kinds());
  const char* deployment = R"(apiVersion: apps/v1
kind: Deployment
metadata: {name: infer}
spec:
  replicas: 2
  selector: {matchLabels: {app: infer}}
  strategy: {rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}}
  template:
    metadata: {labels: {app: infer}}
    spec:
      containers:
        - name: server
          image: tritonserver
          resources: {limits: {nvidia.com/gpu: 1, memory: 16Gi, cpu: 4}}
          resource: {}
)";
  const auto p2 = problems(*from_v2, deployment);
  const auto p3 = problems(*from_v3, deployment);
  CHECK(p2 == p3);
  REQUIRE(p2.size() == 1);
  CHECK(p2[0] == "/spec/template/spec/containers/0/resource: unknown field \"resource\"");
}

}  // TEST_SUITE
