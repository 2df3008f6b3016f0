"""Asking a job's upstreams how far behind its committed positions are: the one place that
knows how each kind of source is located and asked (health, the dashboard and the operations
port's ``backlog`` use it; they judge and show what it answers, never a source's own paths or URLs).

A source is located by its offset's source id (``beta:<url>``, ``alpha:<dir>``) or else by the
job's args (``beta_url``, ``alpha_dir``; the trade analyser's ``tradesim`` by ``trades_url``),
and probed by its kind:

- fleetsim-beta (and the trades producer, its server): ``/head`` (``first``, ``last``,
  ``stream``) against the committed ``{sequence, stream}``: the backlog in records, or what
  the upstream lost or replaced;
- fleetsim-alpha: the ping files of its drop directory the committed offset has not read
  (after the committed file, and late ones within the job's ``alpha_max_file_age``);
- the transactions journal (source id ``journal:<name>``, located by the job's ``store_url``):
  the journal's head in the store against the committed ``{sequence, stream}``.

A probe does the I/O and answers a :class:`SourceProbe`, a plain value; a probe that raises
answers one too, with the exception and where it came from (``error``), so one odd source
never hides the others.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from streamops.job_view import JobView
from streamops.state.job_status import StageStatus
from streamops.tracebacks import describe
from streamops_contract.sources.alpha_memory import DEFAULT_MAX_FILE_AGE, Memory, parse_age

UNITS = {"beta": "records", "alpha": "files", "journal": "entries"}
"""Per kind of source, what its backlog counts (each unit has thresholds in health)."""
URL_ARGS = {"tradesim": "trades_url"}
"""The arg locating a fleetsim-beta server by its source id, when it is not ``beta_url``."""


@dataclass(frozen=True)
class SourceProbe:
    """What one source's upstream says of its committed position."""

    source: str
    kind: str  # beta | alpha | journal
    unit: str  # what the backlog counts: records | files | entries
    backlog: int | None = None  # None: not known (see ``unknown`` or ``broken``)
    unknown: str | None = None  # why the upstream could not tell (it may come back)
    broken: str | None = None  # reading on would skip data: reset, lost, gone
    error: str | None = None  # the probe itself raised: the exception and where


def committed_positions(view: JobView) -> dict[str, dict[str, Any]]:
    """Per source id, the committed end offset of the stage that is furthest behind."""
    out: dict[str, dict[str, Any]] = {}
    for info in view.stages.values():
        for key, end in stage_offsets(info).items():
            before = out.get(key)
            if before is None or _position(end) < _position(before):
                out[key] = end
    return out


def stage_offsets(info: StageStatus) -> dict[str, dict[str, Any]]:
    """Per source id, the committed end offset of one stage (``status.json`` → ``stages``);
    Spark writes an offset as JSON text, a source without a ``source`` id is skipped."""
    out: dict[str, dict[str, Any]] = {}
    for src in info.sources:
        end = src.end_offset
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except json.JSONDecodeError:
                continue
        if isinstance(end, dict) and end.get("source"):
            out[str(end["source"])] = end
    return out


def _position(offset: dict[str, Any]) -> tuple[int, str]:
    return (int(offset.get("sequence") or 0), str(offset.get("file") or ""))


def source_location(source: str, offset: dict[str, Any], args: dict[str, Any]) -> tuple[str, str]:
    """``("beta", url)``, ``("alpha", directory)``, ``("journal", store url)`` or ``("", "")``:
    where ``source`` is read from, by its id (``beta:<url>``, ``alpha:<dir>``) or else by the
    job's args."""
    kind, _, where = source.partition(":")
    if kind == "journal":
        return "journal", str(args.get("store_url") or "")
    if "sequence" in offset:
        return "beta", where if kind == "beta" else str(args.get(_url_arg(source)) or "")
    if "file" in offset:
        return "alpha", where if kind == "alpha" else str(args.get("alpha_dir") or "")
    return "", ""


def _url_arg(source: str) -> str:
    return URL_ARGS.get(source, "beta_url")


def beta_head(url: str, timeout: float) -> dict[str, Any]:
    """fleetsim-beta's ``/head`` (``first``, ``last``, ``stream``) for its ``/pings`` URL;
    raises :class:`requests.RequestException` or :class:`ValueError` when it cannot tell."""
    response = requests.get(_head_url(url), timeout=timeout)
    response.raise_for_status()
    head = response.json()
    if not isinstance(head, dict):
        raise ValueError(f"/head answered {head!r}")
    return head


def _head_url(url: str) -> str:
    return url.rstrip("/").removesuffix("/pings") + "/head"


