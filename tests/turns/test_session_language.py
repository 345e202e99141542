"""The four language concepts kept apart, through the real gateway (SPEC §9.6, §9.7):

- a new session takes its interaction language from the client's UI locale (`lang`, else
  Accept-Language, else METNOS_LANG);
- a resumed session keeps it, whatever locale later requests bring (they only change the
  chrome of those requests: their error messages);
- a legacy session stored without one gets the workspace language, pinned once;
- the hard artifact intent: an fs_write that would turn an Italian file into English asks.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from sqlalchemy import text

from metnos.faces.registry import create_tables
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatSession
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import Home, MakeHome, gateway_client

IT_TEXT = ("La lista della spesa per la settimana: latte, pane, uova e un po' di frutta "
           "fresca. Ricordarsi di passare dal fornaio prima di cena.\n")
EN_TEXT = ("The shopping list for the week: milk, bread, eggs and some fresh fruit. "
           "Remember to stop by the baker before dinner.\n")
GIBBERISH = "zzq blorf quux"  # the embedded planner understands none of it


def audit_lines(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def not_understood(lang: str) -> str:
    return i18n.get("MSG_PLAN_NOT_UNDERSTOOD", lang, capabilities="").split("\n")[0]


async def turn(client: httpx.AsyncClient, body: dict[str, Any],
               **headers: str) -> dict[str, Any]:
    resp = await client.post("/api/turns", json=body, headers=headers)
    assert resp.status_code == 200, resp.text
    answer: dict[str, Any] = resp.json()
    return answer


async def session_language(client: httpx.AsyncClient, session_id: str) -> str | None:
    resp = await client.get(f"/api/sessions/{session_id}")
    assert resp.status_code == 200, resp.text
    value: str | None = resp.json()["interaction_language"]
    return value


async def test_a_new_session_takes_its_language_from_the_ui_locale(
        make_home: MakeHome) -> None:
    home = make_home(lang="it")
    async with gateway_client(home, prefect=False) as client:
        by_body = await turn(client, {"text": GIBBERISH, "lang": "en-GB"})
        by_header = await turn(client, {"text": GIBBERISH},
                               **{"Accept-Language": "fr;q=0.9, en-US;q=0.95"})
        by_process = await turn(client, {"text": GIBBERISH})
        unknown = await client.post("/api/turns", json={"text": GIBBERISH, "lang": "xx-??"})
        assert unknown.status_code == 422  # a tag of no active language (issue 12)
        assert unknown.json()["error"]["key"] == "ERR_LANG_UNKNOWN"
        for body, lang in ((by_body, "en"), (by_header, "en"), (by_process, "it")):
            assert body["interaction_language"] == body["ui_locale"] == lang, body
            assert body["reply"].startswith(not_understood(lang)), body["reply"]
            assert await session_language(client, body["session_id"]) == lang
        # the chrome of any route reads Accept-Language the same way, q-values included
        missing = await client.get("/api/turns/nope",
                                   headers={"Accept-Language": "de, fr;q=0.9, en;q=0.8"})
        assert missing.json()["error"]["message"] == i18n.get(
            "ERR_TURN_NOT_FOUND", "en", turn_id="nope")
    assert not_understood("it") != not_understood("en")  # the replies above tell them apart


async def test_a_resumed_session_keeps_its_language_when_the_ui_locale_changes(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="it", METNOS_GATEWAY_MAX_MESSAGE_CHARS="200")
    (home.workspace / "note.md").write_text("buy milk\n")
    # what ran is told in the session's language (the model's words are its own)
    looked = i18n.get("MSG_AGENT_ACTIVITY_READ", "en", executor="fs_read",
                      source="note.md")
    assert looked != i18n.get("MSG_AGENT_ACTIVITY_READ", "it", executor="fs_read",
                              source="note.md")
    async with gateway_client(home) as client:
        scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"})
        scripted_llm.enqueue_text("Your note says: buy milk.")
        first = await turn(client, {"text": "what is in my note?", "lang": "en"})
        sid = first["session_id"]
        assert first["status"] == "completed"
        assert [a["text"] for a in first["activity"]] == [looked]
        scripted_llm.enqueue_tool_call("fs_read", {"path": "note.md"})
        scripted_llm.enqueue_text("Still: buy milk.")
        # (an English message: one clearly in Italian would be answered in Italian, that
        # turn only — tests/turns/test_turn_language.py)
        again = await turn(client, {"text": "and what about now?", "lang": "it",
                                    "session_id": sid}, **{"Accept-Language": "it"})
        assert again["session_id"] == sid and again["status"] == "completed"
        assert [a["text"] for a in again["activity"]] == [looked]  # still English
        assert (again["interaction_language"], again["ui_locale"]) == ("en", "it")
        # the planner too was asked in the session's language, with its language block
        system = scripted_llm.requests[-1]["messages"][0]["content"]
        assert "You are Metnos" in system and "Reply in English, unless" in system
        tool = next(t for t in scripted_llm.requests[-1]["tools"]
                    if t["function"]["name"] == "fs_read")
        assert tool["function"]["description"].startswith("Read")
        assert await session_language(client, sid) == "en"
        # the UI locale only decides the chrome of that one request: an error message
        too_long = await client.post("/api/turns", json={
            "text": "x" * 201, "lang": "it", "session_id": sid})
        assert too_long.status_code == 413
        assert too_long.json()["error"]["message"] == i18n.get(
            "ERR_MESSAGE_TOO_LONG", "it", length=201, limit=200)
        stored = (await client.get(f"/api/turns/{again['turn_id']}")).json()
        assert stored["interaction_language"] == "en"


async def test_a_legacy_session_gets_the_workspace_language_pinned_once(
        make_home: MakeHome) -> None:
    home = make_home(lang="en", METNOS_I18N_WORKSPACE_LANGUAGE="it")
    engine = make_engine(database_url(home.settings))
    try:  # an older database: the column was NOT NULL; the gateway's start-up migrates it
        create_tables(engine)
        with engine.begin() as conn:
            conn.execute(text("ALTER TABLE chat_session "
                              "ALTER COLUMN interaction_language SET NOT NULL"))
    finally:
        engine.dispose()
    async with gateway_client(home, prefect=False) as client:
        service = client.app.state.gateway.service  # type: ignore[attr-defined]
        with db_session(service.engine) as db:
            db.add(ChatSession(id="legacy-1", user_id="owner", channel="api"))
        assert await session_language(client, "legacy-1") is None  # reading pins nothing
        bodies = await asyncio.gather(*[
            turn(client, {"text": GIBBERISH, "session_id": "legacy-1", "lang": "en"},
                 **{"Accept-Language": "en"}) for _ in range(3)])
        for body in bodies:  # the workspace's language, not the browser's
            assert (body["interaction_language"], body["ui_locale"]) == ("it", "en")
            assert body["reply"].startswith(not_understood("it")), body["reply"]
        later = await turn(client, {"text": GIBBERISH, "session_id": "legacy-1"})
        assert later["interaction_language"] == "it"
        assert await session_language(client, "legacy-1") == "it"
    pins = [ln for ln in audit_lines(home) if ln["action"] == "session.language_pinned"]
    assert [(ln["session_id"], ln["reason"]) for ln in pins] == [
        ("legacy-1", "interaction_language=it (workspace language)")]


async def test_create_tables_migration_is_idempotent(make_home: MakeHome) -> None:
    home = make_home()
    engine = make_engine(database_url(home.settings))
    try:
        for _ in range(2):
            create_tables(engine)
        with engine.connect() as conn:
            nullable = conn.execute(text(
                "SELECT is_nullable FROM information_schema.columns WHERE "
                "table_name = 'chat_session' AND column_name = 'interaction_language'")).scalar()
    finally:
        engine.dispose()
    assert nullable == "YES"


async def test_writing_an_italian_file_in_english_asks_the_owner(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="it", autonomy="Full")
    target = home.workspace / "spesa.md"
    target.write_text(IT_TEXT, encoding="utf-8")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "spesa.md", "content": EN_TEXT})
    scripted_llm.enqueue_text("Non l'ho riscritta.")
    async with gateway_client(home, prefect=False) as client:
        body = await turn(client, {"text": "riscrivi la lista della spesa", "lang": "it"})
        assert body["status"] == "awaiting_approval", body  # in Full it would just run
        [pending] = body["approvals"]
        assert pending["executor"] == "fs_write"
        assert ("Così scriverei spesa.md in inglese, ma il file è in italiano. "
                "Procedo lo stesso?") in body["reply"], body["reply"]
        assert target.read_text(encoding="utf-8") == IT_TEXT  # nothing written yet
        resp = await client.post(f"/api/approvals/{pending['approval_id']}",
                                 json={"decision": "deny"})
        assert resp.status_code == 200, resp.text
        for _ in range(200):
            if (await client.get(f"/api/turns/{body['turn_id']}")).json()["finished_at"]:
                break
            await asyncio.sleep(0.05)
    assert target.read_text(encoding="utf-8") == IT_TEXT
    lines = audit_lines(home)
    policy = lines.pop(0)  # written when the gateway started
    assert (policy["action"], policy["reason"]) == (
        "i18n.intent_policy", "comm=it/soft artifact=preserve-existing-or-user-language/hard "
                              "translations=off rules=0")
    assert [(ln["action"], ln["decision"], ln["outcome"]) for ln in lines][:2] == [
        ("i18n.artifact_intent", "info", "ask"), ("fs_write", "ask", "awaiting_approval")]
    assert lines[0]["reason"].startswith("path=spesa.md expected=it detected=en ")
    assert lines[1]["reason"] == "ASK_I18N_ARTIFACT_EXISTING"


async def test_writing_in_the_file_language_runs_without_asking(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Full")
    target = home.workspace / "spesa.md"
    target.write_text(IT_TEXT, encoding="utf-8")
    better = IT_TEXT.replace("latte", "latte di avena")
    scripted_llm.enqueue_tool_call("fs_write", {"path": "spesa.md", "content": better})
    scripted_llm.enqueue_text("Added.")
    async with gateway_client(home, prefect=False) as client:
        body = await turn(client, {"text": "add oat milk to the list", "lang": "en"})
    assert body["status"] == "completed", body
    assert target.read_text(encoding="utf-8") == better
    assert not [ln for ln in audit_lines(home) if ln["action"] == "i18n.artifact_intent"]
