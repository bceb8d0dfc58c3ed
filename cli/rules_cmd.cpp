#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "engine/config.h"
#include "rules/docs.h"

namespace gpuguard::cli {

void add_rules_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto* sub = app.add_subcommand("rules", "List the rules (--format markdown writes rules/README.md)");
  auto format = std::make_shared<std::string>("text");
  sub->add_option("--format", *format, "text, markdown or json")->check(CLI::IsMember({"text", "markdown", "json"}));
  sub->callback([&registry, &exit_code, format] {
    if (*format == "markdown") {
      std::cout << rules::rules_index_markdown(registry);
    } else if (*format == "json") {
      engine::json out = engine::json::array();
      for (const auto* r : registry.rules()) {
        const auto& i = r->info();
        engine::json params = engine::json::array();
        for (const auto& p : i.params)
          params.push_back({{"name", p.name}, {"type", std::string(engine::to_string(p.type))}, {"default", p.default_value},
                            {"description", p.description}});
        out.push_back({{"id", i.id}, {"severity", std::string(engine::to_string(i.severity))}, {"category", i.category},
                       {"seed", i.seed}, {"summary", i.summary}, {"fix", i.has_fix}, {"complete", i.needs_complete},
                       {"params", params}, {"doc", rules::rule_doc_path(i)}});
      }
      std::cout << out.dump(2) << "\n";
    } else {
      size_t width = 0;
      for (const auto* r : registry.rules()) width = std::max(width, r->info().id.size());
      for (const auto* r : registry.rules()) {
        const auto& i = r->info();
        std::string sev(engine::to_string(i.severity));
        std::cout << i.id << std::string(width + 2 - i.id.size(), ' ') << sev << std::string(9 - sev.size(), ' ')
                  << i.category << std::string(i.category.size() < 11 ? 11 - i.category.size() : 1, ' ') << i.summary
                  << (i.has_fix ? " [fix]" : "") << (i.needs_complete ? " [complete]" : "") << "\n";
      }
    }
    exit_code = kExitOk;
  });
}

void add_explain_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto* sub = app.add_subcommand("explain", "Explain a rule: why it exists, its parameters, how to fix what it finds");
  auto id = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("text");
  sub->add_option("rule", *id, "rule id")->required();
  sub->add_option("--format", *format, "text or markdown")->check(CLI::IsMember({"text", "markdown"}));
  sub->callback([&registry, &exit_code, id, format] {
    const auto* rule = registry.find(*id);
    if (!rule) {
      std::cerr << "gpuguard: unknown rule \"" << *id << "\" (see `gpuguard rules`)\n";
      exit_code = kExitUsage;
      return;
    }
    std::cout << (*format == "markdown" ? rules::rule_page_markdown(*rule) : rules::rule_explain_text(*rule));
    exit_code = kExitOk;
  });
}

void add_schema_command(CLI::App& app, const engine::Registry& registry, int& exit_code) {
  auto* sub = app.add_subcommand("schema", "Print a JSON Schema: config (.gpuguard.yaml)");
  auto which = std::make_shared<std::string>("config");
  sub->add_option("which", *which, "config")->check(CLI::IsMember({"config"}));
  sub->callback([&registry, &exit_code, which] {
    std::cout << engine::config_schema(registry).dump(2) << "\n";
    exit_code = kExitOk;
  });
}

}  // namespace gpuguard::cli
