"""Benchmark: the trade analyser (v2: ``avg-1s``, ``avg-1m``, ``vol-1s``) at a given trade rate.

Starts its own local cluster (2 workers, free ports, a temporary state root), beside the
stack ``streamops up`` starts (Airflow, the dashboard, describe-ahead; ``--bare``: nothing
beside, as before), the trades producer (fleetsim-beta's log server with the market data
set) at each ``--rates`` value in turn, and for each rate a fresh trade-analyser v2 job;
measures for ``--seconds`` after a warm-up; stops everything. Not part of the test suite.
Prints, per rate:

- offered and processed trades/s (each stage's input rows over the window, from
  ``status-history.jsonl``) and the backlog left at the end (producer head minus the
  sequence of the last committed batch);
- window close to row in the store, p50/p90/p99: ``updated_at - window_end`` of every
  ``trade_series`` row whose window ended inside the measurement window (the producer's event
  times never go back, so a window's last write is the batch that read its last trade);
- batch durations p50/p99 per stage, the share of the window each stage's batches ran, and
  the headroom that gives (1 / the busiest stage's share); the machine's CPU use over the
  window (``/proc/stat``).

A rate "keeps up" when every stage processed at least 95 % of the offered rate over the
window (the backlog at the end then holds only the batch in flight).

    .venv/bin/python tests/perf/bench_trades.py --rates 10000 --seconds 60
    .venv/bin/python tests/perf/bench_trades.py --rates 5000,10000,20000
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from harness import (
    bench_cluster,
    cpu_since,
    discard,
    fleet_spec,
    headroom,
    kept_up,
    pct,
    stage_load,
)
from ops_stack import add_stack_args, beside_stack
from sqlalchemy import select

from spark_jobs.sinks import store
from streamops.jobs import JobRegistry
from streamops.procedures.submit import submit_job
from streamops.settings import Settings
from streamops.sim.trades import TradeSimulator

STAGES = ("avg-1s", "avg-1m", "vol-1s")


def run_rate(settings: Settings, root: Path, rate: float, args: argparse.Namespace) -> dict:
    job = f"trades-{int(rate)}"
    url = f"sqlite:///{root / f'{job}.db'}"
    producer = TradeSimulator(port=0, seed=1, rate=rate,
                              history=int(max(1_000_000, rate * 300)))  # fmt: skip
    registry = JobRegistry(settings)
    try:
        producer.start()
        data = {
            "trades_url": producer.url,
            "store_url": url,
            **({"max_records_per_batch": args.max_records} if args.max_records else {}),
        }
        spec = fleet_spec(args.spec, job, args.trigger, data, args.conf_map)
        print(f"{job}: {args.spec}, trigger {spec.trigger_interval}", flush=True)
        submit_job(spec, settings, wait_healthy=600)
        time.sleep(args.warmup)
        t0, emitted0, cpu = time.time(), producer.emitted, cpu_since()
        time.sleep(args.seconds)
        t1, emitted1, cpu_share = time.time(), producer.emitted, cpu()
        time.sleep(3.0)  # the windows that ended just before t1 get their last write
        head = producer.emitted
        return report(settings, job, url, rate, t0, t1, emitted1 - emitted0, head,
                      cpu_share)  # fmt: skip
    finally:
        producer.stop()
        if registry.view(job).is_live:
            registry.cancel(job)


def report(settings: Settings, job: str, url: str, rate: float, t0: float, t1: float,
           offered: int, head: int, cpu: float) -> dict:  # fmt: skip
    history = [json.loads(x) for x in settings.layout.status_history(job).read_text().splitlines()]
    window = [h for h in history if t0 <= h["last_batch_at"] <= t1]
    span = t1 - t0
    print(f"\ntrade analyser v2 at {rate:.0f} trades/s ({span:.0f} s window, 2 workers)")
    print(f"  offered          {offered / span:10.0f} trades/s; machine CPU {cpu:.0%}")
    stages = [s for s in STAGES if any(h["stage"] == s for h in history)]
    processed, busy = [], []
    for stage in stages:
        rate_in, durs, share = stage_load([h for h in window if h["stage"] == stage], span)
        processed.append(rate_in)
        busy.append(share)
        print(f"  {stage:8} {rate_in:10.0f} trades/s processed, {len(durs)} batches, "
              f"batch p50 {pct(durs, .5):.2f} s p99 {pct(durs, .99):.2f} s, "
              f"busy {share:.0%}")  # fmt: skip
    print(f"  headroom         {headroom(busy, processed, offered / span)}")
    committed = []
    for stage in stages:
        last = [h for h in history if h["stage"] == stage][-1:]
        seqs = [s["end_offset"].get("sequence") for h in last for s in h["sources"]
                if "sequence" in (s.get("end_offset") or {})]  # fmt: skip
        committed.append(min(seqs) if seqs else 0)
    backlog = head - min(committed)
    print(f"  backlog          {backlog:10d} trades at the end ({backlog / rate:.1f} s of trades)")
    t = store.trade_series
    with store.engine_for(url).connect() as conn:
        rows = conn.execute(select(t.c.series, t.c.window_end_ms, t.c.updated_at)).all()
    out = {"rate": rate, "kept_up": kept_up(processed, offered / span), "cpu": cpu}
    for series in stages:
        lat = [upd - end / 1000 for s, end, upd in rows
               if s == series and t0 <= end / 1000 <= t1]  # fmt: skip
        if lat:
            print(
                f"  {series:8} window close → store p50 {pct(lat, 0.5):.2f} s  "
                f"p90 {pct(lat, 0.9):.2f} s  p99 {pct(lat, 0.99):.2f} s  ({len(lat)} windows)"
            )
            out[series] = pct(lat, 0.99)
        else:
            print(f"  {series:8} no window ended in the measurement window")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rates", default="10000", help="trades/s, comma-separated, run in turn")
    ap.add_argument("--seconds", type=float, default=60, help="measurement window")
    ap.add_argument("--warmup", type=float, default=20, help="seconds before measuring")
    ap.add_argument("--trigger", help="the job's trigger interval (default: the spec's)")
    ap.add_argument("--max-records", type=int, help="trades per batch (default: the spec's)")
    ap.add_argument("--spec", default="trade-analyser-v2.yaml", help="a file of config/jobs/")
    ap.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark property of the job (repeatable; an empty value drops it)",
    )
    add_stack_args(ap)
    args = ap.parse_args()
    args.conf_map = dict(c.split("=", 1) for c in args.conf)
    logging.basicConfig(level=logging.WARNING)

    root, settings, cluster = bench_cluster("bench-trades-", "3g", bare=args.bare)
    results = []
    try:
        cluster.start()
        with beside_stack(settings, args.bare):
            for rate in (float(r) for r in args.rates.split(",")):
                results.append(run_rate(settings, root, rate, args))
    finally:
        cluster.stop()
        discard(root)
    kept = [r["rate"] for r in results if r["kept_up"]]
    print(f"\nkept up with: {', '.join(f'{r:.0f}' for r in kept) or 'none'} trades/s "
          "(every stage processed at least 95 % of the offered rate)")  # fmt: skip


if __name__ == "__main__":
    main()
