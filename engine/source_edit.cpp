#include "engine/source_edit.h"

#include <yaml.h>

#include <algorithm>
#include <map>

#include "engine/positions.h"
#include "engine/yaml_load.h"

namespace gpuguard::engine {

namespace {

std::string spaces(size_t n) { return std::string(n, ' '); }

// A string double-quoted, with escapes both YAML and JSON read: the quote, the backslash, control
// characters, and the characters YAML takes for line breaks or a byte order mark.
std::string double_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  static constexpr char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out.append("\\\""); continue;
      case '\\': out.append("\\\\"); continue;
      case '\n': out.append("\\n"); continue;
      case '\t': out.append("\\t"); continue;
      case '\r': out.append("\\r"); continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7F) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      continue;
    }
    // U+0085, U+2028, U+2029 (line breaks to YAML 1.1) and U+FEFF, escaped.
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) {
      out.append("\\u0085");
      ++i;
      continue;
    }
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out.append(static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029");
      i += 2;
      continue;
    }
    if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBB &&
        static_cast<unsigned char>(s[i + 2]) == 0xBF) {
      out.append("\\ufeff");
      i += 2;
      continue;
    }
    out.push_back(static_cast<char>(c));
  }
  out.push_back('"');
  return out;
}

// Whether `s` may be written as a plain scalar that Kubernetes' YAML reader reads back as this
// string (in a flow collection when `flow`). Cautious: anything unusual is quoted.
bool plain_ok(std::string_view s, bool flow) {
  if (s.empty() || s.size() > 512) return false;
  static constexpr std::string_view kFirst = "-?:,[]{}#&*!|>'\"%@` \t";
  if (kFirst.find(s.front()) != std::string_view::npos) return false;
  if (s.back() == ' ' || s.back() == ':' || s.back() == '\t') return false;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F) return false;
    if (flow && (c == ',' || c == '[' || c == ']' || c == '{' || c == '}' || c == ':')) return false;
  }
  if (s.find(": ") != std::string_view::npos || s.find(" #") != std::string_view::npos) return false;
  return resolve_plain_scalar(s).type == ScalarType::string;
}

bool single_ok(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7F) return false;
  }
  return true;
}

bool nonempty_collection(const json& v) { return (v.is_object() || v.is_array()) && !v.empty(); }

}  // namespace

