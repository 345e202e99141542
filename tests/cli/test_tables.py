"""The CLI's lists as tables a person reads (issue 12), against a real gateway on loopback:
headers, status words and messages instead of keys, in the CLI's language (METNOS_LANG, else
LC_ALL / LC_MESSAGES / LANG), times in the household's time zone, `--json` kept for scripts;
a refused undo says what happened."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import httpx
import pytest
from typer.testing import CliRunner

from metnos.faces.cli._lang import cli_lang
from metnos.faces.cli.main import app
from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port

runner = CliRunner()
ZONE = "Asia/Tokyo"  # far from the machine's UTC: a local time is visibly converted


@pytest.fixture
def tokyo(make_home: MakeHome, scripted_llm: ScriptedLLM) -> Iterator[Home]:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()),
                     METNOS_TIMEZONE=ZONE)
    with served_gateway(home):
        yield home


def ask_move(home: Home, llm: ScriptedLLM, name: str) -> str:
    (home.workspace / f"{name}.txt").write_text(name)
    llm.enqueue_tool_call("fs_move", {"src": f"{name}.txt", "dst": f"{name}-moved.txt"})
    llm.enqueue_text(f"Finished with {name}.")
    resp = httpx.post(f"{base(home)}/api/turns", json={"text": "move it", "lang": "en"},
                      headers=home.auth(), timeout=60)
    body = resp.json()
    assert body["status"] == "awaiting_approval", body
    return str(body["approvals"][0]["approval_id"])


def base(home: Home) -> str:
    return f"http://127.0.0.1:{home.settings.gateway.port}"


def rows(out: str) -> list[list[str]]:
    """The table's lines after its header and rule, split on runs of 2+ spaces."""
    import re

    lines = out.splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines[2:] if line.strip()]


def local(value: str) -> str:
    return datetime.fromisoformat(value).astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M")


def italian_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The person's shell says Italian; METNOS_LANG is not set (the instance says English)."""
    monkeypatch.delenv("METNOS_LANG")
    monkeypatch.setenv("LANG", "it_IT.UTF-8")
    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)


def test_approvals_list_is_a_table_in_local_time_without_until_once_decided(
        tokyo: Home, scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    decided = ask_move(tokyo, scripted_llm, "two")
    deny = runner.invoke(app, ["approvals", "deny", decided])  # waits for the resumed turn
    assert deny.exit_code == 0 and "Finished with two." in deny.stdout, deny.output
    waiting = ask_move(tokyo, scripted_llm, "one")
    result = runner.invoke(app, ["approvals", "list", "--all"])
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0].split()
    assert header == ["ID", "Status", "Action", "Who", "Outside", "sources", "Asked", "Valid",
                      "until", "Decided"]
    stored = {a["approval_id"]: a for a in json.loads(
        runner.invoke(app, ["approvals", "list", "--all", "--json"]).stdout)}
    table = {row[0]: row for row in rows(result.stdout)}
    one, two = stored[waiting], stored[decided]
    assert table[waiting] == [waiting, "waiting", 'fs_move(dst="one-moved.txt", src="one.txt")',
                              "owner", "—", local(one["created_at"]), local(one["expires_at"]),
                              "—"]
    assert table[decided][1] == "denied" and table[decided][6] == "—"  # no "until" any more
    assert table[decided][7] == local(two["decided_at"])
    assert local(one["created_at"]) != one["created_at"][:16].replace("T", " ")  # converted

    italian_terminal(monkeypatch)
    result = runner.invoke(app, ["approvals", "list", "--all"])
    assert result.stdout.splitlines()[0].split()[:3] == ["ID", "Stato", "Azione"]
    table = {row[0]: row for row in rows(result.stdout)}
    assert (table[waiting][1], table[decided][1]) == ("in attesa", "negata")


def test_audit_tail_shows_messages_not_keys(
        tokyo: Home, scripted_llm: ScriptedLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    ask_move(tokyo, scripted_llm, "three")
    result = runner.invoke(app, ["audit", "tail"])
    assert result.exit_code == 0, result.output
    assert "ASK_POLICY_MEDIUM_RISK" not in result.stdout
    asked = i18n.get("ASK_POLICY_MEDIUM_RISK", "en", executor="fs_move")
    [row] = [r for r in rows(result.stdout) if r[3] == "fs_move"]
    assert row[2] == "asked" and row[4] == asked and row[5] == "waiting for you"
    lines = [json.loads(x) for x in runner.invoke(app, ["audit", "tail", "--json"]
                                                 ).stdout.splitlines()]
    record = next(x for x in lines if x["action"] == "fs_move")
    assert record["reason"] == "ASK_POLICY_MEDIUM_RISK"  # scripts still get the key
    assert row[1] == datetime.fromisoformat(record["ts"]).astimezone(
        ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S")

    italian_terminal(monkeypatch)
    result = runner.invoke(app, ["audit", "tail"])
    [row] = [r for r in rows(result.stdout) if r[3] == "fs_move"]
    assert row[2] == "chiesto" and row[4] == i18n.get("ASK_POLICY_MEDIUM_RISK", "it",
                                                      executor="fs_move")


def test_executors_list_in_the_terminals_language(
        make_home: MakeHome, monkeypatch: pytest.MonkeyPatch) -> None:
    make_home(lang="en")
    italian_terminal(monkeypatch)
    result = runner.invoke(app, ["executors", "list"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].split() == [
        "Strumento", "Versione", "Rischio", "Stato", "Perché"]
    table = {row[0]: row for row in rows(result.stdout)}
    assert table["fs_read"][2:4] == ["basso", "può funzionare"]
    assert table["fs_delete"][2] == "medio"


def test_a_refused_undo_says_what_happened(
        tokyo: Home, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = "f" * 32
    result = runner.invoke(app, ["undo", missing])
    assert result.exit_code == 1
    assert result.stderr.strip() == i18n.get("ERR_UNDO_NOT_FOUND", "en", action_id=missing)
    assert "(404)" not in result.stderr and "refused" not in result.stderr
    italian_terminal(monkeypatch)
    result = runner.invoke(app, ["undo", missing])
    assert result.stderr.strip() == i18n.get("ERR_UNDO_NOT_FOUND", "it", action_id=missing)


@pytest.mark.parametrize(("env", "lang"), [
    ({"METNOS_LANG": "en", "LANG": "it_IT.UTF-8"}, "en"),  # METNOS_LANG wins
    ({"LANG": "it_IT.UTF-8"}, "it"),
    ({"LC_MESSAGES": "en_GB.UTF-8", "LANG": "it_IT.UTF-8"}, "en"),
    ({"LC_ALL": "it_CH.UTF-8", "LC_MESSAGES": "en_US.UTF-8", "LANG": "en_US"}, "it"),
    ({"LC_ALL": "", "LANG": "it_IT@euro"}, "it"),  # an empty variable is not set
    ({"LC_ALL": "C", "LANG": "it_IT.UTF-8"}, "en"),  # C: the instance's language
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "POSIX"}, "en"),
    ({"LANG": "de_DE.UTF-8"}, "en"),  # not active here: the instance's language
    ({"METNOS_LANG": "fr"}, "en"),
    ({}, "en"),
])
def test_the_clis_language(make_home: MakeHome, env: dict[str, str], lang: str) -> None:
    make_home(lang="en")  # the instance's language
    assert cli_lang(env) == lang
