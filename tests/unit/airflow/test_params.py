from __future__ import annotations

from pathlib import Path

import pytest

from streamops.settings import Settings
from streamops_airflow.exceptions import ParamError
from streamops_airflow.params import existing_savepoint, known_job, positive_int, safe_name


def test_positive_int_names_the_param() -> None:
    assert positive_int({"workers": "3"}, "workers") == 3
    with pytest.raises(ParamError, match="invalid param 'workers': must be at least 1, got 0"):
        positive_int({"workers": 0}, "workers")
    with pytest.raises(ParamError, match="'workers': is required"):
        positive_int({}, "workers")


def test_unsafe_and_unknown_names_are_refused(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    with pytest.raises(ParamError, match="invalid param 'savepoint'"):
        safe_name({"savepoint": "../etc"}, "savepoint")
    with pytest.raises(ParamError, match="unknown job 'nope'"):
        known_job({"job": "nope"}, "job", settings)
    with pytest.raises(ParamError, match="invalid param 'savepoint'"):
        existing_savepoint({"savepoint": "missing-sp"}, "savepoint", settings)
