"""Run one executor under bubblewrap: the ONLY place in `metnos/` that starts executor processes.

`run_sandboxed(request)` pins the executor folder and the workspace with `O_PATH|O_NOFOLLOW`
descriptors (`pin`), then starts bwrap with those descriptors (`run_pinned`), resource limits,
the seccomp filter (`seccomp`), JSON on stdin, a hard cap on stdout and a deadline, while
`_watchdog` bounds the tasks and memory of the sandbox's pid namespace; the process group is
killed in `finally` whatever happened (notes/prefect.md §6), and `--die-with-parent` takes the
namespace with it. A profile with `egress` runs in an empty network namespace too, its one way
out a socket the host forwards to its account's server for the run's length (`egress`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metnos.ground.errors import SandboxError
from metnos.mechanisms.sandbox import _process, _watchdog, egress, seccomp
from metnos.mechanisms.sandbox._pins import PinnedDirs, pin
from metnos.mechanisms.sandbox.bwrap import (
    EGRESS_SOCKET,
    PATH_ENV,
    PythonRuntime,
    build_argv,
    find_bwrap,
    protocol_package,
    python_candidates,
    resolve_python_packages,
    safe_entry,
)
from metnos.mechanisms.sandbox.profile import SandboxProfile
from metnos.mechanisms.sandbox.request import SandboxRequest, SandboxResult

__all__ = ["find_python_runtime", "pin", "run_pinned", "run_sandboxed"]

_KEY_RE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$")
_STDERR_TAIL = 2000
_CHUNK = 65536
_runtimes: dict[str, PythonRuntime] = {}
_PY_PROBE = 'import json, sys\nprint(json.dumps({"ok": True, "result": {"v": sys.version}}))\n'


async def run_sandboxed(request: SandboxRequest) -> SandboxResult:
    """Run the executor of `request` in the sandbox and return its parsed outcome.

    Never raises for a sandbox problem: no bwrap, no usable interpreter, a symlinked or
    off-limits folder all come back as `ok=False` with their i18n key.
    """
    started = time.monotonic()
    try:
        runtime = await find_python_runtime(request.bwrap)
        with pin(request) as pinned:
            return await run_pinned(request, pinned, runtime=runtime)
    except SandboxError as exc:
        return SandboxResult.failure(exc.key, exc.vars, started)


async def find_python_runtime(bwrap: os.PathLike[str] | None = None) -> PythonRuntime:
    """The first interpreter that runs a stdlib script (`-I -S -B`) inside the sandbox (cached).

    Raises SandboxError (ERR_SANDBOX_UNAVAILABLE, ERR_SANDBOX_NO_PYTHON) when none does.
    """
    binary = find_bwrap(bwrap)
    if (cached := _runtimes.get(str(binary))) is not None:
        return cached
    if not os.access(binary, os.X_OK):
        raise SandboxError("ERR_SANDBOX_UNAVAILABLE", reason=str(binary))
    failures = []
    for runtime in python_candidates():
        outcome = await _try_runtime(binary, runtime)
        if outcome is None:
            _runtimes[str(binary)] = runtime
            return runtime
        failures.append(f"{runtime.executable}: {outcome}")
    raise SandboxError("ERR_SANDBOX_NO_PYTHON", detail="; ".join(failures)[-500:])


async def _try_runtime(binary: os.PathLike[str], runtime: PythonRuntime) -> str | None:
    """None when `runtime` runs a stdlib script inside a minimal sandbox, else a short reason."""
    with tempfile.TemporaryDirectory(prefix="metnos-pyprobe-") as tmp:
        exec_dir, workspace = Path(tmp, "exec"), Path(tmp, "ws")
        exec_dir.mkdir()
        workspace.mkdir()
        (exec_dir / "main.py").write_text(_PY_PROBE)
        request = SandboxRequest(
            exec_dir=exec_dir,
            entry="main.py",
            profile=SandboxProfile(timeout_s=10),
            workspace=workspace,
            args={},
            bwrap=Path(binary),
        )
        with pin(request) as pinned:
            result = await run_pinned(request, pinned, runtime=runtime)
    return None if result.ok else f"{result.error_key} {result.stderr_tail}".strip()


async def run_pinned(
    request: SandboxRequest,
    pinned: PinnedDirs,
    *,
    runtime: PythonRuntime | None = None,
    env: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Start bwrap on already pinned directories (split out so tests can swap paths between).

    `env` is the environment of bwrap itself: a bare PATH by default, so no secret of the
    gateway ever reaches it; `--clearenv` empties it again inside (the canary plants a secret
    here to prove that).
    """
    started = time.monotonic()
    binary = find_bwrap(request.bwrap)
    if not os.access(binary, os.X_OK):
        return SandboxResult.failure("ERR_SANDBOX_UNAVAILABLE", {"reason": str(binary)}, started)
    runtime = runtime or await find_python_runtime(binary)
    if not safe_entry(request.entry):
        raise SandboxError("ERR_SANDBOX_PATH_UNSAFE", path=request.entry)
    try:
        packages = (protocol_package(), *resolve_python_packages(request.profile.python_packages))
    except LookupError as exc:
        return SandboxResult.failure("ERR_SANDBOX_UNAVAILABLE", {"reason": str(exc)}, started)
    envelope: dict[str, Any] = {"args": request.args, "action_id": request.action_id}
    if request.account is not None:  # host-only: the executor's credential, never an argument
        envelope["account"] = request.account
    filter_fd: int | None = None
    async with contextlib.AsyncExitStack() as stack:
        egress_socket: str | None = None
        account_egress = request.profile.egress == "account"
        target = _egress_target(request.account) if account_egress else None
        if target is not None:  # the account's server, through the host; without a usable
            # account the run has no way out at all (the executor says what is missing)
            envelope["account"] = {**envelope["account"], "egress": EGRESS_SOCKET}
            egress_socket = str(await stack.enter_async_context(egress.forward(
                *target, connect_timeout_s=request.profile.timeout_s)))
        payload = json.dumps(envelope).encode()
        try:
            filter_fd = seccomp.program_fd()
            argv = build_argv(
                request.profile,
                bwrap=binary,
                exec_dir_fd=pinned.exec_dir_fd,
                workspace_fd=pinned.workspace_fd,
                python=runtime,
                entry=request.entry,
                extra_mounts=pinned.extra_mounts,
                hidden_dirs=pinned.hidden_dirs,
                hidden_files=pinned.hidden_files,
                seccomp_fd=filter_fd,
                python_packages=packages,
                egress_socket=egress_socket,
            )
            fds = pinned.fds if filter_fd is None else (*pinned.fds, filter_fd)
            run = await _execute(argv, fds, payload, request, env)
        except OSError as exc:
            return SandboxResult.failure(
                "ERR_SANDBOX_UNAVAILABLE", {"reason": exc.strerror or str(exc)}, started
            )
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
    return _interpret(run, request, started)


