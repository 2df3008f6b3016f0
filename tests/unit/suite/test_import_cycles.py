"""``scripts/import_cycles.py`` on synthetic trees: two top-level packages that import each
other fail, so does an import between top-level packages their floors forbid (unless allowed
edge by edge), and the map of the floors in a doc fails the check when stale and is written by
``--write-map``."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"


@pytest.fixture
def cycles(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    return importlib.import_module("import_cycles")


def tree(root: Path, files: dict[str, str]) -> Path:
    """``root/plugins`` with ``files`` (path -> source), every folder a package."""
    plugins = root / "plugins"
    for rel, source in files.items():
        path = plugins / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for folder in path.relative_to(plugins).parents:
            if folder != Path("."):
                (plugins / folder / "__init__.py").touch()
        path.write_text(source)
    return plugins


def test_two_top_level_packages_that_import_each_other_fail(
    cycles: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No module circle and no two-way room (each package is one room), yet ``alpha`` and
    ``beta`` each import the other: neither stands below."""
    plugins = tree(tmp_path, {
        "alpha/one.py": "from beta import two\n",
        "alpha/four.py": "",
        "beta/two.py": "",
        "beta/three.py": "import alpha.four\n",
    })  # fmt: skip
    assert cycles.main([str(plugins)]) == 1
    out = capsys.readouterr().out
    assert "0 import circle(s)" in out and "0 two-way folder pair(s)" in out
    assert "two-way top-level packages: alpha <-> beta" in out
    assert "alpha.one -> beta.two" in out and "beta.three -> alpha.four" in out


def test_one_way_top_level_packages_pass(cycles: ModuleType, tmp_path: Path) -> None:
    plugins = tree(tmp_path, {"alpha/one.py": "from beta import two\n", "beta/two.py": ""})
    assert cycles.main([str(plugins)]) == 0


def test_a_crossing_the_floors_forbid_fails_unless_allowed(
    cycles: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The contract imports nothing of either side; the job side only the contract."""
    plugins = tree(tmp_path, {
        "streamops_contract/names.py": "from streamops import settings\n",
        "streamops/settings.py": "from streamops_contract import names\n",
        "spark_jobs/main.py": "from streamops_contract.names import x\n",
    })  # fmt: skip
    assert cycles.main([str(plugins)]) == 1
    out = capsys.readouterr().out
    assert "streamops_contract.names -> streamops.settings" in out
    graph, _ = cycles.build_graph(cycles.module_files([plugins]))
    assert cycles.forbidden_crossings(graph) == [("streamops_contract.names", "streamops.settings")]
    allowed = frozenset({("streamops_contract.names", "streamops.settings")})
    assert cycles.forbidden_crossings(graph, allowed=allowed) == []
    # an allowance no import makes any more is reported, so the list only shrinks
    assert cycles.stale_allowances(graph, frozenset({("spark_jobs.main", "streamops.x")})) == [
        ("spark_jobs.main", "streamops.x")
    ]


def test_the_map_of_the_floors_is_checked_and_written(
    cycles: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plugins = tree(tmp_path, {
        "streamops_contract/names.py": '"""Safe names. More words."""\n',
        "streamops/state/__init__.py": '"""The state root."""\n',
        "streamops/state/lease.py": "from streamops_contract import names\n",
        "streamops/cli.py": "from streamops.state import lease\n",
    })  # fmt: skip
    marks = cycles.import_map
    doc = tmp_path / "architecture.md"
    doc.write_text(f"# Map\n\n{marks.BEGIN}\n| 1 | `old` | gone | nothing |\n{marks.END}\nrest\n")
    assert cycles.main(["--doc", str(doc), str(plugins)]) == 1
    assert "is stale" in capsys.readouterr().out
    assert cycles.main(["--doc", str(doc), "--write-map", str(plugins)]) == 0
    text = doc.read_text()
    assert "`old`" not in text and text.endswith(f"{marks.END}\nrest\n")
    assert "| 1 | `streamops_contract.names` | Safe names | nothing |" in text
    assert "| 2 | `streamops.state` | The state root | `streamops_contract.names` |" in text
    assert "| 3 | `streamops.cli` |  | `streamops.state` |" in text
    assert cycles.main(["--doc", str(doc), str(plugins)]) == 0
    # a new import changes the map: the check fails until it is written again
    (plugins / "streamops_contract" / "names.py").write_text("import streamops_contract.more\n")
    (plugins / "streamops_contract" / "more.py").write_text("")
    assert cycles.main(["--doc", str(doc), str(plugins)]) == 1


def test_a_circle_of_rooms_has_no_floors(cycles: ModuleType) -> None:
    rooms = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": set()}
    floor, stuck = cycles.import_map.floors(rooms)
    assert stuck and floor["a.w"] == 1
