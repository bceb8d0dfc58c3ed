#pragma once
// MIG GPU models, their GPU-instance profiles, and the placement solver (facts/nvidia.md §1).
//
// A GPU model lists its PCI device IDs (the form mig-parted's `device-filter` uses), the product
// strings GFD writes into `nvidia.com/gpu.product`, and its profiles, each with the compute and
// memory slices it takes, the memory-slice offsets it may start at, and how many fit on one GPU.
// The built-in models come from rules/data/mig-gpus.yaml; `.gpuguard.yaml` may add more under
// `mig.gpus` in the same format (parse_mig_gpus reads both).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/json.h"

namespace gpuguard::engine {

struct MigProfile {
  std::string name;          // "1g.10gb", "1g.5gb+me", "2g.48gb-me"
  int compute = 0;           // compute (SM) slices
  int memory = 0;            // memory slices
  std::vector<int> starts;   // allowed start offsets, in memory slices
  int max = 0;               // instances of this profile per GPU
  bool inferred = false;     // geometry or availability is an inference (the facts mark it DERIVED/UNVERIFIED)
  [[nodiscard]] bool media() const;  // holds the media engines (`+me`, `+me.all`): at most one per GPU
};

struct MigGpu {
  std::string name;                      // "A100-SXM4-40GB"
  std::vector<std::string> device_ids;   // "0x20B010DE" (upper-case hex digits)
  std::vector<std::string> products;     // GFD gpu.product values
  int compute_slices = 7;
  int memory_slices = 8;
  std::vector<MigProfile> profiles;
  bool inferred = false;                 // the whole entry rests on an inference
  std::string note;                      // where the data comes from, what is inferred
  std::string origin;                    // "built-in" or the config file

  [[nodiscard]] const MigProfile* profile(std::string_view name) const;
  [[nodiscard]] bool has_device_id(std::string_view id) const;  // `id` normalised by normalize_device_id
};

// Reads a list of GPU models (rules/data/mig-gpus.yaml, or `mig.gpus` of the config). Problems
// are returned as (JSON pointer relative to `list`, message); models with problems are left out.
[[nodiscard]] std::vector<MigGpu> parse_mig_gpus(const json& list, std::vector<std::pair<std::string, std::string>>& problems);

// The model in the format parse_mig_gpus reads (for `lint --print-config`).
[[nodiscard]] json to_json(const MigGpu& gpu);

// "0x20b010de" → "0x20B010DE"; the device part of "0x234210DE:0x16B510DE"; empty when `s` is not
// a `0x` + 8 hex digits device ID (with an optional `:0x` + 8 hex digits subsystem ID).
[[nodiscard]] std::string normalize_device_id(std::string_view s);

// Whether a profile name follows the grammar `[<C>c.]<G>g.<GB>gb[+attr[,attr…] | -attr]`
// (go-nvlib `mig_profile.go`); on failure, why.
[[nodiscard]] bool valid_profile_name(std::string_view name, std::string* why = nullptr);

// The placement solver. Given a GPU model and a multiset of its profiles, decides whether the
// instances fit on one GPU: compute slices within the GPU's, each profile within its maximum, at
// most one media-engine instance, and non-overlapping memory ranges at allowed offsets. Bounded:
// counts are summed with saturation and a request for more instances than compute slices fails
// before any search; the search itself covers at most `compute_slices` instances.
struct MigRequest {
  const MigProfile* profile = nullptr;
  int64_t count = 0;
};
struct MigFit {
  bool ok = false;
  std::string why;                // when not: "3 × 3g.40gb needs 9 of 7 compute slices"
  std::vector<int> starts;        // when ok: a start offset per instance, in request order
};
[[nodiscard]] MigFit mig_fit(const MigGpu& gpu, const std::vector<MigRequest>& request);

}  // namespace gpuguard::engine
