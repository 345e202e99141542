"""The turn service, built once: the runtime's parts, checked at start-up, and every hook the
features register with the turn, from one list (`FEATURES`).

`build_runtime(settings, edges)` is what the gateway, the mail digest and the tests call;
nothing fills a hook later (effects, watchers, undoers, reversals, host tools, accounts, the
Tutor's pre-check, the work pools). `Edges` are the ways out the composition root hands in
(Prefect's scheduling calls, the work pools, the scheduler's signals): a hook that needs one
it was not given is not registered, and its step fails in words
(`ERR_EXECUTOR_EFFECT_UNAVAILABLE`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from types import MappingProxyType

from metnos.faces.registry import create_tables
from metnos.features.archiving import archive_destination
from metnos.features.lists_merge import check_list_name
from metnos.features.mail import summary
from metnos.features.mail.account import load_account
from metnos.features.mail.undo import Mailbox
from metnos.features.mnestoma import routing, wish
from metnos.features.mnestoma.record import Memory, Remembering, archived
from metnos.features.notify import effect as notify
from metnos.features.notify import members
from metnos.features.reminders import effect as reminders
from metnos.features.reminders import outbox
from metnos.features.reminders.effect import Scheduler
from metnos.features.remote.port import RemotePort
from metnos.features.remote.server import run_remote
from metnos.features.remote.undo import Remote
from metnos.features.reversal import EFFECT, FILES, MAILBOX, REMOTE, Effects, Files
from metnos.features.schedules import effect as schedules
from metnos.features.schedules import store as schedule_store
from metnos.features.schedules.cadence import check_cadence
from metnos.features.schedules.owner import Sync
from metnos.features.schedules.planning import plan_timed
from metnos.features.synt import composition
from metnos.features.tutor import feedback, views
from metnos.features.tutor.embedder import default_embedder
from metnos.features.tutor.mixed import Confirmations
from metnos.features.tutor.precheck import Tutor, answer, composer
from metnos.features.tutor.probes import (
    Asker,
    ProbeContext,
    SchedulerSignals,
    default_probes,
    scheduler_services,
)
from metnos.ground.db.engine import database_url, in_session, make_engine, ping
from metnos.ground.errors import MetnosError, NotInitialisedError
from metnos.ground.paths import resources_path
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import open_audit_log
from metnos.mechanisms.executors.registry import load_registry
from metnos.mechanisms.llm.port import LLMPort, configured
from metnos.mechanisms.sandbox import run_canary
from metnos.turns import undo_tool
from metnos.turns.context import CheckedStep, TurnContext
from metnos.turns.reply import StepOutcome
from metnos.turns.runtime import Hooks, Precheck, Runtime, runtime
from metnos.turns.service import TurnService

Signals = Callable[[], SchedulerSignals]  # the scheduler's latest signals (never waits)
Liveness = Callable[[], bool | None]  # a service's state: None when not configured or known

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Edges:
    """What the composition root hands in (flows/gateway.py); none of it is required."""

    scheduler: Scheduler | None = None  # reminders as Prefect runs (flows/reminder.py)
    sync: Sync | None = None  # the owner's scheduled tasks' Prefect schedules (flows/owner_task)
    remote: RemotePort | None = None  # the work pools (flows/remote_step.py)
    signals: Signals | None = None  # the scheduler's signals, for the Tutor's probes
    telegram: Liveness | None = None  # whether the Telegram poller runs, for the same


def _undo(rt: Runtime, edges: Edges) -> Hooks:
    """An effect's undo is the effect's own (asked first), and Metnos's own tools: `wish`
    (metnos.features.mnestoma.wish) and "undo that" (metnos.turns.undo_tool)."""
    return Hooks(reversals=MappingProxyType({EFFECT: Effects()}), host_tools=MappingProxyType(
        {tool.name: tool for tool in (wish.WishTool(), undo_tool.UndoTool())}))


def _notify(rt: Runtime, edges: Edges) -> Hooks:
    """The owner's messages (notify) and the owner's notice of what a member had done."""
    return Hooks(effects=MappingProxyType({notify.EFFECT: notify.effect(rt)}),
                 watchers=(members.watcher(rt),))


def _mail(rt: Runtime, edges: Edges) -> Hooks:
    """The two lines of a mail the model may rewrite (summarize), a mail move's undo, and
    the mailbox's account in the envelope (`metnos mail add`)."""
    return Hooks(effects=MappingProxyType({summary.EFFECT: summary.effect(rt)}),
                 reversals=MappingProxyType({MAILBOX: Mailbox()}),
                 accounts=MappingProxyType(
                     {"imap": lambda settings: load_account(settings).envelope()}))


def _schedules(rt: Runtime, edges: Edges) -> Hooks:
    """"Every Monday at 8 …" from a chat (its cadence checked, its time read before the
    templates), and its undo (without `sync`, the runner's next start publishes the task)."""
    return Hooks(effects=MappingProxyType({schedules.EFFECT: schedules.effect(rt, edges.sync)}),
                 undoers=MappingProxyType({schedules.EFFECT: schedules.undoer(rt, edges.sync)}),
                 host_checks=MappingProxyType({"cadence": check_cadence}),
                 planners=(plan_timed,),
                 claims=(lambda action_id: in_session(rt.engine, schedule_store.by_action,
                                                      action_id) is not None,))


