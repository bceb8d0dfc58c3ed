#pragma once
// Records: what a mergeable rule state gathers in `check` (rule.h), in input order.
//
// The records are kept as the runs they were gathered in, so that `append` of a later state adopts
// its runs whole. `lint --jobs` checks runs of consecutive objects on several threads, each into a
// state of its own, and merges the states on the consuming thread, in input order: appended into
// one growing vector, every merge moved record after record and every growth copied the
// projections of the whole input so far into fresh pages, on the thread the others wait for.
//
// A Records holds no empty run. It reads like a vector that is only appended to: push_back,
// emplace_back, front, size, empty, clear, and forward iteration in input order.

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

namespace gpuguard::engine {

template <typename T>
class Records {
  template <bool Const>
  class Iter {
    using Runs = std::conditional_t<Const, const std::vector<std::vector<T>>, std::vector<std::vector<T>>>;

   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const T*, T*>;
    using reference = std::conditional_t<Const, const T&, T&>;

    Iter() = default;
    Iter(Runs* runs, size_t run) : runs_(runs), run_(run) {}
    operator Iter<true>() const  // NOLINT(google-explicit-constructor)
      requires(!Const)
    {
      return Iter<true>(runs_, run_, item_);
    }

    reference operator*() const { return (*runs_)[run_][item_]; }
    pointer operator->() const { return &(*runs_)[run_][item_]; }
    Iter& operator++() {
      if (++item_ == (*runs_)[run_].size()) {
        ++run_;
        item_ = 0;
      }
      return *this;
    }
    Iter operator++(int) {
      Iter before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.run_ == b.run_ && a.item_ == b.item_; }

   private:
    friend class Iter<!Const>;
    Iter(Runs* runs, size_t run, size_t item) : runs_(runs), run_(run), item_(item) {}
    Runs* runs_ = nullptr;
    size_t run_ = 0;
    size_t item_ = 0;
  };

 public:
  using value_type = T;
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  void push_back(T value) { tail().push_back(std::move(value)); }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    T value(std::forward<Args>(args)...);  // made first: a throwing constructor leaves no empty run
    return tail().emplace_back(std::move(value));
  }

  [[nodiscard]] bool empty() const { return runs_.empty(); }
  [[nodiscard]] size_t size() const {
    size_t n = 0;
    for (const auto& run : runs_) n += run.size();
    return n;
  }
  [[nodiscard]] T& front() { return runs_.front().front(); }
  [[nodiscard]] const T& front() const { return runs_.front().front(); }
  void clear() { runs_.clear(); }

  iterator begin() { return iterator(&runs_, 0); }
  iterator end() { return iterator(&runs_, runs_.size()); }
  const_iterator begin() const { return const_iterator(&runs_, 0); }
  const_iterator end() const { return const_iterator(&runs_, runs_.size()); }

  // Moves the records of `later` after these (its runs, not record by record); `later` is left empty.
  void append(Records& later) {
    if (runs_.empty()) {
      runs_.swap(later.runs_);
      return;
    }
    for (auto& run : later.runs_) runs_.push_back(std::move(run));
    later.runs_.clear();
  }

 private:
  // The run to append to, with room for one more record. The first run grows as a vector does (the
  // webhook's request records a few); once it holds kRun, each new run is allocated at kRun, so a
  // large input's records take no more than they need (a vector doubling to 100,000 records of a
  // rule holds up to twice that) and are never copied into a larger block.
  std::vector<T>& tail() {
    if (runs_.empty() || (runs_.back().size() == runs_.back().capacity() && runs_.back().size() >= kRun)) {
      std::vector<T> run;
      run.reserve(runs_.empty() ? 1 : kRun);  // before the run is added: a failure leaves no empty run
      runs_.push_back(std::move(run));
    }
    return runs_.back();
  }
  // About 64 KiB of records a run.
  static constexpr size_t kRun = std::max<size_t>(16, (size_t{64} << 10) / sizeof(T));

  std::vector<std::vector<T>> runs_;
};

// For `RuleState::merge`: moves the records of `later` after those of `to`.
template <typename T>
void append(Records<T>& to, Records<T>& later) {
  to.append(later);
}

}  // namespace gpuguard::engine
