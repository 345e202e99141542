"""Shared by the undo tests: a workspace tree, its full digest, real keys, real sandbox runs.

`Actor.act(executor, args)` does what the host does for a side-effecting step
(`metnos.turns.service._prepare_run` then `run_sandboxed`): record the before manifest of
the `access = "write"` path inputs, then run the real executor in the real bubblewrap sandbox
with the action id in its envelope.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import keys, reversibility
from metnos.ground.paths import resources_path
from metnos.mechanisms.audit import AuditLog
from metnos.mechanisms.executors.manifest import parse_manifest
from metnos.mechanisms.sandbox import SandboxRequest, SandboxResult, run_sandboxed
from metnos.mechanisms.undo import UndoReport, undo

EXECUTORS = resources_path("executors")
COPYLESS = {"fs_delete"}  # its bytes go to the trash: hashes only in the before manifest


def tree_digest(root: Path, skip: tuple[str, ...] = (".trash", ".audit")) -> dict[str, Any]:
    """Every path under `root` with its kind, mode and bytes (links: their target)."""
    out: dict[str, Any] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if rel_dir == ".":
            dirnames[:] = [d for d in dirnames if d not in skip]
        for name in sorted(dirnames + filenames):
            path = Path(dirpath, name)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                data = path.read_bytes()
                out[rel] = ("file", stat.S_IMODE(st.st_mode), hashlib.sha256(data).hexdigest())
    return out


def build_tree(ws: Path) -> None:
    """Files of several modes and contents, nested and empty folders, links in and out."""
    files = {
        "a.md": b"# A\n", "b.txt": b"\x00\x01binary\xff", "notes/n1.md": b"one",
        "notes/n2.md": b"two", "notes/deep/d.md": b"deep" * 1000,
        "photos/2024/p1.jpg": b"\xff\xd8" * 50,
        "photos/2024/p2.jpg": b"\xff\xd9" * 70, "photos/readme.md": b"photos",
    }
    for rel, data in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_bytes(data)
    (ws / "notes" / "n2.md").chmod(0o600)
    (ws / "photos" / "2024").chmod(0o750)
    (ws / "photos" / "empty").mkdir()
    (ws / "photos" / "link-in").symlink_to("2024/p1.jpg")
    (ws / "photos" / "link-out").symlink_to("/etc/hostname")


@dataclass
class Actor:
    ws: Path
    state: Path
    keys_dir: Path
    audit: AuditLog | None = None

    @property
    def private(self) -> Ed25519PrivateKey:
        return keys.load_private_key(self.keys_dir, "audit")

    @property
    def public(self) -> Ed25519PublicKey:
        return keys.load_public_key(self.keys_dir, "audit")

    def act(self, executor: str, args: dict[str, Any]) -> tuple[str, SandboxResult]:
        return asyncio.run(self.aact(executor, args))

    async def aact(self, executor: str, args: dict[str, Any]) -> tuple[str, SandboxResult]:
        folder = EXECUTORS / executor
        manifest = parse_manifest(folder / "manifest.toml")
        written = [args[n] for n, acc in manifest.path_inputs().items()
                   if acc == "write" and isinstance(args.get(n), str)]
        action_id = uuid.uuid4().hex
        reversibility.record_before(self.state, action_id, self.ws, executor, written,
                                    self.private, copy=executor not in COPYLESS)
        request = SandboxRequest(exec_dir=folder, entry=manifest.entry, profile=manifest.sandbox,
                                 workspace=self.ws, args=args, action_id=action_id)
        result = await run_sandboxed(request)
        assert result.ok, (result.error_key, result.error_vars, result.stderr_tail)
        return action_id, result

    def undo(self, action_id: str) -> UndoReport:
        return undo(action_id, state_dir=self.state, workspace=self.ws, public_key=self.public,
                    private_key=self.private, audit=self.audit)


def make_actor(tmp_path: Path) -> Actor:
    ws, state, keys_dir = tmp_path / "ws", tmp_path / "state", tmp_path / "keys"
    ws.mkdir()
    keys.ensure_keypair(keys_dir, "audit")
    audit = AuditLog(tmp_path / "audit.jsonl", tmp_path / "audit.checkpoint",
                     keys.load_private_key(keys_dir, "audit"))
    return Actor(ws, state, keys_dir, audit)


@pytest.fixture
def actor(tmp_path: Path) -> Iterator[Actor]:
    """An `Actor` on `tmp_path`, its audit log closed after the test (a fixture: the undo
    tests take it from their conftest, the tests elsewhere import it)."""
    made = make_actor(tmp_path)
    yield made
    assert made.audit is not None
    made.audit.close()


def audit_lines(actor: Actor) -> list[dict[str, Any]]:
    assert actor.audit is not None
    return actor.audit.tail(1000)
