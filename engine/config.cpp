#include "engine/config.h"

#include <re2/re2.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>

#include "engine/yaml_emit.h"
#include "engine/yaml_load.h"

namespace gpuguard::engine {

bool Exclusion::matches(std::string_view ns, std::string_view k, std::string_view n) const {
  if (namespace_ && !RE2::FullMatch(ns, *namespace_)) return false;
  if (kind && !RE2::FullMatch(k, *kind)) return false;
  if (name && !RE2::FullMatch(n, *name)) return false;
  return true;
}

bool Exclusion::covers(std::string_view rule) const {
  if (rules.empty()) return true;
  for (const auto& r : rules)
    if (r == rule) return true;
  return false;
}

std::string_view honour_note(NotHonoured why) {
  switch (why) {
    case NotHonoured::off: return "gpuguard.io/ignore not honoured at admission: annotations off";
    case NotHonoured::no_reason: return "gpuguard.io/ignore not honoured at admission: no ignore-reason";
    case NotHonoured::namespace_: return "gpuguard.io/ignore not honoured at admission in this namespace";
    case NotHonoured::rule: return "gpuguard.io/ignore not honoured at admission for this rule";
    case NotHonoured::user: return "gpuguard.io/ignore not honoured at admission for this user";
    case NotHonoured::flag: return "gpuguard.io/ignore not honoured: --no-annotation-exemptions";
  }
  return "gpuguard.io/ignore not honoured";
}

bool ExemptionAllow::matches_namespace(std::string_view ns) const { return !namespaces || RE2::FullMatch(ns, *namespaces); }

bool ExemptionAllow::covers(std::string_view rule) const {
  return rules.empty() || std::find(rules.begin(), rules.end(), rule) != rules.end();
}

bool ExemptionAllow::matches_user(const RequestUser* user) const {
  if (users.empty() && groups.empty()) return true;
  if (!user) return false;
  for (const auto& u : users)
    if (RE2::FullMatch(user->username, *u)) return true;
  for (const auto& g : groups)
    for (const auto& group : user->groups)
      if (RE2::FullMatch(group, *g)) return true;
  return false;
}

std::optional<NotHonoured> ExemptionSettings::refuses(std::string_view ns, std::string_view rule, const RequestUser* user,
                                                      bool has_reason) const {
  if (!annotations) return NotHonoured::off;
  if (require_reason && !has_reason) return NotHonoured::no_reason;
  if (allow.empty()) return std::nullopt;
  // The reason is the furthest any entry got: namespace, then rule, then user.
  NotHonoured why = NotHonoured::namespace_;
  for (const auto& a : allow) {
    if (!a.matches_namespace(ns)) continue;
    if (!a.covers(rule)) {
      why = std::max(why, NotHonoured::rule);
      continue;
    }
    if (!a.matches_user(user)) {
      why = NotHonoured::user;
      continue;
    }
    return std::nullopt;
  }
  return why;
}

std::string_view to_string(Mode m) {
  switch (m) {
    case Mode::enforce: return "enforce";
    case Mode::warn: return "warn";
    case Mode::audit: return "audit";
  }
  return "enforce";
}

namespace {
std::optional<Mode> parse_mode(std::string_view s) {
  if (s == "enforce") return Mode::enforce;
  if (s == "warn") return Mode::warn;
  if (s == "audit") return Mode::audit;
  return std::nullopt;
}
}  // namespace

const ClusterScope* Config::cluster(std::string_view name) const {
  for (const auto& c : clusters)
    if (c.name == name) return &c;
  return nullptr;
}

const RuleSettings& Config::rule(std::string_view id) const {
  static const RuleSettings kDisabled{false, Severity::warning, Mode::enforce, {}};
  auto it = rules.find(id);
  return it == rules.end() ? kDisabled : it->second;
}

namespace {

constexpr std::string_view kTopKeys[] = {"gpuResources", "gpuDeviceClasses", "defaultNamespace", "mig", "rules", "exclude", "webhook",
                                         "oneInventory", "clusters"};
constexpr std::string_view kClusterKeys[] = {"paths", "complete", "rules"};
constexpr std::string_view kRuleKeys[] = {"enabled", "severity", "mode", "fix", "params"};
constexpr std::string_view kWebhookKeys[] = {"onUpdate", "failureMode", "mutate", "exemptions"};
constexpr std::string_view kExemptionKeys[] = {"annotations", "requireReason", "allow"};
constexpr std::string_view kAllowKeys[] = {"namespaces", "rules", "users", "groups"};
constexpr std::string_view kMutateKeys[] = {"pods", "templates"};
constexpr std::string_view kExcludeKeys[] = {"namespace", "kind", "name", "rules", "reason"};

template <size_t N>
bool known(std::string_view key, const std::string_view (&keys)[N]) {
  for (auto k : keys)
    if (k == key) return true;
  return false;
}

template <size_t N>
std::string list_of(const std::string_view (&keys)[N]) {
  std::string out;
  for (auto k : keys) {
    if (!out.empty()) out += ", ";
    out += k;
  }
  return out;
}

std::string type_name(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "a list";
    case json::value_t::object: return "a mapping";
    default: return "a value";
  }
}

class Validator {
 public:
  Validator(std::string_view file, const PositionIndex* positions) : file_(file), positions_(positions) {}

  void error(std::string_view pointer, std::string message) {
    Pos pos = positions_ ? positions_->resolve(pointer) : Pos{};
    diags_.push_back({Severity::error, std::string(file_), pos, std::move(message)});
  }
  [[nodiscard]] std::string where(std::string_view pointer) const {
    Pos pos = positions_ ? positions_->resolve(pointer) : Pos{};
    return std::string(file_) + ":" + std::to_string(pos.line);
  }
  std::vector<Diagnostic> take() { return std::move(diags_); }
  [[nodiscard]] bool ok() const { return diags_.empty(); }

  // "rules.x.params.min" from "/rules/x/params/min", for messages.
  static std::string dotted(std::string_view pointer) {
    std::string out;
    for (const auto& t : pointer_tokens(pointer)) {
      bool index = !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
      if (index) out += "[" + t + "]";
      else out += (out.empty() ? "" : ".") + t;
    }
    return out;
  }

  std::shared_ptr<const re2::RE2> regex(const json& v, std::string_view pointer) {
    if (!v.is_string()) {
      error(pointer, dotted(pointer) + ": expected a regular expression (a string), got " + type_name(v));
      return nullptr;
    }
    RE2::Options opts;
    opts.set_log_errors(false);
    auto re = std::make_shared<re2::RE2>(v.get<std::string>(), opts);
    if (!re->ok()) {
      error(pointer, dotted(pointer) + ": invalid regular expression: " + re->error());
      return nullptr;
    }
    return re;
  }

