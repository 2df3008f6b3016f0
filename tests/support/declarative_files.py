"""Files of the declarative drills: a transactions job spec with the drill's store, and a
resource applied as a file, as ``streamops apply -f`` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from streamops.settings import PROJECT_ROOT
from streamops.state.declarative.resources import load_resources
from streamops.state.declarative.store import Store

CONFIG = PROJECT_ROOT / "config" / "jobs"


def spec_file(tmp: Path, job: str, base: str, store_url: str, version: str | None = None) -> Path:
    """``config/jobs/<base>`` as job ``job`` writing to ``store_url`` (and at ``version``)."""
    spec = yaml.safe_load((CONFIG / base).read_text())
    spec.update(name=job, args={**spec["args"], "store_url": store_url})
    if version:
        spec["version"] = version
    path = tmp / f"spec-{spec['version']}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def apply(store: Store, tmp: Path, doc: dict[str, Any], name: str = "deployment") -> None:
    """``doc`` written to ``<tmp>/<name>.yaml`` and applied."""
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    for resource in load_resources(path):
        store.apply(resource, source=str(path))
