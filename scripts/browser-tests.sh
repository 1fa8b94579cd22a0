#!/usr/bin/env bash
# Browser tests of the web page (issue 15): `gpuplan serve` on a free
# loopback port, the offline report from `gpuplan plan --html`, and
# crates/gpuplan-server/web-tests/page.test.mjs in real headless Chromium
# (Debian's `chromium`, driven by playwright-core from npm; no browser is
# downloaded). Screenshots land in $GPUPLAN_ARTIFACTS (default
# target/web-test-artifacts). Ends by checking that SIGTERM stops the server
# gracefully (exit 0).
#
#   scripts/browser-tests.sh            # uses target/debug/gpuplan (cargo build first)
#   GPUPLAN_BIN=target/release/gpuplan scripts/browser-tests.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${GPUPLAN_BIN:-target/debug/gpuplan}
ART=$(mkdir -p "${GPUPLAN_ARTIFACTS:-target/web-test-artifacts}" && cd "${GPUPLAN_ARTIFACTS:-target/web-test-artifacts}" && pwd)
[ -x "$BIN" ] || cargo build --locked -p gpuplan
command -v "${CHROMIUM:-/usr/bin/chromium}" >/dev/null || { echo "chromium is required (apt-get install chromium)" >&2; exit 1; }

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT"
"$BIN" serve --addr "127.0.0.1:$PORT" >"$ART/serve.log" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true' EXIT
python3 - "$URL/healthz" <<'PY'
import sys, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1).read()
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit("gpuplan serve did not answer /healthz within 30 s")
PY

"$BIN" plan examples/chat-70b.toml --html "$ART/report.html" >/dev/null

(cd crates/gpuplan-server/web-tests && npm ci --no-audit --no-fund --loglevel=error)
GPUPLAN_URL="$URL" GPUPLAN_REPORT_HTML="$ART/report.html" GPUPLAN_ARTIFACTS="$ART" \
  node crates/gpuplan-server/web-tests/page.test.mjs

# Graceful shutdown: SIGTERM → the server finishes and exits 0.
kill -TERM "$SERVER"
rc=0
wait "$SERVER" || rc=$?
trap - EXIT
if [ "$rc" -ne 0 ]; then
  echo "gpuplan serve exited $rc on SIGTERM (expected 0)" >&2
  cat "$ART/serve.log" >&2
  exit 1
fi
echo "browser tests passed; screenshots in $ART"
