"""The long chaos campaign: ``--steps`` faults and procedures drawn by ``--seed`` from the
whole catalogue (``tests/support/chaos/catalogue.py``: the short campaign's, plus scale
3 → 4 → 3, upgrade v1 → v2 and back, a full cluster restart switching the jar release), one
after another on a fleet-pings job while both simulators flow, beside the transactions job on
its journal (both jobs' stages, oracles and health judged after every step), on three
workers (four with ``--standby hot``). Prints a line per step, then a table per fault
kind: count, median and worst time until every stage committed again (and the kind's
bound), the worst time
until health said OK again, lost / extra / dup / different rows (extra: keys a sink holds
that it should not; dup: windows that counted a record twice; diff: other rows that differ),
the health verdicts seen while the job was down. Exits 1 if a step failed (its seed
replays it).

The store is on an embedded PostgreSQL by default (``--no-postgres``: SQLite), so
``store-down`` is drawn; ``standby-node`` and ``primary-twice`` are drawn only with
``--standby hot`` (three workers). Kinds whose world does not exist are never drawn, and the
soak says which at its start; a drawn kind whose precondition fails is drawn again.

    .venv/bin/python tests/perf/chaos_soak.py --steps 60 --seed 7
    for s in 1 2 3; do .venv/bin/python tests/perf/chaos_soak.py --steps 8 --seed $s \
        --no-postgres; done   # three seeds, a few steps each
    .venv/bin/python tests/perf/chaos_soak.py --only node,node,master   # these, in order
    .venv/bin/python tests/perf/chaos_soak.py --standby hot --steps 30 --seed 7
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from harness import discard, free_port, python_loop_seconds
from support.chaos.campaign import StepReport, pool_of, replay_hint, run_campaign
from support.chaos.catalogue import CATALOGUE
from support.chaos.judge import Tally
from support.chaos.world import ChaosWorld
from support.integration import ClusterHandle
from support.postgres import postgres_server, throwaway_database

from streamops.cluster.profile import ClusterProfile
from streamops.settings import Settings
from streamops.stack.class_training import train_class_archives
from streamops.stack.local_cluster import LocalCluster


def _exit(signum: int, frame: object) -> None:
    raise SystemExit(143)


def table(reports: list[StepReport]) -> str:
    rows = ["| fault | count | failed | every stage again: median / worst (bound) | longest gap: "
            "median / worst | health OK again: worst | lost / extra / dup / diff "
            "| health while down |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name in sorted({r.action for r in reports}):
        mine = [r for r in reports if r.action == name]
        times = [r.recovery_s for r in mine if r.recovery_s is not None]
        bound = next((f" ({r.bound_s:.0f} s)" for r in mine if r.bound_s is not None), "")
        med = f"{statistics.median(times):.1f} / {max(times):.1f} s{bound}" if times else "-"
        gaps = [r.gap_s for r in mine if r.gap_s is not None]
        gap = f"{statistics.median(gaps):.1f} / {max(gaps):.1f} s" if gaps else "-"
        oks = [r.health_ok_s for r in mine if r.health_ok_s is not None]
        health = f"{max(oks):.1f} s" if oks else "-"
        found = Tally()
        for r in mine:
            found = found.add(r.tally)
        verdicts: dict[str, int] = {}
        for r in mine:
            for level, n in r.verdicts_down.items():
                verdicts[level] = verdicts.get(level, 0) + n
        seen = ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items())) or "-"
        rows.append(f"| {name} | {len(mine)} | {sum(not r.ok for r in mine)} | {med} | {gap} | "
                    f"{health} | {found.missing} / {found.unexpected} / {found.duplicated} / "
                    f"{found.different} | {seen} |")  # fmt: skip
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 10_000)
    parser.add_argument("--only", default="", help="comma-separated actions, in this order")
    parser.add_argument("--keep-going", action="store_true", help="go on past a failed step")
    parser.add_argument(
        "--standby",
        choices=("none", "hot"),
        default="none",
        help="hot: the job runs with a hot standby on three workers, and the "
        "standby's node and the new primary's node after a failover are drawn",
    )
    parser.add_argument(
        "--postgres",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the store on a throwaway database of an embedded PostgreSQL (or of "
        "STREAMOPS_TEST_PG_URL) reached through a link the campaign cuts (store-down is "
        "drawn); --no-postgres: SQLite, store-down never drawn",
    )
    parser.add_argument(
        "--two-jobs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the tutorial's transactions job beside fleet-pings, judged by its journal "
        "oracle (both-drivers-node drawn); --no-two-jobs: fleet-pings alone",
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _exit)
    print(f"machine: 20M Python additions in {python_loop_seconds():.2f} s", flush=True)
    only = [n for n in args.only.split(",") if n]
    print(f"chaos soak: seed {args.seed}, {len(only) or args.steps} steps", flush=True)
    root = Path(tempfile.mkdtemp(prefix="streamops-chaos-"))
    settings = Settings.from_env(
        {},
        state_root=str(root),
        master_port=free_port(),
        master_webui_port=free_port(),
        rest_port=free_port(),
    )
    workers = 4 if args.standby == "hot" else 3
    profile = ClusterProfile.from_mapping(
        {"workers": workers, "max_workers": workers + 1, "worker_cores": 3,
         "worker_memory": "3g", "worker_webui_port_base": 0, "jar_release": "r1"})  # fmt: skip
    cluster = LocalCluster(settings, profile)
    reports: list[StepReport] = []
    world = None
    stack = ExitStack()
    try:
        cluster.start()
        train_class_archives(settings)
        work = root / "work"
        work.mkdir()
        pg_url = ""
        if args.postgres:
            admin_url = stack.enter_context(postgres_server(free_port))
            pg_url = stack.enter_context(throwaway_database("streamops_chaos", admin_url))
        world = ChaosWorld(
            ClusterHandle(settings, cluster),
            work,
            free_port(),
            standby=args.standby,
            postgres_url=pg_url,
            airflow_port=free_port(),
            workers=workers,
            second_job=args.two_jobs,
        )
        world.start()
        absent = sorted({a.name for a in CATALOGUE} - {a.name for a in pool_of(False, world)})
        print(f"never drawn in this world: {', '.join(absent) or 'none'}", flush=True)
        world.submit()
        run_campaign(world, args.seed, len(only) or args.steps, short=False, only=only,
                     out=reports, stop_at_failure=not args.keep_going)  # fmt: skip
    finally:
        if world is not None:
            world.stop()
        cluster.stop()
        stack.close()
        failed = [r for r in reports if not r.ok]
        discard(root, keep=bool(failed))
    print("\n" + table(reports))
    if failed:
        print(f"\n{len(failed)} step(s) failed; {replay_hint(args.seed, args.steps)}")
        return 1
    print(f"\n{len(reports)} steps, none failed (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
