"""The secrets sweep: no key or token of a state root in any file but its own.

The secrets are found where the project keeps them, in every state root under the swept
directories: the REST server's key (``cluster/rest-secret``), the RPC secret
(``cluster/rpc-secret``) and the node agents' token (``cluster/agent.token``), plus
``STREAMOPS_AGENT_TOKEN`` when set. Then every regular file under the swept directories (the
state roots whole: the project's logs, the Spark work and event-log dirs, the checkpoints;
Airflow's home and logs) is searched as bytes for each value, the REST key's raw bytes too,
and for any bearer token (a compact JWS) signed with one of the REST keys: GNU grep first
picks, in one pass per file, the files holding any of them (:func:`_candidates`).

Allowed: a secret's own file, the daemons' private properties files (``*-auth.properties``,
mode 0600) and the master's recovery directory when private (mode 0700: Spark keeps a
``spark-submit`` client's ``spark.*`` properties there). A finding names the file, the byte
offset and which secret it is, never the value. ``tests/conftest.py`` sweeps the session's
temporary directory and Airflow's home when the session ends and fails the run on a finding.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import mmap
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamops.state.layout import StateLayout

MIN_SECRET = 16
"""A shorter value (a test's stand-in) would match by chance: not searched for."""

JWS = re.compile(rb"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.([A-Za-z0-9_-]{16,})")
"""A compact JWS (header and payload are base64url JSON, so both begin ``eyJ``)."""

GREP_BATCH = 500
"""Files per grep (its command line stays far below the kernel's limit)."""

_NAMES = {"rest-secret": "REST key", "rpc-secret": "RPC secret", "agent.token": "agent token"}


@dataclass(frozen=True)
class Secret:
    what: str
    value: bytes
    home: Path | None  # the file it lives in (None: from the environment)
    root: Path | None  # its state root


@dataclass(frozen=True)
class Finding:
    path: Path
    offset: int
    what: str

    def __str__(self) -> str:
        return f"{self.path} at byte {self.offset}: {self.what}"


def _regular_files(roots: Iterable[Path]) -> Iterator[Path]:
    """Every regular file under ``roots``, following no symbolic link."""
    for root in roots:
        for folder, _dirs, files in os.walk(root):
            for name in files:
                path = Path(folder) / name
                try:
                    if stat.S_ISREG(path.lstat().st_mode):
                        yield path
                except OSError:
                    continue


def find_secrets(roots: Iterable[Path], environ: Mapping[str, str]) -> list[Secret]:
    """The secrets of every state root under ``roots`` (see the module's docstring)."""
    return _secrets_among(_regular_files(roots), environ)


def _secrets_among(files: Iterable[Path], environ: Mapping[str, str]) -> list[Secret]:
    found: list[Secret] = []
    for path in files:
        what = _NAMES.get(path.name)
        if what is None or path.parent.name != "cluster":
            continue
        try:
            value = path.read_bytes().strip()
        except OSError:
            continue
        if len(value) < MIN_SECRET:
            continue
        found.append(Secret(what, value, path, path.parent.parent))
        if what == "REST key":
            raw = _raw_key(value)
            if raw is not None:
                found.append(Secret("REST key (raw bytes)", raw, path, path.parent.parent))
    token = environ.get("STREAMOPS_AGENT_TOKEN", "").strip().encode()
    if len(token) >= MIN_SECRET:
        found.append(Secret("agent token (STREAMOPS_AGENT_TOKEN)", token, None, None))
    return found


def _raw_key(value: bytes) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(value + b"=" * (-len(value) % 4))
    except ValueError:
        return None


@dataclass(frozen=True)
class _Allowances:
    """Where secrets may be: their own files and the private recovery directories."""

    homes: frozenset[Path]
    private: frozenset[Path]

    @classmethod
    def of(cls, secrets: list[Secret]) -> _Allowances:
        private = set()
        for root in {s.root for s in secrets if s.root is not None}:
            recovery = StateLayout.at(root).recovery_dir
            try:
                if stat.S_IMODE(recovery.stat().st_mode) == 0o700:
                    private.add(recovery)
            except OSError:  # no recovery directory: nothing allowed there
                continue
        return cls(frozenset(s.home for s in secrets if s.home is not None), frozenset(private))

    def allow(self, path: Path) -> bool:
        return (path.name.endswith("-auth.properties") or path in self.homes
                or any(parent in self.private for parent in path.parents))  # fmt: skip


def _grep_pattern(value: bytes) -> bytes | None:
    """What GNU grep looks for in place of ``value``: its longest run without a newline or a
    NUL (a pattern file holds one pattern a line), None when that run is too short to tell."""
    run = max(re.split(rb"[\n\x00]", value), key=len)
    return run if len(run) >= 6 else None


def _candidates(paths: list[Path], secrets: list[Secret]) -> set[Path]:
    """The files among ``paths`` that may hold a secret or a bearer token: those in which
    GNU grep, in one pass over each file for every fixed string at once, finds a secret's bytes
    (:func:`_grep_pattern`) or ``eyJ``, a JWS's start. Searching every file byte by byte for
    each secret took minutes over a session's gigabyte; only the candidates are searched so.
    A value grep cannot look for, or a batch grep could not read, keeps every file in."""
    patterns = [p for s in secrets if (p := _grep_pattern(s.value)) is not None]
    if len(patterns) < len(secrets):
        return set(paths)
    found: set[Path] = set()
    with tempfile.NamedTemporaryFile(suffix=".patterns") as listed:
        listed.write(b"\n".join({b"eyJ", *patterns}) + b"\n")
        listed.flush()
        for start in range(0, len(paths), GREP_BATCH):
            batch = paths[start : start + GREP_BATCH]
            out = subprocess.run(
                ["grep", "--files-with-matches", "--null", "--no-messages", "--text",
                 "--fixed-strings", "--file", listed.name, "--", *map(str, batch)],
                capture_output=True, env={**os.environ, "LC_ALL": "C"}, check=False,
            )  # fmt: skip
            if out.returncode not in (0, 1):  # an error (a file gone meanwhile): all of them
                found.update(batch)
            found.update(Path(os.fsdecode(n)) for n in out.stdout.split(b"\0") if n)
    return found


def _signed_with(token: bytes, signature: bytes, keys: list[Secret]) -> Secret | None:
    signing_input = token[: -len(signature) - 1]
    given = _raw_key(signature)
    for key in keys:
        digest = hmac.new(key.value, signing_input, hashlib.sha256).digest()
        if given is not None and hmac.compare_digest(digest, given):
            return key
    return None


def _search(path: Path, secrets: list[Secret], keys: list[Secret]) -> Iterator[Finding]:
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for secret in secrets:
                at = data.find(secret.value)
                while at != -1:
                    yield Finding(path, at, f"the {secret.what} of {secret.root or 'the env'}")
                    at = data.find(secret.value, at + 1)
            for match in JWS.finditer(data):  # type: ignore[call-overload]
                key = _signed_with(match.group(0), match.group(1), keys)
                if key is not None:
                    what = f"a bearer token signed with the REST key of {key.root}"
                    yield Finding(path, match.start(), what)


def sweep(roots: Iterable[Path], secrets: list[Secret]) -> list[Finding]:
    """Every place under ``roots`` where one of ``secrets`` (or a bearer token signed with a
    REST key among them) is written outside the places allowed for it."""
    return _sweep_files(_regular_files(roots), secrets)


def _sweep_files(files: Iterable[Path], secrets: list[Secret]) -> list[Finding]:
    keys = [s for s in secrets if s.what == "REST key (raw bytes)"]
    allowances = _Allowances.of(secrets)
    paths = [p for p in files if not allowances.allow(p)]
    candidates = _candidates(paths, secrets)
    findings: list[Finding] = []
    for path in paths:
        if path not in candidates:
            continue
        try:
            findings.extend(_search(path, secrets, keys))
        except (OSError, ValueError):  # gone meanwhile, or not mappable
            continue
    return findings


def sweep_roots(roots: Iterable[Path], environ: Mapping[str, str]) -> list[Finding]:
    """:func:`find_secrets` under ``roots``, then :func:`sweep` them, walking them once."""
    files = list(_regular_files(r for r in roots if r.is_dir()))
    return _sweep_files(files, _secrets_among(files, environ))


def fail_session_on_leaks(session: pytest.Session, roots: Iterable[Path]) -> list[Finding]:
    """Sweep ``roots`` at the end of ``session``; on a finding, list it (never the value) and
    make the run fail."""
    findings = sweep_roots(roots, os.environ)
    if findings:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"secret leaked: {f}" for f in findings[:50]]
        if len(findings) > 50:
            lines.append(f"... and {len(findings) - 50} more")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_sep("=", "secrets sweep: a key or token outside its file", red=True)
            for line in lines:
                reporter.write_line(line, red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return findings
