#!/usr/bin/env python3
"""Markdown table of one or more adxl-bench CSV files: GB/s per row and block size, per lane and direction.

    scripts/peers_table.py rdma.csv hccs.csv [--rows engine_sync,nixl,nixl_poll,mooncake,tcp,tcp_1stream,cma]

A cell is "GB/s (cpu s/GB)"; '-' where the row is missing or failed.  No third-party modules.
"""
import argparse
import csv
from collections import defaultdict

DEFAULT_ROWS = "engine_sync,engine_async,nixl,nixl_poll,mooncake,tcp,tcp_1stream,cma"


def size_label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+")
    p.add_argument("--rows", default=DEFAULT_ROWS, help=f"benchmarks, in order [{DEFAULT_ROWS}]")
    args = p.parse_args()
    wanted = args.rows.split(",")
    cells = defaultdict(dict)  # (lane, direction, bench) -> {block: text}
    blocks = set()
    for path in args.csv:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["pattern"] != "seq" or r["benchmark"] not in wanted:
                    continue
                lane = r["transport"].split(":", 1)[0]
                block = int(r["block_size"])
                blocks.add(block)
                ok = int(r["error_count"]) == 0 and r["consistency"] != "fail"
                cpu = r.get("cpu_s_per_gb", "")
                text = f"{float(r['bandwidth_gbps']):.2f}" + (f" ({float(cpu):.2f})" if cpu else "") if ok else "err"
                cells[(lane, r["direction"], r["benchmark"])][block] = text
    order = sorted(blocks)
    print("| lane, direction | row | " + " | ".join(size_label(b) for b in order) + " |")
    print("|---|---|" + "---|" * len(order))
    for lane, direction in sorted({(k[0], k[1]) for k in cells}):
        for bench in wanted:
            row = cells.get((lane, direction, bench))
            if row:
                print(f"| {lane}, {direction} | {bench} | " + " | ".join(row.get(b, "-") for b in order) + " |")


if __name__ == "__main__":
    main()
