"""`metnos audit verify|tail` against a real instance directory."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.audit import app
from metnos.ground.settings import Settings, get_settings
from metnos.mechanisms.audit import audit_log_path, open_audit_log


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("METNOS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METNOS_LANG", "en")
    get_settings.cache_clear()
    settings = get_settings()
    with open_audit_log(settings) as audit:
        for i in range(5):
            audit.append(action="fs_read", decision="allow", sender="owner", outcome=f"ok{i}")
    yield settings
    get_settings.cache_clear()


def test_verify_ok(settings: Settings) -> None:
    result = CliRunner().invoke(app, ["verify"])
    assert result.exit_code == 0, result.output
    assert "intact" in result.output and "5" in result.output


def test_verify_names_the_edited_line(settings: Settings) -> None:
    path = audit_log_path(settings)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[2] = lines[2].replace("ok2", "ok9")
    path.write_text("".join(lines), encoding="utf-8")
    result = CliRunner().invoke(app, ["verify"])
    assert result.exit_code == 1
    assert "Line 3" in result.output
    data = json.loads(CliRunner().invoke(app, ["verify", "--json"]).stdout)
    assert (data["ok"], data["first_bad_line"], data["reason_key"]) == (
        False,
        3,
        "ERR_AUDIT_HASH_MISMATCH",
    )


def test_verify_in_italian(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("METNOS_LANG", "it")
    get_settings.cache_clear()
    path = audit_log_path(settings)
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:3]))
    result = CliRunner().invoke(app, ["verify"])
    assert result.exit_code == 1
    assert "tagliato" in result.output and "riga 4" in result.output


def test_tail(settings: Settings) -> None:
    result = CliRunner().invoke(app, ["tail", "-n", "2", "--json"])
    assert result.exit_code == 0
    assert [json.loads(line)["outcome"] for line in result.stdout.splitlines()] == ["ok3", "ok4"]
    text = CliRunner().invoke(app, ["tail"]).stdout.splitlines()
    assert text[0].split() == ["#", "Time", "Decision", "Action", "What", "Outcome", "Who"]
    rows = [line.split() for line in text[2:]]  # after the header's rule: one line a record
    assert [row[0] for row in rows] == ["1", "2", "3", "4", "5"]
    assert all(row[3:5] == ["allowed", "fs_read"] and row[-2:] == [f"ok{i}", "owner"]
               for i, row in enumerate(rows))


def test_verify_without_the_audit_key(settings: Settings) -> None:
    (settings.keys_dir / "audit.pub").unlink()
    result = CliRunner().invoke(app, ["verify", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["reason_key"] == "ERR_KEY_UNREADABLE"
