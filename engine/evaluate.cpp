#include "engine/evaluate.h"
#include "engine/memory.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>

namespace gpuguard::engine {

std::set<KindRef> kinds_read(const Registry& registry, const Config& config) {
  std::set<KindRef> kinds;
  for (const Rule* r : registry.rules())
    if (config.rule(r->info().id).enabled)
      for (const auto& k : r->info().reads) kinds.insert(k);
  return kinds;
}

std::set<KindRef> kinds_audited(const Registry& registry, const Config& config) {
  std::set<KindRef> kinds;
  for (const Rule* r : registry.rules()) {
    if (!config.rule(r->info().id).enabled) continue;
    for (const auto* list : {&r->info().checks, &r->info().reads, &r->info().observes})
      for (const auto& k : *list)
        if (k.kind != "*" && k.group != "*") kinds.insert(k);
  }
  return kinds;
}

std::string effective_namespace(const Object& obj, const Config& config) {
  if (!obj.is_kubernetes_object() || obj.cluster_scoped()) return "";
  return obj.namespace_.empty() ? config.settings.default_namespace : obj.namespace_;
}

namespace {

// What exempts findings on one object: its ignore annotation (and those of its pod templates,
// which the pods it creates will carry) and the config's exclusions.
struct Exemptions {
  struct Ignore {
    std::string pointer_prefix;  // "" for the object, "/spec/template" for a template
    std::vector<std::string> rules;  // "*" = every rule
    std::string reason;
    // Whether it names `rule` for a finding at `pointer`.
    [[nodiscard]] bool covers(std::string_view rule, std::string_view pointer) const {
      if (!pointer.starts_with(pointer_prefix)) return false;
      if (pointer.size() > pointer_prefix.size() && !pointer_prefix.empty() && pointer[pointer_prefix.size()] != '/') return false;
      return std::any_of(rules.begin(), rules.end(), [&](const std::string& r) { return r == "*" || r == rule; });
    }
    [[nodiscard]] bool has_reason() const {
      return reason.find_first_not_of(" \t\r\n") != std::string::npos;
    }
  };
  std::vector<Ignore> ignores;
  std::vector<const Exclusion*> exclusions;

