#pragma once
// The rule interface (design.md §2): metadata plus pure check functions.
//
// A rule sees objects in two phases. `check` runs once per object while its tree is alive and may
// only look at that object. `finish` runs once after every object was added and sees the
// inventory: the kept objects of the kinds the rule declared in `reads`. Cross-object rules
// record what they need in their own state during `check` (a small projection, never the tree)
// and decide in `finish`. The same two calls serve the linter (all objects of the input) and the
// webhook (one admitted object against the cluster state), so there is one engine, not two.

#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/json.h"
#include "engine/mig.h"
#include "engine/object.h"
#include "engine/podspec.h"
#include "engine/records.h"
#include "engine/types.h"

namespace re2 {
class RE2;
}

namespace gpuguard::engine {

class Inventory;

enum class ParamType : uint8_t { integer, boolean, string, string_list, regex, string_map };
[[nodiscard]] std::string_view to_string(ParamType t);

struct ParamSpec {
  std::string name;
  ParamType type = ParamType::string;
  json default_value;
  std::string description;
  std::optional<int64_t> min;  // integers only
  std::optional<int64_t> max;
};

struct KindRef {
  std::string group;
  std::string kind;
  auto operator<=>(const KindRef&) const = default;
};

// The parts of an object that rules' fixes write, for mutate()'s rounds (engine/mutate.h): a rule
// says which of them its `check` and `finish` read (RuleInfo::reads_parts), and after a round a rule
// runs again only when a fix of another rule wrote a part it reads, or its own fix may need a
// follow-up. Each part is a field of a pod template (the Pod's own spec and metadata for a Pod);
// whatever else a fix writes (containers and their resources, annotations, any other field) is
// kPartOther, which every rule reads whatever it declares.
enum PodPart : uint32_t {
  kPartTolerations = 1u << 0,  // spec.tolerations
  kPartPriority = 1u << 1,     // spec.priorityClassName, spec.priority
  kPartScheduler = 1u << 2,    // spec.schedulerName
  kPartPlacement = 1u << 3,    // spec.affinity, spec.nodeSelector, spec.nodeName
  kPartLabels = 1u << 4,       // metadata.labels of the object or of a pod template
  kPartOther = 1u << 31,       // anything else a fix may write
  kPartAll = 0xFFFFFFFFu,
};

struct RuleInfo {
  std::string id;              // kebab-case; file and doc names derive from it
  Severity severity = Severity::warning;
  std::string category;        // "resources", "quota", "priority", ...
  std::string seed;            // section of the seed's checklist ("9.5")
  std::string summary;         // one line, no trailing period
  std::string rationale;       // markdown
  // The rest of the rationale, made only when it is shown (mig-profile-unknown's table of the
  // compiled-in MIG catalog: parsing that catalog was a third of the program's start-up, and most
  // runs show no rationale and meet no MIG config).
  std::string (*rationale_more)() = nullptr;
  std::string remediation;     // markdown
  std::vector<std::string> facts;  // the facts the rule rests on, with their upstream sources
  std::vector<ParamSpec> params;
  std::vector<KindRef> checks; // kinds it reports on (the webhook registers for exactly these)
  std::vector<KindRef> reads;  // kinds it reads from the inventory in `finish`
  // Further kinds `check` must see (to record a projection for `finish`) without reporting on them
  // or keeping them whole. `check` is called only for kinds in checks, reads and observes, and
  // for every document that is not a Kubernetes object; a rule that declares no kind sees all.
  std::vector<KindRef> observes;
  bool reports_scope = false;  // may report on no object: the cluster as a whole (report_scope)
  bool needs_complete = false; // speaks only where the inventory is complete
  bool has_fix = false;
  // For mutate() (a rule with a fix): the PodParts its `check` and `finish` read, besides what
  // every rule reads (kPartOther: the kind, the containers, ...). Every part unless the rule says less: a part left
  // out that the rule reads makes mutate stop before a fix that part's change calls for
  // (tests/unit/mutate_rounds_test.cpp holds mutate to re-running every rule in every round).
  uint32_t reads_parts = kPartAll;
  // Whether, once its fixes are applied, the rule offers no further fix on the object (while no
  // other fix changes a part it reads): then a round that applied only its fixes needs no other.
  bool fix_settles = false;
  std::string example_bad;     // YAML that fires (tested)
  std::string example_good;    // YAML that does not (tested)

  [[nodiscard]] std::string full_rationale() const { return rationale_more ? rationale + rationale_more() : rationale; }
};

// A rule's resolved parameters (validated when the config was loaded).
class Params {
 public:
  Params() = default;
  Params(json values, std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> regexes);

