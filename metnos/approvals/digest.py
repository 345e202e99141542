"""The fingerprint of an action: what exactly the owner says yes to.

`action_digest` is SHA-256 over the canonical JSON of the executor, its code hash, its
(canonical, workspace-relative) arguments and the fingerprints of the files those arguments
name. Recomputed right before the run: if any of it changed since the approval, the run is
refused. Files are walked without following symbolic links.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

MAX_TREE_ENTRIES = 20_000
_CHUNK = 1 << 20


def action_digest(*, executor: str, code_sha256: str, args: dict[str, Any],
                  files: dict[str, str | None]) -> str:
    body = {"executor": executor, "code": code_sha256, "args": args, "files": files}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def fingerprint(workspace: Path, rel: str) -> str | None:
    """`file:<sha256>`, `dir:<tree sha256>`, `link:<target>`, `other`, or None when missing."""
    path = workspace / rel if rel not in ("", ".") else workspace
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return "link:" + os.readlink(path)
    if stat.S_ISREG(st.st_mode):
        return "file:" + _file_sha256(path)
    if stat.S_ISDIR(st.st_mode):
        return "dir:" + _tree_sha256(path)
    return "other"


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _tree_sha256(root: Path) -> str:
    """Every entry under `root` (relative path, kind, content hash), in a stable order."""
    digest = hashlib.sha256()
    count = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            count += 1
            if count > MAX_TREE_ENTRIES:
                digest.update(b"too-many-entries")
                return digest.hexdigest()
            full = Path(folder, name)
            rel = full.relative_to(root).as_posix()
            digest.update(f"{rel}\0{fingerprint(root, rel)}\n".encode())
        for name in dirs:
            digest.update(f"{Path(folder, name).relative_to(root).as_posix()}/\n".encode())
    return digest.hexdigest()
