"""A procedure step whose process dies while it records a phase (a killed Airflow worker or
CLI): the intent store's ``save`` raises ``KeyboardInterrupt`` for that phase inside the
block, and saves as before after it, so the test can run the step again and check that it
resumes rather than repeats harm."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def dies_when_recording(monkeypatch: pytest.MonkeyPatch, store: Any, phase: str) -> Iterator[None]:
    save = store.save

    def died(world: Any, intent: Any, recorded: str, **detail: Any) -> None:
        if recorded == phase:
            raise KeyboardInterrupt("the worker died")
        save(world, intent, recorded, **detail)

    monkeypatch.setattr(store, "save", died)
    try:
        with pytest.raises(KeyboardInterrupt):
            yield
    finally:
        monkeypatch.setattr(store, "save", save)
