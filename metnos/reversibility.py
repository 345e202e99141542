"""Before manifests: the state a mutating action is about to change, kept outside its reach.

Before a side-effecting executor runs, the host records, for each workspace path it may write:
whether it existed, its size, its SHA-256, and a copy of its bytes (so `metnos undo` can
restore it byte for byte). The record lives under `state/before/<action_id>/`, which no sandbox
ever mounts, and is signed with the instance's audit key and dated.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
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
    target = workspace / rel
    try:
        st = target.lstat()
    except FileNotFoundError:
        return PathState(rel, False, "missing", None, None, None)
    if target.is_symlink() or not (target.is_file() or target.is_dir()):
        return PathState(rel, True, "other", None, None, None)
    if target.is_dir():
        return PathState(rel, True, "dir", None, None, None)
    digest = hashlib.sha256()
    snapshot = None
    if st.st_size <= MAX_SNAPSHOT_BYTES:
        snapshot = f"{n}.bin"
        with target.open("rb") as src, (folder / snapshot).open("wb") as dst:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                digest.update(chunk)
                dst.write(chunk)
    else:
        with target.open("rb") as src:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                digest.update(chunk)
    return PathState(rel, True, "file", st.st_size, digest.hexdigest(), snapshot)

