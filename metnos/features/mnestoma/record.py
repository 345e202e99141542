"""What a closed turn leaves in the mnestoma (SPEC §7.1–7.2): the use clock, each executor's
use, the hand-offs that reinforce mnests, and the proto-mnests its steps showed.

Read from the turn's step trace (`TurnStep` rows, in `seq` order):
- an **invocation** is a step of a real executor that ran (outcome done or failed; a refusal,
  a denial or a `wish` is none): the use clock advances by the turn's invocations;
- a **hand-off** A→B: B ran, and its `seen` holds a step A of the *latest earlier model call
  that had invocations* (the direct predecessors), A ran too and is another executor. Calls of
  one model message never hand off to each other (none had seen the others' results), and the
  embedded planner's steps (no model, `seen` empty) make none. Each call of B counts once per
  distinct executor it was handed by;
- a **proto-mnest** (from A, wanted X): a done step whose manifest's `[wishes.X]` boolean
  output is true (source "executor"), or a `wish` step of the model (source "model").

Everything is written in one transaction of bulk upserts (a few statements, whatever the
turn's length). `Memory` says what became due: the proto-mnests whose count just reached
`proto_threshold` while still open (exactly once: the crossing is seen by one turn only, the
row lock of the upsert orders concurrent ones), whether the ager is due, and the turn's
sequence of done executors (for the synt's composition counter).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.mnestoma.models import ExecutorUse, Mnest, ProtoMnest, UseClock
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep, new_id, utcnow
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.registry import Registry

log = logging.getLogger(__name__)

WISH = "wish"  # the built-in tool the model declares a missing capability with
INVOKED = ("done", "failed")


@dataclass(frozen=True)
class Wish:
    """One recurrence of a proto-mnest, as a step showed it."""

    src: str
    want: str
    have_kind: str = ""
    want_kind: str = ""
    why: str = ""
    source: str = "model"


@dataclass(frozen=True)
class DueWish:
    """A proto-mnest whose count just reached the threshold: the synt cascade may start."""

    id: str
    src: str
    want: str
    have_kind: str
    want_kind: str
    count: int
    source: str


@dataclass(frozen=True)
class Memory:
    """What one turn left, and what it made due."""

    clock: int = 0  # the use clock after the turn
    invocations: int = 0
    handoffs: tuple[tuple[str, str], ...] = ()
    wishes: int = 0
    due: tuple[DueWish, ...] = ()
    ager_due: bool = False
    sequence: tuple[str, ...] = field(default=())  # the done executors, in order


def after_turn(engine: Engine, registry: Registry, settings: Settings,
               turn_id: str) -> Memory:
    """Record what turn `turn_id` did in the mnestoma (nothing when evolution is off)."""
    evolution = settings.evolution
    if not evolution.enabled:
        return Memory()
    with db_session(engine) as db:
        steps = list(db.exec(select(TurnStep).where(col(TurnStep.turn_id) == turn_id)
                             .order_by(col(TurnStep.seq))).all())
        ran = [s for s in steps if invoked(s)]
        pairs = handoffs(steps)
        wishes = [*executor_wishes(steps, registry, settings.active_languages[0]),
                  *model_wishes(steps)]
        if not ran and not wishes:
            return Memory()
        clock, ager_clock = _advance(db, len(ran))
        _use(db, Counter(s.executor for s in ran), clock)
        _reinforce(db, Counter(pairs), clock)
        due = _wish(db, wishes, clock, evolution.proto_threshold)
    return Memory(clock=clock, invocations=len(ran), handoffs=tuple(pairs),
                  wishes=len(wishes), due=tuple(due),
                  ager_due=clock - ager_clock >= evolution.ager_every,
                  sequence=tuple(s.executor for s in ran if s.outcome == "done"))


# -- reading the trace (pure) ---------------------------------------------------------------
def invoked(step: TurnStep) -> bool:
    """A real executor's step that ran: one tick of the use clock."""
    return step.executor != WISH and step.outcome in INVOKED


def handoffs(steps: Sequence[TurnStep]) -> list[tuple[str, str]]:
    """The hand-offs (A, B) of one turn's steps, in the order of the B calls."""
    ran = [s for s in steps if invoked(s)]
    by_think: dict[int, list[TurnStep]] = {}
    for step in ran:
        by_think.setdefault(step.think, []).append(step)
    thinks = sorted(by_think)
    found: list[tuple[str, str]] = []
    for step in ran:
        earlier = [t for t in thinks if t < step.think]
        if not earlier:
            continue
        seen = set(step.seen or ())
        sources = dict.fromkeys(a.executor for a in by_think[earlier[-1]]
                                if a.seq in seen and a.executor != step.executor)
        found.extend((src, step.executor) for src in sources)
    return found


def executor_wishes(steps: Sequence[TurnStep], registry: Registry, lang: str) -> list[Wish]:
    """The needs done steps declared through their manifest's `[wishes]`."""
    found: list[Wish] = []
    for step in steps:
        spec = registry.find(step.executor) if step.outcome == "done" else None
        if spec is None or not spec.manifest.wishes or not isinstance(step.result, dict):
            continue
        for capability, wish in spec.manifest.wishes.items():
            if step.result.get(wish.when) is True:
                why = wish.why.get(lang) or wish.why.get("en") or next(iter(wish.why.values()))
                found.append(Wish(step.executor, capability, wish.have, wish.want, why,
                                  "executor"))
    return found


