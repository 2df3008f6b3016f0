# ruff: noqa: E402  (the path is set before PySpark is imported)
"""Driver entry point of every job: ``main.py --spec-b64 SPEC --state-root DIR``.

Submitted with ``org.apache.spark.deploy.PythonRunner`` as main class; the job spec comes
inline (base64 JSON) so a relaunched driver on any worker runs exactly the same version.
"""

from __future__ import annotations

# First, before PySpark is imported: Spark's zipped PySpark and Py4J off the path when the same
# release is installed (compiled once; from the zip every module is compiled at every start),
# for this process and the fork server and workers it starts (spark_jobs.pythonpath)
import os
import sys

from spark_jobs.pythonpath import strip_environ, without_spark_zips

sys.path[:] = without_spark_zips(sys.path)
strip_environ()

import argparse
import base64
import concurrent.futures
import dataclasses
import importlib
import json
import logging
import time
from types import ModuleType

from pyspark.sql import SparkSession

from spark_jobs.forkserver import server as forkserver
from spark_jobs.runtime import hot_roles, hot_standby, job_code, standby, supervision
from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.errors import short_error
from spark_jobs.sources.source_state import source_reset_message
from streamops_contract.records import DriverStart, append_record
from streamops_contract.spec import JobSpec, decode_spec
from streamops_contract.state import lease
from streamops_contract.state.layout import StateLayout

log = logging.getLogger("spark_jobs.main")


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="spark_jobs.main")
    parser.add_argument("--spec-b64", required=True)
    parser.add_argument("--state-root", required=True)
    parser.add_argument("--from-savepoint", help="savepoint this run was restored from")
    parser.add_argument(
        "--start-positions-b64",
        help="base64 JSON {source_id: offset}: where stages without a checkpoint start",
    )
    parser.add_argument(
        "--standby",
        metavar="TOKEN",
        help="warm standby: build and validate, then wait for the go file of TOKEN",
    )
    parser.add_argument(
        "--hot-standby", action="store_true",
        help="a hot job's standby: wait for its running driver, arm, take over when it dies",
    )  # fmt: skip
    parser.add_argument(
        "--standby-executors", type=int, default=0,
        help="executors a standby waits for and warms up (free cores beside the old version)",
    )  # fmt: skip
    parser.add_argument(
        "--standby-moves", type=int, default=0,
        help="how many hot standbys before this one found themselves beside the running driver",
    )  # fmt: skip
    parser.add_argument(
        "--settings-b64", help="a hot job's settings (the master's address), base64 JSON"
    )
    return parser.parse_args(argv)


def imported(ready: concurrent.futures.Future[ModuleType], spec: JobSpec) -> ModuleType:
    """The job's module, imported beside the session's start; imported here again if that
    failed (an import in two threads can meet a cycle; a real error then raises here)."""
    try:
        module = ready.result()
    except Exception:
        log.warning("job %s: importing %s beside the session failed; importing it again",
                    spec.name, spec.entrypoint, exc_info=True)  # fmt: skip
        module = importlib.import_module(spec.entrypoint)
    log.info("job %s v%s: %s imported", spec.name, spec.version, spec.entrypoint)
    return module


def record_start(layout: StateLayout, job: str, args: argparse.Namespace) -> None:
    """Append this driver to ``jobs/<job>/drivers.jsonl``: a driver the master relaunched has
    an id no submission names; `streamops cancel` and the orphan check find it here."""
    start = DriverStart(hot_roles.own_holder(), os.getpid(), hot_standby=bool(args.hot_standby),
                        standby=args.standby)
    append_record(layout.drivers_file(job), start)


