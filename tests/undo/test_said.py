"""Undo by saying it (issue 27 point 3): "annulla", "undo that" through real turns on the
gateway, without a model (the embedded planner's path) and with a scripted model calling the
built-in `undo_last` tool; the same checks as the Undo button."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.turns.undo_said import said
from tests.support.home import Home, MakeHome, gateway_client

HEX_ID = re.compile(r"\b[0-9a-f]{32}\b")


async def turn(client: httpx.AsyncClient, text: str, session_id: str | None = None,
               lang: str = "it") -> dict[str, Any]:
    body: dict[str, Any] = {"text": text, "lang": lang}
    if session_id:
        body["session_id"] = session_id
    resp = await client.post("/api/turns", json=body)
    assert resp.status_code == 200, resp.text
    data = resp.json()
    assert data["status"] == "completed", data
    return dict(data)


def audit(home: Home) -> list[dict[str, Any]]:
    path = home.settings.audit_dir / "audit.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines()]


async def test_annulla_after_a_rename_puts_the_name_back_then_says_nothing_is_left(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="it")
    (home.workspace / "compiti.md").write_text("matematica\n")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "rinomina compiti.md in vecchi-compiti.md")
        assert (home.workspace / "vecchi-compiti.md").is_file()
        sid = first["session_id"]
        undone = await turn(client, "annulla", sid)
        assert (home.workspace / "compiti.md").read_text() == "matematica\n"
        assert not (home.workspace / "vecchi-compiti.md").exists()
        assert "compiti.md" in undone["reply"] and not HEX_ID.search(undone["reply"])
        assert "metnos undo" not in undone["reply"]
        [item] = undone["activity"]
        assert item["undo"] is True  # the undo's own Undo button: undo the undo
        redo = item["action_id"]
        assert (home.settings.state_dir / "before" / redo / "manifest.json").is_file()
        again = await turn(client, "annulla l'ultima azione", sid)
        assert "niente" in again["reply"] and not again["activity"]
        assert (home.workspace / "compiti.md").is_file()
        resp = await client.post(f"/api/actions/{redo}/undo")  # the button under the undo
        assert resp.json()["outcome"] == "done", resp.text
        assert (home.workspace / "vecchi-compiti.md").is_file()
    lines = [ln for ln in audit(home) if ln["action"] == "undo"]
    assert [ln["outcome"] for ln in lines] == ["done", "done"]
    assert lines[0]["channel"] == "api" and lines[0]["sender"] == "owner"


async def test_saying_it_twice_undoes_the_change_before_in_english(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="en")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "create the file shopping-notes.md with milk", lang="en")
        sid = first["session_id"]
        assert (home.workspace / "shopping-notes.md").is_file()
        await turn(client, "rename shopping-notes.md to notes.md", sid, lang="en")
        assert (home.workspace / "notes.md").is_file()
        one = await turn(client, "Undo that!", sid, lang="en")
        assert "shopping-notes.md" in one["reply"] and not HEX_ID.search(one["reply"])
        assert (home.workspace / "shopping-notes.md").is_file()
        two = await turn(client, "take that back", sid, lang="en")
        assert not (home.workspace / "shopping-notes.md").exists()  # in the trash, not gone
        assert "shopping-notes.md" in two["reply"] and not HEX_ID.search(two["reply"])
        three = await turn(client, "undo the last change", sid, lang="en")
        assert three["reply"] == "There is nothing left that I can undo in this conversation."


async def test_annulla_never_undoes_another_conversations_change(make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="it")
    (home.workspace / "diario.md").write_text("caro diario\n")
    async with gateway_client(home, prefect=False) as client:
        await turn(client, "rinomina diario.md in segreto.md")
        other = await turn(client, "annulla quello che hai fatto")  # a new session
        assert "niente" in other["reply"]
        assert (home.workspace / "segreto.md").is_file()
        assert not (home.workspace / "diario.md").exists()
    assert not [ln for ln in audit(home) if ln["action"] == "undo"]


async def test_a_scripted_model_undoes_through_the_undo_last_tool(
        make_home: MakeHome, scripted_llm: ScriptedLLM) -> None:
    home = make_home(llm=scripted_llm, autonomy="Full", lang="en")
    (home.workspace / "budget.md").write_text("100\n")
    scripted_llm.enqueue_tool_calls([ToolCall("fs_move", {"src": "budget.md",
                                                          "dst": "budget-2026.md"})])
    scripted_llm.enqueue_text("Renamed.")
    scripted_llm.enqueue_tool_calls([ToolCall("undo_last", {})])
    scripted_llm.enqueue_text("Done, it is back.")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "rename the budget for this year", lang="en")
        assert (home.workspace / "budget-2026.md").is_file()
        second = await turn(client, "hmm no, revert what you did", first["session_id"],
                            lang="en")
        assert (home.workspace / "budget.md").read_text() == "100\n"
        assert not (home.workspace / "budget-2026.md").exists()
        [item] = [a for a in second["activity"] if a["executor"] == "undo"]
        assert "budget.md" in item["text"] and item["undo"] is True
    # what the model read back says what happened, in words, with no id
    undo_result = [m for m in scripted_llm.requests[-1]["messages"] if m["role"] == "tool"][-1]
    assert "budget.md" in undo_result["content"] and not HEX_ID.search(undo_result["content"])
    assert [ln["outcome"] for ln in audit(home) if ln["action"] == "undo"] == ["done"]


def test_a_third_language_is_one_lexicon_file(tmp_path: Path) -> None:
    folder = tmp_path / "lexicon" / "fr"
    folder.mkdir(parents=True)
    (folder / "undo.toml").write_text(
        'verbs = ["annule", "défais"]\nobjects = ["ça", "la dernière modification"]\n'
        'sentences = ["reviens en arrière"]\npolite = ["s\'il te plaît"]\n'
        'confirm = ["je confirme"]\n', encoding="utf-8")
    assert said("Annule la dernière modification, s'il te plaît", ["fr"], tmp_path) == (
        "undo", "fr")
    assert said("reviens en arrière", ["fr"], tmp_path) == ("undo", "fr")
    assert said("Je confirme.", ["fr"], tmp_path) == ("confirm", "fr")
    assert said("annule le rendez-vous de demain", ["fr"], tmp_path) is None


@pytest.mark.parametrize("text", ["annulla", "Annulla l'ultima azione.",
                                  "annulla quello che hai fatto", "undo", "undo that",
                                  "undo the last change", "take that back",
                                  "per favore annulla l'ultima modifica"])
def test_the_shipped_sentences_are_understood(text: str) -> None:
    assert said(text, ["it", "en"]) is not None and said(text, ["it", "en"])[0] == "undo"


@pytest.mark.parametrize("text", ["annulla la riunione di domani", "undo the knot in the rope",
                                  "cancel my gym membership", "what does undo do?"])
def test_other_sentences_with_the_word_are_not_an_undo(text: str) -> None:
    assert said(text, ["it", "en"]) is None


async def test_annulla_takes_back_a_list_change_which_shows_its_undo_handle(
        make_home: MakeHome) -> None:
    home = make_home(autonomy="Full", lang="it")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "aggiungi pane alla lista della spesa")
        [added] = [a for a in first["activity"] if a.get("undo")]  # its Undo button
        assert added["executor"] == "lists" and len(added["action_id"]) == 32
        shown = await turn(client, "cosa c'è nella lista della spesa?", first["session_id"])
        assert "pane" in shown["reply"]
        listed = (await client.get("/api/actions/undoable")).json()["actions"]
        assert [a["handle"] for a in listed] == [added["action_id"][:8]]
        undone = await turn(client, "annulla l'ultima modifica", first["session_id"])
        assert not HEX_ID.search(undone["reply"])
        after = await turn(client, "cosa c'è nella lista della spesa?", first["session_id"])
        assert "pane" not in after["reply"]
        assert (await client.get("/api/actions/undoable")).json()["actions"] == []


async def test_undo_said_with_the_tutors_catalog_in_place_is_not_a_question_for_it(
        make_home: MakeHome, compiled_catalog: Path) -> None:
    from tests.support.tutor_catalog import install_catalog

    home = make_home(autonomy="Full", lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    (home.workspace / "homework.md").write_text("maths\n")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, "rename homework.md to done.md", lang="en")
        said_ = await turn(client, "undo", first["session_id"], lang="en")
        assert "homework.md" in said_["reply"], said_
    assert (home.workspace / "homework.md").read_text() == "maths\n"


@pytest.mark.parametrize(("lang", "rename", "undo", "delete"), [
    ("it", "rinomina compiti.md in fatti.md", "annulla", "elimina compiti.md"),
    ("en", "rename compiti.md to done.md", "undo the last change", "delete compiti.md"),
])
async def test_in_supervised_a_rename_runs_with_undo_and_a_deletion_still_asks(
        make_home: MakeHome, lang: str, rename: str, undo: str, delete: str) -> None:
    """The acceptance of issue 27 on the shipped default (reversibility lowers the cost of
    yes): the rename runs without a card and shows Undo, saying the undo puts the name back,
    and a deletion still waits for a yes."""
    home = make_home(autonomy="Supervised", lang=lang,
                     METNOS_POLICY_REVERSIBLE_WITHOUT_ASKING="true")
    (home.workspace / "compiti.md").write_text("matematica\n")
    async with gateway_client(home, prefect=False) as client:
        first = await turn(client, rename, lang=lang)
        assert not first["approvals"], first
        [item] = [a for a in first["activity"] if a.get("undo")]
        assert not (home.workspace / "compiti.md").exists()
        undone = await turn(client, undo, first["session_id"], lang=lang)
        assert "compiti.md" in undone["reply"], undone
        assert (home.workspace / "compiti.md").read_text() == "matematica\n"
        assert item["action_id"] in {ln.get("action_id") for ln in audit(home)
                                     if ln["action"] == "undo"}
        resp = await client.post("/api/turns?wait=false", json={
            "text": delete, "lang": lang, "session_id": first["session_id"]})
        assert resp.status_code in (200, 202), resp.text
        waiting = await _approval_for(client, resp.json()["turn_id"])
        assert waiting["status"] == "pending"
    assert (home.workspace / "compiti.md").is_file()


async def _approval_for(client: httpx.AsyncClient, turn_id: str) -> dict[str, Any]:
    import asyncio

    for _ in range(200):
        body = (await client.get(f"/api/turns/{turn_id}")).json()
        if body.get("approvals"):
            return dict(body["approvals"][0])
        assert body["status"] != "completed", body  # it ran (or refused) without asking
        await asyncio.sleep(0.1)
    raise AssertionError(f"no approval for {turn_id}")