YamlSource::YamlSource(std::string_view text, bool json) : text_(text), json_(json) {
  size_t base = 0;
  if (text.size() >= 2 && ((text[0] == '\xFE' && text[1] == '\xFF') || (text[0] == '\xFF' && text[1] == '\xFE'))) {
    error_ = "UTF-16 text is not rewritten";
    return;
  }
  if (text.starts_with("\xEF\xBB\xBF")) base = 3;
  // libyaml's marks count characters (after a byte order mark); the edits need bytes.
  const bool ascii = std::all_of(text.begin() + static_cast<std::ptrdiff_t>(base), text.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  std::vector<uint32_t> char_start;
  if (!ascii) {
    char_start.reserve(text.size() + 1);
    for (size_t i = base; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) char_start.push_back(static_cast<uint32_t>(i));
    char_start.push_back(static_cast<uint32_t>(text.size()));
  }
  // A part of the text parsed on its own (after a document libyaml could not read): its marks count
  // from its start.
  size_t part = 0;
  size_t char_base = 0;
  uint32_t line_base = 0;
  auto offset = [&](size_t rel) -> size_t {
    const size_t index = char_base + rel;
    if (ascii) return std::min(text.size(), base + index);
    return index < char_start.size() ? char_start[index] : text.size();
  };
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos && nl > 0 && text[nl - 1] == '\r') eol_ = "\r\n";

  std::vector<int> open;
  yaml_event_t ev;
  auto add_node = [&](Kind kind, Style style, const yaml_event_t& e, bool anchor) {
    Node n;
    n.kind = kind;
    n.style = style;
    n.anchor = anchor;
    n.start = offset(e.start_mark.index);
    n.end = offset(e.end_mark.index);
    n.line = line_base + static_cast<uint32_t>(e.start_mark.line);
    n.col = static_cast<uint32_t>(e.start_mark.column);
    const int id = static_cast<int>(nodes_.size());
    if (open.empty()) {
      roots_.push_back(id);
    } else {
      n.parent = open.back();
      nodes_[static_cast<size_t>(n.parent)].kids.push_back(id);
    }
    nodes_.push_back(std::move(n));
    return id;
  };
  for (;;) {  // each part
    yaml_parser_t parser;
    if (yaml_parser_initialize(&parser) == 0) {
      error_ = "out of memory";
      return;
    }
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data() + part), text.size() - part);
    open.clear();
    size_t resume = std::string_view::npos;
    for (;;) {
      if (yaml_parser_parse(&parser, &ev) == 0) {
        // As the loader: the document is skipped, and reading goes on at the next `---` line.
        const size_t problem = offset(parser.problem_mark.index);
        const size_t from = line_start(std::min(problem, text.size()));
        for (size_t at = text.find("\n---", from == 0 ? 0 : from - 1); at != std::string_view::npos; at = text.find("\n---", at + 1)) {
          const char after = at + 4 < text.size() ? text[at + 4] : '\n';
          if (at + 1 > part && (after == '\n' || after == ' ' || after == '\r' || after == '\t')) {
            resume = at + 1;
            break;
          }
        }
        if (resume == std::string_view::npos)
          error_ = std::string(parser.problem ? parser.problem : "not YAML") + " at line " +
                   std::to_string(line_base + parser.problem_mark.line + 1) + ", column " +
                   std::to_string(parser.problem_mark.column + 1);
        break;
      }
      const yaml_event_type_t type = ev.type;
      switch (type) {
        case YAML_SCALAR_EVENT: {
          Style st = Style::plain;
          switch (ev.data.scalar.style) {
            case YAML_SINGLE_QUOTED_SCALAR_STYLE: st = Style::single_quoted; break;
            case YAML_DOUBLE_QUOTED_SCALAR_STYLE: st = Style::double_quoted; break;
            case YAML_LITERAL_SCALAR_STYLE:
            case YAML_FOLDED_SCALAR_STYLE: st = Style::block; break;
            default: break;
          }
          const int id = add_node(Kind::scalar, st, ev, ev.data.scalar.anchor != nullptr);
          Node& n = nodes_[static_cast<size_t>(id)];
          n.value.assign(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
          // A merge key: the mapping takes another's entries.
          if (n.parent >= 0 && nodes_[static_cast<size_t>(n.parent)].kind == Kind::mapping &&
              nodes_[static_cast<size_t>(n.parent)].kids.size() % 2 == 1 && st == Style::plain && n.value == "<<")
            n.anchor = true;
          break;
        }
        case YAML_ALIAS_EVENT: add_node(Kind::alias, Style::plain, ev, true); break;
        case YAML_SEQUENCE_START_EVENT: {
          const bool flow = ev.data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
          const int id = add_node(Kind::sequence, flow ? Style::flow_collection : Style::block_collection, ev,
                                  ev.data.sequence_start.anchor != nullptr);
          open.push_back(id);
          break;
        }
        case YAML_MAPPING_START_EVENT: {
          const bool flow = ev.data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
          const int id = add_node(Kind::mapping, flow ? Style::flow_collection : Style::block_collection, ev,
                                  ev.data.mapping_start.anchor != nullptr);
          mappings_.push_back(id);
          open.push_back(id);
          break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
          if (!open.empty()) {
            nodes_[static_cast<size_t>(open.back())].end = offset(ev.end_mark.index);
            open.pop_back();
          }
          break;
        default: break;
      }
      yaml_event_delete(&ev);
      if (type == YAML_STREAM_END_EVENT) break;
    }
    yaml_parser_delete(&parser);
    if (resume == std::string_view::npos) break;
    char_base = ascii ? resume - base
                      : static_cast<size_t>(std::lower_bound(char_start.begin(), char_start.end(), static_cast<uint32_t>(resume)) -
                                            char_start.begin());
    line_base = static_cast<uint32_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(resume), '\n'));
    part = resume;
  }

  // Each document's layout, from its own block collections.
  layouts_.resize(roots_.size());
  for (size_t d = 0; d < roots_.size(); ++d) {
    const auto first = static_cast<size_t>(roots_[d]);
    const size_t last = d + 1 < roots_.size() ? static_cast<size_t>(roots_[d + 1]) : nodes_.size();
    std::map<uint32_t, int> steps, seq_indents;
    for (size_t i = first; i < last; ++i) {
      const Node& m = nodes_[i];
      if (m.kind != Kind::mapping || m.style != Style::block_collection) continue;
      for (size_t k = 0; k + 1 < m.kids.size(); k += 2) {
        const Node& key = nodes_[static_cast<size_t>(m.kids[k])];
        const Node& v = nodes_[static_cast<size_t>(m.kids[k + 1])];
        if (v.style != Style::block_collection || v.col < key.col) continue;
        if (v.kind == Kind::mapping && v.col > key.col) ++steps[v.col - key.col];
        if (v.kind == Kind::sequence) ++seq_indents[v.col - key.col];
      }
    }
    auto most = [](const std::map<uint32_t, int>& counts, uint32_t fallback) {
      uint32_t best = fallback;
      int n = 0;
      for (const auto& [k, c] : counts)
        if (c > n) best = k, n = c;
      return best;
    };
    layouts_[d].step = std::clamp<uint32_t>(most(steps, 2), 1, 16);
    layouts_[d].seq_indent = std::min<uint32_t>(most(seq_indents, layouts_[d].step), 16);
  }
}

