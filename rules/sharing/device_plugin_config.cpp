#include "rules/sharing/device_plugin_config.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <utility>

#include "engine/positions.h"
#include "engine/yaml_load.h"

namespace gpuguard::rules::sharing {

using engine::Node;

namespace {

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The entry whose key matches `key` case-insensitively and comes first in key order (the order
// the config's Go map had; the document has them as written), or none.
engine::NodeEntry first_iequal(Node j, std::string_view key) {
  engine::NodeEntry found{};
  for (const auto entry : j.items())
    if (iequals(entry.key, key) && (!found.value || entry.key < found.key)) found = entry;
  return found;
}

// Go's encoding/json: an exact key match wins, else the first case-insensitive one.
Node go_member(Node j, std::string_view key) {
  if (Node exact = engine::member(j, key)) return exact;
  return first_iequal(j, key).value;
}

// A string that might hold a device-plugin config: cheap test before parsing.
bool worth_parsing(std::string_view s) {
  return s.find("sharing") != std::string_view::npos || s.find("flags") != std::string_view::npos;
}

// The first document of the text (none when it does not load).
std::shared_ptr<const engine::PositionIndex> parse(std::string_view text) {
  std::shared_ptr<const engine::PositionIndex> out;
  std::vector<engine::Diagnostic> diags;
  engine::load_yaml_stream(text, "<embedded>", engine::YamlLimits{}, [&](engine::YamlDocument&& d) {
    if (!out) out = std::move(d.positions);
  }, diags);
  return out;
}

void from_map(Node map, std::string_view base, std::vector<DevicePluginConfig>& out) {
  if (!map.is_object()) return;
  const size_t first = out.size();
  for (const auto [key, value] : map.items()) {
    if (!value.is_string()) continue;
    const std::string_view text = value.str();
    if (!worth_parsing(text)) continue;
    auto parsed = parse(text);
    if (!parsed) continue;
    const Node config(parsed.get(), parsed->root());
    if (!looks_like_device_plugin_config(config)) continue;
    out.push_back({engine::pointer_join(base, key), std::string(key), std::move(parsed), config});
  }
  // In key order, as the object's JSON had them (the document has them as written).
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(first), out.end(),
            [](const DevicePluginConfig& a, const DevicePluginConfig& b) { return a.key < b.key; });
}

}  // namespace

bool looks_like_device_plugin_config(Node j) {
  if (!j.is_object()) return false;
  if (Node v = engine::member(j, "version"); v && !v.is_string()) return false;
  if (engine::member(j, "mig-configs")) return false;  // a mig-parted config
  return engine::member(j, "sharing") || engine::member(j, "flags");
}

std::vector<DevicePluginConfig> device_plugin_configs(const engine::Object& obj) {
  std::vector<DevicePluginConfig> out;
  if (obj.is("", "ConfigMap")) {
    from_map(engine::member(obj.root(), "data"), "/data", out);
    return out;
  }
  if (obj.is_kubernetes_object()) return out;
  // Not a Kubernetes object: a standalone config file, or Helm values embedding configs.
  const Node root = obj.root();
  if (looks_like_device_plugin_config(root)) {
    out.push_back({"", "", nullptr, root});
    return out;
  }
  from_map(engine::path(root, {"config", "map"}), "/config/map", out);
  from_map(engine::path(root, {"devicePlugin", "config", "data"}), "/devicePlugin/config/data", out);
  return out;
}

Node sharing_section(Node config, std::string_view name) {
  const Node s = go_member(go_member(config, "sharing"), name);
  return s.is_null() ? Node() : s;
}

std::string sharing_strategy(Node config) {
  auto replicated = [](Node section) {
    const Node resources = engine::member(section, "resources");
    return resources.is_array() && std::any_of(resources.begin(), resources.end(), [](Node r) {
      auto n = engine::int_at(r, "replicas");
      return n && *n > 1;
    });
  };
  if (replicated(sharing_section(config, "mps"))) return "mps";
  if (replicated(sharing_section(config, "timeSlicing"))) return "time-slicing";
  return "none";
}

namespace {

using namespace engine;

// The section of sharing (timeSlicing or mps): fields are looked up by exact name in the plugin's
// UnmarshalJSON (a map[string]json.RawMessage), so a misspelt or differently cased key is ignored.
void check_section(Node section, const std::string& base, bool mps, const std::string& mig_strategy,
                   std::vector<ConfigProblem>& out) {
  const std::string name = mps ? "mps" : "timeSlicing";
  if (!section.is_object()) {
    out.push_back({base, "sharing." + name + " must be a mapping; the device plugin fails to parse the config and does not start"});
    return;
  }
  static const char* const kKnown[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources"};
  for (const auto& [key, value] : section.items()) {
    const std::string_view k = key;
    if (std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* f) { return k == f; })) continue;
    std::string hint;
    for (const char* f : kKnown)
      if (iequals(k, f)) hint = " (the field is `" + std::string(f) + "`, case-sensitive)";
    std::string message = "unknown field `";
    message.append(k).append("` in sharing.").append(name).append(hint);
    message += ": the device plugin ignores it without a word, so it has no effect";
    out.push_back({pointer_join(base, k), std::move(message), true});
  }
  for (const char* flag : {"renameByDefault", "failRequestsGreaterThanOne"}) {
    const Node v = member(section, flag);
    if (v && !v->is_boolean() && !v->is_null())
      out.push_back({pointer_join(base, flag), "sharing." + name + "." + flag + " must be true or false, not " + brief(*v) +
                                                   ": the device plugin fails to parse the config and does not start"});
  }
  const Node resources = member(section, "resources");
  if (!resources || resources->is_null() || (resources->is_array() && resources->empty())) {
    out.push_back({resources ? pointer_join(base, "resources") : base,
                   "sharing." + name + " has no resources: the device plugin refuses the config (\"no resources specified\") and does not start"});
    return;
  }
  if (!resources->is_array()) {
    out.push_back({pointer_join(base, "resources"), "sharing." + name + ".resources must be a list: the device plugin fails to parse the config"});
    return;
  }
  size_t next = 0;
  for (const auto& r : *resources) {
    const size_t i = next++;
    const std::string rp = pointer_join(pointer_join(base, "resources"), i);
    const std::string where = "sharing." + name + ".resources[" + std::to_string(i) + "]";
    if (!r.is_object()) {
      out.push_back({rp, where + " must be a mapping with name and replicas: the device plugin fails to parse the config"});
      continue;
    }
    auto rname = string_at(r, "name");
    if (!member(r, "name"))
      out.push_back({rp, where + " has no name: the device plugin refuses the config (\"no resource name specified\")"});
    else if (!rname)
      out.push_back({pointer_join(rp, "name"), where + ".name must be a string: the device plugin fails to parse the config"});
    const Node replicas = member(r, "replicas");
    if (!replicas) {
      out.push_back({rp, where + " has no replicas: the device plugin refuses the config (\"no replicas specified\")"});
    } else if (auto n = as_int(*replicas); !n) {
      out.push_back({pointer_join(rp, "replicas"), where + ".replicas must be an integer, not " + brief(*replicas) +
                                                       ": the device plugin fails to parse the config"});
    } else if (*n < 2) {
      out.push_back({pointer_join(rp, "replicas"), where + ".replicas is " + std::to_string(*n) +
                                                       ": the device plugin refuses the config (\"number of replicas must be >= 2\") and does not start; "
                                                       "use 2 or more, or remove the resource to stop sharing it"});
    }
    if (mps && rname) {
      std::string_view res = *rname;
      if (res.starts_with("nvidia.com/")) res.remove_prefix(11);
      if (res.starts_with("mig-"))
        out.push_back({pointer_join(rp, "name"), where + " shares MIG resource " + std::string(*rname) +
                                                     " with MPS: the device plugin refuses it (\"sharing using MPS is not supported for MIG devices\"); "
                                                     "MPS works only with full GPUs (nvidia.com/gpu)"});
    }
  }
  if (mps && mig_strategy == "mixed")
    out.push_back({base, "MPS sharing with flags.migStrategy: mixed: the device plugin exits with \"using --mig-strategy=mixed is not supported with MPS\" "
                         "(unless a --mig-strategy flag or MIG_STRATEGY variable overrides the config); use migStrategy none, or time-slicing"});
}

}  // namespace

