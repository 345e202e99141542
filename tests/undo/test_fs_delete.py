"""fs_delete: its own checks (run directly, a harness) and its run in the real sandbox."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from metnos.ground import i18n
from metnos.testing.executors import direct_argv
from tests.undo.support import EXECUTORS, Actor, build_tree

ACTION = "0123456789abcdef0123456789abcdef"


def run(ws: Path, args: dict[str, Any], action_id: object = ACTION) -> dict[str, Any]:
    envelope: dict[str, Any] = {"args": args}
    if action_id is not None:
        envelope["action_id"] = action_id
    entry = EXECUTORS / "fs_delete" / "main.py"
    proc = subprocess.run(direct_argv(entry),
                          input=json.dumps(envelope).encode(), capture_output=True, cwd=ws,
                          timeout=20, env={})
    assert proc.returncode == 0, proc.stderr.decode()
    reply: dict[str, Any] = json.loads(proc.stdout)
    return reply


@pytest.mark.parametrize(("args", "action_id", "key"), [
    ({"path": "a.md"}, None, "ERR_TRASH_ACTION_ID_MISSING"),
    ({"path": "a.md"}, "../../etc", "ERR_TRASH_ACTION_ID_MISSING"),
    ({"path": "a.md"}, 42, "ERR_TRASH_ACTION_ID_MISSING"),
    ({"path": "."}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "notes/.."}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": ".trash"}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "notes/.hidden"}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "/etc/hostname"}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "../outside"}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "~/x"}, ACTION, "ERR_FILE_PATH_REFUSED"),
    ({"path": "nowhere.md"}, ACTION, "ERR_FILE_NOT_FOUND"),
    ({"path": ""}, ACTION, "ERR_EXECUTOR_ARG_INVALID"),
    ({"path": "a.md", "force": True}, ACTION, "ERR_EXECUTOR_ARG_INVALID"),
])
def test_refusals(tmp_path: Path, args: dict[str, Any], action_id: object, key: str) -> None:
    build_tree(tmp_path)
    (tmp_path / "notes" / ".hidden").write_text("h")
    reply = run(tmp_path, args, action_id)
    assert reply["ok"] is False and reply["error"]["key"] == key
    for lang in ("it", "en"):
        assert i18n.get(key, lang, **reply["error"]["vars"]) != key
    assert (tmp_path / "a.md").exists() and (tmp_path / "notes" / "n1.md").exists()
    assert not (tmp_path / ".trash").exists()


def test_moves_to_the_trash_under_the_action_id(tmp_path: Path) -> None:
    build_tree(tmp_path)
    reply = run(tmp_path, {"path": "notes/deep"})
    assert reply == {"ok": True, "result": {"path": "notes/deep", "trashed": True}}
    assert (tmp_path / ".trash" / ACTION / "notes" / "deep" / "d.md").exists()
    assert not (tmp_path / "notes" / "deep").exists()
    (tmp_path / "notes" / "deep").mkdir()
    (tmp_path / "notes" / "deep" / "d.md").write_text("again")
    assert run(tmp_path, {"path": "notes/deep"})["error"]["key"] == "ERR_FILE_EXISTS"


def test_a_link_is_trashed_as_a_link_its_target_untouched(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(outside)
    assert run(ws, {"path": "link"})["ok"] is True
    assert (ws / ".trash" / ACTION / "link").is_symlink() and outside.read_text() == "keep me"


def test_in_the_sandbox_with_the_host_action_id(actor: Actor) -> None:
    build_tree(actor.ws)
    action_id, result = actor.act("fs_delete", {"path": "photos/2024"})
    assert result.result == {"path": "photos/2024", "trashed": True}
    trashed = actor.ws / ".trash" / action_id / "photos" / "2024"
    assert sorted(p.name for p in trashed.iterdir()) == ["p1.jpg", "p2.jpg"]


def test_the_reply_names_the_action_to_undo() -> None:
    for lang, word in (("en", "trash"), ("it", "cestino")):
        text = i18n.get("EX_REPLY_fs_delete", lang, path="notes/a.md", action_id=ACTION)
        assert word in text and f"metnos undo {ACTION}" in text and "notes/a.md" in text
