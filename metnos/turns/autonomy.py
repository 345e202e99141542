"""The facts `policy.decide` needs to let an ordinary reversible change run without a card.

`routine_step` says whether a checked step is such a change (`metnos.mechanisms.policy.routine`) and
whether its whole before-record can be kept: every path it may write is looked at now, on
the host, beneath the workspace descriptor without following links (`metnos.ground.reversibility`'s
walker, without copying). A file or a tree too big to copy whole (over
`reversibility.MAX_SNAPSHOT_BYTES` together, or a tree past `MAX_TREE_ENTRIES`), or
something that is neither a file, a folder nor a link, makes the step ask instead: its
undo could not put every byte back. The runner checks the record it then writes again
(`record_whole`), and refuses a step admitted unasked whose record came out incomplete.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metnos.ground.fdpaths import open_workspace
from metnos.ground.reversibility import MAX_SNAPSHOT_BYTES, Walker
from metnos.ground.settings import Settings
from metnos.mechanisms.executors.manifest import Manifest
from metnos.mechanisms.policy.routine import routine_change


def routine_step(settings: Settings, manifest: Manifest, args: Mapping[str, Any]) -> bool:
    """An ordinary reversible change whose whole before-record fits (see the module)."""
    if not settings.policy.reversible_without_asking:
        return False
    if not routine_change(manifest, args) or not manifest.changes(dict(args)):
        return False
    if manifest.runs_on is not None:  # another machine's files: its signed list of renames
        return True  # is the record, kept on this host before anything moves (remote.server)
    written = [str(args[name]) for name, access in manifest.path_inputs().items()
               if access == "write" and isinstance(args.get(name), str)]
    return record_fits(settings.workspace, written)


def record_fits(workspace: Path, paths: list[str], budget: int = MAX_SNAPSHOT_BYTES) -> bool:
    """Whether a before-record of `paths` would hold every byte (no copying here)."""
    walker = Walker(None, 0, hashes=False)
    try:
        fd = open_workspace(workspace)
    except OSError:
        return False
    try:
        states = [walker.scan(fd, rel) for rel in dict.fromkeys(paths)]
    except (OSError, ValueError):
        return False
    finally:
        os.close(fd)
    total = 0
    for state in states:
        if state["kind"] == "missing":
            continue
        if state["kind"] not in ("file", "dir", "symlink") or not state.get("complete", True):
            return False
        for entry in [state, *(state.get("entries") or [])]:
            if entry["kind"] == "other":
                return False
            total += entry["size"] or 0
    return total <= budget


def record_whole(signed: Mapping[str, Any]) -> bool:
    """Whether a written before-record kept every byte of what the step may change."""
    manifest = signed.get("manifest", {})
    paths = manifest.get("paths", [])
    return bool(manifest.get("copied_all")) and all(p.get("complete", True) for p in paths)
