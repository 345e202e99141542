"""`metnos chat` against a served gateway (uvicorn on loopback, the agent loop, the real
sandbox): the model's text is printed as it streams, once, then what ran."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.main import app
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome, served_gateway
from tests.support.pg import free_port

runner = CliRunner()
METNOS = [sys.executable, "-m", "metnos.faces.cli.main"]


def test_a_streamed_answer_is_printed_once_then_what_ran(
        served: Home, scripted_llm: ScriptedLLM) -> None:
    (served.workspace / "log.txt").write_text("22:14 backup finished without errors\n")
    answer = "Tonight's log says the backup finished without errors."
    scripted_llm.enqueue_tool_call("fs_read", {"path": "log.txt"})
    scripted_llm.enqueue_text(answer)
    result = runner.invoke(app, ["chat", "what does log.txt say?"])
    assert result.exit_code == 0, result.output
    prose, *activity = result.stdout.splitlines()
    assert prose == answer and result.stdout.count(answer) == 1  # streamed, not repeated
    assert activity and "log.txt" in activity[0]  # what ran, after the prose
    assert "22:14 backup" in scripted_llm.requests[1]["messages"][-1]["content"]
    assert "… Reading your file…" in result.stderr and answer not in result.stderr


def test_tokens_are_printed_as_they_arrive(served: Home, scripted_llm: ScriptedLLM) -> None:
    words = [f"word{i}" for i in range(20)]
    scripted_llm.chunk_delay_s = 0.1  # two seconds of streaming
    scripted_llm.enqueue_text(" ".join(words))
    proc = subprocess.Popen([*METNOS, "chat", "--no-ask", "talk to me"], env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    seen: list[tuple[float, bytes]] = []
    try:
        while chunk := os.read(proc.stdout.fileno(), 4096):
            seen.append((time.monotonic(), chunk))
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == 0
    out = b"".join(c for _, c in seen).decode()
    assert out == " ".join(words) + "\n"
    first, last = _shown_at(seen, b"word0"), _shown_at(seen, b"word19")
    assert last - first >= 1.0, seen  # printed while it streamed, not at the end
    assert len(seen) >= 5


def _shown_at(seen: list[tuple[float, bytes]], word: bytes) -> float:
    """When `word` was whole on the screen: a piece may end inside it (Law 2 holds back a
    tail that could open a secret, such as the owner token's first characters)."""
    shown = b""
    for at, chunk in seen:
        shown += chunk
        if word in shown:
            return at
    raise AssertionError(f"{word!r} never shown: {seen}")


@pytest.fixture
def served_without_model(make_home: MakeHome) -> Iterator[Home]:
    """An English home with no model at all (the embedded planner answers), served."""
    home = make_home(lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    with served_gateway(home):
        yield home


@pytest.mark.parametrize("message", ["hello", "what time is it?",
                                     "add milk to the shopping list"])
def test_without_a_model_each_reply_is_printed_once(
        served_without_model: Home, message: str) -> None:
    """Loose end of issue 27: the CLI printed every reply twice (the reply's text, then
    the same sentence again as the activity item of what ran)."""
    result = runner.invoke(app, ["chat", "--no-ask", message])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert lines, result.output
    assert len(lines) == len(set(lines)), result.stdout  # no line shown twice
    for line in lines:  # nor one line inside another (a sentence repeated in a longer one)
        assert not any(line != other and line in other for other in lines), result.stdout