  // Suppresses `f` when a config exclusion covers its rule (the operator's), or an ignore
  // annotation names it and `policy` honours it; marks what an annotation did.
  void apply(Finding& f, AnnotationExemptions policy, const ExemptionSettings& settings, const RequestUser* user) const {
    for (const Exclusion* x : exclusions)
      if (x->covers(f.rule)) {
        f.suppressed = true;
        f.suppression = x->reason.empty() ? "excluded by " + x->where : x->reason;
        return;
      }
    std::optional<NotHonoured> refused;
    for (const auto& ig : ignores) {
      if (!ig.covers(f.rule, f.pointer)) continue;
      std::optional<NotHonoured> why;
      if (policy == AnnotationExemptions::never) why = NotHonoured::flag;
      else if (policy == AnnotationExemptions::admission)
        why = settings.refuses(f.object.namespace_(), f.rule, user, ig.has_reason());
      if (!why) {
        f.suppressed = true;
        f.annotation = Finding::Annotation::exempted;
        f.suppression = ig.reason.empty() ? std::string(kIgnoreAnnotation) + " annotation" : ig.reason;
        return;
      }
      if (!refused) refused = why;
    }
    if (refused) {
      f.annotation = Finding::Annotation::not_honoured;
      f.suppression = honour_note(*refused);
    }
  }
};

}  // namespace

Plan::Plan(const Registry& registry, const Config& config, std::set<std::string> only_rules)
    : registry_(registry), config_(config), only_rules_(std::move(only_rules)) {
  const std::set<KindRef> read = engine::kinds_read(registry, config);  // every enabled rule's, only_rules or not
  kinds_read_ = std::make_shared<const KindSet>(read.begin(), read.end());
  for (const Rule* rule : registry.rules()) {
    const RuleInfo& info = rule->info();
    const RuleSettings& rs = config.rule(info.id);
    if (!rs.enabled) continue;
    if (!only_rules_.empty() && !only_rules_.count(info.id)) continue;
    rules_.push_back(rule);
    settings_.push_back(&rs);
    const std::unique_ptr<RuleState> probe = rule->make_state();
    state_kind_.push_back(!probe ? StateKind::none : probe->mergeable() ? StateKind::mergeable : StateKind::ordered);
  }
  // Which rules look at a kind in `check`: those that report on it, read it or observe it.
  // Documents that are not Kubernetes objects (a mig-parted or device-plugin config file) go to
  // every rule, and so does every kind for a rule that checks "*" or declares no kind.
  auto every_kind = [](const RuleInfo& info) {
    return (info.checks.empty() && info.reads.empty() && info.observes.empty()) ||
           std::any_of(info.checks.begin(), info.checks.end(), [](const KindRef& k) { return k.kind == "*"; });
  };
  for (const Rule* rule : rules_) {
    const RuleInfo& info = rule->info();
    for (const auto* list : {&info.checks, &info.reads, &info.observes})
      for (const KindRef& k : *list)
        if (k.kind != "*") by_kind_[k.group][k.kind];
  }
  for (uint32_t i = 0; i < rules_.size(); ++i) {
    const RuleInfo& info = rules_[i]->info();
    all_.seeing.push_back(i);
    all_.reporting.push_back(i);
    const bool every = every_kind(info);
    if (every) other_kind_.seeing.push_back(i);
    if (may_report_on(info, "", "")) other_kind_.reporting.push_back(i);  // only "*" or no kind at all
    for (auto& [group, kinds] : by_kind_)
      for (auto& [kind, lists] : kinds) {
        bool sees = every;
        for (const auto* list : {&info.checks, &info.reads, &info.observes})
          for (const KindRef& k : *list) sees = sees || (k.group == group && k.kind == kind);
        if (sees) lists.seeing.push_back(i);
        if (may_report_on(info, group, kind)) lists.reporting.push_back(i);
      }
  }
}

bool Plan::may_report_on(const RuleInfo& info, std::string_view group, std::string_view kind) {
  if (info.checks.empty()) return info.reads.empty() && info.observes.empty();  // a rule of every kind
  for (const KindRef& k : info.checks)
    if (k.kind == "*" || (k.group == group && k.kind == kind)) return true;
  return false;
}

const Plan::Lists& Plan::lists(const Object& obj) const {
  if (!obj.is_kubernetes_object()) return all_;
  auto g = by_kind_.find(std::string_view(obj.gvk.group));
  if (g == by_kind_.end()) return other_kind_;
  auto k = g->second.find(std::string_view(obj.gvk.kind));
  return k == g->second.end() ? other_kind_ : k->second;
}

const std::vector<uint32_t>& Plan::seeing(const Object& obj) const { return lists(obj).seeing; }
const std::vector<uint32_t>& Plan::reporting(const Object& obj) const { return lists(obj).reporting; }

// The states of the mergeable rules for one run of objects checked ahead (by rule index).
struct Shard {
  std::vector<std::unique_ptr<RuleState>> states;
};

// Findings of `check`, kept until the object has its id and its exemptions are known.
using CheckFindings = std::vector<std::pair<uint32_t, Finding>>;  // rule index, finding

// What Evaluation::precheck finds on one object, kept with it until Evaluation::add.
struct Precheck {
  const Evaluation::Impl* owner = nullptr;
  bool sharded = false;          // the mergeable rules were checked too
  std::shared_ptr<Shard> shard;  // on the run's first object: their states, merged by `add`
  std::string ns;
  ObjectRef ref;
  std::shared_ptr<ObjectIdentity> identity;  // ref's, which `add` gives the object's id and document
  std::optional<Exemptions> exemptions;
  CheckFindings findings;        // of the rules checked ahead
  bool left_to_add = false;      // some rule that sees the object checks it in `add` (input order)
  std::vector<Diagnostic> diagnostics;
};

struct Evaluation::Impl {
  std::shared_ptr<const Plan> plan;
  const Registry& registry;
  const Config& config;
  EvalOptions options;
  Inventory inventory;
  // Each rule's state, made when the rule first needs it (parallel to plan->rules()).
  std::vector<std::unique_ptr<RuleState>> states;
  std::vector<bool> made;
  // With focus_on_added only findings on the added objects are wanted, and a rule reports only on
  // the kinds its `checks` name: the checks wait for finish(), which then runs only the rules that
  // may report on some added object (the webhook's one object: 21 rules of 52 for a Pod).
  struct Pending {
    std::shared_ptr<const Object> obj;
    ObjectRef ref;
  };
  std::vector<Pending> pending;
  std::vector<const Object*> focused;  // the pending objects, for FinishContext::focused()
  // Findings in chunks: the first grows as a vector does (the webhook's few findings), the others
  // are allocated at their full size, so collecting 200,000 findings never needs them twice over
  // in a vector twice as large; they move into one vector after the rules' state is freed.
  static constexpr size_t kChunk = 4096;
  std::vector<std::vector<Finding>> findings;
  std::vector<Diagnostic> diagnostics;
  std::unordered_map<uint32_t, Exemptions> exemptions;  // only objects that have some
  std::vector<ObjectRef> checked;
  uint32_t next_id = 0;
  uint32_t first_id = 0;
  size_t objects = 0;

