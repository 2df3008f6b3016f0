"""Benchmark: what the stack beside the jobs costs when nothing runs, per process.

Starts a local cluster (2 workers, free ports, a temporary state root) and, beside it, the
stack ``streamops up`` starts (Airflow with its PostgreSQL and scheduled DAGs, the dashboard,
describe-ahead: :mod:`ops_stack`), no job; waits ``--settle`` seconds, then reads every
process's CPU time from ``/proc`` over ``--seconds``; stops everything. Not part of the test
suite. Prints the machine's CPU use over the window and the processes that used the most, each
as a share of the whole machine (100 % = both cores busy).

    .venv/bin/python tests/perf/bench_stack_idle.py --seconds 90
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from harness import bench_cluster, cpu_share, cpu_times, discard
from ops_stack import beside_stack


def process_times() -> dict[int, tuple[int, str]]:
    """Per process: user + system jiffies (its own and its waited-for children's) and its
    command line."""
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry.name)] = (sum(int(x) for x in stat[11:15]), cmd.strip()[:120])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seconds", type=float, default=90, help="measurement window")
    ap.add_argument("--settle", type=float, default=30, help="seconds after the stack is up")
    ap.add_argument("--top", type=int, default=12, help="processes listed")
    args = ap.parse_args()
    root, settings, cluster = bench_cluster("bench-stack-idle-", "3g", bare=False)
    try:
        cluster.start()
        with beside_stack(settings, False):
            time.sleep(args.settle)
            p0, c0, t0 = process_times(), cpu_times(), time.monotonic()
            time.sleep(args.seconds)
            p1, c1, span = process_times(), cpu_times(), time.monotonic() - t0
            hz = os.sysconf("SC_CLK_TCK") * span * (os.cpu_count() or 1)
            print(f"\nthe idle stack over {span:.0f} s: machine CPU {cpu_share(c0, c1):.1%}")
            used = sorted(((j - p0.get(pid, (0, ""))[0]) / hz, pid, cmd)
                          for pid, (j, cmd) in p1.items())  # fmt: skip
            for share, pid, cmd in reversed(used[-args.top :]):
                print(f"  {share:6.1%}  {pid:7d}  {cmd or '(kernel)'}")
    finally:
        cluster.stop()
        discard(root)


if __name__ == "__main__":
    main()
