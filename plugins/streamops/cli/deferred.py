"""What keeps the command line quick to build: values and handlers imported when used.

``streamops --help`` and ``streamops VERB --help`` build every verb's parser; a verb module
therefore imports only :mod:`argparse` at its top, and anything heavy (pydantic settings,
Spark's client, FastAPI, rich) inside its handler. Two helpers serve the cases where the
parser itself needs something from a heavy module:

- :func:`choice_of`: an argument's allowed values read from a module when it is parsed;
- :func:`handler`: a verb handler living in a heavy module, imported when the verb runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streamops.settings import Settings

Handler = Callable[[argparse.Namespace, "Settings"], int]


def choice_of(module: str, attribute: str, default: str | None = None) -> Callable[[str], str]:
    """An argument ``type`` accepting the values of the tuple ``module.attribute``, imported
    when a value is parsed (never while the parser is built or its help shown; say the values
    in the help text). ``default``, the argument's default, is taken as it is: argparse
    passes a string default through ``type`` too, and a verb run with its defaults then
    imports nothing before it runs (a busy job is refused in a fraction of the time)."""

    def check(value: str) -> str:
        if default is not None and value == default:
            return value
        allowed = tuple(getattr(importlib.import_module(module), attribute))
        if value not in allowed:
            raise argparse.ArgumentTypeError(
                f"invalid choice {value!r} (choose from {', '.join(allowed)})"
            )
        return value

    check.__name__ = attribute.lower()
    return check


def handler(module: str, function: str) -> Handler:
    """A handler that imports ``module`` and calls its ``function`` when the verb runs."""

    def run(args: argparse.Namespace, settings: Settings) -> int:
        found: Handler = getattr(importlib.import_module(module), function)
        return found(args, settings)

    run.__qualname__ = run.__name__ = f"{module}.{function}"
    return run
