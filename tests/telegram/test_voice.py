"""Voice notes on Telegram (issue 31, "Voice in"): a sentence spoken by espeak-ng, in Italian and
in English, encoded as Telegram records it (OGG/Opus, 48 kHz mono), sent by a paired person
through the fake Bot API, reaches the scripted transcription server as decodable audio of the
right length; the person is shown what was heard, and the words run as a turn (a list change).
Without a transcription server the person is told in one line and nothing runs; a note too long,
or not audio, is refused in the person's language before any server hears it.
The real gateway with the channel on a fake Bot API; scripted model and transcription server."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from metnos.ground import i18n
from metnos.testing.llm_server import ScriptedLLM, ToolCall
from metnos.testing.telegram_server import FakeTelegram
from tests.support.home import MakeHome
from tests.support.voice import as_telegram, espeak_binary, seconds, spoken
from tests.telegram.support import pair, said, telegram_gateway, until

ANNA = 7401  # the owner, who speaks Italian
BEN = 7402  # a member, who speaks English
ITALIAN = "aggiungi il latte alla lista della spesa"
ENGLISH = "add bread to the shopping list"


@pytest.fixture(scope="module")
def espeak() -> str:
    return espeak_binary()


def texts(tg: FakeTelegram, chat: int) -> list[str]:
    return [html.unescape(x) for x in said(tg, chat)]


@pytest.mark.parametrize(("voice", "sentence", "added"), [("it", ITALIAN, "latte"),
                                                          ("en", ENGLISH, "bread")])
async def test_a_voice_note_is_heard_shown_and_run_as_a_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        espeak: str, tmp_path: Path, voice: str, sentence: str, added: str) -> None:
    home = make_home(llm=scripted_llm, lang="it", autonomy="Full",
                     METNOS_VOICE_API_BASE=scripted_llm.api_base)
    wav = spoken(espeak, tmp_path, voice, sentence)
    note = as_telegram(wav)
    done = f"{added} is on the list."
    scripted_llm.route(sentence, ToolCall("lists", {"action": "add", "list": "shopping",
                                                    "items": [added]}), final_text=done)
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="it") as (client, _):
        person = ANNA if voice == "it" else BEN
        if person == BEN:
            await pair(client, telegram, BEN, language_code="en")
        scripted_llm.enqueue_transcript(sentence)
        before = len(said(telegram, person))
        telegram.push_message(person, "", voice=note, voice_seconds=round(seconds(note)),
                              language_code=voice)
        await until(telegram, lambda t: any(done in x for x in said(t, person)[before:]),
                    "the turn's reply")

    [upload] = scripted_llm.transcriptions
    assert upload.filename.endswith(".wav") and upload.fields.get("model")
    heard, sent = seconds(upload.file), seconds(wav)
    assert abs(heard - sent) <= 0.1 * sent, (heard, sent)
    echo = i18n.get("MSG_VOICE_HEARD", voice, text=sentence)
    replies = texts(telegram, person)[before:]
    assert echo in replies, replies
    assert replies.index(echo) < next(i for i, x in enumerate(replies) if done in x)
    asked = [r for r in scripted_llm.requests if r.get("messages")]
    assert sentence in str(asked[0]["messages"][-1]["content"])  # the turn's text: the words
    assert added in (home.workspace / "lists" / "shopping.md").read_text()
    assert not list(home.settings.home.rglob("*.ogg"))  # the audio was not kept


async def test_without_a_transcription_server_one_line_and_no_turn(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        espeak: str, tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, lang="it")
    note = as_telegram(spoken(espeak, tmp_path, "en", ENGLISH))
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="en") as (client, _):
        before = len(said(telegram, ANNA))
        telegram.push_message(ANNA, "", voice=note, language_code="en")
        off = i18n.get("ERR_VOICE_OFF", "en")
        await until(telegram, lambda t: any(off in html.unescape(x)
                                            for x in said(t, ANNA)[before:]), "the one line")
        # a typed message after it is answered first: the note started no turn before it
        scripted_llm.enqueue_text("Typed, answered.")
        telegram.push_message(ANNA, "hello", language_code="en")
        await until(telegram, lambda t: any("Typed, answered." in x for x in said(t, ANNA)),
                    "the typed message's reply")
    assert texts(telegram, ANNA)[before:][0] == off
    assert not scripted_llm.transcriptions
    assert len([r for r in scripted_llm.requests if r.get("messages")]) == 1


async def test_a_note_too_long_or_not_audio_is_refused_in_the_persons_language(
        make_home: MakeHome, scripted_llm: ScriptedLLM, telegram: FakeTelegram,
        espeak: str, tmp_path: Path) -> None:
    home = make_home(llm=scripted_llm, lang="it", METNOS_VOICE_API_BASE=scripted_llm.api_base,
                     METNOS_VOICE_MAX_SECONDS="1")
    note = as_telegram(spoken(espeak, tmp_path, "it", ITALIAN))  # about 2.4 s
    async with telegram_gateway(home, telegram, prefect=False, owner=ANNA,
                                owner_lang="it") as (client, _):
        await pair(client, telegram, BEN, language_code="en")
        # Telegram says one second: the real length, decoded, is what is refused
        telegram.push_message(ANNA, "", voice=note, voice_seconds=1, language_code="it")
        too_long = i18n.get("ERR_VOICE_TOO_LONG", "it", max_seconds=1)
        await until(telegram, lambda t: too_long in texts(t, ANNA), "the Italian refusal")
        telegram.push_message(BEN, "", voice=b"OggS" + bytes(range(256)) * 8,
                              language_code="en")
        unreadable = i18n.get("ERR_VOICE_UNREADABLE", "en")
        await until(telegram, lambda t: unreadable in texts(t, BEN), "the English refusal")
    assert not scripted_llm.transcriptions
    assert not [r for r in scripted_llm.requests if r.get("messages")]
