"""The ager (SPEC §7.5, arch §10 "Ager"): time is use, not the calendar.

Every `ager_every` invocations (the use clock, `UseClock.clock`) a cycle:
1. gives a lifecycle row to every executor of the registry that has none yet: it was first
   seen now, so its idleness counts from this cycle (a tool signed today is not idle since
   the install); the always-on core (`route_core`) is never quarantined;
2. releases, as a move, every quarantined executor invoked since it entered quarantine
   ("used again");
3. decays every mnest not reinforced in the last `ager_every` invocations by `decay` (never
   below 0): one "decay" move for the cycle, one SQL statement;
4. quarantines every active executor not invoked in the last `quarantine_after` invocations
   (counted from its last invocation or from when it became active, whichever is later, so
   a released or restored one gets a fresh start): one move each;
5. proposes archiving every executor quarantined for `archive_after` invocations, through the
   proposals (it never archives: the owner's acceptance does, `accept_archive`);
6. resets `window_uses` and sets `ager_clock = clock`, `ager_cycles += 1` (bookkeeping, not
   moves: undoing a move never makes the ager run again).
A sleeping system does not age: without invocations the clock stands still and `due` is false.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Engine, text

from metnos.features.mnestoma.lifecycle import decay, move_executor, move_many
from metnos.features.mnestoma.moves import Actor, EvolutionError
from metnos.features.pairing.service import OWNER_USER_ID
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import Draft, on_accept, submit
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, in_session, make_engine
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.audit import AuditLog, open_audit_log

log = logging.getLogger(__name__)
_LOCK = 0x61676572  # pg_try_advisory_lock key of the ager ("ager"): one cycle at a time


@dataclass
class AgerReport:
    ran: bool
    clock: int
    decayed: int = 0
    released: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    proposed: list[str] = field(default_factory=list)  # proposal ids
    moves: list[str] = field(default_factory=list)  # move ids, in order
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def clocks(engine: Engine) -> tuple[int, int]:
    """(use clock, clock of the ager's last cycle); (0, 0) before the first invocation."""
    with engine.connect() as conn:
        row = conn.execute(text("SELECT clock, ager_clock FROM use_clock WHERE id = 1")).first()
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def due(engine: Engine, settings: Settings) -> bool:
    """`ager_every` invocations since the last cycle (one query)."""
    clock, ager_clock = clocks(engine)
    return clock - ager_clock >= settings.evolution.ager_every


def cycle(engine: Engine, settings: Settings, audit: AuditLog, *,
          executors: Iterable[str] | None = None) -> AgerReport:
    """One cycle when it is due (see the module); `executors` defaults to the registry's."""
    started = time.monotonic()
    with engine.connect() as guard:
        if not guard.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": _LOCK}).scalar():
            return AgerReport(ran=False, clock=clocks(engine)[0])  # another cycle is running
        try:
            report = _cycle(engine, settings, audit, executors)
        finally:
            guard.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK})
            guard.commit()
    report.seconds = round(time.monotonic() - started, 3)
    if report.ran:
        log.info("ager.cycle clock=%d decayed=%d quarantined=%d proposed=%d seconds=%.3f",
                 report.clock, report.decayed, len(report.quarantined), len(report.proposed),
                 report.seconds)
    return report


def _cycle(engine: Engine, settings: Settings, audit: AuditLog,
           executors: Iterable[str] | None) -> AgerReport:
    every = settings.evolution
    clock, ager_clock = clocks(engine)
    report = AgerReport(ran=clock - ager_clock >= every.ager_every, clock=clock)
    if not report.ran:
        return report
    names = sorted(set(executors if executors is not None else _registry_names(settings)))
    actor = Actor(audit, sender="metnos", channel="ager")
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO executor_use (name, invocations, window_uses, last_clock, state, "
            "state_clock, updated_at) SELECT n, 0, 0, 0, 'active', :c, now() "
            "FROM unnest(CAST(:names AS varchar[])) AS n ON CONFLICT (name) DO NOTHING"),
            {"c": clock, "names": names})
    _release_used(engine, actor, report)
    moved = decay(engine, upto=clock - every.ager_every, amount=every.decay, actor=actor,
                  motivation=lambda count: i18n.get(
                      "MSG_EVOLUTION_WHY_DECAY", None, count=count, every=every.ager_every,
                      amount=i18n.number(every.decay)))
    if moved is not None:
        report.decayed = len(moved.before["mnest"]["rows"])
        report.moves.append(moved.id)
    _quarantine_idle(engine, settings, actor, report)
    _propose_archiving(engine, settings, report)
    with engine.begin() as conn:
        conn.execute(text("UPDATE executor_use SET window_uses = 0 WHERE window_uses <> 0"))
        conn.execute(text("UPDATE use_clock SET ager_clock = :c, ager_cycles = ager_cycles + 1 "
                          "WHERE id = 1"), {"c": clock})
    return report


