#!/usr/bin/python3
"""Plot adxl-bench CSV output: bandwidth against block size, per lane.

One row of panels per lane (the `--lane` of the run: the part of the CSV's
transport before ':'), one panel per direction (H2rH, rH2H, ...), one line
per benchmark: the engine modes solid, the peers (nixl, nixl_poll, mooncake)
dashed, the limit of the lane dotted (`tcp`: the best socket, on every lane;
`cma`: the kernel's cross-memory copy, same node).  The limit's variants
(tcp_1stream, tcp_x2, ...), ucp and memcpy only with --all.

    build/bin/adxl-bench --spawn --lane rdma --baselines tcp,peers --csv rdma.csv
    build/bin/adxl-bench --spawn --lane hccs --baselines tcp,cma,peers --csv hccs.csv
    scripts/plot_bench.py rdma.csv hccs.csv -o bench.png

Needs matplotlib: Debian's python3-matplotlib (apt-get install python3-matplotlib),
hence the interpreter /usr/bin/python3; with another Python, run it as
"python3 scripts/plot_bench.py ..." where that Python has matplotlib.
"""

import argparse
import csv
import itertools
import sys
from collections import defaultdict

COLUMNS = [
    "benchmark", "pattern", "block_size", "batch_size", "threads", "transport", "direction",
    "initiator_memory", "target_memory", "bandwidth_gbps", "ops_per_sec", "avg_latency_us",
    "p99_us", "error_count", "consistency", "p50_us",
]
# Columns a newer bench appends (CPU time per GB, ratios to the limit and the peers):
# optional, so that older CSV files still plot.
OPTIONAL = ["cpu_s_per_gb", "engine_vs_tcp", "engine_vs_nixl", "engine_vs_mooncake"]

# Engine solid, peers dashed, limits dotted: the eye finds the engine first.
PEERS = ("nixl", "nixl_poll", "mooncake")
LIMITS = ("tcp", "cma")
LABEL = {"tcp": "tcp limit (best socket)", "cma": "cma limit (kernel copy)"}
# One colour per benchmark in every panel; the limits black and grey.
COLOR = {"engine_sync": "tab:blue", "engine_async": "tab:cyan", "nixl": "tab:orange", "nixl_poll": "tab:red",
         "mooncake": "tab:green", "tcp": "black", "cma": "tab:gray", "ucp": "tab:purple", "memcpy": "tab:brown"}


def style(bench):
    if bench in PEERS:
        return "--"
    if bench in LIMITS or bench == "memcpy":
        return ":"
    if bench == "ucp" or bench.startswith("tcp_"):
        return "-."
    return "-"


def shown(bench, everything):
    return everything or bench.startswith("engine") or bench in PEERS or bench in LIMITS


def read_rows(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            names = reader.fieldnames or []
            if names[:len(COLUMNS)] != COLUMNS or not set(names[len(COLUMNS):]) <= set(OPTIONAL):
                raise ValueError(f"{path}: not an adxl-bench CSV (columns {reader.fieldnames})")
            rows.extend(reader)
    return rows


def size_label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def series(rows, everything=False):
    """{(lane, direction): {benchmark: [(block, GB/s), ...]}} for bandwidth rows."""
    out = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["pattern"] != "seq" or int(r["error_count"]) != 0:
            continue  # latency rows and failed rows have no bandwidth to show
        if not shown(r["benchmark"], everything):
            continue
        lane = r["transport"].split(":", 1)[0]
        out[(lane, r["direction"])][r["benchmark"]].append((int(r["block_size"]), float(r["bandwidth_gbps"])))
    return out


def plot(data, output, title, logy):
    import matplotlib
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    lanes = sorted({lane for lane, _ in data})
    directions = sorted({d for _, d in data})
    fig, axes = plt.subplots(len(lanes), len(directions), figsize=(6.5 * len(directions), 4.8 * len(lanes)),
                             squeeze=False)
    for (i, lane), (j, direction) in itertools.product(enumerate(lanes), enumerate(directions)):
        ax = axes[i][j]
        blocks = set()
        for bench, points in sorted(data.get((lane, direction), {}).items()):
            points.sort()
            xs, ys = [p[0] for p in points], [p[1] for p in points]
            blocks.update(xs)
            ax.plot(xs, ys, style(bench), marker="s" if bench in LIMITS else "o", label=LABEL.get(bench, bench),
                    color=COLOR.get(bench))
        ax.set_xscale("log", base=2)
        if logy:
            ax.set_yscale("log")  # memcpy can dwarf the rest
        ticks = sorted(blocks)
        ax.set_xticks(ticks)
        ax.set_xticklabels([size_label(b) for b in ticks])
        ax.set_xlabel("block size")
        ax.set_ylabel("bandwidth (GB/s, 1e9 B/s)")
        ax.set_title(f"{lane} lane, {direction}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(output, dpi=120)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+", help="CSV files written by adxl-bench --csv")
    p.add_argument("-o", "--output", default="bench.png", help="PNG to write (default: bench.png)")
    p.add_argument("--title", default="adxl-bench", help="figure title")
    p.add_argument("--logy", action="store_true", help="logarithmic bandwidth axis")
    p.add_argument("--all", action="store_true", help="also ucp, memcpy and the limit's variants (tcp_*)")
    args = p.parse_args()
    try:
        data = series(read_rows(args.csv), args.all)
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_bench: {e}", file=sys.stderr)
        return 2
    if not data:
        print("plot_bench: no bandwidth rows without errors in the input", file=sys.stderr)
        return 1
    try:
        plot(data, args.output, args.title, args.logy)
    except ImportError:
        print("plot_bench: matplotlib is missing (Debian: apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
