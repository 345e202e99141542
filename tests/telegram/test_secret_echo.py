"""Law 2 on the way out to Telegram (issue 25, finding 6): the model echoing the owner token
to a paired member, the message the fake Bot API receives carries the marker instead."""

from __future__ import annotations

import json

import pytest

from metnos.mechanisms.policy.laws import REDACTED
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import MakeHome
from tests.telegram.support import telegram_gateway, until

ANNA = 7001


@pytest.mark.attack
async def test_the_model_echoing_the_owner_token_reaches_telegram_redacted(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        prefect_api: str) -> None:
    home = make_home(llm=scripted_llm, lang="en")
    async with telegram_gateway(home, telegram, owner=ANNA) as (client, _):
        scripted_llm.enqueue_text(f"Sure, your token is {home.token} as you asked.")
        telegram.push_message(ANNA, "what is the token?", language_code="en")
        await until(telegram, lambda t: any(REDACTED in str(c.params.get("text"))
                                            for c in t.calls), "the redacted reply")
    assert home.token not in json.dumps([c.params for c in telegram.calls], default=str)
    assert any(ln["action"] == "llm.reply" for ln in audit_lines(home.path))
