"""Benchmark: the processing gap of a v1 → v2 upgrade of fleet-pings, and lost/duplicated.

Starts its own local cluster, both simulators at ``--rate`` pings/s each, fleet-pings v1;
upgrades to v2 while data flows; ``--after`` seconds later stops the simulators (beta goes on
serving) and waits until v2 has read everything; prints:

- the gap: savepoint request → first batch committed by v2 (from status-history.jsonl),
  with the savepoint-with-cancel part, and the time until every stage of v2 committed one;
- lost / duplicated / different rows in ``vehicles`` and ``vehicle_stats`` against the
  batch recomputation from the simulators' journals.

    .venv/bin/python tests/perf/bench_upgrade.py --rate 200 --mode both
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from harness import bench_cluster, discard, fleet_spec
from support.oracle import compare_vehicles, compare_windows, latest_per_vin, tumbling_windows

from spark_jobs.sinks import store
from streamops.jobs import JobRegistry
from streamops.procedures.submit import submit_job
from streamops.procedures.upgrade import upgrade
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, BetaSimulator, read_journal
from streamops.sim.journal import valid_pings
from streamops.stack.class_training import train_class_archives


def first_batches(history: Path, version: str, after: float) -> dict[str, float]:
    """Per stage of ``version``, when it committed its first batch after ``after``."""
    out: dict[str, float] = {}
    for line in history.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("version") == version and rec["last_batch_at"] >= after:
            out.setdefault(rec["stage"], float(rec["last_batch_at"]))
    return out


def wait_caught_up(registry: JobRegistry, job: str, alpha_dir: Path, beta_last: int) -> None:
    """Wait until every stage has read the last alpha file and beta sequence."""
    final = {"file": max(p.name for p in alpha_dir.glob("pings-*.csv")), "sequence": beta_last}
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        stages = registry.view(job).stages.values()
        seen = [
            {
                k: v
                for src in st.sources
                if isinstance(src.end_offset, dict)
                for k, v in src.end_offset.items()
            }
            for st in stages
        ]
        if seen and all(s.get("file") == final["file"] and s.get("sequence") == beta_last
                        for s in seen):  # fmt: skip
            return
        time.sleep(1)
    raise SystemExit(f"{job} did not read up to {final} within 300 s")


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
        args = {"alpha_dir": str(work / "alpha"), "beta_url": beta.url, "store_url": url}
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
        # the savepoint request happened savepoint_s + start_s before upgrade() returned
        t0 = time.time() - outcome.start_s - outcome.savepoint_s
        time.sleep(after)
        alpha.stop()
        beta.finish()  # the server keeps answering until the end
        firsts = first_batches(settings.layout.status_history(job), "2", t0)
        wait_caught_up(registry, job, work / "alpha", beta.emitted)
        records = read_journal(work / "a.jsonl") + read_journal(work / "b.jsonl")
        good = valid_pings(records)
        engine = store.engine_for(url)
        veh = compare_vehicles(latest_per_vin(good), store.read_table(engine, store.vehicles))
        win = compare_windows(tumbling_windows(good), store.read_table(engine, store.vehicle_stats))
        gap = f"{min(firsts.values()) - t0:6.1f} s" if firsts else "  n/a"
        every = f"{max(firsts.values()) - t0:.1f} s" if firsts else "n/a"
        return (
            f"run {i} ({'warm' if warm else 'cold'}): gap {gap} (savepoint+cancel "
            f"{outcome.savepoint_s:.1f} s; every stage's first batch {every}; upgrade() "
            f"returned {outcome.start_s:.1f} s after the savepoint; request at {t0:.1f}); "
            f"vehicles {len(veh.missing)} lost / "
            f"{len(veh.unexpected)} extra / {len(veh.different)} different; windows "
            f"{len(win.missing)} lost / {len(win.unexpected)} extra / {len(win.different)} "
            f"different (of {win.expected})"
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
    args = ap.parse_args()
    conf = dict(item.split("=", 1) for item in args.conf)
    logging.basicConfig(level=logging.WARNING)
    root, settings, cluster = bench_cluster("bench-upgrade-", "3g")
    try:
        cluster.start()
        if args.class_archives:
            training = train_class_archives(settings)
            print(training.describe(), flush=True)
        modes = [False, True] if args.mode == "both" else [args.mode == "warm"]
        lines = [
            run_once(
                settings, root, args.rate, args.after, i * len(modes) + j, warm, args.event_log,
                conf,
            )
            for i in range(args.runs)
            for j, warm in enumerate(modes)
        ]
    finally:
        cluster.stop()
        discard(root, keep=args.event_log)  # the event logs are in it
    print("\nupgrade benchmark (2 workers, 2-core machine); warm = v2 driver up before v1 stops")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
