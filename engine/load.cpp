#include "engine/load.h"
#include "engine/memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/stat.h>

namespace gpuguard::engine {

namespace fs = std::filesystem;

namespace {

// A path's extension, lower-cased (".json").
std::string lower_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool manifest_extension(const fs::path& p) {
  const std::string ext = lower_extension(p);
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
}

// Why a path given (or a link found) cannot be read: a link to nothing names its targets, a loop
// of links says so, and any other error (no permission to search a parent) is told as it is.
std::string missing(const fs::path& path, std::error_code ec) {
  std::error_code link_ec;
  if (ec == std::errc::too_many_symbolic_link_levels) return ec.message();
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory) return "cannot open: " + ec.message();
  if (!fs::is_symlink(fs::symlink_status(path, link_ec))) return "no such file or directory";
  // The chain of links, to the name that is missing: "(b.yaml -> gone.yaml)"; a long one by its
  // first and last. The kernel refuses chains of more than 40 (ELOOP), so this ends.
  std::vector<std::string> chain;
  fs::path at = path;
  while (chain.size() < 40 && fs::is_symlink(fs::symlink_status(at, link_ec))) {
    const fs::path target = fs::read_symlink(at, link_ec);
    if (link_ec) break;
    chain.push_back(target.string());
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  std::string named = chain.empty() ? std::string() : chain.front();
  if (chain.size() > 3) named += " -> ... -> " + chain.back();
  else
    for (size_t i = 1; i < chain.size(); ++i) named += " -> " + chain[i];
  return "a symbolic link to nothing (" + named + ")";
}

bool hidden(const fs::path& p) {
  std::string name = p.filename().string();
  return name.size() > 1 && name[0] == '.' && name != "..";
}

struct FileCloser {
  void operator()(FILE* f) const {
    if (f && f != stdin) std::fclose(f);
  }
};

// Reads at most `limit` bytes into `out` (reusing its capacity); sets `over` when there was more.
// `expected` is the size the file had when opened (0 when unknown, e.g. a pipe): the text is read
// straight into a buffer of that size, so a regular file is read with one copy and no regrowth.
bool read_bounded(FILE* f, size_t limit, size_t expected, std::string& out, bool& over, std::string& error) {
  over = false;
  constexpr size_t kChunk = size_t{1} << 16;
  // One byte more than expected (or than the limit), so that the end of the file is seen without
  // growing when the size was right.
  size_t want = (expected > 0 ? std::min(expected, limit) : std::min(kChunk, limit)) + 1;
  out.resize(want);
  size_t used = 0;
  for (;;) {
    if (used == out.size()) {
      if (used > limit) break;
      out.resize(std::min(std::max(out.size() * 2, kChunk), limit + 1));
    }
    size_t n = std::fread(out.data() + used, 1, out.size() - used, f);
    used += n;
    if (used > limit) break;
    if (used < out.size()) {  // fread stops short only at the end of the file or on an error
      if (std::ferror(f)) {
        error = std::strerror(errno);
        out.clear();
        return false;
      }
      break;
    }
  }
  over = used > limit;
  out.resize(over ? 0 : used);
  return true;
}

std::pair<fs::path, bool> kustomization_of(const fs::path& dir);

// The manifests under a folder, recursively, hidden entries and links to folders skipped. A folder
// that cannot be listed (no permission) or read to its end is an error of its own, and the
// listing goes on with the others: skipping it would lint fewer files than asked, silently.
void list_folder(const fs::path& root, std::vector<fs::path>& found, std::vector<Diagnostic>& unreadable,
                 std::vector<std::pair<fs::path, Input::Kind>>* whole = nullptr) {
  std::vector<fs::path> pending{root};
  while (!pending.empty()) {
    const fs::path folder = std::move(pending.back());
    pending.pop_back();
    std::error_code ec;
    auto refused = [&] {
      unreadable.push_back({Severity::error, folder.string(), {}, "cannot read the directory: " + ec.message()});
    };
    fs::directory_iterator it(folder, ec);
    if (ec) {
      refused();
      continue;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      const fs::path& entry = it->path();
      if (hidden(entry)) continue;
      // A folder is listed, a link to one is not followed; a manifest (or a link to one) is read. The
      // entry's type comes from the listing where the file system gives it: no stat for most.
      std::error_code entry_ec;
      if (!it->is_symlink(entry_ec) && !entry_ec && it->is_directory(entry_ec)) {
        const Input::Kind kind = whole ? folder_kind(entry) : Input::Kind::file;
        if (kind != Input::Kind::file) whole->emplace_back(entry, kind);
        else if (!whole || !kustomization_of(entry).second) pending.push_back(entry);  // a Component's patches are no objects
        continue;
      }
      if (!manifest_extension(entry)) continue;
      if (!entry_ec && it->is_regular_file(entry_ec)) found.push_back(entry);
      else if (entry_ec) unreadable.push_back({Severity::error, entry.string(), {}, missing(entry, entry_ec)});
    }
    if (ec) refused();  // the listing broke off
  }
}

std::string human_bytes(size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

// The chart or kustomization folder `path` lies in (itself included), nearest first, up to a
// folder holding .git or the root.
std::optional<std::pair<fs::path, Input::Kind>> enclosing_folder(const fs::path& path, bool is_dir) {
  std::error_code ec;
  fs::path at = fs::absolute(path, ec).lexically_normal();
  if (ec) return std::nullopt;
  if (!is_dir) at = at.parent_path();
  for (int depth = 0; depth < 64 && !at.empty(); ++depth) {
    const Input::Kind kind = folder_kind(at);
    if (kind != Input::Kind::file) return std::make_pair(at, kind);
    if (fs::exists(at / ".git", ec) || at == at.parent_path()) break;
    at = at.parent_path();
  }
  return std::nullopt;
}

// `folder` as the user would name it: relative to the working directory when below it.
std::string display_path(const fs::path& folder) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec) {
    const fs::path rel = folder.lexically_relative(cwd);
    if (!rel.empty() && *rel.begin() != "..") return rel.string();
  }
  return folder.string();
}

}  // namespace

