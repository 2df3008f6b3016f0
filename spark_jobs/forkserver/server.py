"""A job driver's fork server: its Python workers start as forks of a process that has
already imported what they need.

A v2 driver of fleet-pings starts a dozen Python processes before its first batch: a source
runner per streaming Python source of each stage, daemons that create and plan data sources,
each importing PySpark, NumPy and PyArrow anew: most of a second of CPU each, on a machine
that is saturated while a new version starts (``tests/perf/bench_upgrade.py``). The driver
starts this server first thing (:meth:`ForkServer.start`, in parallel with its JVM); the
server imports those modules once. Once the session is up, :meth:`ForkServer.attach` makes
``streamops-python`` (:mod:`spark_jobs.forkserver.client`) the Python of the session's Python
functions and tells the server which JVM may ask: the driver's own. Spark then starts its
workers as before, and ``streamops-python`` turns each start into a fork here.

The server forks a child per accepted request, gives it the requester's stdin, stdout and
stderr, environment, working directory and arguments, runs the module as ``python -m`` would
(``runpy``), and reports the child's end (exit code or signal) to the requester, which exits
the same way. A requester that dies (SIGKILL) takes its child with it. Requests are served
for the driver's JVM and for the executors of the same application on this machine and in
this network namespace (``--app-id`` on their command line); any other process (another
application's executor, another host sharing the kernel, another ``PYTHONHASHSEED``) is
refused, and the requester runs the real Python instead. When the driver
closes the server's stdin (or dies), the server stops its remaining children and exits.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import logging
import os
import runpy
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_jobs.forkserver.client import PYTHON_ENV, SOCKET_ENV
from spark_jobs.pythonpath import without_spark_zips

log = logging.getLogger("spark_jobs.forkserver")

CONF_ENABLED = "spark.streamops.pythonForkServer"
CLIENT = "streamops-python"  # the console script of spark_jobs.forkserver.client
# What the driver's Python workers import: Spark's runner modules (streaming sources, data
# source lookup, creation and read planning, the daemon and its worker) and the job's sources.
PRELOAD = (
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.lookup_data_sources",
    "pyspark.daemon",
    "pyspark.worker",
    "spark_jobs.sources",
)
READY_TIMEOUT_S = 30.0


@dataclass
class Request:
    """What a forked child runs: ``python ARGV`` with this environment in this directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    fds: list[int]


# ---------------------------------------------------------------------------------------
# the driver's side


class ForkServer:
    """The driver's handle on its fork server process."""

    def __init__(self, proc: subprocess.Popen[bytes], directory: Path) -> None:
        self.proc = proc
        self.directory = directory
        self.path = str(directory / "s")

    @classmethod
    def start(cls) -> ForkServer | None:
        """Start a server (it imports in the background); None when ``streamops-python`` is
        not installed beside this Python."""
        if not client_path().exists():
            log.warning("fork server off: %s not found beside %s", CLIENT, sys.executable)
            return None
        directory = Path(tempfile.mkdtemp(prefix="pyfork-"))  # short: a socket path <= 107
        # the hash seed PySpark gives its workers (SparkContext.environment): a fork keeps
        # the server's, so the server starts with it
        env = dict(os.environ, PYTHONHASHSEED=os.environ.get("PYTHONHASHSEED", "0"))
        proc = subprocess.Popen(
            [sys.executable, "-m", "spark_jobs.forkserver.server", str(directory / "s")],
            stdin=subprocess.PIPE, env=env,
        )  # fmt: skip
        return cls(proc, directory)

    def attach(self, sc: Any) -> None:
        """Make the server serve ``sc``'s JVM: its Python functions (data sources included)
        created from now on start their workers through ``streamops-python``."""
        jvm_pid = int(sc._jvm.java.lang.ProcessHandle.current().pid())
        assert self.proc.stdin is not None
        try:
            if self.proc.poll() is not None:
                raise OSError(f"exited with {self.proc.returncode}")
            self.proc.stdin.write(f"allow {jvm_pid}\nallow-app {sc.applicationId}\n".encode())
            self.proc.stdin.flush()
        except OSError as exc:
            log.warning("fork server off: the server is gone (%s); workers start as usual", exc)
            return
        sc.environment[PYTHON_ENV] = sc.pythonExec
        sc.environment[SOCKET_ENV] = self.path
        sc.pythonExec = str(client_path())
        log.info("fork server: Python workers of JVM %d start as forks (%s)", jvm_pid,
                 self.path)  # fmt: skip

    def stop(self) -> None:
        """Close the server's stdin: it stops its children and exits."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def client_path() -> Path:
    """``streamops-python``, installed beside this Python."""
    return Path(sys.executable).parent / CLIENT


def enabled(conf: Any) -> bool:
    return str(conf.get(CONF_ENABLED, "true")).lower() != "false"


# ---------------------------------------------------------------------------------------
# the server


def parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def same_network(pid: int) -> bool:
    """Whether process ``pid`` is in this process's network namespace (True where that
    cannot be told)."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net") == os.readlink("/proc/self/ns/net")
    except OSError:
        return True


