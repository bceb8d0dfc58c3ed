#!/usr/bin/env bash
# Install the Debian packages gpuguard builds with, and only those that are missing.
# Runs `apt-get update` first only when something must be installed (a fresh
# machine may have no package lists). Does nothing when everything is present.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  libyaml-dev          # YAML parsing (event API)
  libyaml-cpp-dev      # YAML writing (emitter)
  nlohmann-json3-dev   # JSON model, RFC 6902 patch/diff
  libcpp-httplib-dev   # HTTPS client for the Kubernetes API (serve --watch, audit)
  libboost1.81-dev     # Boost.Beast and Asio: the webhook's HTTPS server (header-only)
  libssl-dev           # TLS, base64
  libre2-dev           # exclusion patterns
  libcli11-dev         # command line
  doctest-dev          # unit tests
  libvalijson-dev      # JSON Schema validation
  libjemalloc-dev      # the allocator (a quarter faster than glibc's for the engine's small nodes)
)
# `--package`: also dpkg-shlibdeps and file, which CPack's Debian generator runs for the
# package's Depends (`make package`).
if [[ "${1:-}" == "--package" ]]; then
  packages+=(dpkg-dev file)
fi
# `--test`: also the real tools the tests drive (a TLS client, a certificate authority, an
# independent RFC 6902 implementation, pre-commit, a TLS scanner) and the package's tools (the
# `package` test builds it).
if [[ "${1:-}" == "--test" ]]; then
  packages+=(curl openssl python3 python3-jsonpatch pre-commit git sslscan dpkg-dev file)
fi
# Extra packages a caller asks for: BOOTSTRAP_EXTRA="wrk sslscan"
if [[ -n "${BOOTSTRAP_EXTRA:-}" ]]; then
  read -r -a extra <<<"$BOOTSTRAP_EXTRA"
  packages+=("${extra[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