 private:
  std::string_view file_;
  const PositionIndex* positions_;
  std::vector<Diagnostic> diags_;
};

// Checks one parameter value against its spec; returns the normalised value.
std::optional<json> check_param(const ParamSpec& spec, const json& v, std::string_view pointer, Validator& val,
                                std::shared_ptr<const re2::RE2>& re_out) {
  const std::string name = Validator::dotted(pointer);
  switch (spec.type) {
    case ParamType::integer: {
      auto i = as_int(v);
      if (!i || v.is_boolean()) {
        val.error(pointer, name + ": expected an integer, got " + type_name(v) + " " + brief(v));
        return std::nullopt;
      }
      if (spec.min && *i < *spec.min) {
        val.error(pointer, name + ": must be at least " + std::to_string(*spec.min) + ", got " + std::to_string(*i));
        return std::nullopt;
      }
      if (spec.max && *i > *spec.max) {
        val.error(pointer, name + ": must be at most " + std::to_string(*spec.max) + ", got " + std::to_string(*i));
        return std::nullopt;
      }
      return json(*i);
    }
    case ParamType::boolean:
      if (!v.is_boolean()) {
        val.error(pointer, name + ": expected true or false, got " + type_name(v) + " " + brief(v));
        return std::nullopt;
      }
      return v;
    case ParamType::string:
      if (!v.is_string()) {
        val.error(pointer, name + ": expected a string, got " + type_name(v) + " " + brief(v));
        return std::nullopt;
      }
      return v;
    case ParamType::regex:
      re_out = val.regex(v, pointer);
      if (!re_out) return std::nullopt;
      return v;
    case ParamType::string_list: {
      if (!v.is_array()) {
        val.error(pointer, name + ": expected a list of strings, got " + type_name(v));
        return std::nullopt;
      }
      for (size_t i = 0; i < v.size(); ++i)
        if (!v[i].is_string()) {
          val.error(pointer_join(pointer, i), name + "[" + std::to_string(i) + "]: expected a string, got " + type_name(v[i]));
          return std::nullopt;
        }
      return v;
    }
    case ParamType::string_map: {
      if (!v.is_object()) {
        val.error(pointer, name + ": expected a mapping of strings, got " + type_name(v));
        return std::nullopt;
      }
      for (const auto& [k, x] : v.items())
        if (!x.is_string()) {
          val.error(pointer_join(pointer, k), std::string(name).append(".").append(k).append(": expected a string, got ").append(type_name(x)));
          return std::nullopt;
        }
      return v;
    }
  }
  return std::nullopt;
}

RuleSettings defaults_for(const Rule& rule) {
  const RuleInfo& info = rule.info();
  json values = json::object();
  std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> regexes;
  for (const auto& p : info.params) {
    values[p.name] = p.default_value;
    if (p.type == ParamType::regex) {
      RE2::Options opts;
      opts.set_log_errors(false);
      regexes.emplace_back(p.name, std::make_shared<re2::RE2>(p.default_value.get<std::string>(), opts));
    }
  }
  return RuleSettings{true, info.severity, Mode::enforce, Params(std::move(values), std::move(regexes))};
}

void apply_settings(Config& config) {
  std::vector<std::string> patterns = default_gpu_resources();
  for (const auto& r : config.extra_gpu_resources)
    if (std::find(patterns.begin(), patterns.end(), r) == patterns.end()) patterns.push_back(r);
  config.settings.gpu_resources = ResourceMatcher(std::move(patterns));
  std::vector<std::string> classes = default_gpu_device_classes();
  for (const auto& c : config.extra_gpu_device_classes)
    if (std::find(classes.begin(), classes.end(), c) == classes.end()) classes.push_back(c);
  config.settings.gpu_device_classes = std::move(classes);
}

// A DeviceClass name (a DNS-1123 subdomain), or `*.` and one: names ending in that suffix.
bool valid_device_class_pattern(std::string_view s) {
  if (s.starts_with("*.")) s.remove_prefix(2);
  if (s.empty() || s.size() > 253) return false;
  for (size_t start = 0; start <= s.size();) {
    size_t end = s.find('.', start);
    if (end == std::string_view::npos) end = s.size();
    if (!is_dns1123_label(s.substr(start, end - start))) return false;
    start = end + 1;
  }
  return true;
}

bool valid_resource_pattern(std::string_view s) {
  if (s.empty()) return false;
  std::string_view body = s.back() == '*' ? s.substr(0, s.size() - 1) : s;
  if (body.empty()) return false;
  for (char c : body)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == '/')) return false;
  return true;
}

// webhook.exemptions.
void read_exemptions(const json& x, const Registry& registry, Validator& val, ExemptionSettings& out) {
  const std::string xptr = "/webhook/exemptions";
  if (!x.is_object()) {
    val.error(xptr, "webhook.exemptions: expected a mapping (" + list_of(kExemptionKeys) + "), got " + type_name(x));
    return;
  }
  for (const auto& [k, v] : x.items())
    if (!known(k, kExemptionKeys))
      val.error(pointer_join(xptr, k), "webhook.exemptions: unknown key \"" + k + "\" (known: " + list_of(kExemptionKeys) + ")");
  for (const char* key : {"annotations", "requireReason"})
    if (const json* b = member(x, key)) {
      if (!b->is_boolean()) val.error(pointer_join(xptr, key), std::string("webhook.exemptions.") + key + ": expected true or false, got " + brief(*b));
      else (std::string_view(key) == "annotations" ? out.annotations : out.require_reason) = b->get<bool>();
    }
  const json* allow = member(x, "allow");
  if (!allow) return;
  const std::string aptr = pointer_join(xptr, "allow");
  if (!allow->is_array()) {
    val.error(aptr, "webhook.exemptions.allow: expected a list of {namespaces, rules, users, groups}, got " + type_name(*allow));
    return;
  }
  for (size_t i = 0; i < allow->size(); ++i) {
    const json& e = (*allow)[i];
    const std::string eptr = pointer_join(aptr, i);
    const std::string label = "webhook.exemptions.allow[" + std::to_string(i) + "]";
    if (!e.is_object()) {
      val.error(eptr, label + ": expected a mapping, got " + type_name(e));
      continue;
    }
    ExemptionAllow a;
    a.where = val.where(eptr);
    for (const auto& [k, v] : e.items())
      if (!known(k, kAllowKeys))
        val.error(pointer_join(eptr, k), std::string(label).append(": unknown key \"").append(k).append("\" (known: ").append(list_of(kAllowKeys)).append(")"));
    if (const json* v = member(e, "namespaces")) a.namespaces = val.regex(*v, pointer_join(eptr, "namespaces"));
    // An empty list would read as "any" (as an absent key does) where it says "none": refused.
    for (const char* key : {"rules", "users", "groups"})
      if (const json* list = member(e, key); list && list->is_array() && list->empty())
        val.error(pointer_join(eptr, key), label + "." + key + ": an empty list; leave the key out to allow any");
    if (const json* rl = member(e, "rules")) {
      if (!rl->is_array()) val.error(pointer_join(eptr, "rules"), label + ".rules: expected a list of rule ids, got " + type_name(*rl));
      else
        for (size_t j = 0; j < rl->size(); ++j) {
          const json& r = (*rl)[j];
          if (!r.is_string() || !registry.find(r.get<std::string>()))
            val.error(pointer_join(pointer_join(eptr, "rules"), j),
                      label + ".rules[" + std::to_string(j) + "]: unknown rule " + brief(r) + " (see `gpuguard rules`)");
          else a.rules.push_back(r.get<std::string>());
        }
    }
    for (const char* key : {"users", "groups"}) {
      const json* list = member(e, key);
      if (!list) continue;
      const std::string lptr = pointer_join(eptr, key);
      if (!list->is_array()) {
        val.error(lptr, label + "." + key + ": expected a list of regular expressions, got " + type_name(*list));
        continue;
      }
      auto& into = std::string_view(key) == "users" ? a.users : a.groups;
      for (size_t j = 0; j < list->size(); ++j)
        if (auto re = val.regex((*list)[j], pointer_join(lptr, j))) into.push_back(std::move(re));
    }
    out.allow.push_back(std::move(a));
  }
}

