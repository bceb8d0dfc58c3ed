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
  outcome.error = why;
  return Answer{400, json{{"error", std::move(why)}}.dump()};
}

struct Review {
  std::string api_version;  // as asked
  const json* request = nullptr;
  std::string uid;
  std::string operation;
  std::string sub_resource;
  std::string namespace_;
  bool dry_run = false;
  const json* object = nullptr;
  const json* old_object = nullptr;
  json request_kind;
};

// Checks the shape of the review; an error message when it is not an AdmissionReview we can read.
std::optional<std::string> decode(const json& doc, Review& r) {
  if (!doc.is_object()) return "the body is not a JSON object";
  auto api = engine::string_at(doc, "apiVersion");
  if (!api) return "apiVersion is missing or not a string";
  if (*api != "admission.k8s.io/v1" && *api != "admission.k8s.io/v1beta1")
    return "apiVersion must be admission.k8s.io/v1 or admission.k8s.io/v1beta1, got \"" + std::string(*api) + "\"";
  r.api_version = *api;
  if (engine::string_at(doc, "kind") != std::optional<std::string_view>("AdmissionReview")) return "kind must be AdmissionReview";
  r.request = engine::member(doc, "request");
  if (!r.request || !r.request->is_object()) return "request is missing or not an object";
  const json& req = *r.request;
  auto uid = engine::string_at(req, "uid");
  if (!uid || uid->empty()) return "request.uid is missing, empty or not a string";
  r.uid = *uid;
  auto op = engine::string_at(req, "operation");
  if (!op) return "request.operation is missing or not a string";
  if (*op != "CREATE" && *op != "UPDATE" && *op != "DELETE" && *op != "CONNECT")
    return "request.operation must be CREATE, UPDATE, DELETE or CONNECT, got \"" + std::string(*op) + "\"";
  r.operation = *op;
  for (const char* key : {"subResource", "namespace", "name", "requestSubResource"}) {
    const json* v = engine::member(req, key);
    if (v && !v->is_string() && !v->is_null()) return std::string("request.") + key + " must be a string";
  }
  r.sub_resource = engine::string_at(req, "subResource").value_or("");
  r.namespace_ = engine::string_at(req, "namespace").value_or("");
  if (const json* dr = engine::member(req, "dryRun"); dr && !dr->is_null()) {
    if (!dr->is_boolean()) return "request.dryRun must be a boolean";
    r.dry_run = dr->get<bool>();
  }
  for (const char* key : {"kind", "resource", "requestKind", "requestResource", "userInfo", "options"}) {
    const json* v = engine::member(req, key);
    if (v && !v->is_object() && !v->is_null()) return std::string("request.") + key + " must be an object";
  }
  if (const json* k = engine::member(req, "kind")) r.request_kind = *k;
  for (const char* key : {"object", "oldObject"}) {
    const json* v = engine::member(req, key);
    if (v && !v->is_object() && !v->is_null()) return std::string("request.") + key + " must be an object or null";
  }
  r.object = engine::member(req, "object");
  if (r.object && r.object->is_null()) r.object = nullptr;
  r.old_object = engine::member(req, "oldObject");
  if (r.old_object && r.old_object->is_null()) r.old_object = nullptr;
  if ((r.operation == "CREATE" || r.operation == "UPDATE") && r.sub_resource.empty() && !r.object)
    return "request.object is missing for " + r.operation;
  if (r.operation == "UPDATE" && r.sub_resource.empty() && !r.old_object) return "request.oldObject is missing for UPDATE";
  return std::nullopt;
}

// Moves an object out of the parsed review, which is read once: the review is the handler's own
// non-const document (decode only hands out const pointers into it), so no copy of the tree.
json take(const json* in_review) { return std::move(*const_cast<json*>(in_review)); }

// An admitted object as the engine sees it.
engine::Object to_object(json body, const Review& r) {
  engine::Object o = engine::object_from_json(std::move(body));
  if (!o.is_kubernetes_object()) {
    // No TypeMeta in the object: take it from request.kind.
    auto g = engine::string_at(r.request_kind, "group").value_or("");
    auto v = engine::string_at(r.request_kind, "version").value_or("");
    auto k = engine::string_at(r.request_kind, "kind").value_or("");
    if (!k.empty()) {
      o.api_version = g.empty() ? std::string(v) : std::string(g) + "/" + std::string(v);
      o.gvk = engine::parse_gvk(o.api_version, k);
    }
  }
  if (o.namespace_.empty() && !o.cluster_scoped()) o.namespace_ = r.namespace_;
  return o;
}

