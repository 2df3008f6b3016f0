"""Benchmark: a savepoint of copies (with sha256) against the hard links it replaced, same run.

No Spark: builds a checkpoint-like directory of ``--keys`` keys' state in a temporary dir
(per stage: ``--partitions`` state partitions, each with the first delta holding every key
of the partition, full snapshots every 10 versions as HDFSBackedStateStore writes them,
small deltas for the batches between, ``.crc`` files, offsets and commits), then times:

- ``links``: today's savepoint before issue 44, hard links, as the module was at
  ``--baseline-ref`` (``git show``), with sizes only (a savepoint without cancel) and with
  sha256 (with cancel: hashed, then verified by reading again);
- ``copies``: the savepoint now, independent read-only copies, sizes only and with sha256
  (hashed while copying);
- ``restore``: copying a savepoint's stages back and checking them against the manifest.

Page cache warm (the files were just written, as a live job's are). Not part of the suite.

    .venv/bin/python tests/perf/bench_savepoint_copy.py --keys 1000000 --repeat 3
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from streamops.state.layout import StateLayout
from streamops.state.savepoints.restore import restore_stages
from streamops_contract.state.savepoints.create import create_savepoint

REPO = Path(__file__).resolve().parents[2]
CREATE = "plugins/streamops_contract/state/savepoints/create.py"


def build_checkpoint(root: Path, keys: int, partitions: int, bytes_per_key: int,
                     batches: int, trickle: int) -> tuple[int, int]:  # fmt: skip
    """A stage's checkpoint at committed batch ``batches - 1``; (files, bytes)."""
    for batch in range(batches):
        for folder in ("offsets", "commits"):
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / str(batch)).write_bytes(os.urandom(300))
    (root / "metadata").write_text('{"id":"bench"}')
    per_part = keys // partitions
    for part in range(partitions):
        folder = root / "state" / "0" / str(part)
        folder.mkdir(parents=True)
        for version in range(1, batches + 1):  # batch N writes state version N + 1
            if version == 1:
                _write(folder / "1.delta", per_part * bytes_per_key)
            else:
                _write(folder / f"{version}.delta", max(1, trickle // partitions) * bytes_per_key)
            if version % 10 == 1 and version > 1:
                _write(folder / f"{version}.snapshot", per_part * bytes_per_key)
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def _write(path: Path, size: int) -> None:
    block = os.urandom(min(size, 1 << 20))
    with open(path, "wb") as fh:
        left = size
        while left > 0:
            fh.write(block[: min(left, len(block))])
            left -= len(block)
    path.with_name(f".{path.name}.crc").write_bytes(os.urandom(8 + 4 * -(-size // 512)))


def baseline_module(ref: str) -> ModuleType:
    """``create.py`` as it was at ``ref`` (hard links), loaded beside today's modules."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{ref}:{CREATE}"], check=True,
                            capture_output=True, text=True).stdout  # fmt: skip
    if "os.link" not in source:
        raise SystemExit(f"{ref}:{CREATE} does not hard-link: pick a ref before issue 44.4")
    path = Path(tempfile.mkdtemp()) / "create_links.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("create_links", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn: Callable[[], object], cleanup: Callable[[], None], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
        cleanup()
    return times


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--partitions", type=int, default=4)  # the jobs' spark.sql.shuffle.partitions
    p.add_argument("--bytes-per-key", type=int, default=80)
    p.add_argument("--batches", type=int, default=25)
    p.add_argument("--trickle", type=int, default=1000, help="keys changed per batch")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--baseline-ref", default="main")
    p.add_argument("--dir", help="where to build it (default: a temporary dir)")
    args = p.parse_args()

    links = baseline_module(args.baseline_ref)
    top = Path(tempfile.mkdtemp(prefix="bench-savepoint-", dir=args.dir))
    try:
        layout = StateLayout.at(top / "state")
        dirs, files, size = {}, 0, 0
        for i in range(args.stages):
            stage = f"stage-{i}"
            dirs[stage] = layout.checkpoint("bench", stage)
            f, b = build_checkpoint(dirs[stage], args.keys // args.stages, args.partitions,
                                    args.bytes_per_key, args.batches, args.trickle)  # fmt: skip
            files, size = files + f, size + b
        entries = {s: {"batch_id": args.batches - 1, "stateful": True} for s in dirs}
        print(f"checkpoint: {args.keys} keys, {args.stages} stages x {args.partitions} "
              f"partitions, {files} files, {size / 1e6:.0f} MB, in {top} "
              f"({os.cpu_count()} cores)")  # fmt: skip

        def drop() -> None:
            shutil.rmtree(layout.savepoint("sp"))

        rows = []
        for label, module, checksum in (
            ("links, sizes (before 44: no cancel)", links, "size"),
            ("links, sha256 (before 44: with cancel)", links, "sha256"),
            ("copies, sizes", None, "size"),
            ("copies, sha256 (now)", None, "sha256"),
        ):
            make = module.create_savepoint if module is not None else create_savepoint

            def run(make: Callable[..., object] = make, checksum: str = checksum) -> object:
                return make(layout, "sp", job="bench", version="1", stage_dirs=dirs,
                            stage_entries=entries, checksum=checksum)  # fmt: skip

            rows.append((label, timed(run, drop, args.repeat)))
        create_savepoint(layout, "sp", job="bench", version="1", stage_dirs=dirs,
                         stage_entries=entries, checksum="sha256")  # fmt: skip
        rows.append(("restore of every stage (copy + check)", timed(
            lambda: restore_stages(layout, "sp", dirs), lambda: None, args.repeat)))  # fmt: skip
        for label, times in rows:
            print(f"  {label:42s} median {statistics.median(times):6.2f} s  "
                  f"(runs: {', '.join(f'{t:.2f}' for t in times)})")  # fmt: skip
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
