#include "tests/support/schema.h"

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

namespace gpuguard::test {

std::vector<std::string> validate(const engine::json& schema_json, const engine::json& doc) {
  valijson::Schema schema;
  valijson::SchemaParser parser;
  // valijson reads nlohmann::json: copies of that type, alive as long as the adapters.
  const nlohmann::json schema_doc(schema_json), doc_copy(doc);
  valijson::adapters::NlohmannJsonAdapter schema_adapter(schema_doc);
  parser.populateSchema(schema_adapter, schema);
  valijson::Validator validator;
  valijson::ValidationResults results;
  valijson::adapters::NlohmannJsonAdapter doc_adapter(doc_copy);
  std::vector<std::string> problems;
  if (validator.validate(schema, doc_adapter, &results)) return problems;
  valijson::ValidationResults::Error e;
  while (results.popError(e)) {
    std::string where;
    for (const auto& c : e.context) where += c;
    problems.push_back(where + ": " + e.description);
  }
  return problems;
}

}  // namespace gpuguard::test
