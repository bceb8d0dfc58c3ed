#include "rules/data/mig_catalog.h"

#include "engine/yaml_load.h"

namespace gpuguard::rules::data {
extern const std::string_view kMigGpusYaml;
}

namespace gpuguard::rules::mig {

using namespace engine;

namespace {

struct Builtin {
  std::vector<MigGpu> gpus;
  std::vector<std::pair<std::string, std::string>> problems;
};

const Builtin& builtin() {
  static const Builtin b = [] {
    Builtin out;
    std::vector<Diagnostic> diags;
    std::vector<YamlDocument> docs;
    load_yaml_stream(data::kMigGpusYaml, "rules/data/mig-gpus.yaml", YamlLimits{},
                     [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags);
    for (const auto& d : diags) out.problems.emplace_back("", d.message);
    const json doc = docs.size() == 1 ? docs[0].body() : json();
    if (!member(doc, "gpus")) {
      out.problems.emplace_back("", "expected one document with a `gpus` list");
      return out;
    }
    out.gpus = parse_mig_gpus(*member(doc, "gpus"), out.problems);
    for (auto& g : out.gpus) g.origin = "built-in";
    return out;
  }();
  return b;
}

}  // namespace

const std::vector<MigGpu>& builtin_gpus() { return builtin().gpus; }
const std::vector<std::pair<std::string, std::string>>& builtin_problems() { return builtin().problems; }

Catalog::Catalog(const RunSettings& settings) {
  if (settings.mig_gpus)
    for (const auto& g : *settings.mig_gpus) gpus_.push_back(&g);
  for (const auto& g : builtin_gpus()) gpus_.push_back(&g);
}

const MigGpu* Catalog::by_device_id(std::string_view id) const {
  for (const MigGpu* g : gpus_)
    if (g->has_device_id(id)) return g;
  return nullptr;
}

const MigGpu* Catalog::by_product(std::string_view product) const {
  std::string_view p = product;
  if (p.ends_with("-SHARED")) p.remove_suffix(7);
  if (size_t mig = p.find("-MIG-"); mig != std::string_view::npos) p = p.substr(0, mig);
  for (const MigGpu* g : gpus_)
    for (const auto& name : g->products)
      if (name == p) return g;
  return nullptr;
}

bool Catalog::known_profile(std::string_view name) const {
  for (const MigGpu* g : gpus_)
    if (g->profile(name)) return true;
  return false;
}

std::string catalog_markdown() {
  std::string out =
      "| GPU model | PCI IDs (`device-filter`) | GFD `nvidia.com/gpu.product` | slices (compute/memory) | profiles: compute/memory slices, start offsets, max |\n"
      "|---|---|---|---|---|\n";
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + ("`" + x + "`");
    return s.empty() ? std::string("—") : s;
  };
  for (const MigGpu& g : builtin_gpus()) {
    std::string profiles;
    for (const auto& p : g.profiles) {
      std::string starts;
      for (int s : p.starts) starts += (starts.empty() ? "" : ",") + std::to_string(s);
      profiles += (profiles.empty() ? "" : "; ") + ("`" + p.name + "` " + std::to_string(p.compute) + "c/" +
                                                    std::to_string(p.memory) + "m @{" + starts + "} ×" + std::to_string(p.max)) +
                  (p.inferred ? " **(inferred)**" : "");
    }
    out += "| " + g.name + (g.inferred ? " **(inferred)**" : "") + " | " + join(g.device_ids) + " | " + join(g.products) +
           " | " + std::to_string(g.compute_slices) + "/" + std::to_string(g.memory_slices) + " | " + profiles + " |\n";
  }
  out += "\nInferred entries (the facts call them DERIVED or UNVERIFIED):\n\n";
  for (const MigGpu& g : builtin_gpus())
    if (g.inferred || std::any_of(g.profiles.begin(), g.profiles.end(), [](const MigProfile& p) { return p.inferred; }))
      out += "- **" + g.name + "**: " + g.note + "\n";
  return out;
}

}  // namespace gpuguard::rules::mig
