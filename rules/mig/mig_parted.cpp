#include "rules/mig/mig_parted.h"

#include <algorithm>

#include "engine/mig.h"
#include "engine/yaml_load.h"

namespace gpuguard::rules::mig {

using namespace engine;

std::string dotted(std::string_view pointer) {
  std::string out;
  for (const auto& t : pointer_tokens(pointer)) {
    bool index = !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
    if (index) out += "[" + t + "]";
    else out += (out.empty() ? "" : ".") + t;
  }
  return out;
}

std::string MigPartedDoc::pointer(std::string_view inner) const {
  return key_pointer.empty() ? std::string(inner) : key_pointer;
}

Pos MigPartedDoc::locate(std::string_view inner) const {
  if (key_pointer.empty()) return object ? object->position_of(inner) : Pos{};
  if (inner.empty() || !lines_mapped || !inner_positions) return key_pos;
  Pos p = inner_positions->resolve(inner);
  if (!p.known()) return key_pos;
  p.col += col_offset;
  return p;
}

std::string MigPartedDoc::where(std::string_view inner) const {
  std::string path = dotted(inner);
  if (key_pointer.empty()) return path;
  return data_key + (path.empty() ? "" : ": " + path);
}

std::vector<MigPartedConfig> MigPartedDoc::configs() const {
  std::vector<MigPartedConfig> out;
  const Node mc = member(body, "mig-configs");
  if (!mc.is_object()) return out;
  for (const auto [name, list] : mc.items()) {
    if (!list.is_array()) continue;
    MigPartedConfig c;
    c.name = name;
    c.pointer = pointer_join("/mig-configs", name);
    size_t next_index = 0;
    for (const Node e : list) {
      const size_t i = next_index++;
      if (!e.is_object()) continue;
      MigPartedEntry en;
      en.pointer = pointer_join(c.pointer, i);
      en.body = e;
      if (const Node f = member(e, "device-filter")) {
        if (f.is_string()) {
          if (!f.str().empty()) {
            en.has_filter = true;
            en.filter.push_back(normalize_device_id(f.str()));
          }
        } else if (f.is_array()) {
          for (const Node x : f) en.filter.push_back(x.is_string() ? normalize_device_id(x.str()) : "");
          en.has_filter = !en.filter.empty();
        } else if (!f.is_null()) {
          en.has_filter = true;
          en.filter.push_back("");
        }
      }
      en.mig_enabled = bool_at(e, "mig-enabled");
      if (const Node d = member(e, "mig-devices"); d.is_object()) {
        for (const auto [profile, count] : d.items())
          en.mig_devices.push_back({std::string(profile), count.is_boolean() ? std::nullopt : as_int(count)});
        // Profile order (the rules list profiles and fit them in this order), whatever the document's.
        std::sort(en.mig_devices.begin(), en.mig_devices.end(),
                  [](const MigPartedEntry::Device& a, const MigPartedEntry::Device& b) { return a.profile < b.profile; });
      }
      c.entries.push_back(std::move(en));
    }
    out.push_back(std::move(c));
  }
  // Name order, whatever the document's.
  std::sort(out.begin(), out.end(), [](const MigPartedConfig& a, const MigPartedConfig& b) { return a.name < b.name; });
  return out;
}

namespace {

bool holds_mig_configs(Node n) { return n.is_object() && member(n, "mig-configs"); }

// The first line after `line` where the object has a node (a later key or item), or 0.
uint32_t next_line_after(const PositionIndex& idx, PositionIndex::NodeId n, uint32_t line, uint32_t depth = 0) {
  uint32_t best = 0;
  if (depth > 64) return best;
  for (const auto& c : idx.children(n)) {
    if (c.key_pos.line > line && (best == 0 || c.key_pos.line < best)) best = c.key_pos.line;
    uint32_t inner = next_line_after(idx, c.node, line, depth + 1);
    if (inner > line && (best == 0 || inner < best)) best = inner;
  }
  return best;
}

// Whether the text of a value can be a block scalar (`|`) starting after the key's line: its lines
// must end before the next node of the object. A quoted string (`"version: v1\nmig-configs: …"`, as
// kubectl writes a value with trailing blanks) takes fewer lines, so its inner lines do not map.
bool fits_as_block(const Object& obj, Pos key, std::string_view text) {
  if (!obj.positions) return false;
  const uint32_t next = next_line_after(*obj.positions, obj.pos_root, key.line);
  if (next == 0) return true;
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++lines;
  return key.line + lines < next;
}

// Configs embedded as strings in a `data` mapping (a ConfigMap's, or Helm values').
void from_data(const Object& obj, Node data, const std::string& data_pointer, bool helm, std::vector<MigPartedDoc>& out) {
  if (!data.is_object()) return;
  const bool json_source = obj.source && obj.source->path.ends_with(".json");
  // The string values in key order (the order of the configs found), whatever the document's.
  for (const auto& [key, value] : sorted_items(data)) {
    if (!value.is_string()) continue;
    const std::string_view text = value.str();
    const bool named = key == "config.yaml";
    if (!named && text.find("mig-configs") == std::string_view::npos) continue;
    MigPartedDoc doc;
    doc.object = &obj;
    doc.key_pointer = pointer_join(data_pointer, key);
    doc.data_key = key;
    doc.helm_values = helm;
    doc.key_pos = obj.position_of(doc.key_pointer);
    doc.lines_mapped = obj.positions && doc.key_pos.known() && !json_source && fits_as_block(obj, doc.key_pos, text);
    doc.col_offset = doc.key_pos.col + 1;
    std::vector<Diagnostic> diags;
    std::vector<YamlDocument> docs;
    load_yaml_stream(text, obj.source ? obj.source->path : "", YamlLimits{},
                     [&](YamlDocument&& d) { docs.push_back(std::move(d)); }, diags,
                     doc.lines_mapped ? doc.key_pos.line : 0);
    if (!diags.empty()) {
      if (text.find("mig-configs") == std::string_view::npos) continue;  // not a MIG config at all
      // The loader's message names the line inside the text; the finding goes on the data key.
      doc.parse_error = std::make_pair(doc.key_pos, diags[0].message);
      out.push_back(std::move(doc));
      continue;
    }
    if (docs.empty() || !docs[0].positions) continue;
    doc.inner_positions = std::move(docs[0].positions);
    const Node root(doc.inner_positions.get(), doc.inner_positions->root());
    if (!holds_mig_configs(root)) continue;
    doc.body = root;
    out.push_back(std::move(doc));
  }
}

struct MigPartedDocs {
  std::vector<MigPartedDoc> docs;
};

std::vector<MigPartedDoc> parse_mig_parted(const Object& obj) {
  std::vector<MigPartedDoc> out;
  if (!obj.is_kubernetes_object()) {
    const Node root = obj.root();
    if (holds_mig_configs(root)) {
      MigPartedDoc doc;
      doc.object = &obj;
      doc.body = root;  // the object's own document, read in place
      out.push_back(std::move(doc));
    } else if (const Node data = path(root, {"migManager", "config", "data"})) {
      from_data(obj, data, "/migManager/config/data", true, out);
    }
    return out;
  }
  if (obj.is("", "ConfigMap"))
    if (const Node data = member(obj.root(), "data")) from_data(obj, data, "/data", false, out);
  return out;
}

}  // namespace

const std::vector<MigPartedDoc>& find_mig_parted(const Object& obj) {
  return obj.views.get<MigPartedDocs>([&] { return MigPartedDocs{parse_mig_parted(obj)}; }).docs;
}

}  // namespace gpuguard::rules::mig
