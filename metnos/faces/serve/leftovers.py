"""What a crashed `metnos serve` left running, found and stopped by the next one.

Holding the instance lock, every live recorded process (same pid and start time:
`ProcessRecord.alive`) is a leftover: the watchdog first (so it does not stop the database
under us), then the gateway and the Prefect server (and the `runner` an earlier version ran
as a process of its own) get SIGTERM (each one's whole
process group), one short grace, SIGKILL for what is left; then the embedded PostgreSQL
with a fast shutdown, found through `pg/postmaster.pid` (recorded or not). A process that
is not ours is never signalled: a pid whose start time differs is someone else's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal

import psutil

from metnos.faces.serve.instance import ProcessRecord, recorded, write_records
from metnos.ground.db.embedded import EmbeddedPostgres
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

STOP_ORDER = ("watchdog", "runner", "gateway", "prefect-server")
GRACE_S = 5.0


def stop_leftovers(settings: Settings, postgres: EmbeddedPostgres | None) -> list[str]:
    """Stop this home's leftovers; the names of what was stopped, in order."""
    records = {r.name: r for r in recorded(settings)}
    groups = {name: members for name in STOP_ORDER
              if (rec := records.get(name)) is not None and (members := _group(rec))}
    if groups:
        log.warning("serve.leftovers_stopping names=%s", ",".join(groups))
        _terminate([p for members in groups.values() for p in members])
    stopped = list(groups)
    if postgres is not None and postgres.is_running():
        log.warning("serve.leftover_stopping name=postgres")
        postgres.stop()
        stopped.append("postgres")
    write_records(settings, [])
    return stopped


def _terminate(procs: list[psutil.Process]) -> None:
    """SIGTERM each (in the order given), one shared grace of `GRACE_S`, SIGKILL the rest."""
    for sig, wait in ((signal.SIGTERM, GRACE_S), (signal.SIGKILL, 5.0)):
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                proc.send_signal(sig)
        _, procs = psutil.wait_procs(procs, timeout=wait)
        if not procs:
            return
    log.error("serve.leftovers_unkillable pids=%s", [p.pid for p in procs])


def _group(rec: ProcessRecord) -> list[psutil.Process]:
    """The live processes of the recorded one's process group: the process itself when it
    is alive (same start time); its orphans when it died and no one took its pid (a pid
    cannot be reused while a group of that number exists)."""
    leader_ours = rec.alive()
    if not leader_ours and psutil.pid_exists(rec.pid):
        return []  # the pid is someone else's now: its group is theirs
    found: list[psutil.Process] = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == rec.pid and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except (ProcessLookupError, psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    if leader_ours and not any(p.pid == rec.pid for p in found):
        found.append(psutil.Process(rec.pid))  # it left its group: itself at least
    return found
