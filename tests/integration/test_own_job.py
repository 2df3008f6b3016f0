"""A job the lab never saw, on the real local cluster: ``streamops new-job`` writes it into a
folder outside the project, its code ships through the state root (a zip named by its hash,
shown in status), a savepoint with cancel stops it, an edited v2 of the code starts from the
savepoint with both stages restored by name, and the tables equal what the files hold:
counts carried over from v1's state, every bad line quarantined once."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from support.integration import ClusterHandle, describe_job, wait_until

from streamops import scaffold
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.spec import JobSpec, load_spec
from streamops.state.savepoints import catalogue
from streamops.world.restore import start_from_savepoint
from streamops.world.submit import submit_job

pytestmark = pytest.mark.integration
JOB = "own-job-it"


def lines(n: int, start: int) -> str:
    """``n`` events of users u0..u4, every fifth line not JSON, every seventh without user."""
    out = []
    for i in range(start, start + n):
        if i % 5 == 0:
            out.append(f"broken line {i}")
        elif i % 7 == 0:
            out.append(json.dumps({"action": "view", "at": str(i)}))
        else:
            out.append(json.dumps({"user": f"u{i % 4}", "action": "click", "at": str(i)}))
    return "\n".join(out) + "\n"


def expected(text: str) -> tuple[Counter[str], int]:
    users: Counter[str] = Counter()
    bad = 0
    for line in text.splitlines():
        try:
            user = json.loads(line).get("user")
        except ValueError:
            user = None
        if user:
            users[user] += 1
        else:
            bad += 1
    return users, bad


def tables(db: Path) -> tuple[dict[str, int], int]:
    with sqlite3.connect(db) as conn:
        counts = dict(conn.execute("SELECT user, events FROM user_counts").fetchall())
        (bad,) = conn.execute("SELECT count(*) FROM quarantine").fetchone()
    return counts, int(bad)


def test_a_scaffolded_job_runs_and_is_upgraded_from_a_savepoint(
    spark_cluster: ClusterHandle, tmp_path: Path
) -> None:
    settings, registry = spark_cluster.settings, spark_cluster.registry
    folder = tmp_path / "elsewhere" / "clicks"
    scaffold.create("clicks", folder)
    inbox, db = tmp_path / "in", tmp_path / "out.db"
    inbox.mkdir()

    def spec(version: str) -> JobSpec:
        base = load_spec(folder / "clicks.yaml")
        return base.model_copy(update={"name": JOB, "version": version, "args": {
            **base.args, "input_dir": str(inbox), "store_url": f"sqlite:///{db}"}})

    first, second = lines(60, 1), lines(60, 61)
    (inbox / "events-1.json").write_text(first, encoding="utf-8")
    try:
        submit_job(spec("1"), settings, wait_healthy=300)
        v1 = registry.view(JOB)
        assert v1.status.code and v1.status.code.startswith(f"{JOB}-"), describe_job(v1)
        assert (settings.layout.root / "code" / JOB / v1.status.code).is_file()
        want = expected(first)
        wait_until(lambda: tables(db) == (dict(want[0]), want[1]), 120, "v1's tables",
                   describe=lambda: f"{tables(db)} != {want}")  # fmt: skip

        result = savepoint_job(settings, JOB, "own-job-v1", cancel=True)
        assert result.ok, result
        taken = catalogue.get_savepoint(settings.layout, "own-job-v1")
        assert taken.code == v1.status.code  # the code version the savepoint was taken with
        module = folder / "code" / "clicks.py"
        module.write_text(module.read_text(encoding="utf-8") + "\n# v2\n", encoding="utf-8")
        (inbox / "events-2.json").write_text(second, encoding="utf-8")
        start_from_savepoint(spec("2"), settings, "own-job-v1", ["user-counts", "quarantine"],
                             wait_healthy=300)  # fmt: skip
        v2 = registry.view(JOB)
        assert v2.version == "2" and v2.status.code not in (None, v1.status.code)
        want = expected(first + second)  # v1's counts carried on by the restored state
        wait_until(lambda: tables(db) == (dict(want[0]), want[1]), 120, "v2's tables",
                   describe=lambda: f"{tables(db)} != {want}")  # fmt: skip
    finally:
        spark_cluster.let_go(JOB)
