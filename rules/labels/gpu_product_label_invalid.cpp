// gpu-product-label-invalid: a node selector on a GFD label with a value GFD never writes.

#include <algorithm>
#include <cctype>
#include <set>

#include "engine/dra.h"
#include "engine/inventory.h"
#include "engine/kinds.h"
#include "rules/all.h"
#include "rules/labels/mig_config_names.h"
#include "rules/labels/node_selection.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// Product labels of GPUs whose NVML names are known (facts/nvidia.md §1.4 and §4; the datacenter
// entries of open-gpu-kernel-modules' "Compatible GPUs" list), after GFD's sanitiser.
const std::vector<std::string>& known_products() {
  static const std::vector<std::string> kProducts = {
      "NVIDIA-A10", "NVIDIA-A10G", "NVIDIA-A10M", "NVIDIA-A100-80GB-PCIe", "NVIDIA-A100-PCIE-40GB",
      "NVIDIA-A100-PG509-200", "NVIDIA-A100-SXM-64GB", "NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-SXM4-80GB", "NVIDIA-A30",
      "NVIDIA-A40", "NVIDIA-A800-40GB-Active", "NVIDIA-A800-80GB-PCIe", "NVIDIA-A800-80GB-PCIe-LC",
      "NVIDIA-A800-SXM4-40GB", "NVIDIA-A800-SXM4-80GB", "NVIDIA-AX800", "NVIDIA-B200", "NVIDIA-B300-SXM6-AC",
      "NVIDIA-GB200", "NVIDIA-GB300", "NVIDIA-GH200-120GB", "NVIDIA-GH200-144G-HBM3e", "NVIDIA-GH200-480GB",
      "NVIDIA-H100", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-NVL", "NVIDIA-H100-PCIe", "NVIDIA-H20", "NVIDIA-H20-3e",
      "NVIDIA-H200", "NVIDIA-H200-NVL", "NVIDIA-H800", "NVIDIA-H800-NVL", "NVIDIA-H800-PCIe", "NVIDIA-L4",
      "NVIDIA-L40S", "NVIDIA-PG506-232", "NVIDIA-PG509-210", "NVIDIA-RTX-A4000", "NVIDIA-RTX-A5000",
      "NVIDIA-RTX-A6000", "NVIDIA-RTX-PRO-6000-Blackwell-Max-Q-Workstation-Edition",
      "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "Tesla-T4", "Tesla-V100-PCIE-16GB", "Tesla-V100-SXM2-16GB",
      "Tesla-V100-SXM2-32GB",
  };
  return kProducts;
}

