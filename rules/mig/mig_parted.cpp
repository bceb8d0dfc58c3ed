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
  const json* mc = member(body, "mig-configs");
  if (!mc || !mc->is_object()) return out;
  for (const auto& [name, list] : mc->items()) {
    if (!list.is_array()) continue;
    MigPartedConfig c;
    c.name = name;
    c.pointer = pointer_join("/mig-configs", name);
    for (size_t i = 0; i < list.size(); ++i) {
      const json& e = list[i];
      if (!e.is_object()) continue;
      MigPartedEntry en;
      en.pointer = pointer_join(c.pointer, i);
      en.body = &e;
      if (const json* f = member(e, "device-filter")) {
        if (f->is_string()) {
          if (!f->get<std::string>().empty()) {
            en.has_filter = true;
            en.filter.push_back(normalize_device_id(f->get<std::string>()));
          }
        } else if (f->is_array()) {
          for (const auto& x : *f) en.filter.push_back(x.is_string() ? normalize_device_id(x.get<std::string>()) : "");
          en.has_filter = !en.filter.empty();
        } else if (!f->is_null()) {
          en.has_filter = true;
          en.filter.push_back("");
        }
      }
      en.mig_enabled = bool_at(e, "mig-enabled");
      if (const json* d = member(e, "mig-devices"); d && d->is_object())
        for (const auto& [profile, count] : d->items())
          en.mig_devices.push_back({profile, count.is_boolean() ? std::nullopt : as_int(count)});
      c.entries.push_back(std::move(en));
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

bool holds_mig_configs(const json& j) { return j.is_object() && member(j, "mig-configs") != nullptr; }

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
void from_data(const Object& obj, const json& data, const std::string& data_pointer, bool helm, std::vector<MigPartedDoc>& out) {
  if (!data.is_object()) return;
  const bool json_source = obj.source && obj.source->path.ends_with(".json");
  for (const auto& [key, value] : data.items()) {
    if (!value.is_string()) continue;
    const std::string& text = value.get_ref<const std::string&>();
    const bool named = key == "config.yaml";
    if (!named && text.find("mig-configs") == std::string::npos) continue;
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
      if (text.find("mig-configs") == std::string::npos) continue;  // not a MIG config at all
      // The loader's message names the line inside the text; the finding goes on the data key.
      doc.parse_error = std::make_pair(doc.key_pos, diags[0].message);
      out.push_back(std::move(doc));
      continue;
    }
    if (docs.empty() || !holds_mig_configs(docs[0].body)) continue;
    doc.body = std::move(docs[0].body);
    doc.inner_positions = docs[0].positions;
    out.push_back(std::move(doc));
  }
}

struct MigPartedDocs {
  std::vector<MigPartedDoc> docs;
};

std::vector<MigPartedDoc> parse_mig_parted(const Object& obj) {
  std::vector<MigPartedDoc> out;
  if (!obj.is_kubernetes_object()) {
    if (holds_mig_configs(obj.body)) {
      MigPartedDoc doc;
      doc.object = &obj;
      doc.body = obj.body;
      out.push_back(std::move(doc));
    } else if (const json* data = path(obj.body, {"migManager", "config", "data"})) {
      from_data(obj, *data, "/migManager/config/data", true, out);
    }
    return out;
  }
  if (obj.is("", "ConfigMap"))
    if (const json* data = member(obj.body, "data")) from_data(obj, *data, "/data", false, out);
  return out;
}

}  // namespace

const std::vector<MigPartedDoc>& find_mig_parted(const Object& obj) {
  return obj.views.get<MigPartedDocs>([&] { return MigPartedDocs{parse_mig_parted(obj)}; }).docs;
}

}  // namespace gpuguard::rules::mig
