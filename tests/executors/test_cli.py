"""`metnos executors list|sign|verify` through typer's CliRunner, on a tmp METNOS_HOME."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.executors import app
from tests.executors.conftest import BUILTINS, REPO_EXECUTORS

runner = CliRunner()


@pytest.fixture
def home(metnos_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("METNOS_LANG", "en")
    owner = metnos_home / "executors" / "my_tool"
    shutil.copytree(REPO_EXECUTORS / "fs_read", owner, ignore=shutil.ignore_patterns("__pycache__"))
    manifest = owner / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('name = "fs_read"', 'name = "my_tool"'))
    return metnos_home


def _list() -> dict[str, dict[str, object]]:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0, result.output
    return {row["name"]: row for row in json.loads(result.stdout)}


def test_unsigned_then_signed(home: Path) -> None:
    rows = _list()
    assert set(rows) == {*BUILTINS, "my_tool"}
    assert all(
        not r["admitted"] and r["reason_key"] == "ERR_EXECUTOR_UNSIGNED" for r in rows.values()
    )
    assert rows["fs_write"]["risk"] == "medium" and rows["fs_write"]["version"] == "0.1.1"

    failed = runner.invoke(app, ["verify"])
    assert failed.exit_code == 1
    assert "Verification failed for:" in failed.stderr and "my_tool" in failed.stderr

    signed = runner.invoke(app, ["sign", "my_tool"])
    assert signed.exit_code == 0, signed.output
    assert "Signed my_tool 0.1.0" in signed.stdout
    assert (home / "signatures" / "my_tool.minisig").is_file()
    assert _list()["my_tool"]["admitted"] is True
    ok = runner.invoke(app, ["verify", "my_tool"])
    assert ok.exit_code == 0 and "my_tool 0.1.0: signature valid." in ok.stdout

    text = runner.invoke(app, ["list"]).stdout
    lines = {line.split()[0]: " ".join(line.split()) for line in text.splitlines()[2:]
             if line.strip()}
    assert text.splitlines()[0].split() == ["Tool", "Version", "Risk", "Status", "Why"]
    assert lines["my_tool"] == "my_tool 0.1.0 low may run"
    assert lines["fs_move"].startswith("fs_move 0.1.1 medium refused Executor fs_move is not "
                                       "signed")


def test_tampered_after_signing(home: Path) -> None:
    assert runner.invoke(app, ["sign", "my_tool"]).exit_code == 0
    main = home / "executors" / "my_tool" / "main.py"
    main.write_text(main.read_text() + "\n# one more line\n")
    result = runner.invoke(app, ["verify", "my_tool", "--json"])
    assert result.exit_code == 1
    [row] = json.loads(result.stdout)
    assert row["reason_key"] == "ERR_EXECUTOR_CODE_CHANGED"
    plain = runner.invoke(app, ["verify", "my_tool"])
    assert "The code of executor my_tool changed" in plain.stderr


def test_duplicate_of_a_builtin(home: Path) -> None:
    shutil.copytree(
        REPO_EXECUTORS / "fs_find",
        home / "executors" / "fs_find",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    assert runner.invoke(app, ["sign", "fs_find"]).exit_code == 0
    rows = json.loads(runner.invoke(app, ["list", "--json"]).stdout)
    find_rows = [r for r in rows if r["name"] == "fs_find"]
    assert [r["admitted"] for r in find_rows] == [True, False]
    assert find_rows[0]["folder"] == str(REPO_EXECUTORS / "fs_find")
    assert find_rows[1]["reason_key"] == "ERR_EXECUTOR_DUPLICATE"


def test_unknown_name(home: Path) -> None:
    for args in (["sign", "nope"], ["verify", "nope"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1
        assert "I have no tool called nope" in result.stderr


def test_italian(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.ground.settings import get_settings

    monkeypatch.setenv("METNOS_LANG", "it")
    get_settings.cache_clear()
    result = runner.invoke(app, ["verify", "fs_read"])
    assert result.exit_code == 1
    assert "Lo strumento fs_read non è firmato" in result.stderr
