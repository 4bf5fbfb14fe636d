#!/usr/bin/env bash
# The engine against its peers (NIXL, Mooncake) and the lanes' limits, one bench run per lane:
#   scripts/bench_peers.sh [OUT_DIR] [extra adxl-bench options...]     (default OUT_DIR: out/peers)
# Writes OUT_DIR/{rdma,hccs}.{csv,txt}, OUT_DIR/peers.png (per lane: engine, peers, limit) and
# OUT_DIR/table.md (GB/s and CPU s/GB per row and block size).  Needs build/bin/adxl-bench and
# the venv of scripts/peers_venv.sh (its matplotlib draws the plot).  Records `uptime` first.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/out/peers}"
shift || true
bench="${ADXL_BENCH:-$root/build/bin/adxl-bench}"
venv="${ADXL_BENCH_PEERS_VENV:-$root/.venv-peers}"
blocks="${BLOCKS:-4K,16K,256K,1M,2M}"
mkdir -p "$out"
uptime | tee "$out/uptime.txt"
"$bench" --spawn --lane rdma --bench bandwidth --block-sizes "$blocks" --baselines tcp,peers --verify \
  --csv "$out/rdma.csv" "$@" | tee "$out/rdma.txt"
"$bench" --spawn --lane hccs --bench bandwidth --block-sizes "$blocks" --baselines tcp,cma,nixl --verify \
  --csv "$out/hccs.csv" "$@" | tee "$out/hccs.txt"
uptime | tee -a "$out/uptime.txt"
"$venv/bin/python" "$root/scripts/plot_bench.py" "$out/rdma.csv" "$out/hccs.csv" -o "$out/peers.png" \
  --title "adxl-bench: engine, peers and limits per lane"
python3 "$root/scripts/peers_table.py" "$out/rdma.csv" "$out/hccs.csv" | tee "$out/table.md"
