"""The faked reconcile world of the declarative unit tests (:mod:`support.reconcile_world`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.reconcile_world import make_world


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return make_world(tmp_path, monkeypatch)
