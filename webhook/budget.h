#pragma once
// A memory budget shared by everything a request holds that its size decides: the bodies being
// read and the documents being built and evaluated. A request takes its part before it holds it,
// so what all requests hold at once stays within the budget whatever the clients send; when the
// budget is spent, a request waits for a part (until its deadline) or is refused with 503.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>

namespace gpuguard::webhook {

class Budget {
 public:
  explicit Budget(size_t bytes) : total_(bytes) {}

  [[nodiscard]] size_t total() const { return total_; }
  [[nodiscard]] size_t used() const {
    std::lock_guard lock(mu_);
    return used_;
  }

  // Takes `n` bytes if they are free now.
  [[nodiscard]] bool try_take(size_t n) {
    std::lock_guard lock(mu_);
    if (n > total_ - used_) return false;
    used_ += n;
    return true;
  }
  // Waits until `n` bytes are free or `deadline` passes (false: nothing taken). `n` over the whole
  // budget is never free.
  [[nodiscard]] bool take(size_t n, std::chrono::steady_clock::time_point deadline) {
    if (n > total_) return false;
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, deadline, [&] { return n <= total_ - used_; })) return false;
    used_ += n;
    return true;
  }
  void give_back(size_t n) {
    {
      std::lock_guard lock(mu_);
      used_ -= n <= used_ ? n : used_;
    }
    cv_.notify_all();
  }

 private:
  const size_t total_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  size_t used_ = 0;
};

// A part of a budget, given back when it goes out of scope.
class BudgetShare {
 public:
  BudgetShare() = default;
  explicit BudgetShare(Budget* budget) : budget_(budget) {}
  BudgetShare(const BudgetShare&) = delete;
  BudgetShare& operator=(const BudgetShare&) = delete;
  BudgetShare(BudgetShare&& o) noexcept : budget_(o.budget_), bytes_(o.bytes_) { o.bytes_ = 0; }
  BudgetShare& operator=(BudgetShare&& o) noexcept {
    if (this != &o) {
      release();
      budget_ = o.budget_;
      bytes_ = o.bytes_;
      o.bytes_ = 0;
    }
    return *this;
  }
  ~BudgetShare() { release(); }

  // Grows the share by `n` bytes if they are free now.
  [[nodiscard]] bool grow(size_t n) {
    if (!budget_ || !budget_->try_take(n)) return false;
    bytes_ += n;
    return true;
  }
  // Grows it by `n`, waiting until `deadline` for them.
  [[nodiscard]] bool grow_by(size_t n, std::chrono::steady_clock::time_point deadline) {
    if (!budget_ || !budget_->take(n, deadline)) return false;
    bytes_ += n;
    return true;
  }
  [[nodiscard]] size_t bytes() const { return bytes_; }
  [[nodiscard]] Budget* budget() const { return budget_; }
  void release() {
    if (budget_ && bytes_) budget_->give_back(bytes_);
    bytes_ = 0;
  }

 private:
  Budget* budget_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gpuguard::webhook
