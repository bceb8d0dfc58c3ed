#!/usr/bin/env bash
# Runs every libFuzzer target for SECONDS each, seeded from the repository's fixtures and the
# shared corpus of real manifests (when it is beside the checkout). Exits non-zero on the first
# crash, leak or timeout, with the input kept in BUILD/artifacts/.
#
#   scripts/fuzz.sh BUILD_DIR SECONDS
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/fuzz.sh BUILD_DIR SECONDS}
seconds=${2:-60}
shared=${GPUGUARD_SHARED:-../shared}
mkdir -p "$build/artifacts"

seeds() {  # target → seed folders (made once, from files of the repository and ../shared)
  local t=$1 dir=$build/seeds/$1
  if [[ ! -d $dir ]]; then
    mkdir -p "$dir"
    case $t in
      yaml|lint)
        find tests/rules examples -name '*.yaml' -exec cp --backup=numbered -t "$dir" {} + 2>/dev/null || true
        [[ -d $shared/corpus ]] && find "$shared/corpus" -name '*.yaml' -size -64k -exec cp --backup=numbered -t "$dir" {} + 2>/dev/null || true ;;
      json|admission)
        [[ -d $shared/corpus/admission ]] && find "$shared/corpus/admission" -name '*.json' -exec cp --backup=numbered -t "$dir" {} + || true
        [[ -d $shared/corpus ]] && find "$shared/corpus" -name '*.json' -size -64k -exec cp --backup=numbered -t "$dir" {} + 2>/dev/null || true ;;
      config)
        find examples tests -name '.gpuguard*.yaml' -exec cp --backup=numbered -t "$dir" {} + 2>/dev/null || true
        printf 'rules:\n  priority-class-count:\n    params: {min: 2, max: 4}\nexclude:\n  - namespace: kube-.*\n' >"$dir/basic.yaml" ;;
      quantity)
        for q in 1 500m 1.5Gi 1e3 0.5 32 -1 1Ki 2E 0.000000001 +7n 1.0e-3; do printf '%s' "$q" >"$dir/$q"; done ;;
      mig)  # a built-in GPU + (profile, count) pairs; and the catalog itself (odd first byte + JSON)
        for g in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do printf "\\x00\\x$(printf %02x $g)\\x00\\x01\\x01\\x02\\x02\\x01" >"$dir/gpu$g"; done
        python3 -c 'import json,sys,yaml; d=yaml.safe_load(open("rules/data/mig-gpus.yaml")); d=d.get("gpus",d) if isinstance(d,dict) else d; sys.stdout.write("\x01"+json.dumps(d))' >"$dir/catalog.json" 2>/dev/null || rm -f "$dir/catalog.json" ;;
    esac
    [[ -d tests/fuzz/regressions/$t ]] && cp tests/fuzz/regressions/"$t"/* "$dir"/ 2>/dev/null || true
  fi
  echo "$dir"
}

# FUZZ_JOBS targets at a time (default: one per CPU), each for SECONDS of wall time.
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
targets=(yaml lint json admission config quantity mig)
for t in "${targets[@]}"; do seeds "$t" >/dev/null; done
declare -A pid_of
failed=()
finish() {  # waits for one target and prints the end of its log
  local t=$1
  if ! wait "${pid_of[$t]}"; then failed+=("$t"); fi
  echo "== fuzz_$t: ${seconds} s" >&2
  tail -n 12 "$build/fuzz_$t.log" >&2
}
running=()
for t in "${targets[@]}"; do
  if [[ ${#running[@]} -ge $jobs ]]; then
    finish "${running[0]}"
    running=("${running[@]:1}")
  fi
  corpus=$build/corpus/$t
  mkdir -p "$corpus"
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" "$corpus" "$(seeds "$t")" >"$build/fuzz_$t.log" 2>&1 &
  pid_of[$t]=$!
  running+=("$t")
done
for t in "${running[@]}"; do finish "$t"; done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: crash, leak or timeout in: ${failed[*]} (inputs in $build/artifacts/)" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds} s each, no crash" >&2
