"""The soft communication intent (issue 12, SPEC §9.7): a message clearly written in another
active language is answered in that language, that turn only; the session keeps its pinned
language. Through the real gateway; the floor of "clearly" is measured on the sentences below.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from metnos.ground.i18n.lint import detect_language
from metnos.testing.llm_server import ScriptedLLM
from metnos.turns.language import message_language
from tests.support.home import Home, MakeHome, gateway_client

ACTIVE = ("it", "en")
# clearly Italian / clearly English: the turn speaks the message's language
CLEAR = {
    "it": ["aggiungi il latte alla lista della spesa", "ricordami di comprare il pane",
           "cosa c'è nella lista della spesa?", "togli le uova dalla lista",
           "che giorno è oggi?", "mostrami la lista delle cose da fare",
           "svuota la lista della spesa", "scrivi una nota: chiamare la nonna",
           "ricordami alle 18 di chiamare Marco", "metti il latte nella spesa",
           "ho bisogno di aiuto", "mostrami il contenuto del file note.md",
           "aggiungi cookies alla lista", "metti in lista il detersivo", "ho finito il caffè"],
    "en": ["remind me to buy bread", "remove eggs from the list", "what day is it today?",
           "good morning, how are you?", "what's the weather tomorrow?",
           "what about tomorrow", "and what about now?",
           "show me the contents of the file note.md"],
}
# too short, or not clear enough: the session's language holds (never the wrong one)
UNCLEAR = ["ok", "ciao", "hello", "grazie mille", "thanks a lot", "latte", "milk", "ok ok ok",
           "che ore sono?", "add bread", "la lista", "e domani?", "and tomorrow?",
           "buy parmigiano and mozzarella", "pizza margherita tonight",
           "add spaghetti to the list", "send the file to Giuseppe Rossi",
           "grazie, thanks a lot", "call Francesca about the pasta", "leggi README.md",
           "zzq blorf quux", "🛒🥛", "`rm -rf /tmp/x` /etc/passwd"]


@pytest.mark.parametrize(("lang", "text"), [(lang, t) for lang, ts in CLEAR.items() for t in ts])
def test_a_clear_sentence_names_its_language(lang: str, text: str) -> None:
    assert message_language(text, ACTIVE)[0] == lang


@pytest.mark.parametrize("text", UNCLEAR)
def test_a_short_or_unclear_message_names_none(text: str) -> None:
    assert message_language(text, ACTIVE)[0] is None


def audit_lines(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


async def ask(client: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post("/api/turns", json=body)
    assert resp.status_code == 200, resp.text
    answer: dict[str, Any] = resp.json()
    assert answer["status"] == "completed", answer
    return answer


def spoken(text: str) -> str | None:
    return detect_language(text, list(ACTIVE), min_letters=10)[0]


async def test_an_italian_sentence_in_an_english_session_is_answered_in_italian(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")  # no model: the embedded planner
    (home.workspace / "note.md").write_text("latte, pane\n")
    async with gateway_client(home, prefect=False) as client:
        first = await ask(client, {"text": "show me the contents of the file note.md",
                                   "lang": "en"})
        sid = first["session_id"]
        italian = await ask(client, {"text": "mostrami il contenuto del file note.md",
                                     "session_id": sid})
        english = await ask(client, {"text": "show me the contents of the file note.md",
                                     "session_id": sid})
        session = (await client.get(f"/api/sessions/{sid}")).json()
        stored = (await client.get(f"/api/turns/{italian['turn_id']}")).json()
    # matched by the embedded planner in Italian, and told in Italian
    assert [a["executor"] for a in italian["activity"]] == ["fs_read"], italian
    assert italian["interaction_language"] == stored["interaction_language"] == "it"
    assert spoken(italian["reply"]) == "it", italian["reply"]
    assert english["interaction_language"] == "en" and spoken(english["reply"]) == "en"
    assert italian["reply"] != english["reply"]
    assert session["interaction_language"] == "en"  # the pinned language is unchanged
    [switch] = [ln for ln in audit_lines(home) if ln["action"] == "i18n.communication"]
    assert switch["turn_id"] == italian["turn_id"]
    assert switch["reason"].startswith("comm=it/soft basis=message session=en confidence=")


async def test_the_model_is_asked_in_the_messages_language(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with gateway_client(home, prefect=False) as client:
        scripted_llm.enqueue_text("Hello.")
        first = await ask(client, {"text": "good morning, how are you?"})
        scripted_llm.enqueue_text("Ciao.")
        await ask(client, {"text": "aggiungi il latte alla lista della spesa",
                           "session_id": first["session_id"]})
        italian_prompt = scripted_llm.requests[-1]["messages"][0]["content"]
        scripted_llm.enqueue_text("Ok.")
        await ask(client, {"text": "ok", "session_id": first["session_id"]})  # no evidence
        english_prompt = scripted_llm.requests[-1]["messages"][0]["content"]
        session = (await client.get(f"/api/sessions/{first['session_id']}")).json()
    assert "You are Metnos" in english_prompt and "You are Metnos" not in italian_prompt
    assert session["interaction_language"] == "en"


@pytest.mark.parametrize("env", [{"METNOS_I18N_INTENTS_ENABLED": "false"},
                                 {"METNOS_I18N_COMMUNICATION": '{"language": "en"}'}])
async def test_without_the_soft_intent_the_session_language_holds(
        make_home: MakeHome, env: dict[str, str]) -> None:
    home = make_home(lang="en", **env)
    async with gateway_client(home, prefect=False) as client:  # a sentence nothing matches
        body = await ask(client, {"text": "vorrei sapere quando passa il prossimo autobus"})
    assert body["interaction_language"] == "en"
