"""Benchmark: the processing gap of a v1 → v2 upgrade of fleet-pings, and lost/duplicated.

Starts its own local cluster, beside the stack ``streamops up`` starts (Airflow, the
dashboard, describe-ahead; ``--bare``: nothing beside, as before), both simulators at
``--rate`` pings/s each, fleet-pings v1; upgrades to v2 while data flows; ``--after``
seconds later stops the simulators (beta goes on serving) and waits until v2 has read
everything; prints:

- the gap (``measures.Gap``, from status-history.jsonl): per stage v1 and v2 both run, the
  longest time it committed nothing across the upgrade (from its last batch before the
  savepoint request to its first after ``upgrade()`` returned, every interval between), the
  longest of them, and beside it the figure of the stage that committed first after it;
  with the savepoint-with-cancel part, and the time from the request until every stage of v2
  (its new ones too) committed a batch. The job runs without holding a slow stream back at
  its sources (``harness.NO_HOLDBACK``), whose pauses by design the gap would count;
- lost / duplicated / different rows in ``vehicles`` and ``vehicle_stats`` against the
  batch recomputation from the simulators' journals.

    .venv/bin/python tests/perf/bench_upgrade.py --rate 200 --mode both
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from fleet_workload import oracle_text, wait_caught_up
from harness import (
    NO_HOLDBACK,
    batch_history,
    bench_cluster,
    discard,
    first_batches,
    fleet_spec,
    gaps_across,
    wait_batches_after,
)
from ops_stack import add_stack_args, beside_stack

from streamops.jobs import JobRegistry
from streamops.procedures.upgrade import upgrade
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, BetaSimulator
from streamops.stack.class_training import train_class_archives
from streamops.world.submit import submit_job


def run_once(
    settings: Settings, root: Path, rate: float, after: float, i: int, warm: bool,
    event_log: bool = False, conf: dict[str, str] | None = None,
) -> str:  # fmt: skip
    job = f"fleet-bench-up-{i}"
    work = root / job
    # data flows until `after` seconds after the upgrade, however long v1 and v2 take to start
    alpha = AlphaSimulator(work / "alpha", seed=i, rate=rate, journal=work / "a.jsonl")
    beta = BetaSimulator(port=0, seed=100 + i, rate=rate, journal=work / "b.jsonl")
    url = f"sqlite:///{work / 'fleet.db'}"
    registry = JobRegistry(settings)
    beta.start()
    alpha.start()
    try:
        args = {"alpha_dir": str(work / "alpha"), "beta_url": beta.url, "store_url": url,
                **NO_HOLDBACK}  # fmt: skip
        v2_conf = dict(conf or {})
        if event_log:  # Spark's event log of v2, to see where its first batches spend time
            (work / "events").mkdir(parents=True, exist_ok=True)
            v2_conf["spark.eventLog.enabled"] = "true"
            v2_conf["spark.eventLog.dir"] = str(work / "events")
        v1 = fleet_spec("fleet-pings.yaml", job, "1 second", args)
        v2 = fleet_spec("fleet-pings-v2.yaml", job, "1 second", args, v2_conf)
        submit_job(v1, settings, wait_healthy=600)
        time.sleep(15)
        outcome = upgrade(settings, job, v2, health_timeout=600, warm=warm)
        t1 = time.time()
        # the savepoint request happened savepoint_s + start_s before upgrade() returned
        t0 = t1 - outcome.start_s - outcome.savepoint_s
        time.sleep(after)
        ran = {v: {h["stage"] for h in batch_history(settings, job) if h.get("version") == v}
               for v in ("1", "2")}  # fmt: skip
        both = ran["1"] & ran["2"]  # the stages the gap is of: those that paused
        if not both:
            raise SystemExit(f"{job}: no stage of v1 committed a batch under v2")
        wait_batches_after(settings, job, t1, both)
        alpha.stop()
        beta.finish()  # the server keeps answering until the end
        firsts = first_batches(settings, job, t0, version="2")
        gap = gaps_across(settings, job, t0, t1, both)
        wait_caught_up(registry, job, work / "alpha", beta.emitted)
        oracle = oracle_text([work / "a.jsonl", work / "b.jsonl"], url)
        every = f"{max(firsts.values()) - t0:.1f} s" if firsts else "n/a"
        return (
            f"run {i} ({'warm' if warm else 'cold'}): {gap.describe()}; savepoint+cancel "
            f"{outcome.savepoint_s:.1f} s; every stage of v2 committed {every} after the "
            f"request; upgrade() returned {outcome.start_s:.1f} s after the savepoint; request "
            f"at {t0:.1f}; {oracle}"
        )
    finally:
        alpha.stop()
        beta.stop()
        if registry.view(job).is_live:
            registry.cancel(job)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=200.0, help="pings/s of each simulator")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument(
        "--after", type=float, default=30.0, help="seconds data goes on flowing after the upgrade"
    )
    ap.add_argument(
        "--mode",
        choices=("cold", "warm", "both"),
        default="both",
        help="start v2 after v1 stopped (cold), as a warm standby, or both",
    )
    ap.add_argument(
        "--event-log", action="store_true", help="write v2's Spark event log (keeps the state root)"
    )
    ap.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="Spark conf of v2 (repeatable; an empty value drops a key of the spec)",
    )  # fmt: skip
    ap.add_argument(
        "--no-class-archives", dest="class_archives", action="store_false",
        help="do not train the cluster's class archives first (JVMs load every class from jars)",
    )  # fmt: skip
    add_stack_args(ap)
    args = ap.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    logging.basicConfig(level=logging.WARNING)
    root, settings, cluster = bench_cluster("bench-upgrade-", "3g", bare=args.bare)
    try:
        cluster.start()
        if args.class_archives:
            training = train_class_archives(settings)
            print(training.describe(), flush=True)
        modes = [False, True] if args.mode == "both" else [args.mode == "warm"]
        with beside_stack(settings, args.bare):
            lines = [
                run_once(
                    settings, root, args.rate, args.after, i * len(modes) + j, warm,
                    args.event_log, conf,
                )
                for i in range(args.runs)
                for j, warm in enumerate(modes)
            ]  # fmt: skip
    finally:
        cluster.stop()
        discard(root, keep=args.event_log)  # the event logs are in it
    print("\nupgrade benchmark (2 workers, 2-core machine); warm = v2 driver up before v1 stops")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
