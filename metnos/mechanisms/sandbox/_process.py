"""Process plumbing of a sandbox run: resource limits, the raw outcome, killing and reaping."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import resource
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from metnos.mechanisms.sandbox.request import SandboxResult

if TYPE_CHECKING:
    from metnos.mechanisms.sandbox.request import SandboxRequest

_REAP_TIMEOUT_S = 5.0


@dataclass(slots=True)
class Run:
    """What happened to the process, before the executor protocol is applied."""

    spawn_s: float
    exit_code: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    error_key: str | None = None
    error_vars: dict[str, Any] = field(default_factory=dict)

    def as_result(
        self,
        started: float,
        *,
        result: dict[str, Any] | None = None,
        error_key: str | None = None,
        error_vars: dict[str, Any] | None = None,
    ) -> SandboxResult:
        return SandboxResult(
            ok=error_key is None,
            result=result,
            error_key=error_key,
            error_vars=error_vars or {},
            exit_code=self.exit_code,
            duration_s=time.monotonic() - started,
            spawn_s=self.spawn_s,
            stderr_tail=self.stderr.decode("utf-8", "replace")[-500:],
        )

    def fail(self, started: float, key: str, **error_vars: Any) -> SandboxResult:
        return self.as_result(started, error_key=key, error_vars=error_vars)


def rlimits(request: SandboxRequest) -> list[tuple[str, int, int]]:
    """The run's limits as (prlimit option, resource, value), capped by our own hard limits.

    RLIMIT_NPROC caveat: it counts every process of the *real* uid, and the kernel does not
    enforce it for uid 0 (the sandbox's uid 1000 maps back to the launcher's uid), so when the
    gateway runs as root the bound is `_watchdog`'s, which counts the sandbox's own pid
    namespace. As a dedicated user both apply.
    """
    wanted = (
        ("as", resource.RLIMIT_AS, request.profile.memory_mb * 1024 * 1024),
        ("cpu", resource.RLIMIT_CPU, math.ceil(request.profile.timeout_s) + 1),
        ("nproc", resource.RLIMIT_NPROC, request.max_processes),
        ("fsize", resource.RLIMIT_FSIZE, request.max_file_bytes),
        ("core", resource.RLIMIT_CORE, 0),
    )
    capped = []
    for name, which, value in wanted:
        _soft, hard = resource.getrlimit(which)
        capped.append((name, which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return capped


@lru_cache(maxsize=1)
def find_prlimit() -> str | None:
    """util-linux `prlimit`, which sets the limits and execs bwrap (same pid, same group)."""
    return shutil.which("prlimit", path="/usr/bin:/bin")


def limit_prefix(request: SandboxRequest) -> list[str]:
    """`prlimit --as=... --` to put before bwrap, or [] when prlimit is missing.

    Preferred over a `preexec_fn`: that forces a plain fork and runs Python in the child,
    which CPython documents as unsafe in a threaded process (the gateway is one), and it
    measured ~3 ms slower per start here.
    """
    prlimit = find_prlimit()
    if prlimit is None:
        return []
    return [prlimit, *(f"--{name}={value}" for name, _w, value in rlimits(request)), "--"]


def preexec(request: SandboxRequest) -> Callable[[], None] | None:
    """The fallback `preexec_fn` setting the same limits when prlimit is missing."""
    if find_prlimit() is not None:
        return None
    limits = [(which, value) for _n, which, value in rlimits(request)]

    def _apply() -> None:
        for which, value in limits:
            resource.setrlimit(which, (value, value))

    return _apply


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by bwrap; `--die-with-parent` then empties the namespace."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def reap(proc: asyncio.subprocess.Process, run: Run) -> None:
    """Reap the killed bwrap so no zombie is left; keep the exit code if it had one.

    asyncio's `wait()` returns only once the pipes are closed too, so first read the dead
    process's pipes to EOF (bounded by the pipe buffers).
    """
    if proc.stdin is not None:
        proc.stdin.close()
    streams = [s.read() for s in (proc.stdout, proc.stderr) if s is not None]
    with contextlib.suppress(TimeoutError, OSError):
        await asyncio.wait_for(asyncio.gather(*streams), _REAP_TIMEOUT_S)
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        code = await asyncio.wait_for(proc.wait(), _REAP_TIMEOUT_S)
        if run.exit_code is None and run.error_key is None:
            run.exit_code = code
