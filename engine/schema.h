#pragma once
// JSON Schema validation of objects (valijson): Kubernetes API definitions in the standalone
// JSON form (`{"definitions": {...}}` with x-kubernetes-group-version-kind, as kubeconform caches
// them) and CustomResourceDefinition YAML files (their openAPIV3Schema). Validation is strict, as
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
  [[nodiscard]] size_t kinds() const { return sources_.size(); }

  ~SchemaStore();

 private:
  SchemaStore() = default;
  struct Compiled;
  struct Source {
    std::shared_ptr<const json> definitions;  // the whole definitions document, or null for a CRD
    std::string definition;                   // its name in `definitions`
    json schema;                              // a CRD version's openAPIV3Schema
  };
  // (group, version, kind) → where its schema is.
  std::map<std::tuple<std::string, std::string, std::string>, Source> sources_;
  mutable std::mutex mu_;
  mutable std::map<std::tuple<std::string, std::string, std::string>, std::shared_ptr<Compiled>> compiled_;
};

}  // namespace gpuguard::engine
