"""The launcher jar: the primary resource of every Python job submitted in cluster mode.

Standalone refuses Python drivers in cluster mode, so a job is submitted as a "Java" app
whose main class is ``org.apache.spark.deploy.PythonRunner`` (shipped with Spark) and
whose primary resource is this jar. It holds only a manifest; it is written once per
state root, deterministically (fixed timestamps), so every node gets identical bytes.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

from streamops.state.layout import StateLayout

JAR_NAME = "streamops-launcher.jar"
_MANIFEST = (
    "Manifest-Version: 1.0\r\n"
    "Created-By: streamops\r\n"
    "Implementation-Title: streamops launcher (PythonRunner primary resource)\r\n"
    "\r\n"
)


def ensure_launcher_jar(layout: StateLayout) -> Path:
    """Return the launcher jar under ``<state>/lib``, writing it atomically if missing."""
    path = layout.lib_dir / JAR_NAME
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{JAR_NAME}.{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as jar:
        info = zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=(2020, 1, 1, 0, 0, 0))
        jar.writestr(info, _MANIFEST)
    os.replace(tmp, path)
    return path
