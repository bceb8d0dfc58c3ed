#!/usr/bin/env bash
# Webhook latency and throughput against its floor (issue 9): `gpuguard serve` with every rule and
# a 10,000-object cluster state, loaded by wrk over TLS with keep-alive at 1, 4 and 32
# connections, posting a GPU Pod AdmissionReview to /validate and /mutate; the floor is
# bench/floor_server (cpp-httplib TLS, nlohmann parse, a fixed allow). Then the server's CPU per
# request for the floor, gpuguard, and gpuguard with every rule off. Loopback only; every load is
# bounded by DURATION seconds.
#
#   bench/webhook.sh BUILD_DIR          (DURATION=5, STATE=10000)
set -euo pipefail
build=${1:?usage: bench/webhook.sh BUILD_DIR}
duration=${DURATION:-5}
state_n=${STATE:-10000}
command -v wrk >/dev/null || { echo "webhook bench: wrk is missing (apt-get install wrk)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# A certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# The cluster state, and the request: a GPU Pod of a Volcano gang in one of its namespaces.
"$build/bench/bench_gen" "$state_n" "$work/state"
cat >"$work/review.json" <<'JSON'
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"705ab4f5-6393-11e8-b7cc-42010a800002","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"requestKind":{"group":"","version":"v1","kind":"Pod"},"requestResource":{"group":"","version":"v1","resource":"pods"},"name":"train-0","namespace":"team-1","operation":"CREATE","userInfo":{"username":"alice","groups":["system:authenticated"]},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train-0","namespace":"team-1","labels":{"app":"train","workload-type":"training"},"annotations":{"scheduling.k8s.io/group-name":"pg-1"}},"spec":{"schedulerName":"volcano","containers":[{"name":"train","image":"nvcr.io/nvidia/pytorch:24.06-py3","command":["torchrun","--nproc_per_node=8","train.py"],"resources":{"requests":{"nvidia.com/gpu":"8","cpu":"64","memory":"512Gi"},"limits":{"nvidia.com/gpu":"8","cpu":"64","memory":"512Gi"}}},{"name":"logs","image":"fluent/fluent-bit:3.0","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}},"oldObject":null,"dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}
JSON
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$work/review.json", "rb")
wrk.body = f:read("*a")
f:close()
LUA

wait_for() {  # file, seconds
  for ((i = 0; i < $2 * 10; i++)); do [[ -s $1 ]] && return 0; sleep 0.1; done
  return 1
}

# start_serve NAME [ARGS...]: gpuguard serve on port 0 (its port is in its "listening" log line),
# ready; sets the globals port and serve_pid.
start_serve() {
  local log="$work/$1.log"
  shift
  "$build/cli/gpuguard" serve --listen 127.0.0.1:0 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
    --state "$work/state" --log-level info "$@" >"$log" 2>&1 &
  serve_pid=$!
  pids+=("$serve_pid")
  for ((i = 0; i < 600; i++)); do grep -q '"listening"' "$log" 2>/dev/null && break; sleep 0.1; done
  port=$(grep -o "\"port\":[0-9]*" "$log" | head -1 | cut -d: -f2 || true)
  [[ -n "$port" ]] || { echo "webhook bench: gpuguard serve did not start" >&2; cat "$log" >&2; exit 1; }
  for ((i = 0; i < 600; i++)); do
    curl -sfk "https://127.0.0.1:$port/readyz" >/dev/null && break
    sleep 0.1
  done
}
start_serve serve
"$build/bench/bench_floor_server" "$work/cert.pem" "$work/key.pem" "$work/floor.port" &
pids+=($!)
wait_for "$work/floor.port" 10
floor_port=$(cat "$work/floor.port")

# run URL CONNECTIONS: "rps p50_ms p99_ms" from wrk --latency.
run() {
  local out
  out=$(wrk -t "$(($2 < 2 ? 1 : 2))" -c "$2" -d "${duration}s" --latency -s "$work/post.lua" "$1")
  local rps p50 p99
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  echo "$rps $(to_ms "$p50") $(to_ms "$p99")"
}
to_ms() {  # wrk prints 512.00us, 1.20ms, 2.01s
  awk -v v="$1" 'BEGIN { u = v; sub(/[0-9.]+/, "", u); n = v + 0;
    if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000; printf "%.3f", n }'
}

printf '%-10s %5s %-8s %10s %9s %9s %8s %8s %8s\n' path conns server req/s p50_ms p99_ms "rps×fl" "p50×fl" "p99×fl"
for path in validate mutate; do
  for c in 1 4 32; do
    read -r frps fp50 fp99 < <(run "https://127.0.0.1:$floor_port/$path" "$c")
    read -r grps gp50 gp99 < <(run "https://127.0.0.1:$port/$path" "$c")
    printf '%-10s %5s %-8s %10.0f %9.3f %9.3f %8s %8s %8s\n' "/$path" "$c" floor "$frps" "$fp50" "$fp99" 1.00 1.00 1.00
    printf '%-10s %5s %-8s %10.0f %9.3f %9.3f %8.2f %8.2f %8.2f\n' "/$path" "$c" gpuguard "$grps" "$gp50" "$gp99" \
      "$(awk -v a="$grps" -v b="$frps" 'BEGIN{print a/b}')" "$(awk -v a="$gp50" -v b="$fp50" 'BEGIN{print a/b}')" \
      "$(awk -v a="$gp99" -v b="$fp99" 'BEGIN{print a/b}')"
  done
done

# In-process evaluation, from the server's own histogram: the share of requests done in ≤ 100 µs.
metrics=$(curl -sk "https://127.0.0.1:$port/metrics")
awk '
  /^gpuguard_admission_duration_seconds_bucket/ && match($0, /le="[^"]*"/) {
    le_value = substr($0, RSTART + 4, RLENGTH - 5)  # 1e-04: the metrics print the shortest form
    if (le_value != "+Inf" && le_value + 0 == 0.0001) { split($0, a, " "); le += a[2] }
  }
  /^gpuguard_admission_duration_seconds_count/ { split($0, a, " "); n += a[2] }
  END { if (n > 0) printf "\nin-process evaluation: %.2f %% of %d requests took ≤ 100 µs (target: p99 ≤ 100 µs, i.e. ≥ 99 %%)\n", 100 * le / n, n }
