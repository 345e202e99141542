"""The read-only probes the runtime registers for the Tutor (SPEC §10; issue 14 point 5).

The model never chooses a probe nor its arguments: a view admitted by `metnos.features.tutor.views`
names one, and `ProbeRegistry.run` runs it for the asker. An owner-only probe is refused to
anyone else before it runs. Each run has a time bound (a probe that overruns is `unavailable`)
and its observation a size bound (`metnos.features.tutor.observation`). A probe reads what the
gateway puts in its `ProbeContext`; the scheduler's state comes from `SchedulerSignals` that the
runtime fills (metnos/ never imports prefect), mapped to a state by `scheduler_state`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from metnos.features.tutor.observation import Observation, Status, observe, unavailable
from metnos.ground.errors import MetnosError

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

    from metnos.mechanisms.executors.registry import Registry

Scope = Literal["owner", "self"]
SERVICES = ("database", "prefect_server", "gateway", "deployment_runner", "telegram_poller")
SchedulerState = Literal["running", "degraded", "failed", "stopped"]
DEFAULT_TIMEOUT_S = 2.0
SIGNALS_FRESH_S = 30.0  # the scheduler probe's ttl: older signals no longer tell a service's state


class ProbeRefused(MetnosError, PermissionError):
    """An owner-only probe asked for by someone else, or a probe that is not registered."""


@dataclass(frozen=True)
class Asker:
    user_id: str
    is_owner: bool


@dataclass(frozen=True)
class SchedulerSignals:
    """What the runtime knows of the scheduler (the deployment runner and the Prefect server).
    `None` means the signal is not known, which is not the same as a bad value."""

    server_reachable: bool | None = None
    runner_heartbeat: datetime | None = None  # the runner's last sign of life
    heartbeat_timeout_s: float = 120.0  # older than this: the runner is not alive
    runs: Mapping[str, int] = field(default_factory=dict)  # recent runs by state
    observed_at: datetime | None = None  # when these signals were read (the snapshot's time)
    deployments: int | None = None  # deployments the runner serves, as the server lists them


@dataclass(frozen=True)
class ProbeContext:
    """What a probe may read, provided by the gateway for one turn."""

    asker: Asker
    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    registry: Registry | None = None
    engine: Engine | None = None
    home: Path | None = None  # METNOS_HOME, to tell the synt's executors from the owner's
    repo_executors: Path | None = None  # the shipped executors folder
    services: Callable[[], Mapping[str, bool | None]] | None = None  # service → up
    scheduler: Callable[[], SchedulerSignals] | None = None


@dataclass(frozen=True)
class Reading:
    """What a probe function returns; `observe` turns it into an `Observation`."""

    facts: dict[str, object]
    status: Status = "ok"
    cause: str | None = None
    taken_at: datetime | None = None  # when the facts were seen, if earlier than the run


ProbeFn = Callable[[ProbeContext], Reading]


@dataclass(frozen=True)
class Probe:
    name: str
    fn: ProbeFn
    scope: Scope
    covers: frozenset[str]
    ttl_s: float
    version: str


class ProbeRegistry:
    def __init__(self) -> None:
        self._probes: dict[str, Probe] = {}

    def register_probe(self, name: str, fn: ProbeFn, *, scope: Scope = "owner",
                       covers: set[str] | frozenset[str], ttl_s: float = 60.0,
                       version: str = "1") -> Probe:
        if scope not in ("owner", "self"):
            raise ValueError(f"scope {scope!r}")
        probe = Probe(name, fn, scope, frozenset(covers), ttl_s, version)
        self._probes[name] = probe
        return probe

    def get(self, name: str) -> Probe | None:
        return self._probes.get(name)

    def names(self) -> list[str]:
        return sorted(self._probes)

    def allowed(self, name: str, asker: Asker) -> bool:
        probe = self._probes.get(name)
        return probe is not None and (probe.scope == "self" or asker.is_owner)

    def visible(self, asker: Asker) -> list[Probe]:
        return [p for n, p in sorted(self._probes.items()) if self.allowed(n, asker)]

    def run(self, name: str, ctx: ProbeContext,
            timeout_s: float = DEFAULT_TIMEOUT_S) -> Observation:
        """Run one probe for `ctx.asker` within `timeout_s`; refused before it runs when the
        asker may not see it."""
        if not self.allowed(name, ctx.asker):
            raise ProbeRefused("ERR_TUTOR_PROBE_REFUSED", probe=name)
        probe = self._probes[name]
        version = f"{probe.name}/{probe.version}"
        box: list[Reading | BaseException] = []

        def _target() -> None:
            try:
                box.append(probe.fn(ctx))
            except Exception as exc:  # a probe's failure is an unavailable observation
                box.append(exc)

        worker = threading.Thread(target=_target, name=f"probe-{name}", daemon=True)
        worker.start()
        worker.join(timeout_s)
        if not box:
            return unavailable(name, now=ctx.now, source_version=version, cause="timeout")
        got = box[0]
        if isinstance(got, BaseException):
            return unavailable(name, now=ctx.now, source_version=version, cause="error")
        return observe(name, got.facts, now=got.taken_at or ctx.now, ttl_s=probe.ttl_s,
                       source_version=version, status=got.status, cause=got.cause)


# -- the scheduler -------------------------------------------------------------------------

def scheduler_state(sig: SchedulerSignals, now: datetime) -> Reading:
    """Signals → `running | degraded | failed | stopped`. A failed task does not stop the
    scheduler (failed runs are counted, nothing more); a quiet period without runs proves
    nothing; a cause is named only when a signal attests it."""
    runs = {k: int(v) for k, v in sig.runs.items() if k in ("completed", "failed", "crashed",
                                                            "late", "running", "scheduled")}
    age = (now - sig.runner_heartbeat).total_seconds() if sig.runner_heartbeat else None
    facts: dict[str, object] = {"runs": runs,
                                "heartbeat_age_s": round(age) if age is not None else None}
    if sig.server_reachable is None and sig.runner_heartbeat is None:
        return Reading({**facts, "state": None}, status="unavailable")
    if sig.server_reachable is False:
        return Reading({**facts, "state": "failed"}, cause="server_unreachable")
    if (age is not None and age > sig.heartbeat_timeout_s) or (
            age is None and sig.server_reachable and sig.deployments is not None):
        # silent too long, or the server lists the deployments and none was ever polled
        return Reading({**facts, "state": "stopped"}, cause="runner_heartbeat_missing")
    status: Status = "ok" if age is not None and sig.server_reachable else "partial"
    if runs.get("crashed", 0) > 0:
        return Reading({**facts, "state": "degraded"}, status=status, cause="runs_crashed")
    if runs.get("late", 0) > 0:
        return Reading({**facts, "state": "degraded"}, status=status, cause="runs_late")
    return Reading({**facts, "state": "running"}, status=status)


def probe_scheduler(ctx: ProbeContext) -> Reading:
    """The state the signals showed when they were read: a snapshot's time is the
    observation's, so an old snapshot reads as stale, never as the current state."""
    if ctx.scheduler is None:
        return Reading({"state": None}, status="unavailable")
    sig = ctx.scheduler()
    seen = scheduler_state(sig, sig.observed_at or ctx.now)
    return replace(seen, taken_at=sig.observed_at) if sig.observed_at else seen


