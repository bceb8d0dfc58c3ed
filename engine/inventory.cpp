#include "engine/inventory.h"

#include <algorithm>
#include <functional>

namespace gpuguard::engine {

size_t Inventory::KeyHash::operator()(const KeyView& k) const {
  std::hash<std::string_view> h;
  size_t v = h(k.group);
  v = v * 31 + h(k.kind);
  v = v * 31 + h(k.ns);
  v = v * 31 + h(k.name);
  return v;
}

Inventory Inventory::layered(std::shared_ptr<const Inventory> base) {
  Inventory inv;
  if (base) {
    inv.kept_ = base->kept_;
    inv.id_offset_ = base->next_id();
  }
  inv.base_ = std::move(base);
  return inv;
}

bool Inventory::keeps(std::string_view group, std::string_view kind) const {
  return kept_ && kept_->contains(KindLess::View{group, kind});
}

void Inventory::add(std::shared_ptr<const Object> obj, std::string effective_namespace) {
  if (!obj || !keeps(obj->gvk.group, obj->gvk.kind)) return;
  next_id_ = std::max(next_id_, obj->id + 1);
  std::string name = obj->name.empty() ? "#" + std::to_string(obj->id) : obj->name;
  Key key{obj->gvk.group, obj->gvk.kind, effective_namespace, name};
  if (base_ && base_->find(key.group, key.kind, key.ns, key.name)) shadowed_[key] = true;
  const Object* added = obj.get();
  auto it = by_name_.find(key);
  if (it != by_name_.end()) {
    // Replaced in place: the lists keep its position (a later `kubectl apply` of the same object).
    const Object* old = it->second.obj.get();
    clear_ns(old);
    std::replace(by_kind_[KindRef{key.group, key.kind}].begin(), by_kind_[KindRef{key.group, key.kind}].end(), old, added);
    auto& in_ns = by_namespace_[Key{key.group, key.kind, key.ns, ""}];
    std::replace(in_ns.begin(), in_ns.end(), old, added);
    it->second = Entry{std::move(obj), std::move(effective_namespace), ++seq_};
    set_ns(added, &it->second.ns);
    return;
  }
  by_kind_[KindRef{key.group, key.kind}].push_back(added);
  by_namespace_[Key{key.group, key.kind, key.ns, ""}].push_back(added);
  auto placed = by_name_.emplace(key, Entry{std::move(obj), std::move(effective_namespace), ++seq_}).first;
  set_ns(added, &placed->second.ns);  // unordered_map nodes stay where they are
}

void Inventory::set_ns(const Object* obj, const std::string* ns) {
  if (obj->id >= id_offset_) {
    size_t i = obj->id - id_offset_;
    if (i < ns_by_id_.size() || i < std::max<size_t>(4096, 4 * by_name_.size())) {
      if (i >= ns_by_id_.size()) ns_by_id_.resize(i + 1);
      if (!ns_by_id_[i].obj) {  // two objects of one id (never from the engine) share the map
        ns_by_id_[i] = Slot{obj, ns};
        return;
      }
    }
  }
  ns_other_[obj] = ns;
}

void Inventory::clear_ns(const Object* obj) {
  if (obj->id >= id_offset_ && obj->id - id_offset_ < ns_by_id_.size() && ns_by_id_[obj->id - id_offset_].obj == obj)
    ns_by_id_[obj->id - id_offset_] = Slot{};
  else
    ns_other_.erase(obj);
}

void Inventory::remove(std::string_view group, std::string_view kind, std::string_view ns, std::string_view name) {
  Key key{std::string(group), std::string(kind), std::string(ns), std::string(name)};
  if (base_ && base_->find(group, kind, ns, name)) shadowed_[key] = true;
  auto it = by_name_.find(key);
  if (it == by_name_.end()) return;
  const Object* gone = it->second.obj.get();
  clear_ns(gone);
  std::erase(by_kind_[KindRef{key.group, key.kind}], gone);
  std::erase(by_namespace_[Key{key.group, key.kind, key.ns, ""}], gone);
  by_name_.erase(it);
}

bool Inventory::hidden_from_base(const KeyView& k) const { return !shadowed_.empty() && shadowed_.contains(k); }

std::vector<const Object*> Inventory::list(std::string_view group, std::string_view kind) const {
  std::vector<const Object*> out;
  if (base_ && shadowed_.empty()) {
    out = base_->list(group, kind);  // nothing of the base is replaced or removed here
  } else if (base_) {
    for (const Object* o : base_->list(group, kind)) {
      std::string name = o->name.empty() ? "#" + std::to_string(o->id) : o->name;
      if (!hidden_from_base(KeyView{o->gvk.group, o->gvk.kind, base_->namespace_of(*o), name})) out.push_back(o);
    }
  }
  auto it = by_kind_.find(KindLess::View{group, kind});
  if (it != by_kind_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

std::vector<const Object*> Inventory::list(std::string_view group, std::string_view kind, std::string_view ns) const {
  std::vector<const Object*> out;
  if (base_ && shadowed_.empty()) {
    out = base_->list(group, kind, ns);
  } else if (base_) {
    for (const Object* o : base_->list(group, kind, ns)) {
      std::string name = o->name.empty() ? "#" + std::to_string(o->id) : o->name;
      if (!hidden_from_base(KeyView{o->gvk.group, o->gvk.kind, ns, name})) out.push_back(o);
    }
  }
  auto it = by_namespace_.find(KeyView{group, kind, ns, ""});
  if (it != by_namespace_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

const Object* Inventory::find(std::string_view group, std::string_view kind, std::string_view ns,
                              std::string_view name) const {
  const KeyView key{group, kind, ns, name};
  if (!by_name_.empty()) {  // a webhook request's layer is empty or holds one object
    auto it = by_name_.find(key);
    if (it != by_name_.end()) return it->second.obj.get();
  }
  if (base_ && !hidden_from_base(key)) return base_->find(group, kind, ns, name);
  return nullptr;
}

const std::string& Inventory::namespace_of(const Object& obj) const {
  if (obj.id >= id_offset_ && obj.id - id_offset_ < ns_by_id_.size()) {
    const Slot& slot = ns_by_id_[obj.id - id_offset_];
    if (slot.obj == &obj) return *slot.ns;
  }
  if (!ns_other_.empty()) {
    auto it = ns_other_.find(&obj);
    if (it != ns_other_.end()) return *it->second;
  }
  if (base_) return base_->namespace_of(obj);
  return obj.namespace_;
}

uint32_t Inventory::next_id() const { return std::max(next_id_, base_ ? base_->next_id() : 0u); }

size_t Inventory::size() const {
  size_t n = by_name_.size();
  if (base_) n += base_->size();
  for (const auto& [k, v] : shadowed_)
    if (v) --n;
  return n;
}

}  // namespace gpuguard::engine
