#include "tests/fuzz/targets.h"

#include <memory>
#include <string>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "engine/load.h"
#include "engine/mutate.h"
#include "engine/quantity.h"
#include "engine/yaml_load.h"
#include "rules/registry.h"
#include "webhook/admission.h"

namespace gpuguard::fuzz {

namespace {

const engine::Registry& registry() {
  static const engine::Registry r = rules::make_registry();
  return r;
}

const engine::Config& default_config() {
  static const engine::Config c = engine::default_config(registry());
  return c;
}

std::string_view text_of(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// Limits small enough that one input stays fast, as the real ones keep real inputs bounded.
engine::LoadOptions small_limits() {
  engine::LoadOptions o;
  o.yaml.max_scalar_bytes = 64u << 10;
  o.yaml.max_document_bytes = 1u << 20;
  o.yaml.alias_node_budget = 10'000;
  return o;
}

}  // namespace

int yaml(const uint8_t* data, size_t size) {
  std::vector<engine::Diagnostic> diags;
  size_t documents = 0;
  engine::load_yaml_stream(text_of(data, size), "fuzz.yaml", small_limits().yaml,
                           [&](engine::YamlDocument&& d) {
                             ++documents;
                             (void)d.positions->resolve("/metadata/name");
                           },
                           diags);
  return 0;
}

int lint(const uint8_t* data, size_t size) {
  std::vector<engine::Diagnostic> diags;
  std::vector<engine::Object> kept;
  engine::EvalOptions eo;
  eo.complete = true;
  engine::Evaluation eval(registry(), default_config(), eo);
  engine::load_text(text_of(data, size), std::make_shared<engine::SourceFile>(engine::SourceFile{"fuzz.yaml", 0}), small_limits(),
                    [&](engine::Object&& o) {
                      if (kept.size() < 4) kept.push_back(o);
                      eval.add(std::move(o));
                    },
                    diags);
  eval.add_diagnostics(std::move(diags));
  engine::Result r = eval.finish();
  for (const auto& f : r.findings) (void)f.pos;
  for (const auto& o : kept) (void)engine::mutate(o, registry(), default_config(), {});
  return 0;
}

int json(const uint8_t* data, size_t size) {
  engine::json body = engine::json::parse(text_of(data, size), nullptr, false);
  if (body.is_discarded()) return 0;
  engine::Object obj = engine::object_from_json(std::move(body));
  engine::Evaluation eval(registry(), default_config(), {});
  eval.add(obj);
  (void)eval.finish();
  (void)engine::mutate(obj, registry(), default_config(), {});
  return 0;
}

int admission(const uint8_t* data, size_t size) {
  static const webhook::Admission handler(registry(), std::make_shared<const engine::Config>(default_config()));
  static const std::shared_ptr<const engine::Inventory> state = [] {
    auto inv = std::make_shared<engine::Inventory>(engine::kinds_read(registry(), default_config()));
    inv->set_complete(true);
    return std::shared_ptr<const engine::Inventory>(inv);
  }();
  for (auto endpoint : {webhook::Endpoint::validate, webhook::Endpoint::mutate}) {
    webhook::Outcome outcome;
    webhook::Answer a = handler.handle(endpoint, text_of(data, size), "application/json", state, outcome);
    if (a.status != 200 && a.status != 400) __builtin_trap();  // the handler's contract
    if (engine::json::parse(a.body, nullptr, false).is_discarded()) __builtin_trap();
  }
  return 0;
}

int config(const uint8_t* data, size_t size) {
  auto c = engine::load_config(text_of(data, size), "fuzz.gpuguard.yaml", registry());
  if (c) (void)engine::kinds_read(registry(), *c);
  return 0;
}

int quantity(const uint8_t* data, size_t size) {
  auto q = engine::Quantity::parse(text_of(data, size));
  if (!q) return 0;
  const std::string text = q->to_string();
  auto again = engine::Quantity::parse(text);
  if (!again || *again != *q) __builtin_trap();  // the canonical text parses back to the same value
  (void)(*q + *q);
  (void)(*q * 3);
  (void)q->to_int64();
  return 0;
}

const std::vector<Named>& targets() {
  static const std::vector<Named> all = {
      {"yaml", yaml}, {"lint", lint}, {"json", json}, {"admission", admission}, {"config", config}, {"quantity", quantity},
  };
  return all;
}

}  // namespace gpuguard::fuzz
