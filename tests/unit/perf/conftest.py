"""The benchmarks' pure parts (``tests/perf/measures.py``, the chaos soak's table) are
imported as the benchmarks import them: ``tests/perf`` on ``sys.path``."""

from __future__ import annotations

import sys
from pathlib import Path

PERF = str(Path(__file__).resolve().parents[2] / "perf")
if PERF not in sys.path:
    sys.path.append(PERF)
