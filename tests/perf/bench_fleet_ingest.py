"""Benchmark: sustained pings/s through fleet-pings into ``vehicles``, and event-to-store latency.

Starts its own local cluster (2 workers, free ports, a temporary state root), beside the
stack ``streamops up`` starts (Airflow, the dashboard, describe-ahead; ``--bare``: nothing
beside, as before), both simulators at ``--rate`` pings/s in total, and the job; measures
for ``--seconds`` after a warm-up; stops everything. Not part of the test suite. Prints:

- offered and processed pings/s (the vehicles stage's input rows over the window, from
  ``status-history.jsonl``), the backlog left at the end;
- event-to-store latency p50/p90/p99 (``updated_at - time`` of each changed ``vehicles`` row,
  sampled every 0.25 s: the newest ping per VIN per batch);
- batch durations p50/p99 per stage, the share of the window each stage's batches ran, and
  the headroom that gives (1 / the busiest stage's share); the machine's CPU use.

    .venv/bin/python tests/perf/bench_fleet_ingest.py --rate 20000 --seconds 60

``--conf key=value`` (repeatable) sets a Spark property of the job, to compare settings.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import threading
import time

from harness import bench_cluster, cpu_since, discard, fleet_spec, headroom, pct, stage_load
from ops_stack import add_stack_args, beside_stack
from sqlalchemy import select

from spark_jobs.sinks import store
from streamops.jobs import JobRegistry
from streamops.procedures.submit import submit_job
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, BetaSimulator


def sample_latency(url: str, stop: threading.Event, out: list[float], since: float) -> None:
    engine = store.engine_for(url)
    seen: dict[str, float] = {}
    t = store.vehicles
    while not stop.wait(0.25):
        with engine.connect() as conn:
            for vin, ev, upd in conn.execute(select(t.c.vin, t.c.time, t.c.updated_at)):
                if seen.get(vin) != upd:
                    seen[vin] = upd
                    if upd >= since:
                        out.append(upd - ev)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rate", type=float, default=20000, help="total pings/s (half per source)")
    ap.add_argument("--seconds", type=float, default=60, help="measurement window")
    ap.add_argument("--warmup", type=float, default=20, help="seconds before measuring")
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

    root, settings, cluster = bench_cluster("bench-fleet-", "3g", bare=args.bare)
    url = args.store_url or f"sqlite:///{root / 'fleet.db'}"
    half = args.rate / 2
    alpha = AlphaSimulator(root / "alpha", vehicles=args.vehicles, rate=half,
                           pings_per_file=max(100, int(half / 2)), max_file_age=0.5)  # fmt: skip
    beta = BetaSimulator(port=0, vehicles=args.vehicles, rate=half,
                         history=int(max(1_000_000, half * 300)))  # fmt: skip
    stop = threading.Event()
    latencies: list[float] = []
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
            t0, cpu = time.time(), cpu_since()
            emitted0 = alpha.emitted + beta.emitted
            sampler = threading.Thread(target=sample_latency, args=(url, stop, latencies, t0))
            sampler.start()
            time.sleep(args.seconds)
            t1, cpu_share = time.time(), cpu()
            emitted1 = alpha.emitted + beta.emitted
            stop.set()
            sampler.join()
            offered = emitted1 - emitted0
            report(settings, spec.name, t0, t1, offered, latencies, beta.emitted, cpu_share)
    finally:
        stop.set()
        alpha.stop()
        beta.stop()
        registry = JobRegistry(settings)
        if cluster.status().master_alive and registry.view("fleet-bench").is_live:
            registry.cancel("fleet-bench")
        cluster.stop()
        discard(root)


def report(settings: Settings, job: str, t0: float, t1: float, offered: int,
           latencies: list[float], beta_head: int, cpu: float) -> None:  # fmt: skip
    lines = settings.layout.status_history(job).read_text().splitlines()
    history = [json.loads(x) for x in lines]
    window = [h for h in history if t0 <= h["last_batch_at"] <= t1]
    span = t1 - t0
    print(f"\nfleet-pings ingest benchmark ({span:.0f} s window, 2 workers, 2 cores machine)")
    print(f"  offered          {offered / span:10.0f} pings/s (both simulators); "
          f"machine CPU {cpu:.0%}")  # fmt: skip
    busy, processed = [], []
    for stage in ("vehicles", "vehicle-stats-1m"):
        rate_in, durs, share = stage_load([h for h in window if h["stage"] == stage], span)
        busy.append(share)
        processed.append(rate_in)
        print(f"  {stage:16} {rate_in:10.0f} pings/s processed, {len(durs)} batches, "
              f"batch p50 {pct(durs, .5):.2f} s p99 {pct(durs, .99):.2f} s, "
              f"busy {share:.0%}")  # fmt: skip
    print(f"  headroom         {headroom(busy, processed, offered / span)}")
    last = [h for h in history if h["stage"] == "vehicles"][-1]
    seq = next((s["end_offset"].get("sequence") for s in last["sources"]
                if "sequence" in (s.get("end_offset") or {})), None)  # fmt: skip
    print(f"  beta backlog     {beta_head - (seq or 0):10d} records at the end")
    if latencies:
        print(
            f"  latency          p50 {pct(latencies, 0.5):.2f} s  p90 {pct(latencies, 0.9):.2f} s"
            f"  p99 {pct(latencies, 0.99):.2f} s  max {max(latencies):.2f} s"
            f"  ({len(latencies)} samples, mean {statistics.mean(latencies):.2f} s)"
        )
    else:
        print("  latency          no samples")


if __name__ == "__main__":
    main()