int YamlSource::node_at(Pos pos) const {
  if (!pos.known()) return -1;
  // The mappings on that line (in document order, so by line); the one at that column, else the
  // only one on the line (a JSON reader may count columns in bytes).
  auto it = std::lower_bound(mappings_.begin(), mappings_.end(), pos.line,
                             [&](int id, uint32_t line) { return nodes_[static_cast<size_t>(id)].line + 1 < line; });
  int by_line = -1;
  int line_matches = 0;
  for (; it != mappings_.end() && nodes_[static_cast<size_t>(*it)].line + 1 == pos.line; ++it) {
    if (nodes_[static_cast<size_t>(*it)].col + 1 == pos.col) return *it;
    by_line = *it;
    ++line_matches;
  }
  return line_matches == 1 ? by_line : -1;
}

bool YamlSource::uses_anchors(int node, uint32_t& where) const {
  // A subtree's nodes follow it in creation order up to the next node that is not a descendant.
  const auto first = static_cast<size_t>(node);
  for (size_t i = first; i < nodes_.size(); ++i) {
    if (i > first) {
      int p = nodes_[i].parent;
      while (p >= 0 && p != node) p = nodes_[static_cast<size_t>(p)].parent;
      if (p != node) break;
    }
    if (nodes_[i].anchor) {
      where = nodes_[i].line + 1;
      return true;
    }
  }
  return false;
}

uint32_t YamlSource::line_of(int node) const { return node >= 0 ? nodes_[static_cast<size_t>(node)].line + 1 : 0; }

size_t YamlSource::content_end(int n) const {
  while (nodes_[static_cast<size_t>(n)].style == Style::block_collection && !nodes_[static_cast<size_t>(n)].kids.empty())
    n = nodes_[static_cast<size_t>(n)].kids.back();
  const Node& node = nodes_[static_cast<size_t>(n)];
  return node.style == Style::block_collection ? node.start : node.end;
}

size_t YamlSource::line_start(size_t offset) const {
  while (offset > 0 && text_[offset - 1] != '\n') --offset;
  return offset;
}

size_t YamlSource::after_line(size_t offset) const {
  if (offset > 0 && offset <= text_.size() && text_[offset - 1] == '\n') return offset;  // a block scalar's end
  const size_t nl = text_.find('\n', offset);
  return nl == std::string_view::npos ? text_.size() : nl + 1;
}

