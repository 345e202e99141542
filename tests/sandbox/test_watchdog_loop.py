"""The sandbox watchdog polls in a thread of its own: a fork bomb is killed even while the
event loop that started the run is blocked (the real bwrap, the real kill)."""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from metnos.mechanisms.sandbox import SandboxProfile
from tests.sandbox._helpers import Runner, processes_with

BLOCKED_FOR_AT_MOST_S = 15.0  # a bound, not a speed target: the kill usually takes ms


async def test_a_fork_bomb_is_killed_while_the_loop_is_blocked(run: Runner) -> None:
    marker = f"bomb_{uuid.uuid4().hex}.py"
    body = """
    import time
    time.sleep(0.5)  # forks only once the test has blocked the loop
    for _ in range(6):  # 64 processes, over the bound of 16
        try:
            os.fork()
        except OSError:
            pass
    time.sleep(60)
    """
    task = asyncio.create_task(run(body, SandboxProfile(timeout_s=30), entry=marker,
                                   max_processes=16))
    while not _executing(marker):  # bwrap waits for the watch before it runs the entry
        assert not task.done(), task.result()
        await asyncio.sleep(0.01)
    deadline = time.monotonic() + BLOCKED_FOR_AT_MOST_S
    while processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)  # the event loop is blocked here: only the watchdog's thread runs
    killed_while_blocked = not processes_with(marker)
    result = await task
    assert killed_while_blocked, "the bomb outlived a blocked event loop"
    assert result.error_key == "ERR_SANDBOX_TOO_MANY_PROCESSES", result
    assert processes_with(marker) == []


def _executing(marker: str) -> bool:
    """Whether the entry itself runs (a Python interpreter's command line names it), not
    only bwrap, whose command line names it too from its spawn on."""
    for pid in processes_with(marker):
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if Path(argv0.decode()).name.startswith("python"):
            return True
    return False
