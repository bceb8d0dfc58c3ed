#include "engine/yaml_emit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/json_bytes.h"
#include "engine/yaml_load.h"

namespace gpuguard::engine {

namespace {

// Characters yaml-cpp writes as they are but a YAML reader does not read back as themselves: DEL
// is not printable (libyaml refuses it); NEL, U+2028 and U+2029 are line breaks to a YAML 1.1
// reader (folded in a quoted scalar, ending a plain one); a BOM in a plain scalar is not content.
// (In a double-quoted scalar yaml-cpp escapes the C0 and C1 controls and the BOM, not the rest.)
bool needs_escapes(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9F) return true;  // C1, NEL among them
    if (c == 0xE2 && (s.substr(i, 3) == "\xE2\x80\xA8" || s.substr(i, 3) == "\xE2\x80\xA9")) return true;  // U+2028, U+2029
    if (c == 0xEF && s.substr(i, 3) == "\xEF\xBB\xBF") return true;  // U+FEFF
  }
  return false;
}

// Whether a literal block scalar (`|`, which yaml-cpp writes without indentation or chomping
// indicators) reads back as `s`: text ending in exactly one line break (clip), a first line that
// neither starts with a space nor is empty (the reader takes the block's indentation from it), and
// nothing but printable characters and line feeds.
bool literal_reads_back(std::string_view s) {
  if (s.size() < 2 || s.back() != '\n' || s[s.size() - 2] == '\n' || s.front() == ' ' || s.front() == '\n') return false;
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7F) return false;
  return !needs_escapes(s);
}

bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  // Whatever go-yaml v2 would not read back as this very string.
  if (resolve_plain_scalar(s).type != ScalarType::string) return true;
  if (s.front() == ' ' || s.back() == ' ') return true;
  static constexpr std::string_view kIndicators = "-?:,[]{}#&*!|>'\"%@`~";
  if (kIndicators.find(s.front()) != std::string_view::npos) return true;
  if (s.starts_with("...")) return true;  // at column 0 (a top-level key) it ends the document
  if (s.find(": ") != std::string::npos || s.find(" #") != std::string::npos) return true;
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return true;
  return needs_escapes(s);
}

bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<unsigned char>(s[i]) < 0x80) continue;
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n - 1;
  }
  return true;
}

// A string that is not UTF-8 (a `!!binary` value as the loader decodes it) is written back as
// `!!binary`: YAML text is UTF-8, and the loader reads this back as the same bytes. So is one with
// U+FFFE or U+FFFF (JSON's "\uffff"): no YAML scalar holds them raw, and yaml-cpp writes their
// escapes as U+FFFD.
bool needs_binary(const std::string& s) {
  return !valid_utf8(s) || s.find("\xEF\xBF\xBE") != std::string::npos || s.find("\xEF\xBF\xBF") != std::string::npos;
}

bool emit_binary(YAML::Emitter& out, const std::string& s) {
  if (!needs_binary(s)) return false;
  out << YAML::Binary(reinterpret_cast<const unsigned char*>(s.data()), s.size());
  return true;
}

// A string value: a literal block when it is lines of text that read back, else as
// emit_yaml_string writes it. The block is given without its final line break, which clip
// chomping reads back: yaml-cpp would write that break as an empty line of the block.
void emit_string_value(YAML::Emitter& out, const std::string& s) {
  if (s.find('\n') != std::string::npos && !needs_binary(s) && literal_reads_back(s))
    out << YAML::Literal << s.substr(0, s.size() - 1);
  else emit_yaml_string(out, s);
}

