"""Acceptance (issue 4): a third language with no code change.

`metnos-prompts add-language fr` on a fresh instance, a sweep by a (scripted) model, review
and mark-synced, then METNOS_LANG=fr: the planner gets the French prompt and the French tool
descriptions, and Metnos answers in French."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metnos.faces.cli.prompts import app
from metnos.ground.settings import get_settings
from metnos.testing.llm_server import ScriptedLLM
from tests.i18n.conftest import copy_resources
from tests.support.fake_translator import fake_translation
from tests.support.home import Home, MakeHome, gateway_client


def cli(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


async def test_french_is_added_translated_reviewed_and_spoken(
        make_home: MakeHome, scripted_llm: ScriptedLLM, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, prefect_api: str) -> None:
    root = copy_resources(tmp_path / "res")
    home = make_home(llm=scripted_llm, lang="it", METNOS_I18N_RESOURCES_DIR=str(root))
    scripted_llm.respond_with(fake_translation)

    added = await asyncio.to_thread(cli, "add-language", "fr")
    assert "fr" in added and (root / "prompts" / "fr").is_dir()
    assert "già" in await asyncio.to_thread(cli, "add-language", "fr")  # idempotent
    swept = await asyncio.to_thread(cli, "translate-all", "--lang", "fr")
    written = int(swept.strip().splitlines()[-1].split()[0])  # "N candidate scritte, ..."
    assert written > 300, swept
    review = await asyncio.to_thread(cli, "review", "planner", "--lang", "fr")
    assert "+## Règles" in review and "+1. Quand un demande" in review  # word for word
    for role in sorted(p.stem for p in (root / "prompts" / "en").glob("*.j2")):  # every prompt
        await asyncio.to_thread(cli, "mark-synced", role, "--lang", "fr")
    for layer in ("manifests", "messages", "channels", "lexicon", "workspace", "planner"):
        await asyncio.to_thread(cli, layer, "mark-synced", "--lang", "fr", "--all")
    rows = json.loads(await asyncio.to_thread(cli, "status", "--json"))
    french = {(r["layer"], r["status"]) for r in rows if r["lang"] == "fr"}
    assert french == {(layer, "synced") for layer in (
        "prompts", "manifests", "messages", "channels", "lexicon", "workspace", "planner")}

    monkeypatch.setenv("METNOS_LANG", "fr")
    get_settings.cache_clear()
    speaker = Home(get_settings(), home.token)
    scripted_llm.respond_with(None)
    scripted_llm.requests.clear()
    scripted_llm.enqueue_tool_call("fs_find", {"pattern": "*.md"})
    scripted_llm.enqueue_text("Voilà vos fichiers.")
    async with gateway_client(speaker) as client:
        resp = await client.post("/api/turns", json={"text": "trouve mes fichiers markdown"})
        body = resp.json()
        session = (await client.get(f"/api/sessions/{body['session_id']}")).json()
    assert body["status"] == "completed", body
    assert body["reply"] == "Voilà vos fichiers."  # the model's words
    [found] = body["activity"]  # what ran, told from the French messages
    assert found["text"] == "Regardé à le espace.", found  # EX_READ_fs_find, word for word
    assert session["interaction_language"] == "fr"
    system = scripted_llm.requests[0]["messages"][0]["content"]
    assert system.startswith("Vous sont Metnos") and "\n1. When" not in system  # the French planner
    tools = {t["function"]["name"]: t["function"]["description"]
             for t in scripted_llm.requests[0]["tools"]}
    assert tools["fs_find"].startswith("Trouver le fichiers")
    schema = scripted_llm.requests[0]["tools"][0]["function"]["parameters"]["properties"]
    assert all(not p["description"].startswith(("The ", "A ")) for p in schema.values()), schema
