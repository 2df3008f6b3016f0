"""Benchmark: what the stack beside the jobs costs when nothing runs, per process.

Starts a local cluster (2 workers, free ports, a temporary state root) and, beside it, the
stack ``streamops up`` starts (Airflow with its PostgreSQL and scheduled DAGs, the dashboard,
describe-ahead: :mod:`ops_stack`), no job; waits ``--settle`` seconds, then reads every
process's own CPU time (user + system) from ``/proc`` over ``--seconds``; stops everything.
Not part of the test suite. Prints the machine's CPU use over the window and the processes
that used the most, each as a share of the whole machine (100 % = every core busy).

    .venv/bin/python tests/perf/bench_stack_idle.py --seconds 90
"""

from __future__ import annotations

import argparse
import os
import time

from harness import bench_cluster, cpu_since, discard, processes
from ops_stack import beside_stack


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
            p0, cpu, t0 = processes(), cpu_since(), time.monotonic()
            time.sleep(args.seconds)
            p1, share, span = processes(), cpu(), time.monotonic() - t0
            print(f"\nthe idle stack over {span:.0f} s: machine CPU {share:.1%}")
            ticks = os.sysconf("SC_CLK_TCK") * span * (os.cpu_count() or 1)
            used = sorted(((t - p0.get(pid, ("", 0))[1]) / ticks, pid, cmd)
                          for pid, (cmd, t) in p1.items())  # fmt: skip
            for part, pid, cmd in reversed(used[-args.top :]):
                print(f"  {part:6.1%}  {pid:7d}  {cmd.strip()[:120] or '(kernel)'}")
    finally:
        cluster.stop()
        discard(root)


if __name__ == "__main__":
    main()
