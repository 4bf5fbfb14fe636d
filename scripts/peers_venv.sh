#!/usr/bin/env bash
# Creates the venv that adxl-bench's peer rows (NIXL, Mooncake) run from:
#   scripts/peers_venv.sh [VENV]     (default: .venv-peers in the repository root)
# The peers come from their PyPI wheels, CPU-only:
#   nixl-cu12 1.5.1 (--no-deps: its CUDA dependencies are not needed on host memory) + numpy,
#   mooncake-transfer-engine-non-cuda 0.3.13 (TCP transport); matplotlib for scripts/plot_bench.py.
# adxl-bench finds the venv with --peers-venv VENV, or ADXL_BENCH_PEERS_VENV, or
# .venv-peers next to the source tree; without one its peer rows say "not installed".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv-peers}"
python="${PYTHON:-python3}"
if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet numpy
# For scripts/plot_bench.py (run it with "$venv/bin/python scripts/plot_bench.py ...").
"$venv/bin/python" -m pip install --quiet matplotlib
"$venv/bin/python" -m pip install --quiet --no-deps "nixl-cu12==${NIXL_VERSION:-1.5.1}"
"$venv/bin/python" -m pip install --quiet "mooncake-transfer-engine-non-cuda==${MOONCAKE_VERSION:-0.3.13}"
# Import check with a clean library path: the peers use the UCX bundled in their wheels.
env -u LD_LIBRARY_PATH UCX_MODULES='^ib' "$venv/bin/python" - <<'PY'
import os, sys
ok = True
for mod in ("nixl_cu12._api", "mooncake.engine"):
    try:
        __import__(mod)
        print(f"{mod}: ok")
    except Exception as e:  # report every peer, not only the first that fails
        ok = False
        print(f"{mod}: {e!r}")
sys.stdout.flush()
os._exit(0 if ok else 1)
PY
echo "peers venv: $venv"
