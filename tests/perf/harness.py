"""What every benchmark needs: free loopback ports, a temporary state root, a local cluster.

Benchmarks run as scripts (``python tests/perf/bench_x.py``), so this directory is on
``sys.path`` and they ``from harness import bench_cluster``. A benchmark removes its state
root when it ends (``discard``); ``STREAMOPS_BENCH_KEEP=1`` keeps it, to read the drivers'
logs and Spark's event logs afterwards. Each benchmark first prints the machine's speed of
the day (``python_loop_seconds``): this shared 2-core machine runs up to twice slower on some
days, so figures of different days compare only beside it.

Jobs that exist only for a benchmark live in ``tests/perf/jobs/``, not in the product's
``spark_jobs`` package: :func:`use_bench_jobs` puts that folder on ``PYTHONPATH`` before the
benchmark's cluster starts, and a spec names such a job by its module (``bench_state``).
The tests' ``support`` package (e.g. fleetsim-beta as a process a benchmark can freeze) is
importable too. What runs beside the cluster (Airflow, the dashboard, describe-ahead, as
``streamops up`` starts them; ``--bare``: nothing) is :mod:`ops_stack`'s; the batches a job
committed (``status-history.jsonl``), their first ones after a moment, an operation's gap
and the stages' backlogs are read here; what those figures mean (kept up, the gap, latency)
is :mod:`measures`'.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from measures import Backlog, Gap, backlog

from streamops.cluster.profile import ClusterProfile
from streamops.settings import PROJECT_ROOT, Settings
from streamops.spec import JobSpec, load_spec
from streamops.stack.local_cluster import LocalCluster

JOBS_DIR = Path(__file__).resolve().parent / "jobs"
if str(JOBS_DIR.parents[1]) not in sys.path:  # the tests' ``support`` package (simulator processes)
    sys.path.append(str(JOBS_DIR.parents[1]))


def use_bench_jobs() -> None:
    """Make the benchmark jobs (``tests/perf/jobs``) importable on the benchmark's cluster.

    The workers are started with this process's environment and hand ``PYTHONPATH`` on to the
    drivers they launch and to every Python worker (the fork server's children too), so an
    entrypoint ``bench_state`` imports there as ``spark_jobs.x`` does. Call it before
    ``cluster.start()``."""
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(JOBS_DIR) not in current:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(JOBS_DIR), *current])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# the reference loop, at module level as ``python -c`` runs it (globals: about twice the time
# of the same loop in a function); the figures of earlier days were taken with it
_LOOP = (
    "import time\nt = time.perf_counter()\ns = 0\n"
    "for i in range(20_000_000): s += i\nprint(time.perf_counter() - t)"
)


def python_loop_seconds() -> float:
    """Seconds a module-level pure-Python loop of 20M integer additions takes in a fresh
    interpreter: a reference of the machine's speed on the day (0.9 s on a fast day here,
    1.8 s on a slow one)."""
    out = subprocess.run([sys.executable, "-c", _LOOP], capture_output=True, text=True, check=True)
    return float(out.stdout)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def bench_cluster(
    prefix: str, worker_memory: str = "3g", worker_cores: int = 4, workers: int = 2,
    bare: bool | None = None,
) -> tuple[Path, Settings, LocalCluster]:  # fmt: skip
    """A fresh state root, settings on free ports (the dashboard's too), and a cluster of
    ``workers`` (not yet started).

    Four cores a worker (Spark's slots, not the machine's), as in ``config/cluster/local.yaml``:
    a warm standby then gets its executors beside the running version. ``bare`` (the
    ``--bare`` flag of :func:`ops_stack.add_stack_args`) is said on the second line, under the
    machine's speed: whether the benchmark runs beside the stack or bare (None: a benchmark
    that has no such choice, nothing said)."""
    print(f"machine: 20M Python additions in {python_loop_seconds():.2f} s", flush=True)
    if bare is not None:
        print("run: bare (--bare)" if bare else
              "run: beside the stack (Airflow, the dashboard and describe-ahead, as `streamops "
              "up` runs them; --bare: nothing beside)", flush=True)  # fmt: skip
    # SIGTERM (timeout, pkill) ends the benchmark through its finally blocks, which stop the
    # cluster and the simulators: Python's default would leave every JVM running
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    root = Path(tempfile.mkdtemp(prefix=prefix))
    settings = Settings.from_env(
        {}, state_root=str(root), master_port=free_port(), master_webui_port=free_port(),
        rest_port=free_port(), dashboard_port=free_port(),
    )  # fmt: skip
    profile = ClusterProfile.from_mapping(
        {"workers": workers, "worker_cores": worker_cores, "worker_memory": worker_memory,
         "worker_webui_port_base": 0}
    )  # fmt: skip
    return root, settings, LocalCluster(settings, profile)


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank), NaN when there are none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _machine_jiffies() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from ``/proc/stat``."""
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def cpu_since() -> Callable[[], float]:
    """The machine's CPU use from now on: the function returned gives its share (1.0 = every
    core busy) between this call and its own."""
    busy0, total0 = _machine_jiffies()

    def share() -> float:
        busy, total = _machine_jiffies()
        return (busy - busy0) / max(1.0, total - total0)

    return share


