#pragma once
// Runs the enabled rules over a stream of objects and returns sorted findings.
//
// The linter adds every object of its input and finishes once; the webhook adds the one admitted
// object over a base inventory (the cluster state) with that object in focus.

#include <map>
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
// The longest reason a finding keeps (bytes; a longer one is cut): every finding an annotation
// exempts holds a copy, so a reason of megabytes on an object of many findings would otherwise
// cost megabytes a finding.
inline constexpr size_t kMaxIgnoreReason = 256;

class Plan;

// How gpuguard.io/ignore annotations exempt findings.
enum class AnnotationExemptions : uint8_t {
  honour,     // always (lint, audit: a repository's own decision)
  never,      // never (`lint --no-annotation-exemptions`, for CI of a platform repository)
  admission,  // as config.webhook.exemptions allows, for EvalOptions::user (the webhook, mutate)
};

// A finding an ignore annotation exempted: what the webhook logs and counts.
struct Exempted {
  std::string rule;
  std::string pointer;
  std::string reason;  // gpuguard.io/ignore-reason ("gpuguard.io/ignore annotation" when none)
};

struct EvalOptions {
  bool complete = false;                    // the input is the whole cluster (or scope)
  std::shared_ptr<const Inventory> base;    // objects already known (the webhook's state)
  bool focus_on_added = false;              // report only on objects added to this evaluation
  std::set<std::string> only_rules;         // when not empty, run only these rules
  unsigned jobs = 1;                        // threads for the rules' `finish` (`lint --jobs`)
  // The plan of this registry and config, built once and shared by many evaluations (the
  // webhook's requests). Its rules are the ones that run: only_rules may then be left empty (if
  // given, it must be the plan's). Null, or one made for another registry, config or rule set:
  // the evaluation builds its own.
  std::shared_ptr<const Plan> plan = nullptr;  // (an initializer: aggregate initializations leave it out)
  // With focus_on_added, when not empty: only the plan's rules i with only_indices[i] run (mutate's
  // later rounds; one flag per rule of the plan).
  std::vector<bool> only_indices = {};
  // Whether findings carry their fixes (false: the validating webhook, which never sends them;
  // rules may skip building them, and the findings are otherwise the same).
  bool fixes = true;
  // Whether finish() frees the kept objects (before it sorts the findings, so a large run's peak
  // does not hold both). False for a process that ends after its report (`lint` outside the
  // sanitizer builds): they are left to the evaluation's destructor, or to the end of the process.
  bool teardown = true;
  // Whether Result::checked lists every object checked: only JUnit's report (a case per object)
  // reads it, so `lint` asks for it with that format and nothing else does. Without it, nothing
  // holds the identity of an object that has no finding once the rules are done with it (100,000
  // objects: a 6 MiB vector of refs, and the identities of the objects without findings), and an
  // admission request allocates no list of the one object it evaluates.
  bool list_checked = false;
  // Whether an ignore annotation exempts a finding it names. One that does not leaves the finding
  // standing, with Finding::annotation not_honoured and the reason in Finding::suppression.
  AnnotationExemptions annotations = AnnotationExemptions::honour;
  // With AnnotationExemptions::admission: who sent the request (userInfo); null: nobody known, so
  // webhook.exemptions.allow entries that name users or groups do not match.
  const RequestUser* user = nullptr;
};

struct Result {
  std::vector<Finding> findings;            // sorted by file, line, column, rule
  std::vector<Diagnostic> diagnostics;      // problems with the input itself
  size_t objects = 0;                       // objects checked
  std::vector<ObjectRef> checked;           // their identities, in input order (EvalOptions::list_checked)
};

// The namespace an object lives in: its own, the config's default for namespaced kinds that name
// none, "" for cluster-scoped kinds and non-objects.
[[nodiscard]] std::string effective_namespace(const Object& obj, const Config& config);

// The kinds the enabled rules of a config read from the inventory.
[[nodiscard]] std::set<KindRef> kinds_read(const Registry& registry, const Config& config);
// Every kind an enabled rule checks, reads or observes, except "*" (what `gpuguard audit` lists).
[[nodiscard]] std::set<KindRef> kinds_audited(const Registry& registry, const Config& config);

// What an evaluation needs that depends only on the registry, the config and the rule subset:
// the enabled rules with their settings, which of them see each kind in `check`, which may report
// on each kind, and the kinds the inventory keeps. Immutable, so one plan serves every request of
// the webhook at once. It refers to the registry and the config: they must outlive it.
class Plan {
 public:
  Plan(const Registry& registry, const Config& config, std::set<std::string> only_rules = {});

