#!/usr/bin/env python3
"""Markdown table of adxl-bench CSV files: GB/s per row and block size, per lane and direction.

    scripts/peers_table.py out/peers/rdma.csv out/peers/hccs.csv [--rows engine_sync,nixl,...] [--ratios]
    scripts/peers_table.py run*/rdma.csv run*/hccs.csv --ratios      # several runs: medians

A cell is "GB/s (cpu s/GB)", the median over the files that have it (several runs of the same
command); '-' where the row is missing, 'err' where a run of it failed or its check did not pass.
--ratios adds, per lane and direction, the engine's median over the best NIXL row (nixl or
nixl_poll, whichever is faster at that size), over Mooncake, and over the network limit (the tcp
row).  No third-party modules.
"""
import argparse
import csv
import statistics
from collections import defaultdict

DEFAULT_ROWS = "engine_sync,engine_async,nixl,nixl_poll,mooncake,tcp,tcp_1stream,cma"


def size_label(n):
    for unit, shift in (("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


def read(paths, wanted):
    """{(lane, direction, bench): {block: [(gbps, cpu or None) or None for a failed run]}}."""
    runs = defaultdict(lambda: defaultdict(list))
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["pattern"] != "seq" or r["benchmark"] not in wanted:
                    continue
                lane = r["transport"].split(":", 1)[0]
                ok = int(r["error_count"]) == 0 and r["consistency"] != "fail"
                cpu = r.get("cpu_s_per_gb", "")
                value = (float(r["bandwidth_gbps"]), float(cpu) if cpu else None) if ok else None
                runs[(lane, r["direction"], r["benchmark"])][int(r["block_size"])].append(value)
    return runs


def median_of(values):
    """(median GB/s, median cpu s/GB or None), or None when any run failed."""
    if any(v is None for v in values):
        return None
    cpus = [v[1] for v in values if v[1] is not None]
    return statistics.median(v[0] for v in values), (statistics.median(cpus) if cpus else None)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("csv", nargs="+")
    p.add_argument("--rows", default=DEFAULT_ROWS, help=f"benchmarks, in order [{DEFAULT_ROWS}]")
    p.add_argument("--ratios", action="store_true", help="add engine / best NIXL, / Mooncake, / tcp limit")
    args = p.parse_args()
    wanted = args.rows.split(",")
    runs = read(args.csv, wanted)
    med = {k: {b: median_of(v) for b, v in per_block.items()} for k, per_block in runs.items()}
    order = sorted({b for per_block in med.values() for b in per_block})
    counts = sorted({len(v) for per_block in runs.values() for v in per_block.values()})
    if counts and counts != [1]:
        print(f"medians of {'/'.join(map(str, counts))} runs\n")
    print("| lane, direction | row | " + " | ".join(size_label(b) for b in order) + " |")
    print("|---|---|" + "---|" * len(order))

    def cell(m):
        if m is None:
            return "err"
        return f"{m[0]:.2f}" + (f" ({m[1]:.2f})" if m[1] is not None else "")

    def gbps(lane, direction, bench, block):
        m = med.get((lane, direction, bench), {}).get(block)
        return m[0] if m else None

    for lane, direction in sorted({(k[0], k[1]) for k in med}):
        for bench in wanted:
            row = med.get((lane, direction, bench))
            if row:
                print(f"| {lane}, {direction} | {bench} | " +
                      " | ".join(cell(row[b]) if b in row else "-" for b in order) + " |")
        if not args.ratios:
            continue
        for label, peers in (("best NIXL", ("nixl", "nixl_poll")), ("Mooncake", ("mooncake",)),
                             ("tcp limit", ("tcp",))):
            texts = []
            for b in order:
                eng = gbps(lane, direction, "engine_sync", b)
                peer = [x for x in (gbps(lane, direction, q, b) for q in peers) if x]
                texts.append(f"**{eng / max(peer):.2f}**" if eng and peer else "-")
            if any(t != "-" for t in texts):
                print(f"| {lane}, {direction} | engine ÷ {label} | " + " | ".join(texts) + " |")


if __name__ == "__main__":
    main()