int YamlSource::child(int n, const std::string& token) const {
  const Node& node = nodes_[static_cast<size_t>(n)];
  if (node.kind == Kind::mapping) {
    int found = -1;
    for (size_t k = 0; k + 1 < node.kids.size(); k += 2) {
      const Node& key = nodes_[static_cast<size_t>(node.kids[k])];
      if (key.kind == Kind::scalar && key.value == token) found = node.kids[k + 1];
    }
    return found;
  }
  if (node.kind == Kind::sequence) {
    if (token.empty() || token.size() > 9 || !std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return -1;
    const size_t i = std::stoul(token);
    return i < node.kids.size() ? node.kids[i] : -1;
  }
  return -1;
}

int YamlSource::key_of(int value) const {
  const int p = nodes_[static_cast<size_t>(value)].parent;
  if (p < 0 || nodes_[static_cast<size_t>(p)].kind != Kind::mapping) return -1;
  const auto& kids = nodes_[static_cast<size_t>(p)].kids;
  for (size_t k = 1; k < kids.size(); k += 2)
    if (kids[k] == value) return kids[k - 1];
  return -1;
}

int YamlSource::document_of(int n) const {
  const auto it = std::upper_bound(roots_.begin(), roots_.end(), n);
  return it == roots_.begin() ? 0 : static_cast<int>(it - roots_.begin()) - 1;
}

bool YamlSource::in_flow(int n) const {
  const int p = nodes_[static_cast<size_t>(n)].parent;
  return p >= 0 && nodes_[static_cast<size_t>(p)].style == Style::flow_collection;
}

std::string YamlSource::scalar(const json& v, bool flow, Style keep) const {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return v.dump();
  if (!v.is_string()) return flow_value(v);
  const auto& s = v.get_ref<const std::string&>();
  if (json_) return double_quoted(s);
  if (keep == Style::single_quoted && single_ok(s)) {
    std::string out = "'";
    out.reserve(s.size() + 2);
    for (const char c : s) {
      if (c == '\'') out.push_back('\'');
      out.push_back(c);
    }
    out.push_back('\'');
    return out;
  }
  if (keep != Style::double_quoted && plain_ok(s, flow)) return s;
  return double_quoted(s);
}

std::string YamlSource::key_text(const std::string& key, bool flow) const {
  if (!json_ && plain_ok(key, flow)) return key;
  return double_quoted(key);
}

std::string YamlSource::flow_value(const json& v) const {
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (const auto& [k, val] : v.items()) {
      if (!first) out.append(", ");
      first = false;
      out.append(key_text(k, true)).append(": ").append(flow_value(val));
    }
    out.push_back('}');
    return out;
  }
  if (v.is_array()) {
    std::string out = "[";
    bool first = true;
    for (const auto& item : v) {
      if (!first) out.append(", ");
      first = false;
      out.append(flow_value(item));
    }
    out.push_back(']');
    return out;
  }
  return scalar(v, true);
}

void YamlSource::block_lines(const json& v, uint32_t indent, const Layout& layout, std::string& out) const {
  if (v.is_array()) {
    for (const auto& item : v) out.append(item_text(item, indent, indent + 2, layout));
    return;
  }
  for (const auto& [k, val] : v.items()) out.append(entry_block(k, val, indent, layout));
}

std::string YamlSource::entry_block(const std::string& key, const json& v, uint32_t indent, const Layout& layout) const {
  std::string out = spaces(indent);
  out.append(key_text(key, false)).push_back(':');
  if (nonempty_collection(v)) {
    out.append(eol_);
    block_lines(v, indent + (v.is_object() ? layout.step : layout.seq_indent), layout, out);
  } else {
    out.push_back(' ');
    out.append(v.is_object() ? "{}" : v.is_array() ? "[]" : scalar(v, false));
    out.append(eol_);
  }
  return out;
}

