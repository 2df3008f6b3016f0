"""Benchmark: recovery of fleet-pings after faults, and lost/duplicated against the oracle.

Starts its own local cluster (2 workers), beside the stack ``streamops up`` starts (Airflow,
the dashboard, describe-ahead; ``--bare``: nothing beside, as before), both simulators at
``--rate`` pings/s, fleet-pings v1; then, one after the other on the same job, with
``--settle`` seconds of steady running before each:

- ``node``: kill -9 of the node that hosts the driver: the worker daemon, the driver and the
  executors on it (the worker's whole process group). The worker is started again afterwards
  (as an operator would) so that the next fault finds two;
- ``executor``: kill -9 of one executor JVM of the job;
- ``driver``: kill -9 of the driver's JVM alone (its Python child with it);
- ``master``: kill -9 of the master; the job must go on committing meanwhile; the master is
  started again and the recovery is when it knows the driver again (FILESYSTEM recovery);
- ``stall``: fleetsim-beta (a process of its own) frozen with SIGSTOP for ``--stall``
  seconds: detected when the job reports the source degraded; the job must go on committing
  (alpha flows); recovered when beta's next records are committed after the thaw.

With ``--standby hot`` the job runs with a hot standby (``standby: hot``) on a cluster of three
workers (its cores), armed on another worker than the driver before each fault; the new
standby armed after a fault is printed too.

For each it prints when the fault was detected (the master shows the worker DEAD or the
driver relaunched; a driver killed alone: its worker runs a new JVM of it; for an executor,
the job's stages go on), the recovery: seconds from the kill to every stage's next committed
batch, and the gap (``measures.Gap``): per stage the longest time it committed nothing across
the fault (from its last batch before it to its first after it; for the master and the
stall, after it ended), the longest of them, and beside it the figure of the stage that
committed first after it. The job holds no stream back at its sources (``fleet_workload``),
whose pauses by design the gap would count. At the end the simulators stop, the job catches
up and the sinks are compared with the batch recomputation: lost / extra / different.

    .venv/bin/python tests/perf/bench_failover.py --faults node,executor,driver,master,stall
    .venv/bin/python tests/perf/bench_failover.py --rate 100 --faults node,driver --standby hot

``--timeline`` prints, after each node or driver kill, the relaunched driver's start-up steps
and its executors' (their log lines, Spark's at INFO, with seconds from the kill), each stage's
first batch, and the machine's CPU use second by second (``/proc/stat``);
``--conf key=value`` (repeatable) sets a Spark property of the job, to compare settings.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from fleet_workload import FleetWorkload
from harness import (
    bench_cluster,
    discard,
    first_batches,
    gaps_across,
    wait_batches_after,
)
from ops_stack import add_stack_args, beside_stack
from support.beta_process import BetaProcess

from streamops.agent.processes import kill_agent
from streamops.cluster.client import MasterClient
from streamops.cluster.daemons import MASTER_NAME
from streamops.cluster.submission import submit_hot_standby
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.stack.class_training import train_class_archives
from streamops.stack.local_cluster import LocalCluster
from streamops.state.job_status import read_status
from streamops.state.layout import read_json
from streamops.world.submit import submit_job

JOB = "fleet-bench-failover"


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def driver_jvm(settings: Settings) -> tuple[int, str]:
    """The pid of the job's driver JVM (a DriverWrapper) and the worker it runs under."""
    view = JobRegistry(settings).view(JOB)
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    for line in ps.splitlines():
        if "DriverWrapper" in line and view.driver_id and view.driver_id in line:
            return int(line.split()[0]), str(view.worker)
    raise SystemExit(f"no driver JVM of {view.driver_id} found")


def executor_jvm(settings: Settings) -> int:
    app = JobRegistry(settings).view(JOB).status.app_id
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    for line in ps.splitlines():
        if "CoarseGrainedExecutorBackend" in line and app and app in line:
            return int(line.split()[0])
    raise SystemExit(f"no executor of {app} found")


TIMELINE_MARKS = (
    "spark_jobs", "streamops", "SparkContext: Running Spark", "Successfully started service",
    "Connecting to master", "Connected to Spark cluster", "Granted executor",
    "Registered executor", "Executor added", "Started SparkUI", "BlockManagerMaster: Registered",
    "Starting new streaming query", "Starting job", "Committed offsets",
    "Starting Python worker", "StandaloneSchedulerBackend", "state store",
    "Successfully registered with driver", "Got assigned task", "Finished task", "Times: total",
)  # fmt: skip


