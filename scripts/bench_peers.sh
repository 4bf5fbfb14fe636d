#!/usr/bin/env bash
# The engine against its peers (NIXL, Mooncake) and the lanes' limits, one bench run per lane:
#   scripts/bench_peers.sh [OUT_DIR] [extra adxl-bench options...]     (default OUT_DIR: out/peers)
# RUNS=N (default 1) repeats both lanes N times in turn, into OUT_DIR/run1..runN.
# Writes OUT_DIR/runK/{rdma,hccs}.{csv,txt}, OUT_DIR/peers.png (per lane: engine, peers, limit;
# from run1) and OUT_DIR/table.md (GB/s and CPU s/GB per row and block size, medians over the
# runs, and the engine's ratios to the best NIXL row, Mooncake and the network limit).  Needs
# build/bin/adxl-bench (ADXL_BENCH names another) and the venv of scripts/peers_venv.sh (its
# matplotlib draws the plot).  Records `uptime` before and after each run in OUT_DIR/uptime.txt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/out/peers}"
shift || true
bench="${ADXL_BENCH:-$root/build/bin/adxl-bench}"
venv="${ADXL_BENCH_PEERS_VENV:-$root/.venv-peers}"
blocks="${BLOCKS:-4K,16K,256K,1M,2M}"
runs="${RUNS:-1}"
mkdir -p "$out"
: >"$out/uptime.txt"
for ((i = 1; i <= runs; i++)); do
  dir="$out/run$i"
  mkdir -p "$dir"
  uptime | tee -a "$out/uptime.txt"
  "$bench" --spawn --lane rdma --bench bandwidth --block-sizes "$blocks" --baselines tcp,peers --verify \
    --csv "$dir/rdma.csv" "$@" | tee "$dir/rdma.txt"
  "$bench" --spawn --lane hccs --bench bandwidth --block-sizes "$blocks" --baselines tcp,cma,nixl --verify \
    --csv "$dir/hccs.csv" "$@" | tee "$dir/hccs.txt"
done
uptime | tee -a "$out/uptime.txt"
"$venv/bin/python" "$root/scripts/plot_bench.py" "$out/run1/rdma.csv" "$out/run1/hccs.csv" -o "$out/peers.png" \
  --title "adxl-bench: engine, peers and limits per lane"
python3 "$root/scripts/peers_table.py" "$out"/run*/rdma.csv "$out"/run*/hccs.csv --ratios | tee "$out/table.md"
