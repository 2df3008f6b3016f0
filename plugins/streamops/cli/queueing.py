"""The CLI's ``--wait SECONDS`` for the verbs that change a job: a job busy with another
operation (its operation lease held by a live holder) is refused at once (``JobBusy``,
naming the holder) unless the verb is told to queue behind it for up to that long. Where a
verb's ``--wait`` already means something else (``submit`` and ``restore``: the health
wait), the same is ``--queue SECONDS``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from streamops.settings import Settings

HELP = ("if the job is busy with another operation, queue behind it for up to SECONDS "
        "(default 0: refused at once, naming the holder)")  # fmt: skip


def add_wait(parser: Any, *, as_wait: bool = True) -> None:
    """``--wait SECONDS`` (or only ``--queue SECONDS`` when ``--wait`` is taken)."""
    names = ("--wait", "--queue") if as_wait else ("--queue",)
    parser.add_argument(*names, dest="lease_wait", type=float, default=0.0, metavar="SECONDS",
                        help=HELP)  # fmt: skip


def refuse_if_busy(args: argparse.Namespace, settings: Settings) -> None:
    """A verb that changes a job named on its command line, not told to wait, is refused
    before it imports its procedure when a live holder has the job (the answer in a fraction
    of the command's start-up). Only a shortcut: the procedure's own lease is what holds."""
    job = getattr(args, "job", None) or getattr(args, "name", None)
    if getattr(args, "lease_wait", None) != 0.0 or not isinstance(job, str):
        return
    from streamops.state import op_lease

    try:
        current = op_lease.read_operation(settings.layout, job)
    except Exception:  # noqa: BLE001 - a bad name or record: the verb says so itself
        return
    if current is not None and op_lease.holder_alive(current):
        raise op_lease.busy(current)


MAX_ERROR = 600


def summarised(message: str, limit: int = MAX_ERROR) -> str:
    """``message`` as an error line a person reads: a long one (a child's whole command line,
    a stack of output) is cut to its head and tail, saying how much was cut."""
    if len(message) <= limit:
        return message
    head, tail = message[: limit * 2 // 3], message[-limit // 4 :]
    cut = len(message) - len(head) - len(tail)
    return f"{head} … [{cut} characters cut; run with -v for the whole message] … {tail}"
