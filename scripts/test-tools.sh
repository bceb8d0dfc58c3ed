#!/usr/bin/env bash
# The real third-party tools some tests drive that Debian does not package, pinned, installed
# into build/tools (only when missing): the SARIF validator. Needs the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=build/tools
mkdir -p "$tools"

if ! command -v npm >/dev/null 2>&1; then
  BOOTSTRAP_EXTRA="nodejs npm" scripts/bootstrap.sh
fi

npm_install() {  # package@version, the file that shows it is there
  local spec=$1 marker=$2
  [[ -e "$tools/$marker" ]] && return 0
  echo "test-tools: installing $spec" >&2
  local attempt
  for attempt in 1 2 3; do
    if (cd "$tools" && npm install --no-audit --no-fund --loglevel=error "$spec" >/dev/null); then return 0; fi
    sleep $((attempt * 5))
  done
  echo "test-tools: cannot install $spec" >&2
  return 1
}

# SARIF multitool 5.7.0 (design.md §4). npm skips its install script, so make the binary executable.
npm_install @microsoft/sarif-multitool@5.7.0 node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool
chmod u+x "$tools/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
