#pragma once
// FlatMap: the object type of the engine's JSON trees (engine/json.h). A map kept as one sorted
// vector of (key, value) pairs instead of std::map's tree of nodes: the same interface as far as
// nlohmann::basic_json and the engine use it, the same order (keys sorted as std::string compares
// them) and so the same iteration, equality, dumps and patches — but one allocation per object
// instead of one per member, members next to each other in memory, and look-ups over contiguous
// keys. A Kubernetes object's mappings have a handful of keys each.
//
// Inserting a key that sorts before existing ones moves the members after it, so building a large
// object in an arbitrary key order one insertion at a time would be quadratic. The engine's
// readers do not do that: they collect an object's members on a stack and hand them over when the
// object ends (take: one sort of their positions), and nlohmann's parser is only used through
// engine::parse_json's SAX builder, which does the same. References to members are invalidated by
// an insertion into or an erasure from the same object (as with a vector), not by changes to
// other objects.

#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpuguard::engine {

template <class Key, class T, class Compare = std::less<>, class Allocator = std::allocator<std::pair<const Key, T>>>
class FlatMap {
 public:
  using key_type = Key;
  using mapped_type = T;
  using value_type = std::pair<Key, T>;
  using key_compare = Compare;
  using allocator_type = typename std::allocator_traits<Allocator>::template rebind_alloc<value_type>;
  using Items = std::vector<value_type, allocator_type>;
  using size_type = typename Items::size_type;
  using difference_type = typename Items::difference_type;
  using reference = value_type&;
  using const_reference = const value_type&;
  using iterator = typename Items::iterator;
  using const_iterator = typename Items::const_iterator;

  FlatMap() = default;
  template <class It>
  FlatMap(It first, It last) {
    insert(first, last);
  }
  FlatMap(std::initializer_list<value_type> init) { insert(init.begin(), init.end()); }

  // The members stack[first..] at the top of a builder's stack, moved out in key order and popped
  // off it (of equal keys the last one is kept). One move per member, whatever the order.
  template <class Stack>
  static FlatMap take(Stack& stack, size_t first) {
    FlatMap m;
    const size_t last = stack.size();
    const size_t n = last - first;
    m.items_.reserve(n);
    auto key_less = [&](size_t a, size_t b) { return Compare{}(stack[a].first, stack[b].first); };
    bool sorted = true;
    for (size_t i = first + 1; i < last && sorted; ++i) sorted = key_less(i - 1, i);
    if (sorted) {
      for (size_t i = first; i < last; ++i) m.items_.push_back(std::move(stack[i]));
      stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
      return m;
    }
    // Positions in key order, ties by position (stable), so the last of equal keys comes last: an
    // insertion sort on the stack for a mapping of a few keys, else a stable sort.
    constexpr size_t kSmall = 32;
    std::array<size_t, kSmall> small{};
    std::vector<size_t> large;
    size_t* order = small.data();
    if (n > kSmall) {
      large.resize(n);
      order = large.data();
    }
    for (size_t i = 0; i < n; ++i) order[i] = first + i;
    if (n <= kSmall) {
      for (size_t i = 1; i < n; ++i) {
        const size_t at = order[i];
        size_t j = i;
        for (; j > 0 && key_less(at, order[j - 1]); --j) order[j] = order[j - 1];
        order[j] = at;
      }
    } else {
      std::stable_sort(large.begin(), large.end(), key_less);
    }
    for (size_t i = 0; i < n; ++i) {
      if (i + 1 < n && !key_less(order[i], order[i + 1])) continue;  // a later one has the same key
      m.items_.push_back(std::move(stack[order[i]]));
    }
    stack.erase(stack.begin() + static_cast<std::ptrdiff_t>(first), stack.end());
    return m;
  }

  iterator begin() noexcept { return items_.begin(); }
  iterator end() noexcept { return items_.end(); }
  const_iterator begin() const noexcept { return items_.begin(); }
  const_iterator end() const noexcept { return items_.end(); }
  const_iterator cbegin() const noexcept { return items_.cbegin(); }
  const_iterator cend() const noexcept { return items_.cend(); }
  [[nodiscard]] bool empty() const noexcept { return items_.empty(); }
  size_type size() const noexcept { return items_.size(); }
  void reserve(size_type n) { items_.reserve(n); }
  size_type max_size() const noexcept { return items_.max_size(); }
  void clear() noexcept { items_.clear(); }

  template <class K>
  iterator lower_bound(const K& key) {
    return std::lower_bound(items_.begin(), items_.end(), key, Less{});
  }
  template <class K>
  const_iterator lower_bound(const K& key) const {
    return std::lower_bound(items_.begin(), items_.end(), key, Less{});
  }
  template <class K>
  iterator find(const K& key) {
    auto it = lower_bound(key);
    return it != items_.end() && !Compare{}(key, it->first) ? it : items_.end();
  }
  template <class K>
  const_iterator find(const K& key) const {
    auto it = lower_bound(key);
    return it != items_.end() && !Compare{}(key, it->first) ? it : items_.end();
  }
  template <class K>
  size_type count(const K& key) const {
    return find(key) != end() ? 1 : 0;
  }
  template <class K>
  bool contains(const K& key) const {
    return find(key) != end();
  }

  template <class K, class... Args>
  std::pair<iterator, bool> try_emplace(K&& key, Args&&... args) {
    auto it = lower_bound(key);
    if (it != items_.end() && !Compare{}(key, it->first)) return {it, false};
    return {place(it, std::forward<K>(key), std::forward<Args>(args)...), true};
  }
  template <class K, class... Args>
  std::pair<iterator, bool> emplace(K&& key, Args&&... args) {
    return try_emplace(std::forward<K>(key), std::forward<Args>(args)...);
  }
  std::pair<iterator, bool> insert(const value_type& value) { return try_emplace(value.first, value.second); }
  std::pair<iterator, bool> insert(value_type&& value) { return try_emplace(std::move(value.first), std::move(value.second)); }
  template <class It>
  void insert(It first, It last) {
    // std::map's: a key already present (or earlier in the range) keeps its value.
    for (; first != last; ++first) try_emplace(first->first, first->second);
  }

  template <class K>
  T& operator[](K&& key) {
    return try_emplace(std::forward<K>(key)).first->second;
  }
  iterator erase(iterator pos) { return items_.erase(pos); }
  iterator erase(const_iterator pos) { return items_.erase(pos); }
  iterator erase(const_iterator first, const_iterator last) { return items_.erase(first, last); }
  template <class K, class = std::enable_if_t<!std::is_convertible_v<const K&, const_iterator>>>
  size_type erase(const K& key) {
    auto it = find(key);
    if (it == end()) return 0;
    items_.erase(it);
    return 1;
  }

  friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.items_ == b.items_; }
  friend auto operator<=>(const FlatMap& a, const FlatMap& b) { return a.items_ <=> b.items_; }

 private:
  struct Less {
    template <class K>
    bool operator()(const value_type& item, const K& key) const {
      return Compare{}(item.first, key);
    }
  };

  template <class K, class... Args>
  iterator place(iterator at, K&& key, Args&&... args) {
    return items_.emplace(at, std::piecewise_construct, std::forward_as_tuple(Key(std::forward<K>(key))),
                          std::forward_as_tuple(std::forward<Args>(args)...));
  }

  Items items_;
};

}  // namespace gpuguard::engine