def _reminders(rt: Runtime, edges: Edges) -> Hooks:
    """A reminder's Prefect run: only where there is a way to schedule it; its undo (the
    row cancelled) everywhere."""
    undoers = MappingProxyType({reminders.EFFECT: reminders.undoer(rt)})
    claims = (lambda action_id: in_session(rt.engine, outbox.by_action, action_id)
              is not None,)
    if edges.scheduler is None:
        return Hooks(undoers=undoers, claims=claims)
    return Hooks(effects=MappingProxyType(
        {reminders.EFFECT: reminders.effect(rt, edges.scheduler)}), undoers=undoers,
        claims=claims)


def _remote(rt: Runtime, edges: Edges) -> Hooks:
    """The work pools, and the undo of a step run there (by the same pool)."""
    port = edges.remote

    async def remote(runtime: Runtime, ctx: TurnContext, checked: CheckedStep) -> StepOutcome:
        return await run_remote(runtime, port, ctx, checked)
    return Hooks(reversals=MappingProxyType({REMOTE: Remote(port)}), remote=remote)


def _mnestoma(rt: Runtime, edges: Edges) -> Hooks:
    """What the traces say: the tools routed to the model, an archived executor refused,
    and the synt's accepted compositions as lines of the system prompt."""
    route = routing.Router(routing.RouteBook(rt.engine), rt.settings.evolution)
    return Hooks(archived=partial(archived, rt.engine), route=route,
                 hints=partial(composition.hints, rt.engine))


def _lists(rt: Runtime, edges: Edges) -> Hooks:
    """One household, one list: a list's name in any language is one file, and archiving's
    destination is checked before it runs."""
    return Hooks(host_checks=MappingProxyType({"list_name": check_list_name,
                                               "archive_destination": archive_destination}))


def _files(rt: Runtime, edges: Edges) -> Hooks:
    """The workspace's files: every action has their record, so their undo is asked last."""
    return Hooks(reversals=MappingProxyType({FILES: Files()}))


# every feature's hooks, registered here and nowhere else, in this order (the reversals are
# asked in it whose action an undo is)
FEATURES: tuple[Callable[[Runtime, Edges], Hooks], ...] = (
    _undo, _notify, _mail, _schedules, _reminders, _remote, _mnestoma, _lists, _files)


async def build_runtime(settings: Settings, edges: Edges | None = None, *,
                        tutor: bool = True) -> TurnService:
    """Everything a turn needs, checked at start-up (the canary decides `sandbox_ok`), with
    every feature's hooks. `tutor=False` leaves out the Tutor's pre-check and its warm-up
    (seconds): the mail digest asks it nothing."""
    edges = edges or Edges()
    if not settings.owner_token_path.is_file():
        raise NotInitialisedError(home=str(settings.home))
    engine = make_engine(database_url(settings))
    await asyncio.to_thread(create_tables, engine)
    registry = load_registry(settings)
    for name, key, vars in registry.refused:
        log.warning("executor.refused name=%s key=%s vars=%s", name, key, vars)
    canary = await run_canary(settings.workspace)
    if not canary.ok:
        log.error("sandbox.canary_failed detail=%s", canary.detail)
    audit = open_audit_log(settings)
    port = LLMPort.for_instance(settings, audit) if configured(settings.llm) else None

    def observe(memory: Memory) -> None:
        """After a closed turn (its worker thread): the accepted compositions it used whole
        count towards their promotion to one executor (the synt, SPEC §7.3)."""
        if memory.sequence:
            composition.observe(engine, settings, memory.sequence)

    rt = runtime(settings, engine=engine, audit=audit, registry=registry, port=port,
                 sandbox_ok=canary.ok, remember=Remembering(engine, settings, [observe]))
    hooks = [feature(rt, edges) for feature in FEATURES]
    if tutor and settings.tutor.enabled:
        hooks.append(Hooks(precheck=await asyncio.to_thread(tutoring, rt, edges)))
    return TurnService.over(rt, Hooks.merge(hooks))


def tutoring(rt: Runtime, edges: Edges) -> Precheck:
    """The Tutor's pre-check of this instance (SPEC §10), warmed when a catalog is there
    (about 2 s: the model's load) so that no question pays for it inside the window."""
    settings, scheduler, telegram = rt.settings, edges.signals, edges.telegram

    def services() -> dict[str, bool | None]:
        seen = scheduler_services(scheduler() if scheduler else None, datetime.now(UTC))
        return {"database": _up(rt), "gateway": True, **seen,
                "telegram_poller": telegram() if telegram else None}

    def reading(asker: Asker) -> ProbeContext:  # what a probe may read, for this asker
        return ProbeContext(asker=asker, registry=rt.registry, engine=rt.engine,
                            home=settings.home, repo_executors=resources_path("executors"),
                            services=services, scheduler=scheduler)

    tutor = Tutor(settings.home, rt.audit, window_s=settings.tutor.window_ms / 1000,
                  probes=default_probes(), probe_context=reading,
                  confirmations=Confirmations(rt.engine, rt.audit,
                                              settings.tutor.confirm_ttl_s))
    tutor.warm(settings.active_languages)
    if settings.tutor.read_at_start:  # no catalog yet: compiled in the background
        tutor.start_reading(settings.active_languages)
    if tutor.catalog() is not None:  # the views too: their first question is in a window
        views.warm(settings.active_languages, default_embedder())
    feedback.bind(tutor, rt.engine)  # its answers' 👍/👎 live in the instance's database
    compose = composer(settings, rt.port, guard=rt.guard, audit=rt.audit,
                       executors=[spec.name for spec in rt.registry.admitted])

    async def precheck(ctx: TurnContext) -> str | None:
        if ctx.untrusted:  # about a forwarded or quoted text the Tutor would never see
            return None
        return await answer(tutor, compose, ctx)
    return precheck


def _up(rt: Runtime) -> bool:
    try:
        ping(rt.engine)
    except MetnosError:
        return False
    return True
