"""The gateway process: the FastAPI app wired to the Prefect `turn` flow.

This is the composition root. `metnos/` stays free of Prefect by taking the turn runner as a
parameter; here the runner is the flow. `metnos serve` starts this module as a process:

    python -m flows.gateway

The process serves from a thread and keeps its stop signals in the main thread (`serve`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading

import uvicorn
from fastapi import FastAPI

from flows._scheduler_signals import empty, reader
from flows.owner_task import sync
from flows.reminder import scheduler
from flows.remote_step import port
from flows.turn import crash_runs, resume_approval, run_turn
from metnos.gateway.app import create_app
from metnos.gateway.drain import drain
from metnos.gateway.outbox_delivery import with_reminders
from metnos.remote.wiring import with_remote
from metnos.schedules.firing import with_schedules
from metnos.settings import get_settings
from metnos.tutor.signals import Snapshot, with_scheduler_signals

log = logging.getLogger(__name__)
FORCED_EXIT_S = 3.0  # after a second stop signal, what is left is cut short

def app() -> FastAPI:
    """ASGI factory: `uvicorn flows.gateway:app --factory`. Reminders are scheduled as runs
    of the served `reminder/at` deployment and delivered by the app's outbox loop; the
    scheduler's signals for the Tutor are read from Prefect by a refresher of the lifespan."""
    settings = get_settings()
    signals = Snapshot(empty())
    built = create_app(settings, runner=run_turn, resumer=resume_approval,
                       close_runs=crash_runs, scheduler_signals=signals)
    built = with_schedules(with_reminders(built, scheduler(settings)), sync(settings))
    built = with_remote(built, port(settings))  # steps that `runs_on` a work pool
    return with_scheduler_signals(built, signals, reader)


def main() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = get_settings()
    built = app()
    config = uvicorn.Config(built, host=settings.gateway.host, port=settings.gateway.port,
                            log_level="info", proxy_headers=False, server_header=False,
                            # once drained, an event stream still open (a client following a
                            # finished turn) does not hold the stop for long
                            timeout_graceful_shutdown=5)
    sys.exit(serve(uvicorn.Server(config), built, settings.gateway.drain_s))


def serve(server: uvicorn.Server, built: FastAPI, drain_s: float) -> int:
    """Run `server` on an event loop in a thread of its own while this (main) thread owns
    SIGTERM and SIGINT. A Prefect flow run in-process installs its own SIGTERM handler only
    from the main thread (`prefect.utilities.engine.capture_sigterm`: off it, `signal.signal`
    raises and Prefect installs nothing), so no flow can take the stop signal from us; nor
    does uvicorn off the main thread. The first signal drains (`metnos.gateway.drain`: new
    turns get 503, running ones finish within `drain_s` or are recorded interrupted) while
    the server still listens, then the server stops; a second one stops at once.
    No signal is blocked: a mask would be inherited by the sandboxes the gateway starts.
    Returns the exit status."""
    loop: asyncio.AbstractEventLoop | None = None
    asked = threading.Event()  # a stop was asked (maybe before the loop ran)
    begun = threading.Event()  # the drain was scheduled on the loop

    async def stop() -> None:
        await drain(built.state, drain_s)
        server.should_exit = True

    def schedule() -> None:  # on the loop
        if not begun.is_set():
            begun.set()
            asyncio.get_running_loop().create_task(stop(), name="drain")

    async def run() -> None:
        nonlocal loop
        loop = asyncio.get_running_loop()
        if asked.is_set():
            schedule()
        await server.serve()

    def on_signal(signum: int, _frame: object) -> None:
        if asked.is_set():
            log.warning("gateway.stop_now signal=%s", signal.Signals(signum).name)
            server.force_exit = server.should_exit = True
            timer = threading.Timer(FORCED_EXIT_S, os._exit, args=(1,))
            timer.daemon = True
            timer.start()
            return
        log.info("gateway.stop signal=%s drain_s=%s", signal.Signals(signum).name, drain_s)
        asked.set()
        if loop is not None:
            loop.call_soon_threadsafe(schedule)

    def thread() -> None:
        with asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
            runner.run(run())

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    worker = threading.Thread(target=thread, name="gateway-server")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.5)  # wakes for the signal handlers between waits
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0 if server.started else 1


if __name__ == "__main__":
    main()
