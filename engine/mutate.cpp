#include "engine/mutate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/evaluate.h"
#include "engine/podspec.h"
#include "engine/positions.h"

namespace gpuguard::engine {

bool mutation_applies(const Object& obj, const WebhookSettings& settings, bool create) {
  if (obj.is("", "Pod")) return settings.mutate_pods && create && !obj.annotation("kubernetes.io/config.mirror");
  return settings.mutate_templates && !pod_templates(obj).empty();
}

std::shared_ptr<const Plan> mutation_plan(const Registry& registry, const Config& config, const std::set<std::string>& only_rules) {
  std::set<std::string> fixable;
  for (const Rule* r : registry.rules())
    if (r->info().has_fix && config.rule(r->info().id).fixes() && (only_rules.empty() || only_rules.count(r->info().id)))
      fixable.insert(r->info().id);
  if (fixable.empty()) return nullptr;
  return std::make_shared<const Plan>(registry, config, std::move(fixable));
}

namespace {

// nlohmann's ==, except that a NaN equals a NaN: whether a fix changes what it writes, or changed
// the object, which a NaN there would otherwise say every time (and mutate would never settle).
bool same(const json& a, const json& b) {
  if (a.is_number_float() || b.is_number_float()) {
    if (!a.is_number() || !b.is_number()) return false;
    const auto x = a.get<double>();
    const auto y = b.get<double>();
    return x == y || (std::isnan(x) && std::isnan(y));
  }
  if (a.type() != b.type()) return a == b;  // 1u == 1
  if (a.is_object()) {
    const auto& x = a.get_ref<const json::object_t&>();
    const auto& y = b.get_ref<const json::object_t&>();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j)
      if (i->first != j->first || !same(i->second, j->second)) return false;
    return true;
  }
  if (a.is_array()) {
    const auto& x = a.get_ref<const json::array_t&>();
    const auto& y = b.get_ref<const json::array_t&>();
    return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), [](const json& p, const json& q) { return same(p, q); });
  }
  return a == b;
}

// nlohmann checks an add, replace or remove (its pointer parses, the parent exists, an index is in
// range, a removed or replaced member exists) before it changes anything, so one of them alone is
// atomic in place. Whether it changes the object is known beforehand: an add or replace whose
// target already holds an equal value does not (what comparing the whole object after a copy
// found, except that a NaN anywhere in the object made that comparison see a change every time).
// A target inside a string, number or boolean does not exist (RFC 6902, 4.1): an error, where
// nlohmann's add asserts (and does nothing under NDEBUG) and its remove does nothing (its replace
// throws, and is left to it). Answers nullopt when `op` is not such an operation, or is a replace
// or remove inside a null, or a remove of the whole: nlohmann's patch decides.
//
// A member of an object is written here as nlohmann's patch_inplace writes it (an add into a null
// parent makes it an object; an add of a member already there replaces it), without its copies of
// the operation, the value and the pointer, and with the value copied before the member is made (a
// failed copy leaves no member behind); anything else (an item of an array, a member that is not
// there to replace or remove) is left to patch_inplace, for its answer or its exception. `alone` is
// the fix that holds `op` alone, or null: `op` is one of several, and a value equal to the one
// there is written all the same (1.0 over 1, as nlohmann writes it: a later copy or test reads it).
std::optional<bool> apply_single(json& object, const json& op, const json* alone) {
  auto by_nlohmann = [&] {
    if (alone) object.patch_inplace(*alone);
    else object.patch_inplace(json::array({op}));
  };
  const json* name = member(op, "op");
  const json* path = member(op, "path");
  if (!name || !name->is_string() || !path || !path->is_string()) return std::nullopt;
  const std::string& verb = name->get_ref<const std::string&>();
  const bool add = verb == "add";
  const bool remove = verb == "remove";
  if (!add && !remove && verb != "replace") return std::nullopt;
  const json* value = remove ? nullptr : member(op, "value");  // a remove's "value" means nothing
  if (!value && !remove) return std::nullopt;
  const json::json_pointer ptr(path->get_ref<const std::string&>());  // throws as patch would
  if (ptr.empty()) {
    if (remove) return std::nullopt;
    if (alone && same(object, *value)) return false;
    by_nlohmann();
    return true;
  }
  json& parent = object.at(ptr.parent_pointer());  // throws as patch would
  const std::string& key = ptr.back();
  if (parent.is_null()) {
    if (!add) return std::nullopt;  // nlohmann's add makes it an object; the others are its to answer
    json copy = *value;
    parent[key] = std::move(copy);
    return true;
  }
  if (parent.is_object()) {
    auto& members = parent.get_ref<json::object_t&>();
    auto it = members.find(key);
    if (it == members.end()) {
      if (!add) {
        by_nlohmann();  // throws: no such member
        return true;
      }
      json copy = *value;
      members.try_emplace(key, std::move(copy));
    } else if (remove) {
      members.erase(it);
    } else {
      if (alone && same(it->second, *value)) return false;
      it->second = *value;
    }
    return true;
  }
  if (!parent.is_array()) {
    if (verb == "replace") by_nlohmann();  // throws: nothing to replace there
    throw std::invalid_argument("the parent of " + path->get_ref<const std::string&>() + " is not an object or array");
  }
  // An add into an array inserts, even a value equal to its neighbour.
  if (alone && !add && value && object.contains(ptr) && same(std::as_const(object).at(ptr), *value)) return false;
  by_nlohmann();
  return true;
}