void read_rules(const json& rules, const std::string& base, const std::string& label, const Registry& registry,
                Validator& val, std::map<std::string, RuleSettings, std::less<>>& into);

// A cluster's name: what `lint --cluster` takes.
bool valid_cluster_name(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.';
  });
}

// `clusters:` NAME → a list of paths, or {paths, complete, rules}; paths relative to the config's folder.
void read_clusters(const json& clusters, std::string_view file, const Registry& registry, Validator& val, Config& config) {
  if (!clusters.is_object()) {
    val.error("/clusters", "clusters: expected a mapping of cluster names to lists of paths, got " + type_name(clusters));
    return;
  }
  const std::filesystem::path folder = std::filesystem::path(file).parent_path();
  for (const auto& [name, c] : clusters.items()) {
    const std::string cptr = pointer_join("/clusters", name);
    const std::string label = "clusters." + name;
    if (!valid_cluster_name(name)) {
      val.error(cptr, "clusters: \"" + name + "\" is not a cluster name (letters, digits, '-', '_' and '.', at most 63)");
      continue;
    }
    ClusterScope scope;
    scope.name = name;
    scope.where = val.where(cptr);
    const json* paths = &c;
    std::string pptr = cptr;
    if (c.is_object()) {
      for (const auto& [k, v] : c.items())
        if (!known(k, kClusterKeys))
          val.error(pointer_join(cptr, k), std::string(label).append(": unknown key \"").append(k).append("\" (known: ").append(list_of(kClusterKeys)).append(")"));
      paths = member(c, "paths");
      pptr = pointer_join(cptr, "paths");
      if (!paths) {
        val.error(cptr, label + ": no paths (a list of files and folders, relative to the config file)");
        continue;
      }
      if (const json* complete = member(c, "complete")) {
        if (!complete->is_boolean()) val.error(pointer_join(cptr, "complete"), label + ".complete: expected true or false, got " + brief(*complete));
        else scope.complete = complete->get<bool>();
      }
      if (const json* rules = member(c, "rules")) {
        auto own = config.rules;  // the config's, then the cluster's over them
        read_rules(*rules, pointer_join(cptr, "rules"), label + ".rules.", registry, val, own);
        scope.rules = std::move(own);
        if (rules->is_object())
          for (const auto& [id, v] : rules->items())
            if (registry.find(id)) scope.named.push_back(id);
      }
    } else if (!c.is_array()) {
      val.error(cptr, label + ": expected a list of paths or a mapping (paths, complete, rules), got " + type_name(c));
      continue;
    }
    if (!paths->is_array() || paths->empty()) {
      val.error(pptr, label + ": expected a non-empty list of paths, got " + (paths->is_array() ? std::string("an empty list") : type_name(*paths)));
      continue;
    }
    for (size_t i = 0; i < paths->size(); ++i) {
      const json& p = (*paths)[i];
      if (!p.is_string() || p.get_ref<const std::string&>().empty() || p.get_ref<const std::string&>().find('\0') != std::string::npos) {
        val.error(pointer_join(pptr, i), Validator::dotted(pointer_join(pptr, i)) + ": expected a path (a non-empty string), got " + brief(p));
        continue;
      }
      scope.paths.push_back(p.get<std::string>());
      scope.resolved.push_back((folder / p.get_ref<const std::string&>()).lexically_normal());
    }
    config.clusters.push_back(std::move(scope));
  }
}

