#pragma once
// JSON Schema validation of objects (valijson), from what users have: Kubernetes API definitions
// (`{"definitions": {...}}` with x-kubernetes-group-version-kind, as kubeconform caches them and
// `kubectl get --raw /openapi/v2` prints them), OpenAPI v3 group-version documents (`kubectl get
// --raw /openapi/v3/apis/<group>/<version>`), kubeconform's per-kind standalone JSON schemas
// (yannh/kubernetes-json-schema, and the CRDs catalog's `<group>/<kind>_<version>.json`) and
// CustomResourceDefinition YAML files (their openAPIV3Schema). Validation is strict, as
// `kubectl apply` with server-side field validation: unknown fields are errors, except where a
// schema preserves them. No schema ships inside the binary; `gpuguard lint --schemas DIR` loads one.

#include "engine/expected.h"
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/json.h"
#include "engine/object.h"
#include "engine/types.h"

namespace gpuguard::engine {

class SchemaStore {
 public:
  struct Problem {
    std::string pointer;  // where in the object
    std::string message;
  };

  // Loads every definitions JSON file and every CRD YAML file below `dir`. Files that are neither
  // are ignored; malformed ones are diagnostics.
  static std::shared_ptr<SchemaStore> load(const std::filesystem::path& dir, std::vector<Diagnostic>& diagnostics);

  // The problems of an object, or nullopt when no schema knows its kind.
  [[nodiscard]] std::optional<std::vector<Problem>> validate(const Object& obj) const;
  // Whether a schema knows the object's kind (schema-missing reports the objects none knows).
  [[nodiscard]] bool knows(const Object& obj) const;
  [[nodiscard]] size_t kinds() const { return sources_.size() + by_lower_kind_.size(); }

  ~SchemaStore();

 private:
  SchemaStore() = default;
  struct Compiled;
  struct Source {
    std::shared_ptr<const json> definitions;  // the whole definitions document, or null for a CRD
    std::string definition;                   // its name in `definitions`
    json schema;                              // a CRD version's openAPIV3Schema
  };
  [[nodiscard]] const Source* find(const Object& obj) const;
  // (group, version, kind) → where its schema is.
  std::map<std::tuple<std::string, std::string, std::string>, Source> sources_;
  // The same, the kind in lower case: schemas named only by their file (the CRDs catalog's
  // `<group>/<kind>_<version>.json`), looked up when no exact key matches.
  std::map<std::tuple<std::string, std::string, std::string>, Source> by_lower_kind_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<std::string, std::string, std::string>, std::shared_ptr<Compiled>> compiled_;
};

}  // namespace gpuguard::engine
