#include "engine/object.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace gpuguard::engine {

Gvk parse_gvk(std::string_view api_version, std::string_view kind) {
  Gvk g;
  g.kind = kind;
  auto slash = api_version.find('/');
  if (slash == std::string_view::npos) {
    g.version = api_version;
  } else {
    g.group = api_version.substr(0, slash);
    g.version = api_version.substr(slash + 1);
  }
  return g;
}

bool is_cluster_scoped(std::string_view group, std::string_view kind) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 45> kCluster{{
      {"", "Namespace"},
      {"", "Node"},
      {"", "PersistentVolume"},
      {"", "ComponentStatus"},
      {"scheduling.k8s.io", "PriorityClass"},
      {"storage.k8s.io", "StorageClass"},
      {"storage.k8s.io", "CSIDriver"},
      {"storage.k8s.io", "CSINode"},
      {"storage.k8s.io", "VolumeAttachment"},
      {"rbac.authorization.k8s.io", "ClusterRole"},
      {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
      {"apiextensions.k8s.io", "CustomResourceDefinition"},
      {"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
      {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"},
      {"admissionregistration.k8s.io", "ValidatingAdmissionPolicy"},
      {"admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"},
      {"admissionregistration.k8s.io", "MutatingAdmissionPolicy"},
      {"admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"},
      {"apiregistration.k8s.io", "APIService"},
      {"node.k8s.io", "RuntimeClass"},
      {"networking.k8s.io", "IngressClass"},
      {"policy", "PodSecurityPolicy"},
      {"certificates.k8s.io", "CertificateSigningRequest"},
      {"flowcontrol.apiserver.k8s.io", "FlowSchema"},
      {"flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"},
      {"resource.k8s.io", "DeviceClass"},
      {"resource.k8s.io", "ResourceSlice"},
      {"scheduling.volcano.sh", "Queue"},
      {"scheduling.run.ai", "Queue"},  // KAI Scheduler (its CRD: scope Cluster)
      {"topology.volcano.sh", "HyperNode"},
      {"kueue.x-k8s.io", "ClusterQueue"},
      {"kueue.x-k8s.io", "ResourceFlavor"},
      {"kueue.x-k8s.io", "Cohort"},
      {"kueue.x-k8s.io", "Topology"},
      {"kueue.x-k8s.io", "WorkloadPriorityClass"},
      {"kueue.x-k8s.io", "AdmissionCheck"},
      {"kueue.x-k8s.io", "MultiKueueCluster"},
      {"kueue.x-k8s.io", "MultiKueueConfig"},
      {"kueue.x-k8s.io", "ProvisioningRequestConfig"},
      {"nvidia.com", "ClusterPolicy"},
      {"nvidia.com", "NVIDIADriver"},
      {"topology.node.k8s.io", "NodeResourceTopology"},
      {"wgpolicyk8s.io", "ClusterPolicyReport"},
      {"cert-manager.io", "ClusterIssuer"},
      {"nfd.k8s-sigs.io", "NodeFeatureRule"},
  }};
  for (const auto& [g, k] : kCluster)
    if (g == group && k == kind) return true;
  return false;
}

Pos Object::position_of(std::string_view pointer) const {
  if (!positions) return pos;
  Pos p = positions->resolve(pointer, pos_root);
  return p.known() ? p : pos;
}

std::string Object::display_name() const {
  if (!is_kubernetes_object()) return "document";
  std::string out = gvk.kind;
  out += ' ';
  if (!namespace_.empty()) out += namespace_ + "/";
  if (!name.empty()) out += name;
  else if (!generate_name.empty()) out += generate_name + "*";
  else out += "<unnamed>";
  return out;
}

Node Object::metadata() const {
  Node m = member(root(), "metadata");
  return m.is_object() ? m : Node();
}

Node Object::label(std::string_view key) const { return member(member(metadata(), "labels"), key); }

Node Object::annotation(std::string_view key) const { return member(member(metadata(), "annotations"), key); }

namespace {

// The document made of an object's JSON (for one set_body gave new content), and the JSON made of
// an object's document: made once, on first use, kept with the object's views.
struct JsonDocument {
  std::shared_ptr<const PositionIndex> doc;
};
struct DocumentJson {
  explicit DocumentJson(json v) : value(std::move(v)) {}
  DocumentJson(const DocumentJson&) = delete;
  DocumentJson& operator=(const DocumentJson&) = delete;
  DocumentJson(DocumentJson&&) = default;
  DocumentJson& operator=(DocumentJson&&) = default;
  ~DocumentJson() { dispose(value); }
  json value;
};

}  // namespace

Node Object::root() const {
  if (doc) return Node(doc.get(), doc_root);
  if (body_.is_null()) return {};  // no content (released, or never given)
  const auto& made = views.get<JsonDocument>([&] { return JsonDocument{PositionIndex::from_json(body_)}; });
  return Node(made.doc.get(), 0);
}

const json& Object::body() const {
  if (!doc) return body_;
  return views.get<DocumentJson>([&] { return DocumentJson(doc->json_of(doc_root)); }).value;
}

void Object::set_body(json body) {
  views.reset();  // they read the old content
  doc.reset();
  doc_root = 0;
  dispose(body_);
  body_ = std::move(body);
}

json Object::take_body() {
  json out = doc ? doc->json_of(doc_root) : std::move(body_);
  release_content();
  return out;
}

void Object::release_content() {
  views.reset();
  dispose(body_);
  body_ = json();
  doc.reset();
  doc_root = 0;
}

namespace {

// Identity (apiVersion, kind, metadata's name, generateName and namespace) from the content.
void identify(Object& o, Node root) {
  auto api = string_at(root, "apiVersion");
  auto kind = string_at(root, "kind");
  if (!api || !kind || api->empty() || kind->empty()) return;
  o.api_version = *api;
  o.gvk = parse_gvk(*api, *kind);
  read_metadata(o);
}

// An object reading node `root` of `doc`.
Object object_of(const std::shared_ptr<const PositionIndex>& doc, PositionIndex::NodeId root, Pos pos,
                 const SourceRef& source, uint32_t document, std::string item_pointer) {
  Object o = object_from_node(doc, root, source);
  o.document = document;
  o.item_pointer = std::move(item_pointer);
  o.positions = doc;
  o.pos_root = root;
  o.pos = pos;
  return o;
}

}  // namespace

namespace {
std::array<std::atomic<void (*)(void*)>, DerivedViews::kSlots> g_view_deleters{};
std::atomic<size_t> g_view_slots{0};
}  // namespace

// The types of view so far: engine::PodViews, JsonDocument and DocumentJson above, rules/mig's
// MigPartedDocs, rules/quota's QuotaGpus and LimitRangeGpus. The rule suites (fixtures, corpus) use every one, so a type beyond kSlots stops
// them the first time they run.
size_t DerivedViews::register_slot(Deleter deleter) {
  const size_t slot = g_view_slots.fetch_add(1);
  if (slot >= kSlots) {  // a new type of view without raising kSlots: a programming error
    std::fputs("gpuguard: internal error: more types of derived views than DerivedViews::kSlots\n", stderr);
    std::abort();
  }
  g_view_deleters[slot].store(deleter, std::memory_order_release);
  return slot;
}

void DerivedViews::reset() noexcept {
  // Only the object's owner resets it (destroyed, moved or assigned), never while rules read it:
  // most objects never had a view, and a load costs less than an exchange.
  for (size_t i = 0; i < kSlots; ++i)
    if (slots_[i].load(std::memory_order_acquire) != nullptr)
      if (void* p = slots_[i].exchange(nullptr, std::memory_order_acq_rel)) g_view_deleters[i].load(std::memory_order_acquire)(p);
}

Object object_from_node(const std::shared_ptr<const PositionIndex>& doc, PositionIndex::NodeId root, SourceRef source) {
  Object o;
  o.source = std::move(source);
  o.doc = doc;
  o.doc_root = root;
  identify(o, o.root());
  return o;
}

void read_metadata(Object& o) {
  const auto md = member(o.root(), "metadata");
  if (!md) return;
  if (auto n = string_at(*md, "name")) o.name = *n;
  if (auto g = string_at(*md, "generateName")) o.generate_name = *g;
  if (auto ns = string_at(*md, "namespace")) o.namespace_ = *ns;
}

bool is_dns1123_label(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

Object object_from_json(const json& body, SourceRef source) {
  return object_from_node(PositionIndex::from_json(body), 0, std::move(source));
}

namespace {

// A List: a `kind` ending in List, with `items` a sequence or null.
bool is_list(Node n) {
  const Node items = member(n, "items");
  const auto kind = string_at(n, "kind");
  return kind && kind->ends_with("List") && items && (items.is_array() || items.is_null());
}

// The items of List `list` (at `pointer`), Lists among them unpacked in turn, in document order
// (kubectl's FlattenListVisitor unpacks them too, breadth first).
void add_items(const std::shared_ptr<const PositionIndex>& doc, Node list, const std::string& pointer, const SourceRef& source,
               uint32_t document, std::vector<Object>& out, std::vector<Diagnostic>& diags) {
  size_t i = 0;
  for (const Node item : member(list, "items")) {
    const size_t index = i++;
    std::string at = pointer_join(pointer + "/items", index);
    if (!item.is_object() || !string_at(item, "apiVersion") || !string_at(item, "kind")) {
      diags.push_back({Severity::error, source ? source->path : std::string(), item.pos(),
                       "item " + (pointer.empty() ? std::to_string(index) : at) +
                           " of the List is not a Kubernetes object (it needs apiVersion and kind)"});
      continue;
    }
    if (is_list(item)) add_items(doc, item, at, source, document, out, diags);
    else out.push_back(object_of(doc, item.id(), item.pos(), source, document, std::move(at)));
  }
}

}  // namespace

void objects_from_document(const std::shared_ptr<const PositionIndex>& doc, Pos start, const SourceRef& source,
                           uint32_t document, std::vector<Object>& out, std::vector<Diagnostic>& diags) {
  const Node root(doc.get(), doc->root());
  if (!is_list(root)) {
    out.push_back(object_of(doc, doc->root(), start, source, document, ""));
    return;
  }
  add_items(doc, root, "", source, document, out, diags);
}

}  // namespace gpuguard::engine
