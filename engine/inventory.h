#pragma once
// The objects cross-object rules read, indexed by kind, namespace and name (O(1) look-ups), and
// whether the input is the whole cluster ("complete").
//
// Only the kinds some enabled rule declared in `reads` are kept, in full; everything else passes
// through `check` and is gone. A layered inventory (the webhook's cluster state plus the admitted
// object) sees the objects of its base, minus the ones it removes, plus its own.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/object.h"
#include "engine/rule.h"

namespace gpuguard::engine {

// Orders kinds as KindRef does, and finds them by {group, kind} views without building strings.
struct KindLess {
  using is_transparent = void;
  using View = std::pair<std::string_view, std::string_view>;
  static View view(const KindRef& k) { return {k.group, k.kind}; }
  static View view(const View& k) { return k; }
  template <class A, class B>
  bool operator()(const A& a, const B& b) const { return view(a) < view(b); }
};
using KindSet = std::set<KindRef, KindLess>;

class Inventory {
 public:
  Inventory() = default;
  explicit Inventory(const std::set<KindRef>& kept_kinds)
      : kept_(std::make_shared<const KindSet>(kept_kinds.begin(), kept_kinds.end())) {}
  // Kinds shared with other inventories (an evaluation plan's), not copied.
  explicit Inventory(std::shared_ptr<const KindSet> kept_kinds) : kept_(std::move(kept_kinds)) {}
  // Moved, never copied (its namespace slots point into its own entries).
  Inventory(Inventory&&) = default;
  Inventory& operator=(Inventory&&) = default;
  Inventory(const Inventory&) = delete;
  Inventory& operator=(const Inventory&) = delete;
  // A layer over `base`: look-ups see the base's objects except those replaced or removed here.
  static Inventory layered(std::shared_ptr<const Inventory> base);

  [[nodiscard]] bool keeps(std::string_view group, std::string_view kind) const;
  // Keeps the object if its kind is kept; an object with the same kind, namespace and name
  // replaces the earlier one (as a later `kubectl apply` would).
  void add(std::shared_ptr<const Object> obj, std::string effective_namespace);
  // Removes an object by identity (the webhook's DELETE).
  void remove(std::string_view group, std::string_view kind, std::string_view ns, std::string_view name);

  // Every kept object of a kind, in the order they were added (base first).
  [[nodiscard]] std::vector<const Object*> list(std::string_view group, std::string_view kind) const;
  // Kept objects of a kind in one namespace.
  [[nodiscard]] std::vector<const Object*> list(std::string_view group, std::string_view kind, std::string_view ns) const;
  [[nodiscard]] const Object* find(std::string_view group, std::string_view kind, std::string_view ns,
                                   std::string_view name) const;
  // The effective namespace the object was added with.
  [[nodiscard]] const std::string& namespace_of(const Object& obj) const;
  [[nodiscard]] size_t size() const;
  // One past the largest object id ever added (base included), so a layer can number its own.
  [[nodiscard]] uint32_t next_id() const;

  // Complete: the input is the whole cluster, so "X does not exist" is a fact, not a guess.
  void set_complete(bool c) { complete_ = c; }
  [[nodiscard]] bool complete() const { return complete_ || (base_ && base_->complete()); }
  // Why an inventory that should be the whole cluster is not ("the watch of PriorityClass has
  // failed since …"); the webhook passes it on as a warning. Empty when there is nothing to say.
  void set_note(std::string note) { note_ = std::move(note); }
  [[nodiscard]] const std::string& note() const { return note_.empty() && base_ ? base_->note() : note_; }

 private:
  struct Key {
    std::string group, kind, ns, name;
    bool operator==(const Key&) const = default;
  };
  // Look-ups by views of the four strings, without copying them into a Key.
  struct KeyView {
    std::string_view group, kind, ns, name;
    bool operator==(const KeyView&) const = default;
  };
  static KeyView view(const Key& k) { return {k.group, k.kind, k.ns, k.name}; }
  static KeyView view(const KeyView& k) { return k; }
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(const Key& k) const { return (*this)(view(k)); }
    size_t operator()(const KeyView& k) const;
  };
  struct KeyEq {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const { return view(a) == view(b); }
  };
  struct Entry {
    std::shared_ptr<const Object> obj;
    std::string ns;
    uint64_t seq = 0;
  };

  [[nodiscard]] bool hidden_from_base(const KeyView& k) const;

  std::shared_ptr<const Inventory> base_;
  std::shared_ptr<const KindSet> kept_;  // never null but in a default-constructed inventory
  std::unordered_map<Key, Entry, KeyHash, KeyEq> by_name_;
  std::map<KindRef, std::vector<const Object*>, KindLess> by_kind_;  // insertion order (owned by by_name_)
  std::unordered_map<Key, std::vector<const Object*>, KeyHash, KeyEq> by_namespace_;  // {group, kind, ns, ""} → objects
  std::unordered_map<Key, bool, KeyHash, KeyEq> shadowed_;  // base keys replaced or removed in this layer
  // The effective namespace of each kept object (the string in its Entry), found by its id: ids
  // are dense (documents in input order; a layer's continue after its base's), so a vector slot
  // per id, checked against the object, is one look-up where rules list thousands of objects.
  // Ids far outside the dense range go to the map.
  struct Slot {
    const Object* obj = nullptr;
    const std::string* ns = nullptr;
  };
  std::vector<Slot> ns_by_id_;  // index: id - id_offset_
  uint32_t id_offset_ = 0;
  std::unordered_map<const Object*, const std::string*> ns_other_;
  void set_ns(const Object* obj, const std::string* ns);
  void clear_ns(const Object* obj);
  uint64_t seq_ = 0;
  uint32_t next_id_ = 0;
  bool complete_ = false;
  std::string note_;
};

}  // namespace gpuguard::engine
