"""What a gateway killed half-way (kill -9, a power cut) left behind, set right at start-up.

Only the gateway runs turns, so when it starts no turn of its own is in flight yet: every turn
still `running` or `awaiting_approval` belongs to a process that died. `recover_at_start`
- kills the sandboxes the dead process left orphaned while starting them
  (`metnos.mechanisms.sandbox.orphans`), before anything else: they could still be changing files;
- removes the half-written before-records and temporary files of the dead process (its
  action never ran: an executor starts only once its record is whole,
  `metnos.ground.reversibility`);
- expires the approvals it left pending (`gate.recover_interrupted`);
- fails each turn it left running, with a reply in the turn's language naming every action
  that had started (it may have changed files, and `metnos undo` puts them back) and an audit
  line for the turn and for each such action whose outcome was never recorded;
- and names their Prefect flow runs, which the caller ends (`flows.turn.crash_runs`: a run
  left Paused would still offer its Resume form in the Prefect UI).

`interrupt_open` does the same for the turns a draining gateway could not finish in time.

`link_record` ties a before-record to its turn (the `before_manifest` row) right after it is
written, and `link_flow_run` a turn to its Prefect run when it starts, so this sweep can name
the actions and the run of an interrupted turn.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.ground import durable, i18n, reversibility
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.mechanisms.executors.registry import signatures_dir
from metnos.mechanisms.sandbox.orphans import kill_orphans
from metnos.turns import gate

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

INTERRUPTED_KEY = "ERR_TURN_INTERRUPTED"
OPEN_STATUSES = ("running", "awaiting_approval")
RECENT_AUDIT_LINES = 2000  # where the outcome of an interrupted action would be, if written


@dataclass
class Recovery:
    partial_records: list[str] = field(default_factory=list)
    temporaries: list[str] = field(default_factory=list)
    approvals: int = 0
    turns: list[str] = field(default_factory=list)
    orphans: list[int] = field(default_factory=list)
    flow_runs: list[str] = field(default_factory=list)  # of those turns, to end in Prefect
    # turn id → (reply, status, stop_reason) as recorded, for the clients still waiting
    replies: dict[str, tuple[str, str, str | None]] = field(default_factory=dict)


def link_record(engine: Engine, *, action_id: str, turn_id: str, executor: str,
                signed: dict[str, Any]) -> None:
    """Record that `turn_id` started `action_id` (its paths; the signed record is the file)."""
    manifest = signed["manifest"]
    summary = {"paths": [state["path"] for state in manifest["paths"]],
               "created_at": manifest["created_at"]}
    with db_session(engine) as db:
        models.record_before_manifest(db, action_id=action_id, turn_id=turn_id,
                                      executor=executor, manifest=summary,
                                      signature=signed["signature"])


def link_flow_run(engine: Engine, turn_id: str, flow_run_id: str) -> None:
    """Store the turn's Prefect flow run as soon as it starts, so that a restart after a
    crash can end that run too."""
    with db_session(engine) as db:
        db.execute(update(models.Turn).where(col(models.Turn.id) == turn_id)
                   .values(flow_run_id=flow_run_id))
        db.commit()


def recover_at_start(service: Runtime) -> Recovery:
    """Clean up after a dead gateway (blocking: call it in a worker thread, before serving)."""
    settings = service.settings
    orphans = kill_orphans()  # first: an orphaned sandbox could still be changing files
    found = Recovery(partial_records=reversibility.remove_partial(settings.state_dir),
                     orphans=orphans)
    # where `metnos.ground.durable` writes; never the workspace (the owner's, not ours to clean)
    for folder in (settings.home, settings.state_dir, settings.keys_dir, settings.secrets_dir,
                   signatures_dir(settings), settings.state_dir / "before"):
        found.temporaries += [f"{folder.name}/{n}" for n in durable.remove_temporaries(folder)]
    found.flow_runs = _open_flow_runs(service.engine)
    found.approvals = gate.recover_interrupted(service)
    found.turns = _fail_open_turns(service)
    if (found.partial_records or found.temporaries or found.approvals or found.turns
            or found.orphans):
        log.warning("gateway.recovered partial_records=%s temporaries=%s approvals=%d turns=%s"
                    " orphaned_sandboxes=%s", found.partial_records, found.temporaries,
                    found.approvals, found.turns, found.orphans)
    return found


def interrupt_open(service: Runtime) -> Recovery:
    """At the end of a drain (the gateway is stopping and has cancelled the turns still
    running): each open turn is this process's own, and is recorded as a restart would
    record it (its approvals expired, the turn failed with a reply naming what it had
    started). Names their flow runs, which the caller ends (blocking: worker thread)."""
    with db_session(service.engine) as db:
        open_ids = list(db.exec(select(models.Turn.id).where(
            col(models.Turn.status).in_(OPEN_STATUSES))).all())
    found = Recovery(flow_runs=_open_flow_runs(service.engine))
    found.approvals = gate.recover_interrupted(service)
    found.turns = _fail_open_turns(service)
    with db_session(service.engine) as db:
        for turn_id in open_ids:
            turn = models.get_turn(db, turn_id)
            if turn is not None and turn.status not in OPEN_STATUSES:
                found.replies[turn_id] = (turn.reply or "", turn.status, turn.stop_reason)
    if found.turns or found.approvals:
        log.warning("gateway.drain_interrupted approvals=%d turns=%s", found.approvals,
                    found.turns)
    return found


def _open_flow_runs(engine: Engine) -> list[str]:
    with db_session(engine) as db:
        rows = db.exec(select(models.Turn.flow_run_id).where(
            col(models.Turn.status).in_(OPEN_STATUSES))).all()
    return [str(run) for run in rows if run]


def _fail_open_turns(service: Runtime) -> list[str]:
    with db_session(service.engine) as db:
        turns = db.exec(select(models.Turn).where(
            col(models.Turn.status).in_(OPEN_STATUSES))).all()
        if not turns:
            return []
        reported = _reported_actions(service)
        for turn in turns:
            _fail_turn(service, db, turn, reported)
        return [turn.id for turn in turns]


def _fail_turn(service: Runtime, db: Session, turn: models.Turn,
               reported: set[str]) -> None:
    started = db.exec(select(models.BeforeManifest).where(
        col(models.BeforeManifest.turn_id) == turn.id).order_by(
        col(models.BeforeManifest.created_at))).all()
    lines = [i18n.get(INTERRUPTED_KEY, turn.lang)]
    lines += [i18n.get("MSG_TURN_INTERRUPTED_ACTION", turn.lang, executor=row.executor,
                       action_id=row.id) for row in started]
    base = {"sender": "metnos", "channel": turn.channel, "session_id": turn.session_id,
            "turn_id": turn.id, "decision": "error", "reason": INTERRUPTED_KEY}
    for row in started:
        if row.id not in reported:  # no done/failed line: it may or may not have run
            service.audit.append(**base, action=row.executor, action_id=row.id,
                                 outcome="interrupted")
    service.audit.append(**base, action="turn", outcome="failed")
    turn.stop_reason = INTERRUPTED_KEY
    # closed last: a crash during this sweep repeats a line, never loses one
    models.finish_turn(db, turn.id, status="failed", reply="\n".join(lines),
                       error_key=INTERRUPTED_KEY)


def _reported_actions(service: Runtime) -> set[str]:
    """Action ids whose outcome (done, failed) the audit log already holds, recently."""
    return {str(r["action_id"]) for r in service.audit.tail(RECENT_AUDIT_LINES)
            if r.get("action_id") and r.get("outcome") in ("done", "failed")}
