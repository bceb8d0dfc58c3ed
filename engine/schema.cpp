#include "engine/schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "engine/load.h"

namespace gpuguard::engine {

struct SchemaStore::Compiled {
  valijson::Schema schema;
};

SchemaStore::~SchemaStore() = default;

namespace {

// Strict, as server-side field validation: an object schema with properties allows no others,
// unless it preserves unknown fields.
void strictify(json& s) {
  if (s.is_array()) {
    for (auto& x : s) strictify(x);
    return;
  }
  if (!s.is_object()) return;
  const json* preserve_field = member(s, "x-kubernetes-preserve-unknown-fields");
  const bool preserve = preserve_field && preserve_field->is_boolean() && preserve_field->get<bool>();
  if (s.contains("properties") && s["properties"].is_object() && !s.contains("additionalProperties") && !preserve)
    s["additionalProperties"] = false;
  // The API server applies a structural schema's defaults before it validates: a required field
  // with a default is always there.
  if (s.contains("required") && s["required"].is_array() && s.contains("properties") && s["properties"].is_object()) {
    json kept = json::array();
    for (const auto& r : s["required"])
      if (!r.is_string() || !s["properties"].contains(r.get<std::string>()) || !s["properties"][r.get<std::string>()].contains("default"))
        kept.push_back(r);
    if (kept.empty()) s.erase("required");
    else s["required"] = kept;
  }
  for (const char* key : {"properties", "definitions", "patternProperties"})
    if (s.contains(key) && s[key].is_object())
      for (auto& [k, v] : s[key].items()) strictify(v);
  for (const char* key : {"items", "additionalProperties", "not"})
    if (s.contains(key)) strictify(s[key]);
  for (const char* key : {"allOf", "anyOf", "oneOf"})
    if (s.contains(key)) strictify(s[key]);
}

// What the API server's decoder sees: null means absent, 2.0 is the integer 2. (On the copy that
// valijson reads: see validate.)
void normalise(nlohmann::json& v) {
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end();) {
      if (it->is_null()) it = v.erase(it);
      else {
        normalise(*it);
        ++it;
      }
    }
  } else if (v.is_array()) {
    for (auto& x : v) normalise(x);
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) v = static_cast<int64_t>(d);
  }
}

std::string type_word(const nlohmann::json& v) {
  switch (v.type()) {
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "a mapping";
    default: return "null";
  }
}

// The API server's own OpenAPI documents (`kubectl get --raw /openapi/v2`, `/openapi/v3/...`) give
// an int-or-string as `type: string, format: int-or-string` and a quantity as `type: string`, yet
// its decoder takes `maxSurge: 1` and `memory: 1`: the JSON Schema form says so (as kubeconform's
// cache does, with oneOf). Applied to every schema read; forms already in oneOf are left alone.
bool flag(const json& s, std::string_view key) {
  const json* v = member(s, key);
  return v && v->is_boolean() && v->get<bool>();
}

void kubernetes_formats(json& s) {
  if (s.is_array()) {
    for (auto& x : s) kubernetes_formats(x);
    return;
  }
  if (!s.is_object()) return;
  const json* format = member(s, "format");
  const bool int_or_string = (format && format->is_string() && format->get_ref<const std::string&>() == "int-or-string") ||
                             (flag(s, "x-kubernetes-int-or-string") && !s.contains("anyOf") && !s.contains("oneOf"));
  if (int_or_string) {
    s.erase("type");
    s.erase("format");
    s["oneOf"] = json::array({json{{"type", "string"}}, json{{"type", "integer"}}});
  }
  // Only the places that hold schemas (as strictify walks them): a property may be called
  // `format` or `x-kubernetes-int-or-string` (JSONSchemaProps has both).
  for (const char* key : {"properties", "definitions", "patternProperties"})
    if (json* m = member(s, key); m && m->is_object())
      for (auto& [k, v] : m->items()) kubernetes_formats(v);
  for (const char* key : {"items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"})
    if (json* m = member(s, key)) kubernetes_formats(*m);
}

// A definitions document's quantities (resource.Quantity: `type: string` in the API server's
// documents) as the decoder reads them: a string or a number.
void quantities(json& definitions) {
  for (auto& [name, def] : definitions.items()) {
    if (std::string_view(name).ends_with(".pkg.api.resource.Quantity") && def.is_object() && string_at(def, "type").value_or("") == "string") {
      def.erase("type");
      def.erase("format");
      def["oneOf"] = json::array({json{{"type", "string"}}, json{{"type", "number"}}});
    }
  }
}