  [[nodiscard]] int64_t integer(std::string_view name) const;
  [[nodiscard]] bool boolean(std::string_view name) const;
  [[nodiscard]] std::string string(std::string_view name) const;
  // A list-of-strings parameter (made once, when the settings are: rules ask for it per object).
  [[nodiscard]] const std::vector<std::string>& strings(std::string_view name) const;
  [[nodiscard]] const re2::RE2* regex(std::string_view name) const;
  [[nodiscard]] std::shared_ptr<const re2::RE2> regex_ptr(std::string_view name) const;
  [[nodiscard]] const json& values() const { return values_; }

 private:
  json values_ = json::object();
  std::vector<std::pair<std::string, std::shared_ptr<const re2::RE2>>> regexes_;
  std::vector<std::pair<std::string, std::vector<std::string>>> string_lists_;  // every array value
};

// The identity strings of an object, allocated once per object and shared by every ObjectRef to
// it (findings and rule projections hold a pointer, not copies of the strings).
struct ObjectIdentity {
  std::string item_pointer;
  std::string api_version;
  std::string kind;
  std::string namespace_;  // effective namespace ("" for cluster-scoped kinds)
  std::string name;
  // The object's id and document. An object checked ahead (`lint --jobs`) is checked before the
  // objects in front of it are counted: Evaluation::add sets both here when it adds the object, and
  // a ref made before then, wherever a rule keeps it, copies them from here when the evaluation
  // takes a finding on it (until then its own fields hold kNoObject and the document within its part).
  uint32_t id = 0;
  uint32_t document = 0;
};

// Identity of an object, kept with every finding so findings outlive object trees. Rules carry
// refs (to report on them in `finish`) but do not read `id` or `document`: the evaluation's, which
// are final only once the object is added (ObjectIdentity).
struct ObjectRef {
  uint32_t id = 0;
  uint32_t document = 0;
  SourceRef source;
  Pos pos;
  std::shared_ptr<const ObjectIdentity> identity;  // null: every string empty