std::vector<ConfigProblem> validate_device_plugin_config(Node config) {
  std::vector<ConfigProblem> out;
  if (auto version = string_at(config, "version"); version && *version != "v1" && !version->empty())
    out.push_back({"/version", "version " + brief(*member(config, "version")) +
                                   ": the device plugin refuses the config (\"unknown version\"); the only version is v1"});
  std::string mig_strategy;
  if (const Node flags = member(config, "flags"))
    if (auto s = string_at(*flags, "migStrategy")) mig_strategy = *s;
  // The first key in key order that is `sharing` in any case.
  const auto [sharing_key, sharing] = first_iequal(config, "sharing");
  if (!sharing || sharing->is_null()) return out;
  const std::string base = "/" + pointer_escape(sharing_key);
  if (!sharing->is_object()) {
    out.push_back({base, "sharing must be a mapping (timeSlicing or mps): the device plugin fails to parse the config"});
    return out;
  }
  for (const auto& [k, v] : sharing->items()) {
    const bool ts = iequals(k, "timeSlicing");
    const bool mps = iequals(k, "mps");
    if (!ts && !mps) {
      out.push_back({pointer_join(base, k), "unknown field `" + std::string(k) + "` in sharing (known: timeSlicing, mps): the device plugin "
                                                "ignores it without a word, so it shares nothing by it", true});
      continue;
    }
    if (v.is_null()) continue;
    check_section(v, pointer_join(base, k), mps, mig_strategy, out);
  }
  return out;
}

}  // namespace gpuguard::rules::sharing