def _egress_target(account: dict[str, Any] | None) -> tuple[str, int] | None:
    """The (host, port) an `egress = "account"` run may reach, from the host's account."""
    if account is None:
        return None
    try:
        host, port = str(account["host"]), int(account["port"])
    except (KeyError, TypeError, ValueError):
        return None
    return (host, port) if host and 0 < port < 65536 else None


async def _execute(
    argv: list[str],
    fds: tuple[int, ...],
    payload: bytes,
    request: SandboxRequest,
    env: Mapping[str, str] | None,
) -> _process.Run:
    """Spawn, feed, drain and reap; the process group is SIGKILLed in `finally`."""
    started = time.monotonic()
    # bwrap sets the namespace up, then waits on `gate` before it runs the executor: the
    # watchdog's thread opens it once attached, so no executor code runs unwatched, however
    # late this (maybe busy) event loop gets to start the watch
    gate, opener = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *_process.limit_prefix(request),
            argv[0], "--block-fd", str(gate), *argv[1:],
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            pass_fds=(*fds, gate),
            start_new_session=True,
            env={"PATH": PATH_ENV} if env is None else dict(env),
            preexec_fn=_process.preexec(request),
        )
    except BaseException:
        os.close(opener)
        raise
    finally:
        os.close(gate)
    run = _process.Run(spawn_s=time.monotonic() - started)
    max_rss = request.profile.memory_mb * 1024 * 1024
    watchdog = _watchdog.Watch(proc.pid, request.max_processes, max_rss, opener)
    try:
        await _communicate(proc, payload, request, run)
    finally:
        _process.kill_group(proc.pid)
        # A breach the watchdog saw (it already killed the namespace) decides the outcome.
        if (breach := await watchdog.stop()) is not None:
            run.error_key, run.error_vars = breach.key, dict(breach.vars)
        await _process.reap(proc, run)
    return run


