"""The exceptions of the ops library.

Every error a user can cause derives from :class:`StreamopsError` and says what was wrong
and what to do about it::

    StreamopsError
    ├── ConfigError            a job spec, setting or name is invalid
    │   └── UnsafeNameError    a job, stage or savepoint name could escape its directory
    ├── ClusterError           the Spark standalone cluster refused or failed an operation
    │   ├── ClusterNotRunning  the master (or its REST server) cannot be reached
    │   └── ProcessError       a local master/worker process failed to start or stop
    ├── JobError               a job-level operation failed
    │   ├── JobAlreadyRunning  a live instance of the job name exists (submit refused)
    │   └── JobNotFound        no job of that name is known
    ├── SavepointError         a savepoint could not be written, read, verified or restored
    │   ├── SavepointExists    the name is taken
    │   ├── SavepointNotFound  no readable savepoint of that name
    │   └── SavepointProtected a running job was started from it
    └── SimulatorError         a simulator was given bad parameters
"""

from __future__ import annotations


class StreamopsError(Exception):
    """Base class of every error raised by streamops."""


class ConfigError(StreamopsError):
    """A job spec, a setting or a name is invalid; the message names the field."""


class UnsafeNameError(ConfigError):
    """A name could escape the directory it names (``..``, ``/``, empty, odd characters)."""


class ClusterError(StreamopsError):
    """The Spark standalone cluster refused or failed an operation."""


class ClusterNotRunning(ClusterError):
    """The master's web UI or REST submission server does not answer."""


class ProcessError(ClusterError):
    """A local Spark daemon process failed to start, register or stop."""


class JobError(StreamopsError):
    """A job-level operation failed."""


class JobAlreadyRunning(JobError):
    """A live driver of the same job name exists; a second one is refused."""


class JobNotFound(JobError):
    """No job of that name is known to the state root or the cluster."""


class SavepointError(StreamopsError):
    """A savepoint could not be written, read, verified or restored; the message says which."""


class SavepointExists(SavepointError):
    """A savepoint of that name exists already; pick another name or delete it first."""


class SavepointNotFound(SavepointError):
    """No (readable) savepoint of that name; the message lists the existing ones."""


class SavepointProtected(SavepointError):
    """The savepoint is needed by a running job (it was started from it) and is kept."""


class SimulatorError(StreamopsError):
    """A simulator was started with bad parameters."""
