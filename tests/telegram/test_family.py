"""A family's first minutes on Telegram, without a model (issue 12 acceptance, the Telegram
side): a greeting, the time, three items on the shopping list, the list, one removed, the
removal undone from the button under its reply, "what can you do?". In Italian and English;
every reply short, never the old wall of tool descriptions. The real gateway with Prefect's
turn flow, a fake Bot API. (A reminder delivered to the same chat is tests/reminders/.)"""

from __future__ import annotations

import pytest

from metnos import i18n
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import MakeHome
from tests.telegram.support import pair, shown_texts, telegram_gateway, until
from tests.telegram.test_undo_and_cards import answer_to, undo_buttons
from tests.webchat.test_family_browser import FILE, NEVER, SAID

ANNA = 7001


@pytest.mark.parametrize("lang", ["it", "en"])
async def test_the_first_minutes_of_a_family_on_telegram(
        make_home: MakeHome, telegram: FakeTelegram, prefect_api: str, lang: str) -> None:
    home = make_home(lang=lang)
    name, full = FILE[lang]
    path = home.workspace / "lists" / name
    async with telegram_gateway(home, telegram) as (client, _):
        await pair(client, telegram, ANNA, language_code=lang)
        for text in SAID[lang]:
            before = len(shown_texts(telegram, ANNA))
            telegram.push_message(ANNA, text, language_code=lang)
            await until(telegram, lambda t, b=before: len(shown_texts(t, ANNA)) > b, text)
            reply = shown_texts(telegram, ANNA)[-1]
            assert len(reply) < 500 and reply.count("\n") < 14, (text, reply)
            assert not [w for w in NEVER if w in reply], (text, reply)
        assert path.read_text() != full  # one removed
        message_id, data = undo_buttons(telegram, ANNA)[-1]  # the removal's
        done = await answer_to(telegram, telegram.push_callback(
            ANNA, data, message_id, language_code=lang))
        assert done.params["text"] == i18n.get("MSG_TELEGRAM_UNDONE", lang)
        assert path.read_text() == full
