#include "tests/fuzz/targets.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "engine/config.h"
#include "engine/evaluate.h"
#include "engine/json_parse.h"
#include "engine/node.h"
#include "engine/load.h"
#include "engine/mig.h"
#include "engine/mutate.h"
#include "engine/quantity.h"
#include "engine/yaml_load.h"
#include "rules/data/mig_catalog.h"
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

// A config that gives every fix what it needs in the namespace "default" (a PriorityClass, a GPU
// product, a Kueue queue), so more fixes apply and meet.
const engine::Config& fix_config() {
  static const engine::Config c = [] {
    auto loaded = engine::load_config(
        "rules:\n"
        "  gpu-priority-class-missing: {params: {defaults: {default: gpu-high}}}\n"
        "  gpu-product-affinity-missing: {params: {defaultProducts: {default: NVIDIA-H100-80GB-HBM3}}}\n"
        "  kueue-queue-name-missing: {params: {kueueNamespaces: [default], defaultQueues: {default: team-queue}}}\n",
        "fuzz.yaml", registry());
    if (!loaded) std::abort();
    return std::move(*loaded);
  }();
  return c;
}

// mutate() as it runs (a round after the first runs only the rules its fixes concern) against
// the reference that runs every fixable rule in every round: the same result, or a trap.
void mutate_both(const engine::Object& obj) {
  for (const engine::Config* config : {&default_config(), &fix_config()}) {
    engine::MutateOptions every;
    every.rerun_all = true;
    const engine::MutateResult fast = engine::mutate(obj, registry(), *config, {});
    const engine::MutateResult reference = engine::mutate(obj, registry(), *config, every);
    bool same = engine::identical(fast.object, reference.object) && engine::identical(fast.patch, reference.patch) &&
                fast.rules == reference.rules && fast.diagnostics.size() == reference.diagnostics.size();
    for (size_t i = 0; same && i < fast.diagnostics.size(); ++i) same = fast.diagnostics[i].message == reference.diagnostics[i].message;
    if (!same) {
      std::fprintf(stderr, "mutate differs from its every-rule reference:\n%s\n--- reference:\n%s\n", fast.patch.dump().c_str(),
                   reference.patch.dump().c_str());
      std::abort();
    }
  }
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

// Loads the input with engine/yaml_block.h's reader and without it (libyaml alone): the
// documents, their positions and the diagnostics must be the same.
int yaml(const uint8_t* data, size_t size) {
  std::string loads[2];
  for (const bool block_reader : {true, false}) {
    engine::YamlLimits limits = small_limits().yaml;
    limits.block_reader = block_reader;
    std::vector<engine::Diagnostic> diags;
    std::string& out = loads[block_reader ? 0 : 1];
    const uint32_t used = engine::load_yaml_stream(text_of(data, size), "fuzz.yaml", limits,
                                                   [&](engine::YamlDocument&& d) {
                                                     (void)d.positions->resolve("/metadata/name");
                                                     out += "document " + std::to_string(d.index) + ": ";
                                                     d.positions->describe(d.positions->root(), out);
                                                     out += "\n";
                                                   },
                                                   diags);
    for (const auto& d : diags)
      out += "diagnostic " + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + " " + d.message + "\n";
    out += "indices " + std::to_string(used) + "\n";
  }
  if (loads[0] != loads[1]) {
    std::fprintf(stderr, "the block reader's load differs from libyaml's:\n%s\n--- libyaml:\n%s\n", loads[0].c_str(), loads[1].c_str());
    std::abort();
  }
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
  for (const auto& o : kept) mutate_both(o);
  return 0;
}

int json(const uint8_t* data, size_t size) {
  engine::json body = engine::parse_json(text_of(data, size));
  // nlohmann's lexer takes a NUL byte for the end of its input ("7\0garbage" reads as 7); the
  // readers refuse any text with one (engine/json_parse.h), as Go's decoder does.
  const bool nul = text_of(data, size).find('\0') != std::string_view::npos;
  // The fast reader against nlohmann's: the same value with the same types, or both refuse.
  const engine::json expected = nul ? engine::json(engine::json::value_t::discarded)
                                    : engine::json::parse(text_of(data, size), nullptr, false);
  if (!engine::identical(body, expected)) __builtin_trap();
  // The document reader (the webhook's) too: the document from_json makes of that value, in the
  // room json_node_bound reserves for it.
  std::shared_ptr<const engine::PositionIndex> doc;
  const auto read = engine::parse_json_document(text_of(data, size), 100000, doc);
  if (body.is_discarded() != (read == engine::JsonDocumentRead::invalid)) __builtin_trap();
  const size_t bound = engine::json_node_bound(text_of(data, size));
  if (doc && doc->size() > bound) __builtin_trap();
  if (std::shared_ptr<const engine::PositionIndex> none;
      doc && engine::parse_json_document(text_of(data, size), 100000, none, bound - 1) != engine::JsonDocumentRead::too_large)
    __builtin_trap();
  // The JSON stream reader (lint's, for .json files): one value as nlohmann reads it, with no
  // diagnostic; a refused text refused, unless it is several values or none (nlohmann reads one).
  {
    std::vector<engine::YamlDocument> docs;
    std::vector<engine::Diagnostic> diags;
    const uint32_t values = engine::load_json_stream(text_of(data, size), "fuzz.json", engine::YamlLimits{},
                                                     [&](engine::YamlDocument&& d) { docs.push_back(std::move(d)); }, diags,
                                                     0, /*yaml_after_json=*/false);
    const bool too_deep = !diags.empty() && diags[0].message.find("nesting deeper") != std::string::npos;
    const bool refused = std::any_of(diags.begin(), diags.end(),
                                     [](const engine::Diagnostic& d) { return !d.message.starts_with("duplicate mapping key"); });
    if (body.is_discarded()) {
      if (!refused && values == 1) __builtin_trap();
    } else if (!too_deep) {
      if (refused || values != 1 || docs.size() != (body.is_null() ? 0u : 1u)) __builtin_trap();
      if (!docs.empty() && !engine::identical(docs[0].body(), engine::PositionIndex::from_json(body)->json_of(0))) __builtin_trap();
    }
    // As lint reads it (what is not JSON read as YAML from there): no crash, no leak.
    diags.clear();
    (void)engine::load_json_stream(text_of(data, size), "fuzz.json", engine::YamlLimits{}, [](engine::YamlDocument&&) {}, diags);
  }
  if (body.is_discarded()) return 0;
  const auto reference = engine::PositionIndex::from_json(body);
  if (!doc || !engine::identical(doc->json_of(doc->root()), reference->json_of(0)) || doc->size() != reference->size() ||
      !engine::same_value(engine::Node(doc.get(), doc->root()), engine::Node(reference.get(), 0)))
    __builtin_trap();
  engine::Object obj = engine::object_from_json(body);
  engine::Evaluation eval(registry(), default_config(), {});
  eval.add(engine::Object(obj));
  (void)eval.finish();
  mutate_both(obj);
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

namespace {

// Whether instances (profile, start) are a valid placement on `gpu`: each at an allowed start,
// memory ranges inside the GPU and disjoint, compute within the GPU's slices, each profile within
// its maximum, at most one media-engine instance.
bool valid_placement(const engine::MigGpu& gpu, const std::vector<std::pair<const engine::MigProfile*, int>>& placed) {
  int compute = 0, media = 0;
  std::vector<int> owner(static_cast<size_t>(std::max(0, gpu.memory_slices)), -1);
  std::vector<std::pair<const engine::MigProfile*, int>> per_profile;
  for (size_t i = 0; i < placed.size(); ++i) {
    const auto& [p, start] = placed[i];
    if (std::find(p->starts.begin(), p->starts.end(), start) == p->starts.end()) return false;
    if (start < 0 || p->memory < 0 || start + p->memory > gpu.memory_slices) return false;
    for (int s = start; s < start + p->memory; ++s) {
      if (owner[static_cast<size_t>(s)] != -1) return false;
      owner[static_cast<size_t>(s)] = static_cast<int>(i);
    }
    compute += p->compute;
    if (p->media()) ++media;
  }
  if (compute > gpu.compute_slices || media > 1) return false;
  for (const auto& [p, start] : placed) {
    int n = 0;
    for (const auto& [q, s] : placed) n += q == p ? 1 : 0;
    if (n > p->max) return false;
  }
  return true;
}

// Every assignment of starts to the instances (small requests only).
bool exists_placement(const engine::MigGpu& gpu, const std::vector<const engine::MigProfile*>& instances, size_t i,
                      std::vector<std::pair<const engine::MigProfile*, int>>& placed) {
  if (i == instances.size()) return valid_placement(gpu, placed);
  for (int s : instances[i]->starts) {
    placed.emplace_back(instances[i], s);
    if (exists_placement(gpu, instances, i + 1, placed)) return true;
    placed.pop_back();
  }
  return false;
}

void check_fit(const engine::MigGpu& gpu, const std::vector<engine::MigRequest>& request) {
  const engine::MigFit fit = engine::mig_fit(gpu, request);
  std::vector<const engine::MigProfile*> instances;
  bool plain = true;  // counts 1..8 only: the oracle applies
  for (const auto& r : request) {
    if (r.count < 1 || r.count > 8) plain = false;
    else for (int64_t k = 0; k < r.count; ++k) instances.push_back(r.profile);
  }
  if (!fit.ok) {
    if (fit.why.empty()) __builtin_trap();  // a refusal always says why
    std::vector<std::pair<const engine::MigProfile*, int>> placed;
    if (plain && instances.size() <= 4 && exists_placement(gpu, instances, 0, placed)) __builtin_trap();  // missed a fit
    return;
  }
  if (!plain) return;
  if (fit.starts.size() != instances.size()) __builtin_trap();
  std::vector<std::pair<const engine::MigProfile*, int>> placed;
  for (size_t i = 0; i < instances.size(); ++i) placed.emplace_back(instances[i], fit.starts[i]);
  if (!valid_placement(gpu, placed)) __builtin_trap();  // the placement it claims is not valid
}

}  // namespace

int mig(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  if (data[0] & 1) {  // a catalog in the config's format, then every profile once
    engine::json list = engine::json::parse(text_of(data + 1, size - 1), nullptr, false);
    if (list.is_discarded()) return 0;
    std::vector<std::pair<std::string, std::string>> problems;
    for (const auto& gpu : engine::parse_mig_gpus(list, problems)) {
      std::vector<engine::MigRequest> request;
      for (const auto& p : gpu.profiles) request.push_back({&p, 1});
      if (request.size() > 8) request.resize(8);
      check_fit(gpu, request);
      (void)engine::to_json(gpu);
    }
    return 0;
  }
  // A built-in GPU and up to 12 (profile, count) pairs; counts 1..8 mostly, odd ones sometimes.
  const auto& gpus = rules::mig::builtin_gpus();
  if (gpus.empty()) return 0;
  const engine::MigGpu& gpu = gpus[data[1] % gpus.size()];
  if (gpu.profiles.empty()) return 0;
  std::vector<engine::MigRequest> request;
  for (size_t i = 2; i + 1 < size && request.size() < 12; i += 2) {
    const uint8_t c = data[i + 1];
    int64_t count = c < 200 ? 1 + c % 8 : c < 220 ? 0 : c < 240 ? -static_cast<int64_t>(c) : int64_t{1} << (c - 200);
    request.push_back({&gpu.profiles[data[i] % gpu.profiles.size()], count});
  }
  check_fit(gpu, request);
  return 0;
}

const std::vector<Named>& targets() {
  static const std::vector<Named> all = {
      {"yaml", yaml}, {"lint", lint}, {"json", json}, {"admission", admission}, {"config", config}, {"quantity", quantity}, {"mig", mig},
  };
  return all;
}

}  // namespace gpuguard::fuzz