def cpu_ticks(stat: Path) -> int:
    """utime + stime of a ``/proc/<pid>/stat`` (or a thread's ``task/<tid>/stat``)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def processes() -> dict[int, tuple[str, int]]:
    """Per running process: its command line and its CPU ticks so far (:func:`cpu_ticks`)."""
    out = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out[int(proc.name)] = (cmd, cpu_ticks(proc / "stat"))
        except (OSError, IndexError):  # ended meanwhile
            pass
    return out


def stage_load(rows: list[dict[str, Any]], span: float) -> tuple[float, list[float], float]:
    """Of one stage's batches committed in a window of ``span`` seconds: input rows per
    second, the batches' durations (s), and the share of the window its batches ran (its busy
    share, :func:`measures.headroom_estimate`)."""
    n = sum(h.get("num_input_rows") or 0 for h in rows)
    durs = [h["batch_duration_ms"] / 1000 for h in rows if h.get("batch_duration_ms")]
    return n / span, durs, sum(durs) / span


class HeadSampler(threading.Thread):
    """What each source had offered so far (``heads``: a name and how to read it, e.g. a
    simulator's ``emitted``), sampled every ``every`` seconds until :meth:`stop`: the
    ``(time, head)`` samples :func:`measures.head_at` interpolates."""

    def __init__(self, heads: dict[str, Callable[[], float]], every: float = 0.25) -> None:
        super().__init__(name="head-sampler", daemon=True)
        self.heads, self.every = heads, every
        self.samples: dict[str, list[tuple[float, float]]] = {name: [] for name in heads}
        self._stop_event = threading.Event()
        self._sample()

    def _sample(self) -> None:
        for name, read in self.heads.items():
            self.samples[name].append((time.time(), float(read())))

    def run(self) -> None:
        while not self._stop_event.wait(self.every):
            self._sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join()
        self._sample()


_ALPHA_FILE = re.compile(r"pings-(\d+)\.csv$")


def committed_position(record: dict[str, Any], key: str) -> float | None:
    """Where a batch (a ``status-history`` record) left the source whose end offset has
    ``key``: its ``sequence`` (fleetsim-beta, the trades producer) or, for ``file``
    (fleetsim-alpha), the number of its last file."""
    for src in record.get("sources") or []:
        end = src.get("end_offset")
        value = end.get(key) if isinstance(end, dict) else None
        if value is None:
            continue
        if key == "file":
            found = _ALPHA_FILE.search(str(value))
            return float(found.group(1)) if found else None
        return float(value)
    return None


def backlogs(
    window: list[dict[str, Any]], stages: Iterable[str],
    sources: dict[str, tuple[str, list[tuple[float, float]], float]],
) -> list[Backlog | None]:  # fmt: skip
    """Per stage and source, its :class:`measures.Backlog` over the ``window``'s batches (the
    history records committed in it). ``sources``: per source name, the key of its position in
    an end offset (:func:`committed_position`), its head samples (:class:`HeadSampler`) and
    its offered rate, in the same units."""
    out = []
    for stage in stages:
        mine = [h for h in window if h["stage"] == stage]
        longest = max((h.get("batch_duration_ms") or 0 for h in mine), default=0) / 1000
        for name, (key, heads, rate) in sources.items():
            commits = [(float(h["last_batch_at"]), p) for h in mine
                       if (p := committed_position(h, key)) is not None]  # fmt: skip
            out.append(backlog(stage, name, heads, commits, rate, longest))
    return out


def discard(root: Path, keep: bool = False) -> None:
    """Remove a benchmark's state root (hundreds of MB of checkpoints, logs and class
    archives), unless ``keep`` or ``STREAMOPS_BENCH_KEEP`` is set."""
    if keep or os.environ.get("STREAMOPS_BENCH_KEEP"):
        print(f"kept {root}", flush=True)
        return
    shutil.rmtree(root, ignore_errors=True)


NO_HOLDBACK = {"beta_min_records_per_batch": 0, "alpha_min_files_per_batch": 0}
"""fleet-pings' args that hold no stream back at its sources: a slow stream held back pauses
up to ``max_batch_delay`` between batches by design, which a gap (:class:`measures.Gap`)
would count. The benchmarks that measure a gap run without it."""


def fleet_spec(
    file: str,
    job: str,
    trigger: str | None,
    data: dict[str, object],
    conf: dict[str, str] | None = None,
) -> JobSpec:
    """A spec of ``config/jobs/<file>`` renamed ``job``, with ``trigger`` (None: the spec's),
    its args updated with ``data`` (where the simulators and the store are) and its conf with
    ``conf`` (an empty value drops a key)."""
    spec = load_spec(PROJECT_ROOT / "config" / "jobs" / file)
    merged = {k: v for k, v in {**spec.conf, **(conf or {})}.items() if v != ""}
    update = {"name": job, "trigger_interval": trigger or spec.trigger_interval,
              "args": {**spec.args, **data}, "conf": merged}  # fmt: skip
    return spec.model_copy(update=update)


# --- the batches a job committed (``<state>/jobs/<job>/status-history.jsonl``) -----------


def batch_history(settings: Settings, job: str) -> list[dict[str, Any]]:
    """Every batch ``job`` committed, in order: one record per query progress of a stage
    (``stage``, ``version``, ``driver_id``, ``last_batch_at``, its rows and offsets)."""
    path = settings.layout.status_history(job)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_batches(
    settings: Settings, job: str, after: float, version: str | None = None
) -> dict[str, float]:
    """Per stage (of ``version``, or any), when it committed its first batch after ``after``."""
    out: dict[str, float] = {}
    for rec in batch_history(settings, job):
        at = float(rec.get("last_batch_at") or 0)
        if at > after and (version is None or rec.get("version") == version):
            out.setdefault(rec["stage"], at)
    return out


def wait_batches_after(
    settings: Settings, job: str, after: float, stages: set[str], timeout: float = 180
) -> float:
    """Wait until every one of ``stages`` committed a batch after ``after``; seconds from
    ``after`` to the last of those first batches."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = first_batches(settings, job, after)
        if stages <= set(found):
            return max(found[s] for s in stages) - after
        time.sleep(0.2)
    raise SystemExit(f"no batch of every stage of {job} within {timeout:.0f}s")


def batch_times(settings: Settings, job: str, stages: Iterable[str] = ()) -> dict[str, list[float]]:
    """Per stage (at least ``stages``, empty when it committed none), its batches' commit
    times in order."""
    out: dict[str, list[float]] = {stage: [] for stage in stages}
    for rec in batch_history(settings, job):
        out.setdefault(rec["stage"], []).append(float(rec.get("last_batch_at") or 0))
    return {stage: sorted(times) for stage, times in out.items()}


def gaps_across(settings: Settings, job: str, t0: float, t1: float, stages: Iterable[str]) -> Gap:
    """The :class:`measures.Gap` of ``stages`` of ``job`` across ``[t0, t1]`` (an operation's
    start and end), from the batches they committed. Every stage must have committed a batch
    after ``t1`` (:func:`wait_batches_after`)."""
    times = batch_times(settings, job, stages)
    try:
        return Gap.across({s: times.get(s, []) for s in stages}, t0, t1)
    except ValueError as exc:
        raise SystemExit(f"{job}: {exc}") from None