class CpuSampler(threading.Thread):
    """The machine's busy share of its cores, sampled every half second (``/proc/stat``)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float]] = []  # (time, busy share since the last)

    @staticmethod
    def _ticks() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields) - idle, sum(fields)

    def run(self) -> None:
        busy, total = self._ticks()
        while True:
            time.sleep(0.5)
            b, t = self._ticks()
            self.samples.append((time.time(), (b - busy) / max(1, t - total)))
            busy, total = b, t

    def by_second(self, t0: float, until: float) -> str:
        per: dict[int, list[float]] = {}
        for at, share in self.samples:
            if t0 <= at <= until + 0.5:
                per.setdefault(int(at - t0), []).append(share)
        return " ".join(f"{100 * sum(v) / len(v):.0f}" for _, v in sorted(per.items()))


CPU = CpuSampler()


def timeline(root: Path, settings: Settings, t0: float, until: float) -> list[str]:
    """The relaunched driver's log lines between the kill and ``until``, seconds from the kill."""
    view = JobRegistry(settings).view(JOB)
    driver, app = view.driver_id, view.status.app_id
    files = [p for name in ("stderr", "stdout") for p in root.glob(f"**/{driver}/{name}")]
    files += sorted(root.glob(f"**/{app}/*/stderr")) if app else []  # its executors
    out = [f"          timeline of {driver} (logs: {', '.join(map(str, files)) or 'none'}):"]
    found = []
    for path, line in [(p, ln) for p in files for ln in p.read_text(errors="replace").splitlines()]:
        try:
            stamp = time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
            at = stamp + int(line[20:23]) / 1000 - t0
        except ValueError:
            continue
        if -1 <= at <= until - t0 + 0.5 and any(m in line for m in TIMELINE_MARKS):
            who = "exec " + path.parent.name if path.parent.name.isdigit() else "driver"
            found.append((at, f"          {at:6.2f} s  {who:7s} {line[24:][:140]}"))
    out += [text for _, text in sorted(found)]
    out.append(f"          machine CPU busy %, second by second: {CPU.by_second(t0, until)}")
    for stage, at in sorted(first_batches(settings, JOB, t0).items(), key=lambda kv: kv[1]):
        out.append(f"          {at - t0:6.2f} s  first batch of stage {stage} committed")
    return out


def wait_recovered(settings: Settings, t0: float, stages: set[str]) -> float:
    """Seconds from ``t0`` (the fault) to every stage's next committed batch."""
    return wait_batches_after(settings, JOB, t0, stages)


def detect(
    settings: Settings, t0: float, old_driver: str | None, worker: str | None,
    old_pid: int | None = None,
) -> float:  # fmt: skip
    """Seconds until the fault is seen: the master shows the worker DEAD or the driver under
    another id, or (``old_pid``: a driver killed alone, which its worker relaunches in place
    under the same id) a new JVM of the driver runs."""
    client = MasterClient(settings)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = client.state()
        dead = any(w.get("state") == "DEAD" and f"{w.get('host')}:{w.get('port')}" == worker
                   for w in state.get("workers") or [])  # fmt: skip
        moved = all(d.get("id") != old_driver for d in state.get("activedrivers") or [])
        if dead or moved or (old_pid is not None and relaunched(old_driver, old_pid)):
            return time.time() - t0
        time.sleep(0.05)
    return float("nan")


def relaunched(driver: str | None, old_pid: int) -> bool:
    """Whether a JVM of ``driver`` other than ``old_pid`` runs."""
    ps = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return any(
        "DriverWrapper" in line and driver and driver in line and int(line.split()[0]) != old_pid
        for line in ps.splitlines()
    )


