"""Class data sharing (AppCDS) archives of the job JVMs: a cold start loads Spark's classes
mapped from an archive instead of parsing and verifying ~15,000 classes from jars.

A cold driver or executor spends most of its first minute loading and linking classes, on
every start: an upgrade pays it in three JVMs (driver, executors) at the worst moment. Java
17 writes a *dynamic archive* of every class a JVM loaded when it exits
(``-XX:ArchiveClassesAtExit``); a JVM started with ``-XX:SharedArchiveFile`` maps it. The
archives are made by a short training run of a real job on the cluster
(:mod:`streamops.stack.class_training`), one for drivers and one for executors.

An archive fits one JDK, one set of jars and one classpath. Its name carries a key of all
three (:func:`archive_key`), so a new Spark install or a jar release switch simply finds no
archive until it is trained again; and the JVM checks the archive itself: one that does not
match is ignored with a warning (``-Xshare:auto``, the default), never a failed start.

The JVM refuses to archive anything when a non-empty directory comes first on the
classpath, and Spark's launcher puts ``SPARK_CONF_DIR`` there: the workers (whose
environment the drivers and executors inherit) get an empty one, and log4j finds its
configuration through ``LOG4J_CONFIGURATION_FILE`` (:mod:`streamops.cluster.daemons`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from streamops.cluster.local_fs import fs_jar
from streamops.cluster.spark_home import find_spark_home
from streamops.settings import Settings

Role = Literal["driver", "executor"]
ROLES: tuple[Role, ...] = ("driver", "executor")
JAVA_OPTIONS = {"driver": "spark.driver.extraJavaOptions",
                "executor": "spark.executor.extraJavaOptions"}  # fmt: skip
CDS_FLAGS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "DynamicDumpInfo", "-Xshare")


def java_home() -> Path | None:
    """The JDK that launches the job JVMs: ``JAVA_HOME``, else the ``java`` on ``PATH``."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    found = shutil.which("java")
    return Path(found).resolve().parent.parent if found else None


def _files(directory: Path) -> Iterable[str]:
    """Name, size and modification time of every file of ``directory`` (what the JVM
    checks of a jar on the classpath), sorted."""
    if not directory.is_dir():
        return [f"{directory}: none"]
    entries = sorted(p for p in directory.resolve().iterdir() if p.is_file())
    return [f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in entries]


def archive_key(settings: Settings, spark_home: Path | None = None) -> str:
    """A short hash of what an archive depends on: the JDK, Spark's jars, the cluster's jar
    release, the base jars (:mod:`streamops.cluster.local_fs`) and the workers' configuration
    directory (all on the job JVMs' classpath)."""
    jdk = java_home()
    parts = [f"jdk {jdk}"]
    if jdk is not None and (jdk / "release").is_file():
        parts.append((jdk / "release").read_text(errors="replace"))
    parts += _files((spark_home or find_spark_home()) / "jars")
    parts += _files(settings.layout.active_release_link)
    parts += _files(fs_jar(settings.config_dir).parent)
    parts.append(f"conf {settings.layout.worker_conf_dir}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ClassArchives:
    """Where the archives of one key live: ``<state>/cluster/class-archives/<role>-<key>.jsa``."""

    directory: Path
    key: str

    @classmethod
    def of(cls, settings: Settings) -> ClassArchives:
        return cls(settings.layout.class_archives_dir, archive_key(settings))

    def path(self, role: Role) -> Path:
        return self.directory / f"{role}-{self.key}.jsa"

    def present(self) -> bool:
        return all(self.path(role).is_file() for role in ROLES)

    def apply(self, props: Mapping[str, str]) -> dict[str, str]:
        """``props`` with each role's archive added to its ``extraJavaOptions``, if the
        archives exist and the options hold no CDS flag of their own (a training run)."""
        out = dict(props)
        if not self.present():
            return out
        for role in ROLES:
            options = out.get(JAVA_OPTIONS[role], "")
            if not any(flag in options for flag in CDS_FLAGS):
                mapped = f"-XX:SharedArchiveFile={self.path(role)}"
                out[JAVA_OPTIONS[role]] = add_option(options, mapped)
        return out

    def stale(self) -> list[Path]:
        """Archives of other keys (another JDK, Spark or jar release)."""
        if not self.directory.is_dir():
            return []
        current = {self.path(role).name for role in ROLES}
        return sorted(p for p in self.directory.glob("*.jsa") if p.name not in current)


def add_option(options: str, option: str) -> str:
    """``options`` with ``option`` appended (quoted if it holds a space: Spark splits the
    options as a shell does)."""
    if any(c.isspace() for c in option):
        option = '"' + option.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return f"{options} {option}".strip()
