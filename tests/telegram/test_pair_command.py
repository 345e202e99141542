"""The owner approves a pairing code from Telegram: `/pair CODE [PERSON]` in their own chat.

Only the Telegram user paired as the owner approves; a member is refused in one line (audited),
a stranger only gets its own code (admission comes first). A `/pair` message is never a turn,
and the code never reaches a log line or the audit log. The real gateway and a fake Bot API.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from metnos.faces.channels.telegram.bot import TelegramChannel
from metnos.faces.channels.telegram.pair_command import REFUSED, USAGE
from metnos.features import pairing
from metnos.features.pairing.models import PairedSender
from metnos.ground import i18n
from metnos.ground.db.engine import session as db_session
from metnos.testing.llm_server import ScriptedLLM
from metnos.testing.telegram_server import FakeTelegram
from tests.gateway.test_turns import audit_lines
from tests.support.home import Home, MakeHome
from tests.telegram.support import CODE, buttons, pair, telegram_gateway, until

OWNER = 7001
MEMBER = 7002
STRANGER = 5551
OTHER_STRANGER = 5552


@pytest.fixture
def home(make_home: MakeHome, scripted_llm: ScriptedLLM, prefect_api: str) -> Home:
    return make_home(llm=scripted_llm, lang="en")


def _paired(ch: TelegramChannel, sender: int) -> PairedSender | None:
    with db_session(ch.service.engine) as db:
        return pairing.find_paired(db, "telegram", str(sender))


async def _code_of(tg: FakeTelegram, stranger: int, lang: str = "en") -> str:
    """A stranger writes and gets its pairing code (the owner, on Telegram, is told)."""
    tg.push_message(stranger, "hello, may I?", language_code=lang)
    await until(tg, lambda t: bool(t.sent_texts(stranger)), "the stranger's code")
    found = CODE.search(tg.sent_texts(stranger)[-1])
    assert found is not None, tg.sent_texts(stranger)
    return found.group(1)


def _replies(tg: FakeTelegram, chat: int) -> list[str]:
    """What the bot sent to `chat`, unescaped, but the pairing notices (Drop button): the
    owner is told of each stranger in their own time."""
    return [html.unescape(str(c.params.get("text", ""))) for c in tg.calls_of("sendMessage", chat)
            if not any(str(b.get("callback_data", "")).startswith("pd:") for b in buttons(c))]


async def _answer(tg: FakeTelegram, chat: int, text: str, lang: str = "en", *,
                  forward: bool = False) -> str:
    """`chat` sends `text`; the bot's next message to it (not a notice), unescaped."""
    before = len(_replies(tg, chat))
    tg.push_message(chat, text, language_code=lang, forward=forward)
    await until(tg, lambda t: len(_replies(t, chat)) > before, f"the answer to {text!r}")
    return _replies(tg, chat)[before]


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def _every_log_line() -> Iterator[_Records]:
    """Every log line of the process, at every level, while it lasts (the gateway's start
    hands the root logger to Prefect's logging set-up, which pytest's caplog does not see)."""
    root, records = logging.getLogger(), _Records()
    level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        root.removeHandler(records)
        root.setLevel(level)


async def _pending(client: httpx.AsyncClient) -> set[str]:
    resp = await client.get("/api/pairing")
    assert resp.status_code == 200, resp.text
    return {p["sender_id"] for p in resp.json()["pending"]}


async def test_the_owner_approves_a_strangers_code_with_pair(
        home: Home, telegram: FakeTelegram, scripted_llm: ScriptedLLM) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER) as (client, ch):
        code = await _code_of(tg, STRANGER)
        await until(tg, lambda t: any(str(STRANGER) in s for s in t.sent_texts(OWNER)),
                    "the owner told of the stranger")
        assert _paired(ch, STRANGER) is None

        with _every_log_line() as logged:
            said = await _answer(tg, OWNER, f"/pair {code.lower()}")
        assert logged.lines  # the handling was logged, the code it carried was not
        assert not [line for line in logged.lines if code.lower() in line]
        paired = _paired(ch, STRANGER)
        assert paired is not None
        assert (paired.role, paired.user_id, paired.approved_by) == \
            ("member", f"telegram:{STRANGER}", pairing.OWNER_USER_ID)
        assert said == i18n.get("MSG_PAIRING_APPROVED", "en", channel="telegram",
                                sender_id=str(STRANGER), role="member",
                                user_id=f"telegram:{STRANGER}")
        assert await _pending(client) == set()

        # the same code again: already used
        assert await _answer(tg, OWNER, f"/pair {code}") == \
            i18n.get("ERR_PAIRING_CODE_UNKNOWN", "en")
    assert scripted_llm.requests == []  # no `/pair` became a turn
    approved = [ln for ln in audit_lines(home.path) if ln.get("reason") == "MSG_PAIRING_APPROVED"]
    assert [ln["outcome"] for ln in approved][-1] == \
        f"approved telegram:{STRANGER} as member"
    audit_text = (home.path / "workspace" / ".audit" / "audit.jsonl").read_text()
    assert code not in audit_text and code.lower() not in audit_text


