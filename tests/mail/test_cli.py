"""`metnos mail add|show|remove`: the login is tried once through the sandboxed imap_status
before anything is saved; the password is read without echo (stdin here) and never shown."""

from __future__ import annotations

import tomllib

import pytest
from typer.testing import CliRunner, Result

from metnos.faces.cli.main import app
from metnos.features.mail.account import load_account
from metnos.ground.settings import get_settings
from tests.support.home import Home, MakeHome
from tests.support.imap import ImapServer


def mail(*args: str, password: str | None = None, **env: str) -> Result:
    get_settings.cache_clear()  # each `metnos` command is a new process
    result = CliRunner().invoke(app, ["mail", *args], input=password and password + "\n",
                                env=env or None)
    get_settings.cache_clear()
    return result


def account_args(server: ImapServer) -> list[str]:
    return ["add", "--host", server.host, "--port", str(server.port), "--security", "plain",
            "--username", server.username, "--password-stdin"]


@pytest.fixture
def home(make_home: MakeHome) -> Home:
    return make_home(lang="en")


def test_add_tries_the_login_then_saves_show_and_remove(home: Home,
                                                        imap_server: ImapServer) -> None:
    added = mail(*account_args(imap_server), password=imap_server.password)
    assert added.exit_code == 0, added.output
    assert "Login works: 7 unread messages in 1 folders." in added.stdout
    assert "Mail account saved: famiglia on 127.0.0.1" in added.stdout
    secret = home.path / "secrets" / "mail.password"
    assert secret.stat().st_mode & 0o777 == 0o600
    table = tomllib.loads((home.path / "metnos.toml").read_text())["mail"]
    assert table == {**table, "host": "127.0.0.1", "port": imap_server.port,
                     "security": "plain", "username": "famiglia"}
    assert load_account(get_settings()).password == imap_server.password
    shown = mail("show")
    assert shown.stdout.strip() == (f"Mail account: famiglia on 127.0.0.1:{imap_server.port} "
                                    "(plain); password: saved.")
    italian = mail("show", METNOS_LANG="it")
    assert italian.stdout.startswith("Account di posta: famiglia su 127.0.0.1"), italian.stdout
    removed = mail("remove")
    assert removed.stdout.strip() == "The mail account is forgotten (its password too)."
    assert not secret.exists() and "username" not in tomllib.loads(
        (home.path / "metnos.toml").read_text()).get("mail", {})
    assert mail("show").stdout.strip() == "No mail account is set up."
    for result in (added, shown, italian, removed):
        assert imap_server.password not in result.output


def test_a_wrong_password_saves_nothing_and_is_never_shown(home: Home,
                                                           imap_server: ImapServer) -> None:
    wrong = "wrong-but-long-password-42"
    result = mail(*account_args(imap_server), password=wrong)
    assert result.exit_code == 1
    assert "The mail server 127.0.0.1 refused the login" in result.stderr
    assert "The account was not saved." in result.stderr
    assert wrong not in result.output
    assert not (home.path / "secrets" / "mail.password").exists()
    assert "mail" not in tomllib.loads((home.path / "metnos.toml").read_text())


def test_plain_is_only_for_loopback_and_an_empty_password_is_refused(home: Home) -> None:
    remote = mail("add", "--host", "imap.example.org", "--port", "143", "--security", "plain",
                  "--username", "me", "--password-stdin", "--no-check", password="long-secret-9")
    assert remote.exit_code == 1 and "security 'plain' is allowed only" in remote.stderr
    empty = mail("add", "--host", "imap.example.org", "--port", "993", "--security", "tls",
                 "--username", "me", "--password-stdin", "--no-check", password="")
    assert empty.exit_code == 1 and "password: empty" in empty.stderr
    assert not (home.path / "secrets" / "mail.password").exists()
