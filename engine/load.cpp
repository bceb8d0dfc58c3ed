#include "engine/load.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace gpuguard::engine {

namespace fs = std::filesystem;

namespace {

bool manifest_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".yaml" || ext == ".yml" || ext == ".json";
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

// Reads at most `limit` bytes; sets `over` when there was more.
bool read_bounded(FILE* f, size_t limit, std::string& out, bool& over, std::string& error) {
  over = false;
  out.clear();
  char buf[1 << 16];
  for (;;) {
    size_t n = std::fread(buf, 1, sizeof buf, f);
    if (n > 0) {
      if (out.size() + n > limit) {
        over = true;
        return true;
      }
      out.append(buf, n);
    }
    if (n < sizeof buf) {
      if (std::ferror(f)) {
        error = std::strerror(errno);
        return false;
      }
      return true;
    }
  }
}

std::string human_bytes(size_t n) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

}  // namespace

std::vector<Input> expand_inputs(const std::vector<std::string>& paths, std::vector<Diagnostic>& diags) {
  std::vector<Input> out;
  for (const auto& p : paths) {
    if (p == "-") {
      out.push_back({"<stdin>", {}, true});
      continue;
    }
    std::error_code ec;
    fs::path path(p);
    auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) {
      diags.push_back({Severity::error, p, {}, "no such file or directory"});
      continue;
    }
    if (!fs::is_directory(st)) {
      out.push_back({p, path, false});
      continue;
    }
    std::vector<fs::path> found;
    fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
    if (ec) {
      diags.push_back({Severity::error, p, {}, "cannot read the directory: " + ec.message()});
      continue;
    }
    while (it != end) {
      const fs::path& entry = it->path();
      bool is_dir = it->is_directory(ec);
      if (hidden(entry)) {
        if (is_dir) it.disable_recursion_pending();
      } else if (!is_dir && manifest_extension(entry) && it->is_regular_file(ec)) {
        found.push_back(entry);
      }
      it.increment(ec);
      if (ec) {
        diags.push_back({Severity::error, entry.string(), {}, "cannot read: " + ec.message()});
        ec.clear();
      }
    }
    std::sort(found.begin(), found.end());
    for (auto& f : found) out.push_back({f.string(), f, false});
  }
  return out;
}

void load_text(std::string_view text, const SourceRef& source, const LoadOptions& options,
               const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags) {
  std::string name = source ? source->path : std::string();
  load_yaml_stream(
      text, name, options.yaml,
      [&](YamlDocument&& doc) {
        std::vector<Object> objects;
        objects_from_document(std::move(doc.body), std::move(doc.positions), doc.start, source, doc.index, objects, diags);
        for (auto& o : objects) on_object(std::move(o));
      },
      diags);
}

void load_input(const Input& input, uint32_t index, const LoadOptions& options,
                const std::function<void(Object&&)>& on_object, std::vector<Diagnostic>& diags) {
  auto source = std::make_shared<SourceFile>(SourceFile{input.display, index});
  auto too_big = [&] {
    diags.push_back({Severity::error, input.display, {},
                     "input is over the size limit of " + human_bytes(options.max_file_bytes) + " (--max-file-size)"});
  };
  if (!input.is_stdin) {
    std::error_code ec;
    if (fs::is_regular_file(input.path, ec)) {
      auto size = fs::file_size(input.path, ec);
      if (!ec && size > options.max_file_bytes) return too_big();
    }
  }
  std::unique_ptr<FILE, FileCloser> f(input.is_stdin ? stdin : std::fopen(input.path.c_str(), "rb"));
  if (!f) {
    diags.push_back({Severity::error, input.display, {}, std::string("cannot open: ") + std::strerror(errno)});
    return;
  }
  std::string text, error;
  bool over = false;
  if (!read_bounded(f.get(), options.max_file_bytes, text, over, error)) {
    diags.push_back({Severity::error, input.display, {}, "cannot read: " + error});
    return;
  }
  if (over) return too_big();
  load_text(text, source, options, on_object, diags);
}

}  // namespace gpuguard::engine
