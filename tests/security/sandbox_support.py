"""Helpers of the sandbox attacks: host process scans, the runner in a child process (to be
SIGKILLed like a gateway), and the runner under a pseudo-terminal (TIOCSTI)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.sandbox._helpers import processes_with

__all__ = ["REPO", "descendants", "live", "processes_with", "run_in_child", "run_under_pty"]

REPO = Path(__file__).resolve().parents[2]

_CHILD = r"""
import asyncio, json, sys
from pathlib import Path
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed
p = json.load(sys.stdin)  # not in argv: a marker in the args must not match this process
request = SandboxRequest(
    exec_dir=Path(p["exec_dir"]), entry="main.py", profile=SandboxProfile(**p["profile"]),
    workspace=Path(p["workspace"]), args=p["args"], bwrap=Path(p["bwrap"]),
)
result = asyncio.run(run_sandboxed(request))
"""

_PTY_CHILD = r"""
import asyncio, fcntl, json, os, select, sys, termios, tty
from pathlib import Path
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed
p = json.loads(sys.argv[1])
fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty becomes this "gateway"'s controlling terminal
tty.setraw(0)  # injected characters are readable at once, without a newline
def pending():
    got = b""
    while select.select([0], [], [], 0.2)[0]:
        got += os.read(0, 1024)
    return got.decode("utf-8", "replace")
try:
    fcntl.ioctl(0, termios.TIOCSTI, b"C")
    control = pending()
except OSError as exc:
    control = str(exc)
request = SandboxRequest(
    exec_dir=Path(p["exec_dir"]), entry="main.py", profile=SandboxProfile(),
    workspace=Path(p["workspace"]), args={"op": "tiocsti", "text": p["text"]},
    bwrap=Path(p["bwrap"]),
)
res = asyncio.run(run_sandboxed(request))
report = {"control": control, "result": res.result, "error": res.error_key, "after": pending()}
Path(p["out"]).write_text(json.dumps(report))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def run_in_child(
    exec_dir: Path, workspace: Path, bwrap: Path, args: dict[str, Any], timeout_s: float
) -> subprocess.Popen[bytes]:
    """Start a Python process that runs one sandboxed executor (a stand-in for the gateway)."""
    params = {
        "exec_dir": str(exec_dir), "workspace": str(workspace), "bwrap": str(bwrap),
        "args": args, "profile": {"timeout_s": timeout_s},
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD], cwd=REPO, env=_env(), stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(params).encode())
    proc.stdin.close()
    return proc


def run_under_pty(tmp_path: Path, exec_dir: Path, bwrap: Path, text: str) -> dict[str, Any]:
    """Run the attacker's TIOCSTI op from a process whose controlling terminal is a pty."""
    workspace = tmp_path / "pty_ws"
    workspace.mkdir()
    out = tmp_path / "pty_report.json"
    params = {"exec_dir": str(exec_dir), "workspace": str(workspace), "bwrap": str(bwrap),
              "text": text, "out": str(out)}
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _PTY_CHILD, json.dumps(params)], cwd=REPO, env=_env(),
        stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        proc.wait(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    assert out.exists(), seen.decode("utf-8", "replace")[-2000:]
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time), None when gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else fields[19]


def descendants(pid: int) -> dict[int, str]:
    """Every live descendant of `pid`, with its start time (so a reused pid is not confused)."""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                started = _start_time(child)
                if started is not None and child not in found:
                    found[child] = started
                    todo.append(child)
    return found


def live(processes: dict[int, str]) -> list[int]:
    """The pids of `processes` still running (same start time, not a zombie)."""
    return [pid for pid, started in processes.items() if _start_time(pid) == started]