// OpenAPI v3's references (`#/components/schemas/NAME`) as the definitions form's, so one
// document shape is compiled.
void v3_refs(json& s) {
  if (s.is_array()) {
    for (auto& x : s) v3_refs(x);
    return;
  }
  if (!s.is_object()) return;
  constexpr std::string_view v3 = "#/components/schemas/";
  if (json* ref = member(s, "$ref"); ref && ref->is_string()) {
    const std::string& r = ref->get_ref<const std::string&>();
    if (r.rfind(v3, 0) == 0) {
      std::string rewritten;
      rewritten.reserve(r.size());
      rewritten.append("#/definitions/");
      rewritten.append(r, v3.size());
      *ref = std::move(rewritten);
    }
  }
  for (auto& [k, v] : s.items())
    if (v.is_object() || v.is_array()) v3_refs(v);
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::shared_ptr<SchemaStore> SchemaStore::load(const std::filesystem::path& dir, std::vector<Diagnostic>& diagnostics) {
  std::shared_ptr<SchemaStore> store(new SchemaStore());
  std::vector<Input> inputs = expand_inputs({dir.string()}, diagnostics);
  for (const auto& in : inputs) {
    if (in.path.extension() == ".json") {
      std::string text = read_text(in.path);
      json doc = json::parse(text, nullptr, false);
      if (doc.is_discarded()) {
        diagnostics.push_back({Severity::error, in.display, {}, "not valid JSON"});
        continue;
      }
      if (!doc.is_object()) continue;
      // Definitions: kubeconform's cache and `kubectl get --raw /openapi/v2` (`definitions`), or an
      // OpenAPI v3 group-version document (`kubectl get --raw /openapi/v3/apis/apps/v1`:
      // `components.schemas`).
      const json* defs = member(doc, "definitions");
      bool v3 = false;
      if (!defs || !defs->is_object()) {
        defs = path(doc, {"components", "schemas"});
        v3 = defs && defs->is_object();
      }
      if (defs && defs->is_object()) {
        auto shared = std::make_shared<json>(*defs);
        if (v3) v3_refs(*shared);
        quantities(*shared);
        for (auto& [name, def] : shared->items()) {
          kubernetes_formats(def);
          strictify(def);
        }
        for (const auto& [name, def] : shared->items()) {
          const json* gvks = member(def, "x-kubernetes-group-version-kind");
          if (!gvks || !gvks->is_array()) continue;
          for (const auto& g : *gvks)
            if (g.is_object())
              store->sources_[{std::string(string_at(g, "group").value_or("")), std::string(string_at(g, "version").value_or("")), std::string(string_at(g, "kind").value_or(""))}] = Source{shared, name, json()};
        }
        continue;
      }
      // `kubectl get --raw /openapi/v3` is the index of the group-version documents, not a schema.
      if (const json* paths = member(doc, "paths"); paths && paths->is_object() && !paths->empty() &&
                                                   paths->begin()->is_object() && paths->begin()->contains("serverRelativeURL")) {
        diagnostics.push_back({Severity::error, in.display, {},
                               "an OpenAPI v3 index (kubectl get --raw /openapi/v3), which holds no schema: save each "
                               "group version's document instead, e.g. kubectl get --raw /openapi/v3/apis/apps/v1"});
        continue;
      }
      // One kind's standalone schema, as kubeconform reads them: the Kubernetes kinds
      // (yannh/kubernetes-json-schema `*-standalone*/deployment-apps-v1.json`) carry their
      // x-kubernetes-group-version-kind; a CRD's (the CRDs catalog, `<group>/<kind>_<version>.json`,
      // made by kubeconform's openapi2jsonschema.py) is named by its path, with the kind in lower case.
      if (!doc.contains("properties") && !doc.contains("x-kubernetes-group-version-kind")) continue;
      json schema = std::move(doc);
      schema.erase("$schema");
      kubernetes_formats(schema);
      strictify(schema);
      if (const json* gvks = member(schema, "x-kubernetes-group-version-kind"); gvks && gvks->is_array() && !gvks->empty()) {
        const json keys = *gvks;
        for (const auto& g : keys)
          if (g.is_object()) store->sources_[{std::string(string_at(g, "group").value_or("")), std::string(string_at(g, "version").value_or("")), std::string(string_at(g, "kind").value_or(""))}] = Source{nullptr, "", schema};
        continue;
      }
      const std::string stem = in.path.stem().string();
      const std::string group = in.path.parent_path().filename().string();
      const auto underscore = stem.rfind('_');
      if (underscore == std::string::npos || underscore == 0 || underscore + 1 == stem.size() || group.find('.') == std::string::npos) {
        diagnostics.push_back({Severity::error, in.display, {},
                               "a JSON Schema that names no kind: it has no x-kubernetes-group-version-kind, and its path is "
                               "not <group>/<kind>_<version>.json (the CRDs catalog's layout)"});
        continue;
      }
      store->by_lower_kind_[{group, stem.substr(underscore + 1), lower(stem.substr(0, underscore))}] = Source{nullptr, "", std::move(schema)};
      continue;
    }
    // CRD YAML: each served version's schema.
    load_input(
        in, 0, LoadOptions{},
        [&](Object&& o) {
          if (!o.is("apiextensions.k8s.io", "CustomResourceDefinition")) return;
          const json* spec = member(o.body(), "spec");
          if (!spec) return;
          std::string group(string_at(*spec, "group").value_or(""));
          const json* names = member(*spec, "names");
          std::string kind(names ? string_at(*names, "kind").value_or("") : "");
          const json* versions = member(*spec, "versions");
          if (!versions || !versions->is_array() || kind.empty()) return;
          for (const auto& v : *versions) {
            const json* schema = path(v, {"schema", "openAPIV3Schema"});
            if (!schema) continue;
            json s = *schema;
            strictify(s);
            store->sources_[{group, std::string(string_at(v, "name").value_or("")), kind}] = Source{nullptr, "", std::move(s)};
          }
        },
        diagnostics);
  }
  return store;
}

const SchemaStore::Source* SchemaStore::find(const Object& obj) const {
  if (!obj.is_kubernetes_object()) return nullptr;
  if (auto it = sources_.find({obj.gvk.group, obj.gvk.version, obj.gvk.kind}); it != sources_.end()) return &it->second;
  if (by_lower_kind_.empty()) return nullptr;
  auto it = by_lower_kind_.find({obj.gvk.group, obj.gvk.version, lower(obj.gvk.kind)});
  return it == by_lower_kind_.end() ? nullptr : &it->second;
}

bool SchemaStore::knows(const Object& obj) const { return find(obj) != nullptr; }

std::optional<std::vector<SchemaStore::Problem>> SchemaStore::validate(const Object& obj) const {
  if (!obj.is_kubernetes_object()) return std::nullopt;
  const auto key = std::make_tuple(obj.gvk.group, obj.gvk.version, obj.gvk.kind);
  const Source* src = find(obj);
  if (!src) return std::nullopt;
  std::shared_ptr<Compiled> compiled;
  {
    std::lock_guard lock(mu_);
    auto it = compiled_.find(key);
    if (it != compiled_.end()) compiled = it->second;
  }
  if (!compiled) {
    compiled = std::make_shared<Compiled>();
    json root;
    if (src->definitions) {
      root = {{"$ref", "#/definitions/" + src->definition}, {"definitions", *src->definitions}};
    } else {
      root = src->schema;
    }
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft4);
    // valijson's adapter reads nlohmann::json, not the engine's json (another specialisation of
    // basic_json, engine/json.h): it is given a copy of that type, which must outlive it. (Given
    // the engine's json, it would hold a temporary made by basic_json's converting constructor.)
    const nlohmann::json schema_doc(root);
    valijson::adapters::NlohmannJsonAdapter adapter(schema_doc);
    parser.populateSchema(adapter, compiled->schema);
    std::lock_guard lock(mu_);
    compiled_[key] = compiled;
  }
  nlohmann::json body(obj.body());  // valijson's type (see above), normalised
  normalise(body);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter target(body);
  std::vector<Problem> problems;
  if (validator.validate(compiled->schema, target, &results)) return problems;
  std::set<std::pair<std::string, std::string>> seen;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    // Keep the leaves: the errors that say what is wrong, not the ones that say where it failed.
    if (e.description.rfind("Failed to validate", 0) == 0 || e.description.rfind("Cannot validate item", 0) == 0) continue;
    std::string pointer;
    for (const auto& c : e.context) {
      if (c == "<root>") continue;
      std::string token = c.size() >= 2 && c.front() == '[' && c.back() == ']' ? c.substr(1, c.size() - 2) : c;
      pointer += "/" + pointer_escape(token);
    }
    std::string message = e.description;
    const std::string unknown = "could not be validated using 'properties' or 'additionalProperties' constraints: '";
    if (auto p = message.find(unknown); p != std::string::npos) {
      std::string field = message.substr(p + unknown.size());
      if (!field.empty() && field.back() == '.') field.pop_back();
      if (!field.empty() && field.back() == '\'') field.pop_back();
      pointer += "/" + pointer_escape(field);
      message = "unknown field \"" + field + "\"";
    } else if (message == "Value type not permitted by 'type' constraint.") {
      const nlohmann::json* v = nullptr;
      try {
        v = &body.at(nlohmann::json::json_pointer(pointer));
      } catch (...) {
      }
      message = "wrong type" + (v ? std::string(": ") + type_word(*v) + " is not allowed here" : std::string());
    } else if (message.rfind("Missing required property '", 0) == 0) {
      message = "missing required field " + message.substr(26, message.size() - 26 - (message.back() == '.' ? 1 : 0));
    }
    if (seen.insert({pointer, message}).second) problems.push_back({pointer, message});
  }
  return problems;
}

}  // namespace gpuguard::engine
