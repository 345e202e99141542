"""What an instance keeps of its running processes under METNOS_HOME/run (SPEC §1).

`processes.json` names the supervisor and each process it started (`ProcessRecord`: name,
pid, start time, command), rewritten atomically whenever one starts or stops. A pid alone
is not an identity (the kernel reuses pids): a record matches a live process only when the
process's start time is the recorded one. `metnos serve` uses the records to find and stop
the leftovers of a crash; `metnos doctor` to tell which processes run.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

from metnos.ground import durable
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

RECORDS = "processes.json"
LOCK = "serve.lock"
SUPERVISOR = "supervisor"
# the names records use, in start order (the supervisor first; `runner`: an earlier version's
# deployment runner, still sorted and stopped when it is a leftover)
NAMES = (SUPERVISOR, "watchdog", "postgres", "prefect-server", "gateway", "runner")


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    create_time: float  # psutil's, seconds since the epoch: with the pid, the identity
    argv: tuple[str, ...] = ()

    @classmethod
    def of(cls, name: str, pid: int) -> ProcessRecord:
        """The record of a live process (raises psutil.NoSuchProcess when it is gone)."""
        proc = psutil.Process(pid)
        return cls(name, pid, proc.create_time(), tuple(proc.cmdline()))

    def alive(self) -> bool:
        """True while this very process runs (same pid and start time, not a zombie)."""
        try:
            proc = psutil.Process(self.pid)
            return bool(abs(proc.create_time() - self.create_time) < 0.01
                    and proc.status() != psutil.STATUS_ZOMBIE)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False


def run_dir(settings: Settings) -> Path:
    return settings.home / "run"


def recorded(settings: Settings) -> list[ProcessRecord]:
    """The records as last written ([] when there are none or the file is unreadable)."""
    path = run_dir(settings) / RECORDS
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [ProcessRecord(str(r["name"]), int(r["pid"]), float(r["create_time"]),
                              tuple(str(a) for a in r.get("argv", ()))) for r in raw]
    except FileNotFoundError:
        return []
    except (OSError, ValueError, TypeError, KeyError):
        log.warning("instance.records_unreadable path=%s", path)
        return []


def write_records(settings: Settings, records: list[ProcessRecord]) -> None:
    folder = run_dir(settings)
    durable.make_dir(folder)
    data = json.dumps([asdict(r) for r in records], indent=1).encode()
    durable.write_atomic(folder / RECORDS, data)


def running(settings: Settings) -> list[ProcessRecord]:
    """The recorded processes that still run."""
    return [r for r in recorded(settings) if r.alive()]


def record(settings: Settings, rec: ProcessRecord) -> None:
    """Add (or replace) the record named `rec.name`, keeping the start order."""
    others = [r for r in recorded(settings) if r.name != rec.name]
    write_records(settings, sorted([*others, rec], key=_order))


def forget(settings: Settings, name: str) -> None:
    """Remove the record named `name` (a process that stopped)."""
    current = recorded(settings)
    kept = [r for r in current if r.name != name]
    if len(kept) != len(current):
        write_records(settings, kept)


def _order(rec: ProcessRecord) -> int:
    return NAMES.index(rec.name) if rec.name in NAMES else len(NAMES)


class InstanceLock:
    """`METNOS_HOME/run/serve.lock`, held (flock) for the supervisor's whole life.

    The file holds the holder's pid, for the message a second `metnos serve` shows. The
    descriptor is not inherited by the children, so the lock goes with the supervisor even
    when it is killed and its children run on."""

    def __init__(self, settings: Settings) -> None:
        self.path = run_dir(settings) / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock; MetnosError ERR_SERVE_ALREADY_RUNNING naming the holder's pid."""
        durable.make_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise MetnosError("ERR_SERVE_ALREADY_RUNNING", pid=holder,
                              home=str(self.path.parent.parent)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None
