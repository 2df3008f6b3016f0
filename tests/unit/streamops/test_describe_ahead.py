"""Describe ahead: which spec files ``up`` has described in the background (the versions a
running job may be upgraded to), from the project's own ``config/jobs``."""

from __future__ import annotations

from pathlib import Path

from streamops.describe_ahead import candidates
from streamops.settings import Settings


def names(paths: list[Path]) -> list[str]:
    return [p.name for p in paths]


def test_the_other_versions_of_the_running_jobs(tmp_path: Path) -> None:
    settings = Settings.from_env({}, state_root=str(tmp_path))
    assert names(candidates(settings, {"fleet-pings": "1"})) == ["fleet-pings-v2.yaml"]
    assert names(candidates(settings, {"fleet-pings": "2", "trade-analyser": "1"})) == [
        "fleet-pings.yaml", "trade-analyser-v2.yaml",
    ]  # fmt: skip
    assert candidates(settings, {}) == []  # nothing runs: nothing to describe


def test_a_broken_spec_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "broken.yaml").write_text("name: [not a name\n")
    settings = Settings.from_env({}, state_root=str(tmp_path / "s"), config_dir=str(tmp_path))
    assert candidates(settings, {"fleet-pings": "1"}) == []


def test_the_cache_key_does_not_depend_on_the_order_of_a_specs_mappings() -> None:
    """The upgrade DAG's spec comes back from XCom (PostgreSQL's JSONB, shorter keys first):
    its description is the one describe-ahead made from the file."""
    from streamops import describe_cache
    from streamops.settings import PROJECT_ROOT
    from streamops.spec import load_spec, spec_from_dict

    spec = load_spec(PROJECT_ROOT / "config" / "jobs" / "fleet-pings-v2.yaml")
    doc = spec.model_dump(mode="json")
    by_length = {k: doc[k] for k in sorted(doc, key=lambda k: (len(k), k))}
    by_length["args"] = {k: doc["args"][k] for k in sorted(doc["args"], key=lambda k: (len(k), k))}
    assert list(by_length["args"]) != list(doc["args"])  # the order really differs
    assert describe_cache.key(spec_from_dict(by_length)) == describe_cache.key(spec)
