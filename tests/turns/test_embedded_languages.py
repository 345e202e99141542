"""Without a model, a sentence in another active language is understood and answered in
that language for its turn; the session keeps its pinned language (issue 12, Build 2)."""

from __future__ import annotations

from tests.gateway.test_turns import wait_closed
from tests.support.home import MakeHome, gateway_client


async def test_an_italian_sentence_in_an_english_session_is_answered_in_italian(
        make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="en", METNOS_TIMEZONE="Europe/Rome")
    async with gateway_client(home) as client:
        first = (await client.post("/api/turns", json={"text": "hello", "lang": "en"})).json()
        session = first["session_id"]
        assert first["reply"].startswith("Hello")
        italian = (await client.post("/api/turns", json={
            "text": "che ore sono?", "session_id": session})).json()
        assert italian["reply"].startswith("Sono le"), italian
        turn = await wait_closed(client, italian["turn_id"])
        assert turn["interaction_language"] == "it"  # this turn's language
        ciao = (await client.post("/api/turns", json={"text": "ciao",
                                                      "session_id": session})).json()
        assert ciao["reply"].startswith("Hello"), ciao  # one word tells no language
        english = (await client.post("/api/turns", json={
            "text": "what time is it?", "session_id": session})).json()
        assert english["reply"].startswith("It's "), english
        await wait_closed(client, english["turn_id"])
        pinned = (await client.get(f"/api/sessions/{session}")).json()
    assert pinned["interaction_language"] == "en"
