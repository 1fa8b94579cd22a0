#!/usr/bin/env bash
# Runs every fuzz target (or those named) for N seconds each, one after the
# other, single process: ./run.sh [SECONDS] [TARGET...]
# FUZZ_RUNS=N also stops a target after N executions (issue 7 asks for
# 10 million executions or 30 minutes, whichever comes first).
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Each target starts from fuzz/seeds/<target> plus the regressions, keeps
# its growing corpus in fuzz/corpus/<target> (not checked in), writes
# crashes to fuzz/artifacts/<target>/ and its log to fuzz/logs/<target>.log,
# and prints one line: target, seconds, executions, corpus size, crashes.
# Exits 1 when any target found a crash (reproduce: cargo +nightly fuzz run
# <target> artifacts/<target>/crash-…; keep it in regressions/<target>/).
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build >/dev/null
mkdir -p logs
failed=0
printf '%-22s %6s %12s %8s %8s %6s\n' target seconds executions corpus crashes slow
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  cp -n seeds/"$t"/* "corpus/$t/" 2>/dev/null || true
  if [ -d "regressions/$t" ]; then cp -n regressions/"$t"/* "corpus/$t/" 2>/dev/null || true; fi
  # Crashes, leaks, timeouts and OOMs fail the run; libFuzzer's slow-unit-*
  # files (an input over 10 s, usually a starved CPU) are only counted.
  count() { find "artifacts/$t" -type f ! -name 'slow-unit-*' | wc -l; }
  slow() { find "artifacts/$t" -type f -name 'slow-unit-*' | wc -l; }
  before=$(count)
  slow_before=$(slow)
  started=$SECONDS
  cargo +nightly fuzz run "$t" "corpus/$t" -- \
    -max_total_time="$secs" -runs="${FUZZ_RUNS:--1}" -print_final_stats=1 -timeout=20 -rss_limit_mb=4096 \
    >"logs/$t.log" 2>&1 || true
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' | tail -1)
  after=$(count)
  if [ "$after" -gt "$before" ]; then failed=1; fi
  printf '%-22s %6s %12s %8s %8s %6s\n' "$t" "$((SECONDS - started))" "${execs:-?}" "$(find "corpus/$t" -type f | wc -l)" "$((after - before))" "$(($(slow) - slow_before))"
done
exit "$failed"
