"""Benchmark: how long a refused second operator waits for its answer (issue 44, item 1).

A first operator (a real ``streamops restart`` process on a fake cluster,
``tests/support/op_lease_cli.py``) holds the job's operation lease in its (blocked) submit
step. Then, on the same state root, a second operation on the job is refused ``JobBusy``:

- in process: ``job_operation`` entered and refused, ``--repeat`` times;
- the whole CLI: ``python -m streamops restart <job>`` (the real port, no cluster needed
  for the refusal), from the process start to its exit with the error, ``--cli`` times.

It prints the machine's speed, then median and max of each. No Spark is started.

    .venv/bin/python tests/perf/bench_busy_refusal.py [--repeat 200] [--cli 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import python_loop_seconds

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support import operators  # noqa: E402
from support.restart_fake import JOB  # noqa: E402

from streamops.exceptions import JobBusy  # noqa: E402
from streamops.procedures.job_lease import acting_as, job_operation  # noqa: E402
from streamops.settings import PROJECT_ROOT, Settings  # noqa: E402


def _figures(name: str, seconds: list[float]) -> None:
    ms = sorted(s * 1000 for s in seconds)
    print(f"{name}: median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms "
          f"({len(ms)} runs)", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200, help="in-process refusals")
    parser.add_argument("--cli", type=int, default=10, help="whole-CLI refusals")
    args = parser.parse_args()
    print(f"machine: 20M Python additions in {python_loop_seconds():.2f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-busy-") as tmp:
        root = Path(tmp)
        settings = Settings.from_env({}, state_root=str(root))
        first = operators.start(root, "first", "restart", JOB, "--mode", "last-checkpoint")
        with operators.stopped_at_the_end(first):
            first.wait_at_submit()
            inproc = []
            with acting_as("cli", "second"):
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    try:
                        with job_operation(settings, JOB, "restart (savepoint)"):
                            raise SystemExit("the job was not busy")
                    except JobBusy:
                        inproc.append(time.perf_counter() - t)
            whole = []
            command = [sys.executable, "-m", "streamops", "--state-root", str(root), "restart",
                       JOB]  # fmt: skip
            for _ in range(args.cli):
                t = time.perf_counter()
                out = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True)
                whole.append(time.perf_counter() - t)
                if out.returncode != 2 or "is busy" not in out.stderr:
                    raise SystemExit(f"not refused as busy: {out.returncode} {out.stderr[-500:]}")
            print(f"answer: {out.stderr.strip().splitlines()[-1]}", flush=True)
            first.finish()
    _figures("in process (job_operation refused)", inproc)
    _figures("whole CLI (python -m streamops restart, start to exit)", whole)


if __name__ == "__main__":
    main()
