"""Training the cluster's class archives: ``streamops cluster train-classes``.

A short run of the flagship job on the cluster, fed by both simulators in this process: it
starts, commits a few batches of every stage and takes a savepoint; then its driver and each
executor write every class they loaded (``jcmd <pid> VM.cds dynamic_dump``, which needs
``-XX:+RecordDynamicDumpInfo`` on the JVM; a dump at exit would be cut short: a worker kills
an executor 10 s after its application ended), and the run is cancelled. The archives go
where :class:`ClassArchives` finds them, and every job JVM started afterwards maps them
(:func:`streamops.cluster.submission.build_submission`). The run has its own state root inside the
archives' directory, removed afterwards: it lists no job, takes no lease and writes no store
of the real state root. The JVMs are found by their command lines, so the training runs on the
machine of the workers (the local cluster).
no lease and writes no store of the real state root.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from streamops.cluster.class_archives import (
    JAVA_OPTIONS,
    ROLES,
    ClassArchives,
    Role,
    add_option,
    java_home,
)
from streamops.exceptions import ClusterError
from streamops.jobs import JobRegistry
from streamops.procedures.savepoint_taking import savepoint_job
from streamops.processes import processes_with_marker, read_cmdline
from streamops.settings import Settings
from streamops.sim import AlphaSimulator, BetaSimulator
from streamops.spec import load_spec
from streamops.world.submit import submit_job
from streamops_contract.state.locks import file_lock

log = logging.getLogger("streamops.stack.class_training")

TRAINING_JOB = "class-training"
TRAINING_SPEC = "fleet-pings-v2.yaml"  # the flagship job's latest version: every kind of stage
DUMP_TIMEOUT_S = 300.0  # one JVM's dump (seconds of a loaded machine's CPU)
MARKER = "streamops.classTraining"  # a system property that finds the run's JVMs
DRIVER_CLASS = "org.apache.spark.deploy.worker.DriverWrapper"


@dataclass(frozen=True)
class Training:
    """What a training run made."""

    archives: ClassArchives
    seconds: float
    trained: bool  # False: the archives of this key existed already

    def describe(self) -> str:
        if not self.trained:
            return f"class archives {self.archives.key} are up to date ({self.archives.directory})"
        sizes = ", ".join(f"{role} {self.archives.path(role).stat().st_size / 2**20:.0f} MiB"
                          for role in ROLES)  # fmt: skip
        return (f"class archives {self.archives.key} trained in {self.seconds:.0f}s ({sizes}) "
                f"in {self.archives.directory}")  # fmt: skip


def train_class_archives(
    settings: Settings, *, force: bool = False, run_s: float = 10.0, timeout: float = 600.0
) -> Training:
    """Train the archives of the cluster's current JDK and classpath, unless they exist
    (``force`` trains again). Older archives (another key) are removed once the new ones are
    in place. Raises :class:`ClusterError` if the run fails or writes no archive."""
    archives = ClassArchives.of(settings)
    archives.directory.mkdir(parents=True, exist_ok=True)
    with file_lock(archives.directory / ".training.lock"):  # one training at a time
        if archives.present() and not force:
            log.info("class archives %s exist; nothing to train", archives.key)
            return Training(archives, 0.0, trained=False)
        started = time.monotonic()
        scratch = Path(tempfile.mkdtemp(prefix=".training-", dir=archives.directory))
        try:
            _run(settings, scratch, run_s, timeout)
            _promote(archives, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        for old in archives.stale():
            log.info("removing class archive %s (another JDK or classpath)", old.name)
            old.unlink(missing_ok=True)
        return Training(archives, time.monotonic() - started, trained=True)


def _run(settings: Settings, scratch: Path, run_s: float, timeout: float) -> None:
    training = settings.model_copy(update={"state_root": scratch / "state"})
    alpha = AlphaSimulator(scratch / "alpha", rate=50.0)
    beta = BetaSimulator(port=0, rate=50.0)
    spec = load_spec(settings.config_dir / "jobs" / TRAINING_SPEC)
    conf = dict(spec.conf)
    for role in ROLES:
        options = add_option(conf.get(JAVA_OPTIONS[role], ""), "-XX:+RecordDynamicDumpInfo")
        conf[JAVA_OPTIONS[role]] = add_option(options, f"-D{MARKER}={scratch.name}")
    registry = JobRegistry(training)
    try:
        beta.start()
        alpha.start()
        spec = spec.model_copy(update={
            "name": TRAINING_JOB, "trigger_interval": "1 second", "conf": conf,
            "args": {**spec.args, "alpha_dir": str(scratch / "alpha"), "beta_url": beta.url,
                     "store_url": f"sqlite:///{scratch / 'training.db'}"},
        })  # fmt: skip
        log.info("class training: running %s v%s on the cluster for its first batches, "
                 "%.0fs more and a savepoint", spec.entrypoint, spec.version, run_s)  # fmt: skip
        submit_job(spec, training, wait_healthy=timeout)
        time.sleep(run_s)
        savepoint_job(training, TRAINING_JOB, "class-training")
        try:
            _dump(_training_jvms(settings.layout.root, scratch.name), scratch)
        except ClusterError as exc:
            if "No such process" not in str(exc):
                raise
            # a JVM of the run ended between being found and its dump (seen once in CI, the
            # driver): once the job runs again (a relaunched driver), dump what runs then
            log.warning("class training: %s; trying again once the job runs", exc)
            _wait_running(registry, timeout)
            time.sleep(run_s)
            _dump(_training_jvms(settings.layout.root, scratch.name), scratch)
    finally:
        alpha.stop()
        beta.stop()
        if registry.view(TRAINING_JOB).is_live:
            registry.cancel(TRAINING_JOB)


def _wait_running(registry: JobRegistry, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not registry.view(TRAINING_JOB).healthy:
        if time.monotonic() > deadline:
            raise ClusterError(f"class training: the run did not run again within {timeout:.0f}s")
        time.sleep(1.0)


def _training_jvms(root: Path, token: str) -> dict[int, Role]:
    """The driver and executors of the training run (processes of the cluster at ``root``
    on this machine, found by the marker in their command line): pid → role."""
    marker = f"-D{MARKER}={token}"
    found: dict[int, Role] = {}
    for pid in processes_with_marker(root):
        args = read_cmdline(pid, settle=0.0)
        if marker in args:
            found[pid] = "driver" if DRIVER_CLASS in args else "executor"
    return found


def _dump(jvms: dict[int, Role], scratch: Path) -> None:
    """Have the driver and one executor write the classes they loaded (``jcmd VM.cds
    dynamic_dump``), one after the other: a dump stops its JVM for seconds (the executors
    ran the same tasks)."""
    jdk = java_home()
    jcmd = jdk / "bin" / "jcmd" if jdk else None
    if jcmd is None or not jcmd.is_file():
        raise ClusterError(f"class training needs the JDK's jcmd (not found in {jdk})")
    chosen = {role: pid for pid, role in sorted(jvms.items())}
    for role in ROLES:
        if role not in chosen:
            raise ClusterError(f"class training: no {role} of the training run on this machine")
    for role, pid in chosen.items():
        target = scratch / f"{role}-{pid}.jsa"
        started = time.monotonic()
        done = subprocess.run(  # noqa: S603 - the JDK's own tool, arguments built here
            [str(jcmd), str(pid), "VM.cds", "dynamic_dump", str(target)],
            capture_output=True, text=True, timeout=DUMP_TIMEOUT_S, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not target.is_file():
            raise ClusterError(f"class training: the {role} (pid {pid}) wrote no archive: "
                               f"{(done.stdout + done.stderr).strip()[-500:]}")  # fmt: skip
        log.info("class training: %s (pid %d) archived its classes in %.1fs", role, pid,
                 time.monotonic() - started)  # fmt: skip


def _promote(archives: ClassArchives, scratch: Path) -> None:
    """Move the driver's archive and the largest executor's into place (atomic renames),
    both or neither."""
    made = {role: sorted(scratch.glob(f"{role}-*.jsa"), key=lambda p: -p.stat().st_size)
            for role in ROLES}  # fmt: skip
    for role in ROLES:
        if not made[role]:
            raise ClusterError(f"class training made no {role} archive")
    for role in ROLES:
        os.replace(made[role][0], archives.path(role))
        log.info("class training: %s archive %s (%.0f MiB)", role, archives.path(role).name,
                 archives.path(role).stat().st_size / 2**20)  # fmt: skip
