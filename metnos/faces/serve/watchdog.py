"""The watchdog of the embedded PostgreSQL: `python -m metnos.faces.serve.watchdog`.

`pg_ctl` daemonizes the postmaster, so no parent-death signal reaches it when `metnos serve`
dies. The supervisor starts this small process (itself with the parent-death signal); when
the supervisor is gone (the signal, or its parent pid changed), it waits for the other
children (which got their own signal) to end, for at most `[gateway] drain_s` plus
`DRAIN_MARGIN_S` since the gateway drains its turns and needs the database meanwhile, then
stops PostgreSQL with a fast shutdown.

On a normal stop the supervisor ends the watchdog first (SIGTERM while its parent lives: it
just exits), so nothing is stopped twice. Nothing here imports prefect.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from types import FrameType

from metnos.faces.serve.instance import SUPERVISOR, recorded
from metnos.ground.db.urls import embedded_postgres, uses_embedded
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings, get_settings

log = logging.getLogger(__name__)

DRAIN_MARGIN_S = 15.0  # after the gateway's drain window ([gateway] drain_s)
CHILDREN = ("gateway", "prefect-server")


def orphaned(parent: int) -> bool:
    return os.getppid() != parent


def after_supervisor(settings: Settings, abort: threading.Event,
                     wait_s: float | None = None) -> None:
    """The supervisor is gone: once its other children have ended (or `wait_s` passed),
    a fast shutdown of the embedded PostgreSQL; nothing when `abort` is set meanwhile (a new
    `metnos serve` stops the leftovers itself)."""
    if wait_s is None:
        wait_s = settings.gateway.drain_s + DRAIN_MARGIN_S
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and not abort.is_set():
        left = [r.name for r in recorded(settings) if r.name in CHILDREN and r.alive()]
        if not left:
            break
        abort.wait(0.5)
    if uses_embedded(settings) and not abort.is_set():
        try:
            embedded_postgres(settings).stop()
            log.warning("watchdog.postgres_stopped after the supervisor died")
        except MetnosError:
            log.exception("watchdog.postgres_stop_failed")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    settings = get_settings()
    gone = threading.Event()
    quit_now = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        # the parent-death signal, or the supervisor's own stop: told apart by our parent
        (gone if orphaned(parent) and not gone.is_set() else quit_now).set()

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the supervisor's to handle
    log.info("watchdog.started supervisor=%s", parent)
    while not quit_now.is_set():
        if gone.is_set() or orphaned(parent):
            still = [r for r in recorded(settings) if r.name == SUPERVISOR and r.alive()]
            if still and still[0].pid != parent:  # a new supervisor took over already
                return 0
            log.warning("watchdog.supervisor_gone pid=%s", parent)
            after_supervisor(settings, quit_now)
            return 0
        quit_now.wait(0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
