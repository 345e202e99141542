"""Fixtures for the executor tests: real keys, real copies of the shipped executors."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground.keys import ensure_keypair, load_private_key
from metnos.ground.paths import resources_path
from metnos.ground.settings import get_settings
from metnos.testing.executors import direct_argv

REPO_EXECUTORS = resources_path("executors")
BUILTINS = (
    "fs_find", "fs_read", "fs_write", "fs_move", "fs_delete", "shell_run", "web_fetch", "i18n_lint",
    "lists", "reminder_set", "pdf_ext", "ocr", "archive", "notify", "summarize",
    "imap_status", "imap_fetch_headers", "move_messages", "photo_rename", "schedule_set",
)


@pytest.fixture
def keys_dir(tmp_path: Path) -> Path:
    path = tmp_path / "keys"
    ensure_keypair(path, "executors")
    return path


@pytest.fixture
def private_key(keys_dir: Path) -> Ed25519PrivateKey:
    return load_private_key(keys_dir, "executors")


@pytest.fixture
def executors_dir(tmp_path: Path) -> Path:
    """A copy of the shipped executors (and their lock) that a test may tamper with."""
    target = tmp_path / "executors"
    shutil.copytree(REPO_EXECUTORS, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture
def metnos_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """METNOS_HOME in a tmp dir with the executors key pair, settings re-read."""
    home = tmp_path / "home"
    ensure_keypair(home / "keys", "executors")
    monkeypatch.setenv("METNOS_HOME", str(home))
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


RunExecutor = Callable[..., dict[str, Any]]


@pytest.fixture
def run_executor(tmp_path: Path) -> RunExecutor:
    """Run an executor's main.py DIRECTLY (a test harness; production goes through bwrap)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()

    def _run(name: str, args: dict[str, Any], stdin: bytes | None = None) -> dict[str, Any]:
        entry = REPO_EXECUTORS / name / "main.py"
        payload = stdin if stdin is not None else json.dumps({"args": args}).encode()
        proc = subprocess.run(
            direct_argv(entry),
            input=payload,
            capture_output=True,
            cwd=workspace,
            timeout=20,
            env={},
        )
        assert proc.returncode == 0, proc.stderr.decode()
        reply: dict[str, Any] = json.loads(proc.stdout)
        return reply

    return _run


@pytest.fixture
def workspace(tmp_path: Path, run_executor: RunExecutor) -> Path:
    return tmp_path / "workspace"
