"""Helpers of the sandbox tests: probe executors written into tmp_path, host process scan."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from metnos.mechanisms.sandbox import SandboxResult

Runner = Callable[..., Awaitable[SandboxResult]]

# Prelude of every probe executor: `args` from stdin, `reply(**result)` prints the protocol.
PRELUDE = """\
import json, os, sys
args = json.load(sys.stdin)["args"]
def reply(**result):
    print(json.dumps({"ok": True, "result": result}))
"""
# `tried(fn)`: whether `fn()` ran without an OSError (a probe's "could it?").
TRIED = """\
def tried(fn):
    try:
        fn()
        return True
    except OSError:
        return False
"""
# The bounds' probes, shared with bench/sandbox_limits.py (which times them).
FORK_BOMB = """\
import time
for _ in range(12):  # 4096 processes if nothing stops it (bounded: the host is shared)
    try:
        os.fork()
    except OSError:
        pass
time.sleep(60)
"""
THREAD_BOMB = """\
import threading, time
threading.stack_size(65536)
for _ in range(2000):
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
"""
MEMORY_HOG = """\
import time
for _ in range(4):
    if os.fork() == 0:
        hog = b"x" * (60 * 1024 * 1024)
        time.sleep(60)
time.sleep(60)
"""


def make_workspace(tmp_path: Path, audit_line: str, files: dict[str, str]) -> Path:
    """A workspace with `files` and an audit log in `.audit/`, as `metnos init` makes it."""
    ws = tmp_path / "workspace"
    (ws / ".audit").mkdir(parents=True)
    (ws / ".audit" / "log.jsonl").write_text(audit_line)
    for name, text in files.items():
        (ws / name).write_text(text)
    return ws


def write_executor(tmp_path: Path, body: str, name: str | None = None) -> tuple[Path, str]:
    """An executor folder holding PRELUDE + `body`; returns (folder, entry)."""
    exec_dir = tmp_path / f"exec_{uuid.uuid4().hex[:8]}"
    exec_dir.mkdir()
    entry = name or "main.py"
    (exec_dir / entry).write_text(PRELUDE + textwrap.dedent(body))
    return exec_dir, entry


def processes_with(marker: str) -> list[int]:
    """Host pids whose command line contains `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(proc.name))
    return found