  [[nodiscard]] const ObjectIdentity& ident() const {
    static const ObjectIdentity kNone;
    return identity ? *identity : kNone;
  }
  [[nodiscard]] const std::string& item_pointer() const { return ident().item_pointer; }
  [[nodiscard]] const std::string& api_version() const { return ident().api_version; }
  [[nodiscard]] const std::string& kind() const { return ident().kind; }
  [[nodiscard]] const std::string& namespace_() const { return ident().namespace_; }
  [[nodiscard]] const std::string& name() const { return ident().name; }
};

struct Finding {
  std::string rule;
  std::string message;
  ObjectRef object;         // object.id == kNoObject for findings about the scope as a whole
  std::string pointer;      // JSON pointer into the object
  Pos pos;
  Severity severity = Severity::warning;
  Mode mode = Mode::enforce;  // the rule's, as configured (RuleSettings::mode): what the webhook does with it
  bool suppressed = false;
  // What a gpuguard.io/ignore annotation naming the rule (at the finding's place) did: nothing (none
  // names it, or a config exclusion suppressed the finding), exempted the finding (suppressed), or
  // named it and was not honoured (EvalOptions::annotations: the finding stands).
  enum class Annotation : uint8_t { none, exempted, not_honoured };
  Annotation annotation = Annotation::none;
  std::optional<json> fix;  // RFC 6902 operations on the object
  // Suppressed: why (the ignore annotation's reason, or the config exclusion). Not suppressed, with
  // Annotation::not_honoured: the note saying why the annotation did not exempt it (honour_note).
  std::string suppression;
};

inline constexpr uint32_t kNoObject = 0xFFFFFFFFu;

class SchemaStore;

// The Kubernetes version rules assume when the config names none (`kubernetesVersion`): the newest
// minor release facts/modern-stack.md covers.
inline constexpr std::string_view kDefaultKubernetesVersion = "1.36";

// Engine-wide settings every rule may read.
struct RunSettings {
  ResourceMatcher gpu_resources{default_gpu_resources()};
  // DRA DeviceClasses whose requests are GPUs (engine/dra.h): names, or `*.suffix` patterns.
  std::vector<std::string> gpu_device_classes = default_gpu_device_classes();
  std::string default_namespace = "default";
  // The cluster's Kubernetes version, "<major>.<minor>" (`kubernetesVersion`), for rules whose answer
  // depends on its default feature gates.
  std::string kubernetes_version = std::string(kDefaultKubernetesVersion);
  std::shared_ptr<const SchemaStore> schemas;  // `lint --schemas DIR`; null when none was given
  // MIG GPU models the config adds (`mig.gpus`), looked up before the built-in catalog.
  std::shared_ptr<const std::vector<MigGpu>> mig_gpus;
};

class RuleState {
 public:
  virtual ~RuleState() = default;
  // `lint --jobs` checks runs of consecutive objects on several threads, each run with a state of
  // its own, and merges them in input order: `merge(later)` adds what `later` recorded (about
  // objects after this state's) as if this state had seen them itself. A state that can be merged
  // says so (and what its rule's `check` records must not depend on what the state already holds);
  // the others are filled on one thread, in input order.
  [[nodiscard]] virtual bool mergeable() const { return false; }
  virtual void merge(RuleState& later) { (void)later; }
};

// For `merge`: moves the records of `later` after those of `to`.
template <typename T>
void append(std::vector<T>& to, std::vector<T>& later) {
  if (to.empty()) {
    to.swap(later);
    return;
  }
  to.insert(to.end(), std::make_move_iterator(later.begin()), std::make_move_iterator(later.end()));
  later.clear();
}

class CheckContext {
 public:
  virtual ~CheckContext() = default;
  [[nodiscard]] virtual const Params& params() const = 0;
  [[nodiscard]] virtual const RunSettings& settings() const = 0;
  [[nodiscard]] virtual RuleState* state() = 0;
  // The effective namespace of the object being checked ("" for cluster-scoped kinds).
  [[nodiscard]] virtual const std::string& namespace_of_object() const = 0;
  virtual void report(std::string pointer, std::string message, std::optional<json> fix = std::nullopt) = 0;
  // Whether findings' fixes are wanted: not by the validating webhook, which never sends them. A
  // rule may then skip building a fix (a fix it passes anyway is dropped); its findings and their
  // messages must not change.
  [[nodiscard]] virtual bool fixes_wanted() const = 0;
  // The object's identity and the position of `pointer`, for a finding `finish` reports later.
  [[nodiscard]] virtual ObjectRef ref() const = 0;
  [[nodiscard]] virtual Pos position_of(std::string_view pointer) const = 0;
};

class FinishContext {
 public:
  virtual ~FinishContext() = default;
  [[nodiscard]] virtual const Params& params() const = 0;
  [[nodiscard]] virtual const RunSettings& settings() const = 0;
  [[nodiscard]] virtual RuleState* state() = 0;
  [[nodiscard]] virtual const Inventory& inventory() const = 0;
  // Findings about a kept object (the inventory's), resolved to a position now.
  virtual void report(const Object& obj, std::string pointer, std::string message,
                      std::optional<json> fix = std::nullopt) = 0;
  // Findings about an object seen in `check` whose tree is gone: its ref and position (and a fix,
  // JSON Patch operations the rule built from its projection).
  virtual void report(const ObjectRef& obj, std::string pointer, Pos pos, std::string message,
                      std::optional<json> fix = std::nullopt) = 0;
  // A finding about the scope as a whole (no object carries it, e.g. "no PriorityClass at all").
  // Dropped whenever focused() is not null (the webhook: only the admitted object is in focus).
  virtual void report_scope(std::string message) = 0;
  // As CheckContext::fixes_wanted.
  [[nodiscard]] virtual bool fixes_wanted() const = 0;
  // Whether findings on this object are wanted: always in the linter; in the webhook only the
  // admitted object is in focus. Rules may skip work for objects out of focus.
  [[nodiscard]] virtual bool in_focus(const Object& obj) const = 0;
  // The objects in focus when only some are (the webhook's admitted object), in the order they
  // were added; nullptr when every object is (the linter). A rule that reports on one kind can
  // start from these instead of asking in_focus of every object of that kind.
  [[nodiscard]] virtual const std::vector<const Object*>* focused() const = 0;
  // For a finding about a set of objects: the one in focus if any, else the last in source order.
  [[nodiscard]] virtual const Object* subject(std::span<const Object* const> set) const = 0;
};

class Rule {
 public:
  virtual ~Rule() = default;
  [[nodiscard]] virtual const RuleInfo& info() const = 0;
  virtual void check(const Object& /*obj*/, CheckContext& /*ctx*/) const {}
  [[nodiscard]] virtual std::unique_ptr<RuleState> make_state() const { return nullptr; }
  virtual void finish(FinishContext& /*ctx*/) const {}
  // Cross-parameter checks beyond the types (e.g. min ≤ max); an error message, or nothing.
  [[nodiscard]] virtual std::optional<std::string> validate_params(const Params& /*params*/) const { return std::nullopt; }
};

}  // namespace gpuguard::engine
