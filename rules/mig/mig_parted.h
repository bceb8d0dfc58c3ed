#pragma once
// mig-parted configs wherever they are written (facts/nvidia.md §2): a standalone file (a document
// that is not a Kubernetes object and has `mig-configs`), the `config.yaml` key of a ConfigMap
// (what MIG Manager reads), or the GPU Operator's Helm values `migManager.config.data`. A config
// embedded in a string is parsed again; its positions map into the file (the line of the block
// scalar plus the line inside it), so findings point at the right line.
//
// Shared by the MIG rules and meant for reuse by other NVIDIA rules (e.g. checking
// `nvidia.com/mig.config` label values against the config names of the inventory).

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/node.h"
#include "engine/object.h"
#include "engine/positions.h"

namespace gpuguard::rules::mig {

// One entry of a named config: `{device-filter, devices, mig-enabled, mig-devices}`.
struct MigPartedEntry {
  std::string pointer;              // inside the config document: "/mig-configs/all-balanced/0"
  engine::Node body;                // the entry (a mapping) in the config document
  bool has_filter = false;          // a non-empty device-filter
  std::vector<std::string> filter;  // its IDs normalised ("0x233010DE"); "" for one that does not parse
  std::optional<bool> mig_enabled;
  // mig-devices as written: profile name and count (nullopt when the count is not an integer).
  struct Device {
    std::string profile;
    std::optional<int64_t> count;
  };
  std::vector<Device> mig_devices;
  [[nodiscard]] bool enabled() const { return mig_enabled.value_or(false); }
};

struct MigPartedConfig {
  std::string name;
  std::string pointer;  // "/mig-configs/<name>"
  std::vector<MigPartedEntry> entries;
};

class MigPartedDoc {
 public:
  // The config document: the object's own document for a standalone file, the re-parsed text's
  // (inner_positions, which this keeps) for an embedded config. Read while the object lives.
  engine::Node body;
  std::string key_pointer;            // "" for a standalone file, else "/data/config.yaml" or the Helm path
  std::string data_key;               // "config.yaml" (or another key holding a config)
  bool helm_values = false;
  // A YAML error in the embedded text, with its position in the file.
  std::optional<std::pair<engine::Pos, std::string>> parse_error;

  // Pointer for a finding: into the object for a standalone file, the data key for an embedded config.
  [[nodiscard]] std::string pointer(std::string_view inner) const;
  // Position of a node of the config in the file.
  [[nodiscard]] engine::Pos locate(std::string_view inner) const;
  // "mig-configs.all-balanced[0].mig-devices" (prefixed "config.yaml: " for an embedded config).
  [[nodiscard]] std::string where(std::string_view inner) const;
  // The named configs (those whose value is a list), entries read leniently; configs in name order,
  // an entry's mig-devices in profile order.
  [[nodiscard]] std::vector<MigPartedConfig> configs() const;

  const engine::Object* object = nullptr;
  std::shared_ptr<const engine::PositionIndex> inner_positions;  // embedded: the re-parsed text
  engine::Pos key_pos;   // position of the data key (embedded)
  uint32_t col_offset = 0;
  bool lines_mapped = false;
};

// Every mig-parted config in the object: parsed once per object (an embedded config is YAML in a
// string) and shared by every rule that asks (engine::DerivedViews).
[[nodiscard]] const std::vector<MigPartedDoc>& find_mig_parted(const engine::Object& obj);

// "all-balanced[0]" style path for messages from an inner pointer.
[[nodiscard]] std::string dotted(std::string_view pointer);

}  // namespace gpuguard::rules::mig
