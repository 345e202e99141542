"""The gateway's stop without losing work (SPEC §1, §3).

`drain(app, window_s)` runs when the process is asked to stop, while the server still
listens: the app is `draining` (new turns get 503 with a plain message and `Retry-After`,
and no turn row; Telegram stops taking updates; `/healthz` answers 503 "draining"), the
turns in flight have `window_s` to finish, and those still running then are cancelled and
recorded as interrupted, as a restart would record them (`metnos.turns.recovery`), their
Prefect runs ended and their waiting clients answered. Only then does the caller close the
server. The process wiring (signals, threads) is `metnos.faces.gateway.process`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

from fastapi import HTTPException

from metnos.ground import i18n
from metnos.turns import recovery

if TYPE_CHECKING:
    from metnos.faces.gateway.state import GatewayState

log = logging.getLogger(__name__)

KEY = "ERR_GATEWAY_DRAINING"
RETRY_AFTER_S = 30  # a stop and start of Metnos takes about this long
CANCEL_WAIT_S = 3.0  # how long cancelled turns get to unwind before they are recorded
CLOSE_RUNS_S = 5.0  # ending their Prefect runs, at most
DELIVER_S = 5.0  # sending the replies of finished turns (a card waiting on a person: no longer)


class Drain:
    """Whether the gateway is stopping, and since when."""

    def __init__(self) -> None:
        self.active = False
        self.since: float | None = None

    def start(self) -> bool:
        """Enter draining; False when it already was."""
        if self.active:
            return False
        self.active, self.since = True, time.monotonic()
        return True


def draining(state: GatewayState) -> bool:
    return state.drain.active


def refusal(lang: str) -> HTTPException:
    """The 503 a new turn gets while the gateway drains."""
    return HTTPException(503, detail={"key": KEY, "message": i18n.get(KEY, lang)},
                         headers={"Retry-After": str(RETRY_AFTER_S)})


async def drain(state: GatewayState, window_s: float) -> None:
    """Refuse new turns, let those in flight finish within `window_s`, interrupt the rest.
    Never raises: the stop goes on whatever happens here."""
    if not state.drain.start():
        return
    log.info("gateway.draining window_s=%s turns=%d", window_s, len(state.background))
    try:
        await _drain(state, window_s)
    except Exception:  # the stop must go on: a restart sweeps what is left
        log.exception("gateway.drain_failed")
    log.info("gateway.drained")


async def _drain(state: GatewayState, window_s: float) -> None:
    telegram = state.telegram
    if telegram is not None:
        await telegram.stop_polling()
    background: set[asyncio.Task[None]] = state.background
    deadline = time.monotonic() + window_s
    while background and time.monotonic() < deadline:  # turns launched meanwhile count too
        await asyncio.wait(set(background), timeout=deadline - time.monotonic())
    if telegram is not None:  # the replies of the turns that finished are still sent
        await telegram.settle(min(DELIVER_S, deadline - time.monotonic()))
    late = set(background)
    for task in late:
        task.cancel()
    if late:
        await asyncio.wait(late, timeout=CANCEL_WAIT_S)
    service = state.service
    if service is None:  # stopped before the lifespan was ready: no turn ever opened
        return
    found = await asyncio.to_thread(recovery.interrupt_open, service)
    for turn_id, (reply, status, stop_reason) in found.replies.items():
        service.record.settle(turn_id, reply, status, stop_reason)
    close_runs = state.close_runs
    if close_runs is not None and found.flow_runs:
        try:
            await asyncio.wait_for(close_runs(found.flow_runs), CLOSE_RUNS_S)
        except Exception:  # TimeoutError too: the next start ends them
            log.warning("gateway.drain_close_runs_failed", exc_info=True)
