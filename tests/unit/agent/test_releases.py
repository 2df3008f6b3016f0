"""The jar release store: known releases, atomic switch of the active symlink, record."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.agent_fake import make_settings

from streamops.cluster.releases import ReleaseStore
from streamops.exceptions import UnknownRelease


def test_switch_points_the_active_link_and_records_it(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = ReleaseStore(settings)
    assert store.known() == ["r1", "r2"] and store.active() is None
    first = store.switch("r1")
    assert first.previous is None and first.changed
    link = settings.layout.active_release_link
    assert Path(os.readlink(link)) == settings.config_dir / "jars" / "releases" / "r1"
    assert (link / "streamops-udf.jar").read_bytes() == b"PK fake r1"
    second = store.switch("r2")
    assert (second.active, second.previous) == ("r2", "r1")
    assert (link / "streamops-udf.jar").read_bytes() == b"PK fake r2"
    assert store.record()["active"] == "r2" and store.record()["previous"] == "r1"
    assert not store.switch("r2").changed
    assert [p.name for p in link.parent.iterdir() if p.name.startswith(".")] == []


def test_unknown_release_names_the_known_ones(tmp_path: Path) -> None:
    store = ReleaseStore(make_settings(tmp_path))
    with pytest.raises(UnknownRelease, match="'r3'.*known releases: r1, r2"):
        store.switch("r3")
    assert store.active() is None


def test_a_directory_without_jars_is_not_a_release(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    (settings.config_dir / "jars" / "releases" / "empty").mkdir()
    assert ReleaseStore(settings).known() == ["r1", "r2"]
