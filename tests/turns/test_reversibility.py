"""Before manifests: what a mutating action is about to change, copied and signed."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.reversibility import canonical, record_before


def test_snapshot_of_files_dirs_and_missing_paths_is_signed(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "a.md").write_bytes(b"old \x00 bytes")
    key = Ed25519PrivateKey.generate()
    signed = record_before(state, "act1", ws, "fs_write", ["notes/a.md", "notes", "new.md"], key)
    states = {s["path"]: s for s in signed["manifest"]["paths"]}
    assert states["notes/a.md"]["kind"] == "file" and states["notes/a.md"]["size"] == 11
    assert (state / "before" / "act1" / states["notes/a.md"]["snapshot"]).read_bytes() == (
        b"old \x00 bytes")
    assert states["notes"]["kind"] == "dir" and states["new.md"]["existed"] is False
    key.public_key().verify(base64.b64decode(signed["signature"]),
                            canonical(signed["manifest"]))
    on_disk = json.loads((state / "before" / "act1" / "manifest.json").read_text())
    assert on_disk == signed


def test_a_folder_swapped_for_a_link_is_not_followed_on_the_host(tmp_path: Path) -> None:
    ws, state, outside = tmp_path / "ws", tmp_path / "state", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY")
    (ws / "docs").symlink_to(outside)  # swapped in after the policy check
    signed = record_before(state, "act2", ws, "fs_write", ["docs/id_rsa"],
                           Ed25519PrivateKey.generate())
    [entry] = signed["manifest"]["paths"]
    assert entry["kind"] == "other" and entry["snapshot"] is None
    assert not any(b"PRIVATE" in p.read_bytes() for p in (state / "before" / "act2").iterdir())
