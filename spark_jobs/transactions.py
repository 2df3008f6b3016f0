"""transactions v1: log every change of the ``transactions`` table, read from its event journal.

The operator tutorial's journal job: the producer (``streamops sim transactions``) inserts and
updates transactions, each change journaled with a sequence number in the same store
(:mod:`streamops_contract.sinks.journal_store`); this job reads the journal
(:mod:`spark_jobs.sources.journal`) and logs each entry, to the driver's log and to the
``transaction_log`` table with the job's version, keyed by the journal sequence (a replayed
batch writes nothing twice).

One stage, ``transaction-log``, stateless; v2 (:mod:`spark_jobs.transactions_v2`) declares the
same stage, so a savepoint of v1 restores its position into v2, which then logs only the
entries after it. The source is the journal's reader with id :data:`SOURCE_ID`.

Args (job spec): ``store_url`` (the producer's store: the journal is read from it and the log
written to it), ``max_records_per_batch`` (default 10000).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import DataFrame

from spark_jobs.runtime import JobContext
from spark_jobs.sources.journal import JournalDataSource
from streamops_contract.sinks import journal_store

log = logging.getLogger("spark_jobs.transactions")

SOURCE_ID = "journal:transactions"
"""The source id in offsets and savepoints (health locates a ``journal:`` source by the job's
``store_url``: :mod:`streamops.world.source_probes`)."""
STAGE = "transaction-log"
LOG_FIELDS = ("sequence", "op", "id", "payload")


def journal_stream(ctx: JobContext) -> DataFrame:
    """The journal's entries, one row each (``sequence, at, op, id, payload``)."""
    ctx.spark.dataSource.register(JournalDataSource)
    return (
        ctx.spark.readStream.format("transactions_journal")
        .options(**ctx.source_options(SOURCE_ID))
        .option("url", str(ctx.args["store_url"]))
        .option("max_records_per_batch", str(ctx.args.get("max_records_per_batch", 10000)))
        .load()
        .select(*LOG_FIELDS)
    )


def log_sink(store_url: str, version: str, dry: bool = False) -> Callable[[DataFrame, int], None]:
    """Log each entry of the batch (driver log, then ``transaction_log``). ``dry`` (a warm
    standby's rehearsal): compute, write nothing."""

    def write(batch: DataFrame, batch_id: int) -> None:
        rows = sorted((r.asDict() for r in batch.collect()), key=lambda r: r["sequence"])
        if dry or not rows:
            return
        for row in rows:
            log.info("v%s transaction #%d %s %s: %s", version, row["sequence"], row["op"],
                     row["id"], row["payload"])  # fmt: skip
        journal_store.log_entries(journal_store.engine_for(store_url, journal_store.LOG_TABLES),
                                  rows, version)  # fmt: skip

    return write


def build(ctx: JobContext) -> None:
    """One stage, ``transaction-log``; v1 and v2 both build through here."""
    url = str(ctx.args["store_url"])
    # the tables exist before the first batch (the journal's too: a job may start first)
    journal_store.engine_for(url, (*journal_store.JOURNAL_TABLES, *journal_store.LOG_TABLES))
    ctx.add_stage(STAGE, journal_stream(ctx), log_sink(url, ctx.spec.version, ctx.rehearsal),
                  dry_sink=True)  # fmt: skip
