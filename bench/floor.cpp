// bench/floor: the floor for lint throughput: read the same files and parse them with libyaml's
// event API, doing nothing with the events. Each file is read whole, with one read into a buffer
// reused from file to file (as gpuguard reads its inputs), so the floor pays no more for reading
// than the linter does.

#include <yaml.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  size_t events = 0, files = 0;
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.path().extension() == ".yaml") paths.push_back(e.path());
    } else {
      paths.push_back(p);
    }
  }
  std::string text;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(p, ec);
    FILE* f = ec ? nullptr : std::fopen(p.c_str(), "rb");
    if (!f) {
      std::fprintf(stderr, "cannot read %s\n", p.c_str());
      return 1;
    }
    text.resize(static_cast<size_t>(size));
    text.resize(std::fread(text.data(), 1, text.size(), f));
    std::fclose(f);
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    yaml_event_t ev;
    for (;;) {
      if (!yaml_parser_parse(&parser, &ev)) break;
      bool end = ev.type == YAML_STREAM_END_EVENT;
      yaml_event_delete(&ev);
      ++events;
      if (end) break;
    }
    yaml_parser_delete(&parser);
    ++files;
  }
  std::printf("%zu files, %zu events\n", files, events);
  return 0;
}