  static std::shared_ptr<const Plan> plan_for(const Registry& r, const Config& c, EvalOptions& o) {
    if (o.plan && &o.plan->registry() == &r && &o.plan->config() == &c &&
        (o.only_rules.empty() || o.plan->only_rules() == o.only_rules))
      return std::move(o.plan);
    return std::make_shared<const Plan>(r, c, o.only_rules);
  }

  // (The inventory is made in place: a default one assigned over cost a webhook request as much
  // code as some rules.)
  Impl(const Registry& r, const Config& c, EvalOptions o)
      : plan(plan_for(r, c, o)), registry(r), config(c), options(std::move(o)),
        inventory(options.base ? Inventory::layered(options.base) : Inventory(plan->kinds_read())) {
    inventory.set_complete(options.complete);
    // Ids continue after the base's so they never collide.
    if (options.base) next_id = options.base->next_id();
    first_id = next_id;
    states.resize(plan->rules().size());
    made.resize(plan->rules().size());
  }

  RuleState* state(size_t i) {
    if (!made[i]) {
      states[i] = plan->rules()[i]->make_state();
      made[i] = true;
    }
    return states[i].get();
  }

  void check(const Object& obj, const ObjectRef& ref, const std::vector<bool>* only);
  // Rule i's check of one object, its findings into `out`; an exception it throws is returned.
  [[nodiscard]] std::optional<Diagnostic> run_check(uint32_t i, RuleState* state, const Object& obj, const ObjectRef& ref,
                                                    CheckFindings& out) const;
  // The identity and exemptions of an object, and with `rules` the checks that need no input
  // order: rules without state, and with a shard the mergeable ones (into its states).
  void precheck(const Object& obj, Precheck& out, bool rules, Shard* shard) const;
  // Whether `add` leaves rule i to the precheck.
  [[nodiscard]] bool checked_ahead(size_t i, const Precheck& p) const {
    return !plan->has_state(i) || (p.sharded && plan->mergeable(i));
  }

  ObjectRef make_ref(const Object& obj, const std::string& ns, std::shared_ptr<ObjectIdentity>* identity = nullptr) const {
    ObjectRef ref;
    ref.id = obj.id;
    ref.document = obj.document;
    ref.source = obj.source;
    ref.pos = obj.pos;
    auto made = std::make_shared<ObjectIdentity>(ObjectIdentity{obj.item_pointer, obj.api_version, obj.gvk.kind, ns,
                                                                obj.name.empty() ? obj.generate_name : obj.name, obj.id,
                                                                obj.document});
    if (identity) *identity = made;
    ref.identity = std::move(made);
    return ref;
  }

  // A ref made ahead of its object's id and document (precheck) takes them from its identity,
  // which `add` has given them to.
  static void settle(ObjectRef& ref) {
    if (!ref.identity) return;
    ref.id = ref.identity->id;
    ref.document = ref.identity->document;
    assert(ref.id != kNoObject && "a finding on an object checked ahead but never added");
  }

  bool wanted(uint32_t object_id) const { return !options.focus_on_added || (object_id >= first_id && object_id != kNoObject); }