' <<<"$metrics"
rss=$(awk '/^VmHWM/ {print $2}' "/proc/${pids[0]}/status")
echo "gpuguard serve peak RSS with $state_n objects of state: $((rss / 1024)) MiB"
"$build/bench/bench_admission" "$work/state" "$work/review.json" 20000

# Where the time goes: the server's CPU (utime + stime) per request wrk counted, /validate at 4
# connections, for the floor, gpuguard, and gpuguard with every rule switched off in its config
# (the same TLS, HTTP, parsing and answer, without the rules' evaluation).
cpu_per_request() {  # PID URL: µs of the server's CPU per request
  local before after out n
  before=$(awk '{print $14 + $15}' "/proc/$1/stat")
  out=$(wrk -t 2 -c 4 -d "${duration}s" -s "$work/post.lua" "$2")
  after=$(awk '{print $14 + $15}' "/proc/$1/stat")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  awk -v t=$((after - before)) -v n="$n" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }'
}
gpuguard_pid=${pids[0]} gpuguard_port=$port floor_pid=${pids[1]}
{ echo "rules:"; "$build/cli/gpuguard" rules | awk '{print "  " $1 ": false"}'; } >"$work/no-rules.yaml"
start_serve no-rules --config "$work/no-rules.yaml"
cpu_floor=$(cpu_per_request "$floor_pid" "https://127.0.0.1:$floor_port/validate")
cpu_all=$(cpu_per_request "$gpuguard_pid" "https://127.0.0.1:$gpuguard_port/validate")
cpu_none=$(cpu_per_request "$serve_pid" "https://127.0.0.1:$port/validate")
echo
echo "server CPU per /validate request at 4 connections: floor $cpu_floor µs, gpuguard $cpu_all µs," \
  "gpuguard with every rule off $cpu_none µs"
echo "targets: req/s ≥ 0.8 × floor and p99 ≤ 1.5 × floor at each connection count"
