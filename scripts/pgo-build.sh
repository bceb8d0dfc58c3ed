#!/usr/bin/env bash
# The release build with profile-guided optimisation (`make release`, the Docker image, `make
# bench`): build gpuguard instrumented in OUT-instrumented, run it over a training workload, and
# build OUT with the profiles it left in OUT-profiles (CMakeLists.txt, GPUGUARD_PGO). The workload is the repository's
# own inputs, not the benchmarks' sets: every rule's fixtures (tests/rules) linted as loose files
# and as a complete cluster, in each output format and with two threads; the examples linted and
# mutated; and the webhook's handler (bench_admission) over a GPU Pod's AdmissionReview, validate
# and mutate, against the examples as cluster state. On the 2-core development machine the
# profiles made lint 7 % and the in-process admission handler 13 % faster (bench/HISTORY.md).
#
#   scripts/pgo-build.sh [OUT [CMAKE_ARGS...]]      (default OUT: build/pgo; JOBS=nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/pgo}
shift || true
gen=$out-instrumented
data=$(mkdir -p "$out-profiles" && cd "$out-profiles" && pwd)
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

cmake -S . -B "$gen" -DCMAKE_BUILD_TYPE=Release -DGPUGUARD_TESTS=OFF "$@" -DGPUGUARD_BENCH=ON \
  -DGPUGUARD_PGO=generate -DGPUGUARD_PGO_DIR="$data" >/dev/null
cmake --build "$gen" -j"$jobs" --target gpuguard bench_admission -- --no-print-directory

# Training. Exit codes 0–2 are answers (clean, findings, input errors); anything else — a crash —
# stops the build.
find "$data" -name '*.gcda' -delete
train() {
  local rc=0
  "$@" >/dev/null 2>&1 || rc=$?
  if ((rc > 2)); then
    echo "pgo-build: training run failed (exit $rc): $*" >&2
    exit 1
  fi
}
g=$gen/cli/gpuguard
train "$g" lint --no-config tests/rules
train "$g" lint --no-config --complete --format json --jobs 2 tests/rules
for format in text json sarif junit github policyreport; do train "$g" lint --no-config --format "$format" tests/rules; done
train "$g" lint --config examples/.gpuguard.yaml --complete examples
train "$g" mutate --config examples/.gpuguard.yaml --state examples --templates --patch examples
train "$gen/bench/bench_admission" examples bench/pgo-review.json 2000
[[ -n $(find "$data" -name '*.gcda' -print -quit) ]] || { echo "pgo-build: the training left no profiles in $data" >&2; exit 1; }

cmake -S . -B "$out" -DCMAKE_BUILD_TYPE=Release -DGPUGUARD_TESTS=OFF "$@" -DGPUGUARD_PGO=use -DGPUGUARD_PGO_DIR="$data" >/dev/null
cmake --build "$out" -j"$jobs" -- --no-print-directory
