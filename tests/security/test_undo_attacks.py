"""Attacks on reversibility (issue 3, SPEC §5): the before manifests, the trash and `undo`.

Each attack has its expected outcome: a tampered or foreign record is refused before any file
changes; a symlink planted where a restore would read or write never makes the host touch
anything outside the workspace; no executor can even see `state/before`; tampered trash
content is never restored as if it were the original.
"""

from __future__ import annotations

import asyncio
import base64
import json
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground import reversibility
from metnos.mechanisms.sandbox import SandboxProfile, SandboxRequest, run_sandboxed
from metnos.mechanisms.undo import UndoError, UndoItem
from tests.undo.support import Actor, actor, audit_lines, build_tree, tree_digest

__all__ = ["actor"]  # the fixture, imported for this module


def _manifest_path(actor: Actor, action_id: str) -> Path:
    return actor.state / "before" / action_id / "manifest.json"


def _restored_over(actor: Actor, link: Callable[[Path, Path], None],
                   target: Path) -> UndoItem:
    """Undo a write to a.md after a.md was replaced by a `link` to `target`: restored."""
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_write", {"path": "a.md", "content": "new"})
    (actor.ws / "a.md").unlink()
    link(actor.ws / "a.md", target)
    [item] = actor.undo(action_id).items
    assert item.status == "restored" and (actor.ws / "a.md").read_bytes() == b"# A\n"
    return item


def _refused(actor: Actor, action_id: str, key: str) -> None:
    before = tree_digest(actor.ws, skip=())
    with pytest.raises(UndoError) as exc:
        actor.undo(action_id)
    assert exc.value.key == key
    assert tree_digest(actor.ws, skip=()) == before  # nothing moved
    last = audit_lines(actor)[-1]
    assert (last["action"], last["decision"], last["reason"]) == ("undo", "deny", key)


def _edit(actor: Actor, action_id: str, change: object) -> None:
    path = _manifest_path(actor, action_id)
    doc = json.loads(path.read_text())
    change(doc)  # type: ignore[operator]
    path.write_text(json.dumps(doc))


def _sign(doc: dict, key: Ed25519PrivateKey) -> None:
    doc["signature"] = base64.b64encode(
        key.sign(reversibility.canonical(doc["manifest"]))).decode()


@pytest.mark.attack
@pytest.mark.parametrize("tamper", ["hash", "unsigned", "other_key", "path_escape_resigned",
                                    "other_action", "truncated"])
def test_a_tampered_before_manifest_is_refused(actor: Actor, tamper: str) -> None:
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_delete", {"path": "notes"})
    other_id, _ = actor.act("fs_delete", {"path": "a.md"})

    def hash_(doc: dict) -> None:
        doc["manifest"]["paths"][0]["entries"][0]["sha256"] = "0" * 64

    def unsigned(doc: dict) -> None:
        del doc["signature"]

    def other_key(doc: dict) -> None:
        doc["manifest"]["paths"][0]["path"] = "photos"
        _sign(doc, Ed25519PrivateKey.generate())

    def path_escape_resigned(doc: dict) -> None:  # even our own key never writes outside
        doc["manifest"]["paths"][0]["path"] = "../outside"
        _sign(doc, actor.private)

    def other_action(doc: dict) -> None:  # a valid record, of another action
        doc.update(json.loads(_manifest_path(actor, other_id).read_text()))

    if tamper == "truncated":
        path = _manifest_path(actor, action_id)
        path.write_bytes(path.read_bytes()[:200])
    else:
        _edit(actor, action_id, {"hash": hash_, "unsigned": unsigned, "other_key": other_key,
                                 "path_escape_resigned": path_escape_resigned,
                                 "other_action": other_action}[tamper])
    _refused(actor, action_id, "ERR_UNDO_MANIFEST_INVALID")
    assert not (actor.ws / "notes").exists()


@pytest.mark.attack
def test_a_symlink_planted_on_the_restore_path_writes_nothing_outside(
        actor: Actor, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "n1.md").write_text("victim")
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_delete", {"path": "notes/n1.md"})
    (actor.ws / "notes").rename(actor.ws / "notes-real")
    (actor.ws / "notes").symlink_to(outside)  # the restore would write through it
    report = actor.undo(action_id)
    [item] = report.items
    assert (item.status, item.key) == ("failed", "ERR_UNDO_PATH_UNREACHABLE")
    assert sorted(p.name for p in outside.iterdir()) == ["n1.md"]
    assert (outside / "n1.md").read_text() == "victim"
    assert (actor.ws / ".trash" / action_id / "notes" / "n1.md").read_bytes() == b"one"


