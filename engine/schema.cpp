#include "engine/schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

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
  const bool preserve = s.value("x-kubernetes-preserve-unknown-fields", false);
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
      const json* defs = member(doc, "definitions");
      if (!defs || !defs->is_object()) continue;
      auto shared = std::make_shared<json>(*defs);
      for (auto& [name, def] : shared->items()) strictify(def);
      for (const auto& [name, def] : shared->items()) {
        const json* gvks = member(def, "x-kubernetes-group-version-kind");
        if (!gvks || !gvks->is_array()) continue;
        for (const auto& g : *gvks)
          store->sources_[{g.value("group", ""), g.value("version", ""), g.value("kind", "")}] = Source{shared, name, json()};
      }
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
            store->sources_[{group, v.value("name", ""), kind}] = Source{nullptr, "", std::move(s)};
          }
        },
        diagnostics);
  }
  return store;
}

std::optional<std::vector<SchemaStore::Problem>> SchemaStore::validate(const Object& obj) const {
  if (!obj.is_kubernetes_object()) return std::nullopt;
  const auto key = std::make_tuple(obj.gvk.group, obj.gvk.version, obj.gvk.kind);
  auto src = sources_.find(key);
  if (src == sources_.end()) return std::nullopt;
  std::shared_ptr<Compiled> compiled;
  {
    std::lock_guard lock(mu_);
    auto it = compiled_.find(key);
    if (it != compiled_.end()) compiled = it->second;
  }
  if (!compiled) {
    compiled = std::make_shared<Compiled>();
    json root;
    if (src->second.definitions) {
      root = {{"$ref", "#/definitions/" + src->second.definition}, {"definitions", *src->second.definitions}};
    } else {
      root = src->second.schema;
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
