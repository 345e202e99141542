"""`metnos ui`: where the Prefect UI is and where its password lives, never the password."""

from __future__ import annotations

import json
import stat

import pytest
import typer
from typer.testing import CliRunner

from metnos.faces.cli.ui import ui
from metnos.faces.serve.prefect_access import read_credential
from tests.support.home import MakeHome

cli = typer.Typer()
cli.command()(ui)
runner = CliRunner()


def test_ui_names_the_address_and_the_credential_file(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_home(lang="en", METNOS_PREFECT_PORT="4321")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    path = home.settings.secrets_dir / "prefect.auth"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    credential = read_credential(home.settings)
    assert credential is not None and credential.startswith("metnos:")
    assert len(credential.split(":", 1)[1]) >= 40
    result = runner.invoke(cli, [])
    assert result.exit_code == 0, result.output
    assert "http://127.0.0.1:4321" in result.stdout and str(path) in result.stdout
    assert credential.split(":", 1)[1] not in result.stdout  # the path, never the secret
    data = json.loads(runner.invoke(cli, ["--json"]).stdout)
    assert data == {"url": "http://127.0.0.1:4321", "external": False,
                    "credential_file": str(path), "user": "metnos"}


def test_ui_in_italian_and_without_a_credential(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    home = make_home(lang="it")
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    assert "Chiede una password" in runner.invoke(cli, []).stdout
    (home.settings.secrets_dir / "prefect.auth").unlink()
    result = runner.invoke(cli, [])
    assert result.exit_code == 1
    assert "metnos init" in result.stderr and "prefect.auth" in result.stderr


def test_an_external_prefect_keeps_the_owners_credential(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    make_home(lang="en")
    monkeypatch.setenv("PREFECT_API_URL", "http://prefect.lan:4200/api")
    data = json.loads(runner.invoke(cli, ["--json"]).stdout)
    assert data["url"] == "http://prefect.lan:4200" and data["external"] is True
    assert "PREFECT_API_AUTH_STRING" in runner.invoke(cli, []).stdout


def test_client_environment_follows_whose_server_it_is(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    from metnos.faces.serve.prefect_access import client_environment

    home = make_home(lang="en")
    own = client_environment(home.settings, {})
    assert own == {"PREFECT_API_AUTH_STRING": read_credential(home.settings)}
    external = {"PREFECT_API_URL": "http://prefect.lan/api", "PREFECT_API_AUTH_STRING": "me:x"}
    assert client_environment(home.settings, external) == {}  # the owner's own, untouched
