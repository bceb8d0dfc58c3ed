#pragma once
// What the DRA rules share: the API server's field paths and name formats, and the shape of a
// ResourceClaim spec in each resource.k8s.io version.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/object.h"

namespace gpuguard::rules::dra {

// The API server's field path of a JSON pointer: "/spec/devices/requests/0/exactly" ->
// "spec.devices.requests[0].exactly" (field.Path's String()).
[[nodiscard]] std::string field_path(std::string_view pointer);

// validation.IsDNS1123Subdomain: at most 253 characters, lower-case labels of [a-z0-9-] separated
// by dots, each starting and ending with a letter or digit.
[[nodiscard]] bool is_dns1123_subdomain(std::string_view s);
// Its message (k8s.io/apimachinery pkg/util/validation/validation.go dns1123SubdomainErrorMsg).
inline constexpr std::string_view kDns1123SubdomainError =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// How a resource.k8s.io version writes a request: v1 and v1beta2 put a request's class, selectors,
// mode and count under `exactly`; v1beta1 (and v1alpha3) on the request itself. nullopt: a version
// the rules do not read.
enum class ClaimShape : uint8_t { exactly, flat };
[[nodiscard]] std::optional<ClaimShape> claim_shape(const engine::Object& obj);

// A Go `%q`-like quoting of a value for a message, cut at 60 bytes.
[[nodiscard]] std::string quoted(std::string_view s);

}  // namespace gpuguard::rules::dra