  void push(const Rule& rule, const RuleSettings& settings, Finding&& f) {
    settle(f.object);
    if (!wanted(f.object.id)) return;
    f.rule = rule.info().id;
    f.severity = settings.severity;
    f.mode = settings.mode;
    if (auto it = exemptions.find(f.object.id); it != exemptions.end())
      it->second.apply(f, options.annotations, config.webhook.exemptions, options.user);
    if (findings.empty() || findings.back().size() == kChunk) {
      findings.emplace_back();
      if (findings.size() > 1) findings.back().reserve(kChunk);
    }
    findings.back().push_back(std::move(f));
  }

  static Diagnostic internal_error_diag(const Rule& rule, const Object* obj, const char* what) {
    Diagnostic d;
    d.severity = Severity::error;
    if (obj && obj->source) d.file = obj->source->path;
    if (obj) d.pos = obj->pos;
    d.message = "internal error in rule " + rule.info().id + (obj ? " on " + obj->display_name() : std::string()) + ": " + what;
    return d;
  }

  void push(uint32_t rule, Finding&& f) { push(*plan->rules()[rule], plan->settings(rule), std::move(f)); }

  void collect_exemptions(const Object& obj, const std::string& ns, Precheck& out) const;

  [[nodiscard]] bool keeps(const Object& obj) const {
    return obj.is_kubernetes_object() && inventory.keeps(obj.gvk.group, obj.gvk.kind);
  }
  // Evaluation::add of `obj`. `held` owns it when the caller shares it, or when the evaluation
  // keeps or focuses on it (then the evaluation holds it until finish()); null: the caller frees it.
  uint32_t add(Object& obj, std::shared_ptr<Object> held);
};

namespace {

// Findings of `check` go to `out`, pushed once the object has its id and exemptions (checks may
// run on another thread, ahead of `add`).
class CheckCtx final : public CheckContext {
 public:
  CheckCtx(const Evaluation::Impl& impl, uint32_t rule, RuleState* state, const Object& obj, const ObjectRef& ref, CheckFindings& out)
      : impl_(impl), index_(rule), settings_(impl.plan->settings(rule)), state_(state), obj_(obj), ref_(ref), out_(out) {}
  const Params& params() const override { return settings_.params; }
  const RunSettings& settings() const override { return impl_.config.settings; }
  RuleState* state() override { return state_; }
  const std::string& namespace_of_object() const override { return ref_.namespace_(); }
  void report(std::string pointer, std::string message, std::optional<json> fix) override {
    Finding f;
    f.message = std::move(message);
    f.object = ref_;
    f.pos = obj_.position_of(pointer);
    f.pointer = std::move(pointer);
    if (impl_.options.fixes) f.fix = std::move(fix);
    out_.emplace_back(index_, std::move(f));
  }
  bool fixes_wanted() const override { return impl_.options.fixes; }
  ObjectRef ref() const override { return ref_; }
  Pos position_of(std::string_view pointer) const override { return obj_.position_of(pointer); }