AUTH_SECRET_ENV = "_SPARK_AUTH_SECRET"
"""With ``spark.authenticate`` on, a worker hands its RPC secret to the driver it launches in
this variable and keeps it off the command line, but SparkContext requires it in its
configuration: the driver copies it there (see ``streamops.cluster.rpc_auth``)."""


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)  # one INFO line per callback
    args = parse_args(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    spec = decode_spec(args.spec_b64)
    # first: the fork server imports what the Python workers need while the JVM starts
    forks = forkserver.ForkServer.start() if forkserver.enabled(spec.conf) else None
    try:
        return run(args, spec, started, forks)
    finally:
        if forks is not None:
            forks.stop()


def run(
    args: argparse.Namespace, spec: JobSpec, started: float, forks: forkserver.ForkServer | None
) -> int:
    layout = StateLayout.at(args.state_root)
    job_code.on_path(spec)  # a job's own code, published under the state root
    # the job's module imports (SQLAlchemy, its sources) while the JVM builds the session
    importing = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="import")
    module_ready = importing.submit(importlib.import_module, spec.entrypoint)
    importing.shutdown(wait=False)
    positions = (
        json.loads(base64.urlsafe_b64decode(args.start_positions_b64))
        if args.start_positions_b64
        else {}
    )
    behind = None
    keeper: hot_roles.LeaseKeeper | None = None
    settings = hot_standby.settings_of(args.settings_b64)
    record_start(layout, spec.name, args)
    if args.standby and standby.aborted(layout, spec.name, args.standby):
        log.warning("job %s: standby %s was aborted (this is its relaunch); exiting", spec.name,
                    args.standby)  # fmt: skip
        return 0  # exit cleanly: --supervise relaunches only a driver that failed
    if spec.standby == "hot" and not args.standby:
        try:  # before the session: a standby never competes with its primary's start
            role, held = hot_roles.take_role(layout, spec.name, spec.version, args.hot_standby,
                                             hot_roles.own_holder(),
                                             check=hot_standby.check_jvm)  # fmt: skip
        except hot_roles.Dismissed as exc:
            log.warning("job %s: hot standby dismissed: %s", spec.name, exc)
            return 0
        if role is hot_roles.Role.PRIMARY:  # claimed: kept fresh until supervision runs
            keeper = hot_roles.LeaseKeeper(layout, held, check=hot_standby.check_jvm)
        else:
            behind = held
            if not hot_standby.stays(
                layout, spec, settings, args.hot_standby, args.standby_moves
            ):  # another standby was submitted in its place
                return 0
    builder = SparkSession.builder.appName(spec.name)
    if secret := os.environ.get(AUTH_SECRET_ENV):  # the cluster's RPC secret, from the worker
        builder = builder.config("spark.authenticate.secret", secret)
    spark = builder.getOrCreate()
    job_code.ship(spark, spec)
    log.info("job %s v%s: Spark session up after %.1fs", spec.name, spec.version,
             time.monotonic() - started)  # fmt: skip
    if forks is not None:
        forks.attach(spark.sparkContext)
    module = imported(module_ready, spec)
    if args.standby:
        # build once, before the savepoint exists: new stages read their start positions
        # from the go file when their queries start
        ctx = JobContext(
            spark, spec, layout,
            start_positions_file=layout.standby_go_file(spec.name, args.standby),
            gate_file=layout.standby_gate_file(spec.name, args.standby),
        )  # fmt: skip
        try:
            module.build(ctx)
            standby.warm_up(ctx, args.standby, args.standby_executors, build=module.build)
        except BaseException as exc:
            standby.report_failure(layout, spec.name, args.standby, exc)
            raise
        released = standby.wait_for_go(layout, spec.name, args.standby)
        if released is None:
            return 0
        ctx.restored_from(released)
    elif behind is not None:
        ctx = JobContext(
            spark, spec, layout, gate_file=layout.standby_gate_file(spec.name, f"hot-{os.getpid()}")
        )
        try:
            module.build(ctx)
            hot_standby.stand_by(ctx, behind, module.build, settings)
        except hot_roles.Dismissed as exc:
            log.warning("job %s: hot standby dismissed: %s", spec.name, exc)
            if not isinstance(exc, hot_standby.JvmGone):  # else nothing answers any more
                spark.stop()
            return 0
        except Exception as exc:  # exit 0: a standby relaunched in a loop would load the job
            hot_standby.report_failure(ctx, exc)
            spark.stop()
            return 0
    else:
        ctx = JobContext(
            spark, spec, layout, from_savepoint=args.from_savepoint, start_positions=positions
        )
        module.build(ctx)
        log.info("job %s v%s: %d stage(s) built after %.1fs", spec.name, spec.version,
                 len(ctx.stages), time.monotonic() - started)  # fmt: skip
        if keeper is not None:  # the lease it claimed at its start, with its application
            claimed = keeper.stop()
            ctx.lease = lease.heartbeat(
                layout, dataclasses.replace(claimed, app_id=ctx.board.snapshot().app_id)
            )
    ident = ctx.board.snapshot()
    log.info(
        "job %s v%s starting (driver %s, app %s)",
        spec.name, spec.version, ident.driver_id, ident.app_id,
    )  # fmt: skip
    try:
        supervision.run(ctx, ctx.gate)
    except lease.Fenced as exc:
        log.error("%s", exc)
        return 0  # exit cleanly: a duplicate must not be relaunched by --supervise
    except BaseException as exc:
        reset = source_reset_message(str(exc))
        if reset:  # relaunching cannot bring the records back: stay FAILED, say why
            ctx.board.set_state("FAILED", error=reset, stopped_at=time.time())
            log.error("job %s: %s; the job is FAILED and not relaunched", spec.name, reset)
            ctx.release_lease()
            return 0
        if ctx.board.snapshot().state != "FAILED":
            ctx.board.set_state("FAILED", error=short_error(exc), stopped_at=time.time())
        raise
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
