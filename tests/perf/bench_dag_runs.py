"""Benchmark: what ``dag.test()`` costs per run, with Airflow's in-process Execution API built
for every task (as Airflow does) and built once per process (as ``tests/support/dag_runs.py``
has the DAG tests do).

Each mode runs in a fresh interpreter with a fresh SQLite metadata database and state root:
``health_check`` for a job that does not exist, ``--runs`` times (two tasks run: ``validate``
fails naming the param, ``report`` says so; no cluster is needed). It prints the machine's
speed, then each run's seconds per mode; the first run of the "once" mode builds the API.

    .venv/bin/python tests/perf/bench_dag_runs.py [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import python_loop_seconds

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _one_mode(mode: str, runs: int) -> None:
    home = tempfile.mkdtemp(prefix="bench-dag-test-")
    os.environ.update({
        "AIRFLOW_HOME": home, "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "STREAMOPS_STATE_ROOT": str(Path(home) / "state"),
    })  # fmt: skip
    sys.path[:0] = [str(TESTS), str(ROOT / "plugins"), str(ROOT)]
    from airflow.utils import db

    db.initdb()
    from airflow.sdk.execution_time import supervisor
    from support import dag_runs

    if mode == "per-task":  # load_dag would make it one per process: undo that each time
        build = supervisor.in_process_api_server
        dag_runs._one_execution_api = lambda: setattr(  # type: ignore[assignment]
            supervisor, "in_process_api_server", build)
    for n in range(runs):
        dag = dag_runs.load_dag("health_check")
        started = time.monotonic()
        run = dag.test(run_conf={"jobs": ["no-such-job"], "expected_workers": 2})
        print(f"{mode}: run {n + 1} {run.state} in {time.monotonic() - started:.2f} s",
              flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--mode", choices=["per-task", "once"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        _one_mode(args.mode, args.runs)
        return
    print(f"machine: 20M Python additions in {python_loop_seconds():.2f} s", flush=True)
    for mode in ("per-task", "once"):
        done = subprocess.run([sys.executable, __file__, "--mode", mode, "--runs", str(args.runs)],
                              capture_output=True, text=True)  # fmt: skip
        lines = [line for line in done.stdout.splitlines() if line.startswith(f"{mode}:")]
        print("\n".join(lines) or f"{mode}: failed (exit {done.returncode}): "
              f"{done.stderr[-2000:]}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
