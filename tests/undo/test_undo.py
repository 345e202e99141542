"""Undo on real files: real executors in the real sandbox, real keys, full tree digests."""

from __future__ import annotations

import json

import pytest

from metnos.ground import reversibility
from metnos.mechanisms.undo import UndoError
from tests.undo.support import Actor, audit_lines, build_tree, tree_digest


def test_rename_batch_then_undo_gives_a_byte_identical_tree(actor: Actor) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    moves = [("a.md", "A renamed.md"), ("b.txt", "bin/b.bin"), ("notes/n2.md", "n2.md"),
             ("photos", "archive/2024/photos"), ("notes", "archive/notes")]
    ids = [actor.act("fs_move", {"src": src, "dst": dst})[0] for src, dst in moves]
    moved = tree_digest(actor.ws)
    assert moved != original and "archive/2024/photos/link-out" in moved
    for action_id in reversed(ids):
        report = actor.undo(action_id)
        assert report.outcome == "done", report.message("en")
    assert tree_digest(actor.ws) == original
    assert not (actor.ws / "archive").exists() and not (actor.ws / "bin").exists()
    # the folders the moves created went to the trash (empty), never deleted
    assert list((actor.ws / ".trash").glob("undo-*/archive"))
    lines = [ln for ln in audit_lines(actor) if ln["action"] == "undo"]
    assert [(ln["action_id"], ln["outcome"]) for ln in lines] == [
        (i, "done") for i in reversed(ids)]


def test_a_folder_move_goes_back_by_rename_even_without_copies(actor: Actor) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    inode = (actor.ws / "photos" / "2024" / "p1.jpg").stat().st_ino
    action_id, _ = actor.act("fs_move", {"src": "photos", "dst": "old/photos"})
    manifest = json.loads((actor.state / "before" / action_id / "manifest.json").read_text())
    [photos] = [s for s in manifest["manifest"]["paths"] if s["path"] == "photos"]
    assert photos["kind"] == "dir" and {e["path"] for e in photos["entries"]} >= {
        "2024", "2024/p1.jpg", "empty", "link-in", "link-out", "readme.md"}
    assert {s["path"]: s["kind"] for s in manifest["manifest"]["paths"]} == {
        "photos": "dir", "old/photos": "missing", "old": "missing"}
    report = actor.undo(action_id)
    assert report.outcome == "done"
    assert {i.path: (i.status, i.source) for i in report.items}["photos"] == (
        "moved_back", "old/photos")
    assert tree_digest(actor.ws) == original
    assert (actor.ws / "photos" / "2024" / "p1.jpg").stat().st_ino == inode  # a rename


def test_fs_delete_then_undo_restores_file_and_folder(actor: Actor) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    file_id, result = actor.act("fs_delete", {"path": "notes/n2.md"})
    assert result.result == {"path": "notes/n2.md", "trashed": True}
    assert (actor.ws / ".trash" / file_id / "notes" / "n2.md").read_bytes() == b"two"
    dir_id, _ = actor.act("fs_delete", {"path": "photos"})
    assert not (actor.ws / "photos").exists()
    manifest = json.loads((actor.state / "before" / dir_id / "manifest.json").read_text())
    assert manifest["manifest"]["copies"] is False
    assert not (actor.state / "before" / dir_id / "blobs").exists()  # hashes only
    assert actor.undo(dir_id).outcome == "done"
    report = actor.undo(file_id)
    assert [(i.status, i.source) for i in report.items] == [
        ("moved_back", f".trash/{file_id}/notes/n2.md")]
    assert tree_digest(actor.ws) == original


def test_write_then_undo_keeps_the_written_version_in_the_trash(actor: Actor) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    over, _ = actor.act("fs_write", {"path": "notes/n2.md", "content": "overwritten"})
    new, _ = actor.act("fs_write", {"path": "new/deeper/x.md", "content": "x"})
    assert actor.undo(new).outcome == "done"
    report = actor.undo(over)
    [item] = report.items
    assert item.status == "restored" and item.displaced_to
    assert (actor.ws / item.displaced_to).read_text() == "overwritten"
    assert "overwritten" not in (actor.ws / "notes" / "n2.md").read_text()
    assert tree_digest(actor.ws) == original
    assert "notes/n2.md" in report.message("en") and "trash" in report.message("en")


