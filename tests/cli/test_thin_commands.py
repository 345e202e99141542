"""The CLI answers at once (issue 29): `metnos --help` lists every command without loading
one, a command loads what it prints with and no HTTP library, and the standard library's
HTTP client says every way a gateway can fail as `metnos chat` always said it: not running,
too slow, a broken answer, a stream gone silent. The misbehaving gateways are real sockets
on loopback."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli import _client
from metnos.faces.cli.main import _Metnos, app
from metnos.ground.errors import MetnosError
from metnos.ground.settings import Settings
from metnos.ground.settings.gateway import GatewaySettings
from tests.support.pg import free_port
from tests.support.sockets import one_answer as gateway

ROOT = Path(__file__).resolve().parents[2]
HEAVY = {"httpx", "sqlalchemy", "prefect", "litellm", "fastapi"}


def loaded_by(argv: list[str]) -> set[str]:
    """The modules a `metnos ARGV` process has loaded when it is done."""
    code = ("import sys\nfrom metnos.faces.cli.main import app\n"
            f"try:\n    app({argv!r})\nexcept SystemExit:\n    pass\n"
            "print(','.join(sorted(sys.modules)), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    return set(out.stderr.strip().splitlines()[-1].split(","))


def test_help_lists_every_command_and_loads_none() -> None:
    loaded = loaded_by(["--help"])
    commands = {entry.module for entry in _Metnos.entries.values()}
    assert not loaded & commands, sorted(loaded & commands)
    assert not {m.split(".")[0] for m in loaded} & HEAVY
    listed = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert listed.exit_code == 0, listed.output
    for name in [*_Metnos.entries, "init", "serve"]:
        assert f" {name} " in listed.output, name


def test_a_command_loads_itself_and_no_other() -> None:
    loaded = loaded_by(["chat", "--help"])
    assert "metnos.faces.cli.chat" in loaded
    others = {e.module for n, e in _Metnos.entries.items() if n not in ("chat", "approvals")}
    assert not loaded & others, sorted(loaded & others)
    assert not {m.split(".")[0] for m in loaded} & HEAVY


@pytest.mark.parametrize("lang", ["en", "it"])
def test_the_listing_says_what_each_command_says_of_itself(lang: str) -> None:
    """Each line of `metnos --help` is the help its command gives once loaded (a fresh
    process: a module's help is worded in the language of the process that loaded it)."""
    code = ("from metnos.faces.cli._lang import msg\n"
            "from metnos.faces.cli.main import _Metnos\n"
            "for name, entry in _Metnos.entries.items():\n"
            "    command = entry.load(name)\n"
            "    print(name, command.name == name, command.help == msg(entry.help_key),"
            " bool(command.help))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "METNOS_LANG": lang})
    assert out.returncode == 0, out.stderr[-2000:]
    said = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert said == dict.fromkeys(_Metnos.entries, "True True True")


def test_a_misspelt_command_is_answered_with_the_near_ones() -> None:
    result = CliRunner().invoke(app, ["aprovals"])
    assert result.exit_code == 2
    assert "Did you mean 'approvals'" in result.output


# -- the client against gateways that misbehave -------------------------------------------
def silent(conn: socket.socket) -> None:
    conn.recv(1)  # until the client gives up and closes


def test_nothing_listening_is_not_running() -> None:
    url = f"http://127.0.0.1:{free_port()}/api/turns"
    with pytest.raises(MetnosError) as caught:
        _client.fetch("GET", url)
    assert caught.value.key == "ERR_CHAT_NOT_RUNNING" and caught.value.vars["url"] == url


def test_a_gateway_that_never_answers_is_too_slow() -> None:
    with gateway(silent) as base, pytest.raises(MetnosError) as caught:
        _client.fetch("GET", base + "/api/turns", timeout_s=0.5)
    assert caught.value.key == "ERR_CHAT_TIMEOUT"


def test_an_answer_cut_short_is_a_refusal_that_says_why() -> None:
    def cut(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"a\"")

    with gateway(cut) as base, pytest.raises(MetnosError) as caught:
        _client.fetch("GET", base + "/api/turns")
    assert caught.value.key == "ERR_CHAT_REFUSED" and caught.value.vars["detail"]


def test_a_body_that_is_not_json_is_a_refusal_with_its_status(tmp_path: Path) -> None:
    def page(conn: socket.socket) -> None:
        body = b"<html>bad gateway</html>"
        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: %d\r\n\r\n%s"
                     % (len(body), body))

    with gateway(page) as base, pytest.raises(MetnosError) as caught:
        _client.api_call(settings_for(base, tmp_path), "GET", "/api/approvals")
    assert caught.value.key == "ERR_CHAT_REFUSED"
    assert caught.value.vars == {"status": 502, "detail": "<html>bad gateway</html>"}


def test_a_stream_that_goes_silent_is_too_slow_and_its_events_came_first(
        tmp_path: Path) -> None:
    def one_event_then_silence(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
                     b": keep-alive\n\nid: 3\nevent: reply\ndata: {\"text\":\n"
                     b"data: \"ciao\"}\n\n")
        conn.recv(1)

    seen: list[object] = []
    with gateway(one_event_then_silence) as base, pytest.raises(MetnosError) as caught:
        for event in _client.follow_events(settings_for(base, tmp_path), "t1", read_s=0.5):
            seen.append(event)
    assert caught.value.key == "ERR_CHAT_TIMEOUT"
    assert seen == [None, _client.ServerEvent(3, "reply", {"text": "ciao"})]  # keep-alive first


def settings_for(base: str, tmp_path: Path) -> Settings:
    settings = Settings(home=tmp_path / "home",
                        gateway=GatewaySettings(port=int(base.rsplit(":", 1)[1])))
    settings.owner_token_path.parent.mkdir(parents=True, exist_ok=True)
    settings.owner_token_path.write_text("t0ken\n")
    return settings
