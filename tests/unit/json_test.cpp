#include <doctest/doctest.h>

#include "engine/json.h"
#include "engine/positions.h"

using namespace gpuguard::engine;

TEST_SUITE("unit") {

TEST_CASE("numbers print as Go's encoding/json prints them") {
  CHECK(go_json_number(json(1.0)) == "1");
  CHECK(go_json_number(json(1.5)) == "1.5");
  CHECK(go_json_number(json(1e21)) == "1e+21");
  CHECK(go_json_number(json(1e20)) == "100000000000000000000");
  CHECK(go_json_number(json(0.000001)) == "0.000001");
  CHECK(go_json_number(json(0.0000001)) == "1e-7");
  CHECK(go_json_number(json(-2.5)) == "-2.5");
  CHECK(go_json_number(json(42)) == "42");
}

TEST_CASE("FormatFloat(f, 'g', -1, 32) for float keys") {
  CHECK(go_format_float_g(1.5, 32) == "1.5");
  CHECK(go_format_float_g(1000.0, 32) == "1000");
  CHECK(go_format_float_g(1e6, 32) == "1e+06");
  CHECK(go_format_float_g(3.14159265358979, 32) == "3.1415927");
  CHECK(go_format_float_g(0.0001, 32) == "0.0001");
  CHECK(go_format_float_g(0.00001, 32) == "1e-05");
  CHECK(go_format_float_g(1e36, 32) == "1e+36");
}

TEST_CASE("as_int accepts integral floats only") {
  CHECK(as_int(json(2)) == 2);
  CHECK(as_int(json(2.0)) == 2);
  CHECK_FALSE(as_int(json(2.5)).has_value());
  CHECK_FALSE(as_int(json("2")).has_value());
}

TEST_CASE("JSON pointers escape ~ and /") {
  CHECK(pointer_escape("nvidia.com/gpu") == "nvidia.com~1gpu");
  CHECK(pointer_escape("a~b") == "a~0b");
  CHECK(pointer_unescape("nvidia.com~1gpu") == "nvidia.com/gpu");
  CHECK(pointer_tokens("/a/b~1c/0") == std::vector<std::string>{"a", "b/c", "0"});
  CHECK(pointer_tokens("").empty());
  CHECK(pointer_tokens("/") == std::vector<std::string>{""});
  CHECK(pointer_join("/x", "a/b") == "/x/a~1b");
}

}  // TEST_SUITE
