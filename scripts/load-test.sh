#!/usr/bin/env bash
# Load test of `gpuplan serve` on loopback (issue 15) with oha (a real HTTP
# load generator: `cargo install oha`): POST /v1/plan with every bundled plan
# example (six inference, five training; one JSON body per line, in turn) at
# a fixed concurrency for REQUESTS requests, while a sampler records the
# server's RSS against the requests served (from /metrics). Prints
# throughput, latency percentiles, status counts, peak RSS and RSS after
# 1,000 and after all requests, both read with the server idle between
# two oha runs, each with the live heap bytes (the allocator's count, from
# /metrics: a leak grows it, allocator retention moves only RSS). Not part
# of CI (long on 2 cores); its numbers go in the closing notes. With STEP, the requests after the first
# 1,000 run in segments of STEP, with an idle RSS reading after each (a
# series that shows whether memory keeps growing).
#
#   scripts/load-test.sh [REQUESTS=10000] [CONNECTIONS=8] [QUERY=?verify=0] [STEP]
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-10000}
CONNECTIONS=${2:-8}
QUERY=${3-?verify=0}
STEP=${4:-0}
BIN=${GPUPLAN_BIN:-target/release/gpuplan}
OUT=${GPUPLAN_LOAD_OUT:-target/load-test}
mkdir -p "$OUT"
command -v oha >/dev/null || { echo "oha is required (cargo install oha)" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release --locked -p gpuplan

# The examples as one JSON document per line (oha -Z sends them in turn).
python3 - "$OUT/bodies.jsonl" examples/*.toml examples/training/*.toml <<'PY'
import json, sys, tomllib
with open(sys.argv[1], "w") as out:
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            out.write(json.dumps(tomllib.load(f)) + "\n")
print(f"{len(sys.argv) - 2} example workloads")
PY

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
"$BIN" serve --addr "127.0.0.1:$PORT" >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" "${SAMPLER:-}" 2>/dev/null || true' EXIT

# RSS sampler: every second, the /v1/plan requests served so far and the
# server's VmRSS/VmHWM (KiB).
python3 - "$URL" "$SERVER" "$OUT/rss.csv" <<'PY' &
import re, sys, time, urllib.request
url, pid, path = sys.argv[1], sys.argv[2], sys.argv[3]
for _ in range(300):
    try:
        urllib.request.urlopen(url + "/healthz", timeout=1).read(); break
    except Exception:
        time.sleep(0.1)
with open(path, "w") as out:
    out.write("seconds,plan_requests,rss_kib,hwm_kib,heap_live_kib\n")
    start = time.time()
    while True:
        try:
            status = open(f"/proc/{pid}/status").read()
            metrics = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        except Exception:
            break
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
        served = sum(int(float(m)) for m in re.findall(
            r'gpuplan_http_requests_total\{method="POST",route="/v1/plan",status="\d+"\} (\S+)', metrics))
        live = re.search(r"^gpuplan_heap_live_bytes (\d+)", metrics, re.M)
        live_kib = int(live.group(1)) // 1024 if live else -1
        out.write(f"{time.time() - start:.1f},{served},{rss},{hwm},{live_kib}\n"); out.flush()
        time.sleep(1)
PY
SAMPLER=$!
sleep 2

# Idle RSS (KiB): every request answered, the server waits for the next.
# First wait past tokio's 10 s keep-alive, so the blocking-pool threads that
# ran plans have exited and handed back their allocator heaps (otherwise the
# reading depends on how many happen to be parked); then read VmRSS every
# second until it holds steady (three readings within 1 %), at most 60 s.
idle_rss() {
  local prev=0 steady=0 rss=0
  sleep 12
  for _ in $(seq 60); do
    sleep 1
    rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$SERVER/status")
    if [ "$prev" -gt 0 ] && [ $(( (rss > prev ? rss - prev : prev - rss) * 100 )) -le "$prev" ]; then
      steady=$((steady + 1))
      [ "$steady" -ge 2 ] && break
    else
      steady=0
    fi
    prev=$rss
  done
  # Live heap bytes at the same moment (KiB; the allocator's own count).
  local live
  live=$(curl -s "$URL/metrics" | sed -n 's/^gpuplan_heap_live_bytes \([0-9]*\)$/\1/p')
  echo "$rss/$(( ${live:-0} / 1024 ))"
}

# Two phases, so RSS can be read with the server idle after the first 1,000
# requests and after all of them (the issue's "after 1k" and "after 10k").
FIRST=$(( REQUESTS < 1000 ? REQUESTS : 1000 ))
REST=$(( REQUESTS - FIRST ))
run_oha() { # COUNT OUTPUT
  oha -n "$1" -c "$CONNECTIONS" -m POST -T application/json -Z "$OUT/bodies.jsonl" \
    -t 120s --no-tui --output-format json -o "$2" "$URL/v1/plan$QUERY"
}
echo "== oha: $REQUESTS requests ($FIRST, then $REST), $CONNECTIONS connections, POST /v1/plan$QUERY"
run_oha "$FIRST" "$OUT/oha-first.json"
IDLE_FIRST=$(idle_rss)
SERIES="$FIRST:$IDLE_FIRST"
rm -f "$OUT"/oha-segment-*.json
if [ "$REST" -gt 0 ]; then
  if [ "$STEP" -gt 0 ]; then
    done_so_far=$FIRST
    while [ "$done_so_far" -lt "$REQUESTS" ]; do
      n=$(( REQUESTS - done_so_far < STEP ? REQUESTS - done_so_far : STEP ))
      run_oha "$n" "$OUT/oha-segment-$done_so_far.json"
      done_so_far=$(( done_so_far + n ))
      if [ "$done_so_far" -lt "$REQUESTS" ]; then
        SERIES="$SERIES $done_so_far:$(idle_rss)"
      fi
    done
    # The last segment stands for "the rest" in the summary below.
    cp "$OUT/oha-segment-$(( done_so_far - n )).json" "$OUT/oha.json"
  else
    run_oha "$REST" "$OUT/oha.json"
  fi
else
  cp "$OUT/oha-first.json" "$OUT/oha.json"
fi
IDLE_LAST=$(idle_rss)
SERIES="$SERIES $REQUESTS:$IDLE_LAST"
# Each idle reading is RSS/LIVE (KiB).
rss_of() { echo "${1%%/*}"; }
live_of() { echo "${1##*/}"; }
pct() { python3 -c "print(f'{($2 / $1 - 1) * 100:+.1f}')"; }
echo "idle RSS after $FIRST requests: $(( $(rss_of "$IDLE_FIRST") / 1024 )) MiB; after $REQUESTS: $(( $(rss_of "$IDLE_LAST") / 1024 )) MiB" \
  "($(pct "$(rss_of "$IDLE_FIRST")" "$(rss_of "$IDLE_LAST")") %)"
