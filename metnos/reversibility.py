"""Before manifests: the state a mutating action is about to change, kept outside its reach.

Before a side-effecting executor runs, the host records, for each workspace path it may write:
whether it existed, its size, its SHA-256, and a copy of its bytes (so `metnos undo` can
restore it byte for byte). The record lives under `state/before/<action_id>/`, which no sandbox
ever mounts, and is signed with the instance's audit key and dated.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class PathState:
    path: str  # workspace-relative
    existed: bool
    kind: str  # "file" | "dir" | "missing" | "other"
    size: int | None
    sha256: str | None
    snapshot: str | None  # file name of the copy inside the action's folder


def record_before(
    state_dir: Path, action_id: str, workspace: Path, executor: str,
    paths: list[str], key: Ed25519PrivateKey,
) -> dict[str, Any]:
    """Snapshot `paths` (workspace-relative, already canonicalised by the policy) and sign."""
    folder = state_dir / "before" / action_id
    folder.mkdir(parents=True, exist_ok=False, mode=0o700)
    states = [_snapshot(workspace, rel, folder, n) for n, rel in enumerate(paths)]
    manifest = {
        "action_id": action_id,
        "executor": executor,
        "created_at": datetime.now(UTC).isoformat(),
        "paths": [asdict(s) for s in states],
    }
    body = canonical(manifest)
    signed = {"manifest": manifest,
              "signature": base64.b64encode(key.sign(body)).decode("ascii")}
    tmp = folder / "manifest.json.tmp"
    tmp.write_text(json.dumps(signed, indent=2, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, folder / "manifest.json")
    return signed


def canonical(data: dict[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _snapshot(workspace: Path, rel: str, folder: Path, n: int) -> PathState:
    try:
        fd = _open_beneath(workspace, rel)
    except FileNotFoundError:
        return PathState(rel, False, "missing", None, None, None)
    except OSError:  # a symbolic link on the way (ELOOP/ENOTDIR): never followed on the host
        return PathState(rel, True, "other", None, None, None)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = "dir" if stat.S_ISDIR(st.st_mode) else "other"
        return PathState(rel, True, kind, None, None, None)
    with os.fdopen(fd, "rb") as src:
        digest = hashlib.sha256()
        snapshot = f"{n}.bin" if st.st_size <= MAX_SNAPSHOT_BYTES else None
        with contextlib.ExitStack() as stack:
            dst = stack.enter_context((folder / snapshot).open("wb")) if snapshot else None
            for chunk in iter(lambda: src.read(1 << 20), b""):
                digest.update(chunk)
                if dst is not None:
                    dst.write(chunk)
    return PathState(rel, True, "file", st.st_size, digest.hexdigest(), snapshot)


def _open_beneath(workspace: Path, rel: str) -> int:
    """Open `rel` from the workspace one component at a time without following any symbolic
    link, so a folder swapped for a link after the policy check cannot point the host's copy
    at a file outside the workspace."""
    flags = os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(workspace, os.O_PATH | os.O_DIRECTORY | flags)
    try:
        parts = [p for p in PurePosixPath(rel).parts if p not in (".", "")]
        for part in parts[:-1]:
            inner = os.open(part, os.O_PATH | os.O_DIRECTORY | flags, dir_fd=fd)
            os.close(fd)
            fd = inner
        last = parts[-1] if parts else "."
        return os.open(last, os.O_RDONLY | os.O_NONBLOCK | flags, dir_fd=fd)
    finally:
        os.close(fd)