void append_json(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.items()) {
        if (!first) out += ',';
        first = false;
        engine::append_json_string(out, key);
        out += ':';
        append_json(out, item);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        append_json(out, v[i]);
      }
      out += ']';
      return;
    }
    case json::value_t::string: engine::append_json_string(out, v.get_ref<const std::string&>()); return;
    case json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    default: out += v.dump(-1, ' ', false, json::error_handler_t::replace); return;  // numbers, null
  }
}

// The body of an answer: what json::dump(-1, ' ', false, replace) gives, faster.
std::string encode(const json& v) {
  std::string out;
  out.reserve(2048);  // a denial or a few warnings, without regrowing
  append_json(out, v);
  return out;
}

json response_envelope(const Review& r, json response) {
  response["uid"] = r.uid;
  return json{{"apiVersion", r.api_version}, {"kind", "AdmissionReview"}, {"response", std::move(response)}};
}

std::string finding_line(const engine::Finding& f) {
  std::string path = field_path(f.pointer);
  return (path.empty() ? std::string() : path + ": ") + f.message + " [" + f.rule + "]";
}

std::string truncate(std::string s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max > 3 ? max - 3 : 0;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
  s.resize(cut);
  return s + "...";
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
  auto failed = [&](const std::string& what) -> Answer {
    if (!decoded) return invalid(outcome, "internal error: " + what);
    outcome.rule_errors.emplace_back("unknown", what);
    bool allowed = config_->webhook.fail_open;
    outcome.decision = allowed ? "allowed" : "denied";
    json response = {{"allowed", allowed}};
    if (!allowed) response["status"] = {{"code", 500}, {"reason", "InternalError"}, {"message", "gpuguard: internal error: " + what}};
    try {
      return Answer{200, encode(response_envelope(r, std::move(response)))};
    } catch (...) {
      return Answer{500, "{\"error\":\"internal error\"}"};
    }
  };
  try {
    if (!json_content_type(content_type))
      return invalid(outcome, "Content-Type must be application/json, got \"" + std::string(content_type) + "\"");
    if (body.size() > limits_.max_body_bytes)
      return invalid(outcome, "the body is over the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
    json doc;
    if (!engine::parse_json_within(body, limits_.max_json_depth, doc))
      return invalid(outcome, "the body nests deeper than " + std::to_string(limits_.max_json_depth) + " levels");
    if (doc.is_discarded()) return invalid(outcome, "the body is not valid JSON");
    struct Dispose {
      json& doc;
      ~Dispose() { engine::dispose(doc); }
    } const dispose_doc{doc};  // whatever the answer
    if (auto err = decode(doc, r)) return invalid(outcome, *err);
    decoded = true;
    outcome.uid = r.uid;
    outcome.operation = r.operation;
    outcome.dry_run = r.dry_run;
    outcome.namespace_ = r.namespace_;
    outcome.name = engine::string_at(*r.request, "name").value_or("");
    outcome.kind = engine::string_at(r.request_kind, "kind").value_or("");
    if (outcome.name.empty()) {
      const json* obj = r.object ? r.object : r.old_object;
      if (const json* md = obj ? engine::member(*obj, "metadata") : nullptr) {
        outcome.name = engine::string_at(*md, "name").value_or("");
        if (outcome.name.empty()) outcome.name = std::string(engine::string_at(*md, "generateName").value_or(""));
      }
    }

    const engine::Config& config = *config_;
    const bool complete = state && state->complete();
    auto allow = [&](std::string decision) {
      outcome.decision = std::move(decision);
      return Answer{200, encode(response_envelope(r, json{{"allowed", true}}))};
    };

    // Subresources (status, scale, exec, ...) and CONNECT are not the objects the rules read.
    if (!r.sub_resource.empty() || r.operation == "CONNECT") return allow("skipped");

    if (endpoint == Endpoint::mutate) {
      if (r.operation != "CREATE" && r.operation != "UPDATE") return allow("skipped");
      engine::Object obj = to_object(take(r.object), r);
      if (!engine::mutation_applies(obj, config.webhook, r.operation == "CREATE")) return allow("skipped");
      engine::MutateOptions mo;
      mo.base = state;
      mo.complete = complete;
      mo.plan = mutation_plan_;
      engine::MutateResult m = engine::mutate(obj, registry_, config, mo);
      for (const auto& d : m.diagnostics) outcome.rule_errors.emplace_back(rule_of(d.message), d.message);
      if (m.patch.empty()) return allow("allowed");
      json response = {{"allowed", true}, {"patchType", "JSONPatch"}, {"patch", base64_encode(m.patch.dump())}};
      outcome.decision = "patched";
      for (const auto& rule : m.rules) {
        engine::Finding f;
        f.rule = rule;
        f.message = "fix applied";
        outcome.findings.push_back(std::move(f));
      }
      return Answer{200, encode(response_envelope(r, std::move(response)))};
    }

    // Validation.
    std::vector<engine::Finding> findings;
    std::vector<engine::Diagnostic> diagnostics;
    auto evaluate = [&](json body) {
      engine::EvalOptions eo;
      eo.complete = complete;
      eo.base = state;
      eo.focus_on_added = true;
      eo.plan = plan_;
      eo.fixes = false;  // an answer to /validate carries no patch
      engine::Evaluation eval(registry_, config, eo);
      eval.add(to_object(std::move(body), r));
      return eval.finish();
    };

    if (r.operation == "DELETE") {
      // Deleting an object can break an aggregate (the third-to-last PriorityClass): report the
      // cross-object findings that exist without the object and did not exist with it, as warnings.
      if (!r.old_object || !state) return allow("skipped");
      engine::Object gone = to_object(*r.old_object, r);
      if (!gone.is_kubernetes_object() || !state->keeps(gone.gvk.group, gone.gvk.kind)) return allow("skipped");
      auto planned = delete_plans_.find(engine::KindLess::View{gone.gvk.group, gone.gvk.kind});
      auto aggregate = [&](std::shared_ptr<const engine::Inventory> inv) {
        if (planned == delete_plans_.end()) return engine::Result{};  // no rule reads the kind
        engine::EvalOptions eo;
        eo.complete = inv->complete();
        eo.base = std::move(inv);
        eo.plan = planned->second;  // the rules that read the kind
        eo.fixes = false;
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
      engine::Result now = evaluate(take(r.object));
      findings = std::move(now.findings);
      diagnostics = std::move(now.diagnostics);
      if (r.operation == "UPDATE" && config.webhook.new_findings_only) {
        engine::Result before = evaluate(take(r.old_object));
        std::set<FindingKey> had;
        for (const auto& f : before.findings) had.insert(key_of(f));
        std::erase_if(findings, [&](const engine::Finding& f) { return had.count(key_of(f)) > 0; });
      }
    }
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
      engine::Mode mode = config.rule(f.rule).mode;
      if (mode == engine::Mode::audit || f.severity == Severity::info) continue;
      if (f.severity == Severity::error && mode == engine::Mode::enforce) errors.push_back(finding_line(f));
      else warnings.push_back(finding_line(f));
    }
    outcome.findings = std::move(findings);
    // A cluster state that should be whole but is not (a broken watch): the checks that need the
    // whole cluster were skipped, and the answer says so rather than pass in silence.
    if (endpoint == Endpoint::validate && state && !state->complete() && !state->note().empty())
      warnings.insert(warnings.begin(), "gpuguard: " + state->note());

    json response = {{"allowed", true}};
    if (rule_failed && !config.webhook.fail_open) {
      errors.insert(errors.begin(), "gpuguard could not evaluate every rule (failureMode: deny): " + outcome.rule_errors.front().second);
    }
    if (!errors.empty()) {
      std::string msg = "gpuguard: " + std::to_string(errors.size()) + (errors.size() == 1 ? " error" : " errors") + ": ";
      for (size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
      response["allowed"] = false;
      response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", truncate(msg, limits_.max_message_chars)}};
      outcome.decision = "denied";
    } else {
      outcome.decision = warnings.empty() ? "allowed" : "warned";
    }
    if (!warnings.empty()) {
      json list = json::array();
      size_t total = 0;
      for (size_t i = 0; i < warnings.size(); ++i) {
        std::string w = truncate(warnings[i], limits_.max_warning_chars);
        size_t rest = warnings.size() - i;
        bool last_slot = list.size() + 1 == limits_.max_warnings;
        if ((last_slot && rest > 1) || total + w.size() > limits_.max_warnings_total) {
          list.push_back("... and " + std::to_string(rest) + " more gpuguard warnings (see `gpuguard lint`)");
          break;
        }
        total += w.size();
        list.push_back(std::move(w));
      }
      response["warnings"] = std::move(list);
    }
    return Answer{200, encode(response_envelope(r, std::move(response)))};
  } catch (const std::exception& e) {
    return failed(e.what());
  } catch (...) {
    return failed("unknown exception");
  }
}

}  // namespace gpuguard::webhook