echo "idle live heap after $FIRST requests: $(live_of "$IDLE_FIRST") KiB; after $REQUESTS: $(live_of "$IDLE_LAST") KiB" \
  "($(pct "$(live_of "$IDLE_FIRST")" "$(live_of "$IDLE_LAST")") %)"
echo "idle series (requests: RSS MiB / live heap KiB): $(for p in $SERIES; do r=${p##*:}; printf '%s: %s / %s  ' "${p%%:*}" "$(( $(rss_of "$r") / 1024 ))" "$(live_of "$r")"; done)"
for f in "$OUT"/oha-segment-*.json; do
  [ -e "$f" ] || continue
  python3 - "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, p = r["summary"], r["latencyPercentiles"]
n = sum(r["statusCodeDistribution"].values())
print(f"  segment {sys.argv[1].rsplit('-', 1)[1][:-5]}+{n}: {s['requestsPerSec']:.2f} req/s, "
      f"p50 {p['p50'] * 1e3:.0f} ms, p99 {p['p99'] * 1e3:.0f} ms, status {r['statusCodeDistribution']}")
PY
done
kill "$SAMPLER" 2>/dev/null || true
python3 - "$OUT/oha.json" "$OUT/rss.csv" "$OUT/oha-first.json" <<'PY'
import csv, json, sys
first = json.load(open(sys.argv[3]))
print(f"first {sum(first['statusCodeDistribution'].values())} requests: "
      f"{first['summary']['requestsPerSec']:.2f} req/s, status " +
      ", ".join(f"{k}: {v}" for k, v in sorted(first["statusCodeDistribution"].items())))
r = json.load(open(sys.argv[1]))
s, p = r["summary"], r["latencyPercentiles"]
print("the rest:")
print(f"requests: {sum(r['statusCodeDistribution'].values())} in {s['total']:.1f} s = {s['requestsPerSec']:.2f} req/s; "
      f"success rate {s['successRate'] * 100:.2f} %")
print("latency ms: " + "  ".join(f"{k} {p[k] * 1e3:.0f}" for k in ("p50", "p90", "p99", "p99.9")) +
      f"  max {s['slowest'] * 1e3:.0f}  mean {s['average'] * 1e3:.0f}")
print("status: " + ", ".join(f"{k}: {v}" for k, v in sorted(r["statusCodeDistribution"].items())) +
      (f"; errors: {r['errorDistribution']}" if r.get("errorDistribution") else ""))
rows = [{k: float(v) for k, v in row.items()} for row in csv.DictReader(open(sys.argv[2]))]
import statistics
# RSS under load moves with the plans in flight: compare medians over a
# window of requests rather than single samples.
def window(lo, hi):
    return column("rss_kib", lo, hi)
def column(name, lo, hi):
    v = [x[name] for x in rows if lo <= x["plan_requests"] < hi and x[name] >= 0]
    return statistics.median(v) / 1024 if v else float("nan")
n = int(rows[-1]["plan_requests"])
early, late = window(1000, 1500), window(n - 500, n)
print(f"RSS median over requests 1000-1500: {early:.1f} MiB; over {n - 500}-{n}: {late:.1f} MiB "
      f"({(late / early - 1) * 100:+.1f} %)")
print(f"idle RSS after the run: {rows[-1]['rss_kib'] / 1024:.1f} MiB; peak (VmHWM): {rows[-1]['hwm_kib'] / 1024:.1f} MiB")
for k in range(0, n, 1000):
    print(f"  requests {k}-{k + 1000}: median RSS {window(k, k + 1000):.1f} MiB, "
          f"live heap {column('heap_live_kib', k, k + 1000):.1f} MiB")
PY
