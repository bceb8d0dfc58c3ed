#pragma once
// Applies the fixes of the enabled rules to one object, the way the mutating webhook does, and
// gives the RFC 6902 patch from the original to the result.
//
// Fixes are applied in rounds: evaluate, apply every fix that applies cleanly, evaluate again,
// until no rule offers a fix. So fixes of different rules compose, and the result is a fixed
// point: mutating it again changes nothing (the webhook's `reinvocationPolicy: IfNeeded`).

#include <memory>
#include <string>
#include <vector>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "engine/inventory.h"
#include "engine/node.h"
#include "engine/registry.h"

namespace gpuguard::engine {

struct MutateOptions {
  std::shared_ptr<const Inventory> base;  // the cluster state fixes may read (namespace defaults)
  bool complete = false;
  std::set<std::string> only_rules;       // when not empty, apply only these rules' fixes
  int max_rounds = 8;
  // From mutation_plan() of the same registry, config and only_rules, built once by a caller that
  // mutates many objects (the webhook); null: mutate() makes one for its rounds.
  std::shared_ptr<const Plan> plan;
  // Whether MutateResult::object is wanted when no fix applies (the webhook wants only the patch:
  // an object no fix changes is then read, never copied into JSON).
  bool object = true;
  // Run every fixable rule in every round. By default a round after the first runs only the rules
  // its fixes concern (RuleInfo::reads_parts, fix_settles): those reading a part another rule's fix
  // wrote, those whose own fix may call for another, those whose fix did not apply. The result is
  // the same either way (tests hold it to that); this is the reference the tests compare with.
  bool rerun_all = false;
  // Which ignore annotations exempt a rule's fix: as the webhook's config allows (the default;
  // `gpuguard mutate` follows the webhook), for `user` (null: nobody known).
  AnnotationExemptions annotations = AnnotationExemptions::admission;
  const RequestUser* user = nullptr;
};

struct MutateResult {
  MutateResult() = default;
  MutateResult(const MutateResult&) = default;
  MutateResult(MutateResult&&) noexcept = default;
  MutateResult& operator=(const MutateResult&) = default;
  MutateResult& operator=(MutateResult&&) noexcept = default;
  ~MutateResult() { dispose(object); }  // faster than the tree's own destructor (engine/json.h)

  json object;                     // the object after every fix (null when unchanged and not wanted)
  json patch = json::array();      // RFC 6902, original → object (json_diff)
  std::vector<std::string> rules;  // rules whose fixes were applied, in order
  std::vector<Exempted> exempted;  // fixes an ignore annotation exempted (not applied), once each
  std::vector<Diagnostic> diagnostics;
  int evaluations = 0;             // rounds that evaluated the object (MutateOptions::rerun_all runs more)
};

// Whether the webhook's mutation applies to an object at all: Pods when they are created (most
// of a pod's spec is immutable afterwards; mirror pods never), controllers' pod templates only
// when the config asks for it (GitOps tools would see drift).
[[nodiscard]] bool mutation_applies(const Object& obj, const WebhookSettings& settings, bool create);

// The evaluation plan of the rules whose fixes mutate() applies (enabled, with a fix, in enforce
// mode, `fix` not switched off, and in only_rules if it is given); null when there are none.
[[nodiscard]] std::shared_ptr<const Plan> mutation_plan(const Registry& registry, const Config& config,
                                                        const std::set<std::string>& only_rules = {});

// Applies one fix (RFC 6902 operations) to `object` as nlohmann's `patch` does, atomically: when
// an operation does not apply it throws (nlohmann's exceptions, or, for an add or remove inside a
// string, number or boolean, std::invalid_argument, where nlohmann's patch asserts or does
// nothing; also a move's or copy's add) and `object` is as it was. Returns whether the object
// changed (an `add` of the value a member already has does not change it; a NaN equals a NaN
// here). A fix of one add, replace or remove is applied in place (but a replace or remove inside
// a null, or a remove of the whole, goes the other way); any other to a copy, one operation after
// another.
bool apply_fix(json& object, const json& fix);

// The RFC 6902 patch from `source` to `target`, the same operations in the same order as
// nlohmann's json::diff makes them, in a fraction of its time on a large object.
[[nodiscard]] json json_diff(const json& source, const json& target);

// json_diff(source, target) for a target that differs from `source` only at or below the JSON
// pointers in `changed` (where a fix's operations wrote; text that is not a pointer stands for the
// whole): the same operations, found without walking what no pointer leads into (and so without
// the replace json_diff makes of a NaN elsewhere, which never equals itself). A source that is a
// document's node is read where it is; only what the walk reaches is made JSON.
[[nodiscard]] json json_diff(const json& source, const json& target, const std::vector<std::string>& changed);
[[nodiscard]] json json_diff(Node source, const json& target, const std::vector<std::string>& changed);

// Appends the pointers a fix's operations write at, for json_diff's `changed`: every operation's
// "path", and a move's "from" (the member it takes away).
void note_written(const json& fix, std::vector<std::string>& written);

[[nodiscard]] MutateResult mutate(const Object& original, const Registry& registry, const Config& config,
                                  const MutateOptions& options = {});

}  // namespace gpuguard::engine