std::string YamlSource::item_text(const json& v, uint32_t dash, uint32_t content, const Layout& layout) const {
  content = std::max(content, dash + 2);
  std::string prefix = spaces(dash);
  prefix.push_back('-');
  prefix.append(spaces(content - dash - 1));
  if (!nonempty_collection(v)) {
    prefix.append(v.is_object() ? "{}" : v.is_array() ? "[]" : scalar(v, false));
    prefix.append(eol_);
    return prefix;
  }
  std::string lines;
  block_lines(v, content, layout, lines);
  lines.replace(0, content, prefix);
  return lines;
}

TextEdit YamlSource::insert_lines(size_t after, std::string lines, int rank) const {
  const size_t at = after_line(after);
  if (at == text_.size() && (text_.empty() || text_.back() != '\n')) {
    // The file ends without a newline: the new lines go after one, and the file still ends without.
    lines.resize(lines.size() - eol_.size());
    std::string text;
    text.reserve(eol_.size() + lines.size());
    text.append(eol_).append(lines);
    return TextEdit{at, at, std::move(text), rank};
  }
  return TextEdit{at, at, std::move(lines), rank};
}

bool YamlSource::add(int parent, const std::string& token, const json& v, std::vector<TextEdit>& out, std::string& error) const {
  const Node& p = nodes_[static_cast<size_t>(parent)];
  const Layout& layout = layouts_[static_cast<size_t>(document_of(parent))];
  if (p.kind == Kind::sequence && token != "-" && token != std::to_string(p.kids.size())) {
    error = "an item inserted inside a sequence";
    return false;
  }
  if (p.kind != Kind::mapping && p.kind != Kind::sequence) {
    error = "a value added inside a scalar";
    return false;
  }
  const std::string entry =
      p.kind == Kind::mapping ? key_text(token, true).append(": ").append(flow_value(v)) : flow_value(v);
  if (p.style == Style::flow_collection) {
    if (p.kids.empty()) {
      if (p.start >= text_.size() || (text_[p.start] != '{' && text_[p.start] != '[')) {
        error = "an empty flow collection not where expected";
        return false;
      }
      out.push_back(TextEdit{p.start + 1, p.start + 1, entry, 0});
      return true;
    }
    const Node& first = nodes_[static_cast<size_t>(p.kids.front())];
    const Node& last = nodes_[static_cast<size_t>(p.kind == Kind::mapping ? p.kids[p.kids.size() - 2] : p.kids.back())];
    std::string text;
    if (first.line != p.line && last.line != p.line) {
      text.append(",").append(eol_).append(spaces(last.col)).append(entry);
    } else {
      text.append(", ").append(entry);
    }
    out.push_back(TextEdit{content_end(p.kids.back()), content_end(p.kids.back()), std::move(text), 0});
    return true;
  }
  if (p.kind == Kind::mapping) {
    out.push_back(insert_lines(content_end(parent), entry_block(token, v, p.col, layout), -2 * static_cast<int>(p.col)));
    return true;
  }
  const Node& first = nodes_[static_cast<size_t>(p.kids.front())];
  const uint32_t content = first.line == p.line ? first.col : p.col + 2;
  out.push_back(insert_lines(content_end(parent), item_text(v, p.col, content, layout), -2 * static_cast<int>(p.col) - 1));
  return true;
}

