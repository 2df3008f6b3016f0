"""Evidence that a lease holder is no longer the cluster's: the master dropped its driver.

A holder cut off from the network (its host partitioned) keeps its process and, through the
shared state root, its heartbeat; the lease alone would wait for it forever. The master
declares its worker dead after ``spark.worker.timeout`` and relaunches its supervised driver
under a new id, removing the old driver's FILESYSTEM recovery file: a driver the master keeps
finding the holder's file gone knows the holder was superseded, and takes the lease over
(the next epoch); the holder's next heartbeat or write finds the epoch changed and stops.
Standard library and the state layout only: used before a driver's Spark session exists.
"""

from __future__ import annotations

import logging
import re

from streamops_contract.recovery import driver_persisted
from streamops_contract.state import lease
from streamops_contract.state.layout import StateLayout

log = logging.getLogger("spark_jobs.runtime")
DRIVER_ID = re.compile(r"^driver-\d+-\d+$")


def superseded(layout: StateLayout, held: lease.Lease, own: object) -> bool:
    """Whether ``held``'s driver is no longer one of the master's while this driver (``own``,
    its driver id) is: the master relaunched it (its worker was declared dead: a node lost
    or cut off by the network) or ended it. The master's FILESYSTEM recovery directory in
    the state root says so (a file per driver it keeps). A holder cut off from the network
    may still heartbeat through the shared state root: it is fenced then instead of being
    waited for (it would never expire)."""
    if not own or not DRIVER_ID.match(held.holder) or held.holder == own:
        return False
    recovery = layout.recovery_dir
    if not driver_persisted(recovery, str(own)) or driver_persisted(recovery, held.holder):
        return False  # no master persists here, or it still keeps the holder
    log.warning("job %s: lease holder %s (on %s, epoch %s) is no longer a driver of the "
                "master (relaunched or ended); driver %s takes the lease over and fences it",
                held.job, held.holder, held.host, held.epoch, own)  # fmt: skip
    return True


def another_live_driver(layout: StateLayout, held: lease.Lease, own: object) -> bool:
    """Whether ``held``'s fresh holder is another driver the master keeps while this one
    (``own``) is one too: not this driver's dead predecessor (the master removed that one's
    file when it relaunched it), so waiting for its lease to expire would only hold cores. The
    case: the node of a driver idling after its handover dies; the master relaunches it under
    a new id while its successor runs the job. ``False`` when no master persists here."""
    if not own or not DRIVER_ID.match(held.holder) or held.holder == own:
        return False
    recovery = layout.recovery_dir
    return bool(driver_persisted(recovery, str(own)) and driver_persisted(recovery, held.holder))
