"""What a sandbox run is asked to do (`SandboxRequest`) and what came of it (`SandboxResult`)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from metnos.mechanisms.sandbox.profile import SandboxProfile

_ACTION_ID_RE = re.compile(r"[A-Za-z0-9_-]{0,128}")


@dataclass(frozen=True, slots=True)
class SandboxRequest:
    """One executor run: its folder and entry file, its profile, the workspace and arguments.

    `action_id` reaches the executor in its stdin envelope (`{"args": ..., "action_id": ...}`;
    fs_delete names its trash folder after it): letters, digits, `-` and `_` only, at most 128.
    `account` (a manifest's `account = "imap"`: host, port, security, username, password)
    is added to the envelope only when set; it holds a credential, so it is never in the
    repr, the arguments, the audit or a log line.
    `max_output_bytes` caps stdout; `max_processes` bounds the tasks of the run's pid namespace
    (threads included; RLIMIT_NPROC too, see `_process` and `_watchdog`); `max_file_bytes`
    becomes RLIMIT_FSIZE; `bwrap` overrides the bwrap binary.
    """

    exec_dir: Path
    entry: str
    profile: SandboxProfile
    workspace: Path
    args: dict[str, Any] = field(default_factory=dict)
    max_output_bytes: int = 1_000_000
    max_processes: int = 64
    max_file_bytes: int = 1 << 30
    bwrap: Path | None = None
    action_id: str = ""
    account: dict[str, Any] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not _ACTION_ID_RE.fullmatch(self.action_id):
            raise ValueError(f"action_id must match {_ACTION_ID_RE.pattern}: {self.action_id!r}")
        if self.max_processes < 2:
            raise ValueError("max_processes counts bwrap's init too: at least 2")


@dataclass(frozen=True, slots=True)
class SandboxResult:
    """The outcome. `ok` with `result`, or an i18n `error_key` with `error_vars`.

    `spawn_s` is the time until the process object existed; `duration_s` the whole run.
    """

    ok: bool
    result: dict[str, Any] | None = None
    error_key: str | None = None
    error_vars: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    duration_s: float = 0.0
    spawn_s: float = 0.0
    stderr_tail: str = ""

    @classmethod
    def failure(cls, key: str, error_vars: dict[str, Any], started: float) -> SandboxResult:
        """A run that failed before any process existed."""
        return cls(
            ok=False, error_key=key, error_vars=error_vars, duration_s=time.monotonic() - started
        )