namespace {

// A folder's kustomization file and whether it is a Component (kustomize.config.k8s.io/v1alpha1
// `kind: Component`, built only as a part of another); "" when it has none.
std::pair<fs::path, bool> kustomization_of(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"kustomization.yaml", "kustomization.yml", "Kustomization"}) {
    const fs::path file = dir / name;
    if (!fs::is_regular_file(file, ec)) continue;
    std::unique_ptr<FILE, FileCloser> f(std::fopen(file.c_str(), "rb"));
    std::string text(64u << 10, '\0');
    text.resize(f ? std::fread(text.data(), 1, text.size(), f.get()) : 0);
    for (size_t at = text.find("kind:"); at != std::string::npos; at = text.find("kind:", at + 5)) {
      if (at != 0 && text[at - 1] != '\n') continue;
      const size_t value = text.find_first_not_of(" \t", at + 5);
      if (value != std::string::npos && text.compare(value, 9, "Component") == 0) return {file, true};
    }
    return {file, false};
  }
  return {};
}

}  // namespace

Input::Kind folder_kind(const fs::path& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir / "Chart.yaml", ec)) return Input::Kind::chart;
  const auto [file, component] = kustomization_of(dir);
  return !file.empty() && !component ? Input::Kind::kustomization : Input::Kind::file;
}

