#pragma once
// Errors as values at untrusted boundaries: `Expected<T, E>` is std::expected where the standard
// library has it, and a small equivalent where the compiler cannot use libstdc++'s <expected>
// (clang 14, which builds the fuzz targets, lacks the C++20 concepts level it requires).

#include <version>

#if defined(__cpp_lib_expected) && __cpp_lib_expected >= 202202L
#include <expected>

namespace gpuguard::engine {
template <class T, class E>
using Expected = std::expected<T, E>;
template <class E>
using Unexpected = std::unexpected<E>;
}  // namespace gpuguard::engine

#else
#include <optional>
#include <utility>
#include <variant>

namespace gpuguard::engine {

template <class E>
class Unexpected {
 public:
  explicit Unexpected(E e) : error_(std::move(e)) {}
  E& error() & { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_;
};
template <class E>
Unexpected(E) -> Unexpected<E>;

// The subset of std::expected gpuguard uses: a value or an error, tested with `if (x)`.
template <class T, class E>
class Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  template <class G>
  Expected(Unexpected<G> u) : v_(std::in_place_index<1>, std::move(u).error()) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& operator*() & { return std::get<0>(v_); }
  const T& operator*() const& { return std::get<0>(v_); }
  T&& operator*() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  E& error() & { return std::get<1>(v_); }
  const E& error() const& { return std::get<1>(v_); }
  template <class U>
  T value_or(U&& other) const& { return has_value() ? std::get<0>(v_) : static_cast<T>(std::forward<U>(other)); }

 private:
  std::variant<T, E> v_;
};

// Success without a value, or an error (std::expected<void, E>).
template <class E>
class Expected<void, E> {
 public:
  Expected() = default;
  template <class G>
  Expected(Unexpected<G> u) : error_(std::in_place, std::move(u).error()) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool has_value() const { return !error_.has_value(); }
  explicit operator bool() const { return has_value(); }
  void operator*() const {}
  E& error() & { return *error_; }
  const E& error() const& { return *error_; }

 private:
  std::optional<E> error_;
};

}  // namespace gpuguard::engine
#endif
