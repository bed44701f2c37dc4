#!/usr/bin/env python3
"""Two sbx builds timed against each other on one compile input, in
alternation, so that the load other processes put on the machine falls
on both alike (docs/performance.md: the A/B column).

    bench/ab.py OLD_SBX NEW_SBX ARGS_FILE [PAIRS]

ARGS_FILE holds the `sbx compile` arguments that `bench/gen_policy.py`
prints (policy, `--workspace`, `--home`); each run is `compile ARGS
--target all -o DIR`. PAIRS (default 12) runs of each, the order swapped
every pair. Prints the medians of wall and CPU time (user + sys) of each
build and the median of the per-pair ratios NEW/OLD.
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run(sbx, args, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sbx, "compile", *args, "--target", "all", "-o", out],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    old, new, args_file = sys.argv[1:4]
    pairs = int(sys.argv[4]) if len(sys.argv) == 5 else 12
    args = open(args_file).read().split()
    builds = {"old": old, "new": new}
    got = {"old": [], "new": []}
    with tempfile.TemporaryDirectory() as work:
        for k in range(pairs):
            for name in ["old", "new"] if k % 2 == 0 else ["new", "old"]:
                got[name].append(run(builds[name], args, os.path.join(work, name)))
    med = statistics.median
    for name, sbx in builds.items():
        walls = [w for w, _ in got[name]]
        cpus = [c for _, c in got[name]]
        print(f"{name} {sbx}: wall {med(walls):.3f} s, cpu {med(cpus):.3f} s")
    ratio = med([n[0] / o[0] for o, n in zip(got["old"], got["new"])])
    cpu_ratio = med([n[1] / o[1] for o, n in zip(got["old"], got["new"])])
    print(f"new/old: wall {ratio:.3f}, cpu {cpu_ratio:.3f} (medians of {pairs} pairs)")


if __name__ == "__main__":
    main()
