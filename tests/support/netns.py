"""Hosts made of Linux network namespaces, for the multi-host tests (``tests/multihost``).

A :class:`NetnsLab` owns a private bridge in this (the root) namespace, whose address is the
operator's machine (the test process, like a laptop on the cluster's network), and one
namespace per host, each joined to the bridge by a veth pair and given its own address::

    lab = NetnsLab.create()                # skips the test with the reason where it cannot
    master = lab.add_host("master")        # 10.x.y.2 in namespace so-mh-<pid>-master
    proc = lab.spawn(master, [python, "-m", "streamops", ...], env, log)
    lab.cut(worker)       # its link down: processes live on, the network is gone
    lab.restore(worker)   # its link up again
    lab.tear_down(worker) # its processes killed, its namespace and link deleted
    lab.close()           # every host torn down, the bridge deleted (a finalizer's job)

Every name it makes carries this process's id (namespaces ``so-mh-<pid>-<host>``, links
``smh<pid>…``), so two sessions never share one, and nothing it did not make is touched.
Namespaces are per network only: the file system (the shared state root), the pid space and
the host name are the machine's, which is why every process of a host is told its address
(``STREAMOPS_NODE_HOST``) and is never identified by the kernel's host name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


class NetnsUnavailable(Exception):
    """Why namespaces cannot be made here (the test is skipped with it)."""


@dataclass(frozen=True)
class Host:
    name: str  # master, worker-1, sim
    ns: str  # the namespace
    address: str
    link: str  # the veth end on the bridge (root namespace): down = cut off


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def unavailable_reason() -> str | None:
    """Why network namespaces cannot be used here, or None."""
    if os.name != "posix" or not Path("/proc/self/ns/net").exists():
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (ip netns add)"
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    probe = f"so-mh-{os.getpid()}-probe"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"ip netns add is refused here: {made.stderr.strip()}"
    try:
        veth = _ip("link", "add", f"smh{os.getpid()}q", "type", "veth", "peer", "name",
                   f"smh{os.getpid()}r", check=False)  # fmt: skip
        if veth.returncode != 0:
            return f"veth pairs are refused here: {veth.stderr.strip()}"
        _ip("link", "del", f"smh{os.getpid()}q", check=False)
    finally:
        _ip("netns", "del", probe, check=False)
    return None


@dataclass
class NetnsLab:
    pid: int
    subnet: str  # "10.231.7": hosts are .2, .3, ...; the bridge (this namespace) is .1
    bridge: str
    hosts: dict[str, Host] = field(default_factory=dict)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    made: int = 0  # hosts made so far (a torn down host's address is not given again)

    @classmethod
    def create(cls) -> NetnsLab:
        reason = unavailable_reason()
        if reason is not None:
            raise NetnsUnavailable(reason)
        pid = os.getpid()
        lab = cls(pid=pid, subnet=f"10.{231 + pid % 20}.{(pid // 20) % 250}",
                  bridge=f"smh{pid}b")  # fmt: skip
        _ip("link", "add", lab.bridge, "type", "bridge")
        try:
            _ip("addr", "add", f"{lab.subnet}.1/24", "dev", lab.bridge)
            _ip("link", "set", lab.bridge, "up")
        except RuntimeError:
            _ip("link", "del", lab.bridge, check=False)
            raise
        return lab

    @property
    def ops_address(self) -> str:
        """This namespace's address on the lab's network (the operator's machine)."""
        return f"{self.subnet}.1"

    def add_host(self, name: str) -> Host:
        self.made += 1
        index = self.made + 1
        host = Host(name=name, ns=f"so-mh-{self.pid}-{name}", address=f"{self.subnet}.{index}",
                    link=f"smh{self.pid}h{index}")  # fmt: skip
        inner = f"smh{self.pid}n{index}"
        _ip("netns", "add", host.ns)
        self.hosts[name] = host
        _ip("link", "add", host.link, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", host.ns)
        _ip("-n", host.ns, "addr", "add", f"{host.address}/24", "dev", inner)
        _ip("-n", host.ns, "link", "set", inner, "up")
        _ip("-n", host.ns, "link", "set", "lo", "up")
        _ip("link", "set", host.link, "master", self.bridge, "up")
        return host

    def spawn(self, host: Host, argv: Sequence[str], env: Mapping[str, str], log: Path
              ) -> subprocess.Popen[bytes]:  # fmt: skip
        """Run ``argv`` inside ``host``'s namespace (its own session), output to ``log``."""
        with log.open("ab") as out:
            proc = subprocess.Popen(["ip", "netns", "exec", host.ns, *argv], env=dict(env),
                                    stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)  # fmt: skip
        self.procs.append(proc)
        return proc

    def run(self, host: Host, argv: Sequence[str], timeout: float = 60
            ) -> subprocess.CompletedProcess[str]:  # fmt: skip
        return subprocess.run(["ip", "netns", "exec", host.ns, *argv], capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip

    def pids(self, host: Host) -> list[int]:
        """Every process in ``host``'s namespace."""
        done = _ip("netns", "pids", host.ns, check=False)
        return [int(p) for p in done.stdout.split() if p.isdigit()]

    def listeners(self, host: Host) -> list[str]:
        """The local addresses of the TCP sockets listening in ``host``'s namespace."""
        out = self.run(host, ["ss", "-Hltn"]).stdout if shutil.which("ss") else ""
        if out:
            return [line.split()[3] for line in out.splitlines() if len(line.split()) > 3]
        return _proc_listeners(self, host)

    def cut(self, host: Host) -> None:
        """Cut ``host`` off the network (its link down); its processes live on."""
        _ip("link", "set", host.link, "down")

    def restore(self, host: Host) -> None:
        _ip("link", "set", host.link, "up")

    def tear_down(self, host: Host) -> float:
        """Kill every process of ``host`` and delete its namespace and link; when it was."""
        cut_at = time.time()
        _ip("link", "set", host.link, "down", check=False)
        for _ in range(20):
            pids = self.pids(host)
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)
        for proc in self.procs:
            proc.poll()  # reap what was killed
        _ip("netns", "del", host.ns, check=False)
        _ip("link", "del", host.link, check=False)
        self.hosts.pop(host.name, None)
        return cut_at

    def close(self) -> None:
        for host in list(self.hosts.values()):
            self.tear_down(host)
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        _ip("link", "del", self.bridge, check=False)


def _proc_listeners(lab: NetnsLab, host: Host) -> list[str]:
    """Listening TCP addresses from ``/proc/net/tcp`` read inside the namespace (no ``ss``)."""
    script = (
        "import socket,struct\n"
        "for name in ('/proc/net/tcp','/proc/net/tcp6'):\n"
        "  for line in open(name).read().splitlines()[1:]:\n"
        "    f=line.split()\n"
        "    if f[3]!='0A': continue\n"
        "    a,p=f[1].split(':')\n"
        "    b=bytes.fromhex(a)\n"
        "    ip=socket.inet_ntop(socket.AF_INET if len(b)==4 else socket.AF_INET6,"
        "b''.join(b[i:i+4][::-1] for i in range(0,len(b),4)))\n"
        "    print(f'{ip}:{int(p,16)}')\n"
    )
    out = lab.run(host, ["python3", "-c", script]).stdout
    return out.split()


def wait_tcp(address: str, port: int, timeout: float) -> bool:
    """Whether ``address:port`` accepts a connection within ``timeout`` (from here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False