bool YamlSource::replace(int n, const json& v, std::vector<TextEdit>& out, std::string& error) const {
  const Node& node = nodes_[static_cast<size_t>(n)];
  if (node.kind == Kind::alias) {
    error = "an alias replaced";
    return false;
  }
  if (node.style == Style::block) {
    error = "a block scalar (| or >) replaced";
    return false;
  }
  const bool flow = in_flow(n);
  const bool collection = v.is_object() || v.is_array();
  if (node.kind == Kind::scalar && !collection) {
    std::string text = scalar(v, flow, node.style);
    if (node.start == node.end && !flow) text.insert(0, " ");
    out.push_back(TextEdit{node.start, node.end, std::move(text), 0});
    return true;
  }
  if (flow) {
    out.push_back(TextEdit{node.start, node.end, flow_value(v), 0});
    return true;
  }
  if (node.parent < 0) {
    error = "a whole document replaced";
    return false;
  }
  const Node& p = nodes_[static_cast<size_t>(node.parent)];
  const Layout& layout = layouts_[static_cast<size_t>(document_of(n))];
  const size_t end = content_end(n);
  if (p.kind == Kind::mapping) {
    const int k = key_of(n);
    if (k < 0) {
      error = "a value with no key";
      return false;
    }
    const Node& key = nodes_[static_cast<size_t>(k)];
    size_t colon = key.end;
    while (colon < text_.size() && text_[colon] == ' ') ++colon;
    if (colon >= text_.size() || text_[colon] != ':' || key.kind != Kind::scalar || key.style == Style::block) {
      error = "a key written in a form not rewritten (an explicit `?` key)";
      return false;
    }
    if (!nonempty_collection(v)) {
      out.push_back(TextEdit{key.end, end, std::string(": ").append(v.is_object() ? "{}" : v.is_array() ? "[]" : scalar(v, false)), 0});
      return true;
    }
    out.push_back(TextEdit{key.end, end, ":", 0});
    std::string lines;
    block_lines(v, key.col + (v.is_object() ? layout.step : layout.seq_indent), layout, lines);
    out.push_back(insert_lines(end, std::move(lines), -2 * static_cast<int>(key.col)));
    return true;
  }
  // An item of a block sequence.
  if (!nonempty_collection(v)) {
    out.push_back(TextEdit{node.start, end, v.is_object() ? "{}" : v.is_array() ? "[]" : scalar(v, false), 0});
    return true;
  }
  std::string lines;
  block_lines(v, node.col, layout, lines);
  lines.erase(0, node.col);
  lines.resize(lines.size() - eol_.size());
  out.push_back(TextEdit{node.start, end, std::move(lines), 0});
  return true;
}

bool YamlSource::remove(int n, std::vector<TextEdit>& out, std::string& error) const {
  const Node& node = nodes_[static_cast<size_t>(n)];
  if (node.parent < 0) {
    error = "a whole document removed";
    return false;
  }
  const Node& p = nodes_[static_cast<size_t>(node.parent)];
  const bool mapping = p.kind == Kind::mapping;
  const int first = mapping ? key_of(n) : n;  // the node the entry starts with
  if (first < 0) {
    error = "a value with no key";
    return false;
  }
  if (p.style == Style::flow_collection) {
    const auto& kids = p.kids;
    const size_t step = mapping ? 2 : 1;
    size_t i = 0;
    while (i < kids.size() && kids[i] != first) ++i;
    if (i + step < kids.size()) {
      out.push_back(TextEdit{nodes_[static_cast<size_t>(first)].start, nodes_[static_cast<size_t>(kids[i + step])].start, "", 0});
    } else if (i >= step) {
      out.push_back(TextEdit{content_end(kids[i - 1]), content_end(n), "", 0});
    } else {
      out.push_back(TextEdit{nodes_[static_cast<size_t>(first)].start, content_end(n), "", 0});
    }
    return true;
  }
  const size_t start = nodes_[static_cast<size_t>(first)].start;
  const size_t ls = line_start(start);
  std::string_view prefix = text_.substr(ls, start - ls);
  while (!prefix.empty() && prefix.back() == ' ') prefix.remove_suffix(1);
  if (!mapping && !prefix.empty() && prefix.back() == '-') prefix.remove_suffix(1);
  if (prefix.find_first_not_of(' ') != std::string_view::npos) {
    error = "an entry that shares its line with another removed";
    return false;
  }
  out.push_back(TextEdit{ls, after_line(content_end(n)), "", 0});
  return true;
}

