#!/usr/bin/env bash
# Lint throughput against its floor (issue 9): `gpuguard lint --complete` with every rule over a
# generated GPU-cluster manifest set of N objects, against bench/floor, which only parses the same
# files with libyaml's event API. Each figure is the best of REPEAT runs; the ratios compare runs
# made here, now, on this machine (an absolute time on a shared machine is not a result). Then
# start-up: both on one small file, best of 30 runs. Last, how much two threads can gain on this
# machine now: two floors at once against one alone.
#
#   bench/lint.sh BUILD_DIR [N...]        (default N: 1000 10000 100000; REPEAT=3)
set -euo pipefail
build=${1:?usage: bench/lint.sh BUILD_DIR [N...]}
shift
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1000 10000 100000)
repeat=${REPEAT:-3}
gpuguard=$build/cli/gpuguard
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# best_of CMD...: prints "seconds mib" of the fastest of $repeat runs (peak RSS of that run).
best_of() {
  local best="" line
  for ((i = 0; i < repeat; i++)); do
    line=$({ "$build/bench/bench_measure" "$@" 2>&1 >/dev/null || true; } | grep '^measure:' | tail -1 | cut -d' ' -f2-)
    if [[ -z "$best" ]] || awk -v a="${line%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then best=$line; fi
  done
  echo "$best"
}

printf '%-8s %-16s %9s %12s %9s %9s\n' objects run seconds objects/s "MiB" "× floor"
declare -A t10 t100
for n in "${sizes[@]}"; do
  dir=$work/set-$n
  "$build/bench/bench_gen" "$n" "$dir"
  read -r fs fm < <(best_of "$build/bench/bench_floor" "$dir")
  printf '%-8s %-16s %9.3f %12.0f %9.1f %9s\n' "$n" "floor (libyaml)" "$fs" "$(awk -v n="$n" -v s="$fs" 'BEGIN{print n/s}')" "$fm" "1.00"
  for jobs in 1 2; do
    read -r s m < <(best_of "$gpuguard" lint --no-config --complete --format json --jobs "$jobs" "$dir")
    printf '%-8s %-16s %9.3f %12.0f %9.1f %9.2f\n' "$n" "lint --jobs $jobs" "$s" \
      "$(awk -v n="$n" -v s="$s" 'BEGIN{print n/s}')" "$m" "$(awk -v a="$s" -v b="$fs" 'BEGIN{print a/b}')"
    [[ $n == 10000 ]] && t10[$jobs]=$s
    [[ $n == 100000 ]] && t100[$jobs]=$s
  done
done
# Start-up, which is most of a pre-commit run over a few files: one small file, best of 30 runs.
small=$(dirname "$0")/../examples/seed/9.3-topology-pod.yaml
read -r sf _ < <(repeat=30 best_of "$build/bench/bench_floor" "$small")
read -r sl _ < <(repeat=30 best_of "$gpuguard" lint --no-config "$small")
echo
echo "start-up, one small file (best of 30): floor $(awk -v s="$sf" 'BEGIN{printf "%.1f", s*1000}') ms," \
  "lint $(awk -v s="$sl" 'BEGIN{printf "%.1f", s*1000}') ms ($(awk -v a="$sl" -v b="$sf" 'BEGIN{printf "%.2f", a/b}') × floor)"

# What two threads can gain here: two floors at once against one alone (on a machine with two free
# cores both take the time of one; a shared VM's second core may be slower or busy).
pair_dir=$work/set-${sizes[0]}
read -r one _ < <(best_of "$build/bench/bench_floor" "$pair_dir")
best_pair=""
for ((i = 0; i < repeat; i++)); do
  start=$(date +%s.%N)
  "$build/bench/bench_floor" "$pair_dir" >/dev/null & "$build/bench/bench_floor" "$pair_dir" >/dev/null; wait
  pair=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
  if [[ -z "$best_pair" ]] || awk -v a="$pair" -v b="$best_pair" 'BEGIN { exit !(a < b) }'; then best_pair=$pair; fi
done
echo
echo "two floors at once: $(awk -v p="$best_pair" 'BEGIN{printf "%.3f", p}') s, one alone $(awk -v o="$one" 'BEGIN{printf "%.3f", o}') s:" \
  "this machine gives two threads $(awk -v p="$best_pair" -v o="$one" 'BEGIN{printf "%.2f", 2*o/p}') × one thread's throughput (2.00 on two free cores)"
if [[ -n "${t10[1]:-}" && -n "${t100[1]:-}" ]]; then
  echo
  echo "growth 10,000 → 100,000 objects (--jobs 1): $(awk -v a="${t100[1]}" -v b="${t10[1]}" 'BEGIN{printf "%.1f", a/b}') × (target ≤ 11 ×)"
fi
echo "targets: --jobs 1 ≤ 1.5 × floor; --jobs 2 ≤ 0.9 × floor; peak RSS ≤ 400 MiB at 100,000 objects"
