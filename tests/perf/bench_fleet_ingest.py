"""Benchmark: fleet-pings at a factor of its goal rate, and every ping's event-to-store latency.

Starts its own local cluster (2 workers, free ports, a temporary state root), beside the
stack ``streamops up`` starts (Airflow, the dashboard, describe-ahead; ``--bare``: nothing
beside), both simulators at ``--factor`` x ``--goal`` pings/s in total (``--rate`` sets the
total instead), and the job; measures for ``--seconds`` after a warm-up; stops everything.
Not part of the test suite. Prints (the definitions: ``measures.py``, and
``docs/performance.md``, "How the benchmarks measure"):

- offered and processed pings/s per stage (its input rows over the window, from
  ``status-history.jsonl``), each source's backlog at the stage's first and last commit of
  the window, and whether the job **kept up**: every stage processed at least 95 % of the
  offered rate and no backlog grew by more than a batch's worth;
- **the goal's ratio**, measured: the slowest stage's processed rate over the goal rate, and
  the goal (processed / offered >= ``--factor`` at the goal rate) met when the job kept up
  with ``--factor`` x the goal offered; beside it, as an estimate, 1 / the busiest stage's
  busy share;
- event-to-store latency p50/p90/p99 of **every** ping whose event time is in the window:
  ``updated_at`` (the store's clock when it wrote the row) of the first state of its VIN's
  ``vehicles`` row that holds it or a newer ping, minus its event time. A ping not written
  ``--grace`` seconds after the window is late: counted, and taken at the time it had waited
  then. The rows are polled every 0.25 s; a state overwritten between two polls counts its
  pings at the next state seen (later: the figure can only be too high);
- batch durations p50/p99 per stage; the machine's CPU use.

    .venv/bin/python tests/perf/bench_fleet_ingest.py --goal 20000 --seconds 60
    .venv/bin/python tests/perf/bench_fleet_ingest.py --factor 1 --seconds 60  # at the goal

``--conf key=value`` (repeatable) sets a Spark property of the job, to compare settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from harness import (
    HeadSampler,
    backlogs,
    batch_history,
    bench_cluster,
    cpu_since,
    discard,
    fleet_spec,
    pct,
    stage_load,
)
from measures import (
    Latencies,
    Version,
    covering_writes,
    goal_ratio,
    goal_verdict,
    head_at,
    headroom_estimate,
    keeping_up,
)
from ops_stack import add_stack_args, beside_stack
from sqlalchemy import select

from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, BetaSimulator
from streamops.sim.alpha import FILE_PATTERN
from streamops.world.submit import submit_job
from streamops_contract.sinks import store

STAGES = ("vehicles", "vehicle-stats-1m")


class RowSampler(threading.Thread):
    """Every state of each ``vehicles`` row seen, polled every ``every`` seconds: per VIN,
    ``(time, sequence, updated_at)`` in the order written (:data:`measures.Version`)."""

    def __init__(self, url: str, every: float = 0.25) -> None:
        super().__init__(name="row-sampler", daemon=True)
        self.engine, self.every = store.engine_for(url), every
        self.versions: dict[str, list[Version]] = {}
        self.last_poll = 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        t = store.vehicles
        query = select(t.c.vin, t.c.time, t.c.sequence, t.c.updated_at)
        while not self._stop_event.wait(self.every):
            began = time.time()
            with self.engine.connect() as conn:
                for vin, at, seq, upd in conn.execute(query):
                    seen = self.versions.setdefault(vin, [])
                    if not seen or seen[-1][:2] != (at, seq):
                        seen.append((at, seq, upd))
            self.last_poll = began  # what was written before it began is in what it read

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


def pings_in(alpha_dir: Path, beta: BetaSimulator, since: dict[str, float], t0: float,
             t1: float) -> Iterator[tuple[str, float, int]]:  # fmt: skip
    """``(vin, event time, sequence)`` of every ping both simulators emitted with its event
    time in ``[t0, t1]``: alpha's from its files (from file ``since["alpha"]``), beta's from
    its history (from sequence ``since["beta"]``)."""
    for path in sorted(alpha_dir.glob("pings-*.csv")):
        found = FILE_PATTERN.match(path.name)
        if found is None or int(found.group(1)) < since["alpha"]:
            continue
        for line in path.read_text().splitlines():
            cols = line.split(",", 3)
            if len(cols) == 4 and t0 <= (at := float(cols[2])) <= t1:
                yield cols[1], at, int(cols[0])
    after = max(int(since["beta"]), (beta.state.head()["first"] or 1) - 1)
    while chunk := beta.state.read(after, 10_000):
        for raw in chunk:
            ping = json.loads(raw)
            if t0 <= ping["time"] <= t1:
                yield ping["vin"], ping["time"], ping["sequence"]
        after += len(chunk)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--goal", type=float, default=20000, help="the goal rate, pings/s")
    ap.add_argument("--factor", type=float, default=1.3, help="offered = factor x goal")
    ap.add_argument("--rate", type=float, help="total pings/s offered (default factor x goal)")
    ap.add_argument("--seconds", type=float, default=60, help="measurement window")
    ap.add_argument("--warmup", type=float, default=20, help="seconds before measuring")
    ap.add_argument("--grace", type=float, default=3, help="seconds a ping may take after it")
    ap.add_argument("--vehicles", type=int, default=1000, help="vehicles per source")
    ap.add_argument("--trigger", default="1 second")
    ap.add_argument("--max-records", type=int, default=200000, help="beta records per batch")
    ap.add_argument("--store-url", help="default: SQLite in the temporary state root")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property of the job (repeatable; an empty value drops it)",
    )
    add_stack_args(ap)
    args = ap.parse_args()
    conf = dict(c.split("=", 1) for c in args.conf)
    logging.basicConfig(level=logging.WARNING)
    rate = args.rate or args.factor * args.goal

    root, settings, cluster = bench_cluster("bench-fleet-", "3g", bare=args.bare)
    url = args.store_url or f"sqlite:///{root / 'fleet.db'}"
    half = rate / 2
    alpha = AlphaSimulator(root / "alpha", vehicles=args.vehicles, rate=half,
                           pings_per_file=max(100, int(half / 2)), max_file_age=0.5)  # fmt: skip
    beta = BetaSimulator(port=0, vehicles=args.vehicles, rate=half,
                         history=int(max(1_000_000, half * 300)))  # fmt: skip
    try:
        cluster.start()
        with beside_stack(settings, args.bare):
            beta.start()
            data = {"alpha_dir": str(root / "alpha"), "beta_url": beta.url, "store_url": url,
                    "beta_max_records_per_batch": args.max_records}  # fmt: skip
            spec = fleet_spec("fleet-pings.yaml", "fleet-bench", args.trigger, data, conf)
            submit_job(spec, settings, wait_healthy=600)
            alpha.start()
            time.sleep(args.warmup)
            rows = RowSampler(url)
            heads = HeadSampler({"beta": lambda: beta.emitted, "alpha": lambda: alpha.files_written,
                                 "pings": lambda: alpha.emitted + beta.emitted})  # fmt: skip
            t0, cpu = time.time(), cpu_since()
            rows.start()
            heads.start()
            time.sleep(args.seconds)
            t1, cpu_share = time.time(), cpu()
            time.sleep(args.grace)  # the pings of the window's last seconds get written
            rows.stop()
            heads.stop()
            report(settings, spec.name, t0, t1, heads.samples, cpu_share, args)
            # where the window's pings start, with a margin (files are published up to 0.5 s
            # after their first ping)
            since = {"alpha": head_at(heads.samples["alpha"], t0) - 4,
                     "beta": head_at(heads.samples["beta"], t0) - 2 * half}  # fmt: skip
            events = covering_writes(pings_in(root / "alpha", beta, since, t0, t1), rows.versions)
            latency = Latencies.of(events, rows.last_poll)
            print(f"  latency          {latency.describe('pings')}")
    finally:
        alpha.stop()
        beta.stop()
        registry = JobRegistry(settings)
        if cluster.status().master_alive and registry.view("fleet-bench").is_live:
            registry.cancel("fleet-bench")
        cluster.stop()
        discard(root)


def report(settings: Settings, job: str, t0: float, t1: float,
           heads: dict[str, list[tuple[float, float]]], cpu: float,
           args: argparse.Namespace) -> None:  # fmt: skip
    window = [h for h in batch_history(settings, job) if t0 <= h["last_batch_at"] <= t1]
    span = t1 - t0
    offered = (head_at(heads["pings"], t1) - head_at(heads["pings"], t0)) / span
    print(f"\nfleet-pings ingest benchmark ({span:.0f} s window, 2 workers, 2 cores machine)")
    print(f"  offered          {offered:10.0f} pings/s (both simulators; {offered / args.goal:.2f}"
          f"x the goal's {args.goal:.0f}); machine CPU {cpu:.0%}")  # fmt: skip
    busy, processed = [], {}
    for stage in STAGES:
        rate_in, durs, share = stage_load([h for h in window if h["stage"] == stage], span)
        busy.append(share)
        processed[stage] = rate_in
        print(f"  {stage:16} {rate_in:10.0f} pings/s processed, {len(durs)} batches, "
              f"batch p50 {pct(durs, .5):.2f} s p99 {pct(durs, .99):.2f} s, "
              f"busy {share:.0%}")  # fmt: skip
    rates = {name: (head_at(heads[name], t1) - head_at(heads[name], t0)) / span
             for name in ("beta", "alpha")}  # fmt: skip
    sources = {"beta": ("sequence", heads["beta"], rates["beta"]),
               "alpha": ("file", heads["alpha"], rates["alpha"])}  # fmt: skip
    found = backlogs(window, STAGES, sources)
    for b in found:
        print(f"  backlog          {b.describe() if b else 'not measured (under two batches)'}")
    kept, why = keeping_up(processed, offered, found)
    print(f"  kept up          {'yes' if kept else 'no: ' + why}")
    print(
        f"  processed / goal {goal_ratio(processed, args.goal):10.2f}x (the slowest stage; "
        f"goal >= {args.factor:.1f}x: {goal_verdict(kept, offered, args.goal, args.factor)})"
    )
    print(f"  headroom         {headroom_estimate(busy, kept)}")


if __name__ == "__main__":
    main()