// `rules:` (at `base`, "/rules" or "/clusters/NAME/rules"): settings over those in `into`. Messages
// name a rule as `label` and its id ("rules.gpu-limit-missing").
void read_rules(const json& rules, const std::string& base, const std::string& label, const Registry& registry,
                Validator& val, std::map<std::string, RuleSettings, std::less<>>& into) {
  if (!rules.is_object()) {
    val.error(base, label.substr(0, label.size() - 1) + ": expected a mapping of rule ids, got " + type_name(rules));
    return;
  }
  for (const auto& [id, rs] : rules.items()) {
    std::string rptr = pointer_join(base, id);
    const Rule* rule = registry.find(id);
    if (!rule) {
      val.error(rptr, "unknown rule \"" + id + "\" (see `gpuguard rules`)");
      continue;
    }
    RuleSettings& settings = into[id];
    if (rs.is_boolean()) {  // shorthand: `rule-id: false`
      settings.enabled = rs.get<bool>();
      continue;
    }
    if (!rs.is_object()) {
      val.error(rptr, label + id + ": expected a mapping (enabled, severity, mode, fix, params) or a boolean, got " + type_name(rs));
      continue;
    }
    for (const auto& [k, v] : rs.items()) {
      if (!known(k, kRuleKeys))
        val.error(pointer_join(rptr, k), std::string(label).append(id).append(": unknown key \"").append(k).append("\" (known: ").append(list_of(kRuleKeys)).append(")"));
    }
    if (const json* e = member(rs, "enabled")) {
      if (!e->is_boolean()) val.error(pointer_join(rptr, "enabled"), label + id + ".enabled: expected true or false, got " + brief(*e));
      else settings.enabled = e->get<bool>();
    }
    if (const json* s = member(rs, "severity")) {
      auto sev = s->is_string() ? parse_severity(s->get<std::string>()) : std::nullopt;
      if (!sev) val.error(pointer_join(rptr, "severity"), label + id + ".severity: expected error, warning or info, got " + brief(*s));
      else settings.severity = *sev;
    }
    if (const json* m = member(rs, "mode")) {
      auto mode = m->is_string() ? parse_mode(m->get<std::string>()) : std::nullopt;
      if (!mode) val.error(pointer_join(rptr, "mode"), label + id + ".mode: expected enforce, warn or audit, got " + brief(*m));
      else settings.mode = *mode;
    }
    if (const json* f = member(rs, "fix")) {
      if (!f->is_boolean()) val.error(pointer_join(rptr, "fix"), label + id + ".fix: expected true or false, got " + brief(*f));
      else if (!rule->info().has_fix) val.error(pointer_join(rptr, "fix"), label + id + ".fix: the rule has no fix");
      else settings.fix = f->get<bool>();
    }
    if (const json* p = member(rs, "params")) {
      std::string pptr = pointer_join(rptr, "params");
      if (!p->is_object()) {
        val.error(pptr, label + id + ".params: expected a mapping, got " + type_name(*p));
        continue;
      }
      json values = settings.params.values();
      std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> regexes;
      bool params_ok = true;
      for (const auto& [pname, pv] : p->items()) {
        const ParamSpec* spec = nullptr;
        for (const auto& ps : rule->info().params)
          if (ps.name == pname) spec = &ps;
        if (!spec) {
          std::string names;
          for (const auto& ps : rule->info().params) names += (names.empty() ? "" : ", ") + ps.name;
          std::string message = label;
          message.append(id).append(".params: unknown parameter \"").append(pname).append("\"");
          if (names.empty()) message += " (the rule has no parameters)";
          else message.append(" (known: ").append(names).append(")");
          val.error(pointer_join(pptr, pname), message);
          params_ok = false;
          continue;
        }
        std::shared_ptr<const re2::RE2> re;
        auto checked = check_param(*spec, pv, pointer_join(pptr, pname), val, re);
        if (!checked) {
          params_ok = false;
          continue;
        }
        values[pname] = *checked;
        if (re) regexes.emplace_back(pname, re);
      }
      if (!params_ok) continue;
      // Keep the compiled defaults of regex parameters that were not overridden.
      for (const auto& ps : rule->info().params)
        if (ps.type == ParamType::regex && !member(*p, ps.name)) regexes.emplace_back(ps.name, settings.params.regex_ptr(ps.name));
      Params params(std::move(values), std::move(regexes));
      if (auto problem = rule->validate_params(params)) {
        val.error(pptr, label + id + ".params: " + *problem);
        continue;
      }
      settings.params = std::move(params);
    }
  }
}

}  // namespace

Config default_config(const Registry& registry) {
  Config c;
  for (const Rule* r : registry.rules()) c.rules.emplace(r->info().id, defaults_for(*r));
  apply_settings(c);
  return c;
}

