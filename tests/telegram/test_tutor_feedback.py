"""👍/👎 under a real Tutor answer on Telegram (issue 14, Build 8): the real gateway with the
channel on a fake Bot API. The asker's tap counts (👎 first asks why); another paired user's,
or the asker's from another chat, is refused with an alert and an audit line."""

from __future__ import annotations

from typing import Any

from sqlmodel import select

from metnos.faces.channels.telegram.feedback import parse_feedback
from metnos.features.tutor.feedback_models import TutorAnswer, TutorGap
from metnos.ground import i18n
from metnos.ground.db.engine import database_url, make_engine, session
from metnos.testing.telegram_server import FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome
from tests.support.tutor_catalog import install_catalog
from tests.telegram.support import buttons, pair, telegram_gateway, until
from tests.telegram.test_undo_and_cards import answer_to

ANNA, BOB = 7101, 8202


def feedback_buttons(tg: FakeTelegram, chat_id: int) -> list[tuple[int, str, str]]:
    """(message id, data, text) of the feedback buttons the chat's messages show now."""
    shown: dict[int, list[dict[str, Any]]] = {}
    for c in tg.calls_of_any(("sendMessage", "editMessageText", "editMessageReplyMarkup"),
                             chat_id):
        message_id = int(c.result["message_id"] if c.method == "sendMessage"
                         else c.params["message_id"])
        shown[message_id] = buttons(c)
    return [(m, b["callback_data"], b["text"]) for m, row in shown.items() for b in row
            if parse_feedback(b["callback_data"])]


async def test_the_askers_tap_counts_anyone_elses_is_refused(
        make_home: MakeHome, telegram: FakeTelegram, compiled_catalog: Any) -> None:
    home = make_home(lang="en")
    install_catalog(compiled_catalog, home.settings.home)
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA) as (client, _):
        await pair(client, telegram, BOB, language_code="en")
        telegram.push_message(ANNA, "What does quick-tour.md contain?", language_code="en")
        await until(telegram, lambda t: bool(feedback_buttons(t, ANNA)), "the 👍/👎 row")
        shown = feedback_buttons(telegram, ANNA)
        assert [text for _, _, text in shown] == [
            "👍 " + i18n.get("TUTOR_FEEDBACK_UP", "en"),
            "👎 " + i18n.get("TUTOR_FEEDBACK_DOWN", "en")]
        (message_id, up, _), (_, down, _) = shown
        turn_id = up.split(":")[1]

        refused = await answer_to(telegram, telegram.push_callback(
            BOB, up, message_id, chat_id=ANNA, language_code="en"))
        assert refused.params["text"] == i18n.get("ERR_TUTOR_FEEDBACK_NOT_YOURS", "en")
        elsewhere = await answer_to(telegram, telegram.push_callback(  # the asker, another chat
            ANNA, down, message_id, chat_id=BOB, language_code="en"))
        assert elsewhere.params["text"] == i18n.get("ERR_TUTOR_FEEDBACK_NOT_YOURS", "en")

        why = await answer_to(telegram, telegram.push_callback(
            ANNA, down, message_id, language_code="en"))
        assert why.params["text"] == i18n.get("TUTOR_FEEDBACK_WHY", "en")
        await until(telegram, lambda t: len(feedback_buttons(t, ANNA)) == 4, "the causes")
        causes = {text: data for _, data, text in feedback_buttons(telegram, ANNA)}
        outdated = causes[i18n.get("TUTOR_FEEDBACK_CAUSE_OUTDATED", "en")]
        assert parse_feedback(outdated) == (turn_id, "o")
        bob_cause = await answer_to(telegram, telegram.push_callback(
            BOB, outdated, message_id, chat_id=ANNA, language_code="en"))
        assert bob_cause.params["text"] == i18n.get("ERR_TUTOR_FEEDBACK_NOT_YOURS", "en")

        done = await answer_to(telegram, telegram.push_callback(
            ANNA, outdated, message_id, language_code="en"))
        assert done.params["text"] == i18n.get("TUTOR_FEEDBACK_THANKS_DOWN", "en")
        await until(telegram, lambda t: not feedback_buttons(t, ANNA), "the buttons gone")
        stale = await answer_to(telegram, telegram.push_callback(
            ANNA, up, message_id, language_code="en"))
        assert stale.params["text"] == i18n.get("ERR_TUTOR_FEEDBACK_ALREADY", "en")

    engine = make_engine(database_url(home.settings))
    with session(engine) as db:
        answer = db.get(TutorAnswer, turn_id)
        gaps = db.exec(select(TutorGap)).all()
    engine.dispose()
    assert answer is not None and (answer.rating, answer.cause) == ("down", "outdated")
    assert answer.session_id == f"telegram-{ANNA}" and answer.channel == "telegram"
    assert [(g.cause, g.user_id) for g in gaps] == [("outdated", answer.user_id)]
    lines = [(ln["sender"], ln["decision"], ln.get("reason")) for ln in audit_lines(home.path)
             if ln["action"] == "tutor.feedback"]
    bob = f"telegram:{BOB}"
    assert lines == [(bob, "deny", "ERR_TUTOR_FEEDBACK_NOT_YOURS"),
                     (answer.user_id, "deny", "ERR_TUTOR_FEEDBACK_NOT_YOURS"),
                     (bob, "deny", "ERR_TUTOR_FEEDBACK_NOT_YOURS"),
                     (answer.user_id, "info", "outdated"),
                     (answer.user_id, "deny", "ERR_TUTOR_FEEDBACK_ALREADY")]
