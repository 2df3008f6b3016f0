"""Benchmark: savepoint time (drain + copy with sha256 + manifest) at 10k, 100k, 1M keys.

Starts its own local cluster (free ports, temporary state root), runs the ``bench-state``
job (``tests/perf/jobs/bench_state.py``: one stateful stage with exactly N keys, then
``--trickle`` rows a batch: a large state with a modest input rate) for each N, takes
``--repeat`` savepoints without cancel and one with cancel, and prints per N: wall time of
the request, the driver's own duration (drain + copy + manifest), bytes and files.
Not part of the test suite.

    .venv/bin/python tests/perf/bench_savepoint.py --keys 10000 100000 1000000
"""

from __future__ import annotations

import argparse
import logging
import statistics
import time

from harness import bench_cluster, discard, use_bench_jobs

from streamops.jobs import JobRegistry
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.settings import Settings
from streamops.spec import spec_from_dict
from streamops.state.job_status import StageStatus
from streamops.state.savepoints import catalogue
from streamops.world.submit import submit_job


def bench_one(settings: Settings, keys: int, repeat: int, trickle: int) -> str:
    job = f"bench-state-{keys}"
    spec = spec_from_dict({
        "name": job, "version": "1", "entrypoint": "bench_state",
        "trigger_interval": "2 seconds",
        "args": {"keys": keys, "rows_per_batch": keys, "trickle_rows": min(keys, trickle)},
        "conf": {"spark.sql.shuffle.partitions": "4"},
    })  # fmt: skip
    registry = JobRegistry(settings)
    submit_job(spec, settings, wait_healthy=600)
    deadline = time.monotonic() + 600
    while (registry.view(job).stages.get("counts") or StageStatus()).state_rows < keys:
        if time.monotonic() > deadline:
            raise SystemExit(f"{job}: state never reached {keys} keys")
        time.sleep(1)
    walls, drivers = [], []
    for i in range(repeat):
        t0 = time.monotonic()
        result = savepoint_job(settings, job, f"{job}-live-{i}")
        walls.append(time.monotonic() - t0)
        drivers.append(float(result.detail["duration_s"]))
    t0 = time.monotonic()
    result = savepoint_job(settings, job, f"{job}-cancel", cancel=True)
    cancel_wall = time.monotonic() - t0
    manifest = catalogue.get_savepoint(settings.layout, f"{job}-cancel")
    return (
        f"{keys:>9} keys  live: request p50 {statistics.median(walls):5.2f} s, driver "
        f"{statistics.median(drivers):5.2f} s (n={repeat})  with cancel: {cancel_wall:5.2f} s "
        f"(driver {float(result.detail['duration_s']):.2f} s, sha256)  "
        f"{manifest.bytes / 1e6:7.1f} MB in {manifest.files} files"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--keys", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--trickle", type=int, default=10_000, help="rows a batch once state is full")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root, settings, cluster = bench_cluster("bench-savepoint-", "4g")
    use_bench_jobs()
    lines = []
    try:
        cluster.start()
        for keys in args.keys:
            lines.append(bench_one(settings, keys, args.repeat, args.trickle))
            print(lines[-1], flush=True)
    finally:
        cluster.stop()
        discard(root)
    print("\nsavepoint benchmark (2 workers, 2-core machine, HDFS-backed state store)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
