"""The exceptions of the project: one tree, the contract's base extended with the operator's.

The base and the errors the contract raises are :mod:`streamops_contract.exceptions`, named
from here too, so every error is imported from one place on the operator's side.

Every error a user can cause derives from :class:`StreamopsError` and says what was wrong
and what to do about it::

    StreamopsError
    ├── ConfigError            a job spec, setting or name is invalid
    │   ├── UnsafeNameError    a job, stage or savepoint name could escape its directory
    │   └── UnreadableFile     a file is not text (UTF-8) or not of its format; names the file
    ├── ClusterError           the Spark standalone cluster refused or failed an operation
    │   ├── ClusterNotRunning  the master (or its REST server) cannot be reached
    │   ├── ProcessError       a local master/worker process failed to start or stop
    │   ├── AgentError         a node agent refused or failed a request (carries its message)
    │   ├── UnknownRelease     no jar release of that name under <config>/jars/releases
    │   └── ClusterRestartFailed  a full-cluster restart failed (and was rolled back)
    ├── JobError               a job-level operation failed
    │   ├── JobAlreadyRunning  a live instance of the job name exists (submit refused)
    │   ├── JobNotFound        no job of that name is known
    │   ├── JobBusy            another live operation holds the job (names it; --wait queues)
    │   ├── UpgradeRefused     the upgrade's plan is not allowed; nothing was stopped
    │   ├── UpgradeFailed      an upgrade cannot go on (rolled back when it stopped the job)
    │   └── RestartFailed      a restart cannot go on (no intent, another owner's, finished)
    ├── SavepointError         a savepoint could not be written, read, verified or restored
    │   ├── SavepointExists    the name is taken
    │   ├── SavepointNotFound  no readable savepoint of that name
    │   └── SavepointProtected a running job was started from it
    ├── SimulatorError         a simulator was given bad parameters
    └── Unhealthy              a health check found something wrong (the message names it)
"""

from __future__ import annotations

# the contract's part of the tree (the job runtime raises those), named from here too
from streamops_contract.exceptions import (
    ConfigError as ConfigError,
)
from streamops_contract.exceptions import (
    JobError as JobError,
)
from streamops_contract.exceptions import (
    SavepointError as SavepointError,
)
from streamops_contract.exceptions import (
    SavepointExists as SavepointExists,
)
from streamops_contract.exceptions import (
    StreamopsError as StreamopsError,
)
from streamops_contract.exceptions import (
    UnreadableFile as UnreadableFile,
)
from streamops_contract.exceptions import (
    UnsafeNameError as UnsafeNameError,
)


class ClusterError(StreamopsError):
    """The Spark standalone cluster refused or failed an operation."""


class ClusterNotRunning(ClusterError):
    """The master's web UI or REST submission server does not answer."""


class ProcessError(ClusterError):
    """A local Spark daemon process failed to start, register or stop."""


class AgentError(ClusterError):
    """A node agent refused or failed a request; the message is the agent's own.

    ``status`` is the HTTP status of the answer (0 when the agent could not be reached).
    """

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class UnknownRelease(ClusterError):
    """No classpath jar release of that name exists; the message lists the known ones."""


class ClusterRestartFailed(ClusterError):
    """A graceful full-cluster restart failed; the message says at which step and why."""



class JobAlreadyRunning(JobError):
    """A live driver of the same job name exists; a second one is refused."""


class JobNotFound(JobError):
    """No job of that name is known to the state root or the cluster."""


class JobBusy(JobError):
    """Another live operation holds the job's operation lease; nothing was changed. The
    message names the holder (role, run, pid, host), its procedure and step and since when;
    ``holder`` is its lease record."""

    def __init__(self, message: str, holder: object = None) -> None:
        super().__init__(message)
        self.holder = holder


class OperationLost(JobError):
    """This operation's lease on the job was taken over by another operator (it was thought
    gone: its heartbeat stopped longer than the lease's TTL). It stopped at a step boundary
    without undoing anything: the job and its intent are the new holder's now."""


class UpgradeRefused(JobError):
    """The upgrade plan is not allowed; nothing was stopped."""


class UpgradeFailed(JobError):
    """The new version did not become healthy; the old one was restored from the savepoint."""


class RestartFailed(JobError):
    """A restart of a job cannot go on (no intent, another owner's, finished)."""




class SavepointNotFound(SavepointError):
    """No (readable) savepoint of that name; the message lists the existing ones."""


class SavepointProtected(SavepointError):
    """The savepoint is needed by a running job (it was started from it) and is kept."""


class SimulatorError(StreamopsError):
    """A simulator was started with bad parameters."""


class Unhealthy(StreamopsError):
    """A health check failed; the message names every failed check (``streamops health``)."""


class CapacityShortfall(ClusterError):
    """An operation refused: the cluster would not hold every job after the loss of its
    largest worker (N+1); its message names the cores needed and those left."""
