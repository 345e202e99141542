"""`metnos pair` against a real gateway on a loopback port (uvicorn in a thread)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.pair import app
from metnos.features.pairing import admit
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port

runner = CliRunner()


@pytest.fixture
def served(make_home: MakeHome) -> Iterator[Home]:
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        yield home


def _code(home: Home, sender: str) -> str:
    engine = make_engine(database_url(home.settings))
    try:
        with db_session(engine) as db:
            code = admit(db, channel="telegram", sender_id=sender,
                         settings=home.settings.policy).code
    finally:
        engine.dispose()
    assert code
    return code


def test_pair_list_approve_revoke(served: Home) -> None:
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "No pending pairing requests and no paired senders."

    code = _code(served, "42")
    result = runner.invoke(app, ["list"])
    assert "Pending requests" in result.stdout
    [row] = [line.split() for line in result.stdout.splitlines() if "telegram" in line]
    assert row[:2] == ["telegram", "42"]  # channel, sender, asked, expires
    assert code not in result.stdout

    result = runner.invoke(app, ["approve", code.lower()])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "Paired telegram:42 as owner (user owner)."

    result = runner.invoke(app, ["list", "--json"])
    data = json.loads(result.stdout)
    assert data["pending"] == [] and data["paired"][0]["user_id"] == "owner"

    result = runner.invoke(app, ["approve", code, "--json"])  # used: refused
    assert result.exit_code == 1
    assert "no pending pairing request with that code" in result.stderr

    result = runner.invoke(app, ["revoke", "telegram", "42", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["revoked"] is True
    result = runner.invoke(app, ["revoke", "telegram", "42"])
    assert result.exit_code == 1 and "telegram:42 is not paired." in result.stderr


def test_pair_without_a_running_gateway_says_so(make_home: MakeHome) -> None:
    make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    result = runner.invoke(app, ["list"])
    assert result.exit_code == 1
    assert "Metnos is not running at http://127.0.0.1:" in result.stderr
    assert "Traceback" not in result.output
