"""The process and memory bound of a running sandbox, enforced from the host, root or not.

Why: RLIMIT_NPROC counts the tasks of the launcher's *real* user and the kernel does not enforce
it for uid 0, which the sandbox's uid 1000 maps back to when the gateway runs as root. Measured
here (root, 2 cores, pid_max 32768) before this module: a 12-generation fork bomb reached 4,096
processes in under 2 s with `max_processes=64` and lived until the timeout; an unbounded one
would have exhausted the host's pids (gateway, database and Prefect included). A cgroup
(`pids.max`) is the real tool but needs a writable cgroup tree, which we do not have; a
dedicated unprivileged uid would make the workspace (owned by the gateway's user) unwritable.

How: every sandbox has its own pid namespace, whose init is bwrap's child. `Watch` finds it
(`/proc/<bwrap>/task/<bwrap>/children`, checked by `NSpid` ending in 1 and its parent), opens
the sandbox's own procfs through `/proc/<init>/root/proc` (which lists exactly the namespace's
processes) and a pidfd on init, then, in a thread of its own, every `POLL_S` counts the tasks
(threads included, init included, as RLIMIT_NPROC does) and sums their resident memory. Over
`max_processes` tasks, or over `memory_mb` of resident memory in total (file-backed pages
shared by several processes are counted once per process: conservative), it SIGKILLs init's
process group, which holds the executor and its children, then init itself through the pidfd:
the kernel then kills every process of the namespace and allocates no new pid in it, so no
fork can outrun the kill.

Residual risk (documented, not hidden):
- Between two polls a fork bomb keeps forking: the bound is `max_processes` plus whatever it
  creates in one poll interval, not an exact ceiling. Measured here with `max_processes=64`
  (2 busy cores): seen at 65-111 tasks, the whole run over 30-130 ms after its start, nothing
  left behind. RLIMIT_NPROC still applies as a hard cap when the gateway is not root.
- The summed resident memory counts shared file pages once per process and misses tmpfs
  pages (bounded by the /tmp `--size`): the aggregate bound is approximate, in both ways.
- The polls run in a thread of their own (one per running sandbox), not on the gateway's
  event loop: a blocked loop does not delay a kill. A poll can still wait for the GIL (about
  5 ms per busy Python thread).
- It needs pidfds (Linux >= 5.3) and access to `/proc/<init>/root` (root, or the owner of the
  sandbox's user namespace, i.e. the gateway's own uid); if it cannot attach within
  `ATTACH_TIMEOUT_S` it kills the run (fail closed). Verified here as root only.
- The summed memory bound is checked at the same pace; RLIMIT_AS per process and the tmpfs
  `--size` of /tmp stay the hard per-process and per-mount caps.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any

POLL_S = 0.005
ATTACH_TIMEOUT_S = 5.0
_ATTACH_POLL_S = 0.001
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class Breach:
    """Why the sandbox was killed: an i18n key and its vars."""

    key: str
    vars: dict[str, Any]


@dataclass(slots=True)
class _Namespace:
    """Open handles on one sandbox's pid namespace: its procfs and a pidfd of its init."""

    proc_fd: int
    init_pidfd: int
    init_pid: int

    def close(self) -> None:
        for fd in (self.proc_fd, self.init_pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def kill(self) -> None:
        """SIGKILL init's process group at once (bwrap's `--new-session` made init its leader
        and the executor a member: the kernel lets no fork escape a group kill), then init
        itself, whose death kills whatever left the group. The group is only signalled while
        init lives (so its pgid cannot have been reused)."""
        if _alive(self.init_pidfd):
            with contextlib.suppress(OSError):
                os.killpg(self.init_pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(self.init_pidfd, signal.SIGKILL)


def _alive(pidfd: int) -> bool:
    """A pidfd polls readable once its process has exited."""
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    return not poller.poll(0)


class Watch:
    """Watch the sandbox started by `bwrap_pid` until `stop` is awaited.

    The polls run in a thread of their own, so a busy or blocked event loop never delays a
    kill. On a breach the thread kills the namespace at once and keeps the Breach for `stop`,
    which the runner awaits once bwrap has ended: a breach found while the run was ending is
    never lost (a cancelled watch task used to drop it when the kill and the reap raced).
    Fails closed: a namespace it cannot attach to within `ATTACH_TIMEOUT_S` is killed too.
    """

    def __init__(self, bwrap_pid: int, max_tasks: int, max_rss_bytes: int,
                 gate: int | None = None) -> None:
        """`gate`: the write end of bwrap's `--block-fd` pipe (owned from here on): one
        byte is written once the watch is attached, so the executor starts watched; it is
        closed unwritten when the watch cannot attach (bwrap is killed then)."""
        loop = asyncio.get_running_loop()
        self._done: asyncio.Future[Breach | None] = loop.create_future()
        self._stop = threading.Event()

        def run() -> None:
            outcome: Breach | BaseException | None
            try:
                outcome = _watch(bwrap_pid, max_tasks, max_rss_bytes, self._stop, gate)
            except BaseException as exc:  # handed to `stop`, which raises it
                outcome = exc
            finally:
                _close(gate)
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(_settle, self._done, outcome)

        threading.Thread(target=run, name=f"sandbox-watchdog-{bwrap_pid}", daemon=True).start()

    async def stop(self) -> Breach | None:
        """Stop polling and return the breach seen, if any. The thread ends within one poll,
        so nothing is signalled once the caller reaps bwrap; a cancelled caller leaves it to
        end on its own (the stop is already set)."""
        self._stop.set()
        return await asyncio.shield(self._done)


def _settle(done: asyncio.Future[Breach | None], outcome: Breach | BaseException | None) -> None:
    if done.done():
        return
    if isinstance(outcome, BaseException):
        done.set_exception(outcome)
    else:
        done.set_result(outcome)


def _close(fd: int | None) -> None:
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)


def _watch(bwrap_pid: int, max_tasks: int, max_rss_bytes: int,
           stop: threading.Event, gate: int | None) -> Breach | None:
    """The watchdog's thread: attach, open the gate, then poll every POLL_S until the run
    ends, a bound is breached (kill, then the Breach) or `stop` is set (None)."""
    ns = _attach(bwrap_pid, stop)
    if not isinstance(ns, _Namespace):
        if ns is not None:
            _kill_bwrap(bwrap_pid)
        return ns
    if gate is not None:
        with contextlib.suppress(OSError):  # bwrap gone meanwhile: the polls find it so
            os.write(gate, b"1")
    try:
        while not stop.is_set():
            breach = _check(ns.proc_fd, max_tasks, max_rss_bytes)
            if breach is not None:
                ns.kill()
                _kill_bwrap(bwrap_pid)
                return breach
            stop.wait(POLL_S)
        return None
    except OSError:
        return None  # the namespace is gone: the run ended
    finally:
        ns.close()


def _kill_bwrap(bwrap_pid: int) -> None:
    """bwrap leads its own group (`start_new_session`) and is our unreaped child: its pid cannot
    have been reused. `--die-with-parent` then takes the namespace with it."""
    with contextlib.suppress(OSError):
        os.killpg(bwrap_pid, signal.SIGKILL)


def _attach(bwrap_pid: int, stop: threading.Event) -> _Namespace | Breach | None:
    """Wait for bwrap's namespace init and open its handles; None if bwrap ends (or the
    watch is stopped) first."""
    deadline = time.monotonic() + ATTACH_TIMEOUT_S
    while not stop.is_set():
        try:
            children = _read(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children").split()
            if _read(f"/proc/{bwrap_pid}/stat").rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                return None
        except (OSError, IndexError):
            return None
        for child in children:
            ns = _open_namespace(bwrap_pid, int(child))
            if ns is not None:
                return ns
        if time.monotonic() > deadline:
            return Breach("ERR_SANDBOX_UNAVAILABLE", {"reason": "process watchdog cannot attach"})
        stop.wait(_ATTACH_POLL_S)
    return None


def _open_namespace(bwrap_pid: int, pid: int) -> _Namespace | None:
    if not _is_init_of(bwrap_pid, pid):
        return None
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        proc_fd = os.open(f"/proc/{pid}/root/proc", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        os.close(pidfd)
        return None
    ns = _Namespace(proc_fd=proc_fd, init_pidfd=pidfd, init_pid=pid)
    if not _is_own_procfs(proc_fd) or not _is_init_of(bwrap_pid, pid):
        ns.close()  # still the host's /proc (bwrap not yet in its new root), or a reused pid
        return None
    return ns


def _is_own_procfs(proc_fd: int) -> bool:
    """Whether `proc_fd` is the procfs of a pid namespace we are not in: there `self` does
    not resolve (ENOENT), while in the host's /proc it names us."""
    try:
        os.readlink("self", dir_fd=proc_fd)
    except FileNotFoundError:
        return "1" in os.listdir(proc_fd)
    except OSError:
        return False
    return False


def _is_init_of(bwrap_pid: int, pid: int) -> bool:
    """Whether `pid` is pid 1 of a new namespace and a child of `bwrap_pid`."""
    try:
        status = _read(f"/proc/{pid}/status")
    except OSError:
        return False
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    nspid = fields.get("NSpid", "").split()
    return len(nspid) >= 2 and nspid[-1] == "1" and fields.get("PPid", "").strip() == str(
        bwrap_pid
    )


def _check(proc_fd: int, max_tasks: int, max_rss_bytes: int) -> Breach | None:
    """Count the namespace's tasks and resident bytes; a Breach when one is over its bound."""
    pids = [name for name in os.listdir(proc_fd) if name.isdigit()]
    if len(pids) > max_tasks:
        return Breach("ERR_SANDBOX_TOO_MANY_PROCESSES", {"limit": max_tasks})
    tasks = rss = 0
    for pid in pids:
        try:
            fields = _read(f"{pid}/stat", proc_fd).rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
        tasks += int(fields[17])  # num_threads (field 20 of proc_pid_stat(5))
        rss += int(fields[21]) * _PAGE  # rss in pages (field 24)
    if tasks > max_tasks:
        return Breach("ERR_SANDBOX_TOO_MANY_PROCESSES", {"limit": max_tasks})
    if rss > max_rss_bytes:
        return Breach("ERR_SANDBOX_MEMORY_EXCEEDED", {"memory_mb": max_rss_bytes >> 20})
    return None


def _read(path: str, dir_fd: int | None = None) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)