Expected<Config, std::vector<Diagnostic>> load_config(std::string_view text, std::string_view file,
                                                           const Registry& registry) {
  std::vector<Diagnostic> diags;
  std::vector<YamlDocument> docs;
  load_yaml_stream(text, file, YamlLimits{}, [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags);
  if (!diags.empty()) return Unexpected(std::move(diags));
  if (docs.size() > 1) {
    diags.push_back({Severity::error, std::string(file), docs[1].start, "a config file holds one YAML document, this is the second"});
    return Unexpected(std::move(diags));
  }
  Config config = default_config(registry);
  config.source = file;
  if (docs.empty()) return config;

  const json root = docs[0].body();
  Validator val(file, docs[0].positions.get());
  if (!root.is_object()) {
    val.error("", "the config must be a mapping, got " + type_name(root));
    return Unexpected(val.take());
  }
  for (const auto& [key, v] : root.items()) {
    if (!known(key, kTopKeys) && key != "kubernetesVersion")
      val.error(pointer_join("", key), "unknown config key \"" + key + "\" (known: " + list_of(kTopKeys) + ", kubernetesVersion)");
  }

  if (const json* g = member(root, "gpuResources")) {
    if (!g->is_array()) val.error("/gpuResources", "gpuResources: expected a list of resource names, got " + type_name(*g));
    else
      for (size_t i = 0; i < g->size(); ++i) {
        const json& r = (*g)[i];
        if (!r.is_string() || !valid_resource_pattern(r.get<std::string>()))
          val.error(pointer_join("/gpuResources", i),
                    "gpuResources[" + std::to_string(i) + "]: expected a resource name such as amd.com/gpu or a prefix such as nvidia.com/mig-*, got " + brief(r));
        else config.extra_gpu_resources.push_back(r.get<std::string>());
      }
  }
  if (const json* g = member(root, "gpuDeviceClasses")) {
    if (!g->is_array()) val.error("/gpuDeviceClasses", "gpuDeviceClasses: expected a list of DeviceClass names, got " + type_name(*g));
    else
      for (size_t i = 0; i < g->size(); ++i) {
        const json& r = (*g)[i];
        if (!r.is_string() || !valid_device_class_pattern(r.get<std::string>()))
          val.error(pointer_join("/gpuDeviceClasses", i),
                    "gpuDeviceClasses[" + std::to_string(i) + "]: expected a DeviceClass name (a DNS subdomain) such as "
                    "gpu.example.com, or *.example.com for the names ending so, got " + brief(r));
        else config.extra_gpu_device_classes.push_back(r.get<std::string>());
      }
  }
  if (const json* ns = member(root, "defaultNamespace")) {
    if (!ns->is_string() || !is_dns1123_label(ns->get_ref<const std::string&>()))
      val.error("/defaultNamespace", "defaultNamespace: expected a namespace name (a DNS-1123 label: at most 63 lower-case letters, "
                                     "digits and '-', starting and ending with a letter or digit), got " + brief(*ns));
    else config.settings.default_namespace = ns->get<std::string>();
  }
  if (const json* kv = member(root, "kubernetesVersion")) {
    // "1.35", "v1.35" or "1.35.2": kept as "<major>.<minor>".
    std::string v = kv->is_string() ? kv->get<std::string>() : std::string();
    if (v.starts_with('v')) v.erase(0, 1);
    const size_t dot = v.find('.');
    const size_t dot2 = dot == std::string::npos ? std::string::npos : v.find('.', dot + 1);
    auto digits = [](std::string_view d) {
      return !d.empty() && d.size() <= 4 && std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    const std::string_view sv(v);
    if (dot == std::string::npos || !digits(sv.substr(0, dot)) ||
        !digits(sv.substr(dot + 1, dot2 == std::string::npos ? std::string::npos : dot2 - dot - 1)) ||
        (dot2 != std::string::npos && !digits(sv.substr(dot2 + 1))))
      val.error("/kubernetesVersion", "kubernetesVersion: expected a Kubernetes version such as \"1.35\" (a string: 1.30 unquoted "
                                      "is the number 1.3), got " + brief(*kv));
    else
      config.settings.kubernetes_version = v.substr(0, dot2);
  }

  if (const json* mig = member(root, "mig")) {
    if (!mig->is_object()) val.error("/mig", "mig: expected a mapping (gpus), got " + type_name(*mig));
    else {
      for (const auto& [k, v] : mig->items())
        if (k != "gpus") val.error(pointer_join("/mig", k), "mig: unknown key \"" + k + "\" (known: gpus)");
      if (const json* gpus = member(*mig, "gpus")) {
        std::vector<std::pair<std::string, std::string>> problems;
        auto parsed = parse_mig_gpus(*gpus, problems);
        for (const auto& [ptr, msg] : problems) val.error("/mig/gpus" + ptr, "mig.gpus" + Validator::dotted(ptr) + ": " + msg);
        for (auto& g : parsed) g.origin = std::string(file);
        config.settings.mig_gpus = std::make_shared<const std::vector<MigGpu>>(std::move(parsed));
      }
    }
  }

  if (const json* rules = member(root, "rules")) read_rules(*rules, "/rules", "rules.", registry, val, config.rules);

  if (const json* ex = member(root, "exclude")) {
    if (!ex->is_array()) val.error("/exclude", "exclude: expected a list of {namespace, kind, name, rules, reason}, got " + type_name(*ex));
    else
      for (size_t i = 0; i < ex->size(); ++i) {
        const json& e = (*ex)[i];
        std::string eptr = pointer_join("/exclude", i);
        std::string label = "exclude[" + std::to_string(i) + "]";
        if (!e.is_object()) {
          val.error(eptr, label + ": expected a mapping, got " + type_name(e));
          continue;
        }
        Exclusion x;
        x.where = val.where(eptr);
        for (const auto& [k, v] : e.items())
          if (!known(k, kExcludeKeys))
            val.error(pointer_join(eptr, k), std::string(label).append(": unknown key \"").append(k).append("\" (known: ").append(list_of(kExcludeKeys)).append(")"));
        if (const json* v = member(e, "namespace")) x.namespace_ = val.regex(*v, pointer_join(eptr, "namespace"));
        if (const json* v = member(e, "kind")) x.kind = val.regex(*v, pointer_join(eptr, "kind"));
        if (const json* v = member(e, "name")) x.name = val.regex(*v, pointer_join(eptr, "name"));
        if (!member(e, "namespace") && !member(e, "kind") && !member(e, "name"))
          val.error(eptr, label + ": needs at least one of namespace, kind, name");
        if (const json* v = member(e, "reason")) {
          if (!v->is_string()) val.error(pointer_join(eptr, "reason"), label + ".reason: expected a string");
          else x.reason = v->get<std::string>();
        }
        if (const json* rl = member(e, "rules")) {
          if (!rl->is_array()) val.error(pointer_join(eptr, "rules"), label + ".rules: expected a list of rule ids");
          else
            for (size_t j = 0; j < rl->size(); ++j) {
              const json& r = (*rl)[j];
              if (!r.is_string() || !registry.find(r.get<std::string>()))
                val.error(pointer_join(pointer_join(eptr, "rules"), j),
                          label + ".rules[" + std::to_string(j) + "]: unknown rule " + brief(r) + " (see `gpuguard rules`)");
              else x.rules.push_back(r.get<std::string>());
            }
        }
        config.exclude.push_back(std::move(x));
      }
  }

  if (const json* wh = member(root, "webhook")) {
    if (!wh->is_object()) val.error("/webhook", "webhook: expected a mapping (" + list_of(kWebhookKeys) + "), got " + type_name(*wh));
    else {
      for (const auto& [k, v] : wh->items())
        if (!known(k, kWebhookKeys))
          val.error(pointer_join("/webhook", k), "webhook: unknown key \"" + k + "\" (known: " + list_of(kWebhookKeys) + ")");
      if (const json* u = member(*wh, "onUpdate")) {
        if (u->is_string() && u->get<std::string>() == "new-findings-only") config.webhook.new_findings_only = true;
        else if (u->is_string() && u->get<std::string>() == "all") config.webhook.new_findings_only = false;
        else val.error("/webhook/onUpdate", "webhook.onUpdate: expected new-findings-only or all, got " + brief(*u));
      }
      if (const json* f = member(*wh, "failureMode")) {
        if (f->is_string() && f->get<std::string>() == "allow") config.webhook.fail_open = true;
        else if (f->is_string() && f->get<std::string>() == "deny") config.webhook.fail_open = false;
        else val.error("/webhook/failureMode", "webhook.failureMode: expected allow or deny, got " + brief(*f));
      }
      if (const json* m = member(*wh, "mutate")) {
        if (!m->is_object()) val.error("/webhook/mutate", "webhook.mutate: expected a mapping (pods, templates), got " + type_name(*m));
        else
          for (const auto& [k, v] : m->items()) {
            std::string ptr = pointer_join("/webhook/mutate", k);
            if (!known(k, kMutateKeys)) {
              val.error(ptr, "webhook.mutate: unknown key \"" + k + "\" (known: " + list_of(kMutateKeys) + ")");
            } else if (!v.is_boolean()) {
              val.error(ptr, "webhook.mutate." + k + ": expected true or false, got " + brief(v));
            } else if (k == "pods") {
              config.webhook.mutate_pods = v.get<bool>();
            } else {
              config.webhook.mutate_templates = v.get<bool>();
            }
          }
      }
      if (const json* x = member(*wh, "exemptions")) read_exemptions(*x, registry, val, config.webhook.exemptions);
    }
  }

  if (const json* one = member(root, "oneInventory")) {
    if (!one->is_boolean()) val.error("/oneInventory", "oneInventory: expected true or false, got " + brief(*one));
    else config.one_inventory = one->get<bool>();
  }
  if (const json* clusters = member(root, "clusters")) read_clusters(*clusters, file, registry, val, config);

  if (!val.ok()) return Unexpected(val.take());
  apply_settings(config);
  return config;
}

Expected<Config, std::vector<Diagnostic>> load_config_file(const std::filesystem::path& path,
                                                                const Registry& registry) {
  auto fail = [&](std::string why) { return Unexpected(std::vector<Diagnostic>{{Severity::error, path.string(), {}, std::move(why)}}); };
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return fail("cannot read the config file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read the config file");
  // At most 1 MiB and one byte, whatever the file is (/dev/zero, a sparse file of gigabytes).
  constexpr size_t kMax = size_t{1} << 20;
  std::string text(kMax + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad()) return fail("cannot read the config file");
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMax) return fail("config file is over 1 MiB");
  return load_config(text, path.string(), registry);
}

std::optional<std::filesystem::path> find_config_upward(const std::filesystem::path& start) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(start, ec);
  if (ec) return std::nullopt;
  for (;;) {
    for (const char* name : {".gpuguard.yaml", ".gpuguard.yml"}) {
      auto candidate = dir / name;
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate;
    }
    if (!dir.has_parent_path() || dir.parent_path() == dir) return std::nullopt;
    dir = dir.parent_path();
  }
}

