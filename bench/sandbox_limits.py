"""How fast the sandbox's bounds end a run: the speed the unit tests no longer assert.

    make bench        # or: .venv/bin/python bench/sandbox_limits.py [--runs 3]

The tests check behaviour (which bound killed the run, nothing left behind); this prints the
median wall time of each case, with its target, through the real bwrap sandbox:
- the start-up canary (every check) — target < 2 s;
- a 12-generation fork bomb under `max_processes=16`, a 2,000-thread bomb under 32, and four
  60 MB children under a summed 128 MB — each killed by its bound, target < 1.5 s / 1.5 s / 3 s;
- an endless loop under `timeout_s=0.5`: the overshoot past the timeout, target < 2 s.
Exits 1 when a median misses its target.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _targets import report  # noqa: E402  (bench/ is the script's folder)

from metnos.mechanisms.sandbox import (  # noqa: E402
    SandboxProfile,
    SandboxRequest,
    find_bwrap,
    run_canary,
    run_sandboxed,
)
from tests.sandbox._helpers import (  # noqa: E402
    FORK_BOMB,
    MEMORY_HOG,
    THREAD_BOMB,
    write_executor,
)

BWRAP = find_bwrap()  # the binary Metnos itself runs: the bundled one, else the system's
LOOP = "os.fork()\nwhile True:\n    pass\n"
# name, body, profile, request fields, expected error, target seconds, minus the timeout?
CASES: list[tuple[str, str, SandboxProfile, dict[str, Any], str, float, bool]] = [
    ("fork bomb killed", FORK_BOMB, SandboxProfile(timeout_s=20), {"max_processes": 16},
     "ERR_SANDBOX_TOO_MANY_PROCESSES", 1.5, False),
    ("thread bomb killed", THREAD_BOMB, SandboxProfile(timeout_s=20), {"max_processes": 32},
     "ERR_SANDBOX_TOO_MANY_PROCESSES", 1.5, False),
    ("summed memory killed", MEMORY_HOG, SandboxProfile(timeout_s=20, memory_mb=128), {},
     "ERR_SANDBOX_MEMORY_EXCEEDED", 3.0, False),
    ("timeout 0.5 s, overshoot", LOOP, SandboxProfile(timeout_s=0.5), {},
     "ERR_SANDBOX_TIMEOUT", 2.0, True),
]


async def case_seconds(root: Path, case: tuple[Any, ...], runs: int) -> float:
    _, body, profile, fields, expected, _, minus_timeout = case
    workspace = root / "workspace"
    workspace.mkdir(exist_ok=True)
    times = []
    for _ in range(runs):
        exec_dir, entry = write_executor(root, body)
        request = SandboxRequest(exec_dir=exec_dir, entry=entry, profile=profile,
                                 workspace=workspace, args={}, bwrap=BWRAP, **fields)
        result = await run_sandboxed(request)
        assert result.error_key == expected, result
        times.append(result.duration_s - (profile.timeout_s if minus_timeout else 0))
    return statistics.median(times)


async def canary_seconds(runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        report = await run_canary(bwrap=BWRAP)
        times.append(time.perf_counter() - started)
        assert report.ok, report.detail
    return statistics.median(times)


async def figures(runs: int) -> list[tuple[str, float, float]]:
    out = [("start-up canary", await canary_seconds(runs), 2.0)]
    with tempfile.TemporaryDirectory(prefix="metnos-bench-sandbox-") as tmp:
        for case in CASES:
            out.append((case[0], await case_seconds(Path(tmp), case, runs), case[5]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    return report(asyncio.run(figures(parser.parse_args().runs)), unit="s", prefix="sandbox, ")


if __name__ == "__main__":
    sys.exit(main())
