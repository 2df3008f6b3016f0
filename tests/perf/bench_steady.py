"""Benchmark: where a running job's CPU goes, and its batch durations, in steady state.

Starts its own local cluster, both simulators at ``--rate`` pings/s each and one job spec;
after ``--warm`` seconds samples every process (and the driver's and executors' JVM threads,
by name) from ``/proc`` for ``--window`` seconds; prints the CPU share per kind of process
(100% = one core), the busiest JVM threads, and each stage's batch durations over the window.
``--conf KEY=VALUE`` overrides the spec's Spark conf (compare JVM or Spark settings):

    .venv/bin/python tests/perf/bench_steady.py --rate 200 --warm 45
    .venv/bin/python tests/perf/bench_steady.py --conf spark.executor.extraJavaOptions=
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import statistics
import time
from pathlib import Path

from harness import bench_cluster, cpu_ticks, discard, fleet_spec, processes, use_bench_jobs

from streamops.jobs import JobRegistry
from streamops.sim import AlphaSimulator, BetaSimulator
from streamops.world.submit import submit_job

HZ = os.sysconf("SC_CLK_TCK")
KINDS = (
    ("DriverWrapper", "driver JVM"),
    ("CoarseGrainedExecutorBackend", "executor JVMs"),
    ("deploy.worker", "worker JVMs"),
    ("deploy.master", "master JVM"),
    ("pyspark.daemon", "executors' Python workers"),
    ("python_streaming_source_runner", "driver's Python source runners"),
    ("spark_jobs/main.py", "driver's Python"),
    ("spark_jobs.forkserver", "executors' Python workers (fork server)"),
    ("bench_steady.py", "the simulators (this benchmark)"),
    ("-m streamops", "node agents"),
)


def threads(pid: int) -> dict[int, tuple[str, int]]:
    out = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = re.sub(r"\d+", "#", (task / "comm").read_text().strip())
            out[int(task.name)] = (name, cpu_ticks(task / "stat"))
        except (OSError, IndexError):
            pass
    return out


def kind(cmd: str) -> str:
    return next((k for marker, k in KINDS if marker in cmd), "other")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=200.0, help="pings/s of each simulator")
    ap.add_argument("--spec", default="fleet-pings-v2.yaml", help="a file of config/jobs/")
    ap.add_argument("--trigger", default="1 second")
    ap.add_argument("--warm", type=float, default=45.0, help="seconds from healthy to sampling")
    ap.add_argument("--window", type=float, default=30.0, help="seconds sampled")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--entrypoint", help="run this job module of tests/perf/jobs (e.g. fleet_reads) instead"
    )
    ap.add_argument(
        "--arg", action="append", default=[], metavar="KEY=VALUE",
        help="a job arg over the spec's (e.g. max_batch_delay=10, beta_min_records_per_batch=1000)",
    )  # fmt: skip
    args = ap.parse_args()
    overrides = dict(c.split("=", 1) for c in args.conf)
    job_args = dict(a.split("=", 1) for a in args.arg)
    if args.entrypoint:
        use_bench_jobs()
    root, settings, cluster = bench_cluster("bench-steady-", "3g")
    work, job = root / "data", "bench-steady"
    # as bench_fleet_ingest's at high rates (files of half a second, five minutes of beta
    # held, since the simulators start before the cluster); at 200 pings/s or less as before
    alpha = AlphaSimulator(work / "alpha", seed=1, rate=args.rate,
                           pings_per_file=max(100, int(args.rate / 2)))  # fmt: skip
    beta = BetaSimulator(port=0, seed=2, rate=args.rate,
                         history=int(max(100_000, args.rate * 300)))  # fmt: skip
    registry = JobRegistry(settings)
    try:
        beta.start()
        alpha.start()
        cluster.start()
        data = {"alpha_dir": str(work / "alpha"), "beta_url": beta.url,
                "store_url": f"sqlite:///{work / 'fleet.db'}", **job_args}  # fmt: skip
        spec = fleet_spec(args.spec, job, args.trigger, data, overrides)
        if args.entrypoint:
            spec = spec.model_copy(update={"entrypoint": args.entrypoint})
        submit_job(spec, settings, wait_healthy=600)
        time.sleep(args.warm)
        before = processes()
        jvms = {pid: threads(pid) for pid, (cmd, _) in before.items()
                if kind(cmd) in ("driver JVM", "executor JVMs")}  # fmt: skip
        t0 = time.time()
        time.sleep(args.window)
        seconds = time.time() - t0
        after = processes()
        share: collections.Counter[str] = collections.Counter()
        for pid, (cmd, ticks) in after.items():
            share[kind(cmd)] += (ticks - before.get(pid, (cmd, 0))[1]) / HZ / seconds * 100
        busy: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
        for pid, first in jvms.items():
            for tid, (name, ticks) in threads(pid).items():
                busy[kind(before[pid][0])][name] += (
                    (ticks - first.get(tid, (name, 0))[1]) / HZ / seconds * 100
                )
        batches: dict[str, list[float]] = collections.defaultdict(list)
        for line in settings.layout.status_history(job).read_text().splitlines():
            rec = json.loads(line)
            if rec["last_batch_at"] >= t0 and rec.get("batch_duration_ms") is not None:
                batches[rec["stage"]].append(rec["batch_duration_ms"] / 1000)
    finally:
        alpha.stop()
        beta.stop()
        if registry.view(job).is_live:
            registry.cancel(job)
        cluster.stop()
        discard(root)
    print(
        f"\nsteady state of {args.spec} at 2 x {args.rate:.0f} pings/s, trigger {args.trigger}, "
        f"{args.warm:.0f} s after healthy, {seconds:.0f} s sampled; conf {overrides or '-'}; "
        f"args {job_args or '-'}; entrypoint {spec.entrypoint}"
    )
    total = sum(share.values())
    print(f"CPU (100% = one core; the machine has {os.cpu_count()}): total {total:.0f}%")
    for name, pct in share.most_common():
        if pct >= 0.5:
            print(f"  {name:32s} {pct:6.1f}%")
    for name, counter in busy.items():
        top = ", ".join(f"{t} {p:.0f}%" for t, p in counter.most_common(6) if p >= 1)
        print(f"  busiest threads of the {name}: {top}")
    for stage, values in sorted(batches.items()):
        values.sort()
        p95 = values[min(len(values) - 1, int(0.95 * len(values)))]
        print(f"batches of {stage:18s} {len(values):3d}  mean {statistics.mean(values):.2f} s  "
              f"p50 {statistics.median(values):.2f} s  p95 {p95:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
