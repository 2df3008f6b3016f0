"""Benchmark: the trade analyser (v2: ``avg-1s``, ``avg-1m``, ``vol-1s``) at a given trade rate.

Starts its own local cluster (2 workers, free ports, a temporary state root), beside the
stack ``streamops up`` starts (Airflow, the dashboard, describe-ahead; ``--bare``: nothing
beside, as before), the trades producer (fleetsim-beta's log server with the market data
set) at each ``--rates`` value in turn, and for each rate a fresh trade-analyser v2 job;
measures for ``--seconds`` after a warm-up; stops everything. Not part of the test suite.
Prints, per rate (the definitions: ``measures.py``, and ``docs/performance.md``, "How the
benchmarks measure"):

- offered and processed trades/s (each stage's input rows over the window, from
  ``status-history.jsonl``), each stage's backlog (the producer's head minus what it had
  committed) at its first and last commit of the window, and whether the rate was **kept
  up**: every stage processed at least 95 % of the offered rate and no backlog grew by more
  than a batch's worth;
- the slowest stage's processed rate over ``--goal``, and the goal's headroom (processed /
  offered >= ``--factor`` at the goal rate) met or not when the rate offered is that factor
  of the goal; beside it, as an estimate, 1 / the busiest stage's busy share;
- window close to row in the store, p50/p90/p99, of **every** window of every series that
  ended inside the measurement window: ``updated_at`` (the store's clock when it wrote the
  row) of the row once it holds all the window's trades (as counted from the producer's
  log), minus the window's end. A window not complete ``--grace`` seconds after the
  measurement window is late: counted, and taken at the time it had waited then;
- batch durations p50/p99 per stage, the share of the window each stage's batches ran; the
  machine's CPU use over the window (``/proc/stat``).

    .venv/bin/python tests/perf/bench_trades.py --rates 10000 --seconds 60
    .venv/bin/python tests/perf/bench_trades.py --rates 13000 --seconds 60   # 1.3 x the goal
"""

from __future__ import annotations

import argparse
import json
import logging
import time
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
    goal_ratio,
    goal_verdict,
    head_at,
    headroom_estimate,
    keeping_up,
    window_counts,
)
from ops_stack import add_stack_args, beside_stack
from sqlalchemy import select

from spark_jobs.trade_analyser_v2 import V2_SERIES
from streamops.jobs import JobRegistry
from streamops.settings import Settings
from streamops.sim.trades import TradeSimulator
from streamops.world.submit import submit_job
from streamops_contract.sinks import store

SERIES = {s.name: s for s in V2_SERIES}  # v1's one series is v2's first


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
        heads = HeadSampler({"trades": lambda: producer.emitted})
        t0, cpu = time.time(), cpu_since()
        heads.start()
        time.sleep(args.seconds)
        t1, cpu_share = time.time(), cpu()
        time.sleep(args.grace)  # the windows that ended just before t1 get their last write
        heads.stop()
        out = report(settings, job, rate, t0, t1, heads.samples["trades"], cpu_share, args)
        read_at = time.time()
        out.update(latencies(url, producer, out["stages"], t0, t1, read_at))
        return out
    finally:
        producer.stop()
        if registry.view(job).is_live:
            registry.cancel(job)


def report(
    settings: Settings, job: str, rate: float, t0: float, t1: float,
    heads: list[tuple[float, float]], cpu: float, args: argparse.Namespace,
) -> dict:  # fmt: skip
    history = batch_history(settings, job)
    window = [h for h in history if t0 <= h["last_batch_at"] <= t1]
    span = t1 - t0
    offered = (head_at(heads, t1) - head_at(heads, t0)) / span
    print(f"\ntrade analyser v2 at {rate:.0f} trades/s ({span:.0f} s window, 2 workers)")
    print(f"  offered          {offered:10.0f} trades/s; machine CPU {cpu:.0%}")
    stages = [s for s in SERIES if any(h["stage"] == s for h in history)]
    processed, busy = {}, []
    for stage in stages:
        rate_in, durs, share = stage_load([h for h in window if h["stage"] == stage], span)
        processed[stage] = rate_in
        busy.append(share)
        print(f"  {stage:8} {rate_in:10.0f} trades/s processed, {len(durs)} batches, "
              f"batch p50 {pct(durs, .5):.2f} s p99 {pct(durs, .99):.2f} s, "
              f"busy {share:.0%}")  # fmt: skip
    found = backlogs(window, stages, {"trades": ("sequence", heads, offered)})
    for b in found:
        print(f"  backlog          {b.describe() if b else 'not measured (under two batches)'}")
    kept, why = keeping_up(processed, offered, found)
    print(f"  kept up          {'yes' if kept else 'no: ' + why}")
    verdict = goal_verdict(kept, offered, args.goal, args.factor)
    print(f"  processed / goal {goal_ratio(processed, args.goal):10.2f}x (the slowest stage; "
          f"goal >= {args.factor:.1f}x: {verdict})")  # fmt: skip
    print(f"  headroom         {headroom_estimate(busy, kept)}")
    return {"rate": rate, "kept_up": kept, "cpu": cpu, "stages": stages}


def latencies(url: str, producer: TradeSimulator, stages: list[str], t0: float, t1: float,
              read_at: float) -> dict[str, float]:  # fmt: skip
    """Print each series' window close → store latencies over the windows that ended in
    ``[t0, t1]``; their p99 per series."""
    lo, hi = int(t0 * 1000), int(t1 * 1000)
    t = store.trade_series
    query = select(t.c.series, t.c.symbol, t.c.window_end_ms, t.c.trades, t.c.updated_at)
    with store.engine_for(url).connect() as conn:
        rows = {(s, sym, end): (n, upd) for s, sym, end, n, upd in conn.execute(query)}
    trades = list(producer_trades(producer))
    out = {}
    for name in stages:
        series = SERIES[name]
        expected = window_counts(trades, series.size_ms, series.slide_ms, lo, hi)
        written = []
        for (symbol, end), n in expected.items():
            held, stamp = rows.get((name, symbol, end), (0, None))
            written.append((end / 1000, stamp if held >= n else None))
        lat = Latencies.of(written, read_at)
        print(f"  {name:8} window close → store {lat.describe('windows')}")
        out[name] = lat.pct(0.99)
    return out


def producer_trades(producer: TradeSimulator) -> list[tuple[str, int]]:
    """``(symbol, event time ms)`` of every trade the producer holds (the job read them all:
    a new query starts at the oldest record held)."""
    head = producer.state.head()
    after, out = (head["first"] or 1) - 1, []
    while chunk := producer.state.read(after, 10_000):
        for raw in chunk:
            trade = json.loads(raw)
            out.append((trade["symbol"], round(trade["time"] * 1000)))
        after += len(chunk)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rates", default="10000", help="trades/s, comma-separated, run in turn")
    ap.add_argument("--seconds", type=float, default=60, help="measurement window")
    ap.add_argument("--warmup", type=float, default=20, help="seconds before measuring")
    ap.add_argument("--grace", type=float, default=3, help="seconds a window may take after it")
    ap.add_argument("--goal", type=float, default=10000, help="the goal rate, trades/s")
    ap.add_argument("--factor", type=float, default=1.3, help="the goal's processed / offered")
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
          "(every stage processed at least 95 % of the offered rate and no backlog grew by more "
          "than a batch's worth)")  # fmt: skip


if __name__ == "__main__":
    main()
