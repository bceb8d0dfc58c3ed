#include "engine/mutate.h"

#include "engine/evaluate.h"
#include "engine/podspec.h"

namespace gpuguard::engine {

bool mutation_applies(const Object& obj, const WebhookSettings& settings, bool create) {
  if (obj.is("", "Pod")) return settings.mutate_pods && create && !obj.annotation("kubernetes.io/config.mirror");
  return settings.mutate_templates && !pod_templates(obj).empty();
}

std::shared_ptr<const Plan> mutation_plan(const Registry& registry, const Config& config, const std::set<std::string>& only_rules) {
  std::set<std::string> fixable;
  for (const Rule* r : registry.rules())
    if (r->info().has_fix && config.rule(r->info().id).enabled && (only_rules.empty() || only_rules.count(r->info().id)))
      fixable.insert(r->info().id);
  if (fixable.empty()) return nullptr;
  return std::make_shared<const Plan>(registry, config, std::move(fixable));
}

MutateResult mutate(const Object& original, const Registry& registry, const Config& config,
                    const MutateOptions& options) {
  MutateResult out;
  out.object = original.body;
  // The fixable rules' plan, for every round: the caller's (a mutation_plan() of this registry and
  // config), or one made here.
  const bool given = options.plan && &options.plan->registry() == &registry && &options.plan->config() == &config &&
                     !options.plan->only_rules().empty();
  const std::shared_ptr<const Plan> plan = given ? options.plan : mutation_plan(registry, config, options.only_rules);
  if (!plan) return out;  // no rule with a fix is enabled

  for (int round = 0; round < options.max_rounds; ++round) {
    Object current;
    current.source = original.source;
    current.document = original.document;
    current.item_pointer = original.item_pointer;
    current.api_version = original.api_version;
    current.gvk = original.gvk;
    current.name = original.name;
    current.generate_name = original.generate_name;
    current.namespace_ = original.namespace_;
    current.pos = original.pos;
    current.body = out.object;
    if (round == 0) {  // positions still match the text
      current.positions = original.positions;
      current.pos_root = original.pos_root;
    }
    EvalOptions eo;
    eo.complete = options.complete;
    eo.base = options.base;
    eo.focus_on_added = true;
    eo.plan = plan;  // its rule set: the fixable rules
    Evaluation eval(registry, config, eo);
    eval.add(std::move(current));
    Result r = eval.finish();
    bool changed = false;
    std::vector<Diagnostic> failures;
    for (const auto& f : r.findings) {
      if (!f.fix || f.suppressed) continue;
      try {
        json next = out.object.patch(*f.fix);
        if (next != out.object) {
          out.object = std::move(next);
          changed = true;
          if (out.rules.empty() || out.rules.back() != f.rule) out.rules.push_back(f.rule);
        }
      } catch (const std::exception& e) {
        // A fix that no longer applies (an earlier fix this round moved things): the next round
        // evaluates again and offers a fresh one. If nothing else changed, it is a rule's bug.
        failures.push_back({Severity::error, original.source ? original.source->path : "", f.pos,
                            "fix of rule " + f.rule + " does not apply to " + original.display_name() + ": " + e.what()});
      }
    }
    if (!changed) {
      for (auto& d : failures) out.diagnostics.push_back(std::move(d));
      out.patch = json::diff(original.body, out.object);
      return out;
    }
  }
  out.diagnostics.push_back({Severity::error, original.source ? original.source->path : "", original.pos,
                             "fixes for " + original.display_name() + " did not settle after " +
                                 std::to_string(options.max_rounds) + " rounds; no patch is applied"});
  out.object = original.body;
  out.patch = json::array();
  return out;
}

}  // namespace gpuguard::engine
