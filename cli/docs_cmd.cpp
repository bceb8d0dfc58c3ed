// gpuguard docs: writes the generated documentation into a source tree.

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/config.h"
#include "rules/docs.h"

namespace gpuguard::cli {

namespace {

bool write(const std::filesystem::path& p, const std::string& text) {
  std::error_code ec;
  std::filesystem::create_directories(p.parent_path(), ec);
  std::ofstream out(p, std::ios::binary);
  out << text;
  if (!out) {
    std::cerr << "gpuguard docs: cannot write " << p.string() << "\n";
    return false;
  }
  return true;
}

}  // namespace

void add_docs_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto* sub = app.add_subcommand(
      "docs", "Write the generated docs under DIR: rules/README.md, rules/<area>/<rule>.md, schemas/config.schema.json");
  auto dir = std::make_shared<std::string>();
  sub->add_option("dir", *dir, "the source tree's root")->required();
  sub->callback([&registry, &exit_code, dir] {
    std::filesystem::path root(*dir);
    bool ok = write(root / "rules" / "README.md", rules::rules_index_markdown(registry));
    for (const auto* r : registry.rules()) ok = write(root / rules::rule_doc_path(r->info()), rules::rule_page_markdown(*r)) && ok;
    ok = write(root / "schemas" / "config.schema.json", engine::config_schema(registry).dump(2) + "\n") && ok;
    for (const auto& [path, text] : rules::chart_files(registry)) ok = write(root / path, text) && ok;
    exit_code = ok ? kExitOk : kExitUsage;
  });
}

void add_rbac_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto* sub = app.add_subcommand("rbac", "Print the ClusterRole the enabled rules need to read the cluster state (get, list, watch)");
  auto config_path = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>("gpuguard");
  sub->add_option("-c,--config", *config_path, "config file (which rules are enabled)");
  auto audit = std::make_shared<bool>(false);
  sub->add_option("--name", *name, "the ClusterRole's name");
  sub->add_flag("--audit", *audit, "the ClusterRole `gpuguard audit` needs instead (get and list of every kind the rules check or read)");
  sub->callback([&registry, &exit_code, config_path, name, audit] {
    engine::Config config = engine::default_config(registry);
    if (!config_path->empty()) {
      auto loaded = engine::load_config_file(*config_path, registry);
      if (!loaded) {
        for (const auto& d : loaded.error()) std::cerr << d.file << ":" << d.pos.line << ":" << d.pos.col << ": error: " << d.message << "\n";
        exit_code = kExitUsage;
        return;
      }
      config = std::move(*loaded);
    }
    std::cout << rules::cluster_role_yaml(registry, config, *name, *audit);
    exit_code = kExitOk;
  });
}

}  // namespace gpuguard::cli
