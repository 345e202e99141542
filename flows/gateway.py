"""The gateway process: the FastAPI app wired to the Prefect `turn` flow.

This is the composition root. `metnos/` stays free of Prefect by taking the turn runner as a
parameter; here the runner is the flow. `metnos serve` starts this module as a process:

    python -m flows.gateway --schedules

`--schedules`: the process also serves the scheduled deployments (`deployments.serve`) once
the gateway is up, and stops them when it stops (after the drain, before the rest of its
lifespan); without it (the tests that start a gateway alone), nothing is scheduled from here.

The process serves from a thread and keeps its stop signals in the main thread
(`metnos.faces.gateway.process.serve`).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from fastapi import FastAPI

from deployments.serve import serve_schedules
from flows._scheduler_signals import empty, reader
from flows.owner_task import sync
from flows.reminder import scheduler
from flows.remote_step import port
from flows.turn import crash_runs, resume_approval, run_turn
from metnos.faces.gateway.app import create_app
from metnos.faces.gateway.exposed import listeners
from metnos.faces.gateway.outbox_delivery import with_reminders
from metnos.faces.gateway.process import own_lines_at_info, serve
from metnos.faces.gateway.scheduled import with_schedules
from metnos.faces.gateway.state import run_alongside
from metnos.faces.serve.processes import wait_responding
from metnos.faces.wiring import Edges
from metnos.features.tutor.signals import Snapshot, with_scheduler_signals
from metnos.ground.settings import get_settings


def app() -> FastAPI:
    """ASGI factory: `uvicorn flows.gateway:app --factory`. Reminders are scheduled as runs
    of the served `reminder/at` deployment and delivered by the app's outbox loop; the
    scheduler's signals for the Tutor are read from Prefect by a refresher of the lifespan."""
    settings = get_settings()
    signals = Snapshot(empty())
    edges = Edges(scheduler=scheduler(settings), sync=sync(settings),
                  remote=port(settings), signals=signals)  # `remote`: steps that `runs_on` a pool
    built = create_app(settings, runner=run_turn, resumer=resume_approval,
                       close_runs=crash_runs, edges=edges)
    return with_scheduler_signals(with_schedules(with_reminders(built)), signals, reader)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flows.gateway")
    parser.add_argument("--schedules", action="store_true",
                        help="also serve the scheduled deployments (as `metnos serve` does)")
    args = parser.parse_args(argv)
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    own_lines_at_info()
    settings = get_settings()
    built = app()
    if args.schedules:  # the outermost part of the lifespan: started last, stopped first
        run_alongside(built, "schedules", lambda _app: serve_schedules(settings))
    # `metnos serve` starts the Prefect server beside this process: its start-up (runs a dead
    # gateway left, the schedules) talks to it, so it waits for it, within the server's own
    # start-up bound; past it, it starts anyway and says so (a turn then fails, told)
    api = os.environ.get("PREFECT_API_URL", "")
    if api and not wait_responding(api.rstrip("/") + "/health", settings.prefect.startup_timeout_s):
        logging.getLogger(__name__).warning("gateway.prefect_not_ready url=%s", api)
    # once drained, an event stream still open (a client following a finished turn) does not
    # hold the stop for long
    servers = listeners(built, settings, log_level="info", proxy_headers=False,
                        server_header=False, timeout_graceful_shutdown=5)
    sys.exit(serve(servers, built, settings.gateway.drain_s))


if __name__ == "__main__":
    main()
