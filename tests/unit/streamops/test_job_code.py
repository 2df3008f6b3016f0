"""A job's own code (``code`` in its spec): resolved beside the spec file, published as one
zip per content under the state root, its version the zip's hash."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from streamops import job_code
from streamops.exceptions import ConfigError
from streamops.spec import load_spec
from streamops.state.layout import StateLayout

SPEC = """name: mine
version: "1"
entrypoint: mine_job
code: {code}
"""


def job(tmp_path: Path, code: str = "src") -> Path:
    folder = tmp_path / "project"
    (folder / "src" / "__pycache__").mkdir(parents=True)
    (folder / "src" / "mine_job.py").write_text("def build(ctx):\n    pass\n")
    (folder / "src" / "helpers.py").write_text("X = 1\n")
    (folder / "src" / "__pycache__" / "mine_job.cpython-311.pyc").write_bytes(b"\0")
    (folder / "mine.yaml").write_text(SPEC.format(code=code))
    return folder


def test_code_is_resolved_beside_the_spec_file(tmp_path: Path) -> None:
    folder = job(tmp_path)
    assert load_spec(folder / "mine.yaml").code == str(folder / "src")


def test_a_missing_code_folder_is_named(tmp_path: Path) -> None:
    folder = job(tmp_path, code="nowhere")
    with pytest.raises(ConfigError, match=r"code: .*nowhere is not a folder"):
        load_spec(folder / "mine.yaml")


def test_published_once_per_content_and_importable_from_the_zip(tmp_path: Path) -> None:
    folder = job(tmp_path)
    layout = StateLayout.at(tmp_path / "state")
    spec = load_spec(folder / "mine.yaml")
    one = job_code.publish(spec, layout)
    assert one.code is not None and one.code.endswith(".zip")
    assert job_code.publish(one, layout) == one  # already published: as it is
    again = job_code.publish(spec, layout)
    assert again.code == one.code  # same content, same zip
    with zipfile.ZipFile(str(one.code)) as zf:
        assert sorted(zf.namelist()) == ["helpers.py", "mine_job.py"]  # no bytecode
    (folder / "src" / "helpers.py").write_text("X = 2\n")
    two = job_code.publish(spec, layout)
    assert two.code != one.code and Path(str(one.code)).is_file()
    assert job_code.version(two) == Path(str(two.code)).stem.rsplit("-", 1)[1]
    sys.path.insert(0, str(two.code))
    try:
        import helpers  # type: ignore[import-not-found]

        assert helpers.X == 2
    finally:
        sys.path.remove(str(two.code))
        sys.modules.pop("helpers", None)


def test_a_spec_without_code_is_left_alone(tmp_path: Path) -> None:
    spec = load_spec(Path(__file__).resolve().parents[3] / "config" / "jobs" / "transactions.yaml")
    assert job_code.publish(spec, StateLayout.at(tmp_path)) is spec
    assert job_code.version(spec) is None
