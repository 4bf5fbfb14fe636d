#!/usr/bin/env bash
# What per-link statistics cost the data path: adxl-bench latency rows (one
# 4 KiB descriptor per TransferSync, the call where a fixed per-call cost
# shows most) with counting on and with ADXL_STATS_DISABLE=1, interleaved
# ROUNDS times (the order alternates, so that drift of a shared machine hits
# both alike).  Prints per direction the median over rounds of each run's
# median call (p50_us: what other load on a shared machine disturbs least)
# and of its calls/s (ops/s, which every stall of the machine drags down),
# and the ratios on/off.
#   scripts/stats_cost.sh [ROUNDS=9] [LANE=hccs] [ITERS=20000]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="${BUILD_DIR:-$ROOT/build}/bin/adxl-bench"
ROUNDS="${1:-9}" LANE="${2:-hccs}" ITERS="${3:-20000}"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
run() {  # run TAG [ENV...]
  local tag="$1"; shift
  env "$@" "$BENCH" --spawn --lane "$LANE" --latency --baselines none --latency-iters "$ITERS" \
    --csv "$OUT/$tag.csv" >/dev/null
  tail -n +2 "$OUT/$tag.csv" | sed "s/^/$tag,/" >>"$OUT/all.csv"
}
for ((i = 0; i < ROUNDS; i++)); do
  if ((i % 2 == 0)); then run on; run off ADXL_STATS_DISABLE=1; else run off ADXL_STATS_DISABLE=1; run on; fi
done
python3 - "$OUT/all.csv" "$LANE" "$ROUNDS" <<'PY'
import csv, statistics, sys
p50, ops = {}, {}
for row in csv.reader(open(sys.argv[1])):
    key = (row[0], row[7])  # tag, direction
    ops.setdefault(key, []).append(float(row[11]))
    p50.setdefault(key, []).append(float(row[16]))
med = statistics.median
print(f"lane {sys.argv[2]}, {sys.argv[3]} rounds of TransferSync of one 4 KiB descriptor, medians over rounds")
for d in sorted({k[1] for k in ops}):
    on, off = ("on", d), ("off", d)
    print(f"  {d}: p50 call on {med(p50[on]):.3f} us, off {med(p50[off]):.3f} us (on/off {med(p50[on])/med(p50[off]):.3f});"
          f" calls/s on {med(ops[on])/1e3:.1f}k, off {med(ops[off])/1e3:.1f}k (on/off {med(ops[on])/med(ops[off]):.3f})")
PY
