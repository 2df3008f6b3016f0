from __future__ import annotations

from pathlib import Path

import pytest

from streamops.settings import Settings
from streamops_airflow.exceptions import ParamError
from streamops_airflow.params import (
    existing_savepoint,
    known_job,
    one_of,
    positive_int,
    safe_name,
)


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


def test_one_of_names_the_param_and_the_choices() -> None:
    modes = ("auto", "warm", "cold")
    assert one_of({"standby": "warm"}, "standby", modes) == "warm"
    assert one_of({"standby": ""}, "standby", modes, default="auto") == "auto"
    assert one_of({}, "standby", modes, default="auto") == "auto"
    with pytest.raises(ParamError, match="invalid param 'standby': 'hot' is not one of auto, warm"):
        one_of({"standby": "hot"}, "standby", modes, default="auto")
    with pytest.raises(ParamError, match="invalid param 'standby': None is not one of"):
        one_of({}, "standby", modes)
