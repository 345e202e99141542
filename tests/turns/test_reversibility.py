"""Before manifests: what a mutating action is about to change, copied and signed."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import reversibility
from metnos.ground.reversibility import canonical, record_before


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


def test_a_folder_is_recorded_as_a_tree_links_as_links(tmp_path: Path) -> None:
    ws, state, outside = tmp_path / "ws", tmp_path / "state", tmp_path / "outside"
    (ws / "docs" / "sub").mkdir(parents=True)
    (ws / "docs" / "empty").mkdir()
    (ws / "docs" / "sub" / "x.md").write_bytes(b"x" * 10)
    (ws / "docs" / "sub" / "x.md").chmod(0o640)
    (ws / "docs" / "dup.md").write_bytes(b"x" * 10)
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY")
    (ws / "docs" / "key").symlink_to(outside / "id_rsa")
    (ws / "docs" / "keys").symlink_to(outside)
    signed = record_before(state, "act3", ws, "fs_move", ["docs", "new/deeper/docs"],
                           Ed25519PrivateKey.generate())
    states = {s["path"]: s for s in signed["manifest"]["paths"]}
    assert set(states) == {"docs", "new/deeper/docs", "new"}  # + the topmost missing folder
    assert states["new"]["kind"] == "missing" and states["new"]["digest"]
    entries = {e["path"]: e for e in states["docs"]["entries"]}
    assert sorted(entries) == ["dup.md", "empty", "key", "keys", "sub", "sub/x.md"]
    assert entries["sub/x.md"]["mode"] == 0o640 and entries["empty"]["kind"] == "dir"
    assert entries["key"] == {**entries["key"], "kind": "symlink", "snapshot": None,
                              "target": str(outside / "id_rsa")}
    assert entries["dup.md"]["snapshot"] == entries["sub/x.md"]["snapshot"]  # one copy
    folder = state / "before" / "act3"
    assert [p.name for p in (folder / "blobs").iterdir()] == [entries["dup.md"]["sha256"]]
    assert not any(b"PRIVATE" in p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert states["docs"]["digest"] == reversibility.digest(states["docs"])


def test_copy_false_and_the_copy_cap_keep_hashes_only(tmp_path: Path) -> None:
    ws, state = tmp_path / "ws", tmp_path / "state"
    ws.mkdir()
    (ws / "small.md").write_bytes(b"s")
    (ws / "big.md").write_bytes(b"b" * 100)
    key = Ed25519PrivateKey.generate()
    signed = record_before(state, "nocopy", ws, "fs_delete", ["small.md"], key, copy=False)
    assert signed["manifest"]["copies"] is False
    assert signed["manifest"]["paths"][0]["sha256"] and not (state / "before/nocopy/blobs").exists()
    capped = record_before(state, "capped", ws, "fs_write", ["big.md", "small.md"], key,
                           max_copy_bytes=50)
    snaps = {s["path"]: s["snapshot"] for s in capped["manifest"]["paths"]}
    assert snaps["big.md"] is None and snaps["small.md"]
    assert capped["manifest"]["copied_all"] is False


def test_unsafe_ids_and_paths_are_refused(tmp_path: Path) -> None:
    key = Ed25519PrivateKey.generate()
    (tmp_path / "ws").mkdir()
    for bad in ("../x", "", "a/b"):
        with pytest.raises(ValueError):
            record_before(tmp_path / "state", bad, tmp_path / "ws", "x", [], key)
    with pytest.raises(ValueError):
        record_before(tmp_path / "state", "ok1", tmp_path / "ws", "x", ["../etc"], key)
