#pragma once
// A reader for JSON files and streams (`kubectl get -o json`, a manifest saved as .json, objects
// written one after another as `kubectl get -w -o json` prints them): each top-level value as the
// events engine/yaml_load.cpp builds documents from (engine/yaml_block.h's BlockEvent), with the
// line and column where each starts, so a finding in a JSON file points where it is.
//
// It reads JSON as RFC 8259 and nlohmann (the webhook's reader, engine/json_parse.h) do, not as
// YAML: surrogate-pair escapes make one character, raw DEL and U+0085 stay what they are, a key
// has no 1,024-character limit, and numbers are JSON's (a number too large for a double is an error). Like
// nlohmann it refuses a lone surrogate and ill-formed UTF-8, and skips a UTF-8 byte order mark.
// Like Go's json.Decoder (kubectl), it reads a stream of values: objects and arrays may follow one
// another directly, other values need white space between them. tests/unit/json_stream_test.cpp
// holds each value it reads to what parse_json gives for the same text.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/yaml_block.h"

namespace gpuguard::engine {

class JsonStream {
 public:
  explicit JsonStream(std::string_view text);

  enum class Next : uint8_t {
    value,  // the next top-level value's events are in `out`
    end,    // nothing but white space is left
    error,  // not JSON: error() says where and why; the stream cannot be read on
  };
  // Where a value's events go as they are read (nothing holds the events of a whole value): a
  // scalar's `text` is valid for the call; the other events have none.
  class Sink {
   public:
    virtual void event(const BlockEvent& e, std::string_view text) = 0;

   protected:
    ~Sink() = default;
  };

  // Reads the next top-level value into `sink`. Scalar events are strings (plain = false: a key,
  // or a string value) or the text of a number, `true`, `false` or `null` (plain = true); their
  // `owned`, `offset` and `size` are not used. Lines and columns are 0-based from the start of the
  // text; columns count characters, as libyaml's do. Containers nested deeper than `max_depth` are
  // an error, and so is a value longer than `max_bytes` (told as soon as it is read past). After
  // an error, the events given of the value are to be dropped.
  Next next(Sink& sink, uint32_t max_depth, size_t max_bytes);

  struct Error {
    uint32_t line = 0;  // 0-based
    uint32_t col = 0;
    std::string message;
    bool over_limit = false;  // the value is longer than max_bytes (or the text than 4 GiB)
  };
  [[nodiscard]] const Error& error() const { return error_; }
  // Byte offset, line and column (0-based) where the last value read, or refused, starts.
  [[nodiscard]] size_t value_begin() const { return value_begin_; }
  [[nodiscard]] uint32_t value_line() const { return value_line_; }
  [[nodiscard]] uint32_t value_col() const { return value_col_; }

 private:
  void skip_space();
  // Line and column of byte `at`, which is at or after the last one asked for on its line.
  void locate(size_t at, uint32_t& line, uint32_t& col);
  bool fail(size_t at, std::string message);
  bool string(std::string_view& out);
  bool number(size_t& end);
  bool scalar(Sink& sink);

  std::string_view text_;
  size_t p_ = 0;
  uint32_t line_ = 0;
  size_t col_at_ = 0;  // byte offset up to which col_ counts
  uint32_t col_ = 0;
  size_t value_begin_ = 0;
  uint32_t value_line_ = 0, value_col_ = 0;
  std::string scratch_;  // a string with escapes, decoded
  Error error_;
};

}  // namespace gpuguard::engine