std::vector<Input> expand_inputs(const std::vector<std::string>& paths, std::vector<Diagnostic>& diags, bool whole_folders) {
  std::vector<Input> out;
  std::vector<fs::path> wholes;  // the chart and kustomization folders already given, absolute
  auto add_whole = [&](const fs::path& folder, Input::Kind kind, const std::string& display) {
    std::error_code ec;
    const fs::path key = fs::weakly_canonical(fs::absolute(folder, ec), ec);
    if (std::find(wholes.begin(), wholes.end(), key) != wholes.end()) return;
    wholes.push_back(key);
    Input in{display, folder, false, Input::Kind::file, nullptr};
    in.kind = kind;
    out.push_back(std::move(in));
  };
  for (const auto& p : paths) {
    if (p == "-") {
      out.push_back({"<stdin>", {}, true, Input::Kind::file, nullptr});
      continue;
    }
    std::error_code ec;
    fs::path path(p);
    auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
      diags.push_back({Severity::error, p, {}, missing(path, ec)});
      continue;
    }
    if (whole_folders) {
      if (auto enclosing = enclosing_folder(path, fs::is_directory(st))) {
        // The folder itself keeps the name it was given; one found upward is named from here.
        const bool given = fs::is_directory(st) && folder_kind(path) != Input::Kind::file;
        add_whole(given ? path : enclosing->first, enclosing->second, given ? p : display_path(enclosing->first));
        continue;
      }
    }
    if (!fs::is_directory(st)) {
      out.push_back({p, path, false, Input::Kind::file, nullptr});
      continue;
    }
    std::vector<fs::path> found;
    std::vector<Diagnostic> unreadable;
    std::vector<std::pair<fs::path, Input::Kind>> whole;
    list_folder(path, found, unreadable, whole_folders ? &whole : nullptr);
    std::sort(whole.begin(), whole.end());
    for (const auto& [folder, kind] : whole) add_whole(folder, kind, folder.string());
    // In path order, as the files are (a folder's entries before a sibling `a-b.yaml`), whatever
    // order the folder lists them in.
    std::stable_sort(unreadable.begin(), unreadable.end(),
                     [](const Diagnostic& a, const Diagnostic& b) { return fs::path(a.file) < fs::path(b.file); });
    for (auto& d : unreadable) diags.push_back(std::move(d));
    std::sort(found.begin(), found.end());
    for (auto& f : found) out.push_back({f.string(), f, false, Input::Kind::file, nullptr});
  }
  return out;
}

Syntax input_syntax(std::string_view name, std::string_view text) {
  // UTF-16 (a byte order mark; what Windows PowerShell 5 writes): libyaml decodes it, JSON is UTF-8.
  if (text.starts_with("\xFF\xFE") || text.starts_with("\xFE\xFF")) return Syntax::yaml;
  const std::string ext = lower_extension(fs::path(name));
  if (ext == ".json") return Syntax::json;
  if (ext == ".yaml" || ext == ".yml") return Syntax::yaml;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const size_t first = text.find_first_not_of(" \t\r\n\v\f");
  return first != std::string_view::npos && text[first] == '{' ? Syntax::json : Syntax::yaml;
}

uint32_t load_text(std::string_view text, const SourceRef& source, const LoadOptions& options,
                   const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags, uint32_t first_line,
                   uint32_t first_document, Syntax syntax) {
  std::string name = source ? source->path : std::string();
  auto on_document = [&](YamlDocument&& doc) {
    std::vector<Object> objects;
    objects_from_document(doc.positions, doc.start, source, first_document + doc.index, objects, diags);
    // Only the objects hold the document now: the evaluation compacts a kept object's document
    // when nothing else shares it.
    doc.positions.reset();
    for (auto& o : objects) on_object(std::move(o));
  };
  // A Helm template given as a file (outside its chart): libyaml's errors about `{{` would say
  // nothing useful. When a YAML text with Go template actions does not load, it gets one error
  // that says what it is, and none of its objects are linted. Text that loads is linted as it is:
  // `{{ $value }}` in a PrometheusRule's annotation is data.
  if (syntax == Syntax::yaml && options.template_check && text.find("{{") != std::string_view::npos) {
    std::vector<Object> held;
    std::vector<Diagnostic> held_diags;
    auto on_held = [&](YamlDocument&& doc) {
      objects_from_document(doc.positions, doc.start, source, first_document + doc.index, held, held_diags);
      doc.positions.reset();
    };
    const uint32_t documents = load_yaml_stream(text, name, options.yaml, on_held, held_diags, first_line);
    const bool failed = std::any_of(held_diags.begin(), held_diags.end(), [](const Diagnostic& d) { return d.severity == Severity::error; });
    if (!failed) {
      for (auto& o : held) on_object(std::move(o));
      for (auto& d : held_diags) diags.push_back(std::move(d));
      return documents;
    }
    const size_t at = text.find("{{");
    const size_t line_start = text.rfind('\n', at);
    const Pos pos{first_line + 1 + static_cast<uint32_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n')),
                  static_cast<uint32_t>(at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1)};
    diags.push_back({Severity::error, name, pos,
                     "Go template actions ({{ ... }}) outside a Helm chart: this is a template, not a manifest, and it does not load "
                     "as YAML; lint the chart's folder (the one holding Chart.yaml), which gpuguard renders with helm template"});
    return documents;
  }
  return syntax == Syntax::json ? load_json_stream(text, name, options.yaml, on_document, diags, first_line)
                                : load_yaml_stream(text, name, options.yaml, on_document, diags, first_line);
}

