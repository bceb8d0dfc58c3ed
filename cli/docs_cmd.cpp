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
    exit_code = ok ? kExitOk : kExitUsage;
  });
}

}  // namespace gpuguard::cli