def runner_alive(sig: SchedulerSignals) -> bool | None:
    """Whether the deployment runner polled recently, when the signals tell."""
    if not sig.server_reachable or sig.observed_at is None:
        return None
    if sig.runner_heartbeat is None:
        return False if sig.deployments is not None else None
    age = (sig.observed_at - sig.runner_heartbeat).total_seconds()
    return age <= sig.heartbeat_timeout_s


def scheduler_services(sig: SchedulerSignals | None, now: datetime,
                       fresh_s: float = SIGNALS_FRESH_S) -> dict[str, bool | None]:
    """`prefect_server` and `deployment_runner` for the services probe, from signals no
    older than `fresh_s` (older ones, or none: not known)."""
    if sig is None or sig.observed_at is None or (
            now - sig.observed_at).total_seconds() > fresh_s:
        return {"prefect_server": None, "deployment_runner": None}
    return {"prefect_server": sig.server_reachable, "deployment_runner": runner_alive(sig)}


# -- services ------------------------------------------------------------------------------

def probe_services(ctx: ProbeContext) -> Reading:
    """Up or down per known service; nothing else (no endpoint, PID or unit name)."""
    if ctx.services is None:
        return Reading({}, status="unavailable")
    seen = ctx.services()
    facts: dict[str, object] = {}
    for name in SERVICES:
        value = seen.get(name)
        facts[name] = None if value is None else ("up" if value is True else "down")
    missing = any(v is None for v in facts.values())
    return Reading(facts, status="partial" if missing else "ok")


