"""CLI verbs for jobs and savepoints as desired state: ``apply -f FILE``, ``get deployments``,
``get savepoints``, ``delete``, ``reconcile`` (:mod:`streamops.declarative`).

``apply`` stores the resources; the reconcile (the ``reconcile`` DAG on its schedule, or
``streamops reconcile``, or ``apply --reconcile``) makes them so and records their status.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING, Any

from streamops.cli.job_cmds import spare_flag
from streamops.cli.tables import Listing, console
from streamops.exceptions import ConfigError

if TYPE_CHECKING:
    from streamops.settings import Settings

_KINDS = {"deployment": "JobDeployment", "deployments": "JobDeployment",
          "savepoint": "SavepointRequest", "savepoints": "SavepointRequest"}  # fmt: skip


def register(sub: Any) -> None:
    p = sub.add_parser("apply", help="store job deployments and savepoint requests (YAML) as "
                       "desired state; the reconcile makes them so")  # fmt: skip
    p.add_argument("-f", "--file", required=True, action="append", metavar="FILE",
                   help="a resource file (repeatable; several documents per file allowed)")
    p.add_argument("--reconcile", action="store_true", help="run a reconcile pass afterwards")
    spare_flag(p)
    p.set_defaults(handler=cmd_apply)

    p = sub.add_parser("get", help="list deployments or savepoint requests with their status")
    p.add_argument("what", choices=sorted(_KINDS), help="deployments | savepoints")
    p.add_argument("name", nargs="?", help="one resource (with its conditions)")
    p.add_argument("--json", action="store_true", help="resource and status as JSON")
    p.set_defaults(handler=cmd_get)

    p = sub.add_parser("delete", help="delete a deployment (its job is stopped with a "
                       "savepoint by the next reconcile) or a savepoint request (its "
                       "savepoint is kept)")  # fmt: skip
    p.add_argument("what", choices=sorted(_KINDS), help="deployment | savepoint")
    p.add_argument("name")
    p.add_argument("--reconcile", action="store_true", help="run a reconcile pass afterwards")
    p.set_defaults(handler=cmd_delete)

    p = sub.add_parser("reconcile", help="one reconcile pass: make every applied resource so")
    p.add_argument("--job", help="only this job's deployment and savepoint requests")
    p.set_defaults(handler=cmd_reconcile)


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)) if ts else "-"


def cmd_apply(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.admission import admit
    from streamops.declarative.resources import Deployment, load_resources
    from streamops.declarative.store import Store

    resources = [(r, path) for path in args.file for r in load_resources(path)]  # all valid
    specs = [r.effective_spec for r, _ in resources if isinstance(r, Deployment)]
    if specs:
        admit(settings, f"apply of {', '.join(s.name for s in specs)}", specs=specs,
              allow_no_spare=args.allow_no_spare)  # fmt: skip
    store, out = Store(settings.layout), console()
    for resource, path in resources:
        applied, verb = store.apply(resource, source=str(path))
        kind = "deployment" if applied.kind == "JobDeployment" else "savepoint"
        out.print(f"{kind}/{applied.name} {verb} (generation {applied.generation})")
    return _reconcile(settings, None) if args.reconcile else 0


def cmd_get(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.declarative.store import Store

    store, kind = Store(settings.layout), _KINDS[args.what]
    found, bad = store.scan(kind)
    if args.name:
        found = [a for a in found if a.name == args.name]
        bad = [b for b in bad if b.name == args.name]
        if not found and not bad:
            raise ConfigError(f"no {args.what.rstrip('s')} named {args.name!r}")
    if args.json:
        rows: list[dict[str, Any]] = [{"name": b.name, "error": b.error} for b in bad]
        for a in found:
            rows.append({"name": a.name, "resource": a.resource.model_dump(mode="json"),
                         "generation": a.generation, "deleting": a.deleting,
                         "status": _status(store, kind, a.name).model_dump(mode="json")})
        print(json.dumps(rows, indent=2))
        return 0
    table = deployments_table(store, found) if kind == "JobDeployment" else requests_table(
        store, found)  # fmt: skip
    for b in bad:  # a file that cannot be read back: its row says why, the others are whole
        if kind == "JobDeployment":
            table.add(b.name, "Invalid", "-", "-", "-", "-", "-", b.error)
        else:
            table.add(b.name, "-", "-", "Invalid", "-", b.error)
    table.print()
    if args.name:
        status = _status(store, kind, args.name)
        conditions = Listing("conditions", ("TYPE", "STATUS", "REASON", "LAST TRANSITION",
                                            "MESSAGE"))  # fmt: skip
        for c in status.conditions:
            conditions.add(c.type, c.status, c.reason, _when(c.last_transition), c.message)
        conditions.print()
    return 0


def _status(store: Any, kind: str, name: str) -> Any:
    return store.deployment_status(name) if kind == "JobDeployment" else store.request_status(name)


def deployments_table(store: Any, found: list[Any]) -> Listing:
    """The seed's columns: NAME, STATUS, ID, SUBMISSIONTIME, COMPLETIONTIME (and more)."""
    table = Listing("deployments", ("NAME", "STATUS", "ID", "VERSION", "SUBMISSIONTIME",
                                    "COMPLETIONTIME", "GEN", "MESSAGE"))  # fmt: skip
    for a in found:
        st = store.deployment_status(a.name)
        phase = "Deleting" if a.deleting else st.phase
        table.add(a.name, phase, st.driver or "-", st.version or "-", _when(st.submission_time),
                  _when(st.completion_time), f"{st.observed_generation}/{a.generation}",
                  st.message)  # fmt: skip
    return table


def requests_table(store: Any, found: list[Any]) -> Listing:
    table = Listing("savepoints", ("NAME", "JOB", "CANCEL", "STATE", "CREATIONTIME", "MESSAGE"))
    for a in found:
        st = store.request_status(a.name)
        table.add(a.name, a.resource.job, str(a.resource.cancel).lower(), st.state,
                  _when(st.creation_time), st.message)  # fmt: skip
    return table


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.declarative.store import Store

    kind = _KINDS[args.what]
    Store(settings.layout).mark_deleting(kind, args.name)
    console().print(f"{args.what.rstrip('s')}/{args.name} marked for deletion")
    return _reconcile(settings, None) if args.reconcile else 0


def cmd_reconcile(args: argparse.Namespace, settings: Settings) -> int:
    return _reconcile(settings, args.job)


def _reconcile(settings: Settings, job: str | None) -> int:
    from streamops.declarative.reconcile import reconcile_once

    result = reconcile_once(settings, only=job)
    out = console()
    for resource, action, text in result.actions:
        out.print(f"{resource}: {action}: {text}")
    for error in result.errors:
        out.print(f"[red]error[/] {error}")
    out.print(f"reconcile pass: {len(result.actions)} decision(s), {len(result.errors)} "
              f"error(s) in {result.seconds:.2f}s")  # fmt: skip
    return 0 if result.ok else 1
