"""The job of each driver the master persisted, read from its FILESYSTEM recovery files."""

from __future__ import annotations

from pathlib import Path

from streamops_contract.recovery import app_name, driver_app_names


def java_string(text: str) -> bytes:
    """A string as Java serialization writes it: ``t``, its length on two bytes, its bytes."""
    data = text.encode()
    return b"t" + len(data).to_bytes(2, "big") + data


def test_the_app_name_ends_where_its_serialized_string_ends() -> None:
    # the next string's marker ("t") right after the name must not join it
    blob = b"\xac\xed\x00\x05sr\x00\x04Info" + java_string("-Dspark.app.name=fleet-pings")
    blob += java_string("tail") + java_string("-Dspark.master=spark://h:7077")
    assert app_name(blob) == "fleet-pings"
    assert app_name(b"\xac\xed\x00\x05" + java_string("-Dspark.master=x")) is None
    assert app_name(b"-Dspark.app.name=x") is None  # no length before it: not a string


def test_every_persisted_driver_by_id(tmp_path: Path) -> None:
    (tmp_path / "driver_driver-20260101000000-0001").write_bytes(
        java_string("-Dspark.app.name=fleet-hot"))  # fmt: skip
    (tmp_path / "driver_driver-20260101000000-0002").write_bytes(b"garbage")
    (tmp_path / "app_app-20260101000000-0000").write_bytes(java_string("-Dspark.app.name=x"))
    assert driver_app_names(tmp_path) == {"driver-20260101000000-0001": "fleet-hot"}
    assert driver_app_names(tmp_path / "absent") == {}
