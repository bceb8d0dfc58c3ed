#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "engine/json.h"
#include "engine/json_bytes.h"
#include "engine/json_write.h"
#include "engine/object.h"
#include "engine/positions.h"

using namespace gpuguard::engine;

TEST_SUITE("unit") {

TEST_CASE("member finds each key of an object, and no other, whatever bytes the keys share") {
  // Keys with long common prefixes (across the eight-byte words), prefixes of one another, the
  // empty key, and bytes above 0x7f (which compare as unsigned).
  std::vector<std::string> keys = {"", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "abcdefgh\x80", "abcdefgh\xff",
                                   "abcdefgh\x7f", "abcdefghabcdefgh", "abcdefghabcdefgi", "abcdefghabcdefg", "\x80", "\xff\xff"};
  const std::string alphabet = std::string("a\x7f\x80\xff", 4);
  for (char c1 : alphabet)
    for (char c2 : alphabet)
      for (size_t pad : {0, 7, 8, 9, 15, 16}) {
        keys.push_back(std::string(pad, 'k') + c1 + c2);
        keys.push_back(std::string(pad, 'k') + c1);
      }
  json object = json::object();
  for (size_t i = 0; i < keys.size(); ++i) object[keys[i]] = i;
  for (const auto& k : object.items()) {
    const json* found = member(object, k.key());
    REQUIRE(found != nullptr);
    CHECK(keys[found->get<size_t>()] == k.key());
  }
  for (const std::string absent : {"b", "abcdefgh\x81", "abcdefghabcdefgj", "abcdefghabcdefghx", "kkkkkkkk", "\xff", "zzzzzzzzzzzz"})
    if (!object.contains(absent)) CHECK(member(object, absent) == nullptr);
  CHECK(member(json::array(), "a") == nullptr);
  CHECK(member(json("a"), "a") == nullptr);
}

TEST_CASE("dispose frees a tree leaves first, and a tree of any depth") {
  json j = json::parse(R"({"a": {"b": [1, "two", {"c": null}], "d": {}}, "e": [[[]]], "f": "x"})");
  dispose(j);
  CHECK(j == json::object());
  json scalar = "text";
  dispose(scalar);
  CHECK(scalar == json("text"));

  // Far deeper than kDisposeDepth, in arrays and objects: what is below the bound is left to
  // nlohmann's own (iterative) destructor, so neither dispose nor the destructor recurses deeply.
  auto deep = [](bool objects) {
    json root = objects ? json::object() : json::array();
    json* cur = &root;
    for (int i = 0; i < 200000; ++i) {
      if (objects) cur = &(*cur)["k"];
      else {
        cur->push_back(json::array());
        cur = &cur->back();
      }
      if (objects) *cur = json::object();
    }
    return root;
  };
  for (bool objects : {false, true}) {
    json d = deep(objects);
    dispose(d);
    CHECK(d.empty());
    Object o;
    o.set_body(deep(objects));
  }  // ~Object disposes its body
}

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

TEST_CASE("plain_json_bytes stops at the first byte a JSON string must escape or decode, eight at a time too") {
  auto plain = [](unsigned char u) { return u >= 0x20 && u != '"' && u != '\\' && u < 0x80; };
  // Every byte at every position of strings of 0 to 20 bytes around the eight-byte words, over
  // backgrounds at the edges of the plain range; a second byte after it changes nothing.
  for (unsigned char bg : {' ', '!', '#', '[', ']', 'x', '~', '\x7f'}) {
    for (size_t len = 0; len <= 20; ++len) {
      for (size_t k = 0; k < len; ++k) {
        for (unsigned b = 0; b < 256; ++b) {
          std::string s(len, static_cast<char>(bg));
          s[k] = static_cast<char>(b);
          if (k + 3 < len) s[k + 3] = '\0';
          const size_t expected = plain(static_cast<unsigned char>(b)) ? (k + 3 < len ? k + 3 : len) : k;
          const char* stop = plain_json_bytes(s.data(), s.data() + s.size());
          if (static_cast<size_t>(stop - s.data()) != expected) {
            FAIL_CHECK("background " << int(bg) << ", length " << len << ", byte " << b << " at " << k);
            return;
          }
        }
      }
    }
  }
  CHECK(plain_json_bytes(nullptr, nullptr) == nullptr);
}

TEST_CASE("JSON strings are written byte for byte as nlohmann writes them, valid UTF-8 or not") {
  auto nlohmann = [](const std::string& s) { return json(s).dump(-1, ' ', false, json::error_handler_t::replace); };
  auto ours = [](const std::string& s) {
    std::string out = "prefix,";  // appended to what is there, which stays
    append_json_string(out, s);
    return out;
  };
  const std::vector<std::string> cases = {
      "", "plain", "q\"b\\s/\x7f\x01\x1f\n\t", "8 \u2265 8 GPUs", "\u00e9t\u00e9 \u20ac \U0001F680 \U0010FFFF",
      "\xC0\x80",          // overlong NUL
      "\xE0\x80\xAF",      // overlong /
      "\xED\xA0\x80",      // a surrogate
      "\xF4\x90\x80\x80",  // beyond U+10FFFF
      "\xF5\x80\x80\x80", "\x80", "ab\xBF" "cd", "\xE2\x82", "\xE2\x82x", "\xF0\x9F\x9A", "ok \xE2\x89\xA5 then \xFF",
  };
  for (const auto& c : cases) {
    CAPTURE(c);
    CHECK(ours(c) == "prefix," + nlohmann(c));
  }
  // Every string of one to three bytes drawn from bytes that matter to UTF-8 and JSON.
  const std::vector<unsigned char> bytes = {0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
                                            0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff, 'a'};
  size_t checked = 0;
  for (unsigned char a : bytes) {
    for (int len = 1; len <= 3; ++len) {
      for (unsigned char b : bytes) {
        for (unsigned char c : bytes) {
          std::string s(1, static_cast<char>(a));
          if (len > 1) s += static_cast<char>(b);
          if (len > 2) s += static_cast<char>(c);
          // Alone, and between plain runs long enough for the eight-byte scan.
          const std::string padded = "before the " + s + " and after";
          if (ours(s) != "prefix," + nlohmann(s) || ours(padded) != "prefix," + nlohmann(padded)) {
            CAPTURE(s);
            FAIL("differs from nlohmann");
          }
          ++checked;
          if (len < 3) break;
        }
        if (len < 2) break;
      }
    }
  }
  CHECK(checked == 27 + 27 * 27 + 27 * 27 * 27);
}

TEST_CASE("append_json writes what nlohmann's dump writes, or throws what it throws") {
  // Random trees of every type: integers at their limits, floats of every magnitude (and NaN and
  // infinity, which dump writes as null), strings with escapes, UTF-8 and invalid bytes, keys that
  // need escaping, deep and empty collections.
  std::mt19937_64 rng(20261206);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> strings = {"", "a", "nvidia.com/gpu", "q\"b\\s\n\t\x01\x7f", "\u00e9t\u00e9 \U0001F680",
                                            "bad \xff byte", "\xE2\x82", "~/"};
  std::function<json(int)> make = [&](int depth) -> json {
    switch (depth > 4 ? pick(7) : pick(9)) {
      case 0: return nullptr;
      case 1: return pick(2) == 0;
      case 2: {
        const int64_t edge[] = {0, -1, 1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
        return pick(2) == 0 ? json(edge[pick(5)]) : json(static_cast<int64_t>(rng()));
      }
      case 3: return pick(2) == 0 ? json(std::numeric_limits<uint64_t>::max()) : json(static_cast<uint64_t>(rng()));
      case 4: {
        const double special[] = {0.0, -0.0, 1.0, 0.1, 1e-7, 1e21, 1e300, 5e-324, std::nan(""), HUGE_VAL, -HUGE_VAL};
        return pick(2) == 0 ? json(special[pick(11)]) : json(std::ldexp(static_cast<double>(rng() % 100000) - 50000, pick(200) - 100));
      }
      case 5:
      case 6: return strings[static_cast<size_t>(pick(static_cast<int>(strings.size())))];
      case 7: {
        json a = json::array();
        for (int i = pick(5); i > 0; --i) a.push_back(make(depth + 1));
        return a;
      }
      default: {
        json o = json::object();
        for (int i = pick(5); i > 0; --i) o[strings[static_cast<size_t>(pick(static_cast<int>(strings.size())))]] = make(depth + 1);
        return o;
      }
    }
  };
  int collections = 0, thrown = 0;
  for (int n = 0; n < 5000; ++n) {
    const json value = make(0);
    for (const auto handler : {json::error_handler_t::replace, json::error_handler_t::ignore, json::error_handler_t::strict}) {
      std::string expected;
      int error = 0;
      try {
        expected = value.dump(-1, ' ', false, handler);
      } catch (const json::exception& e) {
        error = e.id;
      }
      std::string out = "prefix,";  // appended to what is there, which stays
      if (error != 0) {
        int got = 0;
        try {
          append_json(out, value, handler);
        } catch (const json::exception& e) {
          got = e.id;
        }
        REQUIRE(got == error);  // strict: type_error 316, as dump throws it
        ++thrown;
        continue;
      }
      append_json(out, value, handler);
      REQUIRE(out == "prefix," + expected);
    }
    collections += value.is_structured() ? 1 : 0;
  }
  CHECK(collections > 1000);
  CHECK(thrown > 500);
}

}  // TEST_SUITE