// One operation of a fix of several, or a move or copy, applied to `object` as nlohmann's patch
// applies it, except that an add inside a string, number or boolean (also a move's or copy's) is
// refused as apply_single refuses it. A move is nlohmann's: "path" parsed, then "from", the value
// there copied, removed there, added at "path" (so a move into its own member finds no parent and
// throws); a copy adds the copied value. Everything else (a test, an operation that is not one,
// one with a field missing) is nlohmann's patch's. Not atomic: a move that fails to add has
// removed; apply_fix works on a copy.
void apply_one(json& object, const json& op) {
  if (apply_single(object, op, nullptr)) return;
  const json* name = member(op, "op");
  const json* from = member(op, "from");
  const json* path = member(op, "path");
  if (name && (*name == "move" || *name == "copy") && from && from->is_string() && path && path->is_string()) {
    (void)json::json_pointer(path->get_ref<const std::string&>());  // nlohmann's first error, if any
    json value = object.at(json::json_pointer(from->get_ref<const std::string&>()));  // throws as patch would
    if (*name == "move") apply_one(object, patch_op("remove", from->get<std::string>()));
    apply_one(object, patch_op("add", path->get<std::string>(), std::move(value)));
    return;
  }
  object.patch_inplace(json::array({op}));
}

}  // namespace

namespace {

// nlohmann's diff, step for step: the same operations in the same order. It compares the two
// subtrees at every level before it descends (so a deep tree is compared once per level) and
// copies each level's operations into its parent's list; this compares scalars only, and appends
// to one list with one path string that grows and shrinks on the way.
void diff_into(const json& source, const json& target, std::string& path, json::array_t& out) {
  if (source.type() != target.type()) {
    if (source == target) return;  // 1 and 1.0
    out.push_back(patch_op("replace", path, target));
    return;
  }
  const size_t at = path.size();
  if (source.is_array()) {
    const auto& s = source.get_ref<const json::array_t&>();
    const auto& t = target.get_ref<const json::array_t&>();
    size_t i = 0;
    for (; i < s.size() && i < t.size(); ++i) {
      path += '/';
      path += std::to_string(i);
      diff_into(s[i], t[i], path, out);
      path.resize(at);
    }
    for (size_t k = s.size(); k > i; --k)  // removed from the end, so each index is still right
      out.push_back(patch_op("remove", path + "/" + std::to_string(k - 1)));
    for (; i < t.size(); ++i) out.push_back(patch_op("add", path + "/-", t[i]));
    return;
  }
  if (source.is_object()) {
    const auto& s = source.get_ref<const json::object_t&>();
    const auto& t = target.get_ref<const json::object_t&>();
    for (const auto& [key, value] : s) {
      path += '/';
      append_pointer_escaped(path, key);
      if (auto it = t.find(key); it != t.end()) diff_into(value, it->second, path, out);
      else out.push_back(patch_op("remove", path));
      path.resize(at);
    }
    for (const auto& [key, value] : t) {
      if (s.find(key) != s.end()) continue;
      path += '/';
      append_pointer_escaped(path, key);
      out.push_back(patch_op("add", path, value));
      path.resize(at);
    }
    return;
  }
  if (source == target) return;
  out.push_back(patch_op("replace", path, target));
}

}  // namespace