 private:
  const Evaluation::Impl& impl_;
  uint32_t index_;
  const RuleSettings& settings_;
  RuleState* state_;
  const Object& obj_;
  const ObjectRef& ref_;
  CheckFindings& out_;
};

}  // namespace

std::optional<Diagnostic> Evaluation::Impl::run_check(uint32_t i, RuleState* state, const Object& obj, const ObjectRef& ref,
                                                      CheckFindings& out) const {
  const Rule& rule = *plan->rules()[i];
  CheckCtx ctx(*this, i, state, obj, ref, out);
  try {
    rule.check(obj, ctx);
  } catch (const std::exception& e) {
    return internal_error_diag(rule, &obj, e.what());
  }
  return std::nullopt;
}

namespace {

// Findings of `finish` go to `out`, pushed in rule order once the rule is done (rules may finish
// on several threads).
class FinishCtx final : public FinishContext {
 public:
  // The findings go to `out`, or, with `direct` (finishing on one thread), straight to the
  // evaluation's findings as the rule reports them (the rules finish in order either way), instead
  // of into a vector of the rule's own that doubles as it grows and is then copied from: 52,000
  // findings of one rule over 100,000 objects held 13.5 MiB there at the run's peak.
  FinishCtx(const Evaluation::Impl& impl, size_t rule, RuleState* state, std::vector<Finding>& out,
            Evaluation::Impl* direct = nullptr)
      : impl_(impl), settings_(impl.plan->settings(rule)), state_(state), out_(out), direct_(direct),
        rule_(static_cast<uint32_t>(rule)) {}
  const Params& params() const override { return settings_.params; }
  const RunSettings& settings() const override { return impl_.config.settings; }
  RuleState* state() override { return state_; }
  const Inventory& inventory() const override { return impl_.inventory; }
  void report(const Object& obj, std::string pointer, std::string message, std::optional<json> fix) override {
    if (!impl_.wanted(obj.id)) return;  // out of focus: not even its identity is built
    Finding f;
    f.message = std::move(message);
    f.object = impl_.make_ref(obj, impl_.inventory.namespace_of(obj));
    f.pos = obj.position_of(pointer);
    f.pointer = std::move(pointer);
    if (impl_.options.fixes) f.fix = std::move(fix);
    emit(std::move(f));
  }
  void report(const ObjectRef& obj, std::string pointer, Pos pos, std::string message,
              std::optional<json> fix) override {
    Finding f;
    f.message = std::move(message);
    f.object = obj;
    f.pos = pos.known() ? pos : obj.pos;
    f.pointer = std::move(pointer);
    if (impl_.options.fixes) f.fix = std::move(fix);
    emit(std::move(f));
  }
  void report_scope(std::string message) override {
    Finding f;
    f.message = std::move(message);
    f.object.id = kNoObject;
    emit(std::move(f));
  }
  bool fixes_wanted() const override { return impl_.options.fixes; }
  bool in_focus(const Object& obj) const override { return impl_.wanted(obj.id); }
  const std::vector<const Object*>* focused() const override {
    return impl_.options.focus_on_added ? &impl_.focused : nullptr;
  }
  const Object* subject(std::span<const Object* const> set) const override {
    auto order = [](const Object* o) { return std::make_tuple(o->source ? o->source->index : 0u, o->pos); };
    const Object* last = nullptr;
    for (const Object* o : set) {
      if (impl_.options.focus_on_added && impl_.wanted(o->id)) return o;
      if (!last || order(last) < order(o)) last = o;
    }
    return last;
  }

 private:
  void emit(Finding&& f) {
    if (direct_) direct_->push(rule_, std::move(f));
    else out_.push_back(std::move(f));
  }

  const Evaluation::Impl& impl_;
  const RuleSettings& settings_;
  RuleState* state_;
  std::vector<Finding>& out_;
  Evaluation::Impl* direct_;
  uint32_t rule_;
};

std::vector<std::string> split_ids(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string_view::npos) end = s.size();
    std::string_view part = s.substr(start, end - start);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (!part.empty()) out.emplace_back(part);
    start = end + 1;
  }
  return out;
}

// A kept object's document was grown node by node: a copy holds it without the vectors' spare
// capacity (unless other objects share it: the items of one List). Made before the rules read the
// object, since what they keep of it (views, rule states) points into its document.
void compact_document(Object& obj) {
  if (!obj.positions) return;
  const bool same = obj.doc == obj.positions;
  if (obj.positions.use_count() != (same ? 2 : 1)) return;
  obj.positions = std::make_shared<const PositionIndex>(*obj.positions);
  if (same) {
    obj.views.reset();
    obj.doc = obj.positions;
  }
}

}  // namespace

