"""Approve and deny by inline button in the middle of a three-step agent-loop turn: the real
gateway with Prefect's turn flow (its pause and resume) and a fake Bot API; the loop goes on
with the step's result or with the denial (the turn and its checks are in
tests/approvals/test_loop_approvals.py)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlmodel import select

from metnos.faces.channels.telegram.cards import parse_button
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.approvals.test_loop_approvals import (
    ASK_TEXT,
    DONE,
    FINAL,
    check_continued,
    prepare,
    stored_turn,
)
from tests.support.home import MakeHome
from tests.telegram.support import buttons, telegram_gateway, until

ANNA = 7001


def cards(tg: FakeTelegram) -> list[Call]:
    return [c for c in tg.calls_of("sendMessage", ANNA) if buttons(c)]


def shown(tg: FakeTelegram) -> list[str]:
    """Every text the bot sent or edited in Anna's chat."""
    return [str(c.params.get("text") or "") for c in tg.calls
            if c.method in ("sendMessage", "editMessageText")
            and str(c.params.get("chat_id")) == str(ANNA)]


async def telegram_turn(engine: Any) -> dict[str, Any]:
    """The one Telegram turn, once closed, as its record keeps it (with its id)."""
    for _ in range(600):
        with db_session(engine) as db:
            ids = [t.id for t in db.exec(select(models.Turn).where(
                models.Turn.channel == "telegram"))]
        if ids:
            [turn_id] = ids
            turn = stored_turn(engine, turn_id)
            if turn["status"] == "completed" and turn["finished_at"]:
                return {**turn, "turn_id": turn_id}
        await asyncio.sleep(0.1)
    raise AssertionError("the Telegram turn never completed")


@pytest.mark.parametrize("decision", ["approve", "deny"])
async def test_a_button_in_the_middle_of_the_loop(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str, decision: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Supervised")
    # the first one: the owner
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        prepare(home, scripted_llm)
        telegram.push_message(ANNA, ASK_TEXT, language_code="en")
        await until(telegram, lambda t: bool(cards(t)), "the approval card")
        [card] = cards(telegram)
        text = str(card.params["text"])
        assert "fs_write" in text and "notes/done.md" in text and "sunday at noon" in text
        assert "fs_read (notes/todo.md)" in text  # the card names the outside data read
        assert not (home.workspace / "notes" / "done.md").exists()
        assert len(scripted_llm.requests) == 2  # the loop waits: no model call meanwhile
        approve, deny = buttons(card)
        pressed = approve if decision == "approve" else deny
        telegram.push_callback(ANNA, pressed["callback_data"], card.result["message_id"],
                               language_code="en")
        engine = client.app.state.gateway.service.engine  # type: ignore[attr-defined]
        turn = await telegram_turn(engine)
        await until(telegram, lambda t: any(FINAL in s for s in shown(t)), "the final reply")
    parsed = parse_button(str(pressed["callback_data"]))
    assert parsed is not None and parsed[1] == decision
    check_continued(home, scripted_llm, turn, parsed[0], decision,
                    "-")  # a button carries no reason
    closed = [c for c in telegram.calls_of("editMessageText", ANNA)
              if str(c.params.get("message_id")) == str(card.result["message_id"])]
    word = "Approved" if decision == "approve" else "Denied"
    assert closed and word in str(closed[0].params["text"])
    assert not closed[0].params.get("reply_markup")  # the buttons are gone
    assert (home.workspace / "notes" / "done.md").exists() is (decision == "approve")
    if decision == "approve":
        assert (home.workspace / "notes" / "done.md").read_text() == DONE
