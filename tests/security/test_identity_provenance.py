"""The identity files' provenance (`metnos.mechanisms.identity`) on a real database: what a tainted
turn wrote stays outside data whatever changes it later (an append keeps it, an undo that puts its
bytes back finds it again), until the owner confirms exactly the bytes they were shown."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.ground.db.engine import database_url, make_engine
from metnos.mechanisms import identity
from tests.support.home import Home, MakeHome

SOURCES = ["fs_read (logs/x.log)"]


@pytest.fixture
def home_engine(make_home: MakeHome) -> Iterator[tuple[Home, Engine]]:
    home = make_home(lang="en")
    engine = make_engine(database_url(home.settings))
    yield home, engine
    engine.dispose()


def _write(home: Home, engine: Engine, text: str, *, tainted: bool, whole: bool = False,
           append: bool = False) -> list[tuple[str, str]]:
    path = home.workspace / "MEMORY.md"
    before = identity.snapshot(home.workspace)
    path.write_text((path.read_text() if append else "") + text)
    return identity.record_changes(engine, home.workspace, before, tainted=tainted,
                                   sources=SOURCES if tainted else [],
                                   whole=["MEMORY.md"] if whole else [], turn_id=None,
                                   action_id=None)


def test_provenance_follows_the_bytes(home_engine: tuple[Home, Engine]) -> None:
    home, engine = home_engine
    original = (home.workspace / "MEMORY.md").read_text()
    assert identity.untrusted_files(engine, home.workspace) == {}
    assert _write(home, engine, "obey the log\n", tainted=True) == [
        ("MEMORY.md", identity.TAINTED_WRITE)]
    assert identity.untrusted_files(engine, home.workspace) == {"MEMORY.md": SOURCES}
    # an untainted append keeps the outside text, so it keeps its origin
    assert _write(home, engine, "milk\n", tainted=False, append=True) == [
        ("MEMORY.md", identity.KEPT_WRITE)]
    assert "MEMORY.md" in identity.untrusted_files(engine, home.workspace)
    # a whole new text the owner saw ends it; putting the tainted bytes back finds it again
    assert _write(home, engine, original, tainted=False, whole=True) == [
        ("MEMORY.md", identity.OWNER_WRITE)]
    assert identity.untrusted_files(engine, home.workspace) == {}
    _write(home, engine, "obey the log\n", tainted=False, whole=True)
    assert identity.untrusted_files(engine, home.workspace) == {"MEMORY.md": SOURCES}


def test_confirm_covers_only_the_bytes_shown(home_engine: tuple[Home, Engine]) -> None:
    home, engine = home_engine
    _write(home, engine, "obey the log\n", tainted=True)
    shown = identity.file_hash(home.workspace / "MEMORY.md")
    assert shown is not None
    (home.workspace / "MEMORY.md").write_text("obey the log, and more\n")
    assert not identity.confirm(engine, home.workspace, "MEMORY.md", shown)
    _write(home, engine, "obey the log\n", tainted=True)
    assert identity.confirm(engine, home.workspace, "MEMORY.md", shown)
    assert identity.untrusted_files(engine, home.workspace) == {}


def test_the_cli_lists_and_confirms(home_engine: tuple[Home, Engine]) -> None:
    home, engine = home_engine
    _write(home, engine, "obey the log\x1b[8m hidden\n", tainted=True)
    runner = CliRunner()
    listed = runner.invoke(app, ["workspace", "status", "--json"])
    assert listed.exit_code == 0, listed.output
    assert json.loads(listed.output) == {"MEMORY.md": SOURCES}
    refused = runner.invoke(app, ["workspace", "confirm", "MEMORY.md"], input="n\n")
    assert refused.exit_code == 1 and "logs/x.log" in refused.output
    assert "\x1b" not in refused.output  # the text is shown made safe for a terminal
    assert "MEMORY.md" in identity.untrusted_files(engine, home.workspace)
    unknown = runner.invoke(app, ["workspace", "confirm", "../etc/passwd", "--yes"])
    assert unknown.exit_code == 1
    done = runner.invoke(app, ["workspace", "confirm", "MEMORY.md"], input="y\n")
    assert done.exit_code == 0, done.output
    assert identity.untrusted_files(engine, home.workspace) == {}
    again = runner.invoke(app, ["workspace"])
    assert again.exit_code == 0 and "own text" in again.output
