"""Compaction end to end: a 60-turn conversation through the gateway and the Prefect flow.
Every request keeps its history under the budget, the running summary is persisted, and a
fact the user gave in turn 1 is still in what the model sees at turn 60."""

from __future__ import annotations

import re
from typing import Any

from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatSession
from metnos.mechanisms.llm.tokens import count_messages
from metnos.testing.llm_server import ScriptedLLM
from tests.support.home import MakeHome, gateway_client

BUDGET = 800
FACT = "Remember: my cat is called Ziggy and she was born on 3 March 2019."
FILLER = ("and here is some chatter about the weather, the garden, the shopping and the week "
          "ahead, none of it worth remembering for long")


def summariser(body: dict[str, Any]) -> str | None:
    """A stand-in `fast` model for summaries: the summary so far plus every line the user
    asked to remember (deterministic, as a careful model would)."""
    system = str(body["messages"][0]["content"])
    if "running summary" not in system:
        return None  # a turn's own request: the queue answers it
    previous = re.search(r"## The summary so far\n(.*?)\n\n## The messages", system, re.S)
    kept = [previous.group(1).strip()] if previous else []
    kept += re.findall(r"Remember:[^\n]*", system.split("## The messages", 1)[-1])
    return "\n".join(dict.fromkeys(kept)) or "Nothing to keep."


async def test_sixty_turns_stay_under_the_budget_and_keep_the_first_fact(
        make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", METNOS_AGENT_HISTORY_TOKENS=str(BUDGET))
    scripted_llm.respond_with(summariser)
    session_id = None
    async with gateway_client(home) as client:
        for turn in range(1, 61):
            scripted_llm.enqueue_text(f"Noted, turn {turn}.")
            text = FACT if turn == 1 else f"Turn {turn}: {FILLER}."
            resp = await client.post("/api/turns", json={"text": text,
                                                          "session_id": session_id})
            assert resp.status_code == 200, resp.text
            body = resp.json()
            assert body["status"] == "completed", body
            session_id = body["session_id"]
    turns = [r for r in scripted_llm.requests if "running summary" not in
             str(r["messages"][0]["content"])]
    assert len(turns) == 60
    for request in turns:  # the history between the system prompt and the new message
        assert count_messages(request["messages"][1:-1], "openai/scripted") <= BUDGET
    last = " ".join(str(m["content"]) for m in turns[-1]["messages"][1:-1])
    assert "my cat is called Ziggy" in last
    assert "Turn 2:" not in last  # the early chatter was folded away
    summaries = [r for r in scripted_llm.requests if r not in turns]
    assert summaries, "the history never needed folding"
    from metnos.faces.wiring import build_runtime

    service = await build_runtime(home.settings)
    try:
        with db_session(service.engine) as db:
            chat = db.get(ChatSession, session_id)
            assert chat is not None and chat.summary and "Ziggy" in chat.summary
            assert chat.summary_upto is not None
    finally:
        service.engine.dispose()
        service.audit.close()
