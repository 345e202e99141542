"""An executor's lifecycle and the mnests' decay, as moves (`metnos.features.mnestoma.moves`).

    active ──quarantine──▶ quarantined ──archive──▶ archived
       ▲ ◀────release──────────┘                       │
       └───────────────────────restore─────────────────┘

A state move changes `state` and `state_clock` (the use clock when it entered the state) of the
executor's `executor_use` row (created when it has none yet); `updated_at` stays the time of
its last invocation. The owner may
archive an active executor directly; only the ager's proposals, once accepted, archive one on
Metnos's initiative. Quarantined: routing leaves it out when routing is on. Archived: it is never
offered to the model and a step naming it is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, insert, text

from metnos.features.mnestoma._rows import Snapshot, table_of, weights_moved
from metnos.features.mnestoma.models import EvolutionMove
from metnos.features.mnestoma.moves import (
    Actor,
    EvolutionError,
    RowChange,
    apply_locked,
    clock_of,
    lock,
    next_stamp,
    refuse,
    store,
)

TARGET = {"quarantine": "quarantined", "release": "active", "archive": "archived",
          "restore": "active"}
SOURCES = {"quarantine": ("active",), "release": ("quarantined",),
           "archive": ("active", "quarantined"), "restore": ("archived",)}
STATE_MOVES = tuple(TARGET)


def move_executor(engine: Engine, name: str, kind: str, actor: Actor, motivation: str, *,
                  reason: str = "ok", only_from: tuple[str, ...] | None = None,
                  ) -> EvolutionMove:
    """Move executor `name` to the state of `kind` (quarantine, release, archive, restore).
    Raises EvolutionError (with its audit line) ERR_EVOLUTION_STATE_<STATE> when it is in a
    state the move does not start from (`only_from` narrows them)."""
    if kind not in TARGET:
        raise ValueError(f"not a state move: {kind!r}")
    try:
        with engine.begin() as conn:
            lock(conn)
            state = conn.execute(text("SELECT state FROM executor_use WHERE name = :n "
                                      "FOR UPDATE"), {"n": name}).scalar() or "active"
            if state not in (only_from or SOURCES[kind]):
                raise EvolutionError(f"ERR_EVOLUTION_STATE_{state.upper()}", name=name, move=kind)
            change = RowChange("executor_use", (name,), {
                "state": TARGET[kind], "state_clock": clock_of(conn)})
            return apply_locked(conn, kind, name, motivation, [change], actor, reason=reason)
    except EvolutionError as exc:
        refuse(actor, kind, name, exc)
        raise


def move_many(engine: Engine, kind: str, why: Mapping[str, str], actor: Actor, *,
              reason: str) -> list[EvolutionMove]:
    """The same state move on many executors (`why`: name → motivation) in one transaction,
    one move and one audit line each, in name order (the ager's releases and quarantines);
    those with no row or in a state the move does not start from are left alone."""
    if not why:
        return []
    names = sorted(why)
    with engine.begin() as conn:
        lock(conn)
        clock, stamp = clock_of(conn), next_stamp(conn)
        rows = conn.execute(text(
            "SELECT name, state, state_clock FROM executor_use WHERE name = ANY(CAST(:n AS "
            "varchar[])) AND state = ANY(CAST(:s AS varchar[])) ORDER BY name FOR UPDATE"),
            {"n": names, "s": list(SOURCES[kind])}).all()
        conn.execute(text("UPDATE executor_use SET state = :t, state_clock = :c "
                          "WHERE name = ANY(CAST(:n AS varchar[]))"),
                     {"t": TARGET[kind], "c": clock, "n": [r[0] for r in rows]})
        out, columns = [], ["name", "state", "state_clock"]
        pending: list[dict[str, Any]] = []
        for n, (name, state, since) in enumerate(rows):
            before: Snapshot = {"executor_use": {"columns": columns, "absent": [],
                                                 "rows": [[name, state, since]]}}
            after: Snapshot = {"executor_use": {"columns": columns, "absent": [],
                                                "rows": [[name, TARGET[kind], clock]]}}
            out.append(store(conn, kind, name, why[name], before, after, actor, reason=reason,
                             clock=clock, created_at=stamp + timedelta(microseconds=n),
                             pending=pending))
        if pending:
            conn.execute(insert(table_of("evolution_move")), pending)
        return out


def decay(engine: Engine, *, upto: int, amount: float, actor: Actor,
          motivation: Callable[[int], str]) -> EvolutionMove | None:
    """Every mnest last reinforced at use clock `upto` or before loses `amount` of weight
    (never below 0): one move for all of them (`motivation(count)` its text), None when there
    was none. One statement, so it grows linearly with the mnestoma; `updated_at` stays the
    time of the last reinforcement."""
    with engine.begin() as conn:
        lock(conn)
        found = conn.execute(text(
            "WITH old AS (SELECT src, dst, weight FROM mnest WHERE clock <= :upto "
            "AND weight > 0 FOR UPDATE) "
            "UPDATE mnest AS m SET weight = GREATEST(m.weight - :d, 0) FROM old "
            "WHERE m.src = old.src AND m.dst = old.dst "
            "RETURNING m.src, m.dst, old.weight, m.weight"), {"upto": upto, "d": amount}).all()
        if not found:
            return None
        before, after = weights_moved(found)
        return store(conn, "decay", f"{len(found)} mnests", motivation(len(found)), before,
                     after, actor, reason="MSG_EVOLUTION_WHY_DECAY")
