"""The fingerprint of an action: what exactly the owner says yes to.

`action_digest` is SHA-256 over the canonical JSON of the executor, its code hash, its
(canonical, workspace-relative) arguments and the fingerprints of the files those arguments
name. Recomputed right before the run: if any of it changed since the approval, the run is
refused. Files are read the way before-manifests are (`metnos.ground.reversibility.Walker`): one
component at a time from the workspace descriptor, never following a symbolic link.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from metnos.ground.fdpaths import open_workspace
from metnos.ground.reversibility import Walker, digest


def action_digest(*, executor: str, code_sha256: str, args: dict[str, Any],
                  files: dict[str, str | None]) -> str:
    body = {"executor": executor, "code": code_sha256, "args": args, "files": files}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def fingerprint(workspace: Path, rel: str) -> str | None:
    """`<kind>:<digest of its recorded state>` (`file:…`, `dir:…` for a whole tree,
    `symlink:…`), `other` when it cannot be compared, None when it does not exist."""
    ws_fd = open_workspace(workspace)
    try:
        state = Walker().scan(ws_fd, rel)
    finally:
        os.close(ws_fd)
    if state["kind"] == "missing":
        return None
    found = digest(state)
    return f"{state['kind']}:{found}" if found else "other"
