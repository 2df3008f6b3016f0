"""Validation of the names that become directory names: jobs, stages, savepoints, workers."""

from __future__ import annotations

import re

from streamops_contract.exceptions import UnsafeNameError

_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def check_name(kind: str, name: object) -> str:
    """Return ``name`` if it is a safe single path component, else raise ``UnsafeNameError``.

    Allowed: 1-63 characters of lowercase letters, digits, ``.``, ``_`` and ``-``, starting
    with a letter or digit, and never ``..`` anywhere.
    """
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise UnsafeNameError(
            f"invalid {kind} name {name!r}: use 1-63 characters of a-z, 0-9, '.', '_', '-', "
            "starting with a letter or digit, without '..'"
        )
    return name