async def _communicate(
    proc: asyncio.subprocess.Process, payload: bytes, request: SandboxRequest, run: _process.Run
) -> None:
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    tasks = [
        asyncio.create_task(_feed(proc.stdin, payload)),
        asyncio.create_task(_drain_stderr(proc.stderr, run)),
    ]
    try:
        async with asyncio.timeout(request.profile.timeout_s):
            too_big = await _read_capped(proc.stdout, request.max_output_bytes, run)
            if too_big:
                run.error_key = "ERR_SANDBOX_OUTPUT_TOO_LARGE"
                return
            run.exit_code = await proc.wait()
            await asyncio.gather(*tasks)
    except TimeoutError:
        run.error_key = "ERR_SANDBOX_TIMEOUT"
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _feed(stdin: asyncio.StreamWriter, payload: bytes) -> None:
    try:
        stdin.write(payload)
        await stdin.drain()
        stdin.close()
        await stdin.wait_closed()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the executor did not read its arguments; its output decides


async def _read_capped(stdout: asyncio.StreamReader, limit: int, run: _process.Run) -> bool:
    """Read stdout until EOF; True (and stop) as soon as it exceeds `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stdout.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            return True
        chunks.append(chunk)
    run.stdout = b"".join(chunks)
    return False


async def _drain_stderr(stderr: asyncio.StreamReader, run: _process.Run) -> None:
    while chunk := await stderr.read(_CHUNK):
        run.stderr = (run.stderr + chunk)[-_STDERR_TAIL:]


def _interpret(run: _process.Run, request: SandboxRequest, started: float) -> SandboxResult:
    """Map the raw run onto the executor protocol (one JSON object on stdout, exit 0)."""
    if run.error_vars and run.error_key is not None:  # the watchdog's verdict
        return run.fail(started, run.error_key, **run.error_vars)
    if run.error_key == "ERR_SANDBOX_TIMEOUT":
        return run.fail(started, run.error_key, seconds=request.profile.timeout_s)
    if run.error_key == "ERR_SANDBOX_OUTPUT_TOO_LARGE":
        return run.fail(started, run.error_key, limit=request.max_output_bytes)
    if run.exit_code != 0:
        if b"MemoryError" in run.stderr or b"memory allocation of" in run.stderr:  # Rust aborts
            memory_mb = request.profile.memory_mb
            return run.fail(started, "ERR_SANDBOX_MEMORY_EXCEEDED", memory_mb=memory_mb)
        return run.fail(started, "ERR_SANDBOX_CRASHED", exit_code=run.exit_code)
    reply = _parse(run.stdout)
    if reply is None:
        return run.fail(started, "ERR_SANDBOX_CRASHED", exit_code=run.exit_code)
    if reply["ok"]:
        return run.as_result(started, result=reply["result"])
    error = reply["error"]  # vars as a dict: an executor's var named "key" must not clash
    return run.as_result(started, error_key=error["key"], error_vars=dict(error.get("vars", {})))


def _parse(stdout: bytes) -> dict[str, Any] | None:
    """The executor's reply when it follows the protocol, else None."""
    try:
        reply = json.loads(stdout)
    except (UnicodeDecodeError, ValueError, RecursionError):  # RecursionError: "[[[[..."
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return None
    if reply["ok"]:
        return reply if isinstance(reply.get("result"), dict) else None
    error = reply.get("error")
    if not isinstance(error, dict) or not _KEY_RE.match(str(error.get("key", ""))):
        return None
    return reply if isinstance(error.get("vars", {}), dict) else None
