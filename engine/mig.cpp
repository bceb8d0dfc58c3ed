#include "engine/mig.h"

#include <algorithm>
#include <cctype>
#include <limits>

#include "engine/positions.h"

namespace gpuguard::engine {

bool MigProfile::media() const {
  size_t plus = name.find('+');
  if (plus == std::string::npos) return false;
  std::string_view attrs = std::string_view(name).substr(plus + 1);
  size_t start = 0;
  while (start <= attrs.size()) {
    size_t end = attrs.find(',', start);
    if (end == std::string_view::npos) end = attrs.size();
    std::string_view a = attrs.substr(start, end - start);
    if (a == "me" || a == "me.all") return true;
    start = end + 1;
  }
  return false;
}

const MigProfile* MigGpu::profile(std::string_view n) const {
  for (const auto& p : profiles)
    if (p.name == n) return &p;
  return nullptr;
}

bool MigGpu::has_device_id(std::string_view id) const {
  return std::find(device_ids.begin(), device_ids.end(), id) != device_ids.end();
}

namespace {

bool hex8(std::string_view s) {
  if (s.size() != 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return false;
  for (size_t i = 2; i < s.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
  return true;
}

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string normalize_device_id(std::string_view s) {
  std::string_view dev = s;
  if (size_t colon = s.find(':'); colon != std::string_view::npos) {
    dev = s.substr(0, colon);
    if (!hex8(s.substr(colon + 1))) return "";
  }
  if (!hex8(dev)) return "";
  std::string out = "0x";
  for (size_t i = 2; i < dev.size(); ++i) out += static_cast<char>(std::toupper(static_cast<unsigned char>(dev[i])));
  return out;
}

bool valid_profile_name(std::string_view name, std::string* why) {
  auto fail = [&](std::string msg) {
    if (why) *why = std::move(msg);
    return false;
  };
  std::string_view rest = name;
  std::string_view attrs;
  size_t plus = rest.find('+');
  size_t minus = rest.find('-');
  if (plus != std::string_view::npos && minus != std::string_view::npos)
    return fail("a profile takes either +attributes or one -attribute, not both");
  size_t sep = plus != std::string_view::npos ? plus : minus;
  if (sep != std::string_view::npos) {
    attrs = rest.substr(sep + 1);
    rest = rest.substr(0, sep);
    if (attrs.empty()) return fail("empty attribute list after '" + std::string(1, name[sep]) + "'");
    if (minus != std::string_view::npos && attrs.find(',') != std::string_view::npos)
      return fail("only one attribute may follow '-'");
    size_t start = 0;
    while (start <= attrs.size()) {
      size_t end = attrs.find(',', start);
      if (end == std::string_view::npos) end = attrs.size();
      std::string_view a = attrs.substr(start, end - start);
      if (a != "me" && a != "me.all" && a != "gfx") return fail("unknown attribute \"" + std::string(a) + "\" (known: me, me.all, gfx)");
      start = end + 1;
    }
  }
  // [<C>c.]<G>g.<GB>gb
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find('.', start);
    if (end == std::string_view::npos) end = rest.size();
    parts.push_back(rest.substr(start, end - start));
    start = end + 1;
  }
  auto num_suffix = [](std::string_view p, std::string_view suffix) {
    return p.size() > suffix.size() && p.ends_with(suffix) && digits(p.substr(0, p.size() - suffix.size()));
  };
  if (parts.size() == 3 && num_suffix(parts[0], "c") && num_suffix(parts[1], "g") && num_suffix(parts[2], "gb")) return true;
  if (parts.size() == 2 && num_suffix(parts[0], "g") && num_suffix(parts[1], "gb")) return true;
  return fail("expected <G>g.<GB>gb, optionally <C>c. before and +me/+me.all/+gfx or -me after (e.g. 1g.10gb, 3g.40gb, 1g.5gb+me)");
}

std::vector<MigGpu> parse_mig_gpus(const json& list, std::vector<std::pair<std::string, std::string>>& problems) {
  std::vector<MigGpu> out;
  if (!list.is_array()) {
    problems.emplace_back("", "expected a list of GPU models");
    return out;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    const json& g = list[i];
    const std::string gp = pointer_join("", i);
    const size_t before = problems.size();
    auto problem = [&](std::string ptr, std::string msg) { problems.emplace_back(std::move(ptr), std::move(msg)); };
    if (!g.is_object()) {
      problem(gp, "expected a mapping (name, deviceIDs, products, computeSlices, memorySlices, profiles)");
      continue;
    }
    static constexpr std::string_view kKeys[] = {"name", "deviceIDs", "products", "computeSlices", "memorySlices",
                                                 "profiles", "inferred", "note"};
    for (const auto& [k, v] : g.items())
      if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys))
        problem(pointer_join(gp, k), "unknown key \"" + k + "\" (known: name, deviceIDs, products, computeSlices, memorySlices, profiles, inferred, note)");
    MigGpu gpu;
    if (auto n = string_at(g, "name"); n && !n->empty()) gpu.name = *n;
    else problem(pointer_join(gp, "name"), "name: expected a non-empty string");
    auto strings = [&](std::string_view key, std::vector<std::string>& dst, bool device) {
      const json* v = member(g, key);
      if (!v) return;
      if (!v->is_array()) {
        problem(pointer_join(gp, key), std::string(key) + ": expected a list of strings");
        return;
      }
      for (size_t j = 0; j < v->size(); ++j) {
        const json& s = (*v)[j];
        std::string ptr = pointer_join(pointer_join(gp, key), j);
        if (!s.is_string()) {
          problem(ptr, std::string(key) + ": expected a string, got " + brief(s));
          continue;
        }
        if (device) {
          std::string id = normalize_device_id(s.get<std::string>());
          if (id.empty() || s.get<std::string>().find(':') != std::string::npos)
            problem(ptr, "deviceIDs: expected 0x<device><vendor> as mig-parted's device-filter writes it (e.g. 0x233010DE), got " + brief(s));
          else dst.push_back(id);
        } else {
          dst.push_back(s.get<std::string>());
        }
      }
    };
    strings("deviceIDs", gpu.device_ids, true);
    strings("products", gpu.products, false);
    auto small_int = [&](const json& obj, std::string_view key, int lo, int hi, const std::string& ptr, int& dst, bool required) {
      const json* v = member(obj, key);
      if (!v) {
        if (required) problem(ptr, std::string(key) + ": required");
        return;
      }
      auto n = v->is_boolean() ? std::nullopt : as_int(*v);
      if (!n || *n < lo || *n > hi) {
        problem(pointer_join(ptr, key), std::string(key) + ": expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " + brief(*v));
        return;
      }
      dst = static_cast<int>(*n);
    };
    small_int(g, "computeSlices", 1, 32, gp, gpu.compute_slices, false);
    small_int(g, "memorySlices", 1, 32, gp, gpu.memory_slices, false);
    if (auto b = bool_at(g, "inferred")) gpu.inferred = *b;
    if (auto n = string_at(g, "note")) gpu.note = *n;
    const json* profiles = member(g, "profiles");
    if (!profiles || !profiles->is_array() || profiles->empty()) {
      problem(pointer_join(gp, "profiles"), "profiles: expected a non-empty list of {name, compute, memory, starts, max}");
    } else {
      for (size_t j = 0; j < profiles->size(); ++j) {
        const json& p = (*profiles)[j];
        std::string pp = pointer_join(pointer_join(gp, "profiles"), j);
        if (!p.is_object()) {
          problem(pp, "expected a mapping {name, compute, memory, starts, max}");
          continue;
        }
        for (const auto& [k, v] : p.items())
          if (k != "name" && k != "compute" && k != "memory" && k != "starts" && k != "max" && k != "inferred")
            problem(pointer_join(pp, k), "unknown key \"" + k + "\" (known: name, compute, memory, starts, max, inferred)");
        MigProfile prof;
        std::string why;
        auto n = string_at(p, "name");
        if (!n || !valid_profile_name(*n, &why)) problem(pointer_join(pp, "name"), "name: " + (n ? why : "expected a string"));
        else prof.name = *n;
        if (!prof.name.empty() && gpu.profile(prof.name)) problem(pointer_join(pp, "name"), "profile " + prof.name + " is listed twice");
        small_int(p, "compute", 1, gpu.compute_slices, pp, prof.compute, true);
        small_int(p, "memory", 1, gpu.memory_slices, pp, prof.memory, true);
        small_int(p, "max", 1, gpu.compute_slices, pp, prof.max, true);
        if (auto b = bool_at(p, "inferred")) prof.inferred = *b;
        const json* st = member(p, "starts");
        if (!st || !st->is_array() || st->empty()) {
          problem(pointer_join(pp, "starts"), "starts: expected a non-empty list of memory-slice offsets");
        } else {
          for (const auto& s : *st) {
            auto v = s.is_boolean() ? std::nullopt : as_int(s);
            if (!v || *v < 0 || *v > gpu.memory_slices - prof.memory) {
              problem(pointer_join(pp, "starts"), "starts: " + brief(s) + " is not an offset where " + std::to_string(prof.memory) +
                                                      " memory slices fit in " + std::to_string(gpu.memory_slices));
              break;
            }
            prof.starts.push_back(static_cast<int>(*v));
          }
        }
        gpu.profiles.push_back(std::move(prof));
      }
    }
    if (problems.size() == before) out.push_back(std::move(gpu));
  }
  return out;
}

json to_json(const MigGpu& gpu) {
  json profiles = json::array();
  for (const auto& p : gpu.profiles) {
    json j = {{"name", p.name}, {"compute", p.compute}, {"memory", p.memory}, {"starts", p.starts}, {"max", p.max}};
    if (p.inferred) j["inferred"] = true;
    profiles.push_back(std::move(j));
  }
  json j = {{"name", gpu.name}, {"deviceIDs", gpu.device_ids}, {"products", gpu.products},
            {"computeSlices", gpu.compute_slices}, {"memorySlices", gpu.memory_slices}};
  if (gpu.inferred) j["inferred"] = true;
  if (!gpu.note.empty()) j["note"] = gpu.note;
  j["profiles"] = std::move(profiles);
  return j;
}

namespace {

std::string describe_request(const std::vector<MigRequest>& request) {
  std::string out;
  for (const auto& r : request) {
    if (r.count <= 0) continue;
    if (!out.empty()) out += " + ";
    out += (r.count > 1 ? std::to_string(r.count) + " × " : "") + r.profile->name;
  }
  return out;
}

std::string starts_text(const MigProfile& p) {
  std::string s;
  for (size_t i = 0; i < p.starts.size(); ++i) {
    if (i) s += i + 1 == p.starts.size() ? " or " : ", ";
    s += std::to_string(p.starts[i]);
  }
  return s;
}

struct Search {
  const std::vector<const MigProfile*>& inst;
  std::vector<int> chosen;  // start index per instance
  uint64_t budget = 2'000'000;
  bool exhausted = false;

