"""A reply streams into one Telegram message, edited about once a second, then set to the
final text with what ran after the prose. The real gateway (Prefect turn flow, the agent
loop, the sandbox), the scripted LLM streaming word by word, the fake Bot API."""

from __future__ import annotations

import time

import pytest

from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.testing.telegram_server import Call, FakeTelegram
from tests.support.home import MakeHome
from tests.telegram.support import buttons, shown_texts, telegram_gateway, until

ANNA = 7001
WORDS = 40
DELAY_S = 0.1  # per chunk: the answer takes about 4 s to stream


def edits(tg: FakeTelegram, chat_id: int) -> list[Call]:
    return tg.calls_of("editMessageText", chat_id)


def streamed_text() -> str:
    return " ".join(f"word{i}" for i in range(WORDS)) + "."


def check_throttled(tg: FakeTelegram, chat_id: int, first_send: Call, last: Call) -> None:
    """Edits ≈ once a second (the final edit may follow the last throttled one at once)."""
    made = edits(tg, chat_id)
    elapsed = last.at - first_send.at
    assert len(made) >= 2, made  # the text grew in place, not only at the end
    assert len(made) <= elapsed / 1.0 + 2, (len(made), elapsed)
    throttled = [first_send, *made[:-1]]  # every request before the final edit
    gaps = [b.at - a.at for a, b in zip(throttled, throttled[1:], strict=False)]
    assert all(gap >= 0.9 for gap in gaps), gaps


async def test_a_reply_streams_into_one_message_edited_about_once_a_second(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    text = streamed_text()
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        before = len(telegram.sent_texts(ANNA))
        scripted_llm.chunk_delay_s = DELAY_S
        scripted_llm.enqueue_text(text)
        started = time.monotonic()
        telegram.push_message(ANNA, "tell me forty words", language_code="en")
        await until(telegram, lambda t: any(str(c.params.get("text")) == text
                                            for c in edits(t, ANNA)), "the final edit")
    sends = telegram.calls_of("sendMessage", ANNA)[before:]
    assert len(sends) == 1  # one message for the whole reply
    first = str(sends[0].params["text"])
    assert text.startswith(first) and len(first) < len(text) / 2  # sent at the first words
    made = edits(telegram, ANNA)
    assert str(made[-1].params["text"]) == text
    assert all(str(c.params["message_id"]) == str(sends[0].result["message_id"]) for c in made)
    shown = [first, *(str(c.params["text"]) for c in made)]
    assert all(b.startswith(a) and len(b) > len(a) for a, b in zip(shown, shown[1:],
                                                                    strict=False))
    check_throttled(telegram, ANNA, sends[0], made[-1])
    assert made[-1].at - started >= WORDS * DELAY_S * 0.9  # it really streamed for ~4 s


@pytest.mark.parametrize("lang", ["en", "it"])
async def test_a_streamed_tool_turn_ends_with_the_prose_then_what_ran(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str, lang: str) -> None:
    home = make_home(llm=scripted_llm, lang=lang)
    (home.workspace / "note.txt").write_text("the boiler was serviced on Monday\n")
    answer = "The note says the boiler was serviced on Monday."
    async with telegram_gateway(home, telegram, owner=ANNA, owner_lang=lang) as (client, _):
        before = len(telegram.sent_texts(ANNA))
        scripted_llm.chunk_delay_s = 0.05
        scripted_llm.enqueue_tool_call("fs_read", {"path": "note.txt"})
        scripted_llm.enqueue_text(answer)
        telegram.push_message(ANNA, "what does note.txt say?", language_code=lang)
        await until(telegram, lambda t: any("note.txt" in str(c.params.get("text"))
                                            for c in edits(t, ANNA)), "the final edit")
    assert len(telegram.calls_of("sendMessage", ANNA)[before:]) == 1
    final = str(edits(telegram, ANNA)[-1].params["text"])
    prose, _, activity = final.partition("\n\n")
    assert prose == answer
    assert activity.startswith("• <i>") and "note.txt" in activity  # what ran, after it
    assert "boiler" in scripted_llm.requests[1]["messages"][-1]["content"]  # the tool result


async def test_after_an_approval_card_the_rest_streams_below_it(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en", autonomy="Supervised")
    done = "Your note is written and ready."
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        before = len(telegram.calls_of("sendMessage", ANNA))
        scripted_llm.chunk_delay_s = 0.02
        scripted_llm.enqueue_tool_calls(
            [ToolCall("fs_write", {"path": "note.txt", "content": "hello\n"})],
            text="I will write the note.")
        scripted_llm.enqueue_text(done)
        telegram.push_message(ANNA, "write hello in note.txt", language_code="en")
        await until(telegram, lambda t: any(buttons(c) for c in t.calls_of("sendMessage", ANNA)),
                    "the approval card")
        card = next(c for c in telegram.calls_of("sendMessage", ANNA) if buttons(c))
        approve = buttons(card)[0]["callback_data"]
        telegram.push_callback(ANNA, approve, card.result["message_id"], language_code="en")
        await until(telegram, lambda t: any(done in text for text in shown_texts(t, ANNA)),
                    "the resumed reply")
    sends = telegram.calls_of("sendMessage", ANNA)[before:]
    assert len(sends) == 3  # the streamed text, the card, the reply below the card
    assert sends[1] is card
    messages = shown_texts(telegram, ANNA)[-3:]
    assert messages[0] == "I will write the note."  # what streamed before the card stays
    prose, _, activity = messages[2].partition("\n\n")
    assert prose == done and "note.txt" in activity
    assert (home.workspace / "note.txt").read_text() == "hello\n"