namespace {

void emit_json(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (const auto& [k, x] : v.items()) {
        emit_yaml_key(out, k);  // a key such as "yes" or "010" read back as itself
        out << YAML::Value;
        emit_json(out, x);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      out << YAML::Flow << YAML::BeginSeq;
      for (const auto& x : v) emit_json(out, x);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: emit_yaml_string(out, v.get_ref<const std::string&>(), true); break;
    case json::value_t::boolean: out << v.get<bool>(); break;
    case json::value_t::number_integer: out << v.get<int64_t>(); break;
    case json::value_t::number_unsigned: out << v.get<uint64_t>(); break;
    case json::value_t::number_float: out << go_json_number(v); break;
    default: out << YAML::Null; break;
  }
}

}  // namespace

std::string print_config(const Config& config, const Registry& registry) {
  YAML::Emitter out;
  out << YAML::Comment("effective gpuguard configuration" +
                       (config.source.empty() ? std::string(" (built-in defaults)") : " from " + config.source));
  out << YAML::BeginMap;
  out << YAML::Key << "gpuResources" << YAML::Value << YAML::BeginSeq;
  for (const auto& p : config.settings.gpu_resources.patterns()) emit_yaml_string(out, p, true);
  out << YAML::EndSeq;
  out << YAML::Key << "gpuDeviceClasses" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : config.settings.gpu_device_classes) emit_yaml_string(out, c, true);
  out << YAML::EndSeq;
  out << YAML::Key << "defaultNamespace" << YAML::Value;
  emit_yaml_string(out, config.settings.default_namespace);
  out << YAML::Key << "kubernetesVersion" << YAML::Value;
  emit_yaml_string(out, config.settings.kubernetes_version, true);
  if (config.settings.mig_gpus && !config.settings.mig_gpus->empty()) {
    json gpus = json::array();
    for (const auto& g : *config.settings.mig_gpus) gpus.push_back(to_json(g));
    out << YAML::Key << "mig" << YAML::Value << YAML::BeginMap << YAML::Key << "gpus" << YAML::Value;
    emit_json(out, gpus);
    out << YAML::EndMap;
  }
  out << YAML::Key << "rules" << YAML::Value << YAML::BeginMap;
  for (const Rule* r : registry.rules()) {
    const RuleSettings& s = config.rule(r->info().id);
    out << YAML::Key << r->info().id << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "enabled" << YAML::Value << s.enabled;
    out << YAML::Key << "severity" << YAML::Value << std::string(to_string(s.severity));
    out << YAML::Key << "mode" << YAML::Value << std::string(to_string(s.mode));
    if (r->info().has_fix) out << YAML::Key << "fix" << YAML::Value << s.fix;
    if (!r->info().params.empty()) {
      out << YAML::Key << "params" << YAML::Value;
      emit_json(out, s.params.values());
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "exclude" << YAML::Value << YAML::BeginSeq;
  for (const auto& x : config.exclude) {
    out << YAML::BeginMap;
    if (x.namespace_) {
      out << YAML::Key << "namespace" << YAML::Value;
      emit_yaml_string(out, x.namespace_->pattern(), true);
    }
    if (x.kind) {
      out << YAML::Key << "kind" << YAML::Value;
      emit_yaml_string(out, x.kind->pattern(), true);
    }
    if (x.name) {
      out << YAML::Key << "name" << YAML::Value;
      emit_yaml_string(out, x.name->pattern(), true);
    }
    if (!x.rules.empty()) {
      out << YAML::Key << "rules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& r : x.rules) out << r;
      out << YAML::EndSeq;
    }
    if (!x.reason.empty()) {
      out << YAML::Key << "reason" << YAML::Value;
      emit_yaml_string(out, x.reason, true);
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "webhook" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "onUpdate" << YAML::Value << (config.webhook.new_findings_only ? "new-findings-only" : "all");
  out << YAML::Key << "failureMode" << YAML::Value << (config.webhook.fail_open ? "allow" : "deny");
  out << YAML::Key << "mutate" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "pods" << YAML::Value << config.webhook.mutate_pods;
  out << YAML::Key << "templates" << YAML::Value << config.webhook.mutate_templates;
  out << YAML::EndMap;
  const ExemptionSettings& ex = config.webhook.exemptions;
  out << YAML::Key << "exemptions" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "annotations" << YAML::Value << ex.annotations;
  out << YAML::Key << "requireReason" << YAML::Value << ex.require_reason;
  out << YAML::Key << "allow" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : ex.allow) {
    out << YAML::BeginMap;
    if (a.namespaces) {
      out << YAML::Key << "namespaces" << YAML::Value;
      emit_yaml_string(out, a.namespaces->pattern(), true);
    }
    if (!a.rules.empty()) {
      out << YAML::Key << "rules" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& r : a.rules) out << r;
      out << YAML::EndSeq;
    }
    for (const auto* list : {&a.users, &a.groups}) {
      if (list->empty()) continue;
      out << YAML::Key << (list == &a.users ? "users" : "groups") << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& re : *list) emit_yaml_string(out, re->pattern(), true);
      out << YAML::EndSeq;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  out << YAML::EndMap;
  out << YAML::Key << "oneInventory" << YAML::Value << config.one_inventory;
  if (!config.clusters.empty()) {
    out << YAML::Key << "clusters" << YAML::Value << YAML::BeginMap;
    for (const auto& c : config.clusters) {
      out << YAML::Key << c.name << YAML::Value << YAML::BeginMap;
      out << YAML::Key << "paths" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& p : c.paths) emit_yaml_string(out, p);
      out << YAML::EndSeq;
      out << YAML::Key << "complete" << YAML::Value << c.complete;
      if (c.rules && !c.named.empty()) {
        // The rules the cluster's `rules:` names, with their settings there.
        out << YAML::Key << "rules" << YAML::Value << YAML::BeginMap;
        for (const Rule* r : registry.rules()) {
          const std::string& id = r->info().id;
          auto own = c.rules->find(id);
          if (own == c.rules->end() || std::find(c.named.begin(), c.named.end(), id) == c.named.end()) continue;
          const RuleSettings& s = own->second;
          out << YAML::Key << id << YAML::Value << YAML::BeginMap;
          out << YAML::Key << "enabled" << YAML::Value << s.enabled;
          out << YAML::Key << "severity" << YAML::Value << std::string(to_string(s.severity));
          out << YAML::Key << "mode" << YAML::Value << std::string(to_string(s.mode));
          if (r->info().has_fix) out << YAML::Key << "fix" << YAML::Value << s.fix;
          if (!r->info().params.empty()) {
            out << YAML::Key << "params" << YAML::Value;
            emit_json(out, s.params.values());
          }
          out << YAML::EndMap;
        }
        out << YAML::EndMap;
      }
      out << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

// `mig.gpus`: MIG GPU models added to the built-in catalog (the format of rules/data/mig-gpus.yaml).
json mig_schema() {
  json profile = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"name", "compute", "memory", "starts", "max"}},
      {"properties",
       {{"name", {{"type", "string"}, {"description", "profile name, e.g. 1g.10gb or 1g.10gb+me"}}},
        {"compute", {{"type", "integer"}, {"minimum", 1}, {"maximum", 32}, {"description", "compute slices"}}},
        {"memory", {{"type", "integer"}, {"minimum", 1}, {"maximum", 32}, {"description", "memory slices"}}},
        {"starts", {{"type", "array"}, {"minItems", 1}, {"items", {{"type", "integer"}, {"minimum", 0}}}, {"description", "allowed start offsets, in memory slices"}}},
        {"max", {{"type", "integer"}, {"minimum", 1}, {"maximum", 32}, {"description", "most instances per GPU"}}},
        {"inferred", {{"type", "boolean"}, {"description", "the data is an inference, not observed"}}}}},
  };
  json gpu = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"name", "profiles"}},
      {"properties",
       {{"name", {{"type", "string"}, {"minLength", 1}}},
        {"deviceIDs", {{"type", "array"}, {"items", {{"type", "string"}, {"pattern", "^0[xX][0-9A-Fa-f]{8}$"}}}, {"description", "PCI IDs as mig-parted's device-filter writes them (0x233010DE)"}}},
        {"products", {{"type", "array"}, {"items", {{"type", "string"}}}, {"description", "GFD nvidia.com/gpu.product values"}}},
        {"computeSlices", {{"type", "integer"}, {"minimum", 1}, {"maximum", 32}, {"default", 7}}},
        {"memorySlices", {{"type", "integer"}, {"minimum", 1}, {"maximum", 32}, {"default", 8}}},
        {"inferred", {{"type", "boolean"}}},
        {"note", {{"type", "string"}}},
        {"profiles", {{"type", "array"}, {"minItems", 1}, {"items", profile}}}}},
  };
  return {{"type", "object"},
          {"additionalProperties", false},
          {"description", "MIG data the rules use beyond the built-in catalog"},
          {"properties", {{"gpus", {{"type", "array"}, {"items", gpu}, {"description", "GPU models added to the built-in MIG catalog (looked up first)"}}}}}};
}

