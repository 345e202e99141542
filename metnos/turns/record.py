"""The record of a turn: its row, its step trace, its audit lines, and what channels see.

`TurnRecord` opens a turn (and its session) before anything runs, so nothing is lost on a
crash; it hands the reply (or the approvals the turn waits for) to the channel waiting for it,
publishes the turn's progress on the event bus, persists each step of the trace as it ends,
and closes or fails the turn exactly once. Blocking database work runs in worker threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import InterfaceError, OperationalError
from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_chain,
    wait_fixed,
)

from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import MetnosError
from metnos.ground.i18n import phrases
from metnos.ground.settings import Settings
from metnos.ground.system_lang import Lang
from metnos.mechanisms import approvals
from metnos.mechanisms.approvals.card import plain_card
from metnos.mechanisms.audit import AuditLog
from metnos.turns import gate, language
from metnos.turns.context import CheckedStep, Published, TurnContext
from metnos.turns.events import TurnEvents
from metnos.turns.reply import StepOutcome

if TYPE_CHECKING:
    from metnos.mechanisms.executors.registry import Registry

log = logging.getLogger(__name__)

# a closed turn's memory, taken before the turn is marked finished (the mnestoma's, registered
# by metnos.faces.wiring): (registry, turn id) → what to do once it is marked (hand the memory on:
# the synt), or None
Remember = Callable[["Registry", str], Callable[[], None] | None]


class TurnRecord:
    def __init__(self, settings: Settings, *, engine: Engine, audit: AuditLog,
                 events: TurnEvents, registry: Callable[[], Registry] | None = None,
                 remember: Remember | None = None) -> None:
        self.settings = settings
        self.engine = engine
        self.audit = audit
        self.events = events
        self.registry = registry  # the service's current registry, for the mnestoma
        self.remember = remember  # a closed turn's memory, in its worker thread
        self._remembered: dict[str, None] = {}  # turns recorded already (a retried close)
        self._replies: dict[str, asyncio.Future[Published]] = {}

    # -- opening ------------------------------------------------------------------------
    async def open_turn(self, text: str, *, session_id: str | None, lang: Lang | None,
                        channel: str, sender: str,
                        untrusted: Sequence[tuple[str, str]] = (),
                        ask_all: bool = False) -> TurnContext:
        """Record the turn (and its session) before anything runs; nothing is lost on a crash.
        `lang` is the client's UI locale, checked where the request entered
        (`language.ui_locale`; None: METNOS_LANG's): it names the language of a session this
        turn creates, never of one it resumes (SPEC §9.6).
        `untrusted` is content from outside as (source, text): data for the model, never
        orders, and it makes every acting step of the turn ask first (Law 3).
        `ask_all` switches the session's "ask for everything" on (it stays on; only
        `PATCH /api/sessions/{id}` switches it off)."""
        limit = self.settings.gateway.max_message_chars
        for piece in (text, *(t for _, t in untrusted)):
            if len(piece) > limit:
                raise MetnosError("ERR_MESSAGE_TOO_LONG", length=len(piece), limit=limit)
        locale = lang or language.ui_locale(None, None, self.settings)
        ctx, failed = await asyncio.to_thread(self._record_open, text, session_id, locale,
                                              channel, sender, ask_all)
        ctx.untrusted = tuple(untrusted)
        ctx.sources = [source for source, _ in untrusted]
        ctx.tainted = bool(untrusted)  # outside content from the start: acting steps ask
        self._replies[ctx.turn_id] = asyncio.get_running_loop().create_future()
        self.events.publish(ctx.turn_id, "status", status="planning")
        if failed is not None:  # the row exists: the turn is failed and told, never lost
            await self.fail_turn(ctx, failed)
        return ctx

    def _record_open(self, text: str, session_id: str | None, locale: Lang, channel: str,
                     sender: str, ask_all: bool = False
                     ) -> tuple[TurnContext, Exception | None]:
        """The turn's row and context, and what failed once the row existed (the caller
        fails the turn with it: the client learns of every turn that has a row)."""
        with db_session(self.engine) as db:
            opened = models.open_session(
                db, session_id, user_id=sender, channel=channel, lang=locale,
                legacy_lang=language.legacy_language(self.settings),
                autonomy=self.settings.policy.autonomy)
            chat = opened.chat
            switched = ask_all and not chat.ask_all
            if switched:  # the session asks before every change from now on
                chat.ask_all, chat.updated_at = True, models.utcnow()
                db.add(chat)
            # set: created from a `Lang`, kept, or pinned from `legacy_language` above
            lang = Lang(chat.interaction_language or locale)
            # a message clearly in another active language is answered in it, this turn only
            spoken = language.turn_language(text, lang, self.settings)
            turn = models.record_turn_start(db, session_id=chat.id, channel=channel,
                                            sender=sender, text=text, lang=spoken.lang)
            ctx = TurnContext(turn.id, chat.id, chat.user_id, channel, sender, spoken.lang,
                              chat.autonomy, text, ui_locale=locale,
                              ask_all=bool(chat.ask_all))
        try:
            if switched:
                self.audit_line(ctx, action="session.ask_all", decision="info",
                                reason="False->True", outcome="done")
            if opened.pinned:  # a legacy session: its language comes from the workspace, once
                self.audit_line(ctx, action="session.language_pinned", decision="info",
                                reason=f"interaction_language={lang} (workspace language)",
                                outcome="done")
            if spoken.detected is not None:
                self.audit_line(ctx, action=language.COMMUNICATION_ACTION, decision="info",
                                reason=spoken.audit_reason(lang), outcome="done")
        except Exception as exc:  # the audit disk failed after the row was written
            return ctx, exc
        return ctx, None

    # -- what channels see -----------------------------------------------------------------
    async def wait_reply(self, turn_id: str, timeout_s: float) -> Published | None:
        """The reply as soon as the turn composed it (before its final bookkeeping), or
        the approvals it waits for; None when it takes longer than `timeout_s` (the turn goes
        on; poll GET /api/turns)."""
        future = self._replies.get(turn_id)
        if future is None:
            return None
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout_s)
        except TimeoutError:
            return None

    def publish(self, ctx: TurnContext, reply: str, status: str = "completed",
                approvals: list[dict[str, Any]] | None = None) -> None:
        """Hand the reply (or the approvals the turn waits for) to the channel waiting."""
        future = self._replies.pop(ctx.turn_id, None)
        published = Published(reply, status, approvals or [], list(ctx.activity),
                              ctx.stop_reason)
        if future is not None and not future.done():
            future.set_result(published)
        if status != "awaiting_approval":  # a waiting turn shows its `approval` events
            self.events.publish(ctx.turn_id, "reply", text=reply, status=status,
                                activity=published.activity, stop_reason=ctx.stop_reason)

    def settle(self, turn_id: str, reply: str, status: str, stop_reason: str | None) -> None:
        """A turn closed outside its own run (a stopping gateway interrupted it): the channel
        still waiting gets this reply, and the turn's events end."""
        future = self._replies.pop(turn_id, None)
        if future is not None and not future.done():
            future.set_result(Published(reply, status, [], [], stop_reason))
        self.events.publish(turn_id, "reply", text=reply, status=status, activity=[],
                            stop_reason=stop_reason)
        self.events.publish(turn_id, "status", status=status)
        self.events.publish(turn_id, "end", status=status)

    def step_event(self, ctx: TurnContext, checked: CheckedStep, state: str,
                   outcome: StepOutcome | None = None) -> None:
        """A step's progress (started, done, failed, refused): its name and the digest of
        its arguments, never the arguments themselves; `text` is what the status line says
        of it ("Looking for your files…"), without outside text."""
        self.events.publish(ctx.turn_id, "step", executor=checked.step.executor, state=state,
                            text=phrases.progress(checked.step.executor, ctx.lang),
                            action_id=checked.action_id, args_digest=checked.args_digest,
                            key=outcome.key if outcome is not None else None,
                            seq=checked.seq)

    async def await_owner(self, ctx: TurnContext, checked: CheckedStep,
                          done_so_far: str = "") -> None:
        """Tell the user (and the turn's record) that this step waits for an approval."""
        assert checked.approval is not None
        message = gate.pending_message(checked, ctx.lang)
        reply = "\n\n".join(filter(None, [done_so_far, message]))
        why = gate.why(checked, ctx.lang)  # names the untrusted sources when they are the cause
        pending = [{**approvals.public(checked.approval), "why": why,
                    "sources": list(ctx.sources)}]
        pending[0]["card"] = plain_card(pending[0], ctx.lang, ctx.sources).to_dict()
        self.publish(ctx, reply, "awaiting_approval", pending)
        await asyncio.to_thread(self._record_status, ctx, reply, "awaiting_approval")
        self.events.publish(ctx.turn_id, "status", status="awaiting_approval")
        self.events.publish(ctx.turn_id, "approval", **pending[0],
                            action=gate.describe(checked), message=message)

    async def resume_after_owner(self, ctx: TurnContext) -> None:
        await asyncio.to_thread(self._record_status, ctx, None, "running")
        self.events.publish(ctx.turn_id, "status", status="running")

    def _record_status(self, ctx: TurnContext, reply: str | None, status: str) -> None:
        with db_session(self.engine) as db:
            models.finish_turn(db, ctx.turn_id, status=status, reply=reply,
                               flow_run_id=ctx.flow_run_id)

    # -- the step trace ----------------------------------------------------------------------
    def record_step(self, ctx: TurnContext, step: models.TurnStep) -> None:
        """Persist one step of the trace once it has ended (blocking: worker thread)."""
        with db_session(self.engine) as db:
            db.add(step)

    # -- closing -----------------------------------------------------------------------------
    async def close_turn(self, ctx: TurnContext, reply: str, status: str,
                         error_key: str | None = None) -> None:
        """The turn's row gets its status, reply, activity and timings (the mnestoma first):
        an idempotent update, tried twice more (0.5 s, then 2 s later) when the database
        dropped the connection under it."""
        async for attempt in AsyncRetrying(
                retry=retry_if_exception_type((OperationalError, InterfaceError)),
                wait=wait_chain(wait_fixed(0.5), wait_fixed(2.0)), stop=stop_after_attempt(3),
                reraise=True):
            with attempt:
                await asyncio.to_thread(self._record_close, ctx, reply, status, error_key)
        ctx.closed = True
        self._end(ctx, status)

    def _end(self, ctx: TurnContext, status: str) -> None:
        """The turn's last events (once: the bus ignores anything after `end`)."""
        self.events.publish(ctx.turn_id, "status", status=status)
        self.events.publish(ctx.turn_id, "end", status=status)

    def _record_close(self, ctx: TurnContext, reply: str, status: str,
                      error_key: str | None) -> None:
        then = self._remember(ctx)  # before finished_at: whoever sees it sees the mnestoma
        with db_session(self.engine) as db:
            turn = models.get_turn(db, ctx.turn_id)
            if turn is not None:  # with the status, in one commit: never finished without it
                turn.activity = list(ctx.activity)
                turn.stop_reason = ctx.stop_reason
                turn.lang = ctx.lang  # the embedded planner may have understood another one
            models.finish_turn(db, ctx.turn_id, status=status, reply=reply, error_key=error_key,
                               timings=ctx.timings, flow_run_id=ctx.flow_run_id)
        if then is not None:
            try:
                then()
            except Exception:  # a consumer's failure never fails the turn
                log.exception("mnestoma.hook_failed turn_id=%s", ctx.turn_id)

    def _remember(self, ctx: TurnContext) -> Callable[[], None] | None:
        """The turn's hand-offs, uses and wishes into the mnestoma (all its steps are
        persisted by now); a failure is logged and never fails the turn."""
        if self.registry is None or self.remember is None or ctx.turn_id in self._remembered:
            return None
        self._remembered[ctx.turn_id] = None
        while len(self._remembered) > 1024:
            del self._remembered[next(iter(self._remembered))]
        try:
            return self.remember(self.registry(), ctx.turn_id)
        except Exception:
            log.exception("mnestoma.after_turn_failed turn_id=%s", ctx.turn_id)
            return None

    async def fail_turn(self, ctx: TurnContext, exc: BaseException) -> str:
        """Terminal failure: tell the user in their language first, then audit it and close
        the turn; a failure of that bookkeeping is logged, never raised over the first one."""
        if isinstance(exc, MetnosError):
            key, vars = exc.key, exc.vars
            log.warning("turn.failed turn_id=%s key=%s vars=%s", ctx.turn_id, key, vars)
        else:
            key, vars = "ERR_INTERNAL_UNEXPECTED", {}
            log.error("turn.crashed turn_id=%s", ctx.turn_id, exc_info=exc)
        reply = i18n.get(key, ctx.lang, **vars)
        self.publish(ctx, reply, "failed")
        ctx.closed = True  # one failure record per turn, even if the bookkeeping below fails
        try:
            await asyncio.to_thread(self.audit_line, ctx, action="turn", decision="error",
                                    reason=key, outcome="failed")
            await self.close_turn(ctx, reply, "failed", error_key=key)
        except Exception:  # the database or the audit disk is gone: keep the first cause
            log.exception("turn.fail_bookkeeping_failed turn_id=%s", ctx.turn_id)
        self._end(ctx, "failed")
        return reply

    def audit_line(self, ctx: TurnContext, **fields: Any) -> int:
        """One audit line about this turn (`fields` may override the sender, say)."""
        base = {"sender": ctx.sender, "channel": ctx.channel, "session_id": ctx.session_id,
                "turn_id": ctx.turn_id}
        record = self.audit.append(**{**base, **fields})
        return int(record.seq)
