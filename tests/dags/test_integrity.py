"""DAG integrity, generic over every file in ``dags/``: imports cleanly, ``dag_id`` is the
file stem, tags, Markdown doc, retries, typed params; parsing touches no network and no
connection (checked in a fresh interpreter with both patched to raise)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAG_FILES = sorted(p for p in (REPO / "dags").glob("*.py") if not p.name.startswith("_"))

# Runs in a fresh interpreter (Airflow configured by the test's environment): patches the
# network and connection lookups to raise, parses the dags folder, prints what it saw.
PARSE_GUARDED = textwrap.dedent(
    """
    import json, socket, sys
    touched = []

    def refuse(what):
        def fail(*args, **kwargs):
            touched.append(what)
            raise RuntimeError(f"{what} at parse time")
        return fail

    socket.socket.connect = refuse("socket connect")
    socket.create_connection = refuse("socket create_connection")
    socket.getaddrinfo = refuse("DNS lookup")
    from airflow.sdk import BaseHook, Variable
    BaseHook.get_connection = classmethod(refuse("connection read"))
    from airflow.sdk.definitions.connection import Connection
    Connection.get = classmethod(refuse("connection read"))
    Variable.get = staticmethod(refuse("variable read"))
    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(dag_folder=sys.argv[1], include_examples=False)
    print(json.dumps({"errors": {k: str(v) for k, v in bag.import_errors.items()},
                      "dags": sorted(bag.dag_ids), "touched": touched}))
    """
)


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(REPO / "dags"), include_examples=False)
    return bag


def test_there_are_dags() -> None:
    assert DAG_FILES, "no DAG files under dags/"


def test_every_dag_imports_without_errors(dagbag) -> None:
    assert dagbag.import_errors == {}


@pytest.mark.parametrize("path", DAG_FILES, ids=lambda p: p.stem)
def test_dag_conventions(dagbag, path: Path) -> None:
    dag = dagbag.dags.get(path.stem)
    assert dag is not None, f"{path.name} must define a DAG with dag_id {path.stem!r}"
    assert dag.fileloc == str(path)
    assert "streamops" in dag.tags, f"{dag.dag_id}: tags {dag.tags} lack 'streamops'"
    assert dag.doc_md and dag.doc_md.lstrip().startswith("#"), f"{dag.dag_id}: no Markdown doc"
    assert dag.catchup is False and dag.max_active_runs == 1
    assert "retries" in dag.default_args, f"{dag.dag_id}: default_args must set retries"
    for name in dag.params:
        param = dag.params.get_param(name)
        assert param.schema.get("type"), f"{dag.dag_id}: param {name!r} has no type"
        assert param.schema.get("title") and param.description, (
            f"{dag.dag_id}: param {name!r} needs a title and a description for the form"
        )
    first = [t for t in dag.tasks if not t.upstream_list]
    assert [t.task_id for t in first] == ["validate"] or not dag.params, (
        f"{dag.dag_id}: the first task must validate the params, got {[t.task_id for t in first]}"
    )


def test_parsing_needs_no_network_and_no_connection() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PARSE_GUARDED, str(REPO / "dags")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["touched"] == [], report
    assert report["errors"] == {}, report["errors"]
    assert report["dags"] == sorted(p.stem for p in DAG_FILES)


def test_the_guard_catches_a_dag_that_reads_a_connection(tmp_path: Path) -> None:
    """The parse check can fail: a DAG reading a connection at parse time is caught."""
    (tmp_path / "bad.py").write_text(
        "from airflow.sdk import BaseHook, dag\n"
        "BaseHook.get_connection('spark_standalone_default')\n"
        "@dag(schedule=None)\ndef bad():\n    pass\nbad()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", PARSE_GUARDED, str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["touched"] == ["connection read"]
    assert "bad.py" in "".join(report["errors"])
