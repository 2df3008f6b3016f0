"""``streamops new-job NAME``: the files it writes, what it refuses, and the generated job's own
test, which must pass as generated (a local Spark over a folder of JSON files)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamops.cli import main
from streamops.spec import load_spec

ROOT = Path(__file__).resolve().parents[3]


def test_new_job_writes_code_spec_deployment_and_test(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "clicks"
    assert main(["--state-root", str(tmp_path / "state"), "new-job", "click-stream",
                 "--dir", str(folder)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "streamops apply -f" in out and "docs/jobs.md" in out
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == [
        "click-stream-deployment.yaml", "click-stream.yaml", "code/click_stream.py",
        "test_click_stream.py"]  # fmt: skip
    spec = load_spec(folder / "click-stream.yaml")
    assert spec.entrypoint == "click_stream" and spec.code == str(folder / "code")
    ruff = subprocess.run([str(Path(sys.executable).parent / "ruff"), "check", "--isolated",
                           "--select", "E,F,I,B,UP", "--line-length", "100", str(folder)],
                          cwd=folder, capture_output=True, text=True)  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout


def test_new_job_refuses_to_overwrite_and_bad_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--state-root", str(tmp_path / "state"), "new-job"]
    assert main([*args, "clicks", "--dir", str(tmp_path / "c")]) == 0
    assert main([*args, "clicks", "--dir", str(tmp_path / "c")]) == 2
    assert "already exist" in capsys.readouterr().err
    assert main([*args, "clicks", "--dir", str(tmp_path / "c"), "--force"]) == 0
    assert main([*args, "9lives", "--dir", str(tmp_path / "d")]) == 2
    assert "Python module name" in capsys.readouterr().err


def test_the_generated_test_passes_as_generated(tmp_path: Path) -> None:
    folder = tmp_path / "clicks"
    assert main(["--state-root", str(tmp_path / "state"), "new-job", "clicks",
                 "--dir", str(folder)]) == 0  # fmt: skip
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "1 passed" in run.stdout
