// zone-label-deprecated: the beta failure-domain labels in a pod template's selectors or affinity.

#include <map>

#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/topology/common.h"

namespace gpuguard::rules {

namespace {

using namespace engine;
using namespace topology;

const std::map<std::string, std::string, std::less<>>& replacements() {
  static const std::map<std::string, std::string, std::less<>> kMap = {
      {"failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone"},
      {"failure-domain.beta.kubernetes.io/region", "topology.kubernetes.io/region"},
  };
  return kMap;
}

class ZoneLabelDeprecated final : public Rule {
 public:
  ZoneLabelDeprecated() {
    info_.id = "zone-label-deprecated";
    info_.severity = Severity::warning;
    info_.category = "topology";
    info_.seed = "9.3";
    info_.summary = "A pod template selects or spreads by the deprecated `failure-domain.beta.kubernetes.io` zone or region label";
    info_.rationale =
        "`failure-domain.beta.kubernetes.io/zone` and `/region` were deprecated in Kubernetes 1.17 in "
        "favour of `topology.kubernetes.io/zone` and `/region`. Whether a node still carries the beta "
        "labels depends on its cloud controller manager or node tooling; a node that has only the GA "
        "labels does not match a node selector or required affinity on the beta key (the pod stays "
        "Pending), and counts as having no domain for a pod (anti-)affinity `topologyKey` or a "
        "topology spread constraint (the rule silently stops spreading or co-locating). Seed 9.3 "
        "selects zones by `topology.kubernetes.io/zone`.\n\n"
        "The rule looks at `nodeSelector` keys, node affinity (required and preferred) keys, pod "
        "affinity and anti-affinity `topologyKey`s, `topologySpreadConstraints[].topologyKey`, and the "
        "values of Kueue's topology annotations on the pod template.";
    info_.remediation =
        "Use `topology.kubernetes.io/zone` (and `topology.kubernetes.io/region`) instead; every "
        "supported cloud provider sets the GA labels.";
    info_.checks = pod_template_kinds();
    info_.facts = {
        "facts/kubernetes-and-queues.md §6 — `topology.kubernetes.io/zone` is GA; "
        "`failure-domain.beta.kubernetes.io/zone` is \"deprecated since 1.17\" (k8s.io/api `core/v1/well_known_labels.go`, "
        "`LabelFailureDomainBetaZone` / `LabelFailureDomainBetaRegion`). The path was [U] in the facts; I found the "
        "constants in the index under \"Deprecated labels - kept for backwards compatibility\" with \"deprecated since "
        "1.17. Use LabelTopologyZone instead\", and cloud-provider-azure cites them at kubernetes/api "
        "`core/v1/well_known_labels.go`. Third-party code in the index reads the beta label only as a fallback to the GA one.",
    };
    info_.example_bad = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  selector:
    matchLabels: {app: infer}
  template:
    metadata:
      labels: {app: infer}
    spec:
      nodeSelector:
        failure-domain.beta.kubernetes.io/zone: us-east-1a
      containers:
        - name: infer
          image: nvcr.io/nvidia/tritonserver:24.06-py3
)";
    info_.example_good = R"(apiVersion: apps/v1
kind: Deployment
metadata:
  name: infer
spec:
  selector:
    matchLabels: {app: infer}
  template:
    metadata:
      labels: {app: infer}
    spec:
      nodeSelector:
        topology.kubernetes.io/zone: us-east-1a
      containers:
        - name: infer
          image: nvcr.io/nvidia/tritonserver:24.06-py3
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    for (const auto& t : pod_templates(obj)) {
      const Node spec = t.spec;
      const std::string sp = t.spec_pointer();
      // Most labels are not deprecated: the pointer is made only for one that is.
      auto flag = [&](std::string_view label, auto&& ptr, std::string_view where) {
        auto it = replacements().find(label);
        if (it == replacements().end()) return;
        ctx.report(ptr(), "`" + it->first + "` in " + std::string(where) + " is deprecated since Kubernetes 1.17; use `" + it->second +
                              "`: a node labelled only with the GA key " +
                              (where.find("topologyKey") != std::string_view::npos || where.find("annotation") != std::string_view::npos
                                   ? "has no domain here, so the constraint does not group or spread as intended"
                                   : "does not match"));
      };
      if (const Node ns = member(spec, "nodeSelector"); ns.is_object())
        for (const auto entry : ns.items()) {
          const std::string_view k = entry.key;
          flag(k, [&] { return pointer_join(sp + "/nodeSelector", k); }, "nodeSelector");
        }
      if (const Node na = affinity_of(spec, "nodeAffinity")) {
        const std::string base = sp + "/affinity/nodeAffinity";
        if (const Node terms = path(na, {kRequired, "nodeSelectorTerms"}); terms.is_array()) {
          size_t i = 0;
          for (const Node term : terms) {
            expressions(term, [&] { return base + "/" + std::string(kRequired) + "/nodeSelectorTerms/" + std::to_string(i); },
                        "required node affinity", flag);
            ++i;
          }
        }
        if (const Node pref = member(na, kPreferred); pref.is_array()) {
          size_t i = 0;
          for (const Node item : pref) {
            if (const Node p = member(item, "preference"))
              expressions(p, [&] { return base + "/" + std::string(kPreferred) + "/" + std::to_string(i) + "/preference"; },
                          "preferred node affinity", flag);
            ++i;
          }
        }
      }
      for (std::string_view which : {"podAffinity", "podAntiAffinity"}) {
        const Node pa = affinity_of(spec, which);
        if (!pa) continue;
        auto base = [&] { return sp + "/affinity/" + std::string(which); };
        const std::string where = std::string(which) + " topologyKey";
        if (const Node req = member(pa, kRequired); req.is_array()) {
          size_t i = 0;
          for (const Node term : req) {
            if (auto k = string_at(term, "topologyKey"))
              flag(*k, [&] { return base() + "/" + std::string(kRequired) + "/" + std::to_string(i) + "/topologyKey"; }, where);
            ++i;
          }
        }
        if (const Node pref = member(pa, kPreferred); pref.is_array()) {
          size_t i = 0;
          for (const Node item : pref) {
            if (const Node term = member(item, "podAffinityTerm"))
              if (auto k = string_at(term, "topologyKey"))
                flag(*k, [&] { return base() + "/" + std::string(kPreferred) + "/" + std::to_string(i) + "/podAffinityTerm/topologyKey"; },
                     where);
            ++i;
          }
        }
      }
      if (const Node tsc = member(spec, "topologySpreadConstraints"); tsc.is_array()) {
        size_t i = 0;
        for (const Node c : tsc) {
          if (auto k = string_at(c, "topologyKey"))
            flag(*k, [&] { return sp + "/topologySpreadConstraints/" + std::to_string(i) + "/topologyKey"; },
                 "topologySpreadConstraints topologyKey");
          ++i;
        }
      }
      if (const Node ann = member(t.metadata(), "annotations"))
        for (std::string_view key : {kKueueRequiredTopology, kKueuePreferredTopology, kKueueSliceRequiredTopology})
          if (auto v = string_at(ann, key))
            flag(*v, [&] { return pointer_join(t.pointer + "/metadata/annotations", key); }, "the annotation " + std::string(key));
    }
  }

 private:
  // The keys of a node selector term's expressions; `ptr` makes the term's pointer.
  template <typename Ptr, typename Flag>
  static void expressions(Node term, const Ptr& ptr, std::string_view where, Flag& flag) {
    const Node exprs = member(term, "matchExpressions");
    if (!exprs.is_array()) return;
    size_t j = 0;
    for (const Node e : exprs) {
      if (auto k = string_at(e, "key"))
        flag(*k, [&] { return ptr() + "/matchExpressions/" + std::to_string(j) + "/key"; }, where);
      ++j;
    }
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_zone_label_deprecated() { return std::make_unique<ZoneLabelDeprecated>(); }

}  // namespace gpuguard::rules
