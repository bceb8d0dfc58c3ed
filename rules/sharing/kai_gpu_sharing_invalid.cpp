// kai-gpu-sharing-invalid: KAI Scheduler GPU-sharing annotations its admission webhook refuses.

#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>

#include "engine/kinds.h"
#include "engine/positions.h"
#include "rules/all.h"
#include "rules/schedulers.h"

namespace gpuguard::rules {

namespace {

using namespace engine;

// Go's strconv.ParseUint(s, 10, 64): digits only (no sign, no underscore: base 10 is given), not
// empty, at most 2^64 - 1. nullopt where Go returns an error.
std::optional<uint64_t> go_parse_uint(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != b[i]) return false;
  return true;
}

// Go's underscoreOK (strconv/atoi.go): an underscore only between digits, or after a base prefix.
bool underscore_ok(std::string_view s) {
  char saw = '^';
  size_t i = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  bool hex = false;
  if (s.size() >= 2 && s[0] == '0' && (lower(s[1]) == 'b' || lower(s[1]) == 'o' || lower(s[1]) == 'x')) {
    i = 2;
    saw = '0';
    hex = lower(s[1]) == 'x';
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if ((c >= '0' && c <= '9') || (hex && lower(c) >= 'a' && lower(c) <= 'f')) {
      saw = '0';
      continue;
    }
    if (c == '_') {
      if (saw != '0') return false;
      saw = '_';
      continue;
    }
    if (saw == '_') return false;
    saw = '!';
  }
  return saw != '_';
}

// What Go's strconv.ParseFloat(s, 64) makes of s, as far as KAI's `0 < f < 1` test goes: nullopt
// where Go returns an error (syntax, or a value out of range); otherwise the value. The syntax is
// Go's (strconv/atof.go special and readFloat): an optional sign; `inf`/`infinity` (any case, signed
// or not) and `nan` (any case, unsigned); decimal digits with one optional `.` and an optional
// exponent `e[+-]digits`; or `0x` hex digits with an optional `.` and a required `p[+-]digits`;
// underscores between digits. A well-formed value too small for a double (Go: 0 or a subnormal) is
// returned as the smallest positive double, so that it is not refused (KAI would refuse it only when
// Go rounds it to 0: not worth a false error).
std::optional<double> go_parse_float(std::string_view s) {
  if (s.empty()) return std::nullopt;
  // special()
  {
    std::string_view rest = s;
    bool neg = false;
    const bool signed_ = rest[0] == '+' || rest[0] == '-';
    if (signed_) {
      neg = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (iequals(rest, "inf") || iequals(rest, "infinity")) return neg ? -HUGE_VAL : HUGE_VAL;
    if (!signed_ && iequals(rest, "nan")) return std::nan("");
  }
  // readFloat()
  size_t i = 0;
  bool neg = false;
  if (s[i] == '+' || s[i] == '-') {
    neg = s[i] == '-';
    ++i;
  }
  bool hex = false;
  if (i + 2 < s.size() && s[i] == '0' && lower(s[i + 1]) == 'x') {
    hex = true;
    i += 2;
  }
  std::string clean;  // the mantissa and exponent without sign, prefix or underscores
  bool underscores = false;
  bool sawdot = false;
  bool sawdigits = false;
  bool nonzero = false;
  int64_t magnitude = 0;  // digits (hex: bits) before the point from the first nonzero digit on, or minus the zeros after it
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      underscores = true;
      continue;
    }
    if (c == '.') {
      if (sawdot) break;
      sawdot = true;
      clean += c;
      continue;
    }
    const bool digit = (c >= '0' && c <= '9') || (hex && lower(c) >= 'a' && lower(c) <= 'f');
    if (!digit) break;
    sawdigits = true;
    clean += c;
    if (c != '0') nonzero = true;
    if (!sawdot && nonzero) magnitude += hex ? 4 : 1;
    if (sawdot && !nonzero) magnitude -= hex ? 4 : 1;
  }
  if (!sawdigits) return std::nullopt;
  int64_t exp = 0;
  if (i < s.size() && lower(s[i]) == (hex ? 'p' : 'e')) {
    clean += hex ? 'p' : 'e';
    ++i;
    if (i >= s.size()) return std::nullopt;
    int64_t esign = 1;
    if (s[i] == '+' || s[i] == '-') {
      if (s[i] == '-') esign = -1;
      clean += s[i];
      ++i;
    }
    if (i >= s.size() || s[i] < '0' || s[i] > '9') return std::nullopt;
    for (; i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '_'); ++i) {
      if (s[i] == '_') {
        underscores = true;
        continue;
      }
      clean += s[i];
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
    }
    exp *= esign;
  } else if (hex) {
    return std::nullopt;  // "Must have exponent."
  }
  if (i != s.size()) return std::nullopt;
  if (underscores && !underscore_ok(s.substr(0, i))) return std::nullopt;
  if (!nonzero) return neg ? -0.0 : 0.0;
  double v = 0;
  const auto [end, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v,
                                         hex ? std::chars_format::hex : std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // Too large (Go: ±Inf and ErrRange) or too small (Go: a subnormal or 0).
    const int64_t scale = magnitude + exp;  // hex: in bits
    if (scale > 0) return std::nullopt;
    v = std::nextafter(0.0, 1.0);
  } else if (ec != std::errc() || end != clean.data() + clean.size()) {
    return std::nullopt;
  }
  return neg ? -v : v;
}