def test_changed_since_the_action_is_trashed_then_restored_from_the_snapshot(
        actor: Actor) -> None:
    build_tree(actor.ws)
    original = tree_digest(actor.ws)
    action_id, _ = actor.act("fs_move", {"src": "notes", "dst": "kept"})
    (actor.ws / "kept" / "n1.md").write_bytes(b"ONE")  # same size, other bytes
    (actor.ws / "kept" / "added.md").write_text("later")
    report = actor.undo(action_id)
    assert report.outcome == "done", report.message("en")
    by_path = {i.path: i for i in report.items}
    assert by_path["notes"].status == "restored"
    assert by_path["kept"].status == "trashed"
    assert tree_digest(actor.ws) == original
    kept = actor.ws / str(by_path["kept"].displaced_to)  # nothing lost
    assert (kept / "n1.md").read_bytes() == b"ONE" and (kept / "added.md").read_text() == "later"


def test_an_undo_can_be_undone_and_is_done_once(actor: Actor) -> None:
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_delete", {"path": "notes"})
    after_delete = tree_digest(actor.ws)
    report = actor.undo(action_id)
    assert report.message("en").startswith(f"Action {action_id} undone.")
    with pytest.raises(UndoError) as twice:
        actor.undo(action_id)
    assert twice.value.key == "ERR_UNDO_ALREADY_DONE"
    again = actor.undo(report.undo_id)
    assert again.outcome == "done"
    assert tree_digest(actor.ws) == after_delete
    assert (actor.ws / ".trash" / action_id / "notes" / "n1.md").read_bytes() == b"one"
    lines = [(ln["action_id"], ln["decision"], ln["outcome"], ln["reason"])
             for ln in audit_lines(actor) if ln["action"] == "undo"]
    assert lines == [(action_id, "allow", "done", "ok"),
                     (action_id, "deny", "refused", "ERR_UNDO_ALREADY_DONE"),
                     (report.undo_id, "allow", "done", "ok")]


@pytest.mark.parametrize("action_id", ["0" * 32, "../keys", "", "a/b"])
def test_unknown_ids_are_not_found_with_one_audit_line(actor: Actor, action_id: str) -> None:
    with pytest.raises(UndoError) as exc:
        actor.undo(action_id)
    assert exc.value.key == "ERR_UNDO_NOT_FOUND"
    [line] = audit_lines(actor)
    assert (line["action"], line["decision"], line["reason"]) == (
        "undo", "deny", "ERR_UNDO_NOT_FOUND")


def test_a_missing_copy_makes_the_undo_fail_without_losing_anything(actor: Actor) -> None:
    (actor.ws / "big.bin").write_bytes(b"x" * 1000)
    action_id = "cap1"
    reversibility.record_before(actor.state, action_id, actor.ws, "fs_write", ["big.bin"],
                                actor.private, max_copy_bytes=10)
    (actor.ws / "big.bin").write_bytes(b"changed")
    report = actor.undo(action_id)
    [item] = report.items
    assert (report.outcome, item.status, item.key) == (
        "failed", "failed", "ERR_UNDO_SOURCE_MISSING")
    assert (actor.ws / str(item.displaced_to)).read_bytes() == b"changed"
    assert "only partly" in report.message("en")
    assert not (actor.state / "before" / action_id / "undone.json").exists()  # may retry


def test_an_action_with_nothing_recorded_is_not_undone(actor: Actor) -> None:
    reversibility.record_before(actor.state, "nopaths", actor.ws, "shell_run", [],
                                actor.private)
    with pytest.raises(UndoError) as exc:
        actor.undo("nopaths")
    assert exc.value.key == "ERR_UNDO_NOTHING_RECORDED"


def test_a_record_cut_short_is_never_trusted(actor: Actor,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    build_tree(actor.ws)
    monkeypatch.setattr(reversibility, "MAX_TREE_ENTRIES", 3)
    reversibility.record_before(actor.state, "cut", actor.ws, "fs_delete", ["photos"],
                                actor.private)
    (actor.ws / "photos" / "readme.md").write_text("changed")
    report = actor.undo("cut")
    [item] = report.items
    assert (item.status, item.key) == ("failed", "ERR_UNDO_RECORD_INCOMPLETE")
    assert (actor.ws / "photos" / "readme.md").read_text() == "changed"  # left alone


def test_undoing_the_undo_of_a_write_brings_the_written_version_back(actor: Actor) -> None:
    build_tree(actor.ws)
    action_id, _ = actor.act("fs_write", {"path": "notes/n1.md", "content": "written"})
    after_write = tree_digest(actor.ws)
    first = actor.undo(action_id)
    assert (actor.ws / "notes" / "n1.md").read_text() == "one"
    manifest = json.loads((actor.state / "before" / first.undo_id / "manifest.json").read_text())
    assert manifest["manifest"]["undoes"] == action_id and manifest["manifest"]["copies"] is False
    second = actor.undo(first.undo_id)
    assert second.outcome == "done"
    assert [(i.path, i.status, i.source) for i in second.items] == [
        ("notes/n1.md", "moved_back", f".trash/undo-{first.undo_id}/notes/n1.md")]
    assert tree_digest(actor.ws) == after_write
