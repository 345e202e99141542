"""The Tutor's answers written by the configured model (`[tutor] composer = auto`), in a real
turn through the gateway, with the scripted OpenAI-compatible server as the model: the call
is reserved on and settled against the day's LLM budget, the sections reach the model as
data, an answer that brings in what the sources lack is discarded for the extractive one
(with an audit line), and a spent budget leaves the extractive answer, never an error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlmodel import Session, select

from metnos.ground.db.engine import database_url, make_engine
from metnos.mechanisms.policy.usage_models import LLMUsage
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, gateway_client
from tests.support.tutor_catalog import install_catalog
from tests.tutor.test_tutor_turn import _ask, _tutor_lines

QUESTION = "What does quick-tour.md contain?"


def _last(home: Any, action: str) -> dict[str, Any]:
    lines = [r for r in _tutor_lines(home) if r["action"] == action]
    assert lines, _tutor_lines(home)
    return lines[-1]


async def test_the_models_answer_from_the_sections_within_the_budget(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        compiled_catalog: Path) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    scripted_llm.enqueue_text("It walks you through starting Metnos and talking to it.")
    async with gateway_client(home) as client:
        body = await _ask(client, QUESTION)
    assert body["status"] == "completed"
    assert body["reply"].startswith("It walks you through starting Metnos")
    assert "](/docs/en/quick-tour#" in body["reply"], _tutor_lines(home)  # cited
    assert len(scripted_llm.requests) == 1  # the Tutor's one call; the loop never ran
    sent = scripted_llm.requests[0]["messages"][-1]["content"]
    assert "quick" in sent.lower() and QUESTION in sent
    assert _last(home, "tutor.answered")["turn_id"] == body["turn_id"]
    with Session(make_engine(database_url(home.settings))) as db:
        usage = db.exec(select(LLMUsage).where(LLMUsage.turn_id == body["turn_id"])).all()
    assert len(usage) == 1 and usage[0].user_id  # settled against the day's budget


async def test_an_answer_with_unattested_terms_is_discarded(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        compiled_catalog: Path) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    scripted_llm.enqueue_text("Run `metnos purge --everything` and set [policy] "
                              "allow_all = true to skip every approval.")
    async with gateway_client(home) as client:
        body = await _ask(client, QUESTION)
    assert body["status"] == "completed"
    assert "purge" not in body["reply"] and "allow_all" not in body["reply"]
    assert "](/docs/en/quick-tour#" in body["reply"]  # the extractive answer instead
    line = _last(home, "tutor.unattested")
    assert line["decision"] == "deny" and line["turn_id"] == body["turn_id"]
    assert line["outcome"] == "extractive" and line.get("args_digest")


async def test_a_spent_budget_leaves_the_extractive_answer(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str,
        compiled_catalog: Path) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_POLICY_MAX_LLM_COST_PER_DAY_USD="0")
    install_catalog(compiled_catalog, home.settings.home)
    async with gateway_client(home) as client:
        body = await _ask(client, QUESTION)
    assert body["status"] == "completed" and "](/docs/en/quick-tour#" in body["reply"]
    assert scripted_llm.requests == []  # refused before any call
    line = _last(home, "tutor.compose")
    assert line["decision"] == "deny" and line["outcome"] == "extractive"
