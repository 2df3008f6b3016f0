"""What keeps the command line quick to build: values and handlers imported when used.

``streamops --help`` and ``streamops VERB --help`` build every verb's parser; a verb module
therefore imports only :mod:`argparse` at its top, and anything heavy (pydantic settings,
Spark's client, FastAPI, rich) inside its handler. Two helpers serve the cases where the
parser itself needs something from a heavy module:

- :class:`LazyChoices`: an argument's ``choices`` read from a module on first use (when the
  argument is parsed or its help shown);
- :func:`handler`: a verb handler living in a heavy module, imported when the verb runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamops.settings import Settings

Handler = Callable[[argparse.Namespace, "Settings"], int]


class LazyChoices(Sequence[str]):
    """The tuple ``module.attribute``, imported on first use.

    Give the argument a ``metavar``: argparse then iterates the choices only to validate a
    value or to expand ``%(choices)s`` in a help text, never while the parser is built."""

    def __init__(self, module: str, attribute: str) -> None:
        self.module, self.attribute = module, attribute
        self._values: tuple[str, ...] | None = None

    def _load(self) -> tuple[str, ...]:
        if self._values is None:
            self._values = tuple(getattr(importlib.import_module(self.module), self.attribute))
        return self._values

    def __getitem__(self, index: Any) -> Any:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __contains__(self, value: object) -> bool:
        return value in self._load()


def handler(module: str, function: str) -> Handler:
    """A handler that imports ``module`` and calls its ``function`` when the verb runs."""

    def run(args: argparse.Namespace, settings: Settings) -> int:
        found: Handler = getattr(importlib.import_module(module), function)
        return found(args, settings)

    run.__qualname__ = run.__name__ = f"{module}.{function}"
    return run
