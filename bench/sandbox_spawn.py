"""What one sandboxed executor run costs, and where it goes (issue 29).

    make bench        # or: .venv/bin/python bench/sandbox_spawn.py [--runs 40]

Each case runs through `run_sandboxed`, the one way Metnos starts an executor (pinned folders,
prlimit, the seccomp filter, bwrap with every namespace, the watchdog, JSON in and out), the
cases interleaved run by run, and the median of each is printed with the step it adds:
- bare bwrap `true` (read-only /, dev, proc, every namespace): the floor any sandbox pays;
- an executor that prints its answer and imports nothing: bwrap as Metnos sets it up, plus the
  interpreter's start (`python -I -S -B`);
- one that imports the protocol helper and answers through it: what every executor adds;
- the built-in `fs_read` reading a 1 KB note of the workspace, spawn to parsed result.
The interpreter's own start outside any sandbox is printed for reference.
Target: a sandboxed `fs_read` ≤ 20 ms from spawn to result (the exit code says whether missed).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _targets import report  # noqa: E402  (bench/ is the script's folder)

from metnos.ground.paths import resources_path  # noqa: E402
from metnos.mechanisms.executors.registry import discover  # noqa: E402
from metnos.mechanisms.sandbox import (  # noqa: E402
    SandboxProfile,
    SandboxRequest,
    find_bwrap,
    find_python_runtime,
    run_sandboxed,
)

BWRAP = find_bwrap()  # the binary Metnos itself runs: the bundled one, else the system's
BARE = [str(BWRAP), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--unshare-all", "--die-with-parent", "--", "/usr/bin/true"]
NO_IMPORTS = 'import sys\nsys.stdout.write(\'{"ok": true, "result": {}}\')\n'
PROTOCOL = ('import sys\nsys.path.append("/home/metnos/pylib")\n'
            "from metnos_sandbox_protocol import serve\n"
            "serve(lambda args: {}, set())\n")
Case = Callable[[], Awaitable[None]]


def executor(root: Path, name: str, body: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "main.py").write_text(body)
    return folder


def sandboxed(folder: Path, entry: str, profile: SandboxProfile, workspace: Path,
              args: dict[str, object]) -> Case:
    async def run() -> None:
        result = await run_sandboxed(SandboxRequest(
            exec_dir=folder, entry=entry, profile=profile, workspace=workspace, args=args,
            bwrap=BWRAP))
        assert result.ok, result
    return run


async def bare() -> None:
    proc = await asyncio.create_subprocess_exec(
        *BARE, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL, start_new_session=True, env={"PATH": "/usr/bin:/bin"})
    assert await proc.wait() == 0


async def interleaved(cases: dict[str, Case], runs: int) -> dict[str, float]:
    """Median milliseconds of each case, the cases taking turns (two runs first, not kept)."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for i in range(runs + 2):
        for name, case in cases.items():
            t0 = time.perf_counter()
            await case()
            if i >= 2:
                times[name].append((time.perf_counter() - t0) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def interpreter_start(python: str, runs: int) -> float:
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([python, "-I", "-S", "-B", "-c", "pass"], check=True)
        walls.append((time.perf_counter() - t0) * 1000)
    return statistics.median(walls)


async def main(runs: int) -> int:
    fs_read = next(s for s in discover([resources_path("executors")]) if s.name == "fs_read")
    runtime = await find_python_runtime(BWRAP)
    with tempfile.TemporaryDirectory(prefix="metnos-bench-spawn-") as tmp:
        root = Path(tmp)
        workspace = root / "workspace"
        workspace.mkdir()
        (workspace / "note.md").write_text("buy milk, call the plumber\n" * 38)
        plain = SandboxProfile()
        cases = {
            "bare bwrap, true": bare,
            "+ Metnos's bwrap set-up and the interpreter": sandboxed(
                executor(root, "bare", NO_IMPORTS), "main.py", plain, workspace, {}),
            "+ the protocol helper": sandboxed(
                executor(root, "protocol", PROTOCOL), "main.py", plain, workspace, {}),
            "fs_read, 1 KB note (spawn to result)": sandboxed(
                fs_read.folder, fs_read.manifest.entry, fs_read.manifest.sandbox, workspace,
                {"path": "note.md"}),
        }
        medians = await interleaved(cases, runs)
    print(f"one sandboxed run, median of {runs} interleaved runs each "
          f"(interpreter: {runtime.executable})")
    before = 0.0
    for name, ms in medians.items():
        added = "" if not before else f"  ({ms - before:+.1f} ms)"
        print(f"  {name:<46} {ms:7.1f} ms{added}")
        before = ms
    print(f"  {'interpreter start outside, -I -S -B -c pass':<46} "
          f"{interpreter_start(str(runtime.executable), runs):7.1f} ms")
    fs = medians["fs_read, 1 KB note (spawn to result)"]
    return report([("sandboxed fs_read, spawn to result", fs / 1000, 0.020)],
                  prefix="target: ")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    sys.exit(asyncio.run(main(parser.parse_args().runs)))