bool YamlSource::edits_for(int root, const json& patch, std::vector<TextEdit>& out, std::string& error, uint32_t& line) const {
  line = line_of(root);
  if (!error_.empty()) {
    error = error_;
    return false;
  }
  if (!patch.is_array()) {
    error = "not a JSON patch";
    return false;
  }
  for (const auto& op : patch) {
    const std::string kind = op.value("op", "");
    const std::string path = op.value("path", "");
    const auto tokens = pointer_tokens(path);
    if (tokens.empty()) {
      error = "the whole object replaced";
      return false;
    }
    int parent = root;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int next = child(parent, tokens[i]);
      if (next < 0) {
        error = "no node at " + path;
        return false;
      }
      parent = next;
    }
    line = line_of(parent);
    const Node& p = nodes_[static_cast<size_t>(parent)];
    if (p.kind == Kind::alias) {
      error = "an alias edited";
      return false;
    }
    const int target = child(parent, tokens.back());
    if (target >= 0) line = line_of(target);
    bool ok = false;
    if (kind == "add" && op.contains("value")) {
      ok = target >= 0 && p.kind == Kind::mapping ? replace(target, op["value"], out, error)
                                                  : add(parent, tokens.back(), op["value"], out, error);
    } else if (kind == "replace" && op.contains("value") && target >= 0) {
      ok = replace(target, op["value"], out, error);
    } else if (kind == "remove" && target >= 0) {
      ok = remove(target, out, error);
    } else {
      error = "a `" + kind + "` operation at " + path + " not written back";
    }
    if (!ok) return false;
  }
  return true;
}

std::optional<std::string> apply_edits(std::string_view text, std::vector<TextEdit> edits) {
  std::stable_sort(edits.begin(), edits.end(), [](const TextEdit& a, const TextEdit& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.rank < b.rank;
  });
  std::string out;
  size_t extra = 0;
  for (const auto& e : edits) extra += e.text.size();
  out.reserve(text.size() + extra);
  size_t at = 0;
  for (const auto& e : edits) {
    if (e.begin < at || e.end < e.begin || e.end > text.size()) return std::nullopt;
    out.append(text.substr(at, e.begin - at));
    out.append(e.text);
    at = e.end;
  }
  out.append(text.substr(at));
  return out;
}

namespace {

std::vector<std::string_view> split_lines(std::string_view s) {
  std::vector<std::string_view> out;
  size_t at = 0;
  while (at < s.size()) {
    const size_t nl = s.find('\n', at);
    const size_t end = nl == std::string_view::npos ? s.size() : nl + 1;
    out.push_back(s.substr(at, end - at));
    at = end;
  }
  return out;
}

}  // namespace

