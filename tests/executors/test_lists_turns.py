"""A shopping list through the gateway with no model: the embedded planner, the policy at the
default autonomy (no question asked), the real sandbox, Prefect's turn flow, and the undo route."""

from __future__ import annotations

from typing import Any

import httpx

from metnos.testing.llm_server import ScriptedLLM
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client


async def _say(client: httpx.AsyncClient, text: str) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    assert body["status"] == "completed", body
    turn = await wait_closed(client, body["turn_id"])
    assert [(s["executor"], s["decision"], s["outcome"]) for s in turn["steps"]] == [
        ("lists", "allow", "done")], turn["steps"]
    return turn


def _records(home: Home) -> set[str]:
    before = home.settings.state_dir / "before"
    return {p.name for p in before.iterdir()} if before.is_dir() else set()


async def test_a_shopping_list_without_a_model(make_home: MakeHome, prefect_api: str) -> None:
    home = make_home(lang="it")
    path = home.workspace / "lists" / "shopping.md"  # one list, whatever its language
    async with gateway_client(home) as client:
        added = await _say(client, "aggiungi latte, uova e pane alla lista della spesa")
        assert added["reply"] == "Ho aggiunto latte, uova e pane alla lista della spesa (3 voci)."
        assert path.read_text() == "# Spesa\n\n- latte\n- uova\n- pane\n"
        records = _records(home)
        shown = await _say(client, "cosa c'è nella lista della spesa?")
        assert shown["reply"] == "La lista della spesa (3 voci):\n- latte\n- uova\n- pane"
        assert _records(home) == records  # a look at the list leaves nothing to undo
        assert [(a["executor"], a["undo"]) for a in added["activity"]] == [("lists", True)]
        assert [(a["executor"], a["undo"]) for a in shown["activity"]] == [("lists", False)]
        removed = await _say(client, "togli le uova dalla lista della spesa")
        assert removed["reply"] == "Ho tolto uova dalla lista della spesa (restano 2 voci)."
        assert path.read_text() == "# Spesa\n\n- latte\n- pane\n"
        action_id = removed["steps"][0]["action_id"]
        assert action_id in _records(home)
        undone = await client.post(f"/api/actions/{action_id}/undo")
        assert undone.status_code == 200, undone.text
        assert undone.json()["outcome"] == "done"
        assert path.read_text() == "# Spesa\n\n- latte\n- uova\n- pane\n"


async def test_lists_reminders_and_notes_in_english_on_the_plain_pipeline(
        make_home: MakeHome) -> None:
    home = make_home(lang="en")
    async with gateway_client(home, prefect=False) as client:
        added = await _say(client, "add milk, eggs and bread to my shopping list")
        assert added["reply"] == "Added milk, eggs, and bread to the shopping list (3 items)."
        again = await _say(client, "put milk on the shopping list")
        assert again["reply"] == "Already on the shopping list: milk. Nothing changed."
        reminded = await _say(client, "remind me to buy stamps, envelopes and glue")
        assert reminded["reply"] == (
            "Added buy stamps, envelopes and glue to the reminders list (1 item).")
        noted = await _say(client, "note: the gate code is 1234")
        assert noted["reply"] == "Added the gate code is 1234 to the notes list (1 item)."
        cleared = await _say(client, "clear my shopping list")
        assert cleared["reply"] == "Emptied the shopping list (3 items removed)."
    lists = home.workspace / "lists"
    assert sorted(p.name for p in lists.iterdir()) == ["notes.md", "reminders.md", "shopping.md"]
    assert (lists / "reminders.md").read_text() == (
        "# Reminders\n\n- buy stamps, envelopes and glue\n")
    assert (lists / "shopping.md").read_text() == "# Shopping\n\n"


async def test_one_shopping_list_whatever_language_names_it(make_home: MakeHome) -> None:
    """Issue 27: an Italian sentence, an English one, then a question: one list, both items;
    a list the layers do not know keeps its own name."""
    home = make_home(lang="it")
    async with gateway_client(home, prefect=False) as client:
        await _say(client, "aggiungi latte")
        await _say(client, "add bread")
        await _say(client, "mettimi anche pane e uova nella lista")
        shown = await _say(client, "what's on the shopping list?")
        assert shown["reply"] == (
            "The shopping list (4 items):\n- latte\n- bread\n- pane\n- uova"), shown["reply"]
        asked = await _say(client, "cosa devo comprare?")
        assert asked["reply"].startswith("La lista della spesa (4 voci):"), asked["reply"]
        await _say(client, "add a bike to the gifts list")
    lists = home.workspace / "lists"
    assert sorted(p.name for p in lists.iterdir()) == ["gifts.md", "shopping.md"]
    assert (lists / "shopping.md").read_text() == "# Spesa\n\n- latte\n- bread\n- pane\n- uova\n"


async def test_the_two_lists_of_an_older_home_are_merged_at_start(make_home: MakeHome) -> None:
    home = make_home(lang="en")
    lists = home.workspace / "lists"
    lists.mkdir(parents=True, exist_ok=True)
    (lists / "spesa.md").write_text("# Spesa\n\n- latte\n- uova\n")
    (lists / "shopping.md").write_text("# Shopping\n\n- eggs\n- Uova\n")
    async with gateway_client(home, prefect=False) as client:
        assert not (lists / "spesa.md").exists()  # merged when the gateway started
        shown = await _say(client, "what's on my shopping list?")
        assert shown["reply"] == "The shopping list (3 items):\n- eggs\n- Uova\n- latte"


async def test_the_model_lands_on_the_same_list(make_home: MakeHome,
                                                scripted_llm: ScriptedLLM) -> None:
    """With a model, the list's name is the model's word: "spesa", "groceries" and "the shopping
    list" are still one file, named in the reply in the session's language."""
    home = make_home(llm=scripted_llm, lang="it")
    for name, item in (("spesa", "latte"), ("groceries", "bread"), ("the shopping list", "tè")):
        scripted_llm.enqueue_tool_call("lists", {"action": "add", "list": name, "items": [item]})
        scripted_llm.enqueue_text("Fatto.")
    async with gateway_client(home, prefect=False) as client:
        for text in ("aggiungi il latte alla spesa", "add bread to the groceries", "metti il tè"):
            await _say(client, text)
    lists = home.workspace / "lists"
    assert sorted(p.name for p in lists.iterdir()) == ["shopping.md"]
    assert (lists / "shopping.md").read_text() == "# Spesa\n\n- latte\n- bread\n- tè\n"
