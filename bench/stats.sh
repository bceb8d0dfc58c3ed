# shellcheck shell=bash
# Order statistics for the benchmarks (sourced by bench/lint.sh and bench/webhook.sh): the median
# of a run's rounds and a distribution-free confidence interval for it. The callers set LC_ALL=C
# (awk's decimal point).

# median VALUES...: the middle value (the mean of the two middle ones for an even count).
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# median_ci N: "K COVERAGE" for a distribution-free confidence interval of the median of N values,
# [the K-th smallest, the K-th largest]: the largest K whose two tails, each P(Binomial(N, 1/2) < K),
# leave at least 95 % (with fewer than 6 values none does: the whole range, 1 - 2/2^N).
median_ci() {
  awk -v n="$1" 'BEGIN {
    k = 1; c = 1; tail = 1 / 2 ^ n  # c = C(n, k - 1), tail = P(X <= k - 1): the interval misses on each side
    for (;;) {
      next_c = c * (n - k + 1) / k
      next_tail = tail + next_c / 2 ^ n
      if (k + 1 > (n + 1) / 2 || next_tail > 0.025) break
      k++; c = next_c; tail = next_tail
    }
    printf "%d %.1f\n", k, 100 * (1 - 2 * tail)
  }'
}

# ci VALUES...: "lo-hi", the interval median_ci gives for them.
ci() {
  local k
  read -r k _ < <(median_ci $#)
  printf '%s\n' "$@" | sort -g | awk -v k="$k" '{ v[NR] = $1 } END { printf "%g-%g", v[k], v[NR - k + 1] }'
}

# ratio A B: A / B to three decimals.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

# at_most VALUE LIMIT, at_least VALUE LIMIT: whether a median meets its target.
at_most() { awk -v v="$1" -v t="$2" 'BEGIN { exit !(v <= t) }'; }
at_least() { awk -v v="$1" -v t="$2" 'BEGIN { exit !(v >= t) }'; }

# The run's verdict: judge each median against its target, then print one line for all of them.
targets=0
missed=()
# judge LABEL VALUE most|least LIMIT: counts a target; a miss is recorded as "LABEL VALUE" and
# returns 1 (so a caller can mark its row).
judge() {
  targets=$((targets + 1))
  "at_$3" "$2" "$4" && return 0
  missed+=("$1 $2")
  return 1
}
# verdict DESCRIPTION: "verdict: all N targets met (DESCRIPTION)", or which were missed.
verdict() {
  if ((targets == 0)); then
    echo "verdict: nothing judged ($1)"
  elif ((${#missed[@]} == 0)); then
    echo "verdict: all $targets targets met ($1)"
  else
    echo "verdict: $((targets - ${#missed[@]})) of $targets targets met; missed: $(printf '%s; ' "${missed[@]}" | sed 's/; $//')"
  fi
}
