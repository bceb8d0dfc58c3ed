// engine/yaml_block.h against libyaml: for each document the block reader takes, the events
// libyaml's parser gives for it (kind, plain or not, line, column, text); for each it refuses,
// nothing is lost (libyaml reads it). Over every YAML file of the tests, the examples and the corpus,
// mutations of them, and hand-written cases of what the reader must refuse; and end to end:
// load_yaml_stream gives the same documents (values and positions) and diagnostics with the
// block reader as without it.
#include <doctest/doctest.h>
#include <yaml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "engine/yaml_block.h"
#include "engine/yaml_load.h"
#include "tests/support/support.h"

using namespace gpuguard::engine;

namespace {

struct Ev {
  BlockEvent::Kind kind = BlockEvent::Kind::scalar;
  bool plain = false;
  uint32_t line = 0, col = 0;
  std::string text;
  bool operator==(const Ev&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Ev& e) {
  return o << static_cast<int>(e.kind) << (e.plain ? " plain " : " ") << e.line << ":" << e.col << " \"" << e.text << "\"";
}

enum class Libyaml : uint8_t { document, no_document, error, outside };  // outside: anchors, tags, aliases

// libyaml's events for the first document of `text`.
Libyaml libyaml_events(std::string_view text, std::vector<Ev>& out) {
  out.clear();
  yaml_parser_t p;
  yaml_parser_initialize(&p);
  yaml_parser_set_input_string(&p, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  Libyaml result = Libyaml::no_document;
  for (bool more = true; more;) {
    yaml_event_t e;
    if (!yaml_parser_parse(&p, &e)) {
      result = Libyaml::error;
      break;
    }
    const Ev at{BlockEvent::Kind::end, false, static_cast<uint32_t>(e.start_mark.line), static_cast<uint32_t>(e.start_mark.column), ""};
    switch (e.type) {
      case YAML_DOCUMENT_END_EVENT:
        result = Libyaml::document;
        more = false;
        break;
      case YAML_STREAM_END_EVENT: more = false; break;
      case YAML_SCALAR_EVENT: {
        if (e.data.scalar.tag || e.data.scalar.anchor) result = Libyaml::outside;
        Ev s = at;
        s.kind = BlockEvent::Kind::scalar;
        s.plain = e.data.scalar.plain_implicit != 0;
        s.text.assign(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        out.push_back(s);
        break;
      }
      case YAML_MAPPING_START_EVENT:
      case YAML_SEQUENCE_START_EVENT: {
        const bool map = e.type == YAML_MAPPING_START_EVENT;
        if (map ? (e.data.mapping_start.tag || e.data.mapping_start.anchor) : (e.data.sequence_start.tag || e.data.sequence_start.anchor))
          result = Libyaml::outside;
        Ev s = at;
        s.kind = map ? BlockEvent::Kind::mapping : BlockEvent::Kind::sequence;
        out.push_back(s);
        break;
      }
      case YAML_MAPPING_END_EVENT:
      case YAML_SEQUENCE_END_EVENT: out.push_back(Ev{}); out.back().kind = BlockEvent::Kind::end; break;
      case YAML_ALIAS_EVENT: result = Libyaml::outside; break;
      default: break;
    }
    yaml_event_delete(&e);
    if (result == Libyaml::outside) break;
  }
  yaml_parser_delete(&p);
  return result;
}

// The block reader's events in the same form (an end's position is not compared).
std::vector<Ev> block_events(std::string_view text, const BlockEvents& read) {
  std::vector<Ev> out;
  for (const BlockEvent& e : read.events) {
    Ev s{e.kind, e.plain, e.line, e.col, std::string(read.text(e, text))};
    if (e.kind == BlockEvent::Kind::end) s = Ev{}, s.kind = BlockEvent::Kind::end;
    out.push_back(s);
  }
  return out;
}

// The documents of a stream as load_yaml_stream reads them cut: at each line starting with `---`.
std::vector<std::string_view> documents_of(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  auto marker = [&](size_t off) {
    return text.substr(off, 3) == "---" && (off + 3 == text.size() || text[off + 3] == ' ' || text[off + 3] == '\n');
  };
  for (size_t off = 0; off < text.size();) {
    const size_t nl = text.find('\n', off);
    if (nl == std::string_view::npos) break;
    off = nl + 1;
    if (off < text.size() && marker(off)) {
      out.push_back(text.substr(start, off - start));
      start = off;
    }
  }
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

// One document: what the block reader takes, libyaml reads the same way. Returns whether the
// reader took it.
bool agrees(std::string_view text, std::string& why) {
  BlockEvents read;
  const BlockRead r = read_block_document(text, read);
  if (r == BlockRead::refused) return false;
  std::vector<Ev> expected;
  const Libyaml l = libyaml_events(text, expected);
  if (r == BlockRead::no_document) {
    if (l != Libyaml::no_document) why = "the reader found no document, libyaml did";
    return true;
  }
  if (l != Libyaml::document) {
    why = l == Libyaml::error ? "libyaml refuses a document the reader took" : "the reader took anchors, tags or aliases";
    return true;
  }
  const std::vector<Ev> got = block_events(text, read);
  if (got != expected) {
    std::ostringstream o;
    o << "events differ:\n";
    for (size_t i = 0; i < std::max(got.size(), expected.size()); ++i) {
      o << "  " << (i < expected.size() ? (std::ostringstream() << expected[i]).str() : "-") << "   |   "
        << (i < got.size() ? (std::ostringstream() << got[i]).str() : "-") << (i < got.size() && i < expected.size() && got[i] == expected[i] ? "" : "   <<<") << "\n";
    }
    why = o.str();
  }
  return true;
}

std::string load_dump(std::string_view text, bool block_reader) {
  YamlLimits limits;
  limits.block_reader = block_reader;
  std::vector<Diagnostic> diags;
  std::string out;
  const uint32_t used = load_yaml_stream(
      text, "f.yaml", limits,
      [&](YamlDocument&& d) {
        out += "doc " + std::to_string(d.index) + " at " + std::to_string(d.start.line) + ":" + std::to_string(d.start.col) + ": ";
        d.positions->describe(d.positions->root(), out);
        out += "\n";
      },
      diags, 3);
  for (const auto& d : diags) out += "diag " + std::to_string(d.pos.line) + ":" + std::to_string(d.pos.col) + " " + d.message + "\n";
  return out + "indices " + std::to_string(used) + "\n";
}

std::vector<std::filesystem::path> yaml_files() {
  std::vector<std::filesystem::path> dirs{gpuguard::test::source_dir() / "tests", gpuguard::test::source_dir() / "examples"};
  if (auto shared = gpuguard::test::shared_dir()) dirs.push_back(*shared / "corpus");
  std::vector<std::filesystem::path> files;
  for (const auto& d : dirs)
    for (const auto& e : std::filesystem::recursive_directory_iterator(d))
      if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml")) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

TEST_SUITE("unit") {

TEST_CASE("the block reader gives libyaml's events for manifests in block style, and refuses the rest") {
  struct Case {
    std::string text;
    bool taken;
  };
  const std::vector<Case> cases = {
      {"apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  labels: {app: x, tier: \"web\"}\nspec:\n  containers:\n  - name: c\n"
       "    image: 'img:1'\n    args: [a, b, \"c d\"]\n    resources: {limits: {nvidia.com/gpu: 1}}\n",
       true},
      {"---\na:\n- 1\n- x: y\n  z:\n  -\n  - ''\nb: |\n  line 1\n\n   line 2\n  # not a comment\nc: |-\n  x\nd:\ne: {}\nf: []\n", true},
      {"# only a comment\n\n", true},
      {"---\n# an empty document\n", true},
      {"---", true},                     // an empty document at the end, without a line break
      {"---\n# c", true},
      {"--- # c\nk: v # c\nl: \"q\" # c\n", true},
      {"k: -1\nl: ?x\nm: :y\nn: a#b\no: 'a\"b'\np: \"a'b\"\nq: http://x:1/y\n", true},
      {"- - a\n", false},              // a sequence in a sequence on one line
      {"k: &a v\n", false},            // an anchor
      {"k: *a\n", false},              // an alias
      {"k: !!str 1\n", false},         // a tag
      {"k: >\n  folded\n", false},     // a folded scalar
      {"k: |+\n  keep\n", false},      // keep chomping
      {"k: |2\n  x\n", false},         // an indentation indicator
      {"k: a\n  b\n", false},          // a multi-line plain scalar
      {"k: 'a\n  b'\n", false},        // a multi-line quoted scalar
      {"k: \"a\\nb\"\n", false},       // an escape
      {"k: 'it''s'\n", false},         // a quote written twice
      {"k:\tv\n", false},              // a tab
      {"k: v\r\n", false},             // a carriage return
      {"k: caf\xc3\xa9\n", false},     // a character outside ASCII
      {"? k\n: v\n", false},           // a complex key
      {"k: {a: 1,}\n", false},         // a trailing comma
      {"k: {a}\n", false},             // a flow entry without a value
      {"k: [a: 1]\n", false},          // a single-pair mapping in a flow sequence
      {"k: {a: [1,\n  2]}\n", false},  // a flow collection over two lines
      {"k: v: w\n", false},            // libyaml refuses
      {"k: v\n  w: x\n", false},       // libyaml refuses
      {"just a scalar\n", false},      // a scalar root
      {"k: |\n\n  x\n", false},        // a blank line before a literal's content
      {"k: v\n- a\n", false},          // libyaml refuses
      {"a: {" + std::string(1025, 'k') + ": v}\n", false},  // a flow key too long for libyaml
      {"a: {" + std::string(1024, 'k') + ": v}\n", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    std::string why;
    CHECK(agrees(c.text, why) == c.taken);
    CHECK(why == "");
  }
}

TEST_CASE("the block reader agrees with libyaml on every document of the YAML files of the tests, examples and corpus") {
  size_t taken = 0, documents = 0;
  for (const auto& f : yaml_files()) {
    const std::string text = gpuguard::test::read_file(f);
    for (std::string_view doc : documents_of(text)) {
      ++documents;
      std::string why;
      if (agrees(doc, why)) ++taken;
      if (!why.empty()) FAIL(f.string() << ":\n" << doc.substr(0, 2000) << "\n" << why);
    }
    if (load_dump(text, true) != load_dump(text, false)) FAIL("load_yaml_stream differs with the block reader: " << f.string());
  }
  MESSAGE("block reader: " << taken << " of " << documents << " documents");
  CHECK(taken * 2 > documents);  // most manifests are in its subset
}

TEST_CASE("the block reader agrees with libyaml after one-byte changes through the YAML files") {
  // At positions spread through each file: deleting the byte, and setting it to two of a set of
  // bytes that matter to YAML (the fuzz target `yaml` tries the rest).
  const std::string bytes = " -:#'\"|>{}[],\n&*!?%@`\t\r.0a\\";
  constexpr size_t kPerFile = gpuguard::test::kSanitized ? 6 : 24;
  size_t checked = 0;
  for (const auto& f : yaml_files()) {
    const std::string text = gpuguard::test::read_file(f);
    if (text.empty() || text.size() > 8000) continue;
    for (size_t k = 0; k < kPerFile; ++k) {
      const size_t i = (k * 7919 + text.size() * 31) % text.size();
      std::vector<std::string> variants{text.substr(0, i) + text.substr(i + 1)};
      for (size_t b : {(i + k) % bytes.size(), (i * 7 + 3) % bytes.size()}) {
        variants.push_back(text);
        variants.back()[i] = bytes[b];
      }
      for (const std::string& v : variants) {
        for (std::string_view doc : documents_of(v)) {
          std::string why;
          agrees(doc, why);
          if (!why.empty()) FAIL(f.string() << " changed at byte " << i << ":\n" << doc.substr(0, 2000) << "\n" << why);
        }
        const std::string with = load_dump(v, true), without = load_dump(v, false);
        if (with != without)
          FAIL("load_yaml_stream differs with the block reader: " << f.string() << " changed at byte " << i << ":\n"
                                                                   << v << "\nwith it:\n" << with << "\nwithout it:\n" << without);
        ++checked;
      }
    }
  }
  CHECK(checked > 1000);
}

}  // TEST_SUITE
