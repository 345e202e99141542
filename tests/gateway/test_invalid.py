"""A refused request in plain words, in the request's language (issue 12): the body's `lang`,
else Accept-Language, else METNOS_LANG; the first problem as `key`/`message`, all of them in
`detail` (field, key, message) for clients. Through the real app over httpx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets
from sqlmodel import select

from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.turns.service import TurnService
from tests.support.home import Home, MakeHome, gateway_client, served_gateway
from tests.support.pg import free_port


@pytest.fixture
async def client(make_home: MakeHome) -> AsyncIterator[httpx.AsyncClient]:
    home: Home = make_home(lang="it")
    async with gateway_client(home, prefect=False) as client:
        yield client


def error_of(resp: httpx.Response) -> dict[str, Any]:
    assert resp.status_code == 422, resp.text
    error: dict[str, Any] = resp.json()["error"]
    assert error["detail"][0]["key"] == error["key"]
    assert error["detail"][0]["message"] == error["message"]
    return error


def turn_count(client: httpx.AsyncClient) -> int:
    service: TurnService = client.app.state.gateway.service  # type: ignore[attr-defined]
    with db_session(service.engine) as db:
        return len(db.exec(select(models.Turn)).all())


@pytest.mark.parametrize(("body", "headers", "message"), [
    ({"text": "", "lang": "en"}, {"Accept-Language": "it"}, "The message is empty."),
    ({"text": ""}, {"Accept-Language": "en-GB"}, "The message is empty."),
    ({"text": ""}, {}, "Il messaggio è vuoto."),  # METNOS_LANG
    ({"text": "", "lang": "it"}, {"Accept-Language": "en"}, "Il messaggio è vuoto."),
    ({"text": " \n\t ", "lang": "en"}, {}, "The message is empty."),
    ({"text": "\u00a0\u2003", "lang": "it"}, {}, "Il messaggio è vuoto."),
])
async def test_an_empty_or_blank_message_is_a_422_in_the_requests_language(
        client: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str],
        message: str) -> None:
    error = error_of(await client.post("/api/turns", json=body, headers=headers))
    assert error["key"] == "ERR_MESSAGE_EMPTY" and error["message"] == message
    assert error["detail"] == [{"field": "text", "key": "ERR_MESSAGE_EMPTY", "message": message}]
    assert "String should" not in str(error) and "body.text" not in str(error)


@pytest.mark.parametrize(("lang", "message"), [
    ("en", "I do not speak “klingon” here: use one of it, en."),
    ("it", "Qui non parlo “klingon”: usa una di queste lingue: it, en."),
])
async def test_an_unknown_language_is_a_422_that_names_the_active_ones(
        client: httpx.AsyncClient, lang: str, message: str) -> None:
    error = error_of(await client.post("/api/turns", json={"text": "ciao", "lang": "klingon"},
                                       headers={"Accept-Language": lang}))
    assert error == {"key": "ERR_LANG_UNKNOWN", "message": message,
                     "detail": [{"field": "lang", "key": "ERR_LANG_UNKNOWN", "message": message}]}
    inactive = error_of(await client.post("/api/turns", json={"text": "hallo", "lang": "de"},
                                          headers={"Accept-Language": lang}))
    assert inactive["key"] == "ERR_LANG_UNKNOWN" and "it, en" in inactive["message"]


async def test_nothing_is_started_for_a_refused_message(client: httpx.AsyncClient) -> None:
    before = turn_count(client)
    for body in ({"text": "   "}, {"text": "ciao", "lang": "klingon"}):
        assert (await client.post("/api/turns", json=body)).status_code == 422
    assert turn_count(client) == before
    # a regional tag of an active language is that language
    ok = await client.post("/api/turns", json={"text": "zzq blorf", "lang": "en-GB"})
    assert ok.status_code == 200 and ok.json()["interaction_language"] == "en"


@pytest.mark.parametrize(("body", "en", "it"), [
    ({}, ("text", "ERR_FIELD_MISSING", "“text” is missing."),
     ("text", "ERR_FIELD_MISSING", "Manca “text”.")),
    ({"text": 5}, ("text", "ERR_FIELD_WRONG_TYPE", "“text” should be text."),
     ("text", "ERR_FIELD_WRONG_TYPE", "“text” deve essere un testo.")),
    ({"text": "a", "forwarded": ["x"] * 11},
     ("forwarded", "ERR_FIELD_TOO_MANY", "“forwarded” has too many items: at most 10."),
     ("forwarded", "ERR_FIELD_TOO_MANY", "“forwarded” ha troppi elementi: al massimo 10.")),
    ({"text": "a", "forwarded": ["ok", 3]},
     ("forwarded[1]", "ERR_FIELD_WRONG_TYPE", "“forwarded[1]” should be text."),
     ("forwarded[1]", "ERR_FIELD_WRONG_TYPE", "“forwarded[1]” deve essere un testo.")),
    ({"text": "a", "session_id": "s" * 65},
     ("session_id", "ERR_FIELD_TOO_LONG", "“session_id” is too long: at most 64 characters."),
     ("session_id", "ERR_FIELD_TOO_LONG",
      "“session_id” è troppo lungo: al massimo 64 caratteri.")),
    ({"text": "a", "colour": "red"},
     ("colour", "ERR_FIELD_UNKNOWN", "“colour” is not something this request accepts."),
     ("colour", "ERR_FIELD_UNKNOWN", "“colour” non è qualcosa che questa richiesta accetta.")),
])
async def test_each_kind_of_problem_has_its_words(
        client: httpx.AsyncClient, body: dict[str, Any], en: tuple[str, str, str],
        it: tuple[str, str, str]) -> None:
    for lang, (field, key, message) in (("en", en), ("it", it)):
        error = error_of(await client.post("/api/turns", json=body,
                                           headers={"Accept-Language": lang}))
        assert error["detail"][0] == {"field": field, "key": key, "message": message}


async def test_query_choices_and_several_problems(client: httpx.AsyncClient) -> None:
    wait = error_of(await client.post("/api/turns", params={"wait": "maybe"},
                                      json={"text": "a"}, headers={"Accept-Language": "en"}))
    assert wait["detail"] == [{"field": "wait", "key": "ERR_FIELD_WRONG_TYPE",
                               "message": "“wait” should be true or false."}]
    decision = error_of(await client.post("/api/approvals/x", json={"decision": "maybe"},
                                          headers={"Accept-Language": "it"}))
    assert decision["key"] == "ERR_FIELD_NOT_ONE_OF"
    assert decision["message"] == "“decision” deve essere uno di questi valori: approve, deny."
    several = error_of(await client.post("/api/turns", json={"text": "", "lang": 3},
                                         headers={"Accept-Language": "en"}))
    assert [(p["field"], p["key"]) for p in several["detail"]] == [
        ("text", "ERR_MESSAGE_EMPTY"), ("lang", "ERR_FIELD_WRONG_TYPE")]
    body = error_of(await client.post("/api/turns", content=b"{not json",
                                      headers={"Content-Type": "application/json",
                                               "Accept-Language": "en"}))
    assert body["key"] == "ERR_BODY_NOT_JSON"


async def test_the_web_chats_socket_refuses_the_same_way(make_home: MakeHome) -> None:
    home = make_home(lang="it", METNOS_GATEWAY_PORT=str(free_port()))
    port = home.settings.gateway.port
    with served_gateway(home):
        headers = {"Authorization": f"Bearer {home.token}", "Accept-Language": "it"}
        async with websockets.connect(f"ws://127.0.0.1:{port}/api/chat",
                                      additional_headers=headers) as socket:
            for frame, key, lang, vars in (
                    ({"text": "  \n", "lang": "en"}, "ERR_MESSAGE_EMPTY", "en", {}),
                    ({"text": ""}, "ERR_MESSAGE_EMPTY", "it", {}),
                    ({"text": "ciao", "lang": "klingon"}, "ERR_LANG_UNKNOWN", "it",
                     {"value": "klingon", "active": "it, en"})):
                await socket.send(json.dumps({"type": "message", **frame}))
                error = json.loads(await socket.recv(decode=True))
                assert error == {"type": "error", "key": key,
                                 "message": i18n.get(key, lang, **vars)}
