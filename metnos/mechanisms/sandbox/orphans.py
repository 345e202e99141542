"""Sandboxes left running by a gateway that died while starting them.

bubblewrap arms `--die-with-parent` one process at a time while it sets a sandbox up: the
outer bwrap relative to the gateway, then the namespace's init relative to the outer bwrap,
then the executor relative to init. A gateway killed inside that window of a few
milliseconds leaves a sandbox whose init was reparented to the host's PID 1: nobody
supervises it (no deadline, no watchdog) and it may still act. Its action's before-record was
made durable before the spawn, so `metnos undo` can put things back; what this module adds
is that the next gateway start kills such orphans before anything else runs.

An orphan is a `bwrap` process running a Metnos executor (`--die-with-parent` and the
executor folder in its command line) whose parent is neither a gateway (a Python process) nor
the outer bwrap: PID 1, or whatever subreaper (a systemd user manager, say) adopted it. A
live gateway's sandboxes always have that gateway or their outer bwrap as parent, so they are
never touched.
"""

from __future__ import annotations

import logging
import os
import signal

import psutil

from metnos.mechanisms.sandbox.bwrap import EXECUTOR_DIR

log = logging.getLogger(__name__)


def find_orphans() -> list[int]:
    """Pids of orphaned Metnos sandboxes (see the module's text)."""
    found = []
    for proc in psutil.process_iter(["name", "ppid", "cmdline"]):
        info = proc.info
        cmdline = info.get("cmdline") or []
        if (info.get("name") == "bwrap" and "--die-with-parent" in cmdline
                and any(arg.startswith(EXECUTOR_DIR + "/") for arg in cmdline)
                and not _supervised(info.get("ppid"))):
            found.append(proc.pid)
    return found


def _supervised(ppid: int | None) -> bool:
    """Whether a sandbox's parent is one that watches it: a gateway or the outer bwrap."""
    if not ppid or ppid == 1:
        return False
    try:
        name = str(psutil.Process(ppid).name())
    except psutil.Error:
        return False  # gone meanwhile: nobody supervises it
    return name == "bwrap" or name.startswith("python")


def kill_orphans() -> list[int]:
    """SIGKILL every orphaned sandbox (its whole pid namespace goes with its init)."""
    killed = []
    for pid in find_orphans():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        killed.append(pid)
    if killed:
        log.warning("sandbox.orphans_killed pids=%s", killed)
    return killed