def _release_used(engine: Engine, actor: Actor, report: AgerReport) -> None:
    with engine.connect() as conn:
        names = conn.execute(text("SELECT name FROM executor_use WHERE state = 'quarantined' "
                                  "AND last_clock > state_clock")).scalars().all()
    why = i18n.get("MSG_EVOLUTION_WHY_USED_AGAIN")
    done = move_many(engine, "release", dict.fromkeys(names, why), actor,
                     reason="MSG_EVOLUTION_WHY_USED_AGAIN")
    report.moves.extend(m.id for m in done)
    report.released.extend(m.target for m in done)


def _quarantine_idle(engine: Engine, settings: Settings, actor: Actor,
                     report: AgerReport) -> None:
    after = settings.evolution.quarantine_after
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT name, :c - GREATEST(last_clock, state_clock) FROM executor_use "
            "WHERE state = 'active' AND NOT (name = ANY(CAST(:core AS varchar[]))) "
            "AND :c - GREATEST(last_clock, state_clock) >= :after"),
            {"c": report.clock, "core": list(settings.evolution.route_core),
             "after": after}).all()
    why = {name: i18n.get("MSG_EVOLUTION_WHY_QUARANTINE", None, idle=int(idle), after=after)
           for name, idle in rows}
    done = move_many(engine, "quarantine", why, actor, reason="MSG_EVOLUTION_WHY_QUARANTINE")
    report.moves.extend(m.id for m in done)
    report.quarantined.extend(m.target for m in done)


def _propose_archiving(engine: Engine, settings: Settings, report: AgerReport) -> None:
    with engine.connect() as conn:
        rows = conn.execute(text(
            "SELECT name, state_clock, :c - last_clock FROM executor_use "
            "WHERE state = 'quarantined' AND :c - state_clock >= :after ORDER BY name"),
            {"c": report.clock, "after": settings.evolution.archive_after}).all()
    for name, since, idle in rows:
        proposal = in_session(engine, submit, Draft(
            kind="archive", origin="ager", user_id=OWNER_USER_ID,
            title_key="MSG_EVOLUTION_PROPOSE_ARCHIVE", target=name,
            vars={"name": name, "uses": int(idle)},
            payload={"executor": name, "quarantined_at": int(since)}))
        if proposal is not None:  # None: this quarantine was proposed for archiving already
            report.proposed.append(proposal.id)


def accept_archive(engine: Engine, proposal: Proposal) -> None:
    """The owner accepted archiving: the "archive" move, if it is still in quarantine
    (EvolutionError ERR_EVOLUTION_STATE_<STATE>, audited, when it is no longer)."""
    name = str(proposal.payload["executor"])
    why = i18n.get("MSG_EVOLUTION_WHY_ARCHIVE_ACCEPTED", None,
                   uses=int(proposal.vars.get("uses", 0)))
    with open_audit_log(get_settings()) as audit:
        actor = Actor(audit, sender=proposal.user_id, channel="proposal")
        move_executor(engine, name, "archive", actor, why, only_from=("quarantined",),
                      reason="MSG_EVOLUTION_WHY_ARCHIVE_ACCEPTED")


def due_instance(settings: Settings) -> bool:
    """`due` on the instance's database (the scheduled check: one query)."""
    engine = make_engine(database_url(settings))
    try:
        return due(engine, settings)
    finally:
        engine.dispose()


def cycle_instance(settings: Settings) -> AgerReport:
    """`cycle` on the instance's database, registry and audit log."""
    engine = make_engine(database_url(settings))
    try:
        # a signed checkpoint every 64 lines and at close, not after each (a cycle may write
        # one line per executor it quarantines)
        with open_audit_log(settings, checkpoint_every=64) as audit:
            return cycle(engine, settings, audit)
    finally:
        engine.dispose()


def _registry_names(settings: Settings) -> list[str]:
    from metnos.mechanisms.executors.registry import load_registry

    return load_registry(settings).names()


on_accept("archive", accept_archive)

__all__ = ["AgerReport", "EvolutionError", "accept_archive", "clocks", "cycle", "cycle_instance",
           "due", "due_instance"]