namespace {

// The buffer an input's text is read into. Its memory is handed to the next input read on the
// same thread, so a run over many files reads each into pages that are already mapped (a fresh
// buffer per file faulted in every page of every file: a third of a lint run's page faults). A
// buffer a large file grew past kKeepBytes is let go.
class ReadBuffer {
 public:
  ReadBuffer() { text_.swap(spare()); }
  ReadBuffer(const ReadBuffer&) = delete;
  ReadBuffer& operator=(const ReadBuffer&) = delete;
  ~ReadBuffer() {
    if (text_.capacity() <= kKeepBytes) text_.swap(spare());
  }
  std::string& text() { return text_; }

 private:
  static constexpr size_t kKeepBytes = size_t{8} << 20;
  static std::string& spare() {
    thread_local std::string buffer;
    return buffer;
  }
  std::string text_;
};

// Reads an input, at most max_file_bytes; false (with a diagnostic) when it cannot be read.
bool read_input(const Input& input, const LoadOptions& options, std::string& text, std::vector<Diagnostic>& diags) {
  auto too_big = [&] {
    diags.push_back({Severity::error, input.display, {},
                     "input is over the size limit of " + human_bytes(options.max_file_bytes) + " (--max-file-size)"});
    return false;
  };
  if (input.text) {
    if (input.text->size() > options.max_file_bytes) return too_big();
    text.assign(*input.text);
    return true;
  }
  if (input.kind != Input::Kind::file) {
    diags.push_back({Severity::error, input.display, {}, "a chart or kustomization folder that was not rendered"});
    return false;
  }
  std::unique_ptr<FILE, FileCloser> f(input.is_stdin ? stdin : std::fopen(input.path.c_str(), "rb"));
  if (!f) {
    diags.push_back({Severity::error, input.display, {}, std::string("cannot open: ") + std::strerror(errno)});
    return false;
  }
  size_t expected = 0;
  struct stat st {};
  if (fstat(fileno(f.get()), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    if (static_cast<uintmax_t>(st.st_size) > options.max_file_bytes) return too_big();
    expected = static_cast<size_t>(st.st_size);
  }
  std::string error;
  bool over = false;
  if (!read_bounded(f.get(), options.max_file_bytes, expected, text, over, error)) {
    diags.push_back({Severity::error, input.display, {}, "cannot read: " + error});
    return false;
  }
  if (over) return too_big();
  return true;
}

}  // namespace

void load_input(const Input& input, uint32_t index, const LoadOptions& options,
                const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags) {
  auto source = std::make_shared<SourceFile>(SourceFile{input.display, index});
  ReadBuffer buffer;
  if (!read_input(input, options, buffer.text(), diags)) return;
  LoadOptions these = options;
  these.template_check = options.template_check && !input.text;
  load_text(buffer.text(), source, these, on_object, diags, 0, 0, input_syntax(input.display, buffer.text()));
}

namespace {

// A part of the work: a whole input, or a range of documents of a large one.
struct Unit {
  size_t input = 0;
  SourceRef source;
  std::shared_ptr<const std::string> text;  // set for parts of a split file
  size_t begin = 0, end = 0;
  uint32_t first_line = 0;
  bool first_part = true;   // whole inputs, and the first part of a split one
  size_t bytes = 0;         // its text's size (a whole input's as its file said before it was read)
  Syntax syntax = Syntax::yaml;  // of a text read here (a whole input's is told once it is read)
};

struct Parsed {
  std::vector<Object> objects;
  std::vector<Diagnostic> diags;
  uint32_t documents = 0;
};

// Byte offsets where a new line starts with a document marker, near equal splits of `text`.
std::vector<size_t> split_points(const std::string& text, size_t parts) {
  std::vector<size_t> cuts;
  for (size_t k = 1; k < parts; ++k) {
    size_t want = text.size() * k / parts;
    size_t p = text.find("\n---", want);
    while (p != std::string::npos) {
      size_t line = p + 1;
      char after = line + 3 < text.size() ? text[line + 3] : '\n';
      if (after == '\n' || after == ' ' || after == '\r' || after == '\t') break;
      p = text.find("\n---", p + 1);
    }
    if (p == std::string::npos) break;
    if (cuts.empty() || p + 1 > cuts.back()) cuts.push_back(p + 1);
  }
  return cuts;
}

}  // namespace

unsigned load_inputs(const std::vector<Input>& inputs, const LoadOptions& options, unsigned jobs,
                     const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags,
                     const std::function<void(std::span<Object>, size_t)>& on_parsed) {
  if (jobs <= 1) {
    uint32_t index = 0;
    for (const auto& in : inputs) load_input(in, index++, options, on_object, diags);
    return 1;
  }
  // The units, in order: large files are read here and cut at document markers.
  constexpr size_t kSplitBytes = 4u << 20;
  std::vector<Unit> units;
  std::vector<std::vector<Diagnostic>> read_errors(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto source = std::make_shared<SourceFile>(SourceFile{inputs[i].display, static_cast<uint32_t>(i)});
    std::error_code ec;
    const bool regular = !inputs[i].is_stdin && fs::is_regular_file(inputs[i].path, ec);
    const uintmax_t size = regular ? fs::file_size(inputs[i].path, ec) : 0;
    const bool big = inputs[i].is_stdin || (regular && !ec && size > kSplitBytes);
    if (!big) {
      // A file whose size is not known beforehand (a pipe) counts as large.
      const size_t bytes = regular && !ec ? static_cast<size_t>(size) : kSplitBytes;
      units.push_back(Unit{i, source, nullptr, 0, 0, 0, true, bytes, Syntax::yaml});
      continue;
    }
    auto text = std::make_shared<std::string>();
    if (!read_input(inputs[i], options, *text, read_errors[i])) {
      units.push_back(Unit{i, source, std::make_shared<std::string>(), 0, 0, 0, true, 0, Syntax::yaml});
      continue;
    }
    // A JSON text is read whole: it has no document markers to cut it at.
    const Syntax syntax = input_syntax(inputs[i].display, *text);
    std::vector<size_t> cuts;
    if (syntax == Syntax::yaml) cuts = split_points(*text, std::max<size_t>(2, text->size() / kSplitBytes));
    size_t begin = 0;
    uint32_t line = 0;
    for (size_t k = 0; k <= cuts.size(); ++k) {
      size_t end = k < cuts.size() ? cuts[k] : text->size();
      units.push_back(Unit{i, source, text, begin, end, line, k == 0, end - begin, syntax});
      line += static_cast<uint32_t>(std::count(text->begin() + static_cast<std::ptrdiff_t>(begin), text->begin() + static_cast<std::ptrdiff_t>(end), '\n'));
      begin = end;
    }
  }

  size_t total_bytes = 0;
  for (const Unit& unit : units) total_bytes += unit.bytes;
  if (units.size() == 1 || total_bytes < options.threaded_min_bytes) {
    // One unit of work (a worker would parse and check it while this thread waited), or so little
    // that starting the threads costs what they would save (2-core VM, perf stat -r 30, lint of
    // four files: 92 KiB 15.0 ms on one thread, 18.1 on two; 256 KiB 21.6 and 21.2; 820 KiB 41.0
    // and 39.1): one after the other, here.
    uint32_t documents = 0;  // in the input so far, for its next part
    for (const Unit& unit : units) {
      if (unit.first_part) {
        for (auto& d : read_errors[unit.input]) diags.push_back(std::move(d));
        documents = 0;
      }
      if (!unit.text) load_input(inputs[unit.input], static_cast<uint32_t>(unit.input), options, on_object, diags);
      else if (unit.begin < unit.end || unit.first_part)
        documents += load_text(std::string_view(*unit.text).substr(unit.begin, unit.end - unit.begin), unit.source, options,
                               on_object, diags, unit.first_line, documents, unit.syntax);
    }
    return 1;
  }

  // Workers parse units ahead of the consumer, at most `window` of them. They also free what the
  // consumer has done with (objects it did not keep), so the consumer's thread spends no time on it.
  const size_t window = static_cast<size_t>(jobs) + 1;
  std::vector<std::optional<Parsed>> results(units.size());
  std::vector<std::vector<Object>> spent;
  std::mutex mu;
  std::condition_variable cv;
  // Units handed to workers, taken by the consumer, and done with (their objects are in `spent`).
  size_t next = 0, consumed = 0, retired = 0;
  const unsigned arena = current_arena();
  auto worker = [&] {
    use_arena(arena);  // what one thread frees, the others reuse (engine/memory.h)
    for (;;) {
      size_t u = units.size();
      std::vector<std::vector<Object>> free_now;
      {
        std::unique_lock lock(mu);
        auto parse_next = [&] { return next < units.size() && next < consumed + window; };
        cv.wait(lock, [&] { return parse_next() || !spent.empty() || retired == units.size(); });
        free_now.swap(spent);
        if (parse_next()) u = next++;
        else if (free_now.empty()) return;  // every unit is done with, and its objects freed
      }
      free_now.clear();
      if (u == units.size()) continue;  // only freed objects: wait for more
      Parsed p;
      const Unit& unit = units[u];
      // Objects are checked ahead (on_parsed) as they are parsed, without waiting for the units
      // before this one: their ids, and where a part's documents start, are given on adding them.
      auto collect = [&](Object&& o) {
        p.objects.push_back(std::move(o));
        if (on_parsed) on_parsed(p.objects, p.objects.size() - 1);
      };
      if (unit.text) {
        if (unit.begin < unit.end || unit.first_part)
          p.documents = load_text(std::string_view(*unit.text).substr(unit.begin, unit.end - unit.begin), unit.source, options,
                                  collect, p.diags, unit.first_line, 0, unit.syntax);
      } else {
        ReadBuffer buffer;
        LoadOptions these = options;
        these.template_check = options.template_check && !inputs[unit.input].text;
        if (read_input(inputs[unit.input], options, buffer.text(), p.diags))
          p.documents = load_text(buffer.text(), unit.source, these, collect, p.diags, 0, 0,
                                  input_syntax(inputs[unit.input].display, buffer.text()));
      }
      {
        std::lock_guard lock(mu);
        results[u] = std::move(p);
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(worker);
  uint32_t documents = 0;  // of the input so far, before the unit's (a part of a split file)
  for (size_t u = 0; u < units.size(); ++u) {
    Parsed p;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return results[u].has_value(); });
      p = std::move(*results[u]);
      results[u].reset();
      consumed = u + 1;
    }
    cv.notify_all();
    if (units[u].first_part) {
      for (auto& d : read_errors[units[u].input]) diags.push_back(std::move(d));
      documents = 0;
    }
    for (auto& o : p.objects) {
      o.document += documents;
      on_object(std::move(o));
    }
    documents += p.documents;
    for (auto& d : p.diags) diags.push_back(std::move(d));
    {
      std::lock_guard lock(mu);
      spent.push_back(std::move(p.objects));
      ++retired;
    }
    if (retired == units.size()) cv.notify_all();  // the workers free the last objects and end
    else cv.notify_one();
  }
  for (auto& t : threads) t.join();
  return jobs;
}

}  // namespace gpuguard::engine
