"""The command line answers ``--help`` without importing a heavy library: each verb imports
what it needs when it runs (``streamops.cli.deferred``)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("pyspark", "airflow", "sqlalchemy", "pydantic", "fastapi", "uvicorn", "requests",
         "rich", "yaml", "jwt", "streamops.settings")  # fmt: skip

PROBE = """
import json, sys
from streamops.cli import build_parser
parser = build_parser()
for argv in (["--help"], ["jobs", "--help"], ["sim", "start", "--help"], ["restart", "--help"]):
    try:
        parser.parse_args(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def test_help_imports_no_heavy_library() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          check=True)  # fmt: skip
    modules = json.loads(done.stdout.splitlines()[-1])
    heavy = [m for m in modules if any(m == h or m.startswith(f"{h}.") for h in HEAVY)]
    assert heavy == []
