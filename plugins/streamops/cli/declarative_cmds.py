"""CLI verbs for jobs and savepoints as desired state: ``apply -f FILE``, ``get deployments``,
``get savepoints``, ``delete``, ``reconcile`` (:mod:`streamops.declarative`).

``apply`` stores the resources; the reconcile (the ``reconcile`` DAG on its schedule, or
``streamops reconcile``, or ``apply --reconcile``) makes them so and records their status.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from streamops.cli.job_cmds import master_note, spare_flag
from streamops.cli.tables import Listing, console
from streamops.exceptions import ConfigError

if TYPE_CHECKING:
    from streamops.job_view import JobView
    from streamops.settings import Settings
    from streamops.state.declarative.resources import SavepointRequest
    from streamops.state.declarative.status import DeploymentStatus, RequestStatus
    from streamops.state.declarative.store import Declared
    from streamops.world.snapshot import Snapshot

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
    from streamops.state.declarative.resources import Deployment, load_resources
    from streamops.state.declarative.store import Store

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
    from streamops.world.snapshot import take

    snapshot = take(settings)  # the resources from the state root, their jobs as shown live
    deployments = _KINDS[args.what] == "JobDeployment"
    found: list[Declared[Any]] = list(snapshot.deployments if deployments
                                      else snapshot.savepoint_requests)  # fmt: skip
    if args.name:
        found = [d for d in found if d.name == args.name]
        if not found:
            raise ConfigError(f"no {args.what.rstrip('s')} named {args.name!r}")
    note = master_note(snapshot, settings)
    if args.json:
        print(json.dumps([_json(d, _job(snapshot, d)) for d in found], indent=2))
        if note:
            print(note, file=sys.stderr)
        return 0
    table = (deployments_table if deployments else requests_table)(snapshot, found)
    table.caption = note
    table.print()
    if args.name and found[0].status is not None:
        conditions = Listing("conditions", ("TYPE", "STATUS", "REASON", "LAST TRANSITION",
                                            "MESSAGE"))  # fmt: skip
        for c in found[0].status.conditions:
            conditions.add(c.type, c.status, c.reason, _when(c.last_transition), c.message)
        conditions.print()
    return 0


def _job(snapshot: Snapshot, declared: Declared[Any]) -> JobView | None:
    """The job of a resource as the snapshot shows it (None: it shows no such job)."""
    request = _request(declared)
    if request is None and declared.kind != "JobDeployment":  # an unreadable request
        return None
    return snapshot.jobs.get(request.job if request else declared.name)  # a deployment's own


def _request(declared: Declared[Any]) -> SavepointRequest | None:
    from streamops.state.declarative.resources import SavepointRequest

    resource = declared.applied.resource if declared.applied else None
    return resource if isinstance(resource, SavepointRequest) else None


def _json(declared: Declared[Any], view: JobView | None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": declared.name}
    if declared.error:  # a file that cannot be read back
        row["error"] = declared.error
    if declared.applied is not None:
        row.update(resource=declared.applied.resource.model_dump(mode="json"),
                   generation=declared.applied.generation, deleting=declared.deleting)
    row["status"] = declared.status.model_dump(mode="json") if declared.status else None
    row["job"] = None if view is None else {
        "state": view.state, "is_live": view.is_live, "driver_id": view.driver_id,
        "version": view.version}  # fmt: skip
    return row


def deployments_table(snapshot: Snapshot, found: list[Declared[DeploymentStatus]]) -> Listing:
    """The seed's columns: NAME, STATUS, ID, SUBMISSIONTIME, COMPLETIONTIME (and more); the
    job's state, driver and version as the snapshot shows them live, else as last recorded."""
    table = Listing("deployments", ("NAME", "STATUS", "JOBSTATE", "ID", "VERSION",
                                    "SUBMISSIONTIME", "COMPLETIONTIME", "GEN",
                                    "MESSAGE"))  # fmt: skip
    for d in found:
        st, view = d.status, _job(snapshot, d)
        if d.applied is None or st is None:  # the row says why; the others are whole
            gen = f"-/{d.applied.generation}" if d.applied else "-"
            table.add(d.name, "Invalid", _state(view), "-", "-", "-", "-", gen, d.error)
            continue
        live = view if view is not None and view.is_live else None
        driver = live.driver_id if live else st.driver
        version = live.version if live else st.version
        table.add(d.name, "Deleting" if d.deleting else st.phase, _state(view), driver or "-",
                  version or "-", _when(st.submission_time), _when(st.completion_time),
                  f"{st.observed_generation}/{d.applied.generation}", st.message)  # fmt: skip
    return table


def requests_table(snapshot: Snapshot, found: list[Declared[RequestStatus]]) -> Listing:
    table = Listing("savepoints", ("NAME", "JOB", "JOBSTATE", "CANCEL", "STATE", "CREATIONTIME",
                                   "MESSAGE"))  # fmt: skip
    for d in found:
        request = _request(d)
        if request is None or d.status is None:
            job = request.job if request else "-"
            table.add(d.name, job, _state(_job(snapshot, d)), "-", "Invalid", "-", d.error)
            continue
        st = d.status
        table.add(d.name, request.job, _state(_job(snapshot, d)), str(request.cancel).lower(),
                  st.state, _when(st.creation_time), st.message)  # fmt: skip
    return table


def _state(view: JobView | None) -> str:
    return view.state if view is not None else "-"


def cmd_delete(args: argparse.Namespace, settings: Settings) -> int:
    from streamops.state.declarative.store import Store

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