// The first word of NVML names, with its exact case.
const std::vector<std::string>& brands() {
  static const std::vector<std::string> kBrands = {"NVIDIA", "Tesla", "Quadro", "GeForce"};
  return kBrands;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::vector<std::string> fields(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find('-', start);
    if (end == std::string_view::npos) end = s.size();
    out.emplace_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

size_t levenshtein(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

// The nearest of `candidates`: most fields in common (case-insensitive), then the smallest edit distance.
std::string nearest(std::string_view value, const std::vector<std::string>& candidates) {
  const std::string lv = lower(value);
  auto fv = fields(lv);
  std::string best;
  std::pair<long, size_t> best_score{1, 0};
  for (const auto& c : candidates) {
    const std::string lc = lower(c);
    long common = 0;
    for (const auto& f : fields(lc))
      if (std::find(fv.begin(), fv.end(), f) != fv.end()) ++common;
    std::pair<long, size_t> score{-common, levenshtein(lv, lc)};
    if (best.empty() || score < best_score) {
      best = c;
      best_score = score;
    }
  }
  return best;
}

struct ProductValue {
  std::string product;  // without suffixes
  std::string mig;      // "-MIG-<profile>" as written, or ""
  std::string shared;   // "-SHARED" as written, or ""
};

ProductValue split_product(std::string_view v) {
  ProductValue out;
  std::string s(v);
  if (s.size() > 7 && lower(s.substr(s.size() - 7)) == "-shared") {
    out.shared = s.substr(s.size() - 7);
    s.resize(s.size() - 7);
  }
  const std::string ls = lower(s);
  if (auto pos = ls.find("-mig-"); pos != std::string::npos) {
    out.mig = s.substr(pos);
    s.resize(pos);
  }
  out.product = s;
  return out;
}

// Why GFD can never write `value` as a product label, and the nearest real value; nullopt when it may.
std::optional<std::pair<std::string, std::string>> product_problem(std::string_view value_view) {
  const auto& known = known_products();
  // A known product as GFD writes it, the common case: nothing to look at. (Known products are
  // sanitised already and carry no -MIG-/-SHARED suffix, so every test below would pass.)
  if (std::find(known.begin(), known.end(), value_view) != known.end()) return std::nullopt;
  const std::string value(value_view);
  // (a) characters GFD's sanitiser deletes, spaces it turns into dashes.
  if (value.empty()) return std::nullopt;
  auto keeps = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.'; };
  // Only characters the sanitiser keeps and no spaces: the value is its own sanitised form.
  if (!std::all_of(value.begin(), value.end(), keeps)) {
    std::string kept;
    for (char c : value)
      if (keeps(c) || c == ' ') kept += c;
    std::vector<std::string> words;
    std::string w;
    for (char c : kept + ' ') {
      if (c == ' ') {
        if (!w.empty()) words.push_back(w);
        w.clear();
      } else {
        w += c;
      }
    }
    std::string sanitised;
    for (size_t i = 0; i < words.size(); ++i) sanitised += (i ? "-" : "") + words[i];
    if (sanitised != value)
      return std::make_pair("GFD keeps only letters, digits, `-`, `_` and `.` and joins the words of the GPU name with "
                            "single dashes, so the label never contains spaces or other characters",
                            sanitised);
  }
  const ProductValue pv = split_product(value);
  auto suggest = [&](const std::string& product) {
    std::string mig = pv.mig;
    if (!mig.empty()) mig = "-MIG-" + mig.substr(5);
    return product + mig + (pv.shared.empty() ? "" : "-SHARED");
  };
  if (!pv.shared.empty() && pv.shared != "-SHARED")
    return std::make_pair("GFD appends `-SHARED` in capitals, and label values are case-sensitive", suggest(pv.product));
  if (!pv.mig.empty() && pv.mig.substr(0, 5) != "-MIG-")
    return std::make_pair("GFD writes the MIG part as `-MIG-<profile>`, and label values are case-sensitive", suggest(pv.product));
  if (std::find(known.begin(), known.end(), pv.product) != known.end()) return std::nullopt;
  // (b) a known product in another case.
  for (const auto& k : known)
    if (lower(k) == lower(pv.product))
      return std::make_pair("GFD writes this product as `" + k + "` (from the driver's GPU name), and label values are case-sensitive",
                            suggest(k));
  const auto fv = fields(pv.product);
  // (c) the brand word in a case the driver never uses.
  for (const auto& b : brands())
    if (!fv.empty() && fv[0] != b && lower(fv[0]) == lower(b)) {
      std::string fixed = b + pv.product.substr(fv[0].size());
      std::string near = nearest(fixed, known);
      std::vector<std::string> same_case;
      for (const auto& k : known)
        if (lower(k) == lower(fixed)) same_case.push_back(k);
      return std::make_pair("driver GPU names start with `" + b + "`, never `" + fv[0] + "`, and label values are case-sensitive",
                            suggest(same_case.empty() ? (levenshtein(lower(near), lower(fixed)) <= 3 ? near : fixed) : same_case[0]));
    }
  // (d) a near miss of a known model: same brand and model word, and either the fields of a known
  // product in another order, or an `SXM<n>` form-factor word that no driver name of the model has.
  if (fv.size() < 2) return std::nullopt;
  std::vector<std::string> family;
  std::set<std::string> family_fields;
  for (const auto& k : known) {
    auto fk = fields(k);
    if (fk.size() >= 2 && fk[0] == fv[0] && fk[1] == fv[1]) {
      family.push_back(k);
      family_fields.insert(fk.begin(), fk.end());
    }
  }
  if (family.empty()) return std::nullopt;
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (const auto& k : family)
    if (sorted(fields(k)) == sorted(fv))
      return std::make_pair("GFD writes the words of the driver's name in its order: `" + k + "`", suggest(k));
  for (const auto& f : fv)
    if (f.size() >= 3 && f.starts_with("SXM") && !family_fields.contains(f)) {
      std::string list;
      for (const auto& k : family) list += (list.empty() ? "" : ", ") + k;
      // The SXM word means the SXM module: prefer the family's names that are not PCIe cards.
      std::vector<std::string> modules;
      for (const auto& k : family)
        if (lower(k).find("pcie") == std::string::npos && k.find("NVL") == std::string::npos) modules.push_back(k);
      return std::make_pair("no driver name of the " + fv[1] + " has `" + f + "` (GFD takes the product from the driver's name: " + list + ")",
                            suggest(nearest(pv.product, modules.empty() ? family : modules)));
    }
  return std::nullopt;
}

// NVML names of GPUs whose GFD product label is known (facts/nvidia.md §1.4): what NVIDIA's DRA
// driver publishes as the attribute `productName` (device.GetName()).
const std::vector<std::pair<std::string_view, std::string_view>>& nvml_names() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kNames = {
      {"NVIDIA-A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"}, {"NVIDIA-A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"},
      {"NVIDIA-A100-80GB-PCIe", "NVIDIA A100 80GB PCIe"}, {"NVIDIA-A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB"},
      {"NVIDIA-A30", "NVIDIA A30"}, {"NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3"},
      {"NVIDIA-H100-PCIe", "NVIDIA H100 PCIe"}, {"NVIDIA-H100-NVL", "NVIDIA H100 NVL"}, {"NVIDIA-H100", "NVIDIA H100"},
      {"NVIDIA-H200", "NVIDIA H200"}, {"NVIDIA-H200-NVL", "NVIDIA H200 NVL"}, {"NVIDIA-GH200-480GB", "NVIDIA GH200 480GB"},
      {"NVIDIA-GH200-120GB", "NVIDIA GH200 120GB"}, {"NVIDIA-GH200-144G-HBM3e", "NVIDIA GH200 144G HBM3e"},
      {"NVIDIA-H20", "NVIDIA H20"}, {"NVIDIA-B200", "NVIDIA B200"}, {"NVIDIA-GB200", "NVIDIA GB200"},
      {"NVIDIA-B300-SXM6-AC", "NVIDIA B300 SXM6 AC"}, {"NVIDIA-GB300", "NVIDIA GB300"},
      {"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "NVIDIA RTX PRO 6000 Blackwell Server Edition"},
      {"NVIDIA-L4", "NVIDIA L4"}, {"NVIDIA-L40S", "NVIDIA L40S"}, {"NVIDIA-A10", "NVIDIA A10"}, {"NVIDIA-A10G", "NVIDIA A10G"},
      {"NVIDIA-A40", "NVIDIA A40"}, {"Tesla-T4", "Tesla T4"},
  };
  return kNames;
}

// Whether a CEL `productName` value is in GFD's label form: no space, and a driver brand word
// (any case) followed by a dash. NVML's names separate the brand with a space ("NVIDIA H100 80GB
// HBM3", "Tesla T4"), so such a value never equals the attribute.
bool gfd_label_form(std::string_view v) {
  if (v.find(' ') != std::string_view::npos) return false;
  const size_t dash = v.find('-');
  if (dash == std::string_view::npos || dash + 1 >= v.size()) return false;
  const std::string first = lower(v.substr(0, dash));
  return std::any_of(brands().begin(), brands().end(), [&](const std::string& b) { return lower(b) == first; });
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

std::string memory_hint(const std::string& key, const std::string& value) {
  // "80GB", "80Gi", "80 G" → the nominal size in MiB, and a Gt bound a little below it.
  size_t i = 0;
  while (i < value.size() && (std::isdigit(static_cast<unsigned char>(value[i])) || value[i] == '.')) ++i;
  std::string unit = lower(value.substr(i));
  unit.erase(std::remove(unit.begin(), unit.end(), ' '), unit.end());
  double n = 0;
  if (i > 0 && i < 12) {
    try {
      n = std::stod(value.substr(0, i));
    } catch (...) {
      n = 0;
    }
  }
  double mib = 0;
  if (unit == "g" || unit == "gb" || unit == "gi" || unit == "gib") mib = n * 1024;
  if (unit == "t" || unit == "tb" || unit == "ti" || unit == "tib") mib = n * 1024 * 1024;
  if (unit == "m" || unit == "mb" || unit == "mi" || unit == "mib") mib = n;
  if (mib <= 0) return "";
  const auto nominal = static_cast<int64_t>(mib);
  const auto bound = static_cast<int64_t>(mib * 0.95) / 1000 * 1000;
  return "; " + value + " is " + std::to_string(nominal) + " MiB nominal, but GPUs report less (an H100 80GB HBM3 reports 81559), "
         "so select with node affinity `{key: " + key + ", operator: Gt, values: [\"" + std::to_string(bound) + "\"]}`";
}

struct PendingMig {
  ObjectRef ref;
  std::string pointer;
  Pos pos;
  std::string value;
};

struct State final : RuleState {
  engine::Records<PendingMig> mig;
  [[nodiscard]] bool mergeable() const override { return true; }
  void merge(RuleState& later) override { engine::append(mig, static_cast<State&>(later).mig); }
};

class GpuProductLabelInvalid final : public Rule {
 public:
  GpuProductLabelInvalid() {
    info_.id = "gpu-product-label-invalid";
    info_.severity = Severity::error;
    info_.category = "labels";
    info_.seed = "9.3";
    info_.summary = "A pod requires a GPU node label value that GPU Feature Discovery never writes, so it can never schedule there";
    info_.rationale =
        "Seed 9.3 selects GPU nodes by the labels of GPU Feature Discovery (GFD): `nvidia.com/gpu.product`, "
        "`nvidia.com/gpu.memory`, and `nvidia.com/mig.config` for MIG layouts. Label matching is exact and "
        "case-sensitive, so a value GFD never writes leaves the pod Pending forever (`didn't match Pod's node "
        "affinity/selector`). NVIDIA's own README selects `TESLA-T4`, which misses the real `Tesla-T4`.\n\n"
        "GFD takes the product from the driver's GPU name: it deletes every character outside "
        "`[A-Za-z0-9-_. ]`, joins the words with `-`, appends `-MIG-<profile>` for MIG devices and `-SHARED` for "
        "shared, not renamed resources. A name of a GPU that does not exist yet is not provably wrong, so the "
        "rule reports a `nvidia.com/gpu.product` (or `nvidia.com/mig-*.product`) value in a `nodeSelector` or a "
        "required node-affinity `In` only when:\n\n"
        "1. it contains a character the sanitiser deletes, or a space (e.g. `NVIDIA H100 80GB HBM3`);\n"
        "2. it differs only in letter case from a known product (e.g. `NVIDIA-H100-PCIE` for `NVIDIA-H100-PCIe`), "
        "or its `-SHARED`/`-MIG-` suffix is not in capitals;\n"
        "3. its first word is a driver brand in the wrong case (`TESLA-`, `Nvidia-`, `nvidia-`; the driver writes "
        "`NVIDIA`, `Tesla`, `Quadro`, `GeForce`);\n"
        "4. it names a known model (same brand and model word as a known product, e.g. `NVIDIA-H100-…`) and either "
        "has the words of one of that model's products in another order, or an `SXM<n>` word that none of that "
        "model's driver names has (e.g. `NVIDIA-H100-SXM5-80GB`, `NVIDIA-H200-SXM5-141GB`).\n\n"
        "Known products are the GPUs listed in the facts (PCI ID table and observed labels) and the datacenter "
        "entries of the driver's compatible-GPU list; `extraProducts` adds more.\n\n"
        "`nvidia.com/gpu.memory` (and `nvidia.com/mig-*.memory`) holds the total memory in MiB as an integer: a "
        "value with a unit (`80GB`, `80Gi`) never matches, and for `Gt`/`Lt` the API server rejects it. "
        "An equality value below 1024 is reported too: no GPU GFD labels has less than 1 GiB, so it is a size in GB.\n\n"
        "`nvidia.com/mig.config` names a config of the MIG Manager's mig-parted ConfigMap. With a complete "
        "inventory that holds mig-parted configs (ConfigMap data with `version: v1` and `mig-configs:`), a "
        "required value that none of them defines is reported: MIG Manager cannot apply it and the node never "
        "gets that label value from a successful reconfiguration.\n\n"
        "Through Dynamic Resource Allocation a request (or its DeviceClass) selects the model with CEL: "
        "`device.attributes['gpu.nvidia.com'].productName == '<name>'`. NVIDIA's DRA driver publishes `productName` "
        "as NVML's device name itself, not GFD's sanitised label (`cmd/gpu-kubelet-plugin/nvlib.go`: `productName, "
        "ret := device.GetName()`; `deviceinfo.go` and `mig.go` put it in the attribute `productName`, also on MIG "
        "devices; NVIDIA/k8s-dra-driver-gpu @22407113, v0.4.0-rc.1+14). NVML's names separate the brand word with a "
        "space (`NVIDIA H100 80GB HBM3`, `Tesla T4`), so a value in the label form (`NVIDIA-H100-80GB-HBM3`: a "
        "brand word, a dash, no space) matches no device and the claim is never allocated: the pod stays Pending. "
        "The rule reports such an equality in a ResourceClaim, ResourceClaimTemplate or DeviceClass selector (a "
        "conjunction of comparisons; a selector gpuguard does not read is left alone).";
    info_.remediation =
        "Use the value the message suggests, or read the real labels with "
        "`kubectl get nodes -L nvidia.com/gpu.product,nvidia.com/gpu.memory`. Select memory with a `Gt` node-affinity "
        "expression in MiB rather than an exact value.";
    info_.facts = {
        "facts/nvidia.md §4 — GFD product string rule, observed labels, `gpu.memory` in MiB, the `TESLA-T4` and "
        "`NVIDIA-H100-SXM5-80GB` hazards; §1.4 — PCI ID → driver name → product; §2 — `nvidia.com/mig.config` "
        "selects a mig-parted config by name [KDP, OGKM, CND].",
        "Checked upstream: k8s-device-plugin `internal/lm/resource.go` `sanitise()` deletes `[^A-Za-z0-9-_. ]` and "
        "joins `strings.Fields` with `-`; `getProductName` joins model, `MIG`, profile and `SHARED` with `-`. "
        "open-gpu-kernel-modules README lists the driver names (A100, A800, H100, H800, H20, H200, GH200 entries read).",
    };
    info_.params = {
        ParamSpec{"extraProducts", ParamType::string_list, json::array(),
                  "further `nvidia.com/gpu.product` values your nodes carry (new GPUs)", std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.checks.insert(info_.checks.end(), dra_kinds().begin(), dra_kinds().end());
    info_.reads = {KindRef{"", "ConfigMap"}};
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: cuda-test
spec:
  nodeSelector:
    nvidia.com/gpu.product: TESLA-T4
  containers:
    - name: cuda
      image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0
      resources:
        limits:
          nvidia.com/gpu: 1
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: cuda-test
spec:
  nodeSelector:
    nvidia.com/gpu.product: Tesla-T4
  containers:
    - name: cuda
      image: nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0
      resources:
        limits:
          nvidia.com/gpu: 1
)";
  }

  const RuleInfo& info() const override { return info_; }
  std::unique_ptr<RuleState> make_state() const override { return std::make_unique<State>(); }

  // Linear in the templates' label requirements: each value is compared with the catalog of
  // known products (a fixed list) and the config's extraProducts.
  void check(const Object& obj, CheckContext& ctx) const override {
    if (obj.gvk.group == kResourceGroup) {
      for (const auto& [pointer, expression, group] : dra_selector_expressions(obj)) {
        const CelTerm t = cel_attribute_equality(expression, "productName");
        if (!t.value || !gfd_label_form(*t.value)) continue;
        const std::string& v = *t.value;
        std::string near;
        for (const auto& [label, name] : nvml_names())
          if (lower(label) == lower(v)) near = std::string(name);
        std::string msg;
        msg.reserve(400 + 2 * v.size() + near.size());
        msg.append("productName == '").append(v).append("' never matches a device: NVIDIA's DRA driver publishes the attribute "
                                                        "productName as NVML's GPU name, with spaces (NVIDIA H100 80GB HBM3), "
                                                        "not GFD's node-label form with dashes, so the claim is never allocated "
                                                        "and its pods stay Pending");
        if (!near.empty()) msg.append("; did you mean '").append(near).append("'?");
        ctx.report(pointer, std::move(msg));
      }
      return;
    }
    const auto& extra = ctx.params().strings("extraProducts");
    for (const auto& t : pod_templates(obj))
      for (const auto& r : labels::label_requirements(t)) {
        const bool mig_key = r.key.starts_with("nvidia.com/mig-");
        if (r.key == "nvidia.com/gpu.product" || (mig_key && r.key.ends_with(".product"))) {
          if (!r.positive() || std::find(extra.begin(), extra.end(), r.value) != extra.end()) continue;
          if (auto p = product_problem(r.value)) {
            const std::string value(r.value);
            ctx.report(r.pointer(), std::string(r.key) + "=" + value + " never matches a node: " + p->first +
                                        (p->second.empty() || p->second == value ? "" : "; did you mean `" + p->second + "`?"));
          }
        } else if (r.key == "nvidia.com/gpu.memory" || (mig_key && r.key.ends_with(".memory"))) {
          const bool range = r.op == "Gt" || r.op == "Lt";
          if (!r.positive() && !range) continue;
          const std::string key(r.key), op(r.op), value(r.value);
          if (!all_digits(value))
            ctx.report(r.pointer(), key + " " + (range ? op + " " : "= ") + value +
                                        (range ? " is refused by the API server (Gt/Lt need an integer)"
                                               : " never matches a node") +
                                        ": GFD writes the GPU's total memory in MiB as a plain integer" + memory_hint(key, value));
          else if (!range && value.size() < 5 && std::stoi(value) < 1024)
            ctx.report(r.pointer(), key + "=" + value + " never matches a node: GFD writes memory in MiB and no GPU has less "
                                        "than 1024 MiB; " + value + " looks like a size in GB" + memory_hint(key, value + "GB"));
        } else if (r.key == "nvidia.com/mig.config" && r.positive() && !r.value.empty()) {
          const std::string pointer = r.pointer();
          static_cast<State*>(ctx.state())->mig.push_back({ctx.ref(), pointer, ctx.position_of(pointer), std::string(r.value)});
        }
      }
  }

  void finish(FinishContext& ctx) const override {
    auto* st = static_cast<State*>(ctx.state());
    if (st->mig.empty() || !ctx.inventory().complete()) return;
    std::set<std::string, std::less<>> names;
    std::vector<std::string> sources;
    for (const Object* cm : ctx.inventory().list("", "ConfigMap"))
      if (labels::mig_config_names(*cm, names)) sources.push_back(cm->display_name());
    if (sources.empty()) return;
    std::vector<std::string> all(names.begin(), names.end());
    std::string where;
    for (const auto& s : sources) where += (where.empty() ? "" : ", ") + s;
    for (const auto& m : st->mig) {
      if (names.contains(m.value)) continue;
      const std::string near = nearest(m.value, all);
      ctx.report(m.ref, m.pointer, m.pos,
                 "nvidia.com/mig.config=" + m.value + " names no mig-parted config (configs in " + where +
                     "): MIG Manager cannot apply it, so no node is ever configured that way" +
                     (near.empty() ? "" : "; did you mean `" + near + "`?"));
    }
  }

 private:
  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_gpu_product_label_invalid() { return std::make_unique<GpuProductLabelInvalid>(); }

}  // namespace gpuguard::rules
