"""Invalid UTF-8 in a job spec or a resource file: one error line naming the file and the byte
offset (an :class:`~streamops.exceptions.UnreadableFile`), from the library and from the CLI,
never a ``UnicodeDecodeError`` traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamops import exceptions
from streamops.cli import main
from streamops.settings import PROJECT_ROOT
from streamops.spec import load_spec
from streamops.state.declarative.resources import load_resources

SPEC = (PROJECT_ROOT / "config" / "jobs" / "transactions.yaml").read_bytes()
DEPLOYMENT = (PROJECT_ROOT / "config" / "deployments" / "transactions.yaml").read_bytes()


def spoiled(tmp_path: Path, name: str, good: bytes) -> tuple[Path, int]:
    """``good`` with a Latin-1 byte (not UTF-8) in its first comment or value: the file and
    the offset of the bad byte."""
    at = good.index(b"\n") - 1
    path = tmp_path / name
    path.write_bytes(good[:at] + b"\xe9" + good[at:])
    return path, at


def test_a_job_spec_that_is_not_utf8_names_the_file_and_the_byte(tmp_path: Path) -> None:
    path, at = spoiled(tmp_path, "spec.yaml", SPEC)
    with pytest.raises(exceptions.StreamopsError) as info:
        load_spec(path)
    assert isinstance(info.value, exceptions.UnreadableFile)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message and f"not valid UTF-8 at byte {at} (0xe9)" in message


def test_a_resource_file_that_is_not_utf8_names_the_file_and_the_byte(tmp_path: Path) -> None:
    path, at = spoiled(tmp_path, "deployment.yaml", DEPLOYMENT)
    with pytest.raises(exceptions.StreamopsError) as info:
        load_resources(path)
    assert isinstance(info.value, exceptions.UnreadableFile)
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message and f"not valid UTF-8 at byte {at} (0xe9)" in message


def test_a_deployments_spec_file_that_is_not_utf8_is_named_with_the_byte(tmp_path: Path) -> None:
    spec, at = spoiled(tmp_path, "spec.yaml", SPEC)
    deployment = tmp_path / "deployment.yaml"
    deployment.write_text(f"kind: JobDeployment\nname: transactions\nspec_file: {spec}\n")
    with pytest.raises(exceptions.ConfigError) as info:
        load_resources(deployment)
    assert f"  spec_file: {spec}: not valid UTF-8 at byte {at} (0xe9)" in str(info.value)


@pytest.mark.parametrize("verb", ["submit", "apply"])
def test_the_cli_prints_one_line_and_no_traceback(
    tmp_path: Path, verb: str, capsys: pytest.CaptureFixture[str]
) -> None:  # fmt: skip
    path, at = spoiled(tmp_path, "x.yaml", SPEC if verb == "submit" else DEPLOYMENT)
    args = [str(path)] if verb == "submit" else ["-f", str(path)]
    assert main(["--state-root", str(tmp_path / "state"), verb, *args]) == 2
    err = capsys.readouterr().err
    what = "job spec " if verb == "submit" else ""
    assert err.splitlines() == [f"error: {what}{path}: not valid UTF-8 at byte {at} (0xe9); "
                                "save it as UTF-8"]  # fmt: skip


def test_python_m_streamops_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    path, at = spoiled(tmp_path, "spec.yaml", SPEC)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "streamops", "--state-root", str(tmp_path / "state"), "submit",
         str(path)],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"error: job spec {path}: not valid UTF-8 at byte {at} (0xe9); save it as UTF-8"
    ]