  bool place(size_t i, uint64_t used) {
    if (i == inst.size()) return true;
    if (budget == 0) {
      exhausted = true;
      return false;
    }
    --budget;
    const MigProfile& p = *inst[i];
    // Identical instances take non-decreasing start indices (symmetry).
    size_t first = (i > 0 && inst[i - 1] == inst[i]) ? static_cast<size_t>(chosen[i - 1]) : 0;
    for (size_t k = first; k < p.starts.size(); ++k) {
      uint64_t mask = ((uint64_t{1} << p.memory) - 1) << p.starts[k];
      if (used & mask) continue;
      chosen[i] = static_cast<int>(k);
      if (place(i + 1, used | mask)) return true;
      if (exhausted) return false;
    }
    return false;
  }
};

}  // namespace

MigFit mig_fit(const MigGpu& gpu, const std::vector<MigRequest>& request) {
  MigFit fit;
  const std::string what = describe_request(request);
  int64_t compute = 0, memory = 0, media = 0;
  for (const auto& r : request) {
    if (r.count <= 0 || !r.profile) continue;
    compute = sat_add(compute, sat_mul(r.count, r.profile->compute));
    memory = sat_add(memory, sat_mul(r.count, r.profile->memory));
    if (r.profile->media()) media = sat_add(media, r.count);
  }
  size_t items = 0;
  for (const auto& r : request) items += r.profile && r.count > 0 ? 1 : 0;
  auto plural = [&](const std::string& s) { return items > 1 ? s : s + "s"; };
  // Instances that can each start at one offset only and overlap there ("4g.40gb + 4g.40gb").
  {
    std::vector<const MigProfile*> fixed;
    for (const auto& r : request)
      if (r.profile && r.count > 0 && r.profile->starts.size() == 1) {
        if (r.count > 1) {
          fit.why = r.profile->name + " + " + r.profile->name + ": both need placement " + std::to_string(r.profile->starts[0]);
          return fit;
        }
        fixed.push_back(r.profile);
      }
    for (size_t a = 0; a < fixed.size(); ++a)
      for (size_t b = a + 1; b < fixed.size(); ++b) {
        const MigProfile& x = *fixed[a];
        const MigProfile& y = *fixed[b];
        int xs = x.starts[0], ys = y.starts[0];
        if (xs < ys + y.memory && ys < xs + x.memory) {
          fit.why = xs == ys ? x.name + " + " + y.name + ": both need placement " + std::to_string(xs)
                             : x.name + " (only at " + std::to_string(xs) + ") and " + y.name + " (only at " + std::to_string(ys) +
                                   ") overlap in memory";
          return fit;
        }
      }
  }
  if (compute > gpu.compute_slices) {
    fit.why = what + " " + plural("need") + " " + std::to_string(compute) + " of " + std::to_string(gpu.compute_slices) + " compute slices";
    return fit;
  }
  for (const auto& r : request)
    if (r.profile && r.count > r.profile->max) {
      fit.why = std::to_string(r.count) + " × " + r.profile->name + ": at most " + std::to_string(r.profile->max) + " fit on one " + gpu.name;
      return fit;
    }
  if (media > 1) {
    fit.why = what + ": " + std::to_string(media) + " instances with media engines (+me), at most one per GPU";
    return fit;
  }
  if (memory > gpu.memory_slices) {
    fit.why = what + " " + plural("need") + " " + std::to_string(memory) + " of " + std::to_string(gpu.memory_slices) + " memory slices";
    return fit;
  }
  // At most compute_slices (≤ 32) instances from here on.
  std::vector<const MigProfile*> inst;
  for (const auto& r : request)
    for (int64_t k = 0; r.profile && k < r.count; ++k) inst.push_back(r.profile);
  // Largest first: fewer branches.
  std::vector<size_t> order(inst.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (inst[a]->memory != inst[b]->memory) return inst[a]->memory > inst[b]->memory;
    if (inst[a]->starts.size() != inst[b]->starts.size()) return inst[a]->starts.size() < inst[b]->starts.size();
    return inst[a]->name < inst[b]->name;
  });
  std::vector<const MigProfile*> sorted;
  sorted.reserve(order.size());
  for (size_t i : order) sorted.push_back(inst[i]);
  Search s{sorted, std::vector<int>(sorted.size(), 0)};
  if (s.place(0, 0) || s.exhausted) {  // an exhausted search is no proof: say it fits
    fit.ok = true;
    fit.starts.assign(inst.size(), -1);
    if (!s.exhausted)
      for (size_t i = 0; i < order.size(); ++i) fit.starts[order[i]] = sorted[i]->starts[static_cast<size_t>(s.chosen[i])];
    return fit;
  }
  std::string detail;
  std::vector<const MigProfile*> seen;
  for (const MigProfile* p : inst) {
    if (std::find(seen.begin(), seen.end(), p) != seen.end()) continue;
    seen.push_back(p);
    if (!detail.empty()) detail += "; ";
    detail += p->name + " (" + std::to_string(p->memory) + " memory slice" + (p->memory == 1 ? "" : "s") + ") starts at " + starts_text(*p);
  }
  fit.why = what + ": no placement without overlapping memory slices (" + detail + ")";
  return fit;
}

}  // namespace gpuguard::engine
