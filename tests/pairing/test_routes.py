"""`/api/pairing` through the real gateway (lifespan, owner token, database, audit log)."""

from __future__ import annotations

import json

from sqlmodel import Session

from metnos.features.pairing import admit
from metnos.ground.db.engine import database_url, make_engine
from metnos.ground.db.engine import session as db_session
from tests.pairing.support import pairing_client
from tests.support.home import Home, MakeHome


def _request_code(home: Home, channel: str, sender: str) -> str:
    engine = make_engine(database_url(home.settings))
    try:
        with db_session(engine) as db:
            adm = admit(db, channel=channel, sender_id=sender, settings=home.settings.policy)
    finally:
        engine.dispose()
    assert adm.code
    return adm.code


def _audit(home: Home) -> list[dict[str, object]]:
    path = home.workspace / ".audit" / "audit.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [x for x in lines if x["action"] != "i18n.intent_policy"]  # one per start-up


async def test_list_approve_revoke(make_home: MakeHome) -> None:
    home = make_home(lang="it")
    async with pairing_client(home) as client:  # the lifespan creates the tables
        empty = await client.get("/api/pairing")
        assert empty.status_code == 200, empty.text
        assert empty.json() == {"pending": [], "paired": []}
        code = _request_code(home, "telegram", "42")
        listed = (await client.get("/api/pairing")).json()
        assert [(r["channel"], r["sender_id"]) for r in listed["pending"]] == [("telegram", "42")]
        assert code not in json.dumps(listed)  # codes are never listed: the sender holds it

        resp = await client.post("/api/pairing/approve", json={"code": f" {code.lower()} "})
        assert resp.status_code == 200, resp.text
        body = resp.json()
        assert (body["role"], body["user_id"], body["approved_by"]) == ("owner", "owner", "owner")
        assert body["message"] == "Paired telegram:42 as owner (user owner)."
        listed = (await client.get("/api/pairing")).json()
        assert listed["pending"] == [] and listed["paired"][0]["sender_id"] == "42"

        resp = await client.post("/api/pairing/revoke",
                                 json={"channel": "telegram", "sender_id": "42"})
        assert resp.status_code == 200 and resp.json()["revoked"] is True
        assert (await client.get("/api/pairing")).json()["paired"] == []
        resp = await client.post("/api/pairing/revoke",
                                 json={"channel": "telegram", "sender_id": "42"})
        assert resp.status_code == 404
        assert resp.json()["error"]["key"] == "ERR_PAIRING_NOT_PAIRED"
    decisions = [(ln["reason"], ln["outcome"]) for ln in _audit(home) if ln["action"] == "pairing"]
    assert decisions == [("MSG_PAIRING_APPROVED", "approved telegram:42 as owner"),
                         ("MSG_PAIRING_REVOKED", "revoked telegram:42"),
                         ("ERR_PAIRING_NOT_PAIRED", "not_paired")]


async def test_errors_speak_the_callers_language(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with pairing_client(home, lang="it") as client:
        resp = await client.post("/api/pairing/approve", json={"code": "ABCDEFGH"})
        assert resp.status_code == 404
        error = resp.json()["error"]
        assert error["key"] == "ERR_PAIRING_CODE_UNKNOWN"
        assert error["message"].startswith("Non c'è nessuna richiesta di abbinamento")
        resp = await client.post("/api/pairing/approve", json={"code": "ABCDEFGH", "x": 1})
        assert resp.status_code == 422
        for _ in range(4):
            await client.post("/api/pairing/approve", json={"code": "ABCDEFGH"})
        resp = await client.post("/api/pairing/approve", json={"code": "ABCDEFGH"},
                                 headers={"Accept-Language": "en"})
        assert resp.status_code == 429
        assert resp.json()["error"]["message"] == (
            "Too many wrong pairing codes: approvals are locked for 15 more minutes.")


async def test_owner_token_required(make_home: MakeHome) -> None:
    home = make_home()
    code = _request_code(home, "telegram", "42")
    async with pairing_client(home, token="wrong") as client:
        for method, path, body in (("GET", "/api/pairing", None),
                                   ("POST", "/api/pairing/approve", {"code": code}),
                                   ("POST", "/api/pairing/revoke",
                                    {"channel": "telegram", "sender_id": "42"})):
            resp = await client.request(method, path, json=body)
            assert resp.status_code == 401, (path, resp.text)
    engine = make_engine(database_url(home.settings))
    try:
        with Session(engine) as db:
            again = admit(db, channel="telegram", sender_id="42", settings=home.settings.policy)
            assert again.status == "ignored"  # still pending: nothing was paired
    finally:
        engine.dispose()
