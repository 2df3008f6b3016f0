"""Helpers of the integration tests (importable: ``tests`` is on pytest's pythonpath)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from streamops.cluster.local import LocalCluster
from streamops.jobs import JobRegistry, JobView
from streamops.settings import Settings


@dataclass(frozen=True)
class ClusterHandle:
    settings: Settings
    cluster: LocalCluster

    @property
    def registry(self) -> JobRegistry:
        return JobRegistry(self.settings)


def wait_until(
    check: Callable[[], object], timeout: float, what: str, interval: float = 1.0
) -> object:
    """Poll ``check`` until it returns something truthy; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def source_positions(view: JobView) -> dict[str, dict[str, object]]:
    """Per stage, the end offsets of its sources merged into one dict."""
    out: dict[str, dict[str, object]] = {}
    for stage, info in view.stages.items():
        merged: dict[str, object] = {}
        for src in info.get("sources") or []:
            merged.update(src.get("end_offset") or {})
        out[stage] = merged
    return out
