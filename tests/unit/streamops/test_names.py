"""Names that become directory names: only safe single path components pass."""

from __future__ import annotations

import pytest

from streamops.exceptions import ConfigError, UnsafeNameError
from streamops_contract.names import check_name


@pytest.mark.parametrize(
    "name",
    ["fleet-pings", "a", "0", "job_1.v2", "a.b", "x" * 63, "9lives", "a-", "a."],
)
def test_safe_names_pass_unchanged(name: str) -> None:
    assert check_name("job", name) == name


@pytest.mark.parametrize(
    "name",
    [
        "..",
        ".",
        "/x",
        "x/",
        "a/../b",
        "a/b",
        "",
        "Fleet",
        "UPPER",
        "x" * 64,
        "a..b",
        "-lead",
        "_lead",
        ".hidden",
        "a b",
        "tab\tname",
        "new\nline",
        "naïve",
        "a\\b",
        "a:b",
    ],
)
def test_unsafe_names_are_refused(name: str) -> None:
    with pytest.raises(UnsafeNameError) as info:
        check_name("savepoint", name)
    message = str(info.value)
    assert message.startswith(f"invalid savepoint name {name!r}")
    assert "1-63 characters" in message


@pytest.mark.parametrize("value", [None, 7, b"bytes", ["a"]])
def test_non_strings_are_refused(value: object) -> None:
    with pytest.raises(UnsafeNameError, match="invalid stage name"):
        check_name("stage", value)


def test_unsafe_name_error_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        check_name("job", "../etc")