  [[nodiscard]] const Registry& registry() const { return registry_; }
  [[nodiscard]] const Config& config() const { return config_; }
  [[nodiscard]] const std::set<std::string>& only_rules() const { return only_rules_; }
  // The enabled rules (only_rules among them), in registry order, and their settings.
  [[nodiscard]] const std::vector<const Rule*>& rules() const { return rules_; }
  [[nodiscard]] const RuleSettings& settings(size_t i) const { return *settings_[i]; }
  // The rules whose `check` sees an object: those that check, read or observe its kind, those of
  // every kind, and every rule for a document that is not a Kubernetes object. Indices into
  // rules(), ascending.
  [[nodiscard]] const std::vector<uint32_t>& seeing(const Object& obj) const;
  // The rules that may report on an object: those whose `checks` name its kind or "*", and those
  // that declare no kind; every rule for a document that is not a Kubernetes object.
  [[nodiscard]] const std::vector<uint32_t>& reporting(const Object& obj) const;
  // Whether `checks` of a rule covers a kind (what `reporting` is built from).
  [[nodiscard]] static bool may_report_on(const RuleInfo& info, std::string_view group, std::string_view kind);
  // The kinds the rules read (what an inventory keeps).
  [[nodiscard]] const std::shared_ptr<const KindSet>& kinds_read() const { return kinds_read_; }
  // Whether rule i keeps a state (make_state() is not null), and whether that state can be merged
  // (RuleState::mergeable: `lint --jobs` checks it on the parsing threads).
  [[nodiscard]] bool has_state(size_t i) const { return state_kind_[i] != StateKind::none; }
  [[nodiscard]] bool mergeable(size_t i) const { return state_kind_[i] == StateKind::mergeable; }

 private:
  struct Lists {
    std::vector<uint32_t> seeing, reporting;
  };
  const Registry& registry_;
  const Config& config_;
  std::set<std::string> only_rules_;
  std::vector<const Rule*> rules_;
  std::vector<const RuleSettings*> settings_;
  std::map<std::string, std::map<std::string, Lists, std::less<>>, std::less<>> by_kind_;  // group → kind → lists
  Lists other_kind_;  // a kind no rule names
  Lists all_;         // not a Kubernetes object
  std::shared_ptr<const KindSet> kinds_read_;
  enum class StateKind : uint8_t { none, ordered, mergeable };
  std::vector<StateKind> state_kind_;
  [[nodiscard]] const Lists& lists(const Object& obj) const;
};

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
  // The same for an object the caller shares: the evaluation holds it only until finish() returns
  // (mutate() then takes its body back instead of copying it for the next round).
  uint32_t add(std::shared_ptr<Object> obj);
  // The part of `add` that needs no input order, done ahead on another thread (`lint --jobs`; safe
  // to call concurrently, for different runs, with itself and with `add`) for a run of consecutive
  // objects, as they are parsed: `objects` is the run so far, of which those from `from` on are
  // checked now, whether or not the objects before the run are known yet: `add` gives an object its
  // id, and takes its `document` as the caller has set it by then (load_inputs adds where a split
  // file's part starts), and passes both on to the refs made here through their ObjectIdentity.
  // Every object checked ahead is added once, to this evaluation, in input order. Their identity
  // and exemptions, the checks of every rule that keeps no state, and those of rules whose state
  // can be merged (RuleState::mergeable), into a state of the run's own that `add` merges into the
  // rule's when it adds the run's first object (so a run is added only once all of it is checked, as
  // load_inputs does). `add` then runs only the other rules, in input order. Findings are the same
  // either way. An object that will not be kept and that no rule has left to `add` is done with
  // here: its document, views and positions are freed at once, on the thread and while the caches
  // that parsed it are warm. A kept object's document is compacted first (before any rule reads it).
  void precheck(std::span<Object> objects, size_t from) const;
  // Diagnostics found while loading the input, kept with the result.
  void add_diagnostics(std::vector<Diagnostic> diags);
  // Threads for `finish` (EvalOptions::jobs), once the load has decided how many the input is worth.
  void set_jobs(unsigned jobs);
  // Runs the cross-object phase and returns everything found.
  [[nodiscard]] Result finish();

  [[nodiscard]] const Inventory& inventory() const;

  struct Impl;  // defined in evaluate.cpp

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuguard::engine
