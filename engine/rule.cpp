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
    : values_(std::move(values)), regexes_(std::move(regexes)) {
  if (!values_.is_object()) return;
  for (const auto& [name, v] : values_.items()) {
    if (!v.is_array()) continue;
    std::vector<std::string> list;
    for (const auto& x : v)
      if (x.is_string()) list.push_back(x.get<std::string>());
    string_lists_.emplace_back(name, std::move(list));
  }
}

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

const std::vector<std::string>& Params::strings(std::string_view name) const {
  static const std::vector<std::string> kNone;
  for (const auto& [n, list] : string_lists_)
    if (n == name) return list;
  return kNone;
}

const re2::RE2* Params::regex(std::string_view name) const { return regex_ptr(name).get(); }

std::shared_ptr<const re2::RE2> Params::regex_ptr(std::string_view name) const {
  for (const auto& [n, re] : regexes_)
    if (n == name) return re;
  return nullptr;
}

}  // namespace gpuguard::engine
