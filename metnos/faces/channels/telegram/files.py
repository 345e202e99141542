"""A photo or a document sent on Telegram, fetched from the Bot API and kept as an attachment
(`metnos.features.attachments`) of the person who sent it.

A photo comes in several sizes: the largest within `[attachments] max_bytes` is taken. A
document's declared name and type are claims its bytes must agree with. Nothing is fetched
that Telegram already says is too large; what is fetched is checked again as it is kept.
"""

from __future__ import annotations

import asyncio
import io
from typing import TYPE_CHECKING

from aiogram.types import Message

from metnos.features.attachments import AttachmentRefused, keep
from metnos.ground import i18n

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import TelegramChannel

CHANNEL = "telegram"


def has_files(message: Message) -> bool:
    return bool(message.photo) or message.document is not None


async def keep_files(ch: TelegramChannel, message: Message, user_id: str,
                     lang: str) -> list[str] | str:
    """The ids of the message's files, kept for `user_id`; or, when one is refused, the
    words that say why (in `lang`; an audit line is written)."""
    limit = ch.service.settings.attachments.max_bytes
    media: str | None
    if message.photo:
        fitting = [p for p in message.photo if (p.file_size or 0) <= limit]
        chosen = max(fitting or message.photo, key=lambda p: p.width * p.height)
        file_id, name, media, size = chosen.file_id, "", "image/jpeg", chosen.file_size
    elif message.document is not None:
        doc = message.document
        file_id, name, media, size = (doc.file_id, doc.file_name or "", doc.mime_type,
                                      doc.file_size)
    else:
        return []
    if size is not None and size > limit:
        return i18n.get("ERR_ATTACHMENT_TOO_LARGE", lang, name=name or "-",
                        max_mb=max(1, limit >> 20))
    buffer = io.BytesIO()
    await ch.bot.download(file_id, destination=buffer)
    service = ch.service
    try:
        item = await asyncio.to_thread(
            keep, service.engine, service.settings, service.audit, buffer.getvalue()[:limit + 1],
            name=name, media_type=media, user_id=user_id, channel=CHANNEL)
    except AttachmentRefused as exc:
        return i18n.message(exc, lang)
    return [item.id]
