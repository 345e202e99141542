"""What a face does with a turn, in one place: start it, follow its events, wait for its
reply, decide an approval it waits for, undo what it changed. The HTTP routes, the web chat's
socket, Telegram and the scheduled tasks all go through a `TurnHandle`, so each of them says
only what is its own (its errors, its messages, its cards).

The gateway builds one handle at start-up (`GatewayState.turns`) from the turn service and
how a turn runs there (`runner`: a Prefect flow or plain calls; `launch`: a task the gateway
drains at its stop; `resumer`: how a paused turn flow takes a decision).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from metnos.ground.system_lang import Lang
from metnos.mechanisms.approvals.models import Approval
from metnos.mechanisms.approvals.resume import Resumer, decide_and_resume
from metnos.mechanisms.undo import UndoReport
from metnos.turns.context import Published, TurnContext
from metnos.turns.events import TurnEvent
from metnos.turns.pipeline import run_pipeline
from metnos.turns.service import TurnService
from metnos.turns.undo_run import undo_handle

REPLY_WAIT_S = 120.0  # how long a channel waits for a reply before following the turn
# runs an opened turn to its end (its record closes it); `launch` makes it a task
TurnRunner = Callable[[TurnService, TurnContext], Coroutine[Any, Any, None]]
Launch = Callable[[Coroutine[Any, Any, None]], None]


@dataclass(frozen=True)
class TurnHandle:
    service: TurnService
    runner: TurnRunner
    launch: Launch
    resumer: Resumer | None = None

    async def start(self, text: str, *, session_id: str | None, lang: Lang | None,
                    channel: str, sender: str, untrusted: Sequence[tuple[str, str]] = (),
                    ask_all: bool = False,
                    prepare: Callable[[TurnContext], None] | None = None) -> TurnContext:
        """Open a turn (MetnosError when it is refused: too long...) and run it in the
        background. `lang` is the request's UI locale, checked by the face where the request
        entered (`metnos.turns.language.ui_locale`). `prepare` sees the opened turn first
        (blocking: in a worker thread). A turn that cannot be launched is closed failed:
        once the turn has its row, the caller gets that turn, never an error."""
        ctx = await self.service.open_turn(text, session_id=session_id, lang=lang,
                                           channel=channel, sender=sender,
                                           untrusted=untrusted, ask_all=ask_all)
        if prepare is not None:
            await asyncio.to_thread(prepare, ctx)
        if not ctx.closed:
            run = self.runner(self.service, ctx)
            try:
                self.launch(run)
            except Exception as exc:  # the turn's boundary: closed failed (and logged there)
                run.close()
                await self.service.fail_turn(ctx, exc)
        return ctx

    def follow(self, turn_id: str, after: int = 0) -> AsyncIterator[TurnEvent]:
        """The turn's events after `after`, as they come, until its `end`."""
        return self.service.events.subscribe(turn_id, after)

    async def reply(self, turn_id: str, timeout_s: float = REPLY_WAIT_S) -> Published | None:
        """The reply (or the approvals the turn waits for) as soon as it is composed; None
        after `timeout_s` (the turn goes on) or for a turn that closed as it opened."""
        return await self.service.wait_reply(turn_id, timeout_s)

    async def decide(self, approval_id: str, decision: str, *, user_id: str, channel: str,
                     via: str, session_id: str | None = None,
                     reason: str = "") -> tuple[Approval, bool]:
        """Record the decision and resume the paused turn (`metnos.mechanisms.approvals.resume`)."""
        return await decide_and_resume(self.service.engine, self.service.audit, self.resumer,
                                       approval_id, decision, user_id=user_id,
                                       session_id=session_id, reason=reason, channel=channel,
                                       via=via)

    async def undo(self, handle: str, *, sender: str, channel: str) -> UndoReport:
        """Undo the action `handle` names (its id or a unique prefix; raises UndoError)."""
        return await asyncio.to_thread(undo_handle, self.service, handle, sender=sender,
                                       channel=channel)


async def plain_runner(service: TurnService, ctx: TurnContext) -> None:
    """Run a turn as plain function calls, without Prefect."""
    try:
        reply = await run_pipeline(service, ctx)
        await service.close_turn(ctx, reply, "completed")
    except Exception as exc:  # the outermost boundary of a turn
        if not ctx.closed:
            await service.fail_turn(ctx, exc)


def open_only(runner: TurnRunner) -> TurnRunner:
    """`runner` for a turn still open: one that failed as it opened has nothing to run."""
    @functools.wraps(runner)
    async def run(service: TurnService, ctx: TurnContext) -> None:
        if not ctx.closed:
            await runner(service, ctx)
    return run
