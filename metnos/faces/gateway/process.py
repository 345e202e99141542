"""The gateway process's stop signals and its server thread.

The web server's event loop runs in a thread of its own, while the main thread owns SIGTERM
and SIGINT. A Prefect flow run in-process installs its own SIGTERM handler only from the
main thread (`prefect.utilities.engine.capture_sigterm`: off it, `signal.signal` raises and
Prefect installs nothing), so no flow running a turn can take the stop signal, and uvicorn
off the main thread installs none either. asyncio's subprocesses (the sandbox) work from
any thread (Python 3.11's default `ThreadedChildWatcher`). No signal is blocked: a mask
would be inherited by the sandboxes the gateway starts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading

import uvicorn
from fastapi import FastAPI

from metnos.faces.gateway.drain import drain
from metnos.faces.gateway.state import state_of

log = logging.getLogger(__name__)

FORCED_EXIT_S = 3.0  # after a second stop signal, what is left is cut short
OWN_LOGGERS = ("metnos", "flows", "tasks", "deployments")


def own_lines_at_info() -> None:
    """Metnos's own INFO lines (ready, schedules served, draining, stopped) reach the
    process's log (`logs/gateway.log` under `metnos serve`). Prefect configures logging when
    it is imported — the root at WARNING, its console handler on it — so `basicConfig`
    alone (kept for a process where Prefect has not) leaves them out; Metnos's loggers are
    raised to INFO on their own, and third parties' INFO (httpx's line per request) stays
    out."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)


Listener = tuple[uvicorn.Server, list[socket.socket] | None]


def serve(listeners: list[Listener], built: FastAPI, drain_s: float) -> int:
    """Run the servers of `listeners` (each on its sockets, bound already; the first runs the
    app's lifespan, the others start once it is up: the overlay's TLS server) on an event
    loop in a thread of its own; call from the main thread. The first SIGTERM or SIGINT
    drains (`metnos.faces.gateway.drain`: new turns get 503, running ones finish within
    `drain_s` or are recorded interrupted) while the servers still listen, then they stop;
    a second one stops at once. Returns the exit status."""
    server, sockets = listeners[0]
    servers = [s for s, _ in listeners]
    loop: asyncio.AbstractEventLoop | None = None
    asked = threading.Event()  # a stop was asked (maybe before the loop ran)
    begun = threading.Event()  # the drain was scheduled on the loop

    async def stop() -> None:
        await drain(state_of(built), drain_s)
        for each in servers:
            each.should_exit = True

    def schedule() -> None:  # on the loop
        if not begun.is_set():
            begun.set()
            asyncio.get_running_loop().create_task(stop(), name="drain")

    async def run() -> None:
        nonlocal loop
        loop = asyncio.get_running_loop()
        if asked.is_set():
            schedule()
        main = asyncio.ensure_future(server.serve(sockets=sockets))
        while not server.started and not main.done():  # the lifespan first: the app is ready
            await asyncio.sleep(0.05)
        others = [asyncio.ensure_future(s.serve(sockets=socks)) for s, socks in listeners[1:]
                  if server.started]
        await main
        for each in servers:  # the main one stopped (or never started): so do the others
            each.should_exit = True
        await asyncio.gather(*others, return_exceptions=True)

    def on_signal(signum: int, _frame: object) -> None:
        if asked.is_set():
            log.warning("gateway.stop_now signal=%s", signal.Signals(signum).name)
            for each in servers:
                each.force_exit = each.should_exit = True
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
