#include "engine/dra.h"

#include <algorithm>
#include <iterator>
#include <tuple>
#include <utility>

#include "engine/inventory.h"

namespace gpuguard::engine {

namespace {

// NVIDIA's DRA driver name and the attribute domain of its devices (k8s-dra-driver-gpu
// cmd/gpu-kubelet-plugin/deviceinfo.go @22407113: `gpu.nvidia.com/productName`, `.../profile`).
constexpr std::string_view kNvidiaDriver = "gpu.nvidia.com";
// The most devices one claim may be allocated (resource/v1 AllocationResultsMaxSize = 32): what
// allocationMode All counts as, as the quota evaluator does (facts/modern-stack.md §1).
constexpr int64_t kAllocationResultsMaxSize = 32;

bool is_ident(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// A CEL expression with its string literals taken out: `code` has each literal replaced by `@<n>`
// (n its index in `literals`). nullopt when a literal has an escape or no end (not read).
struct Unquoted {
  std::string code;
  std::vector<std::string> literals;
};
std::optional<Unquoted> unquote(std::string_view e) {
  Unquoted out;
  out.code.reserve(e.size());
  for (size_t i = 0; i < e.size();) {
    const char c = e[i];
    if (c == '\'' || c == '"') {
      const size_t end = e.find(c, i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      std::string_view lit = e.substr(i + 1, end - i - 1);
      if (lit.find('\\') != std::string_view::npos || lit.find('\n') != std::string_view::npos) return std::nullopt;
      out.code += '@';
      out.code += std::to_string(out.literals.size());
      out.literals.emplace_back(lit);
      i = end + 1;
      continue;
    }
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') out.code += c;  // CEL ignores whitespace between tokens
    ++i;
  }
  return out;
}

// Whether the literal placeholder at `s` (`@<n>`) is the whole of `s`; its index.
std::optional<size_t> literal_ref(std::string_view s) {
  if (s.size() < 2 || s[0] != '@') return std::nullopt;
  size_t n = 0;
  for (char c : s.substr(1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<size_t>(c - '0');
    if (n > 1000000) return std::nullopt;
  }
  return n;
}

// Whether the term (unquoted code) accesses NVIDIA's attribute `attr`:
// device.attributes[@i].attr or device.attributes[@i][@j], @i = gpu.nvidia.com, @j = attr.
bool is_attribute_access(std::string_view lhs, const Unquoted& u, std::string_view attr) {
  constexpr std::string_view kPrefix = "device.attributes[";
  if (!lhs.starts_with(kPrefix)) return false;
  lhs.remove_prefix(kPrefix.size());
  const size_t close = lhs.find(']');
  if (close == std::string_view::npos) return false;
  auto dom = literal_ref(lhs.substr(0, close));
  if (!dom || *dom >= u.literals.size() || u.literals[*dom] != kNvidiaDriver) return false;
  lhs.remove_prefix(close + 1);
  if (lhs.size() == attr.size() + 1 && lhs[0] == '.' && lhs.substr(1) == attr) return true;
  if (lhs.size() >= 3 && lhs.front() == '[' && lhs.back() == ']') {
    auto a = literal_ref(lhs.substr(1, lhs.size() - 2));
    return a && *a < u.literals.size() && u.literals[*a] == attr;
  }
  return false;
}

// Whether the code names the attribute at all: `.attr` as a field, or a literal of the code (`@<n>`)
// equal to it.
bool mentions(std::string_view code, const Unquoted& u, std::string_view attr) {
  for (size_t at = code.find(attr); at != std::string_view::npos; at = code.find(attr, at + 1)) {
    const bool before = at > 0 && code[at - 1] == '.';
    const bool after_ok = at + attr.size() >= code.size() || !is_ident(code[at + attr.size()]);
    if (before && after_ok) return true;
  }
  for (size_t at = code.find('@'); at != std::string_view::npos; at = code.find('@', at + 1)) {
    size_t end = at + 1;
    while (end < code.size() && code[end] >= '0' && code[end] <= '9') ++end;
    auto n = literal_ref(code.substr(at, end - at));
    if (n && *n < u.literals.size() && u.literals[*n] == attr) return true;
  }
  return false;
}

}  // namespace

CelTerm cel_attribute_equality(std::string_view expression, std::string_view attribute) {
  CelTerm out;
  auto u = unquote(expression);
  if (!u) {
    // Literals gpuguard does not read: unknown if the attribute's name appears anywhere.
    if (expression.find(attribute) != std::string_view::npos) out.unknown = true;
    return out;
  }
  if (!mentions(u->code, *u, attribute)) return out;
  const std::string_view code = u->code;
  // Only a conjunction of comparisons is read: a disjunction, negation, conditional or call may
  // make the equality not hold.
  bool negation = false;
  for (size_t i = 0; i < code.size(); ++i)
    if (code[i] == '!' && (i + 1 == code.size() || code[i + 1] != '=')) negation = true;
  if (negation || code.find("||") != std::string_view::npos || code.find('?') != std::string_view::npos) {
    out.unknown = true;
    return out;
  }
  size_t start = 0;
  while (start <= code.size()) {
    size_t end = code.find("&&", start);
    if (end == std::string_view::npos) end = code.size();
    std::string_view term = code.substr(start, end - start);
    while (term.size() >= 2 && term.front() == '(' && term.back() == ')') term = term.substr(1, term.size() - 2);
    if (mentions(term, *u, attribute)) {
      const size_t eq = term.find("==");
      if (eq == std::string_view::npos || term.find("==", eq + 2) != std::string_view::npos) {
        out.unknown = true;
        return out;
      }
      std::string_view l = trim(term.substr(0, eq)), r = trim(term.substr(eq + 2));
      if (literal_ref(l) && !literal_ref(r)) std::swap(l, r);
      auto lit = literal_ref(r);
      if (!lit || *lit >= u->literals.size() || !is_attribute_access(l, *u, attribute)) {
        out.unknown = true;
        return out;
      }
      const std::string& v = u->literals[*lit];
      if (out.value && *out.value != v) {  // two different values: no device has both
        out.value.reset();
        out.unknown = true;
        return out;
      }
      out.value = v;
    }
    if (end == code.size()) break;
    start = end + 2;
  }
  if (!out.value) out.unknown = true;  // named only in terms that are not read
  return out;
}

bool device_class_matches(std::string_view device_class, const std::vector<std::string>& patterns) {
  for (const auto& p : patterns) {
    if (p.size() > 1 && p[0] == '*' && p[1] == '.') {
      const std::string_view suffix = std::string_view(p).substr(1);
      if (device_class.size() > suffix.size() && device_class.ends_with(suffix)) return true;
    } else if (p == device_class) {
      return true;
    }
  }
  return false;
}

const std::vector<KindRef>& dra_kinds() {
  static const std::vector<KindRef> kKinds = {KindRef{std::string(kResourceGroup), "DeviceClass"},
                                              KindRef{std::string(kResourceGroup), "ResourceClaim"},
                                              KindRef{std::string(kResourceGroup), "ResourceClaimTemplate"}};
  return kKinds;
}

std::vector<PodClaim> pod_claims(Node pod_spec) {
  std::vector<PodClaim> out;
  const Node rcs = member(pod_spec, "resourceClaims");
  if (!rcs.is_array()) return out;
  for (Node rc : rcs) {
    if (!rc.is_object()) continue;
    PodClaim c;
    c.name = std::string(string_at(rc, "name").value_or(""));
    c.claim = std::string(string_at(rc, "resourceClaimName").value_or(""));
    c.claim_template = std::string(string_at(rc, "resourceClaimTemplateName").value_or(""));
    if (c.claim.empty() == c.claim_template.empty()) continue;
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<PodClaim> pod_claims(const Object& obj) {
  std::vector<PodClaim> out;
  for (const auto& t : pod_templates(obj)) {
    auto c = pod_claims(t.spec);
    out.insert(out.end(), std::make_move_iterator(c.begin()), std::make_move_iterator(c.end()));
  }
  return out;
}

void report_or_hold(CheckContext& ctx, Records<DraHeld>& held, const std::vector<PodClaim>& claims, std::string pointer,
                    std::string message, std::optional<json> fix) {
  if (claims.empty()) {
    ctx.report(std::move(pointer), std::move(message), std::move(fix));
    return;
  }
  DraHeld h;
  h.object = ctx.ref();
  h.pos = ctx.position_of(pointer);
  h.pointer = std::move(pointer);
  h.message = std::move(message);
  h.fix = std::move(fix);
  h.claims = claims;
  held.push_back(std::move(h));
}

void report_held(FinishContext& ctx, const Records<DraHeld>& held) {
  for (const auto& h : held) {
    const DraGpus gpus = resolve_dra_gpus(ctx.inventory(), h.object.namespace_(), h.claims, ctx.settings().gpu_device_classes);
    if (!gpus.any()) continue;
    std::string msg = h.message;
    msg.append("; its GPUs come ").append(dra_summary(gpus));
    ctx.report(h.object, h.pointer, h.pos, std::move(msg), h.fix);
  }
}

namespace {

// The sharing strategy of an opaque config of NVIDIA's driver, if it is one (GpuConfig,
// MigDeviceConfig: api/nvidia.com/resource/v1beta1 `sharing.strategy`).
std::optional<DraSharing> opaque_sharing(Node config) {
  const Node opaque = member(config, "opaque");
  if (string_at(opaque, "driver") != std::optional<std::string_view>(kNvidiaDriver)) return std::nullopt;
  const Node params = member(opaque, "parameters");
  const auto kind = string_at(params, "kind");
  if (kind != std::optional<std::string_view>("GpuConfig") && kind != std::optional<std::string_view>("MigDeviceConfig"))
    return std::nullopt;
  const Node sharing = member(params, "sharing");
  if (!sharing) return std::nullopt;
  const auto strategy = string_at(sharing, "strategy");
  if (strategy == std::optional<std::string_view>("TimeSlicing")) return DraSharing::time_slicing;
  if (strategy == std::optional<std::string_view>("MPS")) return DraSharing::mps;
  return DraSharing::other;
}

// Whether a config entry's `requests` (none: every request) names the request (or its parent).
bool config_applies(Node config, std::string_view request, std::string_view parent) {
  const Node reqs = member(config, "requests");
  if (!reqs.is_array() || reqs.empty()) return true;
  for (Node r : reqs)
    if (r.is_string() && (r.str() == request || (!parent.empty() && r.str() == parent))) return true;
  return false;
}

// The device class's own selectors and config.
struct ClassInfo {
  const Object* obj = nullptr;
  bool nvidia_driver = false;  // a selector names device.driver == 'gpu.nvidia.com'
};
ClassInfo class_info(const Inventory* inv, std::string_view name) {
  ClassInfo out;
  if (!inv) return out;
  out.obj = inv->find(kResourceGroup, "DeviceClass", "", name);
  if (!out.obj) return out;
  const Node sels = path(out.obj->root(), {"spec", "selectors"});
  if (!sels.is_array()) return out;
  for (Node s : sels) {
    const auto e = string_at(member(s, "cel"), "expression");
    if (!e) continue;
    auto u = unquote(*e);
    if (!u) continue;
    // device.driver == @n with literal gpu.nvidia.com, among the conjunction's terms.
    const std::string_view code = u->code;
    for (size_t at = code.find("device.driver=="); at != std::string_view::npos; at = code.find("device.driver==", at + 1)) {
      std::string_view rest = code.substr(at + 15);
      size_t n = 1;
      while (n < rest.size() && rest[n] >= '0' && rest[n] <= '9') ++n;
      auto lit = literal_ref(rest.substr(0, n));
      if (lit && *lit < u->literals.size() && u->literals[*lit] == kNvidiaDriver &&
          code.find("||") == std::string_view::npos)
        out.nvidia_driver = true;
    }
  }
  return out;
}

void add_selector_terms(Node selectors, DraGpuRequest& r) {
  if (!selectors.is_array()) return;
  for (Node s : selectors) {
    const Node cel = member(s, "cel");
    const auto e = string_at(cel, "expression");
    if (!e) continue;
    for (auto [attr, value, unknown] : {std::tuple{std::string_view("profile"), &r.profile, &r.profile_unknown},
                                        std::tuple{std::string_view("productName"), &r.product, &r.product_unknown}}) {
      CelTerm t = cel_attribute_equality(*e, attr);
      if (t.unknown) *unknown = true;
      if (t.value) {
        if (!value->empty() && *value != *t.value) *unknown = true;
        *value = *t.value;
      }
    }
  }
}

}  // namespace

void dra_gpu_requests(const Inventory* inv, Node claim_spec, const std::vector<std::string>& gpu_classes,
                      const std::string& pod_claim, const std::string& source, bool shared, DraGpus& out) {
  const Node devices = member(claim_spec, "devices");
  const Node requests = member(devices, "requests");
  if (!requests.is_array()) return;
  const Node configs = member(devices, "config");
  const Node constraints = member(devices, "constraints");
  // One request, or sub-request: `body` holds deviceClassName, selectors, allocationMode, count.
  auto one = [&](Node body, std::string name, std::string_view parent, bool alternative, bool admin) {
    const std::string cls(string_at(body, "deviceClassName").value_or(""));
    if (cls.empty()) return;
    const ClassInfo ci = class_info(inv, cls);
    if (!device_class_matches(cls, gpu_classes) && !ci.nvidia_driver) {
      // A class gpuguard does not know, absent from an inventory that is not the whole cluster: it
      // may be a GPU class selecting NVIDIA's driver.
      if (!ci.obj && inv && !inv->complete()) out.missing.push_back("DeviceClass " + cls);
      return;
    }
    DraGpuRequest r;
    r.pod_claim = pod_claim;
    r.source = source;
    r.device_class = cls;
    r.alternative = alternative;
    r.shared = shared;
    r.admin_access = admin || bool_at(body, "adminAccess") == std::optional<bool>(true);
    if (string_at(body, "allocationMode") == std::optional<std::string_view>("All")) {
      r.all = true;
      r.count = kAllocationResultsMaxSize;
    } else if (auto c = int_at(body, "count"); c && *c > 0) {
      r.count = *c;
    }
    add_selector_terms(member(body, "selectors"), r);
    if (ci.obj) {
      add_selector_terms(path(ci.obj->root(), {"spec", "selectors"}), r);
      const Node cc = path(ci.obj->root(), {"spec", "config"});
      if (cc.is_array())
        for (Node c : cc)
          if (auto s = opaque_sharing(c)) r.sharing = *s;
    }
    if (configs.is_array())
      for (Node c : configs)  // the claim's config comes after the class's and overrides it
        if (config_applies(c, name, parent))
          if (auto s = opaque_sharing(c)) r.sharing = *s;
    if (constraints.is_array())
      for (Node c : constraints)
        if (string_at(c, "matchAttribute") == std::optional<std::string_view>("resource.kubernetes.io/pcieRoot") &&
            config_applies(c, name, parent))
          r.pcie_aligned = true;
    r.request = std::move(name);
    out.requests.push_back(std::move(r));
  };
  for (Node req : requests) {
    if (!req.is_object()) continue;
    const std::string name(string_at(req, "name").value_or(""));
    const Node exactly = member(req, "exactly");
    const Node first = member(req, "firstAvailable");
    if (exactly.is_object()) {
      one(exactly, name, "", false, false);  // v1, v1beta2
    } else if (first.is_array() && !first.empty()) {
      const bool several = first.size() > 1;
      for (Node sub : first) {
        if (!sub.is_object()) continue;
        one(sub, name + "/" + std::string(string_at(sub, "name").value_or("")), name, several,
            bool_at(req, "adminAccess") == std::optional<bool>(true));
      }
    } else {
      one(req, name, "", false, false);  // v1beta1, v1alpha3: the request's own fields
    }
  }
}

std::string dra_summary(const DraGpus& gpus) {
  if (gpus.requests.empty()) return {};
  const DraGpuRequest& r = gpus.requests.front();
  std::string out;
  out.reserve(64 + r.pod_claim.size() + r.source.size() + r.device_class.size());
  out.append("through DRA (claim ").append(r.pod_claim).append(": ").append(r.source).append(", DeviceClass ");
  out.append(r.device_class);
  if (const size_t more = gpus.requests.size() - 1; more > 0)
    out.append(", and ").append(std::to_string(more)).append(more == 1 ? " more GPU request" : " more GPU requests");
  out.append(")");
  return out;
}

DraGpus resolve_dra_gpus(const Inventory& inv, std::string_view ns, const std::vector<PodClaim>& claims,
                         const std::vector<std::string>& gpu_classes) {
  DraGpus out;
  for (const auto& c : claims) {
    const bool shared = !c.claim.empty();
    const std::string_view kind = shared ? "ResourceClaim" : "ResourceClaimTemplate";
    const std::string& name = shared ? c.claim : c.claim_template;
    std::string source;
    source.reserve(kind.size() + ns.size() + name.size() + 2);
    source.append(kind).append(" ").append(ns).append("/").append(name);
    const Object* obj = inv.find(kResourceGroup, kind, ns, name);
    if (!obj) {
      out.missing.push_back(std::move(source));
      continue;
    }
    const Node spec = shared ? member(obj->root(), "spec") : path(obj->root(), {"spec", "spec"});
    dra_gpu_requests(&inv, spec, gpu_classes, c.name, source, shared, out);
  }
  return out;
}

bool dra_extended_resource_on(std::string_view v) {
  auto parse = [](std::string_view s) -> std::optional<std::pair<int, int>> {
    if (s.starts_with('v')) s.remove_prefix(1);
    int major = 0, minor = 0;
    size_t i = 0;
    for (; i < s.size() && i < 4 && s[i] >= '0' && s[i] <= '9'; ++i) major = major * 10 + (s[i] - '0');
    if (i == 0 || i >= s.size() || s[i] != '.') return std::nullopt;
    const size_t from = ++i;
    for (; i < s.size() && i - from < 4 && s[i] >= '0' && s[i] <= '9'; ++i) minor = minor * 10 + (s[i] - '0');
    if (i == from) return std::nullopt;
    return std::pair{major, minor};
  };
  auto p = parse(v);
  if (!p) p = parse(kDefaultKubernetesVersion);
  return p && (p->first > 1 || (p->first == 1 && p->second >= 36));
}

std::vector<DraSelectorExpr> dra_selector_expressions(const Object& obj) {
  std::vector<DraSelectorExpr> out;
  size_t group = 0;
  auto selectors = [&](Node sels, const std::string& ptr) {
    if (!sels.is_array()) return;
    size_t i = 0;
    for (Node sel : sels) {
      if (const Node e = member(member(sel, "cel"), "expression"); e.is_string())
        out.push_back({ptr + "/" + std::to_string(i) + "/cel/expression", e.str(), group});
      ++i;
    }
  };
  if (obj.gvk.group != kResourceGroup) return out;
  if (obj.gvk.kind == "DeviceClass") {
    selectors(path(obj.root(), {"spec", "selectors"}), "/spec/selectors");
    return out;
  }
  const bool tmpl = obj.gvk.kind == "ResourceClaimTemplate";
  if (!tmpl && obj.gvk.kind != "ResourceClaim") return out;
  const std::string base = tmpl ? "/spec/spec/devices/requests" : "/spec/devices/requests";
  const Node reqs = tmpl ? path(obj.root(), {"spec", "spec", "devices", "requests"}) : path(obj.root(), {"spec", "devices", "requests"});
  if (!reqs.is_array()) return out;
  size_t i = 0;
  for (Node req : reqs) {
    const std::string rp = base + "/" + std::to_string(i++);
    selectors(member(member(req, "exactly"), "selectors"), rp + "/exactly/selectors");
    selectors(member(req, "selectors"), rp + "/selectors");
    ++group;
    if (const Node first = member(req, "firstAvailable"); first.is_array()) {
      size_t j = 0;
      for (Node sub : first) {
        selectors(member(sub, "selectors"), rp + "/firstAvailable/" + std::to_string(j++) + "/selectors");
        ++group;
      }
    }
  }
  return out;
}

}  // namespace gpuguard::engine
