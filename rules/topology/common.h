#pragma once
// Helpers the topology rules share: node and pod constraints of a pod spec, and the JSON Patch
// operations that add one.

#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/node.h"
#include "engine/podspec.h"

namespace gpuguard::rules::topology {

inline constexpr std::string_view kZoneLabel = "topology.kubernetes.io/zone";
inline constexpr std::string_view kRequired = "requiredDuringSchedulingIgnoredDuringExecution";
inline constexpr std::string_view kPreferred = "preferredDuringSchedulingIgnoredDuringExecution";
inline constexpr std::string_view kKueueRequiredTopology = "kueue.x-k8s.io/podset-required-topology";
inline constexpr std::string_view kKueuePreferredTopology = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr std::string_view kKueueSliceRequiredTopology = "kueue.x-k8s.io/podset-slice-required-topology";
inline constexpr std::string_view kKueueUnconstrainedTopology = "kueue.x-k8s.io/podset-unconstrained-topology";
inline constexpr std::string_view kJobSetExclusiveTopology = "alpha.jobset.sigs.k8s.io/exclusive-topology";
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";

// Shell-style match where `*` stands for any run of characters (`*/sriov*`, `rdma/*`).
[[nodiscard]] inline bool glob_match(std::string_view pattern, std::string_view text) {
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

[[nodiscard]] inline bool glob_any(const std::vector<std::string>& patterns, std::string_view text) {
  for (const auto& p : patterns)
    if (glob_match(p, text)) return true;
  return false;
}

// spec.affinity.<which> (nodeAffinity, podAffinity, podAntiAffinity); absent when there is none.
[[nodiscard]] inline engine::Node affinity_of(engine::Node spec, std::string_view which) {
  return engine::member(engine::member(spec, "affinity"), which);
}

// The required node-selector terms (ORed); absent when there are none.
[[nodiscard]] inline engine::Node required_node_terms(engine::Node spec) {
  const engine::Node terms = engine::path(affinity_of(spec, "nodeAffinity"), {kRequired, "nodeSelectorTerms"});
  return terms.is_array() && !terms.empty() ? terms : engine::Node();
}

// The matchExpressions of a node-selector term (or of a preferred term's `preference`).
[[nodiscard]] inline std::vector<engine::Node> match_expressions(engine::Node term) {
  std::vector<engine::Node> out;
  const engine::Node exprs = engine::member(term, "matchExpressions");
  if (!exprs.is_array()) return out;
  for (engine::Node e : exprs)
    if (e.is_object()) out.push_back(e);
  return out;
}

// The string values of a node-selector requirement.
[[nodiscard]] inline std::vector<std::string> expr_values(engine::Node expr) {
  std::vector<std::string> out;
  const engine::Node vs = engine::member(expr, "values");
  if (!vs.is_array()) return out;
  for (engine::Node v : vs)
    if (v.is_string()) out.emplace_back(v.str());
  return out;
}

// The same two for a term kept as JSON past `check` (a rule state's copy of a spec's affinity, from
// which `finish` builds a fix with add_node_requirement: the object's tree is gone by then).
[[nodiscard]] inline std::vector<const engine::json*> match_expressions(const engine::json& term) {
  std::vector<const engine::json*> out;
  const engine::json* exprs = engine::member(term, "matchExpressions");
  if (!exprs || !exprs->is_array()) return out;
  for (const auto& e : *exprs)
    if (e.is_object()) out.push_back(&e);
  return out;
}

[[nodiscard]] inline std::vector<std::string> expr_values(const engine::json& expr) {
  std::vector<std::string> out;
  const engine::json* vs = engine::member(expr, "values");
  if (!vs || !vs->is_array()) return out;
  for (const auto& v : *vs)
    if (v.is_string()) out.push_back(v.get<std::string>());
  return out;
}

// JSON Patch adding `expr` to every required node-selector term for which `has` is false (terms
// are ORed, so each needs it), creating affinity, nodeAffinity, the required block and a first
// term where they are missing. `spec` is JSON: a rule state's copy of the spec's `affinity`, read
// in `finish` (see match_expressions above).
template <typename Has>
[[nodiscard]] engine::json add_node_requirement(const engine::json& spec, const std::string& spec_ptr,
                                                const engine::json& expr, Has has) {
  using engine::json;
  json ops = json::array();
  const json term = {{"matchExpressions", json::array({expr})}};
  const json required = {{"nodeSelectorTerms", json::array({term})}};
  const json* affinity = engine::member(spec, "affinity");
  if (!affinity || !affinity->is_object()) {
    ops.push_back({{"op", "add"}, {"path", spec_ptr + "/affinity"}, {"value", {{"nodeAffinity", {{std::string(kRequired), required}}}}}});
    return ops;
  }
  const std::string na_ptr = spec_ptr + "/affinity/nodeAffinity";
  const json* na = engine::member(*affinity, "nodeAffinity");
  if (!na || !na->is_object()) {
    ops.push_back({{"op", "add"}, {"path", na_ptr}, {"value", {{std::string(kRequired), required}}}});
    return ops;
  }
  const std::string req_ptr = na_ptr + "/" + std::string(kRequired);
  const json* req = engine::member(*na, kRequired);
  if (!req || !req->is_object()) {
    ops.push_back({{"op", "add"}, {"path", req_ptr}, {"value", required}});
    return ops;
  }
  const json* terms = engine::member(*req, "nodeSelectorTerms");
  if (!terms || !terms->is_array() || terms->empty()) {
    ops.push_back({{"op", "add"}, {"path", req_ptr + "/nodeSelectorTerms"}, {"value", json::array({term})}});
    return ops;
  }
  for (size_t i = 0; i < terms->size(); ++i) {
    const json& t = (*terms)[i];
    if (t.is_object() && has(t)) continue;
    const std::string t_ptr = req_ptr + "/nodeSelectorTerms/" + std::to_string(i);
    if (!t.is_object()) {
      ops.push_back({{"op", "replace"}, {"path", t_ptr}, {"value", term}});
      continue;
    }
    const json* exprs = engine::member(t, "matchExpressions");
    if (exprs && exprs->is_array())
      ops.push_back({{"op", "add"}, {"path", t_ptr + "/matchExpressions/-"}, {"value", expr}});
    else
      ops.push_back({{"op", "add"}, {"path", t_ptr + "/matchExpressions"}, {"value", json::array({expr})}});
  }
  return ops;
}

// JSON Patch appending a required pod-affinity term, creating what is missing on the way.
[[nodiscard]] inline engine::json add_required_pod_affinity(engine::Node spec, const std::string& spec_ptr,
                                                            const engine::json& term) {
  using engine::json;
  json ops = json::array();
  const engine::Node affinity = engine::member(spec, "affinity");
  if (!affinity.is_object()) {
    ops.push_back({{"op", "add"}, {"path", spec_ptr + "/affinity"},
                   {"value", {{"podAffinity", {{std::string(kRequired), json::array({term})}}}}}});
    return ops;
  }
  const std::string pa_ptr = spec_ptr + "/affinity/podAffinity";
  const engine::Node pa = engine::member(affinity, "podAffinity");
  if (!pa.is_object()) {
    ops.push_back({{"op", "add"}, {"path", pa_ptr}, {"value", {{std::string(kRequired), json::array({term})}}}});
    return ops;
  }
  const engine::Node req = engine::member(pa, kRequired);
  if (!req.is_array())
    ops.push_back({{"op", "add"}, {"path", pa_ptr + "/" + std::string(kRequired)}, {"value", json::array({term})}});
  else
    ops.push_back({{"op", "add"}, {"path", pa_ptr + "/" + std::string(kRequired) + "/-"}, {"value", term}});
  return ops;
}

}  // namespace gpuguard::rules::topology
