"""The savepoint schedule and history of a deployment, as pure functions: when the next
periodic savepoint is due, and which savepoints of the history to prune.

Only savepoints the reconcile took for the deployment (its history: periodic, suspend,
upgrade, restart) are ever pruned; a savepoint request's export belongs to its request. The
newest restorable savepoint of the job is never pruned, whatever the age and count, nor is one
the deployment still needs (the suspend it would resume from), nor one a running job was
started from.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from streamops.declarative.observe import SavepointSeen
from streamops.state.declarative.resources import SavepointSchedule
from streamops.state.declarative.status import SavepointRecord


def periodic_due(schedule: SavepointSchedule, since: float | None, now: float) -> bool:
    """Whether a periodic savepoint is due: ``since`` is the last one (or the job's start)."""
    if not schedule.periodic or since is None:
        return False
    if schedule.interval_s is not None:
        return now - since >= schedule.interval_s
    from croniter import croniter

    return float(croniter(str(schedule.cron), since).get_next(float)) <= now


def newest_restorable(seen: Sequence[SavepointSeen]) -> str | None:
    best = max((s for s in seen if s.restorable), key=lambda s: (s.created_at, s.name),
               default=None)  # fmt: skip
    return best.name if best else None


def to_prune(
    schedule: SavepointSchedule, history: Sequence[SavepointRecord],
    seen: Sequence[SavepointSeen], now: float, keep: Collection[str] = (),
) -> list[tuple[str, str]]:  # fmt: skip
    """``(savepoint, why)`` of the history to delete: beyond ``max_count`` (newest first) or
    older than ``max_age``; never the newest restorable one, nor ``keep``."""
    if schedule.max_count is None and schedule.max_age_s is None:
        return []
    exists = {s.name: s for s in seen}
    mine = sorted((r for r in history if r.name in exists),
                  key=lambda r: (exists[r.name].created_at, r.name), reverse=True)  # fmt: skip
    spared = {*keep, newest_restorable(seen)}
    out = []
    for rank, record in enumerate(mine):
        age = now - exists[record.name].created_at
        if schedule.max_count is not None and rank >= schedule.max_count:
            why = f"beyond the newest {schedule.max_count}"
        elif schedule.max_age_s is not None and age > schedule.max_age_s:
            why = f"{age:.0f} s old, more than {schedule.max_age}"
        else:
            continue
        if record.name not in spared:
            out.append((record.name, why))
    return out