void Evaluation::Impl::collect_exemptions(const Object& obj, const std::string& ns, Precheck& out) const {
  Exemptions ex;
  auto read = [&](Node metadata, const std::string& prefix) {
    const Node ann = member(metadata, "annotations");
    if (!ann) return;
    const Node ids = member(ann, kIgnoreAnnotation);
    if (!ids) return;
    std::string ptr = prefix + "/metadata/annotations/" + pointer_escape(kIgnoreAnnotation);
    if (!ids->is_string()) {
      out.diagnostics.push_back({Severity::error, obj.source ? obj.source->path : "", obj.position_of(ptr),
                             std::string(kIgnoreAnnotation) + " must be a string of comma-separated rule ids"});
      return;
    }
    Exemptions::Ignore ig;
    ig.pointer_prefix = prefix;
    for (auto& id : split_ids(ids.str())) {
      if (id != "*" && !registry.find(id)) {
        out.diagnostics.push_back({Severity::error, obj.source ? obj.source->path : "", obj.position_of(ptr),
                               std::string(kIgnoreAnnotation) + " names unknown rule \"" + id + "\" (see `gpuguard rules`)"});
        continue;
      }
      ig.rules.push_back(std::move(id));
    }
    if (auto reason = string_at(ann, kIgnoreReasonAnnotation)) {
      // Each finding it exempts carries a copy (and the webhook's log line): the first
      // kMaxIgnoreReason bytes, cut between UTF-8 characters.
      std::string_view r = *reason;
      if (r.size() > kMaxIgnoreReason) {
        size_t cut = kMaxIgnoreReason - 3;
        while (cut > 0 && (static_cast<unsigned char>(r[cut]) & 0xC0) == 0x80) --cut;
        ig.reason.assign(r.substr(0, cut)).append("\u2026");
      } else {
        ig.reason = r;
      }
    }
    if (!ig.rules.empty()) ex.ignores.push_back(std::move(ig));
  };
  read(obj.metadata(), "");
  for (const auto& t : pod_templates(obj))
    if (!t.pointer.empty()) read(t.metadata(), t.pointer);
  if (obj.is_kubernetes_object())
    for (const auto& x : config.exclude)
      if (x.matches(ns, obj.gvk.kind, obj.name)) ex.exclusions.push_back(&x);
  if (!ex.ignores.empty() || !ex.exclusions.empty()) out.exemptions = std::move(ex);
}

void Evaluation::Impl::precheck(const Object& obj, Precheck& out, bool rules, Shard* shard) const {
  out.owner = this;
  out.sharded = shard != nullptr;
  out.ns = effective_namespace(obj, config);
  collect_exemptions(obj, out.ns, out);
  out.ref = make_ref(obj, out.ns, &out.identity);
  if (!rules) return;
  for (uint32_t i : plan->seeing(obj)) {
    if (!checked_ahead(i, out)) {
      out.left_to_add = true;  // in `add`, in input order
      continue;
    }
    RuleState* state = nullptr;
    if (plan->has_state(i)) {
      if (!shard->states[i]) shard->states[i] = plan->rules()[i]->make_state();
      state = shard->states[i].get();
    }
    if (auto error = run_check(i, state, obj, out.ref, out.findings)) out.diagnostics.push_back(std::move(*error));
  }
}

Evaluation::Evaluation(const Registry& registry, const Config& config, EvalOptions options)
    : impl_(std::make_unique<Impl>(registry, config, std::move(options))) {}

Evaluation::~Evaluation() = default;

void Evaluation::Impl::check(const Object& obj, const ObjectRef& ref, const std::vector<bool>* only) {
  CheckFindings found;
  for (uint32_t i : plan->seeing(obj)) {
    if (only && !(*only)[i]) continue;
    if (auto error = run_check(i, state(i), obj, ref, found)) diagnostics.push_back(std::move(*error));
  }
  for (auto& [i, f] : found) push(i, std::move(f));
}

void Evaluation::precheck(std::span<Object> objects, size_t from) const {
  const Impl& m = *impl_;
  const bool rules = !m.options.focus_on_added;  // focused evaluations check in finish()
  if (from >= objects.size()) return;
  // The run's states go with its first object: made with it, found there by the later calls.
  std::shared_ptr<Shard> shard;
  if (rules && from == 0) {
    shard = std::make_shared<Shard>();
    shard->states.resize(m.plan->rules().size());
  } else if (rules && objects.front().precheck) {
    shard = objects.front().precheck->shard;
  }
  for (size_t k = from; k < objects.size(); ++k) {
    Object& obj = objects[k];
    obj.id = kNoObject;  // until `add` gives it one (settle: refs made now are not read before)
    if (m.keeps(obj)) compact_document(obj);
    auto p = std::make_shared<Precheck>();
    m.precheck(obj, *p, rules, shard.get());
    if (rules && !p->left_to_add && !m.keeps(obj)) {  // done with
      obj.release_content();
      obj.positions.reset();
    }
    obj.precheck = std::move(p);
  }
  if (from == 0 && shard) objects.front().precheck->shard = std::move(shard);
}

