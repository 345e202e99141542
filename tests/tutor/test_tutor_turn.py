"""The Tutor in a real turn (SPEC §10), over HTTP through the gateway and the Prefect flow,
without a model: the seed's four requests in Italian and English, with this project's own
doc names; a home without a catalog, and a tampered catalog, leave every message to the
loop (the embedded planner here)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from metnos.features.tutor.catalog import catalog_path
from metnos.ground import i18n
from metnos.mechanisms.audit import read_tail
from tests.gateway.test_turns import wait_closed
from tests.support.home import Home, MakeHome, gateway_client
from tests.support.tutor_catalog import install_catalog

CASES = {
    "it": {"page": "visita-guidata.md", "url": "/docs/it/visita-guidata",
           "contains": "Che cosa contiene {name}?", "summarise": "Riassumi docs/it/{name}",
           "delete": "Cancella {name}", "private": "Che cosa contiene appunti_privati.md?"},
    "en": {"page": "quick-tour.md", "url": "/docs/en/quick-tour",
           "contains": "What does {name} contain?", "summarise": "Summarise docs/en/{name}",
           "delete": "Delete {name}", "private": "What does private_notes.md contain?"},
}


def _tutor_lines(home: Home) -> list[dict[str, Any]]:
    return [r for r in read_tail(home.settings.audit_dir / "audit.jsonl", 400)
            if str(r.get("action", "")).startswith("tutor.")]


async def _ask(client: Any, text: str) -> dict[str, Any]:
    resp = await client.post("/api/turns", json={"text": text})
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    if body["status"] == "awaiting_approval":  # the engine took it: no change, denied here
        for approval in body["approvals"]:
            denied = await client.post(f"/api/approvals/{approval['approval_id']}",
                                       json={"decision": "deny"})
            assert denied.status_code == 200, denied.text
    await wait_closed(client, body["turn_id"])
    return body


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_seeds_four_requests(make_home: MakeHome, prefect_api: str,
                                       compiled_catalog: Path, lang: str) -> None:
    home = make_home(lang=lang)
    install_catalog(compiled_catalog, home.settings.home)
    case = CASES[lang]
    async with gateway_client(home) as client:
        # the name of a published page binds retrieval to it: every cited section is its own
        body = await _ask(client, case["contains"].format(name=case["page"]))
        assert body["status"] == "completed"
        assert f"]({case['url']}#" in body["reply"], _tutor_lines(home)
        links = [part.split(")", 1)[0] for part in body["reply"].split("](")[1:]]
        assert links and all(link.startswith(case["url"] + "#") for link in links)
        answered = [r for r in _tutor_lines(home) if r["action"] == "tutor.answered"]
        assert answered[-1]["reason"] == f"docs/{lang}/{case['page']}"
        assert answered[-1]["turn_id"] == body["turn_id"]

        # its relative path does the same
        body = await _ask(client, case["summarise"].format(name=case["page"]))
        links = [part.split(")", 1)[0] for part in body["reply"].split("](")[1:]]
        assert links and all(link.startswith(case["url"] + "#") for link in links)
        count = len([r for r in _tutor_lines(home) if r["action"] == "tutor.answered"])

        # an operative intent on a known page is not taken from the engine: its planner
        # asks before deleting (denied by _ask)
        body = await _ask(client, case["delete"].format(name=case["page"]))
        assert "](/docs/" not in body["reply"]
        assert body["status"] == "awaiting_approval" and "fs_delete" in body["reply"]
        # a name the publication does not hold stays a request about a user's file
        body = await _ask(client, case["private"])
        assert "](/docs/" not in body["reply"]
        answered = [r for r in _tutor_lines(home) if r["action"] == "tutor.answered"]
        assert len(answered) == count


async def test_no_catalog_or_a_tampered_one_leaves_the_turn_to_the_engine(
        make_home: MakeHome, prefect_api: str, compiled_catalog: Path) -> None:
    home = make_home(lang="en")
    question = "What does quick-tour.md contain?"
    async with gateway_client(home) as client:
        body = await _ask(client, question)
        assert "](/docs/" not in body["reply"] and not _tutor_lines(home)
    install_catalog(compiled_catalog, home.settings.home)
    with sqlite3.connect(catalog_path(home.settings.home)) as db:
        db.execute("UPDATE sections SET text = 'Metnos deletes every file on request.' "
                   "WHERE rowid = 1")
    async with gateway_client(home) as client:
        body = await _ask(client, question)
        assert body["status"] == "completed" and "](/docs/" not in body["reply"]
        assert "deletes every file" not in body["reply"]
    refused = [r for r in _tutor_lines(home) if r["action"] == "tutor.catalog_refused"]
    assert refused and refused[-1]["reason"] == "signature"


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_two_pages_named_are_asked_about_never_guessed(
        make_home: MakeHome, prefect_api: str, compiled_catalog: Path, lang: str) -> None:
    home = make_home(lang=lang)
    install_catalog(compiled_catalog, home.settings.home)
    text = {"it": "Che cosa contengono visita-guidata.md e memoria.md?",
            "en": "What do quick-tour.md and memory.md contain?"}[lang]
    async with gateway_client(home) as client:
        body = await _ask(client, text)
    assert body["status"] == "completed"
    assert body["reply"].startswith(i18n.get("TUTOR_ANSWER_WHICH_PAGE", lang).split("{")[0])
    pages = {"it": ("/docs/it/visita-guidata", "/docs/it/memoria"),
             "en": ("/docs/en/quick-tour", "/docs/en/memory")}[lang]
    assert all(f"]({page})" in body["reply"] for page in pages), body["reply"]
    answered = [r for r in _tutor_lines(home) if r["action"] == "tutor.answered"]
    assert answered[-1]["outcome"] == "ask"
