#include <doctest/doctest.h>

#include "engine/quantity.h"

using gpuguard::engine::json;
using gpuguard::engine::Quantity;

namespace {
Quantity q(const char* s) {
  auto r = Quantity::parse(s);
  REQUIRE_MESSAGE(r.has_value(), s);
  return *r;
}
}  // namespace

TEST_SUITE("unit") {

TEST_CASE("quantities parse like apimachinery's ParseQuantity") {
  CHECK(q("1") == Quantity::from_int(1));
  CHECK(q("3000m") == Quantity::from_int(3));
  CHECK(q("1Ki") == Quantity::from_int(1024));
  CHECK(q("1k") == Quantity::from_int(1000));
  CHECK(q("1e3") == Quantity::from_int(1000));
  CHECK(q("1E3") == Quantity::from_int(1000));
  CHECK(q("512Gi") == Quantity::from_int(512LL << 30));
  CHECK(q("1.5Gi") == Quantity::from_int(3LL << 29));
  CHECK(q("+5") == Quantity::from_int(5));
  CHECK(q("-5") == Quantity::from_int(-5));
  CHECK(q("0") == Quantity());
  CHECK(q("0.5").to_string() == "0.5");
  CHECK(q(".5").to_string() == "0.5");
  CHECK(q("1.").to_string() == "1");
  CHECK(q("1500m").to_string() == "1.5");
  CHECK(q("1n").to_string() == "0.000000001");
  CHECK(q("1e-3").to_string() == "0.001");
}

TEST_CASE("integers and exact comparison") {
  CHECK(q("3000m").is_integer());
  CHECK_FALSE(q("1500m").is_integer());
  CHECK_FALSE(q("0.5").is_integer());
  CHECK(q("3Ki").is_integer());
  CHECK(q("1") == q("1000m"));
  CHECK(q("1Gi") > q("1G"));
  CHECK(q("2") > q("1999m"));
  CHECK(q("1k") == q("1000"));
  CHECK(q("3000m").to_int64() == 3);
  CHECK_FALSE(q("1500m").to_int64().has_value());
}

TEST_CASE("values round up to a nano and are capped at 2^63-1") {
  CHECK(q("0.0000000001") == q("1n"));
  CHECK(q("1.0000000001").to_string() == "1.000000001");
  CHECK_FALSE(q("1.0000000001").is_integer());
  CHECK(q("-0.0000000001") == q("-1n"));
  CHECK(q("1e100") == q("9223372036854775807"));
  CHECK(q("99999999999999999999999Ei") == q("9223372036854775807"));
  CHECK(q("1e-100") == q("1n"));
}

TEST_CASE("malformed quantities are refused with the API's message") {
  for (const char* s : {"", "abc", "1.5.5", "1Qi", "1 Gi", "1e", "1e+", "--1", "1K", "0x10", "1e3m", "1Mi2"}) {
    auto r = Quantity::parse(s);
    CHECK_MESSAGE(!r.has_value(), s);
  }
  CHECK(Quantity::parse("abc").error().find("quantities must match the regular expression") == 0);
}

TEST_CASE("JSON values: strings are trimmed, numbers use Go's JSON text, null is zero") {
  CHECK(*Quantity::from_json(json(" 2 ")) == Quantity::from_int(2));
  CHECK(*Quantity::from_json(json(2)) == Quantity::from_int(2));
  CHECK(*Quantity::from_json(json(1.0)) == Quantity::from_int(1));
  CHECK(Quantity::from_json(json(1.5))->to_string() == "1.5");
  CHECK(*Quantity::from_json(json(1e21)) == q("1e21"));
  CHECK(*Quantity::from_json(json(nullptr)) == Quantity());
  CHECK_FALSE(Quantity::from_json(json(true)).has_value());
  CHECK_FALSE(Quantity::from_json(json::array()).has_value());
}

TEST_CASE("arithmetic saturates") {
  CHECK(q("1") + q("2") == Quantity::from_int(3));
  CHECK(q("1.5") * 2 == Quantity::from_int(3));
  CHECK(q("9223372036854775807") * 3 == q("9223372036854775807"));
}

}  // TEST_SUITE
