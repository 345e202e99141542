"""The four file executors, run directly as `python -I -S -B main.py` in a tmp workspace.

This is a test harness for the executors' own logic and their second layer of path checks;
in production they only ever run inside the bubblewrap sandbox.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from metnos.ground import i18n
from tests.executors.conftest import RunExecutor


def _error(reply: dict[str, object]) -> tuple[str, dict[str, object]]:
    assert reply["ok"] is False, reply
    error = reply["error"]
    assert isinstance(error, dict)
    for lang in ("it", "en"):  # every key the executors emit has a message
        assert i18n.get(error["key"], lang, **error["vars"]) != error["key"]
    return error["key"], error["vars"]


@pytest.fixture
def tree(workspace: Path) -> Path:
    for rel, text in {
        "a.md": "# A\n",
        "notes/b.MD": "b",
        "notes/deep/c.md": "c",
        "notes/d.txt": "d",
        ".audit/log.jsonl": "{}",
        "notes/.hidden.md": "h",
        "x.pdf": "%PDF",
    }.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    return workspace


@pytest.mark.usefixtures("tree")
def test_fs_find(run_executor: RunExecutor) -> None:
    reply = run_executor("fs_find", {"pattern": "*.md"})
    assert reply == {
        "ok": True,
        "result": {"files": ["a.md", "notes/b.MD", "notes/deep/c.md"], "truncated": False},
    }
    everything = run_executor("fs_find", {})["result"]["files"]
    assert everything == ["a.md", "notes/b.MD", "notes/d.txt", "notes/deep/c.md", "x.pdf"]
    assert not any(".audit" in f or "hidden" in f for f in everything)
    sub = run_executor("fs_find", {"path": "notes", "pattern": "*.md", "limit": 1})["result"]
    assert sub == {"files": ["notes/b.MD"], "truncated": True}
    nested = run_executor("fs_find", {"pattern": "deep/*.md", "path": "notes"})["result"]
    assert nested["files"] == ["notes/deep/c.md"]


@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"path": "nowhere"}, "ERR_FILE_NOT_FOUND"),
        ({"path": "a.md"}, "ERR_FILE_NOT_DIRECTORY"),
        ({"path": "../"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "/etc"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": ".audit"}, "ERR_FILE_PATH_REFUSED"),
        ({"pattern": "../*"}, "ERR_EXECUTOR_ARG_INVALID"),
        ({"limit": "ten"}, "ERR_EXECUTOR_ARG_INVALID"),
        ({"surprise": 1}, "ERR_EXECUTOR_ARG_INVALID"),
    ],
)
def test_fs_find_errors(run_executor: RunExecutor, args: dict[str, object], key: str) -> None:
    assert _error(run_executor("fs_find", args))[0] == key


@pytest.mark.usefixtures("tree")
def test_fs_read(run_executor: RunExecutor, workspace: Path) -> None:
    reply = run_executor("fs_read", {"path": "a.md"})
    assert reply == {
        "ok": True,
        "result": {"path": "a.md", "content": "# A\n", "truncated": False, "size": 4},
    }
    (workspace / "long.md").write_text("è" * 10)  # 20 bytes of UTF-8
    cut = run_executor("fs_read", {"path": "long.md", "max_bytes": 5})["result"]
    assert cut == {"path": "long.md", "content": "èè", "truncated": True, "size": 20}


@pytest.mark.usefixtures("tree")
@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"path": "missing.md"}, "ERR_FILE_NOT_FOUND"),
        ({"path": "../x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "notes/../../x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "/etc/passwd"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "~/.ssh/id_rsa"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": ".audit/log.jsonl"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "outside_link"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "bin.dat"}, "ERR_FILE_NOT_TEXT"),
        ({"path": "notes"}, "ERR_FILE_IS_DIRECTORY"),
        ({}, "ERR_EXECUTOR_ARG_INVALID"),
    ],
)
def test_fs_read_errors(
    run_executor: RunExecutor, workspace: Path, args: dict[str, object], key: str
) -> None:
    (workspace / "bin.dat").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (workspace / "outside_link").symlink_to("/etc/hostname")
    assert _error(run_executor("fs_read", args))[0] == key


def test_bad_request(run_executor: RunExecutor) -> None:
    for stdin in (b"not json", b"[1]", b'{"args": 3}'):
        assert _error(run_executor("fs_read", {}, stdin=stdin))[0] == "ERR_EXECUTOR_INPUT_INVALID"


def test_fs_write(run_executor: RunExecutor, workspace: Path) -> None:
    reply = run_executor("fs_write", {"path": "new/dir/n.md", "content": "ciao è"})
    assert reply == {
        "ok": True,
        "result": {"path": "new/dir/n.md", "bytes_written": 7, "created": True},
    }
    target = workspace / "new" / "dir" / "n.md"
    assert target.read_text() == "ciao è"
    target.chmod(0o600)
    again = run_executor("fs_write", {"path": "new/dir/n.md", "content": "+1", "mode": "append"})
    assert again["result"] == {"path": "new/dir/n.md", "bytes_written": 3, "created": False}
    assert target.read_text() == "ciao è\n+1"  # appended on a line of its own
    assert (target.stat().st_mode & 0o777) == 0o600  # the mode survives the atomic replace
    run_executor("fs_write", {"path": "new/dir/n.md", "content": "over"})
    assert target.read_text() == "over"
    assert os.listdir(target.parent) == ["n.md"]  # no temporary file left behind


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"path": "../x.md", "content": "x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "/tmp/x.md", "content": "x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": ".audit/log.jsonl", "content": "x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "link/x.md", "content": "x"}, "ERR_FILE_PATH_REFUSED"),
        ({"path": "d", "content": "x"}, "ERR_FILE_IS_DIRECTORY"),
        ({"path": "f.md/x.md", "content": "x"}, "ERR_FILE_NOT_DIRECTORY"),
        ({"path": "x.md"}, "ERR_EXECUTOR_ARG_INVALID"),
        ({"path": "x.md", "content": "x", "mode": "truncate"}, "ERR_EXECUTOR_ARG_INVALID"),
    ],
)
def test_fs_write_errors(
    run_executor: RunExecutor, workspace: Path, tmp_path: Path, args: dict[str, object], key: str
) -> None:
    (workspace / "d").mkdir()
    (workspace / "f.md").write_text("f")
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    assert _error(run_executor("fs_write", args))[0] == key
    assert list(outside.iterdir()) == []
    assert (workspace / "f.md").read_text() == "f"


def test_fs_move(run_executor: RunExecutor, workspace: Path) -> None:
    (workspace / "a.md").write_text("a")
    reply = run_executor("fs_move", {"src": "a.md", "dst": "archive/2024/a.md"})
    assert reply == {"ok": True, "result": {"src": "a.md", "dst": "archive/2024/a.md"}}
    assert not (workspace / "a.md").exists()
    assert (workspace / "archive/2024/a.md").read_text() == "a"
    folder = run_executor("fs_move", {"src": "archive", "dst": "old"})
    assert folder["ok"] and (workspace / "old/2024/a.md").exists()


@pytest.mark.parametrize(
    ("args", "key"),
    [
        ({"src": "missing.md", "dst": "z.md"}, "ERR_FILE_NOT_FOUND"),
        ({"src": "a.md", "dst": "b.md"}, "ERR_FILE_EXISTS"),
        ({"src": "a.md", "dst": "../a.md"}, "ERR_FILE_PATH_REFUSED"),
        ({"src": "/etc/hostname", "dst": "h"}, "ERR_FILE_PATH_REFUSED"),
        ({"src": "d", "dst": "d/inner"}, "ERR_FILE_PATH_REFUSED"),
        ({"src": "a.md", "dst": "."}, "ERR_FILE_PATH_REFUSED"),
        ({"src": "a.md"}, "ERR_EXECUTOR_ARG_INVALID"),
    ],
)
def test_fs_move_errors(
    run_executor: RunExecutor, workspace: Path, args: dict[str, object], key: str
) -> None:
    (workspace / "a.md").write_text("a")
    (workspace / "b.md").write_text("b")
    (workspace / "d").mkdir()
    assert _error(run_executor("fs_move", args))[0] == key
    assert (workspace / "a.md").read_text() == "a" and (workspace / "b.md").read_text() == "b"


def test_output_is_one_json_object(run_executor: RunExecutor, workspace: Path) -> None:
    (workspace / "weird \u2028 name.md").write_text("x")
    reply = run_executor("fs_find", {"pattern": "*.md"})
    assert json.loads(json.dumps(reply))["result"]["files"] == ["weird \u2028 name.md"]
