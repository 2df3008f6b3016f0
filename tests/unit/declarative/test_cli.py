"""``streamops apply -f`` / ``get`` / ``delete`` on a state root, without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamops.cli import main

REPO = Path(__file__).resolve().parents[3]


def test_apply_get_delete(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("COLUMNS", "200")
    root = ["--state-root", str(tmp_path)]
    deployment = REPO / "config" / "deployments" / "transactions.yaml"
    request = REPO / "config" / "savepoint-requests" / "transactions-v1-final.yaml"
    assert main([*root, "apply", "-f", str(deployment), "-f", str(request)]) == 0
    out = capsys.readouterr().out
    assert "deployment/transactions created (generation 1)" in out
    assert "savepoint/transactions-v1-final created (generation 1)" in out
    assert main([*root, "apply", "-f", str(deployment)]) == 0
    assert "unchanged" in capsys.readouterr().out

    assert main([*root, "get", "deployments"]) == 0
    out = capsys.readouterr().out
    for column in ("NAME", "STATUS", "ID", "SUBMISSIONTIME", "COMPLETIONTIME"):
        assert column in out
    assert "transactions" in out and "Pending" in out
    assert main([*root, "get", "savepoints"]) == 0
    out = capsys.readouterr().out
    assert "STATE" in out and "CREATIONTIME" in out and "transactions-v1-final" in out

    assert main([*root, "delete", "savepoint", "transactions-v1-final"]) == 0
    assert main([*root, "get", "deployments", "--json"]) == 0
    assert '"generation": 1' in capsys.readouterr().out
    assert main([*root, "delete", "deployment", "nothing"]) == 2
    assert "no deployment named 'nothing'" in capsys.readouterr().err


def test_apply_refuses_an_invalid_file_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             ) -> None:  # fmt: skip
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: JobDeployment\nname: tx\nstate: paused\nspec_file: missing.yaml\n")
    good = REPO / "config" / "deployments" / "transactions.yaml"
    assert main(["--state-root", str(tmp_path), "apply", "-f", str(good), "-f", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "invalid JobDeployment" in err and "  state:" in err and "  spec_file:" in err
    assert not (tmp_path / "declarative" / "deployments").exists()  # nothing was applied
