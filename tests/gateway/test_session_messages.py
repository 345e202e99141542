"""`GET /api/sessions` and `GET /api/sessions/{id}/messages` through the real app and database:
the owner's sessions newest first, a session's messages with each turn's activity on its last
assistant message, pagination both ways, and another user's session answering 404."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatMessage, ChatSession, Turn, utcnow
from tests.support.home import Home, MakeHome, gateway_client

ACTIVITY = [{"executor": "fs_write", "status": "done", "text": "Wrote notes.md.",
             "action_id": "a1", "undo": True, "approval_id": None}]


@pytest.fixture
def home(make_home: MakeHome) -> Home:
    return make_home(lang="en")


def add_session(engine: Engine, user: str = "owner", *, title: str | None = None,
                age_s: int = 0, summary: str | None = None, channel: str = "web") -> str:
    with db_session(engine) as db:
        at = utcnow() - timedelta(seconds=age_s)
        chat = ChatSession(user_id=user, channel=channel, interaction_language="en", title=title,
                           summary=summary, created_at=at, updated_at=at)
        db.add(chat)
        db.commit()
        return chat.id


def add_turn(engine: Engine, session_id: str, text: str, reply: str,
             activity: list[dict[str, Any]] | None = None, tool: bool = False) -> str:
    """A turn as the loop records it: user, (assistant call + tool result,) assistant."""
    with db_session(engine) as db:
        turn = Turn(session_id=session_id, channel="web", sender="owner", text=text, lang="en",
                    status="completed", reply=reply, activity=activity or [])
        db.add(turn)
        db.commit()
        rows = [ChatMessage(session_id=session_id, turn_id=turn.id, role="user", content=text)]
        if tool:
            rows += [ChatMessage(session_id=session_id, turn_id=turn.id, role="assistant",
                                 content="Let me look.", tool_calls=[
                                     {"id": "c1", "name": "fs_read", "arguments": "{}"}]),
                     ChatMessage(session_id=session_id, turn_id=turn.id, role="tool",
                                 content='{"text": "milk"}', tool_call_id="c1", name="fs_read")]
        rows.append(ChatMessage(session_id=session_id, turn_id=turn.id, role="assistant",
                                content=reply))
        for row in rows:  # one at a time: ids in this order
            db.add(row)
            db.commit()
        return turn.id


async def test_messages_in_order_with_the_activity_on_the_last_reply(
        home: Home, engine: Engine) -> None:
    sid = add_session(engine, summary="Earlier: the user likes tea.")
    first = add_turn(engine, sid, "read my list", "It says **milk**.", ACTIVITY, tool=True)
    second = add_turn(engine, sid, "thanks", "You're welcome.")
    async with gateway_client(home, prefect=False) as client:
        resp = await client.get(f"/api/sessions/{sid}/messages")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["session_id"] == sid and body["summary"] == "Earlier: the user likes tea."
    assert body["next_before"] is None
    got = [(m["role"], m["content"], m["name"], m["turn_id"]) for m in body["messages"]]
    assert got == [("user", "read my list", None, first),
                   ("assistant", "Let me look.", None, first),
                   ("tool", '{"text": "milk"}', "fs_read", first),
                   ("assistant", "It says **milk**.", None, first),
                   ("user", "thanks", None, second),
                   ("assistant", "You're welcome.", None, second)]
    ids = [m["id"] for m in body["messages"]]
    assert ids == sorted(ids)
    shown = [{**ACTIVITY[0], "undone": False}]  # a change says whether it was undone since
    assert [m["activity"] for m in body["messages"]] == [None, None, None, shown, None, []]


async def test_pages_go_back_in_time(home: Home, engine: Engine) -> None:
    sid = add_session(engine)
    for n in range(3):
        add_turn(engine, sid, f"q{n}", f"a{n}")
    async with gateway_client(home, prefect=False) as client:
        seen: list[str] = []
        before: int | None = None
        pages = 0
        while True:
            query = {"limit": 4} | ({"before": before} if before else {})
            body = (await client.get(f"/api/sessions/{sid}/messages", params=query)).json()
            seen = [m["content"] for m in body["messages"]] + seen
            pages += 1
            before = body["next_before"]
            if before is None:
                break
            assert before == body["messages"][0]["id"]
        assert pages == 2 and seen == ["q0", "a0", "q1", "a1", "q2", "a2"]
        last = (await client.get(f"/api/sessions/{sid}/messages", params={"limit": 2})).json()
        assert [m["content"] for m in last["messages"]] == ["q2", "a2"]
        bad = await client.get(f"/api/sessions/{sid}/messages", params={"limit": 0})
        assert bad.status_code == 422


async def test_an_empty_session_and_another_users(home: Home, engine: Engine) -> None:
    empty = add_session(engine)
    theirs = add_session(engine, user="someone-else")
    add_turn(engine, theirs, "their secret", "their answer")
    async with gateway_client(home, prefect=False) as client:
        resp = await client.get(f"/api/sessions/{empty}/messages")
        assert resp.status_code == 200
        assert resp.json() == {"session_id": empty, "summary": None, "messages": [],
                               "next_before": None}
        for sid in (theirs, "no-such-session"):
            resp = await client.get(f"/api/sessions/{sid}/messages",
                                    headers={"Accept-Language": "it"})
            assert resp.status_code == 404
            assert resp.json()["error"] == {"key": "ERR_SESSION_NOT_FOUND", "message": i18n.get(
                "ERR_SESSION_NOT_FOUND", "it", session_id=sid)}
            assert "their secret" not in resp.text
        anonymous = await client.get(f"/api/sessions/{empty}/messages",
                                     headers={"Authorization": ""})
        assert anonymous.status_code == 401


async def test_the_owners_sessions_newest_first(home: Home, engine: Engine) -> None:
    old = add_session(engine, title="Shopping", age_s=300)
    mid = add_session(engine, age_s=200)
    add_turn(engine, mid, "  what is   in tonight's log? " + "x" * 100, "nothing")
    new = add_session(engine, age_s=100)
    add_session(engine, user="someone-else")
    async with gateway_client(home, prefect=False) as client:
        first = (await client.get("/api/sessions", params={"limit": 2})).json()
        rest = (await client.get("/api/sessions",
                                 params={"limit": 2, "offset": first["next_offset"]})).json()
        anonymous = await client.get("/api/sessions", headers={"Authorization": ""})
    assert [s["session_id"] for s in first["sessions"]] == [new, mid]
    assert first["next_offset"] == 2
    assert [s["session_id"] for s in rest["sessions"]] == [old] and rest["next_offset"] is None
    titles = {s["session_id"]: s["title"] for s in first["sessions"] + rest["sessions"]}
    assert titles[old] == "Shopping" and titles[new] is None
    assert titles[mid] == "what is in tonight's log? " + "x" * 34 + "…"  # a legacy session
    assert {s["channel"] for s in rest["sessions"]} == {"web"}
    assert rest["sessions"][0]["interaction_language"] == "en"
    assert anonymous.status_code == 401


async def test_the_web_list_keeps_terminal_and_empty_sessions_apart(
        home: Home, engine: Engine) -> None:
    """Issue 27, loose end: the web chat's list filled with one-line `metnos chat` sessions
    (channel `api`). The web asks for its own and Telegram's spoken conversations, then for
    the terminal's in a group of their own; a session nothing was said in is never listed."""
    web = add_session(engine, age_s=300)
    add_turn(engine, web, "what's on my list?", "Milk.")
    add_session(engine, age_s=10)  # opened, nothing said
    terminal = []
    for n in range(3):
        terminal.append(add_session(engine, channel="api", age_s=100 - n))
        add_turn(engine, terminal[-1], f"hello {n}", "Hi.")
    add_session(engine, channel="api", age_s=5)  # nothing said
    async with gateway_client(home, prefect=False) as client:
        main = (await client.get("/api/sessions", params={
            "exclude_channel": "api", "spoken": "true"})).json()
        group = (await client.get("/api/sessions", params={
            "channel": "api", "spoken": "true"})).json()
        everything = (await client.get("/api/sessions")).json()
    assert [s["session_id"] for s in main["sessions"]] == [web]
    assert [s["session_id"] for s in group["sessions"]] == terminal[::-1]
    assert len(everything["sessions"]) == 6  # without the filters: as before