async def test_a_wrong_code_or_no_code(home: Home, telegram: FakeTelegram,
                                       scripted_llm: ScriptedLLM) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER, owner_lang="it") as (client, ch):
        code = await _code_of(tg, STRANGER)
        wrong = "ABCDEFGH" if code != "ABCDEFGH" else "HGFEDCBA"
        assert await _answer(tg, OWNER, f"/pair {wrong}", "it") == \
            i18n.get("ERR_PAIRING_CODE_UNKNOWN", "it")
        assert await _answer(tg, OWNER, "/pair", "it") == i18n.get(USAGE, "it")
        assert await _answer(tg, OWNER, f"/pair {code} owner extra", "it") == \
            i18n.get(USAGE, "it")
        # someone else's `/pair`, forwarded by the owner, approves nothing (and is no turn)
        assert await _answer(tg, OWNER, f"/pair {code}", "it", forward=True) == \
            i18n.get(USAGE, "it")
        assert _paired(ch, STRANGER) is None
        assert await _pending(client) == {str(STRANGER)}
    assert scripted_llm.requests == []
    unknown = [ln for ln in audit_lines(home.path)
               if ln.get("reason") == "ERR_PAIRING_CODE_UNKNOWN"]
    assert [(ln.get("sender"), ln["outcome"]) for ln in unknown] == [("owner", "unknown")]


async def test_pair_with_a_person(home: Home, telegram: FakeTelegram) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER) as (client, ch):
        await pair(client, tg, MEMBER, language_code="en")
        code = await _code_of(tg, STRANGER)
        assert await _answer(tg, OWNER, f"/pair {code} telegram:9999") == \
            i18n.get("ERR_PAIRING_PERSON_UNKNOWN", "en", person="telegram:9999")
        assert await _answer(tg, OWNER, f"/pair {code} owner") == i18n.get(
            "MSG_PAIRING_APPROVED", "en", channel="telegram", sender_id=str(STRANGER),
            role="owner", user_id=pairing.OWNER_USER_ID)  # the owner's second account
        paired = _paired(ch, STRANGER)
        assert paired is not None and (paired.role, paired.user_id) == ("owner", "owner")

        other = await _code_of(tg, OTHER_STRANGER)
        member = f"telegram:{MEMBER}"
        assert await _answer(tg, OWNER, f"/pair@metnos_bot {other} {member}") == i18n.get(
            "MSG_PAIRING_APPROVED", "en", channel="telegram", sender_id=str(OTHER_STRANGER),
            role="member", user_id=member)
        paired = _paired(ch, OTHER_STRANGER)
        assert paired is not None and (paired.role, paired.user_id) == ("member", member)


@pytest.mark.attack
async def test_only_the_owner_approves_with_pair(
        home: Home, telegram: FakeTelegram, scripted_llm: ScriptedLLM) -> None:
    tg = telegram
    async with telegram_gateway(home, tg, owner=OWNER) as (client, ch):
        await pair(client, tg, MEMBER, language_code="it")
        code = await _code_of(tg, STRANGER)

        # a member is refused, in their language; nothing is paired
        assert await _answer(tg, MEMBER, f"/pair {code}", "it") == i18n.get(REFUSED, "it")
        assert await _answer(tg, MEMBER, f"/pair {code} owner", "it") == \
            i18n.get(REFUSED, "it")
        # the stranger itself, and another stranger: admission first (a code, or nothing)
        tg.push_message(STRANGER, f"/pair {code} owner", language_code="en")
        theirs = await _answer(tg, OTHER_STRANGER, f"/pair {code} owner")
        assert CODE.search(theirs) is not None, theirs

        def stranger_ignored(_: FakeTelegram) -> bool:
            return any(ln.get("sender") == str(STRANGER) and
                       ln.get("reason") == "ERR_PAIRING_ALREADY_PENDING"
                       for ln in audit_lines(home.path))
        await until(tg, stranger_ignored, "the stranger's second message ignored")
        assert len(tg.sent_texts(STRANGER)) == 1  # its code, nothing more

        assert _paired(ch, STRANGER) is None and _paired(ch, OTHER_STRANGER) is None
        assert await _pending(client) == {str(STRANGER), str(OTHER_STRANGER)}
    assert scripted_llm.requests == []
    refused = [ln for ln in audit_lines(home.path) if ln.get("reason") == REFUSED]
    assert [(ln.get("sender"), ln["action"], ln["channel"], ln["decision"], ln["outcome"])
            for ln in refused] == [(str(MEMBER), "pairing", "telegram", "deny",
                                    "not_owner")] * 2
    assert not [ln for ln in audit_lines(home.path)
                if str(ln.get("outcome")).startswith("approved telegram:555")]
