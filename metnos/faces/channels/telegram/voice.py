"""A voice note sent on Telegram (`message.voice`, or an audio file), heard before it becomes a
turn (issue 31).

Only a paired sender gets here (admission comes first, in `conversation.py`). The note is
refused on what Telegram declares (size, length) before it is fetched, then fetched into memory,
decoded and capped again on its real bytes (`metnos.features.voice.audio`, in a worker thread),
and its words asked of the `[voice]` transcription server. The person is shown what was heard
("I heard: «…»", escaped like any outside text) before the words run as a turn like typed text,
so a wrong transcription is seen at once. The audio is never written down nor kept: it lives in
this call's memory only. Without a transcription server, one line says voice needs one.
"""

from __future__ import annotations

import asyncio
import io
import logging
from typing import TYPE_CHECKING

from aiogram.enums import ParseMode
from aiogram.types import Audio, LinkPreviewOptions, Message, Voice

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.cards import CHANNEL
from metnos.faces.channels.telegram.split import split_html
from metnos.features.voice import VoiceRefused, check_size, to_wav, transcribe, voice_on
from metnos.ground import i18n
from metnos.ground.errors import MetnosError

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

log = logging.getLogger(__name__)

_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


def is_voice(message: Message) -> bool:
    """Whether the message is a voice note (or an audio file, heard the same way)."""
    return message.voice is not None or message.audio is not None


async def hear(ch: TelegramChannel, message: Message, lang: str) -> str | None:
    """The words of the message's voice note, already shown to the person ("I heard: …");
    None when there are none to act on (voice is off, the note is refused, or no words were
    heard): the person was told why, in `lang`."""
    note: Voice | Audio | None = message.voice or message.audio
    assert note is not None
    settings = ch.service.settings
    if not voice_on(settings):
        await _say(ch, message.chat.id, i18n.get("ERR_VOICE_OFF", lang), lang)
        return None
    try:
        check_size(note.file_size, settings.voice)
        if note.duration and note.duration > settings.voice.max_seconds + 1:
            raise VoiceRefused("ERR_VOICE_TOO_LONG", max_seconds=int(settings.voice.max_seconds))
        buffer = io.BytesIO()
        await ch.bot.download(note.file_id, destination=buffer)
        data = buffer.getvalue()[:settings.voice.max_bytes + 1]  # over the cap: refused
        buffer.close()
        speech = await asyncio.to_thread(to_wav, data, settings.voice)
        del data  # the note's bytes go no further than the transcription request
        words = await transcribe(settings, speech.wav, None)  # read in the language it is in
    except MetnosError as exc:
        log.info("telegram.voice_refused key=%s", exc.key)
        await _say(ch, message.chat.id, i18n.message(exc, lang), lang)
        return None
    if not words:
        await _say(ch, message.chat.id, i18n.get("MSG_VOICE_EMPTY", lang), lang)
        return None
    log.info("telegram.voice_heard seconds=%.1f chars=%d", speech.seconds, len(words))
    await _say(ch, message.chat.id, i18n.get("MSG_VOICE_HEARD", lang, text=words), lang)
    return words


async def _say(ch: TelegramChannel, chat_id: int, text: str, lang: str) -> None:
    """`text` as a plain reply: escaped (a transcript is outside text), split to fit."""
    for piece in split_html(render(CHANNEL, "reply", lang, text=text)):
        await ch.bot.send_message(chat_id, piece, parse_mode=ParseMode.HTML,
                                  link_preview_options=_NO_PREVIEW)
