"""Which checkpoint files belong to a committed batch, and whether a state chain is whole."""

from __future__ import annotations

import pytest

from streamops_contract.state.checkpoint_cut import in_cut, missing_state_versions, versioned


@pytest.mark.parametrize(
    ("rel", "owner"),
    [
        ("offsets/7", 7),
        ("commits/7", 7),
        ("commits/.7.crc", 7),
        ("sources/0/7", 7),
        ("sources/0/9.compact", 9),
        ("state/0/3/8.delta", 7),  # batch 7 writes state version 8
        ("state/0/3/.8.delta.crc", 7),
        ("state/0/3/8.snapshot", 7),
        ("state/0/3/default/8.zip", 7),
        ("state/0/3/8_1b2c-33.changelog", 7),
        ("metadata", None),
        ("state/0/_metadata/metadata", None),
        ("state/0/3/SSTs/000012-abc.sst", None),
        ("offsets/not-a-batch", None),
    ],
)
def test_the_batch_of_each_kind_of_file(rel: str, owner: int | None) -> None:
    assert versioned(rel) == owner


def test_the_cut_keeps_what_batch_n_left_and_nothing_of_the_next() -> None:
    files = ["metadata", "offsets/4", "offsets/5", "commits/4", "state/0/0/5.delta",
             "state/0/0/6.delta", "state/0/_metadata/metadata"]  # fmt: skip
    # batch 5 is planned and its state written, but not committed: the cut is batch 4
    assert [f for f in files if in_cut(f, 4)] == [
        "metadata", "offsets/4", "commits/4", "state/0/0/5.delta", "state/0/_metadata/metadata"
    ]  # fmt: skip
    assert [f for f in files if in_cut(f, None)] == ["metadata", "state/0/_metadata/metadata"]


def test_a_state_chain_needs_every_delta_after_its_newest_snapshot() -> None:
    whole = ["state/0/0/1.delta", "state/0/0/2.delta", "state/0/0/2.snapshot",
             "state/0/0/3.delta", "state/0/0/4.delta"]  # fmt: skip
    assert missing_state_versions(whole, 3) == []
    # delta 1 purged: fine, snapshot 2 covers it
    assert missing_state_versions(whole[1:], 3) == []
    # delta 3 gone: version 4 cannot be rebuilt
    assert missing_state_versions([f for f in whole if f != "state/0/0/3.delta"], 3) == [
        "state/0/0: version 3"
    ]
    assert missing_state_versions(["state/0/1/2.delta"], 1) == ["state/0/1: version 1"]
    assert missing_state_versions(whole, None) == []
