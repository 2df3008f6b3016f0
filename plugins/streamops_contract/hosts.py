"""Addresses: loopback (the one place it is spelled), whether an address is loopback, what
to dial for a bind address, and this host's identity.

Beyond one machine a host's address is a setting (``STREAMOPS_MASTER_HOST``,
``STREAMOPS_NODE_HOST``, ``STREAMOPS_DASHBOARD_HOST``); loopback is the default of the
embedded single-machine cluster and the address of what is truly local (a Python gateway, a
service's own health probe on its machine).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping

LOOPBACK = "127.0.0.1"
"""The embedded cluster's default address and that of what never leaves this machine."""

NODE_HOST_ENV = "STREAMOPS_NODE_HOST"

_BIND_ALL = frozenset({"0.0.0.0", "::", "[::]", ""})  # noqa: S104 - names of bind-all


def binds_all(host: str) -> bool:
    """Whether ``host`` is a bind-all address (every interface)."""
    return host in _BIND_ALL


def is_loopback(host: str) -> bool:
    """Whether ``host`` is loopback: ``localhost`` or a loopback IP. Any other name is not
    (only what resolves to loopback is; a name is not resolved here)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 (a dual-stack socket)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def dial_address(bind_host: str, advertised: str = "") -> str:
    """The address to dial a server bound to ``bind_host``: itself, unless it binds every
    interface; then ``advertised`` (this node's address from the settings), else loopback
    (the caller is on the server's machine)."""
    if not binds_all(bind_host):
        return bind_host
    return advertised or LOOPBACK


def this_host(environ: Mapping[str, str] | None = None) -> str:
    """This host's identity in the state root (leases, statuses): its node address
    (``STREAMOPS_NODE_HOST``, which every daemon, driver and executor of a node inherits)
    when set, else its host name. Two nodes sharing a kernel's host name (containers,
    network namespaces) are two hosts by their addresses."""
    env = os.environ if environ is None else environ
    return env.get(NODE_HOST_ENV) or socket.gethostname()