// webhook.exemptions.
json exemptions_schema(const json& rule_ids) {
  json regex_list = {{"type", "array"}, {"minItems", 1}, {"items", {{"type", "string"}, {"format", "regex"}}}};
  json users = regex_list;
  users["description"] = "RE2, full match on request.userInfo.username (a Pod made by a controller is sent by the controller's "
                         "service account); with groups: either matches; absent: anyone";
  json groups = regex_list;
  groups["description"] = "RE2, full match on any of request.userInfo.groups; with users: either matches; absent: any";
  json entry = {
      {"type", "object"},
      {"additionalProperties", false},
      {"properties",
       {{"namespaces",
         {{"type", "string"},
          {"format", "regex"},
          {"description", "RE2, full match on the object's namespace (\"\" for cluster-scoped objects); absent: any namespace"}}},
        {"rules",
         {{"type", "array"},
          {"minItems", 1},
          {"items", {{"enum", rule_ids}}},
          {"description", "the rules an annotation may exempt here (its \"*\" means these); absent: any rule"}}},
        {"users", users},
        {"groups", groups}}},
  };
  return {{"type", "object"},
          {"additionalProperties", false},
          {"description", "Whether gpuguard.io/ignore annotations on the admitted object exempt its findings at admission "
                          "(the linter honours them unless given --no-annotation-exemptions)"},
          {"properties",
           {{"annotations",
             {{"type", "boolean"},
              {"default", false},
              {"description", "whether annotations exempt at all; when not, the findings are reported with a note that the "
                              "annotation is not honoured"}}},
            {"requireReason",
             {{"type", "boolean"},
              {"default", true},
              {"description", "an annotation without a non-empty gpuguard.io/ignore-reason exempts nothing"}}},
            {"allow",
             {{"type", "array"},
              {"items", entry},
              {"description", "an annotation exempts a finding only where an entry allows it (every field given matches); "
                              "no entries: anywhere, any rule, anyone"}}}}}};
}

// `clusters:`.
json clusters_schema() {
  json paths = {{"type", "array"},
                {"minItems", 1},
                {"items", {{"type", "string"}, {"minLength", 1}}},
                {"description", "files and folders of the cluster, relative to the config file's folder"}};
  json entry = {
      {"type", "object"},
      {"additionalProperties", false},
      {"required", {"paths"}},
      {"properties",
       {{"paths", paths},
        {"complete",
         {{"type", "boolean"},
          {"default", false},
          {"description", "the paths hold the whole cluster: rules that report missing objects speak (as --complete)"}}},
        {"rules",
         {{"allOf", {{{"$ref", "#/properties/rules"}}}},
          {"description", "rule settings of this cluster, over the config's rules (as the config's rules)"}}}}},
  };
  return {{"type", "object"},
          {"propertyNames", {{"pattern", "^[A-Za-z0-9._-]{1,63}$"}}},
          {"additionalProperties", {{"oneOf", {paths, entry}}}},
          {"description", "gpuguard lint's inventory scopes: cluster name → its paths (or {paths, complete, rules}). The "
                          "objects of a cluster are one inventory, apart from every other cluster's and from paths in no "
                          "cluster; `gpuguard lint --cluster NAME` lints one"}};
}

}  // namespace

