"""transactions v2: the same ``transaction-log`` stage as v1, started from v1's savepoint.

The tutorial's second job: started from the snapshot v1 was cancelled with, it logs only the
transactions added afterwards, none twice and none skipped. The stage has v1's name and plan
(:func:`spark_jobs.transactions.build`), so the planner restores it: its checkpoint, the
journal's committed sequence included, is v1's at the savepoint. Its rows in
``transaction_log`` carry ``job_version`` 2.
"""

from __future__ import annotations

from spark_jobs import transactions
from spark_jobs.runtime import JobContext


def build(ctx: JobContext) -> None:
    transactions.build(ctx)