@pytest.mark.attack
def test_a_symlink_at_the_restored_path_is_moved_aside_not_followed(
        actor: Actor, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("victim")
    item = _restored_over(actor, Path.symlink_to, outside)
    assert not (actor.ws / "a.md").is_symlink() and outside.read_text() == "victim"
    assert (actor.ws / str(item.displaced_to)).is_symlink()  # the link itself, kept


@pytest.mark.attack
def test_a_trash_symlinked_outside_is_neither_read_nor_written(
        actor: Actor, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_delete", {"path": "b.txt"})
    new_id, _ = actor.act("fs_write", {"path": "c.md", "content": "c"})
    (actor.ws / ".trash").rename(tmp_path / "real-trash")
    forged = outside / action_id
    forged.mkdir(parents=True)
    (forged / "b.txt").write_bytes(b"\x00\x01binary\xff")  # right bytes, wrong place
    (actor.ws / ".trash").symlink_to(outside)
    report = actor.undo(action_id)
    assert report.outcome == "failed" and not (actor.ws / "b.txt").exists()
    assert (forged / "b.txt").exists()  # not taken from outside
    created = actor.undo(new_id)  # c.md must go to the trash: the trash is a link
    assert created.outcome == "failed" and (actor.ws / "c.md").read_text() == "c"
    assert sorted(p.name for p in outside.iterdir()) == [action_id]


@pytest.mark.attack
def test_an_executor_cannot_see_the_before_manifests(actor: Actor, tmp_path: Path) -> None:
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_write", {"path": "a.md", "content": "secret-free"})
    state = actor.state.resolve()
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "main.py").write_text(textwrap.dedent(f"""
        import json, os
        seen = {{}}
        for p in [{str(state)!r}, {str(state / "before" / action_id)!r},
                  "../state", "../../state/before", "/home/metnos/state",
                  {str(actor.state.parent)!r}, "."]:
            try:
                seen[p] = sorted(os.listdir(p))
            except OSError as exc:
                seen[p] = exc.__class__.__name__
        print(json.dumps({{"ok": True, "result": {{"seen": seen}}}}))
    """))
    profile = SandboxProfile(read=("workspace",), write=("workspace",))
    result = asyncio.run(run_sandboxed(SandboxRequest(
        exec_dir=probe, entry="main.py", profile=profile, workspace=actor.ws)))
    assert result.ok, result.stderr_tail
    seen = (result.result or {})["seen"]
    assert "a.md" in seen.pop(".")  # the probe works: it sees its workspace
    assert all(v == "FileNotFoundError" for v in seen.values()), seen  # and nothing else


@pytest.mark.attack
@pytest.mark.parametrize("copies", [False, True])
def test_tampered_trash_content_is_never_restored_as_the_original(
        actor: Actor, copies: bool) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    action_id, _ = actor.act("fs_delete", {"path": "photos"})
    if copies:  # the same action recorded with snapshot copies (fs_move-style)
        folder = actor.state / "before" / action_id
        for child in sorted(folder.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        folder.rmdir()
        trash = actor.ws / ".trash" / action_id / "photos"
        trash.rename(actor.ws / "photos")
        reversibility.record_before(actor.state, action_id, actor.ws, "fs_delete",
                                    ["photos"], actor.private, copy=True)
        trash.parent.mkdir(parents=True, exist_ok=True)
        (actor.ws / "photos").rename(trash)
    tampered = actor.ws / ".trash" / action_id / "photos" / "2024" / "p1.jpg"
    tampered.write_bytes(b"\xff\xd8" * 49 + b"!!")  # same size, other bytes
    (tampered.parent / "planted.sh").write_text("rm -rf ~")
    report = actor.undo(action_id)
    [item] = report.items
    if copies:
        assert report.outcome == "done" and item.status == "restored"
        assert tree_digest(actor.ws) == original
    else:
        assert (item.status, item.key) == ("failed", "ERR_UNDO_SOURCE_MISSING")
        assert "photos/2024/p1.jpg" in item.vars["files"]
        assert not (actor.ws / "photos" / "2024" / "p1.jpg").exists()
        expected = {k: v for k, v in original.items() if k != "photos/2024/p1.jpg"}
        assert tree_digest(actor.ws) == expected
    assert not (actor.ws / "photos" / "2024" / "planted.sh").exists()
    assert tampered.exists()  # the tampered copy stays in the trash, as found


@pytest.mark.attack
def test_a_hard_link_at_the_restored_path_never_gets_written_through(
        actor: Actor, tmp_path: Path) -> None:
    secret = tmp_path / "secret.key"
    secret.write_text("KEY MATERIAL")
    _restored_over(actor, Path.hardlink_to, secret)  # the restore must not write into it
    assert secret.read_text() == "KEY MATERIAL"
    assert (actor.ws / "a.md").stat().st_ino != secret.stat().st_ino