json config_schema(const Registry& registry) {
  json rule_props = json::object();
  for (const Rule* r : registry.rules()) {
    const RuleInfo& info = r->info();
    json params = json::object();
    for (const auto& p : info.params) {
      json s;
      switch (p.type) {
        case ParamType::integer:
          s = {{"type", "integer"}};
          if (p.min) s["minimum"] = *p.min;
          if (p.max) s["maximum"] = *p.max;
          break;
        case ParamType::boolean: s = {{"type", "boolean"}}; break;
        case ParamType::string: s = {{"type", "string"}}; break;
        case ParamType::regex: s = {{"type", "string"}, {"format", "regex"}}; break;
        case ParamType::string_list: s = {{"type", "array"}, {"items", {{"type", "string"}}}}; break;
        case ParamType::string_map: s = {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}; break;
      }
      s["description"] = p.description;
      s["default"] = p.default_value;
      params[p.name] = s;
    }
    json settings = {
        {"type", "object"},
        {"additionalProperties", false},
        {"properties",
         {{"enabled", {{"type", "boolean"}, {"default", true}}},
          {"severity", {{"enum", {"error", "warning", "info"}}, {"default", std::string(to_string(info.severity))}}},
          {"mode",
           {{"enum", {"enforce", "warn", "audit"}},
            {"default", "enforce"},
            {"description", "webhook: enforce (errors deny, the fix is applied), warn (errors become warnings), audit (log and "
                            "count only); in warn and audit the rule changes nothing"}}},
          {"params", {{"type", "object"}, {"additionalProperties", false}, {"properties", params}}}}},
    };
    if (info.has_fix)
      settings["properties"]["fix"] = {
          {"type", "boolean"},
          {"default", true},
          {"description", "whether /mutate and gpuguard mutate apply the rule's fix (only ever in enforce mode)"}};
    rule_props[info.id] = {{"description", info.summary}, {"oneOf", {{{"type", "boolean"}}, settings}}};
  }
  std::string defaults;
  for (const auto& d : default_gpu_resources()) defaults += (defaults.empty() ? "" : ", ") + d;
  std::string default_classes;
  for (const auto& d : default_gpu_device_classes()) default_classes += (default_classes.empty() ? "" : ", ") + d;
  json rule_ids = json::array();
  for (const Rule* r : registry.rules()) rule_ids.push_back(r->info().id);

  json exclusion = json::object();
  exclusion["type"] = "object";
  exclusion["additionalProperties"] = false;
  exclusion["anyOf"] = json::array({json{{"required", {"namespace"}}}, json{{"required", {"kind"}}}, json{{"required", {"name"}}}});
  exclusion["properties"] = {
      {"namespace", {{"type", "string"}, {"format", "regex"}, {"description", "RE2, full match on the namespace"}}},
      {"kind", {{"type", "string"}, {"format", "regex"}, {"description", "RE2, full match on the kind"}}},
      {"name", {{"type", "string"}, {"format", "regex"}, {"description", "RE2, full match on metadata.name"}}},
      {"rules", {{"type", "array"}, {"items", {{"enum", rule_ids}}}, {"description", "only these rules (default: all)"}}},
      {"reason", {{"type", "string"}, {"description", "why; shown with the suppressed findings"}}},
  };

  std::string kubernetes_version_doc;
  kubernetes_version_doc.reserve(200);
  kubernetes_version_doc.append("The cluster's Kubernetes version (\"1.35\"), for rules whose answer depends on its default feature "
                                "gates (DRAExtendedResource: beta from 1.36); default ");
  kubernetes_version_doc.append(kDefaultKubernetesVersion).append(", the newest release the rules' facts cover");

  json schema = json::object();
  schema["$schema"] = "http://json-schema.org/draft-07/schema#";
  schema["$id"] = "https://gpuguard.io/schemas/config.schema.json";
  schema["title"] = "gpuguard configuration (.gpuguard.yaml)";
  schema["type"] = "object";
  schema["additionalProperties"] = false;
  schema["properties"] = {
      {"gpuResources",
       {{"description", "Extra resource names that count as GPUs, added to " + defaults + "; a trailing * matches a prefix"},
        {"type", "array"},
        {"items", {{"type", "string"}, {"pattern", "^[A-Za-z0-9._/-]+\\*?$"}}}}},
      {"gpuDeviceClasses",
       {{"description", "Extra DRA DeviceClasses whose requests are GPUs, added to " + default_classes +
                            " (and to every DeviceClass whose selectors require device.driver == 'gpu.nvidia.com'); *.suffix "
                            "matches the names ending in .suffix"},
        {"type", "array"},
        {"items", {{"type", "string"}, {"pattern", "^(\\*\\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"}, {"maxLength", 255}}}}},
      {"defaultNamespace",
       {{"description", "Namespace of objects that do not name one (like kubectl's -n): a DNS-1123 label"},
        {"type", "string"},
        {"minLength", 1},
        {"maxLength", 63},
        {"pattern", "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"}}},
      {"kubernetesVersion",
       {{"description", kubernetes_version_doc},
        {"type", "string"},
        {"pattern", "^v?[0-9]{1,4}\\.[0-9]{1,4}(\\.[0-9]{1,4})?$"}}},
      {"mig", mig_schema()},
      {"rules", {{"type", "object"}, {"additionalProperties", false}, {"properties", rule_props}}},
      {"exclude", {{"type", "array"}, {"items", exclusion}}},
      {"webhook",
       {{"type", "object"},
        {"additionalProperties", false},
        {"description", "How gpuguard serve answers admission requests"},
        {"properties",
         {{"onUpdate",
           {{"enum", {"new-findings-only", "all"}},
            {"default", "new-findings-only"},
            {"description", "on UPDATE, report only findings the old object did not have, or all"}}},
          {"failureMode",
           {{"enum", {"allow", "deny"}}, {"default", "allow"}, {"description", "the answer when a rule fails internally"}}},
          {"mutate",
           {{"type", "object"},
            {"additionalProperties", false},
            {"properties",
             {{"pods", {{"type", "boolean"}, {"default", true}, {"description", "apply fixes to Pods"}}},
              {"templates",
               {{"type", "boolean"},
                {"default", false},
                {"description", "also to controllers' pod templates (GitOps tools would see drift)"}}}}}}},
          {"exemptions", exemptions_schema(rule_ids)}}}}},
      {"oneInventory",
       {{"type", "boolean"},
        {"default", false},
        {"description", "gpuguard lint: the paths given on the command line (under this config, in no cluster) are one "
                        "inventory; by default each is its own, so objects of one never satisfy or trigger cross-object "
                        "rules for another"}}},
      {"clusters", clusters_schema()},
  };
  return schema;
}

}  // namespace gpuguard::engine
