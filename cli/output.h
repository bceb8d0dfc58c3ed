#pragma once
// Reporters: the linter's findings and diagnostics as text or JSON.

#include <ostream>
#include <string_view>

#include "engine/evaluate.h"
#include "engine/registry.h"

namespace gpuguard::cli {

struct TextOptions {
  bool color = false;
  bool show_suppressed = false;
  size_t files = 0;
};

// `file:line:col: severity: message [rule-id]`, sorted, then a summary line.
void write_text(const engine::Result& result, const TextOptions& options, std::ostream& out);

// The stable JSON document of schemas/findings.schema.json.
void write_json(const engine::Result& result, size_t files, std::ostream& out);

// "file:line:col" (or "file", or "<cluster>") of a finding.
[[nodiscard]] std::string location(const engine::Finding& f);
[[nodiscard]] std::string location(const engine::Diagnostic& d);

}  // namespace gpuguard::cli
