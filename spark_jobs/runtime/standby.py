"""Warm standby: a new version's driver that is up before the old one stops.

Started with ``--standby TOKEN``, the driver creates its Spark session, imports the job and
builds its stages once to validate them (plans analysed, state descriptors computed), waits
for its executors and starts their Python workers (the first batch of a Python source would
otherwise pay for both), rehearses (builds the stages again with sources that read only their
newest data, and runs each once on a scratch checkpoint into its sink built dry (it computes
and writes nothing), else into Spark's ``noop`` sink: the driver's and executors' JVMs compile
the stages' code and warm up, the sources' and sinks' Python runs),
arms its stages (starts their queries on the job's checkpoints, held at a gate before Spark
reads the checkpoints: the sources' Python processes are up), writes
``<job>/standby/TOKEN.ready.json`` and waits. It writes nothing else (but the empty checkpoint
of a new stage) and holds no lease: the old version keeps running untouched. When the ops side
has taken the savepoint (old version stopped, lease given up) and restored the checkpoints, it
writes ``TOKEN.go.json`` with the savepoint name and start positions; the driver takes the
lease and opens the gate. The upgrade gap is then only the savepoint and the first batches,
not the JVM, Python, executor, session and source start-up.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from spark_jobs.runtime.context import JobContext
from spark_jobs.runtime.errors import short_error
from spark_jobs.runtime.warmup import warm_executors
from streamops_contract.state.layout import StateLayout, read_json, write_json_atomic

log = logging.getLogger("spark_jobs.standby")
REHEARSAL_TIMEOUT_S = 120.0


def warm_up(
    ctx: JobContext, token: str, executors: int = 0,
    build: Callable[[JobContext], object] | None = None,
) -> None:  # fmt: skip
    """With ``ctx``'s stages built (nothing started): describe them, wait for ``executors``
    executors and warm them up, rehearse the stages with ``build`` (the job's build
    function; not without an executor), then announce readiness."""
    started = time.monotonic()
    spec, layout = ctx.spec, ctx.layout
    stages = {stage.name: ctx.describe(stage.name) for stage in ctx.stages}
    count = warm_executors(ctx.spark, executors)
    rehearsal: dict[str, Any] | None = None
    if build is not None and count:
        rehearsal = rehearse(ctx, build)
    elif build is not None:
        # the old version holds the cluster's cores: no task could run before it stops, and
        # the rehearsal would only wait out its timeout
        log.info("standby: no executor of %s yet (the running version holds the cores): no "
                 "rehearsal, the first batches compile the stages", ctx.job)  # fmt: skip
        rehearsal = {"seconds": 0.0, "stages": [], "failed": {}, "skipped": "no executor"}
    armed_s, prepared = None, 0
    if ctx.gate is not None:
        ctx.gate.arm()
        armed_s = ctx.gate.wait_armed()
        log.info("standby: %d stage(s) of %s armed in %.1fs, held at the gate", len(ctx.stages),
                 ctx.job, armed_s)  # fmt: skip
        prepared = prepare_reads(ctx)
    ident = ctx.board.snapshot()
    write_json_atomic(
        layout.standby_ready_file(spec.name, token),
        {
            "token": token,
            "version": spec.version,
            "driver_id": ident.driver_id,
            "app_id": ident.app_id,
            "stages": stages,
            "executors": count,
            "rehearsal": rehearsal,
            "armed_s": armed_s,
            "reads_prepared": prepared,
            "warm_up_s": round(time.monotonic() - started, 2),
            "at": time.time(),
        },
    )
    log.info("job %s v%s: standby %s ready (%d stages, %d executors)", spec.name, spec.version,
             token, len(stages), count)  # fmt: skip


def rehearse(
    ctx: JobContext, build: Callable[[JobContext], object], timeout: float = REHEARSAL_TIMEOUT_S
) -> dict[str, Any]:
    """Run each stage of the job once on its sources' newest data, in parallel, on scratch
    checkpoints, into its sink built dry (``Stage.dry_sink``) or else Spark's ``noop`` sink;
    nothing is written where the job keeps anything. Best effort: a failure is reported
    (``failed``: stage → error) and logged, and the standby goes on (the real first batch
    decides; a broken version is rolled back)."""
    started = time.monotonic()
    trial = JobContext(ctx.spark, ctx.spec, ctx.layout, rehearsal=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"streamops-rehearsal-{ctx.job}-"))
    queries: dict[str, Any] = {}
    failed: dict[str, str] = {}
    try:
        build(trial)
        for stage in trial.stages:
            writer = stage.frame.writeStream.queryName(f"rehearsal-{stage.name}")
            writer = writer.foreachBatch(stage.sink) if stage.dry_sink else writer.format("noop")
            queries[stage.name] = (
                writer.option("checkpointLocation", str(scratch / stage.name))
                .outputMode(stage.output_mode)
                .trigger(once=True)
                .start()
            )
        deadline = time.monotonic() + timeout
        for name, query in queries.items():
            if not query.awaitTermination(max(0.1, deadline - time.monotonic())):
                failed[name] = f"still running after {timeout:.0f}s"
            elif query.exception() is not None:
                failed[name] = short_error(query.exception())[:500]
    except Exception as exc:  # e.g. a source that cannot reach its system yet
        failed["*"] = short_error(exc)[:500]
    finally:
        for query in queries.values():
            if query.isActive:
                query.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    seconds = round(time.monotonic() - started, 2)
    if failed:
        log.warning("standby: rehearsal of %s failed after %.1fs (the stages start cold): %s",
                    ctx.job, seconds, failed)  # fmt: skip
    else:
        log.info("standby: rehearsed %d stage(s) of %s in %.1fs", len(queries), ctx.job, seconds)
    return {"seconds": seconds, "stages": sorted(queries), "failed": failed}


def prepare_reads(ctx: JobContext) -> int:
    """Plan the reads of the stages' Python sources now; the number planned. Spark plans them
    at a query's first batch (a Python process per source, cached on the source's provider,
    which the armed queries share with the stages' frames), inside the upgrade gap otherwise.
    Best effort: a source left out is planned by its first batch."""
    done = 0
    for stage in ctx.stages:
        try:
            leaves = stage.frame._jdf.queryExecution().analyzed().collectLeaves()
            for i in range(leaves.size()):
                leaf = leaves.apply(i)
                if (
                    leaf.getClass().getSimpleName() != "StreamingRelationV2"
                    or leaf.source().isEmpty()
                ):
                    continue
                provider = leaf.source().get()
                if provider.getClass().getSimpleName() != "PythonDataSourceV2":
                    continue
                provider.getOrCreateReadInfo(
                    leaf.sourceName(), leaf.extraOptions(), leaf.table().schema(), True
                )
                done += 1
        except Exception:  # internals of this Spark version: skip, the first batch plans it
            log.warning("standby: could not plan the source reads of stage %s", stage.name,
                        exc_info=True)  # fmt: skip
    log.info("standby: planned the reads of %d Python source(s) of %s", done, ctx.job)
    return done


def report_failure(layout: StateLayout, job: str, token: str, exc: BaseException) -> None:
    """Tell the ops side this standby failed before it was ready, and why."""
    log.error("standby %s of %s failed before it was ready: %s", token, job, short_error(exc))
    doc = {"token": token, "error": short_error(exc)[:2000], "at": time.time()}
    write_json_atomic(layout.standby_failed_file(job, token), doc)


def aborted(layout: StateLayout, job: str, token: str) -> bool:
    """Whether the ops side aborted standby ``token`` (this driver may be its relaunch)."""
    return layout.standby_aborted_file(job, token).is_file()


def wait_for_go(layout: StateLayout, job: str, token: str, poll: float = 0.05) -> str | None:
    """Block until the ops side releases this standby with a savepoint to start from; ``None``
    once it aborted it instead (the driver then exits cleanly, never relaunched)."""
    path = layout.standby_go_file(job, token)
    while True:
        doc = read_json(path)
        if doc:
            log.info("job %s: standby %s released, starting from savepoint %s", job, token,
                     doc["savepoint"])  # fmt: skip
            return str(doc["savepoint"])
        if aborted(layout, job, token):
            log.warning("job %s: standby %s was aborted by the ops side; exiting", job, token)
            return None
        time.sleep(poll)
