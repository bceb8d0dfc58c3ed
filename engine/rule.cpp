#include "engine/rule.h"

#include <re2/re2.h>

namespace gpuguard::engine {

std::string_view to_string(ParamType t) {
  switch (t) {
    case ParamType::integer: return "integer";
    case ParamType::boolean: return "boolean";
    case ParamType::string: return "string";
    case ParamType::string_list: return "list of strings";
    case ParamType::regex: return "regular expression (RE2)";
    case ParamType::string_map: return "mapping of strings";
  }
  return "value";
}

Params::Params(json values, std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> regexes)
    : values_(std::move(values)), regexes_(std::move(regexes)) {}

int64_t Params::integer(std::string_view name) const {
  const json* v = member(values_, name);
  return v ? as_int(*v).value_or(0) : 0;
}

bool Params::boolean(std::string_view name) const {
  const json* v = member(values_, name);
  return v && v->is_boolean() && v->get<bool>();
}

std::string Params::string(std::string_view name) const {
  const json* v = member(values_, name);
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::vector<std::string> Params::strings(std::string_view name) const {
  std::vector<std::string> out;
  const json* v = member(values_, name);
  if (v && v->is_array())
    for (const auto& x : *v)
      if (x.is_string()) out.push_back(x.get<std::string>());
  return out;
}

const re2::RE2* Params::regex(std::string_view name) const { return regex_ptr(name).get(); }

std::shared_ptr<const re2::RE2> Params::regex_ptr(std::string_view name) const {
  for (const auto& [n, re] : regexes_)
    if (n == name) return re;
  return nullptr;
}

}  // namespace gpuguard::engine