json json_diff(const json& source, const json& target) {
  json patch = json::array();
  std::string path;
  diff_into(source, target, path, patch.get_ref<json::array_t&>());
  return patch;
}

namespace {

// Whether `text` is a JSON pointer (RFC 6901): empty, or tokens each led by '/', every '~' in them
// followed by '0' or '1'.
bool is_pointer(std::string_view text) {
  if (!text.empty() && text[0] != '/') return false;
  for (size_t i = text.find('~'); i != std::string_view::npos; i = text.find('~', i + 1))
    if (i + 1 == text.size() || (text[i + 1] != '0' && text[i + 1] != '1')) return false;
  return true;
}

// A source of either form, read the same way.
bool source_object(const json* s) { return s->is_object(); }
bool source_object(Node s) { return s.is_object(); }
const json* source_member(const json* s, const std::string& key) { return member(*s, key); }
Node source_member(Node s, const std::string& key) { return s[key]; }
void diff_whole(const json* s, const json& target, std::string& path, json::array_t& out) { diff_into(*s, target, path, out); }
void diff_whole(Node s, const json& target, std::string& path, json::array_t& out) {
  json source = s.to_json();
  diff_into(source, target, path, out);
  dispose(source);
}

using Tokens = std::vector<std::string>;

// diff_into, walking only the members of objects that `live` (the changed pointers that lead here,
// `depth` tokens down) go on to: every other member is the same in both. Where a pointer ends, or
// the walk reaches anything but two objects (an array's items move with an insertion), it diffs
// all there is, as diff_into does.
template <class Source>
void diff_changed(Source source, const json& target, const std::vector<const Tokens*>& live, size_t depth,
                  std::string& path, json::array_t& out) {
  const bool ends_here = std::any_of(live.begin(), live.end(), [&](const Tokens* t) { return t->size() == depth; });
  if (ends_here || !source_object(source) || !target.is_object()) {
    diff_whole(source, target, path, out);
    return;
  }
  std::vector<const std::string*> keys;  // where the pointers go on to, in the order of an object's members
  keys.reserve(live.size());
  for (const Tokens* t : live) keys.push_back(&(*t)[depth]);
  std::sort(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  keys.erase(std::unique(keys.begin(), keys.end(), [](const std::string* a, const std::string* b) { return *a == *b; }),
             keys.end());
  const auto& members = target.get_ref<const json::object_t&>();
  const size_t at = path.size();
  // As diff_into: the source's members in order, changed or removed; then the target's new ones.
  for (const std::string* key : keys) {
    const auto from = source_member(source, *key);
    if (!from) continue;
    path += '/';
    append_pointer_escaped(path, *key);
    if (auto it = members.find(*key); it != members.end()) {
      std::vector<const Tokens*> next;
      for (const Tokens* t : live)
        if ((*t)[depth] == *key) next.push_back(t);
      diff_changed(from, it->second, next, depth + 1, path, out);
    } else {
      out.push_back(patch_op("remove", path));
    }
    path.resize(at);
  }
  for (const std::string* key : keys) {
    auto it = members.find(*key);
    if (it == members.end() || source_member(source, *key)) continue;
    path += '/';
    append_pointer_escaped(path, *key);
    out.push_back(patch_op("add", path, it->second));
    path.resize(at);
  }
}

template <class Source>
json diff_changed(Source source, const json& target, const std::vector<std::string>& changed) {
  std::vector<Tokens> pointers;
  pointers.reserve(changed.size());
  for (const std::string& c : changed) pointers.push_back(is_pointer(c) ? pointer_tokens(c) : Tokens{});  // not one: the whole
  std::vector<const Tokens*> live;
  live.reserve(pointers.size());
  for (const Tokens& t : pointers) live.push_back(&t);
  json patch = json::array();
  std::string path;
  if (!live.empty()) diff_changed(source, target, live, 0, path, patch.get_ref<json::array_t&>());
  return patch;
}

}  // namespace

json json_diff(const json& source, const json& target, const std::vector<std::string>& changed) {
  return diff_changed(&source, target, changed);
}

json json_diff(Node source, const json& target, const std::vector<std::string>& changed) {
  return diff_changed(source, target, changed);
}

bool apply_fix(json& object, const json& fix) {
  if (fix.is_array() && fix.size() == 1)
    if (auto changed = apply_single(object, fix[0], &fix)) return *changed;
  if (!fix.is_array()) {
    (void)object.patch(fix);  // throws: a patch is an array
    return false;
  }
  json next = object;
  for (const json& op : fix) apply_one(next, op);
  if (same(next, object)) return false;
  object = std::move(next);
  return true;
}

void note_written(const json& fix, std::vector<std::string>& written) {
  for (const json& op : fix) {
    if (const json* path = member(op, "path"); path && path->is_string()) written.push_back(path->get<std::string>());
    const json* name = member(op, "op");
    const json* from = member(op, "from");
    if (name && *name == "move" && from && from->is_string()) written.push_back(from->get<std::string>());
  }
}

namespace {

// The PodParts the operations of a fix write in `obj` (the object the fix was made for: its pod
// templates say where their fields are). A pointer that is no part's (a container, an annotation,
// a template as a whole), or that is not a pointer, is every part, kPartOther among them.
uint32_t parts_written(const Object& obj, const json& fix) {
  if (!fix.is_array()) return kPartAll;
  auto part = [&](const json* at) -> uint32_t {
    if (!at || !at->is_string() || !is_pointer(at->get_ref<const std::string&>())) return kPartAll;
    const Tokens t = pointer_tokens(at->get_ref<const std::string&>());
    auto labels_at = [&](size_t i) { return t.size() > i + 1 && t[i] == "metadata" && t[i + 1] == "labels"; };
    if (labels_at(0)) return kPartLabels;  // the object's own labels
    for (const PodTemplate& tpl : pod_templates(obj)) {
      const Tokens base = pointer_tokens(tpl.pointer);
      if (t.size() < base.size() + 2 || !std::equal(base.begin(), base.end(), t.begin())) continue;
      const size_t i = base.size();
      if (labels_at(i)) return kPartLabels;
      if (t[i] != "spec") continue;
      const std::string& field = t[i + 1];
      if (field == "tolerations") return kPartTolerations;
      if (field == "priorityClassName" || field == "priority") return kPartPriority;
      if (field == "schedulerName") return kPartScheduler;
      if (field == "affinity" || field == "nodeSelector" || field == "nodeName") return kPartPlacement;
      return kPartAll;
    }
    return kPartAll;
  };
  uint32_t parts = 0;
  for (const json& op : fix) {
    parts |= part(member(op, "path"));
    if (const json* name = member(op, "op"); name && *name == "move") parts |= part(member(op, "from"));
  }
  return parts;
}

}  // namespace

MutateResult mutate(const Object& original, const Registry& registry, const Config& config,
                    const MutateOptions& options) {
  MutateResult out;
  // The fixable rules' plan, for every round: the caller's (a mutation_plan() of this registry and
  // config), or one made here.
  const bool given = options.plan && &options.plan->registry() == &registry && &options.plan->config() == &config &&
                     !options.plan->only_rules().empty();
  const std::shared_ptr<const Plan> plan = given ? options.plan : mutation_plan(registry, config, options.only_rules);
  if (!plan) {  // no rule with a fix is enabled
    if (options.object) out.object = original.body();
    return out;
  }

  std::vector<std::string> written;  // where the applied fixes' operations wrote
  const std::vector<const Rule*>& rules = plan->rules();
  auto index_of = [&](const std::string& id) {
    return static_cast<size_t>(std::find_if(rules.begin(), rules.end(), [&](const Rule* r) { return r->info().id == id; }) - rules.begin());
  };
  // The patch from the original to the result, once no fix is left to apply.
  auto settled = [&] {
    out.patch = original.doc ? json_diff(Node(original.doc.get(), original.doc_root), out.object, written)
                             : json_diff(original.body(), out.object, written);
  };
  std::vector<bool> next;  // the rules the next round runs (empty: every one)
  std::set<std::pair<std::string, std::string>> exempted;  // rule, pointer: in out.exempted
  for (int round = 0; round < options.max_rounds; ++round) {
    auto current = std::make_shared<Object>();
    current->source = original.source;
    current->document = original.document;
    current->item_pointer = original.item_pointer;
    current->api_version = original.api_version;
    current->gvk = original.gvk;
    current->name = original.name;
    current->generate_name = original.generate_name;
    current->namespace_ = original.namespace_;
    current->pos = original.pos;
    if (round == 0) {
      // The original's content, read where it is (its document is shared, not copied); its
      // positions still match the text.
      if (original.doc) {
        current->doc = original.doc;
        current->doc_root = original.doc_root;
      } else {
        current->set_body(original.body());
      }
      current->positions = original.positions;
      current->pos_root = original.pos_root;
    } else {
      current->set_body(std::move(out.object));
    }
    EvalOptions eo;
    eo.complete = options.complete;
    eo.base = options.base;
    eo.focus_on_added = true;
    eo.plan = plan;  // its rule set: the fixable rules
    eo.only_indices = std::move(next);
    eo.annotations = options.annotations;
    eo.user = options.user;
    next.clear();
    Evaluation eval(registry, config, eo);
    ++out.evaluations;
    eval.add(current);
    Result r = eval.finish();
    for (const Finding& f : r.findings)
      if (f.fix && f.annotation == Finding::Annotation::exempted && exempted.emplace(f.rule, f.pointer).second)
        out.exempted.push_back({f.rule, f.pointer, f.suppression});
    const bool fixes = std::any_of(r.findings.begin(), r.findings.end(), [](const Finding& f) { return f.fix && !f.suppressed; });
    if (round == 0 && !fixes) {  // nothing to change
      if (options.object) out.object = original.body();
      return out;
    }
    // What each fix writes, read while the object's pod templates are at hand (before its content
    // is taken back below).
    std::vector<uint32_t> parts(r.findings.size(), kPartAll);
    if (!options.rerun_all)
      for (size_t k = 0; k < r.findings.size(); ++k)
        if (r.findings[k].fix && !r.findings[k].suppressed) parts[k] = parts_written(*current, *r.findings[k].fix);
    // The evaluation holds the object no longer: its content comes back for the fixes (the first
    // round's is made from the original's document, which the patch's diff reads again where the
    // fixes wrote; a later round's body is taken back rather than copied).
    if (round == 0) out.object = original.doc ? original.doc->json_of(original.doc_root) : original.body();
    else out.object = current.use_count() == 1 ? current->take_body() : current->body();
    bool changed = false;
    std::vector<Diagnostic> failures;
    std::vector<uint32_t> wrote(rules.size(), 0);  // per rule, the parts its applied fixes wrote
    std::vector<bool> again(rules.size(), false);  // the rules the next round must run
    for (size_t k = 0; k < r.findings.size(); ++k) {
      const Finding& f = r.findings[k];
      if (!f.fix || f.suppressed) continue;
      const size_t i = index_of(f.rule);
      try {
        if (apply_fix(out.object, *f.fix)) {
          changed = true;
          note_written(*f.fix, written);
          if (out.rules.empty() || out.rules.back() != f.rule) out.rules.push_back(f.rule);
          if (i < rules.size()) {
            wrote[i] |= parts[k];
            if (!rules[i]->info().fix_settles) again[i] = true;
          }
        }
      } catch (const std::exception& e) {
        if (i < rules.size()) again[i] = true;  // offered afresh next round
        // A fix that no longer applies (an earlier fix this round moved things): the next round
        // evaluates again and offers a fresh one. If nothing else changed, it is a rule's bug.
        failures.push_back({Severity::error, original.source ? original.source->path : "", f.pos,
                            "fix of rule " + f.rule + " does not apply to " + original.display_name() + ": " + e.what()});
      }
    }
    if (!changed) {
      for (auto& d : failures) out.diagnostics.push_back(std::move(d));
      if (round > 0) settled();  // (round 0 changed nothing)
      return out;
    }
    if (options.rerun_all) continue;
    // A rule the next round would not run offers what it offered this round, or when it last ran
    // (it reads nothing another rule's fix wrote since): nothing, or fixes that settled.
    for (size_t i = 0; i < rules.size(); ++i) {
      uint32_t by_others = 0;
      for (size_t j = 0; j < rules.size(); ++j)
        if (j != i) by_others |= wrote[j];
      if ((rules[i]->info().reads_parts | kPartOther) & by_others) again[i] = true;
    }
    // Settled, unless this was the last round allowed: the reference would have needed one more
    // to see that, and says the fixes did not settle.
    if (std::none_of(again.begin(), again.end(), [](bool b) { return b; }) && round + 1 < options.max_rounds) {
      settled();
      return out;
    }
    next = std::move(again);
  }
  out.diagnostics.push_back({Severity::error, original.source ? original.source->path : "", original.pos,
                             "fixes for " + original.display_name() + " did not settle after " +
                                 std::to_string(options.max_rounds) + " rounds; no patch is applied"});
  out.object = original.body();
  out.patch = json::array();
  return out;
}

}  // namespace gpuguard::engine
