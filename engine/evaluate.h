#pragma once
// Runs the enabled rules over a stream of objects and returns sorted findings.
//
// The linter adds every object of its input and finishes once; the webhook adds the one admitted
// object over a base inventory (the cluster state) with that object in focus.

#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/inventory.h"
#include "engine/registry.h"
#include "engine/rule.h"

namespace gpuguard::engine {

inline constexpr std::string_view kIgnoreAnnotation = "gpuguard.io/ignore";
inline constexpr std::string_view kIgnoreReasonAnnotation = "gpuguard.io/ignore-reason";

struct EvalOptions {
  bool complete = false;                    // the input is the whole cluster (or scope)
  std::shared_ptr<const Inventory> base;    // objects already known (the webhook's state)
  bool focus_on_added = false;              // report only on objects added to this evaluation
  std::set<std::string> only_rules;         // when not empty, run only these rules
  unsigned jobs = 1;                        // threads for the rules' `finish` (`lint --jobs`)
};

struct Result {
  std::vector<Finding> findings;            // sorted by file, line, column, rule
  std::vector<Diagnostic> diagnostics;      // problems with the input itself
  size_t objects = 0;                       // objects checked
  std::vector<ObjectRef> checked;           // their identities, in input order (for per-object reports)
};

// The namespace an object lives in: its own, the config's default for namespaced kinds that name
// none, "" for cluster-scoped kinds and non-objects.
[[nodiscard]] std::string effective_namespace(const Object& obj, const Config& config);

// The kinds the enabled rules of a config read from the inventory.
[[nodiscard]] std::set<KindRef> kinds_read(const Registry& registry, const Config& config);
// Every kind an enabled rule checks, reads or observes, except "*" (what `gpuguard audit` lists).
[[nodiscard]] std::set<KindRef> kinds_audited(const Registry& registry, const Config& config);

class Evaluation {
 public:
  Evaluation(const Registry& registry, const Config& config, EvalOptions options = {});
  ~Evaluation();
  Evaluation(const Evaluation&) = delete;
  Evaluation& operator=(const Evaluation&) = delete;

  // Checks one object with every enabled rule, and keeps it in the inventory if a rule reads its
  // kind (then it moves from `obj`; else `obj` is left for the caller to free, perhaps on another
  // thread). Returns the id it was given.
  uint32_t add(Object&& obj);
  // The part of `add` that needs no input order, done ahead on another thread (`lint --jobs`; safe
  // to call concurrently, for different objects, with itself and with `add`) for a run of
  // consecutive objects: their ids (`first_id`: how many objects are added before them), identity
  // and exemptions, the checks of every rule that keeps no state, and those of rules whose state
  // can be merged (RuleState::mergeable), into a state of the run's own that `add` merges into the
  // rule's when it adds the run's last object. `add` then runs only the other rules, in input
  // order. Findings are the same either way.
  void precheck(std::span<Object> objects, uint32_t first_id) const;
  // Diagnostics found while loading the input, kept with the result.
  void add_diagnostics(std::vector<Diagnostic> diags);
  // Runs the cross-object phase and returns everything found.
  [[nodiscard]] Result finish();

  [[nodiscard]] const Inventory& inventory() const;

  struct Impl;  // defined in evaluate.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuguard::engine
