// engine::Records (engine/records.h): a mergeable rule state's records, read in input order
// whatever runs they were gathered and appended in.

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/records.h"

using namespace gpuguard::engine;

namespace {

// The records in iteration order, through the const and the mutable iterators (which must agree).
template <typename T>
std::vector<T> listed(Records<T>& r) {
  std::vector<T> out;
  for (const T& v : std::as_const(r)) out.push_back(v);
  std::vector<T> mutable_order;
  for (T& v : r) mutable_order.push_back(v);
  CHECK(mutable_order == out);
  CHECK(out.size() == r.size());
  CHECK(r.empty() == out.empty());
  return out;
}

}  // namespace

TEST_SUITE("unit") {
  TEST_CASE("Records: appended states read as the one state that saw every run in order") {
    std::mt19937 rng(7);
    for (int round = 0; round < 200; ++round) {
      CAPTURE(round);
      // States of consecutive runs of objects, some empty, merged left to right as lint --jobs does.
      const int states = static_cast<int>(rng() % 6) + 1;
      std::vector<Records<std::string>> shards(static_cast<size_t>(states));
      std::vector<std::string> expected;
      int next = 0;
      for (auto& shard : shards) {
        const int n = static_cast<int>(rng() % 4);  // 0 to 3 records: empty states too
        for (int i = 0; i < n; ++i) {
          std::string v = "record-" + std::to_string(next++) + std::string(rng() % 40, 'x');  // some past SSO
          expected.push_back(v);
          if (rng() % 2) shard.push_back(v);
          else CHECK(shard.emplace_back(v) == v);
        }
      }
      Records<std::string> merged = std::move(shards.front());
      for (size_t i = 1; i < shards.size(); ++i) {
        append(merged, shards[i]);
        CHECK(shards[i].empty());
        CHECK(shards[i].begin() == shards[i].end());
      }
      CHECK(listed(merged) == expected);
      if (!expected.empty()) CHECK(merged.front() == expected.front());
      // Records pushed after a merge follow the merged ones.
      merged.push_back("after");
      expected.push_back("after");
      CHECK(listed(merged) == expected);
      // Standard algorithms see the same sequence.
      CHECK(std::count_if(merged.begin(), merged.end(), [](const std::string& s) { return s.size() > 20; }) ==
            std::count_if(expected.begin(), expected.end(), [](const std::string& s) { return s.size() > 20; }));
      merged.clear();
      CHECK(merged.empty());
      CHECK(merged.size() == 0);
      CHECK(merged.begin() == merged.end());
    }
  }

  TEST_CASE("Records: a large state is kept in runs of fixed size, never moved into a larger block") {
    // 64 KiB of records a run: 2,048 of 32 bytes (std::string). Pushed across several run
    // boundaries, merged with a state that is itself past one, and pushed to again.
    Records<std::string> early, later;
    std::vector<std::string> expected;
    std::vector<const std::string*> addresses;
    for (int i = 0; i < 5000; ++i) {
      expected.push_back("early-" + std::to_string(i));
      addresses.push_back(&early.emplace_back(expected.back()));
    }
    // A record, once past the first run, stays where it was made while more are added.
    for (size_t i = 2048; i < addresses.size(); ++i) CHECK(*addresses[i] == expected[i]);
    size_t k = 0;
    for (const auto& v : early) {
      if (k >= 2048) CHECK(&v == addresses[k]);  // a vector doubling would have moved these at 4,096
      ++k;
    }
    for (int i = 0; i < 3000; ++i) {
      later.push_back("later-" + std::to_string(i));
      expected.push_back("later-" + std::to_string(i));
    }
    append(early, later);
    for (int i = 0; i < 2100; ++i) {
      early.push_back("after-" + std::to_string(i));
      expected.push_back("after-" + std::to_string(i));
    }
    CHECK(listed(early) == expected);
    CHECK(early.front() == "early-0");
  }

  TEST_CASE("Records: a merge adopts the later state's records without moving them") {
    Records<std::unique_ptr<int>> early, later;
    early.push_back(std::make_unique<int>(1));
    later.push_back(std::make_unique<int>(2));
    later.push_back(std::make_unique<int>(3));
    const int* two = later.begin()->get();
    const std::unique_ptr<int>* slot = &*later.begin();
    append(early, later);
    std::vector<int> values;
    for (const auto& p : early) values.push_back(*p);
    CHECK(values == std::vector<int>{1, 2, 3});
    auto it = early.begin();
    ++it;
    CHECK(it->get() == two);
    CHECK(&*it == slot);  // the same element, not a moved copy
    // Into an empty state: the later state's records become its own.
    Records<std::unique_ptr<int>> empty;
    append(empty, early);
    CHECK(empty.size() == 3);
    CHECK(early.empty());
    CHECK(empty.front().get() != nullptr);
    CHECK(*empty.front() == 1);
  }
}
