"""`GET /api/turns/{id}/events`: a turn's progress as server-sent events, over real HTTP
(uvicorn on loopback), with the Prefect `turn` flow, the policy, the sandbox and a scripted LLM."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from metnos.faces.gateway.routes import turns as turns_route
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.events import TurnEvents
from tests.support.home import Home, MakeHome, served_app
from tests.support.pg import free_port

Event = tuple[int, str, dict[str, Any]]


@contextmanager
def flow_gateway(home: Home) -> Iterator[tuple[str, FastAPI]]:
    """The gateway on loopback with the Prefect turn flow as its runner (uvicorn, a thread)."""
    from flows.turn import resume_approval, run_turn
    from metnos.faces.gateway.app import create_app

    app = create_app(home.settings, runner=run_turn, resumer=resume_approval)
    with served_app(app, home.settings.gateway.port) as base:
        yield base, app


@pytest.fixture
def served(make_home: MakeHome, scripted_llm: ScriptedLLM,
           prefect_api: str) -> Iterator[tuple[Home, httpx.Client, FastAPI]]:
    home = make_home(llm=scripted_llm, lang="en", METNOS_GATEWAY_PORT=str(free_port()))
    with flow_gateway(home) as (base, app), httpx.Client(
            base_url=base, headers=home.auth(), timeout=60) as client:
        yield home, client, app


def events(client: httpx.Client, turn_id: str, *, stop: str = "end",
           headers: dict[str, str] | None = None,
           comments: list[str] | None = None) -> Iterator[Event]:
    """Parse the stream as it arrives (independently of the CLI's parser)."""
    with client.stream("GET", f"/api/turns/{turn_id}/events", headers=headers or {}) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        frame: dict[str, str] = {}
        for line in resp.iter_lines():
            if line.startswith(":") and comments is not None:
                comments.append(line)
            if line:
                name, _, value = line.partition(": ")
                frame[name] = value
                continue
            if "event" in frame:
                yield int(frame["id"]), frame["event"], json.loads(frame["data"])
                if frame["event"] == stop:
                    return
            frame = {}


def start(client: httpx.Client, text: str) -> dict[str, Any]:
    resp = client.post("/api/turns", params={"wait": "false"}, json={"text": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert body["status"] == "running" and body["reply"] is None
    return body


def test_a_turn_with_a_step_streams_status_step_reply_end_in_order(
        served: tuple[Home, httpx.Client, FastAPI], scripted_llm: ScriptedLLM) -> None:
    home, client, _ = served
    (home.workspace / "note.md").write_text("buy milk\n")
    scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"})
    scripted_llm.enqueue_text("Your note says: buy milk.")
    turn_id = start(client, "what is in my note?")["turn_id"]
    got = list(events(client, turn_id))
    assert [seq for seq, _, _ in got] == list(range(1, len(got) + 1))
    deltas = [d for _, kind, d in got if kind == "delta"]  # the final text, as it streamed
    assert "".join(d["text"] for d in deltas) == "Your note says: buy milk."
    assert {d["think"] for d in deltas} == {2}  # the second model call's words
    assert [(kind, d.get("status") or d.get("state")) for _, kind, d in got
            if kind != "delta"] == [
        ("status", "planning"), ("status", "running"), ("step", "started"), ("step", "done"),
        ("status", "running"), ("reply", "completed"), ("status", "completed"),
        ("end", "completed")]
    step = got[2][2]
    assert step["executor"] == "fs_read" and step["args_digest"] and "args" not in step
    assert step["text"] == "Reading your file…"  # the status line's words, never the tool's name
    [(reply_seq, _, reply)] = [e for e in got if e[1] == "reply"]
    assert reply["text"] == "Your note says: buy milk."
    assert [(a["executor"], a["status"]) for a in reply["activity"]] == [("fs_read", "done")]

    # Last-Event-ID resumes after what the client has seen (history kept in memory)
    resumed = list(events(client, turn_id, headers={"Last-Event-ID": str(reply_seq - 1)}))
    assert [(seq, kind) for seq, kind, _ in resumed] == [
        (reply_seq, "reply"), (reply_seq + 1, "status"), (reply_seq + 2, "end")]


def test_a_turn_waiting_for_an_approval_streams_it_then_the_rest(
        served: tuple[Home, httpx.Client, FastAPI], scripted_llm: ScriptedLLM,
        monkeypatch: pytest.MonkeyPatch) -> None:
    home, client, _ = served
    monkeypatch.setattr(turns_route, "KEEP_ALIVE_S", 0.1)
    scripted_llm.enqueue_tool_call("fs_write", {"path": "hello.txt", "content": "hi\n"})
    scripted_llm.enqueue_text("I wrote hi to hello.txt.")
    turn_id = start(client, "write hi to hello.txt")["turn_id"]
    comments: list[str] = []
    stream = events(client, turn_id, comments=comments)
    before = []
    for seq, kind, data in stream:  # live: the approval arrives while the turn waits
        before.append((seq, kind, data))
        if kind == "approval":
            break
    assert [(k, d.get("status")) for _, k, d in before] == [
        ("status", "planning"), ("status", "running"), ("status", "awaiting_approval"),
        ("approval", "pending")]
    card = before[-1][2]
    assert card["executor"] == "fs_write" and card["status"] == "pending"
    assert card["args"] == {"path": "hello.txt", "content": "hi\n", "mode": "overwrite"}
    assert "hello.txt" in card["files"] and card["why"] and card["approval_id"] in \
        card["message"]
    assert not (home.workspace / "hello.txt").exists()
    time.sleep(0.5)  # the turn waits: the stream stays alive meanwhile

    resp = client.post(f"/api/approvals/{card['approval_id']}", json={"decision": "approve"})
    assert resp.status_code == 200, resp.text
    after = list(stream)
    assert [(kind, d.get("status") or d.get("state")) for _, kind, d in after
            if kind != "delta"] == [
        ("status", "running"), ("step", "started"),
        ("step", "done"), ("status", "running"), ("reply", "completed"),
        ("status", "completed"), ("end", "completed")]
    [reply] = [d for _, kind, d in after if kind == "reply"]
    assert reply["text"] == "I wrote hi to hello.txt."
    [wrote] = reply["activity"]
    assert wrote["status"] == "done" and "hello.txt" in wrote["text"] and wrote["undo"]
    assert (home.workspace / "hello.txt").read_text() == "hi\n"
    assert ": keep-alive" in comments


def test_unknown_foreign_unauthenticated_and_forgotten_turns(
        served: tuple[Home, httpx.Client, FastAPI], scripted_llm: ScriptedLLM) -> None:
    home, client, app = served
    assert client.get("/api/turns/nope/events").status_code == 404
    scripted_llm.enqueue_text("hello there")
    turn_id = start(client, "hi")["turn_id"]
    list(events(client, turn_id))
    bare = httpx.get(f"{client.base_url}/api/turns/{turn_id}/events")
    assert bare.status_code == 401

    with db_session(app.state.gateway.service.engine) as db:  # a turn of another user (Telegram)
        other = models.open_session(db, None, user_id="telegram:42", channel="telegram",
                                    lang="en", legacy_lang="en", autonomy="Supervised").chat
        foreign = models.record_turn_start(db, session_id=other.id, channel="telegram",
                                           sender="telegram:42", text="x", lang="en").id
    resp = client.get(f"/api/turns/{foreign}/events")
    assert resp.status_code == 404 and resp.json()["error"]["key"] == "ERR_TURN_NOT_FOUND"

    state = app.state.gateway  # the history is gone from memory
    state.service = replace(state.service, events=TurnEvents())
    state.turns = replace(state.turns, service=state.service)  # the route follows the handle's
    got = list(events(client, turn_id))
    assert [(kind, d.get("status")) for _, kind, d in got] == [
        ("status", "completed"), ("reply", "completed"), ("end", "completed")]
    assert got[1][2]["text"] == "hello there"