std::string file_diff(std::string_view a, std::string_view b, std::string_view a_name, std::string_view b_name) {
  if (a == b) return "";
  const auto x = split_lines(a), y = split_lines(b);
  // Common head and tail, then Myers' greedy diff of the middle (changes are few: fixes touch a
  // few lines of an object); past kMaxD differences the middle is one replacement, still exact.
  size_t head = 0;
  while (head < x.size() && head < y.size() && x[head] == y[head]) ++head;
  size_t tail = 0;
  while (tail < x.size() - head && tail < y.size() - head && x[x.size() - 1 - tail] == y[y.size() - 1 - tail]) ++tail;
  const auto n = static_cast<long>(x.size() - head - tail), m = static_cast<long>(y.size() - head - tail);
  struct Op {
    char kind;
    size_t ai, bi;
  };
  std::vector<Op> ops;
  for (size_t i = 0; i < head; ++i) ops.push_back({' ', i, i});
  std::vector<Op> middle;
  constexpr long kMaxD = 2000;
  bool done = false;
  if (n + m > 0) {
    const long max_d = std::min(n + m, kMaxD);
    const long offset = max_d + 1;
    std::vector<long> v(static_cast<size_t>(2 * offset + 1), 0);
    std::vector<std::vector<long>> trace;
    auto same = [&](long i, long j) { return x[head + static_cast<size_t>(i)] == y[head + static_cast<size_t>(j)]; };
    long found_d = -1;
    for (long d = 0; d <= max_d && found_d < 0; ++d) {
      trace.push_back(v);
      for (long k = -d; k <= d; k += 2) {
        long i = (k == -d || (k != d && v[static_cast<size_t>(offset + k - 1)] < v[static_cast<size_t>(offset + k + 1)]))
                     ? v[static_cast<size_t>(offset + k + 1)]
                     : v[static_cast<size_t>(offset + k - 1)] + 1;
        long j = i - k;
        while (i < n && j < m && same(i, j)) ++i, ++j;
        v[static_cast<size_t>(offset + k)] = i;
        if (i >= n && j >= m) {
          found_d = d;
          break;
        }
      }
    }
    if (found_d >= 0) {
      long i = n, j = m;
      for (long d = found_d; d > 0; --d) {
        const auto& pv = trace[static_cast<size_t>(d)];
        const long k = i - j;
        const bool down = k == -d || (k != d && pv[static_cast<size_t>(offset + k - 1)] < pv[static_cast<size_t>(offset + k + 1)]);
        const long pk = down ? k + 1 : k - 1;
        const long pi = pv[static_cast<size_t>(offset + pk)], pj = pi - pk;
        while (i > (down ? pi : pi + 1) && j > (down ? pj + 1 : pj)) {
          --i, --j;
          middle.push_back({' ', head + static_cast<size_t>(i), head + static_cast<size_t>(j)});
        }
        if (down) middle.push_back({'+', head + static_cast<size_t>(pi), head + static_cast<size_t>(pj)});
        else middle.push_back({'-', head + static_cast<size_t>(pi), head + static_cast<size_t>(pj)});
        i = pi, j = pj;
      }
      while (i > 0 && j > 0) {
        --i, --j;
        middle.push_back({' ', head + static_cast<size_t>(i), head + static_cast<size_t>(j)});
      }
      std::reverse(middle.begin(), middle.end());
      done = true;
    }
  }
  if (!done) {
    middle.clear();
    for (long i = 0; i < n; ++i) middle.push_back({'-', head + static_cast<size_t>(i), head});
    for (long j = 0; j < m; ++j) middle.push_back({'+', head + static_cast<size_t>(n), head + static_cast<size_t>(j)});
  }
  ops.insert(ops.end(), middle.begin(), middle.end());
  for (size_t t = 0; t < tail; ++t)
    ops.push_back({' ', x.size() - tail + t, y.size() - tail + t});

  std::string out;
  out.append("--- ").append(a_name).append("\n+++ ").append(b_name).append("\n");
  constexpr size_t kContext = 3;
  size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    const size_t start = k >= kContext ? k - kContext : 0;
    // The hunk runs to the last change followed by fewer than 2 * kContext unchanged lines.
    size_t last_change = k;
    size_t q = k;
    while (q < ops.size()) {
      if (ops[q].kind != ' ') {
        last_change = q;
      } else if (q - last_change - 1 > 2 * kContext) {
        break;
      }
      ++q;
    }
    const size_t end = std::min(ops.size(), last_change + 1 + kContext);
    size_t a_len = 0, b_len = 0;
    for (size_t r = start; r < end; ++r) {
      if (ops[r].kind != '+') ++a_len;
      if (ops[r].kind != '-') ++b_len;
    }
    const size_t a_start = ops[start].ai, b_start = ops[start].bi;
    out.append("@@ -").append(std::to_string(a_len ? a_start + 1 : a_start)).append(",").append(std::to_string(a_len));
    out.append(" +").append(std::to_string(b_len ? b_start + 1 : b_start)).append(",").append(std::to_string(b_len));
    out.append(" @@\n");
    for (size_t r = start; r < end; ++r) {
      const std::string_view line = ops[r].kind == '+' ? y[ops[r].bi] : x[ops[r].ai];
      out.push_back(ops[r].kind);
      out.append(line);
      if (line.empty() || line.back() != '\n') out.append("\n\\ No newline at end of file\n");
    }
    k = end;
  }
  return out;
}

}  // namespace gpuguard::engine