def model_wishes(steps: Sequence[TurnStep]) -> list[Wish]:
    """The needs the model declared with the `wish` tool (stored already scrubbed)."""
    found: list[Wish] = []
    for step in steps:
        result: dict[str, Any] = step.result if isinstance(step.result, dict) else {}
        if step.executor != WISH or step.outcome != "done" or not result.get("capability"):
            continue
        found.append(Wish(str(result.get("src") or ""), str(result["capability"]),
                          str(result.get("have") or ""), str(result.get("want") or ""),
                          str(result.get("why") or ""), "model"))
    return found


# -- writing (one transaction, bulk statements) ----------------------------------------------
def _advance(db: Session, ticks: int) -> tuple[int, int]:
    """The use clock after `ticks` more invocations, and the ager's last clock."""
    table = UseClock.__table__  # type: ignore[attr-defined]
    stmt = (pg_insert(table).values(id=1, clock=ticks, ager_clock=0, ager_cycles=0)
            .on_conflict_do_update(index_elements=["id"],
                                   set_={"clock": table.c.clock + ticks})
            .returning(table.c.clock, table.c.ager_clock))
    clock, ager_clock = db.execute(stmt).one()
    return int(clock), int(ager_clock)


def _use(db: Session, uses: Counter[str], clock: int) -> None:
    if not uses:
        return
    table = ExecutorUse.__table__  # type: ignore[attr-defined]
    now = utcnow()
    stmt = pg_insert(table).values([
        {"name": name, "invocations": n, "window_uses": n, "last_clock": clock,
         "state": "active", "state_clock": clock, "updated_at": now}
        for name, n in sorted(uses.items())])
    db.execute(stmt.on_conflict_do_update(index_elements=["name"], set_={
        "invocations": table.c.invocations + stmt.excluded.invocations,
        "window_uses": table.c.window_uses + stmt.excluded.window_uses,
        "last_clock": stmt.excluded.last_clock, "updated_at": stmt.excluded.updated_at}))


def _reinforce(db: Session, pairs: Counter[tuple[str, str]], clock: int) -> None:
    if not pairs:
        return
    table = Mnest.__table__  # type: ignore[attr-defined]
    now = utcnow()
    stmt = pg_insert(table).values([
        {"src": src, "dst": dst, "weight": float(n), "clock": clock, "created_at": now,
         "updated_at": now} for (src, dst), n in sorted(pairs.items())])
    db.execute(stmt.on_conflict_do_update(index_elements=["src", "dst"], set_={
        "weight": table.c.weight + stmt.excluded.weight, "clock": stmt.excluded.clock,
        "updated_at": stmt.excluded.updated_at}))


def _wish(db: Session, wishes: list[Wish], clock: int, threshold: int) -> list[DueWish]:
    """Count the wishes per (src, want); the ones that just reached `threshold`, still open."""
    if not wishes:
        return []
    counts = Counter((w.src, w.want) for w in wishes)
    first = {(w.src, w.want): w for w in reversed(wishes)}  # the turn's first of each pair
    table = ProtoMnest.__table__  # type: ignore[attr-defined]
    now = utcnow()
    stmt = pg_insert(table).values([
        {"id": new_id(), "src": w.src, "want": w.want, "have_kind": w.have_kind,
         "want_kind": w.want_kind, "why": w.why, "source": w.source, "count": counts[pair],
         "first_clock": clock, "last_clock": clock, "status": "open", "created_at": now,
         "updated_at": now} for pair, w in sorted(first.items(), key=lambda item: item[0])])
    keep = {name: func.coalesce(func.nullif(table.c[name], ""), stmt.excluded[name])
            for name in ("have_kind", "want_kind", "why")}
    upsert = stmt.on_conflict_do_update(constraint="proto_mnest_pair", set_={
        **keep, "count": table.c.count + stmt.excluded.count,
        "last_clock": stmt.excluded.last_clock, "updated_at": stmt.excluded.updated_at,
    }).returning(table.c.id, table.c.src, table.c.want, table.c.have_kind, table.c.want_kind,
                 table.c.count, table.c.source, table.c.status)
    due = []
    for row in db.execute(upsert).mappings().all():
        count = int(row["count"])
        added = counts[(row["src"], row["want"])]
        if row["status"] == "open" and count - added < threshold <= count:
            due.append(DueWish(row["id"], row["src"], row["want"], row["have_kind"],
                               row["want_kind"], count, row["source"]))
    return due


class Remembering:
    """The mnestoma's side of a closed turn (`metnos.turns.record.Remember`, registered by
    `metnos.faces.wiring`): the turn's memory, and once the turn is marked finished, that memory
    handed to `hooks` (the synt's count of accepted compositions); a hook's failure is logged
    and never fails the turn or the next hook."""

    def __init__(self, engine: Engine, settings: Settings,
                 hooks: Sequence[Callable[[Memory], None]] = ()) -> None:
        self.engine, self.settings, self.hooks = engine, settings, list(hooks)

    def __call__(self, registry: Registry, turn_id: str) -> Callable[[], None]:
        memory = after_turn(self.engine, registry, self.settings, turn_id)
        return lambda: self._hand_over(turn_id, memory)

    def _hand_over(self, turn_id: str, memory: Memory) -> None:
        for hook in self.hooks:
            try:
                hook(memory)
            except Exception:
                log.exception("mnestoma.hook_failed turn_id=%s", turn_id)


def archived(engine: Engine, name: str) -> bool:
    """Whether the owner archived executor `name` (one indexed read: its lifecycle row)."""
    with engine.connect() as conn:
        state = conn.execute(select(col(ExecutorUse.state)).where(
            col(ExecutorUse.name) == name)).scalar()
    return state == "archived"