void emit(YAML::Emitter& out, const json& v, const PositionIndex* positions, bool have_node, PositionIndex::NodeId node) {
  switch (v.type()) {
    case json::value_t::object: {
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
        return;
      }
      // Source order where the source had the key.
      struct Key {
        const std::string* name;
        Pos pos;
        bool known;
        PositionIndex::NodeId node;
      };
      std::vector<Key> keys;
      keys.reserve(v.size());
      for (const auto& [k, x] : v.items()) keys.push_back({&k, {}, false, 0});
      if (have_node && positions) {
        // The source's keys matched by name (a hash: a mapping may have 100,000 keys).
        std::unordered_map<std::string_view, Key*> by_name;
        by_name.reserve(keys.size());
        for (auto& key : keys) by_name.emplace(*key.name, &key);
        for (const auto& c : positions->children(node))
          if (auto it = by_name.find(positions->key(c)); it != by_name.end()) {
            it->second->pos = c.key_pos;
            it->second->known = true;
            it->second->node = c.node;
          }
      }
      std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
        if (a.known != b.known) return a.known;
        return a.known && a.pos < b.pos;
      });
      out << YAML::BeginMap;
      for (const auto& key : keys) {
        emit_yaml_key(out, *key.name);
        out << YAML::Value;
        emit(out, v.at(*key.name), positions, key.known, key.node);
      }
      out << YAML::EndMap;
      return;
    }
    case json::value_t::array: {
      if (v.empty()) {
        out << YAML::Flow << YAML::BeginSeq << YAML::EndSeq;
        return;
      }
      const PositionIndex::Children items = have_node && positions ? positions->children(node) : PositionIndex::Children{};
      auto item = items.begin();
      out << YAML::BeginSeq;
      for (size_t i = 0; i < v.size(); ++i) {
        const bool known = i < items.size();
        emit(out, v[i], positions, known, known ? (*item).node : 0);
        if (known) ++item;
      }
      out << YAML::EndSeq;
      return;
    }
    case json::value_t::string: emit_string_value(out, v.get_ref<const std::string&>()); return;
    case json::value_t::boolean: out << (v.get<bool>() ? "true" : "false"); return;
    case json::value_t::number_integer: out << v.get<int64_t>(); return;
    case json::value_t::number_unsigned: out << v.get<uint64_t>(); return;
    case json::value_t::number_float: out << go_json_number(v); return;
    default: out << YAML::Null; return;
  }
}

}  // namespace

void emit_yaml_key(YAML::Emitter& out, const std::string& s) {
  // (A plain key over 1,024 bytes yaml-cpp makes explicit itself. Once a mapping has an explicit
  // key, yaml-cpp writes its later keys explicit too, so only keys that need it are.)
  if (s.size() > 256 && (needs_binary(s) || needs_quotes(s))) out << YAML::LongKey;
  out << YAML::Key;
  emit_yaml_string(out, s);
}

void emit_yaml_string(YAML::Emitter& out, const std::string& s, bool quoted) {
  if (emit_binary(out, s)) return;
  if (needs_escapes(s)) out << YAML::EscapeNonAscii << YAML::DoubleQuoted << s;
  else if (quoted || needs_quotes(s)) out << YAML::DoubleQuoted << s;
  else out << s;
}

std::string to_yaml(const json& value, const PositionIndex* positions, PositionIndex::NodeId root) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  emit(out, value, positions, positions != nullptr, root);
  std::string s = out.c_str();
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_name, const std::string& b_name) {
  if (a == b) return "";
  auto lines = [](const std::string& s) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string l;
    while (std::getline(ss, l)) out.push_back(l);
    return out;
  };
  const auto x = lines(a), y = lines(b);
  const size_t n = x.size(), m = y.size();
  // Longest common subsequence table (objects are small; cap the work).
  if (n * m > 25'000'000) return "--- " + a_name + "\n+++ " + b_name + "\n(too large to diff)\n";
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;) lcs[i][j] = x[i] == y[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op {
    char kind;  // ' ', '-', '+'
    size_t ai, bi;
  };
  std::vector<Op> ops;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] == y[j]) ops.push_back({' ', i++, j++});
    else if (j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j])) ops.push_back({'+', i, j++});
    else ops.push_back({'-', i++, j});
  }
  std::ostringstream o;
  o << "--- " << a_name << "\n+++ " << b_name << "\n";
  constexpr size_t kContext = 3;
  size_t k = 0;
  while (k < ops.size()) {
    if (ops[k].kind == ' ') {
      ++k;
      continue;
    }
    size_t start = k >= kContext ? k - kContext : 0;
    while (start < k && ops[start].kind != ' ') ++start;
    size_t end = k;
    size_t quiet = 0;
    while (end < ops.size() && quiet <= 2 * kContext) {
      quiet = ops[end].kind == ' ' ? quiet + 1 : 0;
      ++end;
    }
    end = std::min(ops.size(), end - (quiet > kContext ? quiet - kContext : 0));
    size_t a_start = ops[start].ai, b_start = ops[start].bi, a_len = 0, b_len = 0;
    for (size_t q = start; q < end; ++q) {
      if (ops[q].kind != '+') ++a_len;
      if (ops[q].kind != '-') ++b_len;
    }
    o << "@@ -" << (a_len ? a_start + 1 : a_start) << "," << a_len << " +" << (b_len ? b_start + 1 : b_start) << "," << b_len << " @@\n";
    for (size_t q = start; q < end; ++q)
      o << ops[q].kind << (ops[q].kind == '+' ? y[ops[q].bi] : x[ops[q].ai]) << "\n";
    k = end;
  }
  return o.str();
}

}  // namespace gpuguard::engine
