#pragma once
// Standard base64 (RFC 4648, with padding) via OpenSSL: the webhook's JSON Patch, YAML `!!binary`
// and kubeconfig `*-data` fields.

#include <optional>
#include <string>
#include <string_view>

namespace gpuguard::engine {

[[nodiscard]] std::string base64_encode(std::string_view data);

// Go's base64.StdEncoding.DecodeString: padding required, no line breaks; nullopt when invalid.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view in);

}  // namespace gpuguard::engine
