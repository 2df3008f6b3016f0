"""The base of the project's one exception hierarchy, and the errors the contract raises.

:mod:`streamops.exceptions` extends it with the operator's errors and draws the whole tree;
the job runtime raises and catches these (a name, a spec, the lease, a savepoint).
"""

from __future__ import annotations


class StreamopsError(Exception):
    """Base class of every error raised by streamops."""


class ConfigError(StreamopsError):
    """A job spec, a setting or a name is invalid; the message names the field."""


class UnsafeNameError(ConfigError):
    """A name could escape the directory it names (``..``, ``/``, empty, odd characters)."""


class UnreadableFile(ConfigError):
    """A file cannot be read as what it should be: not UTF-8 (the message names the byte
    offset), not JSON or YAML, or not of its schema. One line, naming the file."""


class JobError(StreamopsError):
    """A job-level operation failed."""


class SavepointError(StreamopsError):
    """A savepoint could not be written, read, verified or restored; the message says which."""


class SavepointExists(SavepointError):
    """A savepoint of that name exists already; pick another name or delete it first."""
