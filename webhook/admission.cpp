#include "webhook/admission.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "engine/evaluate.h"
#include "engine/json_parse.h"
#include "engine/json_write.h"
#include "engine/mutate.h"

namespace gpuguard::webhook {

using engine::json;
using engine::Severity;

std::string field_path(std::string_view pointer) {
  std::string out;
  for (const auto& t : engine::pointer_tokens(pointer)) {
    bool index = !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
    bool plain = !t.empty() && t.find_first_of("./[]") == std::string::npos;
    if (index || !plain) out += "[" + t + "]";
    else out += (out.empty() ? "" : ".") + t;
  }
  return out;
}

namespace {

bool json_content_type(std::string_view ct) {
  auto semi = ct.find(';');
  std::string_view media = ct.substr(0, semi);
  while (!media.empty() && media.back() == ' ') media.remove_suffix(1);
  while (!media.empty() && media.front() == ' ') media.remove_prefix(1);
  std::string lower(media);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower == "application/json";
}

Answer invalid(Outcome& outcome, std::string why) {
  outcome.decision = "invalid";
  outcome.error = std::move(why);
  std::string body = R"({"error":)";
  engine::append_json_string(body, outcome.error);  // any bytes of the request it quotes, UTF-8-safe
  body += '}';
  return Answer{400, std::move(body)};
}

struct Review {
  std::shared_ptr<const engine::PositionIndex> doc;  // the review, read as a document
  std::string api_version;                           // as asked
  engine::Node request;
  std::string uid;
  std::string operation;
  std::string sub_resource;
  std::string namespace_;
  bool dry_run = false;
  engine::Node object;
  engine::Node old_object;
  engine::Node request_kind;
  engine::RequestUser user;  // request.userInfo
};

// Checks the shape of the review; an error message when it is not an AdmissionReview we can read.
std::optional<std::string> decode(engine::Node doc, Review& r) {
  using engine::member;
  using engine::string_at;
  if (!doc.is_object()) return "the body is not a JSON object";
  auto api = string_at(doc, "apiVersion");
  if (!api) return "apiVersion is missing or not a string";
  if (*api != "admission.k8s.io/v1" && *api != "admission.k8s.io/v1beta1")
    return "apiVersion must be admission.k8s.io/v1 or admission.k8s.io/v1beta1, got \"" + std::string(*api) + "\"";
  r.api_version = *api;
  if (string_at(doc, "kind") != std::optional<std::string_view>("AdmissionReview")) return "kind must be AdmissionReview";
  r.request = member(doc, "request");
  if (!r.request.is_object()) return "request is missing or not an object";
  const engine::Node req = r.request;
  auto uid = string_at(req, "uid");
  if (!uid || uid->empty()) return "request.uid is missing, empty or not a string";
  r.uid = *uid;
  auto op = string_at(req, "operation");
  if (!op) return "request.operation is missing or not a string";
  if (*op != "CREATE" && *op != "UPDATE" && *op != "DELETE" && *op != "CONNECT")
    return "request.operation must be CREATE, UPDATE, DELETE or CONNECT, got \"" + std::string(*op) + "\"";
  r.operation = *op;
  for (const char* key : {"subResource", "namespace", "name", "requestSubResource"}) {
    const engine::Node v = member(req, key);
    if (v && !v.is_string() && !v.is_null()) return std::string("request.") + key + " must be a string";
  }
  r.sub_resource = string_at(req, "subResource").value_or("");
  r.namespace_ = string_at(req, "namespace").value_or("");
  if (const engine::Node dr = member(req, "dryRun"); dr && !dr.is_null()) {
    if (!dr.is_boolean()) return "request.dryRun must be a boolean";
    r.dry_run = dr.boolean();
  }
  for (const char* key : {"kind", "resource", "requestKind", "requestResource", "userInfo", "options"}) {
    const engine::Node v = member(req, key);
    if (v && !v.is_object() && !v.is_null()) return std::string("request.") + key + " must be an object";
  }
  if (const engine::Node ui = member(req, "userInfo"); ui.is_object()) {
    const engine::Node name = member(ui, "username");
    if (name && !name.is_string() && !name.is_null()) return "request.userInfo.username must be a string";
    r.user.username = string_at(ui, "username").value_or("");
    if (const engine::Node groups = member(ui, "groups"); groups && !groups.is_null()) {
      if (!groups.is_array()) return "request.userInfo.groups must be a list of strings";
      for (const engine::Node g : groups) {
        if (!g.is_string()) return "request.userInfo.groups must be a list of strings";
        r.user.groups.emplace_back(g.str());
      }
    }
  }
  r.request_kind = member(req, "kind");
  for (const char* key : {"object", "oldObject"}) {
    const engine::Node v = member(req, key);
    if (v && !v.is_object() && !v.is_null()) return std::string("request.") + key + " must be an object or null";
  }
  // Present only when an object (null is none).
  r.object = member(req, "object");
  if (!r.object.is_object()) r.object = {};
  r.old_object = member(req, "oldObject");
  if (!r.old_object.is_object()) r.old_object = {};
  if ((r.operation == "CREATE" || r.operation == "UPDATE") && r.sub_resource.empty() && !r.object)
    return "request.object is missing for " + r.operation;
  if (r.operation == "UPDATE" && r.sub_resource.empty() && !r.old_object) return "request.oldObject is missing for UPDATE";
  return std::nullopt;
}

// An admitted object as the engine sees it: it reads its part of the review's document.
engine::Object to_object(engine::Node body, const Review& r) {
  engine::Object o = engine::object_from_node(r.doc, body.id());
  if (!o.is_kubernetes_object()) {
    // No TypeMeta in the object: take it from request.kind.
    auto g = engine::string_at(r.request_kind, "group").value_or("");
    auto v = engine::string_at(r.request_kind, "version").value_or("");
    auto k = engine::string_at(r.request_kind, "kind").value_or("");
    if (!k.empty()) {
      o.api_version = g.empty() ? std::string(v) : std::string(g) + "/" + std::string(v);
      o.gvk = engine::parse_gvk(o.api_version, k);
      // The identity the loader reads only beside a TypeMeta (exclusions by name, the state's
      // replace and remove go by it).
      engine::read_metadata(o);
    }
  }
  if (o.namespace_.empty() && !o.cluster_scoped()) o.namespace_ = r.namespace_;
  return o;
}

// What an answer says (an AdmissionResponse): written as JSON by encode, without a tree.
struct Response {
  bool allowed = true;
  std::string patch;  // base64 of a JSON Patch; empty: none
  int code = 0;       // a status when not 0
  std::string reason;
  std::string message;
  std::vector<std::string> warnings;
};

// The body of an answer, members in key order as nlohmann writes them (the strings UTF-8-safe as
// json::dump(-1, ' ', false, replace) writes them).
std::string encode(const Review& r, const Response& x) {
  size_t size = 160 + r.api_version.size() + r.uid.size() + x.patch.size() + x.message.size();
  for (const auto& w : x.warnings) size += w.size() + 3;
  std::string out;
  out.reserve(size);
  out += R"({"apiVersion":)";
  engine::append_json_string(out, r.api_version);
  out += R"(,"kind":"AdmissionReview","response":{"allowed":)";
  out += x.allowed ? "true" : "false";
  if (!x.patch.empty()) {
    out += R"(,"patch":)";
    engine::append_json_string(out, x.patch);
    out += R"(,"patchType":"JSONPatch")";
  }
  if (x.code != 0) {
    out += R"(,"status":{"code":)";
    out += std::to_string(x.code);
    out += R"(,"message":)";
    engine::append_json_string(out, x.message);
    out += R"(,"reason":)";
    engine::append_json_string(out, x.reason);
    out += '}';
  }
  out += R"(,"uid":)";
  engine::append_json_string(out, r.uid);
  if (!x.warnings.empty()) {
    out += R"(,"warnings":[)";
    for (size_t i = 0; i < x.warnings.size(); ++i) {
      if (i) out += ',';
      engine::append_json_string(out, x.warnings[i]);
    }
    out += ']';
  }
  out += "}}";
  return out;
}

// The largest n' <= n at which `s` may be cut: not inside a UTF-8 character.
size_t utf8_floor(std::string_view s, size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

std::string truncate(std::string s, size_t max) {
  if (s.size() <= max) return s;
  s.resize(utf8_floor(s, max > 3 ? max - 3 : 0));
  return s + "...";
}

constexpr std::string_view kEllipsis = "\u2026";  // "…", 3 bytes

// At most `budget` bytes of `text`, cut where a reader would: at the end of a sentence (". ", the
// period dropped; not after "e.g.") or before a clause ("; ", ": ", ", ", " (", " - "), outside parentheses,
// brackets, braces and `code`, the latest such place that keeps more than a third of the budget;
// else after a word, else between two characters, with an ellipsis.
std::string cut_text(std::string_view text, size_t budget) {
  if (text.size() <= budget) return std::string(text);
  const size_t least = budget / 3;
  size_t best = 0;  // bytes kept at the latest boundary
  int depth = 0;
  bool code = false;
  const size_t last = std::min(budget, text.size() - 2);  // a boundary at p reads text[p + 1]
  for (size_t p = 0; p <= last; ++p) {
    const char c = text[p];
    if (c == '`') code = !code;
    if (code || c == '`') continue;
    if (c == '(' || c == '[' || c == '{') ++depth;
    else if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    if (depth > 0 || p <= least) continue;
    const char next = text[p + 1];
    const bool sentence = c == '.' && next == ' ' && (p < 2 || text[p - 2] != '.');  // not "e.g. " or "i.e. "
    const bool clause = (c == ';' || c == ':' || c == ',') && next == ' ';
    const bool aside = c == ' ' && (next == '(' || (next == '-' && p + 2 < text.size() && text[p + 2] == ' '));
    if (sentence || clause || aside) best = p;
  }
  if (best > 0) return std::string(text.substr(0, best));
  const size_t room = budget > kEllipsis.size() ? budget - kEllipsis.size() : 0;
  size_t cut = utf8_floor(text, room);
  if (size_t space = text.substr(0, cut + 1).rfind(' '); space != std::string_view::npos && space > least) cut = space;
  std::string out(text.substr(0, cut));
  while (!out.empty() && (out.back() == ' ' || out.back() == ',' || out.back() == ';' || out.back() == ':')) out.pop_back();
  return out + std::string(kEllipsis);
}

// The rule an engine diagnostic names ("internal error in rule X ...", "fix of rule X ...").
std::string rule_of(const std::string& message) {
  for (std::string_view prefix : {"internal error in rule ", "fix of rule "}) {
    if (message.rfind(prefix, 0) != 0) continue;
    size_t end = message.find(' ', prefix.size());
    return message.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  }
  return "unknown";
}

using FindingKey = std::tuple<std::string, std::string, std::string>;
FindingKey key_of(const engine::Finding& f) { return {f.rule, f.pointer, f.message}; }

}  // namespace

Admission::Admission(const engine::Registry& registry, std::shared_ptr<const engine::Config> config, Limits limits)
    : registry_(registry),
      config_(std::move(config)),
      limits_(limits),
      plan_(std::make_shared<const engine::Plan>(registry_, *config_)),
      mutation_plan_(engine::mutation_plan(registry_, *config_)) {
  // DELETE re-runs the rules that read the deleted kind: one plan per kind some rule reads.
  std::map<engine::KindRef, std::set<std::string>, engine::KindLess> readers;
  for (const engine::Rule* rule : registry_.rules())
    for (const auto& k : rule->info().reads) readers[k].insert(rule->info().id);
  for (auto& [kind, rules] : readers) delete_plans_.emplace(kind, std::make_shared<const engine::Plan>(registry_, *config_, std::move(rules)));
}

Answer Admission::handle(Endpoint endpoint, std::string_view body, std::string_view content_type,
                         const std::shared_ptr<const engine::Inventory>& state, Outcome& outcome) const noexcept {
  Review r;
  bool decoded = false;
  // An unexpected failure after the review was read still gets a proper answer: the configured
  // failure mode decides (the API server would otherwise apply its failurePolicy).
  // Itself in a try: out of memory here still gets an answer (a 500, whose body fits in the
  // string's own buffer), never an exception out of the handler.
  auto failed = [&](const char* what) -> Answer {
    try {
      if (!decoded) return invalid(outcome, std::string("internal error: ") + what);
      outcome.rule_errors.emplace_back("unknown", what);
      // A DELETE is never denied (failureMode included): deleting must always be possible, or a
      // namespace whose deletion hits a failing rule would never go away.
      bool allowed = config_->webhook.fail_open || r.operation == "DELETE";
      outcome.decision = allowed ? "allowed" : "denied";
      Response response;
      response.allowed = allowed;
      if (!allowed) {
        response.code = 500;
        response.reason = "InternalError";
        response.message = std::string("gpuguard: internal error: ") + what;
      }
      return Answer{200, encode(r, response)};
    } catch (...) {
      return Answer{500, "{}"};
    }
  };
  try {
    if (!json_content_type(content_type))
      return invalid(outcome, "Content-Type must be application/json, got \"" + std::string(content_type) + "\"");
    if (body.size() > limits_.max_body_bytes)
      return invalid(outcome, "the body is over the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
    switch (engine::parse_json_document(body, limits_.max_json_depth, r.doc)) {
      case engine::JsonDocumentRead::read: break;
      case engine::JsonDocumentRead::too_deep:
        return invalid(outcome, "the body nests deeper than " + std::to_string(limits_.max_json_depth) + " levels");
      case engine::JsonDocumentRead::invalid: return invalid(outcome, "the body is not valid JSON");
      case engine::JsonDocumentRead::too_large:  // not told without a max_nodes (engine/json_parse.h)
        return invalid(outcome, "the body holds too many JSON values");
    }
    if (auto err = decode(engine::Node(r.doc.get(), r.doc->root()), r)) return invalid(outcome, *err);
    decoded = true;
    outcome.uid = r.uid;
    outcome.operation = r.operation;
    outcome.dry_run = r.dry_run;
    outcome.namespace_ = r.namespace_;
    outcome.name = engine::string_at(r.request, "name").value_or("");
    outcome.kind = engine::string_at(r.request_kind, "kind").value_or("");
    outcome.username = r.user.username;
    outcome.groups = r.user.groups;
    if (outcome.name.empty()) {
      const engine::Node md = engine::member(r.object ? r.object : r.old_object, "metadata");
      outcome.name = engine::string_at(md, "name").value_or("");
      if (outcome.name.empty()) outcome.name = std::string(engine::string_at(md, "generateName").value_or(""));
    }

    const engine::Config& config = *config_;
    const bool complete = state && state->complete();
    auto allow = [&](std::string decision) {
      outcome.decision = std::move(decision);
      return Answer{200, encode(r, Response{})};
    };

    // Subresources (status, scale, exec, ...) and CONNECT are not the objects the rules read.
    if (!r.sub_resource.empty() || r.operation == "CONNECT") return allow("skipped");

    if (endpoint == Endpoint::mutate) {
      if (r.operation != "CREATE" && r.operation != "UPDATE") return allow("skipped");
      engine::Object obj = to_object(r.object, r);
      if (!engine::mutation_applies(obj, config.webhook, r.operation == "CREATE")) return allow("skipped");
      engine::MutateOptions mo;
      mo.base = state;
      mo.complete = complete;
      mo.plan = mutation_plan_;
      mo.object = false;  // the answer is the patch
      mo.annotations = engine::AnnotationExemptions::admission;
      mo.user = &r.user;
      engine::MutateResult m = engine::mutate(obj, registry_, config, mo);
      for (const auto& d : m.diagnostics) outcome.rule_errors.emplace_back(rule_of(d.message), d.message);
      outcome.exempted = std::move(m.exempted);
      if (m.patch.empty()) return allow("allowed");
      Response response;
      std::string patch;
      patch.reserve(256);
      // What m.patch.dump() writes, without its serializer's overhead; a string that is not UTF-8 (a
      // config's or the state's !!binary in a fix) throws as dump() does: the failure mode decides.
      engine::append_json(patch, m.patch, engine::json::error_handler_t::strict);
      response.patch = base64_encode(patch);
      outcome.decision = "patched";
      for (const auto& rule : m.rules) {
        engine::Finding f;
        f.rule = rule;
        f.message = "fix applied";
        outcome.findings.push_back(std::move(f));
      }
      return Answer{200, encode(r, response)};
    }

    // Validation.
    std::vector<engine::Finding> findings;
    std::vector<engine::Diagnostic> diagnostics;
    auto evaluate = [&](engine::Node body) {
      engine::EvalOptions eo;
      eo.complete = complete;
      eo.base = state;
      eo.focus_on_added = true;
      eo.plan = plan_;
      eo.fixes = false;  // an answer to /validate carries no patch
      eo.annotations = engine::AnnotationExemptions::admission;
      eo.user = &r.user;
      engine::Evaluation eval(registry_, config, eo);
      eval.add(to_object(body, r));
      return eval.finish();
    };

    if (r.operation == "DELETE") {
      // Deleting an object can break an aggregate (the third-to-last PriorityClass): report the
      // cross-object findings that exist without the object and did not exist with it, as warnings.
      if (!r.old_object || !state) return allow("skipped");
      engine::Object gone = to_object(r.old_object, r);
      if (!gone.is_kubernetes_object() || !state->keeps(gone.gvk.group, gone.gvk.kind)) return allow("skipped");
      auto planned = delete_plans_.find(engine::KindLess::View{gone.gvk.group, gone.gvk.kind});
      auto aggregate = [&](std::shared_ptr<const engine::Inventory> inv) {
        if (planned == delete_plans_.end()) return engine::Result{};  // no rule reads the kind
        engine::EvalOptions eo;
        eo.complete = inv->complete();
        eo.base = std::move(inv);
        eo.plan = planned->second;  // the rules that read the kind
        eo.fixes = false;
        eo.annotations = engine::AnnotationExemptions::admission;
        eo.user = &r.user;
        engine::Evaluation eval(registry_, config, eo);
        return eval.finish();
      };
      auto before = aggregate(state);
      auto layer = std::make_shared<engine::Inventory>(engine::Inventory::layered(state));
      layer->remove(gone.gvk.group, gone.gvk.kind, engine::effective_namespace(gone, config), gone.name);
      auto after = aggregate(layer);
      std::set<std::pair<std::string, std::string>> had;
      for (const auto& f : before.findings) had.insert({f.rule, f.message});
      for (auto& f : after.findings)
        if (!f.suppressed && !had.count({f.rule, f.message}) && f.severity != Severity::info) {
          f.severity = Severity::warning;  // a DELETE is never denied
          findings.push_back(std::move(f));
        }
      for (auto& d : after.diagnostics) diagnostics.push_back(std::move(d));
    } else {
      engine::Result now = evaluate(r.object);
      findings = std::move(now.findings);
      diagnostics = std::move(now.diagnostics);
      if (r.operation == "UPDATE" && config.webhook.new_findings_only) {
        engine::Result before = evaluate(r.old_object);
        std::set<FindingKey> had;
        for (const auto& f : before.findings) had.insert(key_of(f));
        std::erase_if(findings, [&](const engine::Finding& f) { return had.count(key_of(f)) > 0; });
      }
    }
    // Suppressed: by the config's exclusions (the operator's), or exempted by an annotation the
    // config honours here, which the outcome lists for the log and the metrics.
    for (const auto& f : findings)
      if (f.suppressed && f.annotation == engine::Finding::Annotation::exempted)
        outcome.exempted.push_back({f.rule, f.pointer, f.suppression});
    std::erase_if(findings, [](const engine::Finding& f) { return f.suppressed; });

    // Rules that failed: the configured failure mode decides.
    bool rule_failed = false;
    for (const auto& d : diagnostics)
      if (d.message.rfind("internal error in rule ", 0) == 0) {
        rule_failed = true;
        outcome.rule_errors.emplace_back(rule_of(d.message), d.message);
      }

    std::vector<std::string> errors, warnings;
    for (const auto& f : findings) {
      const engine::Mode mode = f.mode;
      if (mode == engine::Mode::audit || f.severity == Severity::info) continue;
      std::string text = admission_text(f, limits_.max_warning_chars);
      if (f.severity == Severity::error && mode == engine::Mode::enforce) errors.push_back(std::move(text));
      else warnings.push_back(std::move(text));
    }
    outcome.findings = std::move(findings);
    // A cluster state that should be whole but is not (a broken watch): the checks that need the
    // whole cluster were skipped, and the answer says so rather than pass in silence.
    if (endpoint == Endpoint::validate && state && !state->complete() && !state->note().empty())
      warnings.insert(warnings.begin(), truncate("gpuguard: " + state->note(), limits_.max_warning_chars));

    Response response;
    if (rule_failed && !config.webhook.fail_open) {
      std::string why = truncate("gpuguard could not evaluate every rule (failureMode: deny): " + outcome.rule_errors.front().second,
                                 limits_.max_warning_chars);
      // A DELETE is never denied: the failure is a warning there.
      if (r.operation == "DELETE") warnings.insert(warnings.begin(), std::move(why));
      else errors.insert(errors.begin(), std::move(why));
    }
    if (!errors.empty()) {
      response.allowed = false;
      response.code = 403;
      response.reason = "Forbidden";
      response.message = denial_message(errors, limits_.max_message_chars);
      outcome.decision = "denied";
    } else {
      outcome.decision = warnings.empty() ? "allowed" : "warned";
    }
    size_t total = 0;
    for (size_t i = 0; i < warnings.size(); ++i) {
      std::string w = std::move(warnings[i]);  // each within max_warning_chars
      const size_t rest = warnings.size() - i;
      const bool last_slot = response.warnings.size() + 1 == limits_.max_warnings;
      if ((last_slot && rest > 1) || total + w.size() > limits_.max_warnings_total) {
        response.warnings.push_back("... and " + std::to_string(rest) + " more gpuguard warnings (see `gpuguard lint`)");
        break;
      }
      total += w.size();
      response.warnings.push_back(std::move(w));
    }
    return Answer{200, encode(r, response)};
  } catch (const std::exception& e) {
    return failed(e.what());
  } catch (...) {
    return failed("unknown exception");
  }
}

std::vector<std::string> Outcome::exempted_rules() const {
  std::set<std::string> rules;
  for (const auto& e : exempted) rules.insert(e.rule);
  return {rules.begin(), rules.end()};
}

std::string admission_text(const engine::Finding& f, size_t max) {
  std::string out = "[" + f.rule + "] ";
  const std::string path = field_path(f.pointer);
  std::string note;
  if (!f.suppressed && f.annotation == engine::Finding::Annotation::not_honoured && !f.suppression.empty())
    note = " (" + f.suppression + ")";
  const size_t path_part = path.empty() ? 0 : path.size() + 2;
  if (out.size() + path_part + f.message.size() + note.size() <= max) {
    if (!path.empty()) out.append(path).append(": ");
    return out.append(f.message).append(note);
  }
  // The id, the note and the pointer to `gpuguard explain` stay whole; the path and the message
  // share the rest, the path at most half of it when the message needs more.
  const std::string more = "; see gpuguard explain " + f.rule;
  constexpr size_t kLeast = 48;  // for the path and the message together
  if (out.size() + note.size() + more.size() + kLeast > max) note.clear();
  if (out.size() + more.size() + kLeast > max) return truncate(out + path + ": " + f.message, max);  // a max too small
  const size_t rest = max - out.size() - note.size() - more.size();
  if (!path.empty()) {
    if (path_part > rest / 2 && path_part + f.message.size() > rest) {
      out.append(path, 0, utf8_floor(path, rest / 2 - 2 - kEllipsis.size()));
      out += kEllipsis;
    } else {
      out += path;
    }
    out += ": ";
  }
  const std::string message = cut_text(f.message, max - out.size() - note.size() - more.size());
  out.append(message).append(note);
  if (message.size() < f.message.size()) out += more;
  return out;
}

std::string denial_message(const std::vector<std::string>& errors, size_t max) {
  std::string out = "gpuguard: " + std::to_string(errors.size()) + (errors.size() == 1 ? " error: " : " errors: ");
  for (size_t i = 0; i < errors.size(); ++i) {
    const std::string sep = i ? "; " : "";
    const size_t left = errors.size() - i - 1;
    // Room for this error, and for saying how many more there are if any.
    const std::string rest_note = "; and " + std::to_string(errors.size() - i) + " more (gpuguard lint shows them)";
    const size_t reserve = left ? rest_note.size() : 0;
    if (out.size() + sep.size() + errors[i].size() + reserve > max) {
      if (i == 0) return truncate(out + errors[i], max);  // not even one fits: a max smaller than an error
      return out + rest_note;
    }
    out += sep;
    out += errors[i];
  }
  return out;
}

}  // namespace gpuguard::webhook
