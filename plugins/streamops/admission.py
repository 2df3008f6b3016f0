"""Admission: an operation that changes what runs, or what it runs on, first checks that the
cluster would still hold every job after the loss of its largest worker (N+1).

``submit``, ``upgrade``, ``restore``, a scale-down and ``apply`` call :func:`admit` with what
they are about to change: the specs that will run (replacing the jobs of the same name), or
the workers that will go. The jobs counted are every declared job (submitted, not cancelled
nor stopped since) and every job with a live application, each by its recorded spec. The
arithmetic is :mod:`streamops.cluster.capacity`.

A shortfall refuses the operation with :class:`~streamops.exceptions.CapacityShortfall`,
naming the cores needed and those left after losing worker X; with ``allow_no_spare``
(``--allow-no-spare``) it is logged as a warning and the operation goes on. A master that
does not answer cannot be asked: the check is skipped with a warning (the operation itself
then fails on the master, or acts on the nodes alone).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

from streamops.cluster.capacity import Need, Node, SpareCheck, nodes_of_master, spare_check
from streamops.cluster.client import MasterClient
from streamops.cluster.status import worker_sort_key
from streamops.exceptions import CapacityShortfall, ClusterNotRunning
from streamops.health.gather import cluster_status, declared_jobs, job_needs
from streamops.settings import Settings
from streamops.spec import JobSpec

log = logging.getLogger("streamops.admission")

FLAG = "--allow-no-spare"


def admit(
    settings: Settings, what: str, *, specs: Iterable[JobSpec] = (),
    remove: Sequence[str] = (), workers: int | None = None, allow_no_spare: bool = False,
    client: MasterClient | None = None,
) -> SpareCheck | None:  # fmt: skip
    """Check N+1 for ``what`` (``"submit of fleet-pings v2"``): the jobs with ``specs``
    running, on the workers without ``remove`` (or only ``workers`` of them). Raises
    :class:`CapacityShortfall` on a shortfall unless ``allow_no_spare``; ``None`` when the
    master does not answer."""
    client = client or MasterClient(settings)
    try:
        if not client.is_alive():  # a look, not a wait: the operation says more
            raise ClusterNotRunning(f"no answer at {settings.webui_url}")
        master = client.state()
    except ClusterNotRunning as exc:
        log.warning("%s: capacity not checked, the master does not answer (%s)", what, exc)
        return None
    new = {s.name: Need.of_spec(s) for s in specs}
    nodes = _nodes_after(settings, master, remove, workers)
    needs = {**job_needs(settings, _counted_jobs(settings, master) - set(new)), **new}
    check = spare_check(nodes, [needs[n] for n in sorted(needs)])
    if check.ok:
        log.info("%s: %s", what, check.summary())
        return check
    if allow_no_spare:
        log.warning("%s: %s; going on without a spare (%s)", what, check.summary(), FLAG)
        return check
    raise CapacityShortfall(
        f"{what} refused: {check.summary()}. Add a worker first (`streamops scale --workers "
        f"{len(nodes) + 1}`), cancel a job, give the job fewer cores, or pass {FLAG} to go on "
        "without a spare (a lost worker then leaves a job waiting for cores). Nothing was "
        "changed."
    )


def _counted_jobs(settings: Settings, master: dict[str, Any]) -> set[str]:
    """Every declared job of the state root, and every known job with a live application."""
    layout = settings.layout
    known = set(layout.known_jobs())
    running = {str(a.get("name")) for a in master.get("activeapps") or []} & known
    return set(declared_jobs(layout, running))


def _nodes_after(
    settings: Settings, master: dict[str, Any], remove: Sequence[str], workers: int | None
) -> list[Node]:
    """The ALIVE workers once ``remove`` went, or once only ``workers`` are left (a scale
    removes the highest-numbered first)."""
    status = cluster_status(settings, master)
    names = {w.id: w.name for w in status.workers if w.id and w.name}
    nodes = [n for n in nodes_of_master(master, names) if n.name not in set(remove)]
    if workers is not None and workers < len(nodes):
        nodes = sorted(nodes, key=lambda n: worker_sort_key(n.name))[:workers]
    return nodes
