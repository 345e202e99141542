"""A turn that comes with attachments, started the same way by every face (HTTP, the web chat's
socket, Telegram): the person's own files, filed into the workspace, described to the model as
untrusted data (so the turn is tainted and asks before acting, Law 3)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from metnos.features.attachments.store import file_all, mark_filed, owned, unfile
from metnos.ground import i18n
from metnos.ground.errors import MetnosError
from metnos.ground.system_lang import Lang
from metnos.turns.context import TurnContext
from metnos.turns.handle import TurnHandle


async def start_turn(turns: TurnHandle, text: str, attachment_ids: Sequence[str], *,
                     session_id: str | None, lang: Lang | None, channel: str, sender: str,
                     untrusted: Sequence[tuple[str, str]] = (),
                     ask_all: bool = False) -> tuple[TurnContext, list[str]]:
    """`turns.start` with the attachments `attachment_ids` (sent by `sender`) filed and
    described first; the turn, and where each attachment was filed. `AttachmentRefused` (an
    audit line written) when one is not the sender's; a message with only attachments says
    so in the person's language."""
    if not attachment_ids:
        return await turns.start(text, session_id=session_id, lang=lang, channel=channel,
                                 sender=sender, untrusted=untrusted, ask_all=ask_all), []
    runtime = turns.service
    items = await asyncio.to_thread(owned, runtime.engine, attachment_ids, user_id=sender,
                                    channel=channel, audit=runtime.audit)
    filed = await asyncio.to_thread(file_all, runtime.settings, items)
    said = text.strip() or i18n.get("MSG_ATTACHMENT_ONLY", lang or runtime.settings.lang,
                                    count=len(filed))
    try:
        ctx = await turns.start(
            said, session_id=session_id, lang=lang, channel=channel, sender=sender,
            untrusted=[*untrusted, *(one.described() for one in filed)], ask_all=ask_all,
            prepare=lambda ctx: mark_filed(runtime.engine, runtime.audit, filed,
                                           turn_id=ctx.turn_id))
    except MetnosError:  # refused before it had a row (too long...): nothing stays filed
        await asyncio.to_thread(unfile, runtime.settings, filed)
        raise
    return ctx, [one.path for one in filed]