uint32_t Evaluation::add(Object&& added) {
  Impl& m = *impl_;
  // An object that stays (kept, or waiting in focus) goes to the heap before the checks read it,
  // so what they derive from it (DerivedViews) stays with it instead of going with a later move.
  if (m.options.focus_on_added || m.keeps(added)) return add(std::make_shared<Object>(std::move(added)));
  return m.add(added, nullptr);
}

uint32_t Evaluation::add(std::shared_ptr<Object> held) {
  if (!held) throw std::invalid_argument("Evaluation::add: no object");
  Object& obj = *held;
  return impl_->add(obj, std::move(held));
}

uint32_t Evaluation::Impl::add(Object& obj, std::shared_ptr<Object> held) {
  Impl& m = *this;
  const bool focus = m.options.focus_on_added;
  const std::shared_ptr<Precheck> ahead = std::move(obj.precheck);
  const bool keep = m.keeps(obj);
  Precheck here;
  obj.id = m.next_id;
  Precheck* pre = ahead && ahead->owner == &m ? ahead.get() : &here;
  if (pre == &here) {
    if (keep) compact_document(obj);
    m.precheck(obj, here, !focus, nullptr);
  } else {
    // Checked ahead, before the objects in front of it were counted: its id and document (a part
    // of a split file learns where its documents start when the parts before it are read) reach
    // the refs made then, in its findings and in rule states, through their identity.
    pre->identity->id = obj.id;
    pre->identity->document = obj.document;
    settle(pre->ref);
    ahead->owner = nullptr;  // taken: a copy of the object added again is checked afresh
  }
  ++m.next_id;
  ++m.objects;
  for (auto& d : pre->diagnostics) m.diagnostics.push_back(std::move(d));
  if (pre->exemptions) m.exemptions.emplace(obj.id, std::move(*pre->exemptions));
  if (m.options.list_checked && obj.is_kubernetes_object()) m.checked.push_back(pre->ref);
  if (!focus) {
    for (uint32_t i : m.plan->seeing(obj)) {
      if (m.checked_ahead(i, *pre)) continue;
      if (auto error = m.run_check(i, m.state(i), obj, pre->ref, pre->findings)) m.diagnostics.push_back(std::move(*error));
    }
    for (auto& [i, f] : pre->findings) m.push(i, std::move(f));
    if (pre->shard)
      for (size_t i = 0; i < pre->shard->states.size(); ++i)
        if (pre->shard->states[i]) m.state(i)->merge(*pre->shard->states[i]);
  }
  const uint32_t id = obj.id;
  if (focus) {
    std::shared_ptr<const Object> shared = std::move(held);
    if (keep) m.inventory.add(shared, pre->ns);
    m.pending.push_back({std::move(shared), std::move(pre->ref)});
  } else if (keep) {
    m.inventory.add(std::move(held), pre->ns);
  }
  return id;
}

void Evaluation::set_jobs(unsigned jobs) { impl_->options.jobs = jobs; }

void Evaluation::add_diagnostics(std::vector<Diagnostic> diags) {
  for (auto& d : diags) impl_->diagnostics.push_back(std::move(d));
}

const Inventory& Evaluation::inventory() const { return impl_->inventory; }