// A value for a message: at most 60 characters (an annotation may be 256 KiB).
std::string shown(std::string_view v) {
  constexpr size_t kMax = 60;
  if (v.size() <= kMax) return std::string(v);
  // Reserved first: g++ 12 -O2 otherwise takes the copy for one into the small-string buffer and
  // warns falsely (-Warray-bounds).
  std::string out;
  out.reserve(kMax);
  out.append(v.data(), kMax - 3);
  out += "...";
  return out;
}

// An annotation of the pod template: whether it is there, and its value.
struct Annotation {
  bool present = false;
  std::string_view value;
  std::string pointer;
};

// What KAI refuses, and where.
struct Refusal {
  std::string pointer;
  std::string message;  // KAI's own
  std::string detail;   // what in the pod makes it so
};

class KaiGpuSharingInvalid final : public Rule {
 public:
  KaiGpuSharingInvalid() {
    info_.id = "kai-gpu-sharing-invalid";
    info_.severity = Severity::error;
    info_.category = "sharing";
    info_.seed = "9.2";
    info_.summary =
        "KAI Scheduler GPU-sharing annotations (`gpu-fraction`, `gpu-memory`, `gpu-fraction-num-devices`, `mps`, "
        "`gpu-fraction-container-name`) that KAI's admission webhook refuses";
    info_.rationale =
        "KAI Scheduler shares a GPU between pods that ask for part of one by annotations: `gpu-fraction` "
        "(a part of a GPU's memory, e.g. `\"0.5\"`) or `gpu-memory` (MiB), optionally "
        "`gpu-fraction-num-devices` (that share on several GPUs), `gpu-fraction-container-name` (the "
        "container that gets it; the first regular container by default) and `mps: \"true\"`. KAI's "
        "admission webhook checks them on every pod that goes to KAI (`schedulerName`, parameter "
        "`kaiScheduler`) and refuses the pod, with these messages, in this order:\n\n"
        "1. the mutating webhook (CREATE): `container with name <name> not found for fraction request` "
        "when `gpu-fraction-container-name` names no init or regular container of a pod with a share;\n"
        "2. `attempting to create a pod <ns>/<name> with gpu sharing request, while GPU sharing is "
        "disabled` when KAI runs without GPU sharing (`global.gpuSharing`, off by default; parameter "
        "`kaiGpuSharing`);\n"
        "3. `MPS is only supported with GPU fraction request`: `mps: \"true\"` without `gpu-fraction` or "
        "`gpu-memory`;\n"
        "4. `cannot have both GPU fraction request and whole GPU resource request/limit`: `gpu-fraction` "
        "and an `nvidia.com/gpu` limit on any container or init container (any amount, 0 included: KAI "
        "looks for the key). A request without a limit the API server refuses first "
        "(`gpu-request-limit-mismatch`);\n"
        "5. `cannot request both GPU and GPU memory`: `gpu-memory` with `gpu-fraction` or with an "
        "`nvidia.com/gpu` limit;\n"
        "6. `cannot request multiple fractional devices without specifying fraction portion or "
        "gpu-memory`: `gpu-fraction-num-devices` alone;\n"
        "7. `gpu-memory annotation value must be a positive integer greater than 0` (Go's "
        "`ParseUint(v, 10, 64)`: digits only);\n"
        "8. `gpu-fraction annotation value must be a positive number smaller than 1.0` (Go's "
        "`ParseFloat`, then `0 < f < 1`: `\"1\"`, `\"0\"`, `\"50%\"`, `\" 0.5\"` are refused; `\".5\"`, "
        "`\"5e-1\"` are not);\n"
        "9. `fraction count annotation value must be a positive integer greater than 0`.\n\n"
        "A Deployment, Job or training job whose template carries such annotations has every pod it "
        "creates refused, so the workload never starts. Annotations on the workload itself do not reach "
        "its pods and are not read. Pods in `kube-system` and in KAI's own namespace (`kai-scheduler`) "
        "are outside KAI's webhooks (their namespaceSelector) and are skipped. KAI's optional "
        "`global.podLabelSelector`, `global.namespaceLabelSelector` and `admission.queueLabelSelector` "
        "narrow its webhooks further; gpuguard does not know them and judges every KAI pod.\n\n"
        "Read in NVIDIA/KAI-Scheduler @72de64fc (v0.13.0-rc1+142; the same at the v0.13.0 tag): "
        "`pkg/binder/plugins/gpusharing/gpu-request/gpu_request_validator.go` (ValidateGpuRequests), "
        "`pkg/admission/webhook/v1alpha2/gpusharing/gpu_sharing.go` (Validate, Mutate), "
        "`pkg/binder/common/gpu_access.go` (GetFractionContainerRef), "
        "`pkg/admission/webhook/v1alpha2/podhooks/pod_validator.go` (only pods whose schedulerName is "
        "KAI's), `pkg/operator/operands/admission/resources.go` (the webhooks: pods, CREATE for the "
        "mutating one, CREATE and UPDATE for the validating one, failurePolicy Fail, namespaces other "
        "than kube-system and KAI's). KAI's GPU-sharing examples (`docs/gpu-sharing/*.yaml`, "
        "`docs/gpu-sharing/mps/*.yaml`) pass.";
    info_.remediation =
        "Ask for a share one way: `gpu-fraction` strictly between 0 and 1 (`\"0.5\"`) or `gpu-memory` in "
        "MiB (`\"2000\"`), never with an `nvidia.com/gpu` limit; add `gpu-fraction-num-devices` and "
        "`mps` only to such a pod; name an existing container in `gpu-fraction-container-name`. For a "
        "whole GPU or more, drop the annotations and set `limits: {nvidia.com/gpu: N}`.";
    info_.facts = {
        "facts/modern-stack.md §2 — KAI's GPU-sharing annotations and what its admission refuses; "
        "re-read at NVIDIA/KAI-Scheduler @72de64fc: `gpu_request_validator.go` (the messages quoted), "
        "`pkg/common/resources/gpu_sharing.go` (RequestsGPUFraction: either annotation present), "
        "`pkg/common/constants/constants.go` (annotation names, `nvidia.com/gpu`), "
        "`deployments/kai-scheduler/values.yaml` (`global.gpuSharing: false`).",
        "Go strconv (golang/go `src/strconv/atof.go` @0c9d2efb): ParseFloat's syntax (decimal, hex "
        "with a required `p` exponent, underscores between digits, `inf`/`infinity`/`nan`).",
    };
    info_.params = {
        ParamSpec{std::string(sched::kKaiSchedulerParam), ParamType::string, std::string(sched::kKaiDefaultScheduler),
                  std::string(sched::kKaiSchedulerParamDoc), std::nullopt, std::nullopt},
        ParamSpec{"kaiGpuSharing", ParamType::boolean, true,
                  "whether KAI Scheduler runs with GPU sharing on (`global.gpuSharing=true`); when false, KAI refuses "
                  "every pod with `gpu-fraction` or `gpu-memory`",
                  std::nullopt, std::nullopt},
    };
    info_.checks = pod_template_kinds();
    info_.reads_parts = kPartScheduler;
    info_.example_bad = R"(apiVersion: v1
kind: Pod
metadata:
  name: notebook
  annotations:
    gpu-fraction: "1"
spec:
  schedulerName: kai-scheduler
  containers:
    - name: main
      image: nvcr.io/nvidia/pytorch:24.06-py3
)";
    info_.example_good = R"(apiVersion: v1
kind: Pod
metadata:
  name: notebook
  annotations:
    gpu-fraction: "0.5"
spec:
  schedulerName: kai-scheduler
  containers:
    - name: main
      image: nvcr.io/nvidia/pytorch:24.06-py3
)";
  }

  const RuleInfo& info() const override { return info_; }

  void check(const Object& obj, CheckContext& ctx) const override {
    const std::string kai = ctx.params().string(sched::kKaiSchedulerParam);
    if (kai.empty()) return;
    const std::string& ns = ctx.namespace_of_object();
    if (ns == "kube-system" || ns == sched::kKaiDefaultScheduler) return;  // outside KAI's webhooks
    const bool sharing = ctx.params().boolean("kaiGpuSharing");
    for (const auto& t : pod_templates(obj)) {
      if (!sched::kai_template(obj, t, kai)) continue;
      auto r = refusal(obj, t, ns, sharing);
      if (!r) continue;
      const std::string whose = t.pointer.empty() ? "this pod" : "every pod of this template";
      ctx.report(r->pointer, "KAI Scheduler's admission webhook refuses " + whose + ": \"" + r->message + "\" (" + r->detail + ")");
    }
  }

 private:
  static std::optional<Refusal> refusal(const Object& obj, const PodTemplate& t, const std::string& ns, bool sharing) {
    Annotation fraction, memory, count, mps, container;
    const std::string base = t.pointer + "/metadata/annotations";
    const Node annotations = member(t.metadata(), "annotations");
    if (!annotations.is_object()) return std::nullopt;
    for (const auto entry : annotations.items()) {
      Annotation* a = entry.key == sched::kKaiGpuFraction                ? &fraction
                      : entry.key == sched::kKaiGpuMemory                ? &memory
                      : entry.key == sched::kKaiGpuFractionNumDevices    ? &count
                      : entry.key == sched::kKaiMps                      ? &mps
                      : entry.key == sched::kKaiGpuFractionContainerName ? &container
                                                                         : nullptr;
      if (!a) continue;
      // Annotation values are strings; another value the API server refuses before KAI sees the pod.
      if (!entry.value.is_string() && !entry.value.is_null()) return std::nullopt;
      *a = Annotation{true, entry.value.str(), pointer_join(base, entry.key)};
    }
    const bool fractional = fraction.present || memory.present;
    if (!fractional && !count.present && !mps.present) return std::nullopt;
    auto quoted = [](const Annotation& a, std::string_view key) {
      return std::string(key) + ": \"" + shown(a.value) + "\"";
    };

    // The mutating webhook runs first (CREATE): GetFractionContainerRef.
    const Node regular = member(t.spec, "containers");
    if (fractional && container.present && regular.is_array() && !regular.empty()) {
      bool found = false;
      for (const char* list : {"initContainers", "containers"}) {
        const Node cs = member(t.spec, list);
        if (!cs.is_array()) continue;
        for (const Node c : cs)
          if (string_at(c, "name") == std::optional<std::string_view>(container.value)) found = true;
      }
      if (!found)
        return Refusal{container.pointer, "container with name " + shown(container.value) + " not found for fraction request",
                       quoted(container, sched::kKaiGpuFractionContainerName) + " names no container or init container of the pod"};
    }

    // The validating webhook: GPUSharing.Validate, then ValidateGpuRequests.
    const Annotation& share = fraction.present ? fraction : memory;
    if (!sharing && fractional) {
      const std::string name = obj.name.empty() ? std::string("<name>") : obj.name;
      return Refusal{share.pointer,
                     "attempting to create a pod " + ns + "/" + (t.pointer.empty() ? name : "<pod>") +
                         " with gpu sharing request, while GPU sharing is disabled",
                     quoted(share, fraction.present ? sched::kKaiGpuFraction : sched::kKaiGpuMemory) +
                         ", and kaiGpuSharing is false: KAI runs without global.gpuSharing"};
    }
    if (!fractional && mps.present && mps.value == "true")
      return Refusal{mps.pointer, "MPS is only supported with GPU fraction request",
                     "mps: \"true\" without gpu-fraction or gpu-memory"};
    std::string whole;  // the first container or init container with an nvidia.com/gpu limit
    for (const char* list : {"containers", "initContainers"}) {
      const Node cs = member(t.spec, list);
      if (!cs.is_array() || !whole.empty()) continue;
      for (const Node c : cs)
        if (has_gpu_limit(c)) {
          whole = std::string(list == std::string_view("containers") ? "container \"" : "init container \"") +
                  std::string(string_at(c, "name").value_or("")) + "\"";
          break;
        }
    }
    if (fraction.present && !whole.empty())
      return Refusal{fraction.pointer, "cannot have both GPU fraction request and whole GPU resource request/limit",
                     quoted(fraction, sched::kKaiGpuFraction) + ", and " + whole + " has an nvidia.com/gpu limit"};
    if (memory.present && (fraction.present || !whole.empty()))
      return Refusal{memory.pointer, "cannot request both GPU and GPU memory",
                     quoted(memory, sched::kKaiGpuMemory) + (fraction.present ? " together with gpu-fraction"
                                                                                : ", and " + whole + " has an nvidia.com/gpu limit")};
    if (count.present && !fractional)
      return Refusal{count.pointer, "cannot request multiple fractional devices without specifying fraction portion or gpu-memory",
                     quoted(count, sched::kKaiGpuFractionNumDevices) + " without gpu-fraction or gpu-memory"};
    if (memory.present) {
      auto v = go_parse_uint(memory.value);
      if (!v || *v == 0)
        return Refusal{memory.pointer, "gpu-memory annotation value must be a positive integer greater than 0",
                       quoted(memory, sched::kKaiGpuMemory) + " is not a whole number of MiB above 0"};
    }
    if (fraction.present) {
      auto v = go_parse_float(fraction.value);
      if (!v || *v <= 0 || *v >= 1)
        return Refusal{fraction.pointer, "gpu-fraction annotation value must be a positive number smaller than 1.0",
                       quoted(fraction, sched::kKaiGpuFraction) +
                           (v && *v >= 1 ? ": a whole GPU or more is asked for with limits: {nvidia.com/gpu: N}, not a fraction"
                                         : " is not a number strictly between 0 and 1")};
    }
    if (count.present) {
      auto v = go_parse_uint(count.value);
      if (!v || *v == 0)
        return Refusal{count.pointer, "fraction count annotation value must be a positive integer greater than 0",
                       quoted(count, sched::kKaiGpuFractionNumDevices) + " is not a whole number above 0"};
    }
    return std::nullopt;
  }

  static bool has_gpu_limit(Node c) {
    const Node limits = path(c, {"resources", "limits"});
    if (!limits.is_object()) return false;
    for (const auto entry : limits.items())
      if (entry.key == "nvidia.com/gpu") return true;
    return false;
  }

  RuleInfo info_;
};

}  // namespace

std::unique_ptr<const Rule> make_kai_gpu_sharing_invalid() { return std::make_unique<KaiGpuSharingInvalid>(); }

}  // namespace gpuguard::rules