def read_request(conn: socket.socket) -> Request:
    """The length-prefixed JSON request and the three descriptors sent with it."""
    conn.settimeout(5.0)
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    if len(fds) != 3 or len(data) < 4:
        for fd in fds:
            os.close(fd)
        raise OSError("malformed request")
    (size,) = struct.unpack("!I", data[:4])
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise OSError("request cut short")
        body += chunk
    msg = json.loads(body)
    return Request(argv=list(msg["argv"]), env=dict(msg["env"]), cwd=str(msg["cwd"]), fds=fds)


class Server:
    """Accepts requests on ``path``; :meth:`serve` returns only in a forked child."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.pid = os.getpid()
        self.allowed: int | None = None  # the driver's JVM
        self.app: str | None = None  # its application: executors of it on this machine
        self.refused: set[str] = set()
        self.children: dict[int, socket.socket] = {}  # pid -> its requester's connection
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ, "accept")
        self.sel.register(self.wake_r, selectors.EVENT_READ, "reap")
        self.sel.register(sys.stdin.buffer, selectors.EVENT_READ, "driver")
        self.stdin = b""
        self.running = True

    def serve(self) -> Request | None:
        while self.running:
            for key, _ in self.sel.select():
                if key.data == "accept":
                    try:
                        req = self.accept()
                    except Exception as exc:  # noqa: BLE001 - the requester runs the real Python
                        if os.getpid() != self.pid:
                            os._exit(70)  # a child that failed to set up: never serve twice
                        print(f"fork server: a request failed: {exc!r}", file=sys.stderr)
                        continue
                    if req is not None:
                        return req  # in the child
                elif key.data == "reap":
                    os.read(self.wake_r, 512)
                    self.reap()
                elif key.data == "driver":
                    self.from_driver()
                else:  # a requester's connection: readable only when it went away
                    self.requester_gone(key.data)
        self.shutdown()
        return None

    def from_driver(self) -> None:
        chunk = os.read(sys.stdin.fileno(), 4096)
        if not chunk:
            self.running = False
            return
        self.stdin += chunk
        while b"\n" in self.stdin:
            line, self.stdin = self.stdin.split(b"\n", 1)
            kind, _, value = line.decode().partition(" ")
            if kind == "allow":
                self.allowed = int(value)
            elif kind == "allow-app":
                self.app = value

    def refusal(self, conn: socket.socket, req: Request) -> str | None:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        peer, _uid, _gid = struct.unpack("3i", creds)
        parent = parent_of(peer)
        if parent is None or not (parent == self.allowed or self.executor_of_app(parent)):
            return "not a JVM of this application"
        if not same_network(peer):
            # another host sharing this kernel and file system (a network namespace, a
            # container with the same /tmp): a fork here would bind this host's loopback,
            # which its JVM cannot reach
            return "another network namespace"
        if req.env.get("PYTHONHASHSEED") != os.environ.get("PYTHONHASHSEED"):
            return "another PYTHONHASHSEED"
        if req.argv[:1] != ["-m"] or len(req.argv) < 2:
            return "not python -m MODULE"
        return None

    def accept(self) -> Request | None:
        conn, _ = self.listener.accept()
        try:
            req = read_request(conn)
        except (OSError, ValueError):
            conn.close()
            return None
        reason = self.refusal(conn, req)
        if reason is not None:
            if reason not in self.refused:  # once per reason: executors beside ask often
                self.refused.add(reason)
                print(f"fork server: refused a worker ({reason}): it runs the real Python",
                      file=sys.stderr, flush=True)  # fmt: skip
            with contextlib.suppress(OSError):
                conn.sendall(f"no {reason}\n".encode())
            self.close_fds(req.fds)
            conn.close()
            return None
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.in_child(conn)
            return req
        self.close_fds(req.fds)
        try:
            conn.sendall(f"pid {pid}\n".encode())
        except OSError:  # the requester gave up: nobody would read this child's end
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            conn.close()
            return None
        self.children[pid] = conn
        self.sel.register(conn, selectors.EVENT_READ, pid)
        return None

    def in_child(self, conn: socket.socket) -> None:
        """Drop everything of the server in a freshly forked child."""
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        self.sel.close()
        self.listener.close()
        conn.close()
        for other in self.children.values():
            other.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def executor_of_app(self, pid: int) -> bool:
        """Whether ``pid`` is an executor of our application (``... --app-id APP ...``)."""
        if self.app is None:
            return False
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        app = self.app.encode()
        return any(a == b"--app-id" and b == app for a, b in zip(args, args[1:], strict=False))

    @staticmethod
    def close_fds(fds: list[int]) -> None:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
            line = f"signal {sig}\n" if sig else f"exit {os.WEXITSTATUS(status)}\n"
            with contextlib.suppress(OSError):
                conn.sendall(line.encode())
            with contextlib.suppress(KeyError):  # unregistered already if the requester died
                self.sel.unregister(conn)
            conn.close()

    def requester_gone(self, pid: int) -> None:
        conn = self.children.get(pid)
        if conn is None:
            return
        try:
            alive = conn.recv(1, socket.MSG_PEEK) != b""
        except OSError:
            alive = False
        if not alive:  # killed outright: its child goes too (it is reaped as usual)
            self.sel.unregister(conn)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def shutdown(self) -> None:
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while self.children and time.monotonic() < deadline:
            time.sleep(0.05)
            self.reap()
        for pid in list(self.children):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
            os.rmdir(os.path.dirname(self.path))  # the driver's, if it died without stop()


def run_child(req: Request) -> None:
    """Become ``python -m MODULE ARGS`` of the request (in a forked child)."""
    for fd, target in zip(req.fds, (0, 1, 2), strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(req.cwd)
    os.environ.clear()
    os.environ.update(req.env)
    unbuffered = bool(req.env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), line_buffering=True, write_through=unbuffered
    )
    sys.stderr = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), line_buffering=True, write_through=True,
        errors="backslashreplace",
    )  # fmt: skip
    # Spark's zipped PySpark off the path: the server imported the installed, compiled twin
    extra = without_spark_zips([p for p in req.env.get("PYTHONPATH", "").split(os.pathsep) if p])
    if "PYTHONPATH" in os.environ:
        os.environ["PYTHONPATH"] = os.pathsep.join(extra)
    sys.path[:] = [req.cwd, *[p for p in extra if p not in sys.path], *sys.path[1:]]
    module, args = req.argv[1], req.argv[2:]
    sys.argv = [module, *args]
    # `ps` shows what it runs, not the server's command line
    python = req.env.get(PYTHON_ENV, sys.executable)
    with contextlib.suppress(ImportError):
        import setproctitle

        setproctitle.setproctitle(" ".join([python, *req.argv]))
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="runpy")
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def main() -> None:
    started = time.monotonic()
    server = Server(sys.argv[1])  # bound first: a worker started meanwhile waits for it
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # a Spark without one of them: its workers import it
            print(f"fork server: cannot preload {name}: {exc}", file=sys.stderr)
    print(f"fork server: ready in {time.monotonic() - started:.1f}s", file=sys.stderr)
    req = server.serve()
    if req is not None:  # a forked child: leave the server's stack and run the request
        run_child(req)


if __name__ == "__main__":
    main()
