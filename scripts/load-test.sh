#!/usr/bin/env bash
# Load test of `gpuplan serve` on loopback (issue 15), with wrk: POST
# /v1/plan with every bundled plan example in turn (inference and training,
# as TOML) at a fixed concurrency until REQUESTS answers, while a sampler
# records the server's RSS against the request count (from /metrics).
# Prints throughput, p50/p90/p99 latency, the status counts, peak RSS and
# RSS after 1,000 and after all requests. Not part of CI (it takes long on 2
# cores); its numbers go in the closing notes.
#
#   scripts/load-test.sh [REQUESTS=10000] [CONNECTIONS=8] [QUERY=?verify=0]
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${1:-10000}
CONNECTIONS=${2:-8}
QUERY=${3-?verify=0}
THREADS=2
BIN=${GPUPLAN_BIN:-target/release/gpuplan}
OUT=${GPUPLAN_LOAD_OUT:-target/load-test}
mkdir -p "$OUT"
command -v wrk >/dev/null || { echo "wrk is required (apt-get install wrk)" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release --locked -p gpuplan

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
"$BIN" serve --addr "127.0.0.1:$PORT" >"$OUT/serve.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" "${SAMPLER:-}" 2>/dev/null || true' EXIT

# RSS sampler: every second, the requests served so far and VmRSS/VmHWM (KiB).
python3 - "$URL" "$SERVER" "$OUT/rss.csv" <<'PY' &
import re, sys, time, urllib.request
url, pid, path = sys.argv[1], sys.argv[2], sys.argv[3]
for _ in range(300):
    try:
        urllib.request.urlopen(url + "/healthz", timeout=1).read(); break
    except Exception:
        time.sleep(0.1)
with open(path, "w") as out:
    out.write("seconds,plan_requests,rss_kib,hwm_kib\n")
    start = time.time()
    while True:
        try:
            status = open(f"/proc/{pid}/status").read()
            metrics = urllib.request.urlopen(url + "/metrics", timeout=5).read().decode()
        except Exception:
            break
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        hwm = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
        served = sum(int(float(m)) for m in re.findall(
            r'gpuplan_http_requests_total\{method="POST",route="/v1/plan",status="\d+"\} (\S+)', metrics))
        out.write(f"{time.time() - start:.1f},{served},{rss},{hwm}\n"); out.flush()
        time.sleep(1)
PY
SAMPLER=$!
sleep 2

EXAMPLES=$(ls examples/*.toml examples/training/*.toml | tr '\n' ' ')
echo "== wrk: $REQUESTS requests, $CONNECTIONS connections, POST /v1/plan$QUERY over: $EXAMPLES"
GPUPLAN_LOAD_EXAMPLES="$EXAMPLES" GPUPLAN_LOAD_QUERY="$QUERY" \
GPUPLAN_LOAD_PER_THREAD=$(( (REQUESTS + THREADS - 1) / THREADS )) \
  wrk -t"$THREADS" -c"$CONNECTIONS" -d4h --timeout 60s --latency \
  -s scripts/load/plan-examples.lua "$URL" | tee "$OUT/wrk.txt"
sleep 2
kill "$SAMPLER" 2>/dev/null || true
python3 - "$OUT/rss.csv" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
rows = [{k: float(v) for k, v in r.items()} for r in rows]
def at(n):
    return next((r for r in rows if r["plan_requests"] >= n), rows[-1])
last = rows[-1]
first_k = at(1000)
print(f"RSS after {int(first_k['plan_requests'])} requests: {first_k['rss_kib'] / 1024:.1f} MiB")
print(f"RSS after {int(last['plan_requests'])} requests: {last['rss_kib'] / 1024:.1f} MiB "
      f"({(last['rss_kib'] / first_k['rss_kib'] - 1) * 100:+.1f} %)")
print(f"peak RSS (VmHWM): {last['hwm_kib'] / 1024:.1f} MiB")
PY
