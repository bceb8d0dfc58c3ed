#pragma once
// The engine's unit of work: one Kubernetes object (or one non-object document) with its source.

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "engine/json.h"
#include "engine/node.h"
#include "engine/positions.h"
#include "engine/types.h"

namespace gpuguard::engine {

struct Gvk {
  std::string group;  // "" for the core group
  std::string version;
  std::string kind;
};

// Splits "group/version" (or "v1") into group and version.
[[nodiscard]] Gvk parse_gvk(std::string_view api_version, std::string_view kind);

// Whether objects of this kind live in a namespace (the built-in table; unknown kinds are
// assumed namespaced, as most custom resources are).
[[nodiscard]] bool is_cluster_scoped(std::string_view group, std::string_view kind);

struct Precheck;  // engine/evaluate.cpp: what Evaluation::precheck found on a worker thread
// What the rules derive from an object's content and share — its pod templates (engine/podspec.h),
// the mig-parted configs embedded in it (rules/mig) — made on first use by whichever thread asks
// first, then read by every rule. A view points into the object's document (or JSON), so views
// are not copied or moved with the object, and whoever gives an object rules have read new content
// calls reset() (set_body does).
class DerivedViews {
 public:
  static constexpr size_t kSlots = 7;  // kinds of view; each type of view takes one

  DerivedViews() = default;
  DerivedViews(const DerivedViews& /*other*/) noexcept {}
  DerivedViews(DerivedViews&& other) noexcept { other.reset(); }
  DerivedViews& operator=(const DerivedViews& other) noexcept {
    if (this != &other) reset();
    return *this;
  }
  DerivedViews& operator=(DerivedViews&& other) noexcept {
    if (this != &other) {
      reset();
      other.reset();
    }
    return *this;
  }
  ~DerivedViews() { reset(); }
  void reset() noexcept;

  // The view of type T, made by `make()` (which returns a T) the first time one is asked for. When
  // two threads make it at once, the first one stored is the one both get.
  template <typename T, typename Make>
  [[nodiscard]] const T& get(Make&& make) const {
    std::atomic<void*>& slot = slots_[slot_of<T>()];
    if (void* p = slot.load(std::memory_order_acquire)) return *static_cast<const T*>(p);
    auto made = std::make_unique<T>(make());
    void* expected = nullptr;
    if (slot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel, std::memory_order_acquire))
      return *made.release();
    return *static_cast<const T*>(expected);
  }

 private:
  using Deleter = void (*)(void*);
  // A slot for each type of view, numbered in the order the types are first used (at most kSlots).
  static size_t register_slot(Deleter deleter);
  template <typename T>
  static size_t slot_of() {
    static const size_t slot = register_slot([](void* p) { delete static_cast<T*>(p); });
    return slot;
  }
  mutable std::array<std::atomic<void*>, kSlots> slots_{};
};

struct Object {
  // Its members' default constructors do not throw (the static_assert after the struct holds it).
  Object() = default;  // NOLINT(bugprone-exception-escape)
  Object(const Object&) = default;
  Object(Object&&) noexcept = default;
  Object& operator=(const Object&) = default;
  Object& operator=(Object&&) noexcept = default;
  ~Object() { dispose(body_); }  // faster than the tree's own destructor (engine/json.h)

  uint32_t id = 0;            // position in the run; findings refer to objects by id
  SourceRef source;           // file (nullptr for an AdmissionReview's object)
  uint32_t document = 0;      // index of the document in the file
  std::string item_pointer;   // "/items/3" when the object came out of a List, else ""

  // Identity. For a document that is not a Kubernetes object all of these are empty.
  std::string api_version;
  Gvk gvk;
  std::string name;           // metadata.name
  std::string generate_name;  // metadata.generateName
  std::string namespace_;     // metadata.namespace as written ("" when absent)

  // The object's document: the loader's (its values and positions), one made of JSON (no
  // positions), or null for one whose body was replaced (root() then makes one of the body).
  std::shared_ptr<const PositionIndex> doc;
  PositionIndex::NodeId doc_root = 0;
  // Where the object's nodes are in its source, for findings (may be older than the body: a
  // mutated object's positions are its source's).
  std::shared_ptr<const PositionIndex> positions;
  PositionIndex::NodeId pos_root = 0;
  Pos pos;                    // the object's first line
  // Set by Evaluation::precheck on the thread that parsed the object (`lint --jobs`); consumed by
  // Evaluation::add.
  std::shared_ptr<Precheck> precheck;
  DerivedViews views;

  [[nodiscard]] bool is_kubernetes_object() const { return !gvk.kind.empty(); }
  [[nodiscard]] bool is(std::string_view group, std::string_view kind) const {
    return gvk.kind == kind && gvk.group == group;
  }
  [[nodiscard]] bool cluster_scoped() const { return is_cluster_scoped(gvk.group, gvk.kind); }
  // Position of the node a JSON pointer names (see PositionIndex::resolve); the object's own
  // position when there is no index.
  [[nodiscard]] Pos position_of(std::string_view pointer) const;
  // "Deployment team-a/train" or "PriorityClass high".
  [[nodiscard]] std::string display_name() const;
  // The object read as a document (engine/node.h): what the rules read.
  [[nodiscard]] Node root() const;
  // The object as JSON: made of its document on first use (for what needs JSON: mutation, schema
  // validation, a patch's diff; lint reads none), or the body set_body gave it.
  [[nodiscard]] const json& body() const;
  // Gives the object new content (a mutation's result): its document goes, root() reads `body`.
  void set_body(json body);
  // The body, moved out (made of the document when the object has one); the object is left empty.
  [[nodiscard]] json take_body();
  // Frees what the object holds of its content (its views, JSON and document), once nothing reads it.
  void release_content();
  // Its `metadata` (absent when it has none that is a mapping), and a label's or annotation's value.
  [[nodiscard]] Node metadata() const;
  [[nodiscard]] Node label(std::string_view key) const;
  [[nodiscard]] Node annotation(std::string_view key) const;

 private:
  json body_;  // what set_body gave; null for an object with a document (body() makes it)
};
static_assert(std::is_nothrow_default_constructible_v<Object>);

// An object reading node `root` of a document made of JSON (an AdmissionReview's object, read
// with engine::parse_json_document): identity from apiVersion, kind and metadata; no positions.
[[nodiscard]] Object object_from_node(const std::shared_ptr<const PositionIndex>& doc, PositionIndex::NodeId root,
                                      SourceRef source = nullptr);
// Reads the object's name, generateName and namespace from its metadata (object_from_node does,
// for an object with apiVersion and kind; the webhook, for one whose TypeMeta is request.kind).
void read_metadata(Object& o);
// An object of a JSON value (the API server's, a test's): it keeps a document made of the value
// (PositionIndex::from_json), not the value; no positions.
[[nodiscard]] Object object_from_json(const json& body, SourceRef source = nullptr);

// validation.IsDNS1123Label (a namespace's name, a Volcano task's): at most 63 characters of
// [a-z0-9-], starting and ending with a letter or digit.
[[nodiscard]] bool is_dns1123_label(std::string_view s);

// Turns a loaded document into objects: a Kubernetes object, the items of a `List` / `*List`
// (each item its own object, reading its part of the document), or the document itself when it
// is not a Kubernetes object. Diagnostics name items that are not objects.
void objects_from_document(const std::shared_ptr<const PositionIndex>& doc, Pos start, const SourceRef& source,
                           uint32_t document, std::vector<Object>& out, std::vector<Diagnostic>& diags);

}  // namespace gpuguard::engine