class Prober:
    """Probes the sources of one gathering; each fleetsim-beta's ``/head`` is asked once
    (the stages of a job, and jobs, share upstreams)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._heads: dict[str, dict[str, Any] | Exception] = {}

    def probe(
        self, source: str, offset: dict[str, Any], args: dict[str, Any]
    ) -> SourceProbe | None:
        """The probe of ``source`` at its committed ``offset``; ``None``: a kind of source
        not probed (it is left out, as it cannot be located). Never raises: a probe that
        does answers with its ``error``."""
        try:
            return self._probe(source, offset, args)
        except Exception as exc:  # an odd offset or a probe's bug: that source's fail alone
            kind = source.partition(":")[0]
            return SourceProbe(source, kind, UNITS.get(kind, "?"), error=describe(exc))

    def _probe(
        self, source: str, offset: dict[str, Any], args: dict[str, Any]
    ) -> SourceProbe | None:
        kind, where = source_location(source, offset, args)
        if kind == "beta":
            return self._beta(source, where, offset)
        if kind == "alpha":
            return _alpha(source, where, offset, args)
        if kind == "journal":
            return journal_probe(source, where, offset)
        return None

    def _head(self, url: str) -> dict[str, Any] | Exception:
        if url not in self._heads:
            try:
                self._heads[url] = beta_head(url, self.timeout)
            except (requests.RequestException, ValueError) as exc:
                self._heads[url] = exc
        return self._heads[url]

    def _beta(self, source: str, url: str, offset: dict[str, Any]) -> SourceProbe:
        if not url:
            return SourceProbe(source, "beta", "records",
                               unknown=f"cannot locate source {source} (no {_url_arg(source)} arg)")
        head = self._head(url)
        try:
            if isinstance(head, Exception):
                raise head
            last, first = int(head.get("last") or 0), head.get("first")
        except (requests.RequestException, ValueError, AttributeError) as exc:
            return SourceProbe(source, "beta", "records", unknown=(
                f"source {source} at {_head_url(url)} does not answer: {type(exc).__name__}"))
        committed, stream = int(offset.get("sequence") or 0), offset.get("stream")
        served = head.get("stream")
        reset = None
        if stream and served and served != stream:
            reset = f"the server now serves stream {served} (sequences {first}..{last})"
        elif last < committed:
            reset = f"the server's head is {last}, below it"
        elif first is not None and int(first) - 1 > committed:
            reset = f"the server no longer holds sequences {committed + 1}..{int(first) - 1}"
        if reset:
            return SourceProbe(source, "beta", "records", broken=(
                f"source {source} was reset or lost records: committed sequence {committed} "
                f"of stream {stream or '?'}, but {reset}"))
        return SourceProbe(source, "beta", "records", backlog=last - committed)


def alpha_unread(directory: Path, offset: dict[str, Any], max_age: float) -> int:
    """Ping files of an alpha drop directory the job has not read yet: after the committed
    file, and late ones its offset's memory does not hold (within ``max_age``)."""
    mtimes = {}
    for path in directory.glob("pings-*.csv"):
        try:
            mtimes[path.name] = path.stat().st_mtime
        except FileNotFoundError:
            continue
    return len(Memory.from_offset(offset).unread(mtimes, max_age))


def _alpha(source: str, path: str, offset: dict[str, Any], args: dict[str, Any]) -> SourceProbe:
    directory = Path(path)
    if not path or not directory.is_dir():
        return SourceProbe(source, "alpha", "files",
                           broken=f"directory {path or '?'} of source {source} does not exist")
    max_age = parse_age(str(args.get("alpha_max_file_age") or DEFAULT_MAX_FILE_AGE))
    return SourceProbe(source, "alpha", "files",
                       backlog=alpha_unread(directory, offset, max_age))


def journal_probe(source: str, url: str, offset: dict[str, Any]) -> SourceProbe:
    """The transactions journal in the store at ``url`` against the committed offset."""
    from sqlalchemy.exc import SQLAlchemyError

    from streamops_contract.sinks import journal_store

    if not url:
        return SourceProbe(source, "journal", "entries",
                           unknown=f"cannot locate source {source} (no store_url arg)")
    try:
        held = journal_store.head(journal_store.engine_for(url))
    except SQLAlchemyError as exc:
        return SourceProbe(source, "journal", "entries", unknown=(
            f"the store of source {source} does not answer: {type(exc).__name__}"))
    committed, stream = int(offset.get("sequence") or 0), offset.get("stream")
    lost = None
    if stream and held.stream and held.stream != stream:
        lost = f"the store now holds journal {held.stream} (entries {held.first}..{held.last})"
    elif held.last < committed:
        lost = f"the journal's last entry is {held.last}, below it"
    elif held.first is not None and held.first - 1 > committed:
        lost = (f"the oldest entry held is {held.first} (capacity {held.capacity}): entries "
                f"{committed + 1}..{held.first - 1} were dropped unread")
    if lost:
        return SourceProbe(source, "journal", "entries", broken=(
            f"source {source} lost journal entries: committed sequence {committed} of journal "
            f"{stream or '?'}, but {lost}"))
    return SourceProbe(source, "journal", "entries", backlog=held.last - committed)


def probe_job(
    prober: Prober, view: JobView, args: dict[str, Any]
) -> dict[str, SourceProbe]:
    """Per source id, the probe of each source of ``view``'s stages at the position of the
    stage furthest behind (``sources``: the job's committed offsets could not be read)."""
    try:
        positions = committed_positions(view)
    except Exception as exc:  # an odd status must not hide the other jobs' sources
        return {"sources": SourceProbe("sources", "?", "?", error=describe(exc))}
    probes = (prober.probe(s, o, args) for s, o in sorted(positions.items()))
    return {p.source: p for p in probes if p is not None}
