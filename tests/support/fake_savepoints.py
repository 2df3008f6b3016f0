"""The savepoint store of the procedure fakes (``restart_fake``, ``upgrade_fake``): a request
goes through the real control files, as the real store sends it; the fake world says what is
checked before (``check``: the job must be running) and what follows (``then``: the fake old
driver answers at once)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from streamops.exceptions import SavepointNotFound
from streamops.settings import Settings
from streamops_contract.state import control


def _nothing(*_: Any) -> None:
    return None


@dataclass
class FakeSavepoints:
    settings: Settings
    savepoints: set[str]  # the names taken: the fake world's own set, shared
    check: Callable[[str], None] = field(default=_nothing)
    then: Callable[[], None] = field(default=_nothing)

    def request(self, job: str, name: str, *, cancel: bool, handover: bool, timeout: float,
                request_id: str | None) -> str:  # fmt: skip
        self.check(job)
        sent = control.send_request(self.settings.layout, job, "savepoint", name=name,
                                    cancel=cancel, timeout=timeout, handover=handover,
                                    request_id=request_id)  # fmt: skip
        self.then()
        return sent.id

    def get(self, name: str, job: str | None = None) -> Any:
        if name not in self.savepoints:
            raise SavepointNotFound(f"no savepoint {name}")
        return SimpleNamespace(stages={"vehicles": 1})

    def taken(self, name: str, job: str | None = None) -> bool:
        return name in self.savepoints
