"""fleet-reads: fleet-pings v1 and ``extra_reads`` more stages that only read both sources.

Each extra stage reads and parses both sources as every fleet-pings stage does
(``fleet_pings.ping_stream``), and writes to Spark's ``noop`` sink: what one more read of
each source per trigger costs, the most a shared read of the sources could save a stage.
Args: those of fleet-pings, and ``extra_reads`` (default 1).

A benchmark's job, not a product's: run as entrypoint ``fleet_reads`` on a cluster whose
``PYTHONPATH`` holds this folder (``harness.use_bench_jobs``).
"""

from __future__ import annotations

from bench_state import discard

from spark_jobs import fleet_pings
from spark_jobs.runtime import JobContext


def build(ctx: JobContext) -> None:
    fleet_pings.build(ctx)
    for i in range(int(ctx.args.get("extra_reads", 1))):
        # Spark's noop sink computes every column of every row: each record read and parsed
        ctx.add_stage(f"read-only-{i + 1}", fleet_pings.ping_stream(ctx), discard)