# -- executors -----------------------------------------------------------------------------

def probe_executors(ctx: ProbeContext) -> Reading:
    """Admitted executors: name → lifecycle state and provenance (no paths, no refusals)."""
    if ctx.registry is None:
        return Reading({}, status="unavailable")
    states: dict[str, str] = {}
    status: Status = "ok"
    if ctx.engine is not None:
        from metnos.features.mnestoma.moves import states as lifecycle_states

        states = lifecycle_states(ctx.engine)
    else:
        status = "partial"
    lifecycle: dict[str, object] = {}
    provenance: dict[str, object] = {}
    for spec in ctx.registry.admitted:
        lifecycle[spec.name] = states.get(spec.name, "active" if ctx.engine else None)
        provenance[spec.name] = _provenance(spec.name, spec.folder, ctx)
    return Reading({"count": len(lifecycle), "lifecycle": lifecycle,
                    "provenance": provenance}, status=status)


def _provenance(name: str, folder: Path, ctx: ProbeContext) -> str:
    if ctx.repo_executors is not None and folder.parent == ctx.repo_executors:
        return "builtin"
    if ctx.home is not None and (ctx.home / "synt" / "signed" / f"{name}.json").is_file():
        return "synt"
    return "owner"


# -- the asker's scheduled tasks ------------------------------------------------------------

def probe_scheduled_tasks(ctx: ProbeContext) -> Reading:
    """The asker's own reminders: how many wait, when the next ones are, how many were
    delivered; never their text."""
    if ctx.engine is None:
        return Reading({}, status="unavailable")
    from sqlmodel import col, func, select

    from metnos.features.reminders.outbox import Outbox
    from metnos.ground.db.engine import session

    mine = (Outbox.user_id == ctx.asker.user_id, Outbox.kind == "reminder",
            col(Outbox.cancelled_at).is_(None))
    with session(ctx.engine) as db:
        waiting = db.exec(select(Outbox.scheduled_for).where(
            *mine, col(Outbox.delivered_at).is_(None)).order_by(
            col(Outbox.scheduled_for))).all()
        delivered = db.exec(select(func.count()).select_from(Outbox).where(
            *mine, col(Outbox.delivered_at).is_not(None))).one()
    upcoming = [t for t in waiting if t is not None]
    return Reading({"pending": len(waiting), "delivered": int(delivered),
                    "next_at": [t.isoformat() for t in upcoming[:5]]})


def default_probes() -> ProbeRegistry:
    """The runtime's probes, each with the facts it covers."""
    probes = ProbeRegistry()
    probes.register_probe("executors", probe_executors, scope="owner",
                          covers={"executors", "executor_lifecycle", "executor_provenance"})
    probes.register_probe("services", probe_services, scope="owner", ttl_s=30.0,
                          covers={"services", "service_health"})
    probes.register_probe("scheduler", probe_scheduler, scope="owner", ttl_s=SIGNALS_FRESH_S,
                          covers={"scheduler", "scheduler_state", "scheduler_cause"})
    probes.register_probe("scheduled_tasks", probe_scheduled_tasks, scope="self",
                          covers={"scheduled_tasks", "next_reminder"})
    return probes