def taken_over(settings: Settings, t0: float, old_driver: str | None) -> float:
    """Seconds until the job's status says the standby took it over from ``old_driver``."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = read_status(settings.layout, JOB)
        if status.took_over_from == old_driver and status.driver_id != old_driver:
            return time.time() - t0
        time.sleep(0.05)
    return float("nan")


def beta_state(settings: Settings) -> str:
    status = read_status(settings.layout, JOB)
    return str((status.sources_state.get("fleetsim-beta") or {}).get("state"))


def beta_committed(settings: Settings) -> int:
    """The lowest beta sequence every stage has committed (from the status)."""
    seqs = [
        int(src.end_offset.get("sequence") or 0)
        for st in JobRegistry(settings).view(JOB).stages.values()
        for src in st.sources
        if isinstance(src.end_offset, dict) and "sequence" in src.end_offset
    ]
    return min(seqs) if seqs else 0


def stall(settings: Settings, beta: BetaProcess, seconds: float, stages: set[str]) -> str:
    """Freeze beta for ``seconds``: when the job said so, when beta's new records were
    committed after the thaw, and the gap across the freeze (alpha flows on meanwhile)."""
    t0 = time.time()
    beta.freeze()
    detected = float("nan")
    while time.time() - t0 < seconds:
        if detected != detected and beta_state(settings) == "degraded":
            detected = time.time() - t0
        time.sleep(0.1)
    seen = beta_committed(settings)
    thawed = time.time()
    beta.thaw()
    deadline = time.monotonic() + 120
    while beta_committed(settings) <= seen and time.monotonic() < deadline:
        time.sleep(0.1)
    read_again = time.time() - thawed
    wait_batches_after(settings, JOB, thawed, stages)
    gap = gaps_across(settings, JOB, t0, thawed, stages)
    return (
        f"{'stall':9s} detected {detected:5.1f} s  beta read again {read_again:4.1f} s after the "
        f"thaw  {gap.describe()}"
    )


def fault(
    cluster: LocalCluster, settings: Settings, kind: str, stages: set[str], show: Path | None
) -> str:
    view = JobRegistry(settings).view(JOB)
    t0 = time.time()
    detected = float("nan")
    if kind == "node":
        pid, worker = driver_jvm(settings)
        group = os.getpgid(pid)  # a worker leads its process group: its drivers and executors
        name = next(n for n, r in cluster.daemons().items() if r.pgid == group)
        kill_agent(settings, name)  # a lost host: its agent would start the worker again
        t0 = time.time()
        os.killpg(group, signal.SIGKILL)
        detected = (taken_over(settings, t0, view.driver_id) if view.standby
                    else detect(settings, t0, view.driver_id, worker))  # fmt: skip
        recovery = wait_recovered(settings, t0, stages)
        if show:
            print("\n".join(timeline(show, settings, t0, t0 + recovery)), flush=True)
        cluster.add_worker(name)  # back to two workers for the next fault
    elif kind == "driver":
        pid, worker = driver_jvm(settings)
        t0 = time.time()
        for child in children(pid):
            os.kill(child, signal.SIGKILL)
        os.kill(pid, signal.SIGKILL)
        detected = (taken_over(settings, t0, view.driver_id) if view.standby
                    else detect(settings, t0, view.driver_id, None, old_pid=pid))  # fmt: skip
        recovery = wait_recovered(settings, t0, stages)
        if show:
            print("\n".join(timeline(show, settings, t0, t0 + recovery)), flush=True)
    elif kind == "master":
        kill_agent(settings, MASTER_NAME)  # its host lost: the operator starts it again
        t0 = time.time()
        os.kill(cluster.daemons()[MASTER_NAME].pid, signal.SIGKILL)
        during = wait_recovered(settings, t0 + 1, stages)  # batches while it is down
        cluster.start()
        back = time.time()
        recovery = known_again(settings, view.driver_id) - t0
        wait_batches_after(settings, JOB, back, stages)
        gap = gaps_across(settings, JOB, t0, back, stages)
        return (f"{kind:9s} batches went on ({during:.1f} s after)  known again "
                f"{recovery:5.1f} s  {gap.describe()}")  # fmt: skip
    else:
        t0 = time.time()
        os.kill(executor_jvm(settings), signal.SIGKILL)
        recovery = wait_recovered(settings, t0, stages)
    gap = gaps_across(settings, JOB, t0, t0, stages)  # a kill: an operation of no length
    line = f"{kind:9s} detected {detected:5.1f} s  recovered {recovery:5.1f} s  {gap.describe()}"
    if view.standby:
        took = JobRegistry(settings).view(JOB).status.took_over_from
        line += f"  (taken over by the standby: {took == view.driver_id})"
    return line


def known_again(settings: Settings, driver: str | None, timeout: float = 180) -> float:
    """When the restarted master lists ``driver`` as the job's live driver again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            view = JobRegistry(settings).view(JOB)
            if view.is_live and view.driver_id == driver and view.driver_state == "RUNNING":
                return time.time()
        except Exception:  # the master is still starting
            pass
        time.sleep(0.2)
    raise SystemExit(f"the restarted master did not know driver {driver} within {timeout:.0f}s")