Result Evaluation::finish() {
  Impl& m = *impl_;
  const size_t n = m.plan->rules().size();
  std::vector<bool> runs(n, !m.options.focus_on_added);
  if (m.options.focus_on_added) {
    const auto& only = m.options.only_indices;
    for (const auto& p : m.pending) {
      for (uint32_t i : m.plan->reporting(*p.obj))
        if (only.empty() || (i < only.size() && only[i])) runs[i] = true;
      m.focused.push_back(p.obj.get());
    }
    for (const auto& p : m.pending) m.check(*p.obj, p.ref, &runs);
  }
  // Each rule finishes on its own (it reads the inventory and its own state), so with `jobs`
  // threads they finish in parallel; their findings are pushed in rule order either way.
  struct Done {
    std::vector<Finding> findings;
    std::optional<Diagnostic> error;
    bool ready = false;
  };
  std::vector<Done> done(n);
  for (size_t i = 0; i < n; ++i)
    if (runs[i]) m.state(i);  // made here, on this thread
  const unsigned jobs = static_cast<unsigned>(std::min<size_t>(std::max(1u, m.options.jobs), n));
  auto run = [&](size_t i) {
    if (!runs[i]) return;
    const Rule& rule = *m.plan->rules()[i];
    FinishCtx ctx(m, i, m.states[i].get(), done[i].findings, jobs <= 1 ? &m : nullptr);
    try {
      rule.finish(ctx);
    } catch (const std::exception& e) {
      done[i].error = Impl::internal_error_diag(rule, nullptr, e.what());
    }
    m.states[i].reset();  // a rule's projection is done with once it has finished
  };
  auto collect = [&](size_t i) {
    for (auto& f : done[i].findings) m.push(static_cast<uint32_t>(i), std::move(f));
    std::vector<Finding>().swap(done[i].findings);
    if (done[i].error) m.diagnostics.push_back(std::move(*done[i].error));
  };
  if (jobs <= 1) {
    for (size_t i = 0; i < n; ++i) {
      run(i);
      collect(i);
    }
  } else {
    // The costliest rules are not known in advance: threads take the next rule as they come free,
    // and this thread pushes each rule's findings as soon as it and those before it are done.
    std::atomic<size_t> next{0};
    std::mutex mu;
    std::condition_variable cv;
    const unsigned arena = current_arena();
    auto worker = [&] {
      use_arena(arena);  // the findings are freed and the pages reused on this thread (engine/memory.h)
      for (size_t i; (i = next.fetch_add(1)) < n;) {
        run(i);
        {
          std::lock_guard lock(mu);
          done[i].ready = true;
        }
        cv.notify_all();
      }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
    worker();
    for (size_t i = 0; i < n; ++i) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return done[i].ready; });
      }
      collect(i);
    }
    for (auto& t : threads) t.join();
  }
  // Nothing reads the kept objects after the cross-object phase: free them before the findings
  // are sorted and reported (the peak of a large run), unless the caller leaves them to the end
  // of the process (EvalOptions::teardown: `lint`). (Purging the freed pages back to the system
  // here, as this once did, lowered the peak of 100,000 objects by 3 MiB of 300 and cost 7 % more
  // page faults: the report's allocations faulted them in again.)
  m.focused.clear();
  m.pending.clear();
  if (m.options.teardown) m.inventory = Inventory();
  m.exemptions.clear();
  Result r;
  if (m.findings.size() == 1) {
    r.findings = std::move(m.findings.front());
  } else {
    size_t total = 0;
    for (const auto& chunk : m.findings) total += chunk.size();
    r.findings.reserve(total);
    for (auto& chunk : m.findings) {
      for (auto& f : chunk) r.findings.push_back(std::move(f));
      std::vector<Finding>().swap(chunk);  // freed as it is moved
    }
  }
  m.findings.clear();
  r.diagnostics = std::move(m.diagnostics);
  r.objects = m.objects;
  r.checked = std::move(m.checked);
  auto key = [](const Finding& f) {
    uint32_t file = f.object.source ? f.object.source->index : 0xFFFFFFFFu;
    return std::make_tuple(file, f.pos.line, f.pos.col, std::cref(f.rule), std::cref(f.pointer), std::cref(f.message));
  };
  // Sorts an index (4 bytes a finding) and then moves the findings into place along the
  // permutation's cycles: no second copy of the findings while sorting.
  std::vector<uint32_t> order(r.findings.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return key(r.findings[a]) < key(r.findings[b]); });
  for (uint32_t i = 0; i < order.size(); ++i) {
    if (order[i] == i) continue;
    Finding held = std::move(r.findings[i]);
    uint32_t at = i;
    for (uint32_t from = order[at]; from != i; from = order[at]) {
      r.findings[at] = std::move(r.findings[from]);
      order[at] = at;
      at = from;
    }
    r.findings[at] = std::move(held);
    order[at] = at;
  }
  return r;
}

}  // namespace gpuguard::engine
