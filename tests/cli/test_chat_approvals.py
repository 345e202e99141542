"""`metnos chat` follows its turn over real HTTP (a gateway on loopback, uvicorn in a thread):
the progress line, the approval card asked inline, the resumed reply; and no question when
nobody can answer it."""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome
from tests.support.pg import free_port

runner = CliRunner()


def write_asked(llm: ScriptedLLM, name: str) -> None:
    """The model asks to write `name` (Supervised: it asks the owner), then, with the
    write's result or its denial, answers in words."""
    llm.enqueue_tool_call("fs_write", {"path": name, "content": "hi\n"})
    llm.enqueue_text(f"Handled {name}.")


def pending(home: Home) -> list[dict[str, object]]:
    url = f"http://127.0.0.1:{home.settings.gateway.port}/api/approvals"
    rows: list[dict[str, object]] = httpx.get(url, headers=home.auth()).json()["approvals"]
    return rows


def test_yes_approves_inline_and_prints_the_resumed_reply(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    write_asked(scripted_llm, "hello.txt")
    result = runner.invoke(app, ["chat", "--ask", "write hi to hello.txt"], input="y\n")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Your approval is needed" in out
    assert "Action: Write “hi” to hello.txt, replacing what it holds" in out
    assert "fs_write" not in out  # the tool's name is a detail: --verbose shows it
    assert 'path = "hello.txt"' in out and 'content = "hi\\n"' in out
    assert "File hello.txt: does not exist yet" in out
    assert "Approve? [y/N]" in out
    after = out.split("Approve? [y/N]")[1]  # after the answer: the model's words, what ran
    assert "Handled hello.txt." in after and "I wrote 3 bytes to hello.txt" in after
    assert (served.workspace / "hello.txt").read_text() == "hi\n"
    assert "… thinking" in result.stderr and "… Writing your file…" in result.stderr
    assert "fs_write" not in result.stderr  # the progress line speaks of the file, not the tool
    assert "… waiting for your approval" in result.stderr
    assert pending(served) == []

    # the same in Italian: the question and the accepted answer follow the CLI's language
    write_asked(scripted_llm, "ciao.txt")
    result = runner.invoke(app, ["chat", "--lang", "it", "--ask", "scrivi ciao.txt"],
                           input="s\n")
    assert result.exit_code == 0, result.output
    assert "Serve la tua approvazione" in result.stdout and "Approvare? [s/N]" in result.stdout
    assert "… Sto scrivendo il file…" in result.stderr and "fs_write" not in result.stderr
    assert (served.workspace / "ciao.txt").read_text() == "hi\n"


def test_no_denies_and_json_prints_the_final_turn(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    write_asked(scripted_llm, "nope.txt")
    result = runner.invoke(app, ["chat", "--ask", "--json", "write hi to nope.txt"],
                           input="n\n")
    assert result.exit_code == 0, result.output
    turn = json.loads(result.stdout)  # stdout is only the turn's JSON
    assert turn["status"] == "completed" and turn["reply"] == "Handled nope.txt."
    [denied] = turn["activity"]
    assert denied["status"] == "denied"
    assert denied["text"] == "You said no: I did not write to nope.txt. Nothing changed."
    assert [a["status"] for a in turn["approvals"]] == ["denied"]
    assert "Action: Write “hi” to nope.txt" in result.stderr and "Approve? [y/N]" in result.stderr
    assert "fs_write" not in result.stderr
    assert not (served.workspace / "nope.txt").exists()

    # the REPL asks the same way and keeps going
    write_asked(scripted_llm, "repl.txt")
    scripted_llm.enqueue_text("hello again")
    result = runner.invoke(app, ["chat", "--ask"],
                           input="write hi to repl.txt\ny\nand now?\n/quit\n")
    assert result.exit_code == 0, result.output
    assert "I wrote 3 bytes to repl.txt" in result.stdout and "hello again" in result.stdout
    assert (served.workspace / "repl.txt").exists()


@pytest.mark.parametrize("flags", [[], ["--no-ask", "--verbose"]])
def test_without_a_terminal_it_leaves_the_approval_pending_with_the_hint(
        served: Home, scripted_llm: ScriptedLLM, flags: list[str]) -> None:
    write_asked(scripted_llm, "later.txt")
    result = runner.invoke(app, ["chat", *flags, "write hi to later.txt"], input="y\n")
    assert result.exit_code == 0, result.output
    [row] = pending(served)
    approval_id = str(row["approval_id"])
    assert "Action: Write “hi” to later.txt" in result.stdout and "Approve?" not in result.stdout
    # the tool's name and its step are details: only --verbose shows them
    assert ("Tool: fs_write" in result.stdout) == ("--verbose" in flags)
    assert f"metnos approvals approve {approval_id}" in result.stdout
    assert not (served.workspace / "later.txt").exists()  # the "y" on stdin was not read
    url = f"http://127.0.0.1:{served.settings.gateway.port}/api/approvals/{approval_id}"
    assert httpx.post(url, json={"decision": "deny"}, headers=served.auth()).status_code == 200


def test_gateway_down_says_how_to_start_it(make_home: MakeHome) -> None:
    make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    result = runner.invoke(app, ["chat", "hello"])
    assert result.exit_code == 1
    assert "metnos serve" in result.stderr
