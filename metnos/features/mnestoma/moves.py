"""Reversible evolution (SPEC §7.6, arch §10 "Reversibilità"): every evolutionary move is a row
of `evolution_move` with a written motivation and an audit line, and it can be taken back.

A move changes rows of the memory tables. `apply` reads, in the same transaction and under one
advisory lock (moves are serialised), exactly the columns it is about to change of every row
it touches (by table and primary key), applies the change, reads them again and stores both:

    before/after = {table: {"columns": [pk..., changed...], "rows": [[...]], "absent": [[pk]]}}

`absent` lists the rows that did not exist (created by the move, or deleted by it in `after`).
A move owns the columns it changed and nothing else: a state move stores `state` and
`state_clock` of `executor_use`, so an invocation counted meanwhile is kept.
`undo` writes `before` back column for column (timestamps included), deletes the rows the move
created, marks `undone_by` and records the undo as a move of its own (the opposite kind:
quarantine/release, archive/restore, fuse/defuse; "undo" for the others). The one bulk move,
the ager's `decay`, is written in one SQL statement that returns old and new weights; its undo
gives every mnest back what the decay took (the exact old weight when none was reinforced since).

An undo is refused while a later move still in effect touched one of the same rows (undo that
one first). `dump` is the deterministic text of the memory tables the acceptance compares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Engine, insert, select, text, update

from metnos.features.mnestoma._rows import (
    MEMORY_TABLES,
    RowChange,
    Shape,
    Snapshot,
    canonical,
    dump,
    encode,
    keys_of,
    read,
    restore,
    shape_of_changes,
    table_of,
    weights_moved,
)
from metnos.features.mnestoma._rows import change as change_row
from metnos.features.mnestoma.models import EvolutionMove
from metnos.ground import i18n
from metnos.ground.db.models import new_id, utcnow
from metnos.ground.errors import MetnosError
from metnos.mechanisms.audit import AuditLog

__all__ = ["MEMORY_TABLES", "Actor", "EvolutionError", "RowChange", "apply", "canonical",
           "dump", "encode", "history", "states", "undo"]

OPPOSITE = {"quarantine": "release", "release": "quarantine", "archive": "restore",
            "restore": "archive", "fuse": "defuse", "defuse": "fuse"}
_LOCK = 0x6D6F766573  # pg_advisory_xact_lock key of the moves ("moves")


class EvolutionError(MetnosError, RuntimeError):
    key = "ERR_EVOLUTION_FAILED"


@dataclass(frozen=True)
class Actor:
    """Who makes a move, for its audit line."""

    audit: AuditLog
    sender: str = "metnos"
    channel: str = "system"


def apply(engine: Engine, kind: str, target: str, motivation: str,
          changes: Sequence[RowChange], actor: Actor, *, reason: str = "ok") -> EvolutionMove:
    """Make one move: snapshot, change, store the move and its audit line (one transaction)."""
    with engine.begin() as conn:
        lock(conn)
        return apply_locked(conn, kind, target, motivation, changes, actor, reason=reason)


def lock(conn: Connection) -> None:
    """Serialise moves (held until the transaction ends)."""
    conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK})


def apply_locked(conn: Connection, kind: str, target: str, motivation: str,
                 changes: Sequence[RowChange], actor: Actor, *, reason: str = "ok",
                 undoes: str | None = None) -> EvolutionMove:
    """`apply` inside a transaction that holds `lock`."""
    shape = shape_of_changes(changes)
    before = read(conn, shape)
    for item in changes:
        change_row(conn, item)
    return store(conn, kind, target, motivation, before, read(conn, shape), actor,
                 reason=reason, undoes=undoes)


def store(conn: Connection, kind: str, target: str, motivation: str, before: Snapshot,
          after: Snapshot, actor: Actor, *, reason: str, undoes: str | None = None,
          clock: int | None = None, created_at: datetime | None = None,
          pending: list[dict[str, Any]] | None = None) -> EvolutionMove:
    """Record a move made in this transaction, with its audit line (written before the commit:
    no move is ever kept without one). A batch passes its `clock`, strictly increasing
    `created_at` stamps (from `next_stamp`) and a `pending` list it inserts itself, at once."""
    row = EvolutionMove(id=new_id(), kind=kind, target=target, motivation=motivation,
                        before=before, after=after, undoes=undoes,
                        clock=clock_of(conn) if clock is None else clock,
                        created_at=created_at or next_stamp(conn))
    record = actor.audit.append(
        sender=actor.sender, channel=actor.channel, action=f"evolution.{kind}",
        action_id=row.id, args={"target": target, "motivation": motivation, "undoes": undoes},
        decision="allow", reason=reason, outcome="done")
    row.audit_seq = record.seq
    if pending is not None:
        pending.append(row.model_dump())
    else:
        conn.execute(insert(table_of("evolution_move")).values(**row.model_dump()))
    return row


def refuse(actor: Actor, kind: str, target: str, exc: MetnosError) -> None:
    """The audit line of a refused move or undo."""
    actor.audit.append(sender=actor.sender, channel=actor.channel, action=f"evolution.{kind}",
                       args={"target": target}, decision="deny", reason=exc.key,
                       outcome="refused")


def undo(engine: Engine, move_id: str, actor: Actor) -> EvolutionMove:
    """Take move `move_id` back; returns the undo (a move of its own). Raises EvolutionError
    (with its audit line): ERR_EVOLUTION_MOVE_NOT_FOUND, ERR_EVOLUTION_ALREADY_UNDONE,
    ERR_EVOLUTION_UNDO_LATER (a later move in effect touched the same rows)."""
    try:
        with engine.begin() as conn:
            lock(conn)
            move = get_move(conn, move_id)
            if move is None:
                raise EvolutionError("ERR_EVOLUTION_MOVE_NOT_FOUND", move_id=move_id[:80])
            _check_undoable(conn, move)
            if move.kind == "decay":
                now, then = _give_back(conn, move)
            else:
                shape = _shape_of(move.before)
                now = read(conn, shape)
                restore(conn, move.before)
                then = read(conn, shape)
            why = i18n.get("MSG_EVOLUTION_WHY_UNDO", None, move_id=move.id,
                           kind=i18n.get(f"MSG_EVOLUTION_KIND_{move.kind.upper()}"))
            back = store(conn, OPPOSITE.get(move.kind, "undo"), move.target, why, now, then,
                         actor, reason="MSG_EVOLUTION_WHY_UNDO", undoes=move.id)
            table = table_of("evolution_move")
            conn.execute(update(table).where(table.c.id == move.id).values(undone_by=back.id))
            return back
    except EvolutionError as exc:
        refuse(actor, "undo", move_id, exc)
        raise


def _check_undoable(conn: Connection, move: EvolutionMove) -> None:
    if move.undone_by is not None:
        raise EvolutionError("ERR_EVOLUTION_ALREADY_UNDONE", move_id=move.id,
                             undo_id=move.undone_by)
    table = table_of("evolution_move")
    undoes = dict(conn.execute(select(table.c.id, table.c.undoes).where(
        table.c.undoes.is_not(None))).all())
    later = conn.execute(select(table.c.id, table.c.kind, table.c.before).where(
        table.c.created_at > move.created_at, table.c.undone_by.is_(None)).order_by(
        table.c.created_at.desc()))
    mine = keys_of(move.before)
    for row in later:
        if _depth(row.id, undoes) % 2 == 0 and mine & keys_of(row.before):
            raise EvolutionError("ERR_EVOLUTION_UNDO_LATER", move_id=move.id,
                                 later_id=row.id, later_kind=row.kind)


def _depth(move_id: str, undoes: dict[str, str]) -> int:
    """How many undos deep a move is: odd, it cancels the move at the root of its chain."""
    depth = 0
    while move_id in undoes:
        move_id, depth = undoes[move_id], depth + 1
    return depth


def _shape_of(snapshot: Snapshot) -> Shape:
    shape: Shape = {}
    for name, part in snapshot.items():
        width = len(table_of(name).primary_key.columns)
        keys = [tuple(r[:width]) for r in part["rows"]] + [tuple(k) for k in part["absent"]]
        shape[name] = (list(part["columns"]), keys)
    return shape


def _give_back(conn: Connection, move: EvolutionMove) -> tuple[Snapshot, Snapshot]:
    """Undo a decay: each mnest gets back what it lost (its old weight exactly, unless it was
    reinforced since: then the reinforcement is kept on top). One statement; returns the
    weights before and after it."""
    lost = {(s, d): w for s, d, w in move.after["mnest"]["rows"]}
    rows = [{"s": s, "d": d, "b": w, "a": lost[(s, d)]}
            for s, d, w in move.before["mnest"]["rows"] if (s, d) in lost]
    found = conn.execute(text(
        "WITH v AS (SELECT * FROM json_to_recordset(CAST(:rows AS json)) "
        "AS v(s varchar, d varchar, b float8, a float8)), "
        "old AS (SELECT m.src, m.dst, m.weight FROM mnest AS m JOIN v "
        "ON m.src = v.s AND m.dst = v.d FOR UPDATE OF m) "
        "UPDATE mnest AS m SET weight = CASE WHEN m.weight = v.a THEN v.b "
        "ELSE m.weight + (v.b - v.a) END FROM v, old "
        "WHERE m.src = v.s AND m.dst = v.d AND old.src = m.src AND old.dst = m.dst "
        "RETURNING m.src, m.dst, old.weight, m.weight"), {"rows": json.dumps(rows)}).all()
    return weights_moved(found)


def clock_of(conn: Connection) -> int:
    value = conn.execute(text("SELECT clock FROM use_clock WHERE id = 1")).scalar()
    return int(value or 0)


def states(engine: Engine) -> dict[str, str]:
    """Every executor with a lifecycle row → its state (active, quarantined, archived)."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT name, state FROM executor_use"))
        return {str(name): str(state) for name, state in rows}


def get_move(conn: Connection, move_id: str) -> EvolutionMove | None:
    row = conn.execute(select(table_of("evolution_move")).where(
        table_of("evolution_move").c.id == move_id)).mappings().first()
    return EvolutionMove.model_validate(dict(row)) if row is not None else None


def history(engine: Engine, limit: int = 100) -> list[EvolutionMove]:
    """The latest moves, newest first (their snapshots left out)."""
    table = table_of("evolution_move")
    cols = [c for c in table.c if c.name not in ("before", "after")]
    with engine.connect() as conn:
        rows = conn.execute(select(*cols).order_by(table.c.created_at.desc()).limit(limit))
        return [EvolutionMove.model_validate(dict(r)) for r in rows.mappings()]


def next_stamp(conn: Connection) -> datetime:
    """Now, strictly after the latest move (under the lock): moves are ordered by it."""
    latest = conn.execute(text("SELECT max(created_at) FROM evolution_move")).scalar()
    now = utcnow()
    if latest is not None and now <= latest:
        now = latest + timedelta(microseconds=1)
    return now


