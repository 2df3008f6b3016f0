"""Benchmark: the cluster restart to the other jar release under a running fleet-pings job.

Starts its own local cluster (2 workers of 4 cores: a warm standby gets its executors beside
the running driver, as in ``bench_upgrade.py``), beside the stack ``streamops up`` starts
(Airflow, the dashboard, describe-ahead; ``--bare``: nothing beside), both simulators at
``--rate`` pings/s each with journals, and fleet-pings v1 with a 1 s trigger; after
``--settle`` seconds of steady running, runs the whole cluster restart procedure to
``--release`` (default: whichever of r1 and r2 is not active) through
``streamops.procedures.cluster_restart.restart(settings, release, path=--path)``: ``warm``
switches the jar release and hands each job over to a warm standby without stopping the
cluster, ``full`` stops everything, switches, starts and restores each job from its
savepoint, ``auto`` lets the procedure choose. Then it prints:

- the path that ran (the returned intent's), the procedure's wall time and its phases (seconds
  from its start, from the intent's steps);
- the gap (``measures.Gap``, from ``status-history.jsonl``): per stage, the longest interval
  without a committed batch across the restart (from its last batch before the restart to
  its first after it, every interval between consecutive batches), the longest of them, and
  beside it the figure of the stage that committed first after the restart. The job runs
  without holding a slow stream back at its sources (``fleet_workload``), whose pauses by
  design the gap would count;
- the classpath release each job reports afterwards (``classpath_release`` of its status);
- the oracle: the simulators stop, the job catches up, and the sinks are compared with the
  batch recomputation from the journals: lost / extra / different.

    .venv/bin/python tests/perf/bench_cluster_restart.py
    .venv/bin/python tests/perf/bench_cluster_restart.py --path full --settle 15 --bare
"""

from __future__ import annotations

import argparse
import logging
import time

from fleet_workload import FleetWorkload
from harness import bench_cluster, discard, gaps_across, wait_batches_after
from ops_stack import add_stack_args, beside_stack

from streamops.cluster.releases import ReleaseStore
from streamops.jobs import JobRegistry
from streamops.procedures import cluster_restart
from streamops.settings import Settings
from streamops.stack.class_training import train_class_archives
from streamops.world.submit import submit_job

JOB = "fleet-bench-restart"
RELEASES = ("r1", "r2")


def phases(intent: cluster_restart.RestartIntent) -> str:
    """The intent's phases, each once when it changed, in seconds from the first."""
    steps = intent.steps
    if not steps:
        return "none recorded"
    start, out, last = float(steps[0]["at"]), [], None
    for step in steps:
        if step["phase"] != last:
            out.append(f"{step['phase']} {float(step['at']) - start:.1f}")
            last = step["phase"]
    return ", ".join(out)


def run_restart(settings: Settings, release: str, path: str, stages: set[str]) -> list[str]:
    """The restart to ``release`` on the running job: its lines of figures."""
    before = ReleaseStore(settings).active()
    print(f"cluster restart {before} → {release}, path {path} asked ...", flush=True)
    t0 = time.time()
    intent = cluster_restart.restart(settings, release, path=path)
    t1 = time.time()
    wait_batches_after(settings, JOB, t1, stages)  # every stage's first batch after it
    gap = gaps_across(settings, JOB, t0, t1, stages)
    registry = JobRegistry(settings)
    releases = {v.name: v.status.classpath_release for v in registry.list() if v.is_live}
    return [
        f"restart {before} → {release}: path {intent.path} (asked {path}), "
        f"{t1 - t0:.1f} s (phases, s from its start: {phases(intent)})",
        gap.describe(),
        "classpath release after: "
        + (", ".join(f"{job} {rel or 'unknown'}" for job, rel in sorted(releases.items()))
           or "no job runs"),
    ]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=100.0, help="pings/s of each simulator")
    ap.add_argument("--settle", type=float, default=30.0, help="steady seconds before the restart")
    ap.add_argument("--path", choices=("auto", "warm", "full"), default="auto",
                    help="the restart's path: a warm standby per job (the cluster not stopped), "
                         "the full stop and start, or the procedure's choice")  # fmt: skip
    ap.add_argument("--release", help="the jar release to switch to (config/jars/releases; "
                    "default: whichever of r1 and r2 is not active)")  # fmt: skip
    ap.add_argument("--no-class-archives", dest="class_archives", action="store_false",
                    help="do not train the cluster's class archives first (JVMs load every "
                         "class from jars)")  # fmt: skip
    add_stack_args(ap)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    root, settings, cluster = bench_cluster("bench-restart-", "3g", workers=2, bare=args.bare)
    fleet = FleetWorkload.create(root / "work", args.rate)
    lines: list[str] = []
    try:
        cluster.start()
        if args.class_archives:
            print(train_class_archives(settings).describe(), flush=True)
        with beside_stack(settings, args.bare):
            fleet.start()
            spec = fleet.spec(JOB)  # holding no stream back (its pauses: not the restart's)
            submit_job(spec, settings, wait_healthy=600)
            stages = set(JobRegistry(settings).view(JOB).stages)
            active = ReleaseStore(settings).active()
            release = args.release or next(r for r in RELEASES if r != active)
            time.sleep(args.settle)
            lines += run_restart(settings, release, args.path, stages)
            print("\n".join(lines), flush=True)
            time.sleep(5)
            lines.append(fleet.check(settings, JOB))
    finally:
        fleet.stop()
        registry = JobRegistry(settings)
        try:
            if cluster.status().master_alive and registry.view(JOB).is_live:
                registry.cancel(JOB)
        finally:
            cluster.stop()
            discard(root)
    print(
        f"\ncluster restart benchmark ({args.rate:.0f} pings/s per source, trigger 1 s, 2 "
        f"workers, {'bare' if args.bare else 'beside the stack'}):"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
