"""``streamops-python``: the Python a job's driver gives Spark for its Python workers.

Spark starts a Python process for each streaming Python source of a driver, for each kind of
data source planning, and a daemon per kind of function on each executor; every one imports
PySpark, NumPy and PyArrow anew (most of a second of CPU each). A driver with the fork server
on (:mod:`spark_jobs.forkserver.server`) sets this program as the Python of its session: run as
``streamops-python -m MODULE ...`` beside that driver, it asks the driver's fork server to
fork a process that has those imports done, passes it its stdin, stdout, stderr, arguments,
environment and working directory, forwards the signals it gets to it and exits as it
exits (the executors of the same application on the driver's machine are served too).
Everywhere else (another application's executor, another host, a server that refuses or
is gone), it becomes the real Python with ``exec``: the same command as before.

Environment: ``STREAMOPS_PYFORK`` the server's socket, ``STREAMOPS_PYFORK_PYTHON`` the real
Python (default: the interpreter running this). Kept to the standard library: it runs once
per Python worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import time
from typing import NoReturn

from spark_jobs.pythonpath import strip_environ

SOCKET_ENV = "STREAMOPS_PYFORK"
PYTHON_ENV = "STREAMOPS_PYFORK_PYTHON"
ANSWER_TIMEOUT_S = 30.0  # a server still importing answers late; a hung one is given up
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


def real_python() -> str:
    return os.environ.get(PYTHON_ENV) or sys.executable


def exec_python(argv: list[str]) -> NoReturn:
    """Become the real Python running ``argv``; when it is this environment's Python, with
    Spark's zipped PySpark and Py4J off its ``PYTHONPATH`` (:mod:`spark_jobs.pythonpath`)."""
    python = real_python()
    here = os.path.dirname(os.path.abspath(sys.executable))
    if os.path.dirname(os.path.abspath(python)) == here:
        strip_environ()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # the mask outlives execv
    os.execv(python, [python, *argv])


def request(argv: list[str]) -> bytes:
    """The request a server reads: length-prefixed JSON (arguments, environment, cwd)."""
    body = json.dumps({"argv": argv, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
    return struct.pack("!I", len(body)) + body


def read_line(sock: socket.socket) -> str | None:
    """One ``\\n``-terminated line, or None when the server closed first."""
    data = b""
    while not data.endswith(b"\n"):
        try:
            chunk = sock.recv(1)
        except InterruptedError:
            continue
        if not chunk:
            return None
        data += chunk
    return data.decode().strip()


def forked(argv: list[str], path: str) -> socket.socket | None:
    """Ask the server at ``path`` to fork ``argv``: the connection (answer ``pid N``
    pending) or None when it cannot (gone, refused, too slow)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        sock.settimeout(ANSWER_TIMEOUT_S)
        socket.send_fds(sock, [request(argv)], [0, 1, 2])
        return sock
    except OSError:
        sock.close()
        return None


def wait_gone(pid: int) -> None:
    """Wait until process ``pid`` (not our child) has ended."""
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def relay(sock: socket.socket, pid: int) -> int:
    """Forward signals to ``pid`` until the server reports how it ended: our exit code."""
    for sig in FORWARDED:
        signal.signal(sig, lambda signum, _frame: _forward(pid, signum))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)  # what came meanwhile goes to pid
    sock.settimeout(None)
    line = read_line(sock)
    if line is None:  # the server went away first: wait for the process itself
        wait_gone(pid)
        return 1
    kind, _, value = line.partition(" ")
    if kind == "signal":
        signum = int(value)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)  # end as the process did
        return 128 + signum
    return int(value)


def _forward(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    path = os.environ.get(SOCKET_ENV)
    if not path or not os.path.exists(path) or args[:1] != ["-m"]:
        exec_python(args)
    # held from the request on: a signal that came before the worker's pid was known would
    # end this process alone and leave the worker running
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    sock = forked(args, path)
    if sock is None:
        exec_python(args)
    try:
        answer = read_line(sock)
    except OSError:
        answer = None
    if not answer or not answer.startswith("pid "):
        sock.close()
        exec_python(args)
    return relay(sock, int(answer.split()[1]))


if __name__ == "__main__":
    sys.exit(main())