def armed_apart(settings: Settings, spec: object, since: float, timeout: float = 300) -> float:
    """Wait until the hot standby is armed (after ``since``) on another worker than the
    driver, replacing one placed beside it; when it was armed."""
    registry = JobRegistry(settings)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = read_json(settings.layout.hot_standby_file(JOB)) or {}
        placed = {d.id: d.worker for d in registry.client.active_drivers()}
        standby, primary = doc.get("driver_id"), registry.view(JOB).driver_id
        if standby in placed and float(doc.get("armed_at") or 0) > since:
            if placed[standby] != placed.get(primary):
                return float(doc["armed_at"])
            registry.kill_driver(JOB, standby)
            submit_hot_standby(spec, settings)  # type: ignore[arg-type]
            since = time.time()
        time.sleep(0.5)
    raise SystemExit(f"no hot standby armed apart from the driver within {timeout:.0f}s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=100.0, help="pings/s of each simulator")
    ap.add_argument("--faults", default="node,executor,driver")
    ap.add_argument("--settle", type=float, default=20.0, help="steady seconds before a fault")
    ap.add_argument("--standby", choices=("none", "hot"), default="none")
    ap.add_argument("--stall", type=float, default=30.0, help="seconds beta stays frozen")
    ap.add_argument("--timeline", action="store_true", help="print a relaunch's start-up steps")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property of the job (repeatable; an empty value drops it)",
    )
    ap.add_argument("--no-class-archives", dest="class_archives", action="store_false",
                    help="do not train the cluster's class archives first (JVMs load every "
                         "class from jars)")  # fmt: skip
    add_stack_args(ap)
    args = ap.parse_args()
    conf = dict(c.split("=", 1) for c in args.conf)
    if args.timeline:
        conf.setdefault("spark.log.level", "INFO")
        conf.setdefault("spark.executor.syncLogLevel.enabled", "true")
        CPU.start()
    logging.basicConfig(level=logging.WARNING)
    workers = 3 if args.standby == "hot" else 2
    root, settings, cluster = bench_cluster("bench-failover-", "3g", workers=workers,
                                            bare=args.bare)  # fmt: skip
    fleet = FleetWorkload.create(root / "work", args.rate)
    lines = []
    try:
        cluster.start()
        if args.class_archives:
            print(train_class_archives(settings).describe(), flush=True)
        with beside_stack(settings, args.bare):
            fleet.start()
            spec = fleet.spec(JOB, conf).model_copy(update={"standby": args.standby})
            submit_job(spec, settings, wait_healthy=600)
            stages = set(JobRegistry(settings).view(JOB).stages)
            since = 0.0
            for kind in args.faults.split(","):
                if args.standby == "hot":
                    armed = armed_apart(settings, spec, since)
                    if since:
                        print(f"          a new standby armed {armed - since:.1f} s after the "
                              "fault")  # fmt: skip
                time.sleep(args.settle)
                since = time.time()
                line = (stall(settings, fleet.beta, args.stall, stages) if kind.strip() == "stall"
                        else fault(cluster, settings, kind.strip(), stages,
                                   root if args.timeline else None))  # fmt: skip
                print(line, flush=True)
                lines.append(line)
            time.sleep(5)
            lines.append(fleet.check(settings, JOB))
    finally:
        fleet.stop()
        registry = JobRegistry(settings)
        try:
            if registry.view(JOB).is_live:
                registry.cancel(JOB)
        finally:
            cluster.stop()
            discard(Path(root))
    print(
        f"\nfailover benchmark ({args.rate:.0f} pings/s per source, trigger 1 s, {workers} "
        f"workers, standby {args.standby}):"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
