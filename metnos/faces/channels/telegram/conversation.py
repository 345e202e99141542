"""One private message, from admission to the reply (SPEC §4, §11).

An unknown sender goes through DM pairing: the code is sent once per request and nothing it
says is processed (the owner, when paired here, is told in their own chat, with a button to
drop the request: `pairing_drop.py`, and approves a code with `/pair CODE`:
`pair_command.py`, never a turn). A paired sender's message becomes a turn of the gateway's
runner; what the user forwards or quotes travels with it as untrusted data, never as their
words; a voice note is heard first (`voice.py`: "I heard: …") and its words taken as typed
text. While the turn runs the chat shows "typing…" and the model's text streams
into one message edited about once a second (`live.py`); approvals it waits for become cards
with buttons; the reply (the prose, then what ran), split within Telegram's limit, replaces
the streamed text at the end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiogram.enums import ChatAction, ParseMode
from aiogram.types import LinkPreviewOptions, Message

from metnos.faces.channels.render import render
from metnos.faces.channels.telegram.cards import CHANNEL, card, cuts, keyboard
from metnos.faces.channels.telegram.files import has_files, keep_files
from metnos.faces.channels.telegram.live import LiveReply, follow_deltas
from metnos.faces.channels.telegram.pair_command import handle_pair, pair_arguments
from metnos.faces.channels.telegram.pairing_drop import tell_owner
from metnos.faces.channels.telegram.split import split_html
from metnos.faces.channels.telegram.voice import hear, is_voice
from metnos.features import pairing
from metnos.features.attachments.turn import start_turn
from metnos.ground import i18n
from metnos.ground.db import models
from metnos.ground.db.engine import session as db_session
from metnos.ground.errors import MetnosError
from metnos.mechanisms import approvals
from metnos.turns.language import ui_locale
from metnos.turns.runtime import Runtime

if TYPE_CHECKING:
    from metnos.faces.channels.telegram.bot import CardRef, TelegramChannel

log = logging.getLogger(__name__)

WATCH_POLL_S = 0.5
TYPING_EVERY_S = 4.0
_NO_PREVIEW = LinkPreviewOptions(is_disabled=True)  # Telegram never fetches a reply's links


@dataclass(frozen=True)
class TurnState:
    status: str
    finished: bool
    reply: str | None
    approvals: list[dict[str, Any]]
    activity: list[dict[str, Any]]


async def handle_message(ch: TelegramChannel, message: Message) -> None:
    assert message.from_user is not None
    sender = str(message.from_user.id)
    lang = ui_locale(message.from_user.language_code, None, ch.service.settings)
    admission = await asyncio.to_thread(_admit, ch.service, sender)
    if admission.status == "code_sent":
        text = render(CHANNEL, "pairing", lang, message=admission.message(lang) or "",
                      code=admission.code or "")
        await send_html(ch, message.chat.id, text)
        await tell_owner(ch, message.from_user, sender, admission.request_id)
        return
    if admission.status != "paired" or admission.user_id is None:
        return  # a pending request, or too many of them: nothing is said, nothing processed
    arguments = pair_arguments(message)
    if arguments is not None:  # `/pair CODE`: the owner approves a code, never a turn
        await handle_pair(ch, message, admission, arguments, lang)
        return
    heard = await hear(ch, message, lang) if is_voice(message) else None  # "I heard: …" shown
    if is_voice(message) and heard is None:  # voice off, refused, or no words: told why
        return
    files = await keep_files(ch, message, admission.user_id, lang) if has_files(message) else []
    if isinstance(files, str):  # refused: the person is told why
        await send_html(ch, message.chat.id, render(CHANNEL, "reply", lang, text=files))
        return
    content = _content(message, lang, bool(files), said=heard)
    if content is None:
        await send_html(ch, message.chat.id, i18n.get("MSG_TELEGRAM_KINDS", lang))
        return
    text, untrusted = content
    try:
        ctx, filed = await start_turn(
            ch.turns, text, files, session_id=f"telegram-{message.chat.id}", lang=lang,
            channel=CHANNEL, sender=admission.user_id, untrusted=untrusted)
    except MetnosError as exc:
        await send_html(ch, message.chat.id, render(CHANNEL, "reply", lang,
                                                    text=i18n.message(exc, lang)))
        return
    live = LiveReply(ch, message.chat.id, ctx.lang)
    streaming = asyncio.get_running_loop().create_task(follow_deltas(ch, ctx.turn_id, live))
    try:
        async with typing(ch, message.chat.id):
            published = await ch.turns.reply(ctx.turn_id)
        if published is not None and published.status in ("completed", "failed"):
            reply = published.reply
            if filed:
                reply = with_kept_line(reply, published.activity, filed, ctx.lang)
            await live.finish(reply, published.activity)
            return
        if published is not None:
            await _cards_below(ch, live, published.approvals, ctx.lang)
        await watch_turn(ch, message.chat.id, ctx.turn_id, ctx.lang, live)
    finally:
        await _stop(streaming)


def _admit(service: Runtime, sender: str) -> pairing.Admission:
    with db_session(service.engine) as db:
        return pairing.admit(db, channel=CHANNEL, sender_id=sender,
                             settings=service.settings.policy, audit=service.audit)


def with_kept_line(reply: str | None, activity: list[dict[str, Any]], paths: list[str],
                   lang: str) -> str:
    """The reply to a message with files: one plain line first (where they were kept), then
    what the turn said; that line alone when nothing ran and the words were not understood
    (no model: only the caption was read)."""
    line = i18n.get("MSG_ATTACHMENT_KEPT", lang, count=len(paths), paths=", ".join(paths))
    text = (reply or "").strip()
    if not activity and (not text or text.startswith(i18n.get("MSG_PLAN_NOT_UNDERSTOOD", lang))):
        return line
    return f"{line}\n\n{text}"


def _content(message: Message, lang: str, files: bool = False, said: str | None = None
             ) -> tuple[str, list[tuple[str, str]]] | None:
    """The user's own words and the untrusted pieces (forwarded, quoted) of a message (its
    words may be empty when it brings `files`); `said`: the words of its voice note, which
    stand for typed text (a forwarded note's words are someone else's: data)."""
    own = said or message.text or message.caption
    untrusted: list[tuple[str, str]] = []
    if message.forward_origin is not None and own:
        untrusted.append(("forwarded", own))
        own = None
    replied = message.reply_to_message
    quoted = (message.quote.text if message.quote is not None else
              (replied.text or replied.caption) if replied is not None else None)
    if quoted:
        untrusted.append(("quoted", quoted))
    if files:
        return own or "", untrusted
    if not own and not untrusted:
        return None
    return own or i18n.get("MSG_TELEGRAM_FORWARDED_TEXT", lang), untrusted


async def watch_turn(ch: TelegramChannel, chat_id: int, turn_id: str, lang: str,
                     live: LiveReply | None = None) -> None:
    """Follow a turn that waits for approvals until it ends, whoever decides them: new
    approvals become cards, decided ones close their card, then the reply is shown (in the
    message `live` streamed, if any)."""
    live = live or LiveReply(ch, chat_id, lang)
    typing_task: asyncio.Task[None] | None = None
    try:
        while True:
            state = await asyncio.to_thread(_turn_state, ch.service, turn_id)
            for approval in state.approvals:
                if approval["status"] != "pending":
                    await close_card(ch, approval, approval["status"])
            if state.finished:
                break
            pending = [a for a in state.approvals if a["status"] == "pending"]
            await _cards_below(ch, live, pending, lang)
            if state.status == "running" and typing_task is None:
                typing_task = asyncio.get_running_loop().create_task(_typing(ch, chat_id))
            elif state.status != "running" and typing_task is not None:
                await _stop(typing_task)
                typing_task = None
            await asyncio.sleep(WATCH_POLL_S)
    finally:
        await _stop(typing_task)
    ch.shown.difference_update(a["approval_id"] for a in state.approvals)
    await live.finish(state.reply, state.activity)


def _turn_state(service: Runtime, turn_id: str) -> TurnState:
    with db_session(service.engine) as db:
        turn = models.get_turn(db, turn_id)
        if turn is None:
            return TurnState("failed", True, None, [], [])
        rows = [approvals.public(a) for a in approvals.approvals_of_turn(db, turn_id)]
        return TurnState(turn.status, turn.finished_at is not None, turn.reply, rows,
                         list(turn.activity or []))


async def _cards_below(ch: TelegramChannel, live: LiveReply, pending: list[dict[str, Any]],
                       lang: str) -> None:
    """Cards for approvals not shown yet; the text streamed after them reads below them."""
    if any(str(a["approval_id"]) not in ch.shown for a in pending):
        await live.restart()
    await send_cards(ch, live.chat_id, pending, lang)


async def send_cards(ch: TelegramChannel, chat_id: int, pending: list[dict[str, Any]],
                     lang: str) -> None:
    """One card per approval not shown yet, with its Approve/Deny buttons."""
    from metnos.faces.channels.telegram.bot import CardRef

    for approval in pending:
        approval_id = str(approval["approval_id"])
        if approval_id in ch.shown:
            continue
        ch.shown.add(approval_id)
        owners = _owner_decides(approval)  # a member's step: the buttons go to the owner
        sent = await ch.bot.send_message(chat_id, card(approval, lang,
                                                       tz=ch.service.settings.tz),
                                         parse_mode=ParseMode.HTML,
                                         reply_markup=keyboard(
                                             approval_id, lang, decide=not owners,
                                             show_all=cuts(approval, lang)),
                                         link_preview_options=_NO_PREVIEW)
        ch.cards[approval_id] = CardRef(chat_id, sent.message_id, lang, dict(approval))
        if owners:
            await _owner_card(ch, approval)


def _owner_decides(approval: dict[str, Any]) -> bool:
    asker, approver = approval.get("asker"), approval.get("approver")
    return bool(asker and approver and asker != approver)


async def _owner_card(ch: TelegramChannel, approval: dict[str, Any]) -> None:
    """The card of a member's step, with its buttons, in the owner's own chat (when the
    owner is paired on Telegram; every other surface lists it too)."""
    from metnos.faces.channels.telegram.bot import CardRef

    chat = await asyncio.to_thread(_owner_chat, ch.service)
    if chat is None:
        return
    approval_id, lang = str(approval["approval_id"]), ch.service.settings.lang
    lang = ui_locale(lang, None, ch.service.settings)
    sent = await ch.bot.send_message(chat, card(approval, lang, tz=ch.service.settings.tz),
                                     parse_mode=ParseMode.HTML,
                                     reply_markup=keyboard(approval_id, lang,
                                                           show_all=cuts(approval, lang)),
                                     link_preview_options=_NO_PREVIEW)
    ch.cards[owner_card_key(approval_id)] = CardRef(chat, sent.message_id, lang,
                                                    dict(approval))


def owner_card_key(approval_id: str) -> str:
    return f"{approval_id}#owner"


def _owner_chat(service: Runtime) -> int | None:
    """The owner's private chat with the bot (its id is the owner's Telegram user id)."""
    with db_session(service.engine) as db:
        found = pairing.paired_user(db, CHANNEL, pairing.OWNER_USER_ID)
    if found is None or not found.sender_id.lstrip("-").isdigit():
        return None
    return int(found.sender_id)


async def close_card(ch: TelegramChannel, approval: dict[str, Any], outcome: str) -> None:
    """Show the decision on an open card and take its buttons away (once per card; a
    member's step has a second card, the owner's)."""
    approval_id = str(approval["approval_id"])
    for key in (approval_id, owner_card_key(approval_id)):
        ref = ch.cards.pop(key, None)
        if ref is not None:
            await _close(ch, approval, outcome, ref)


async def _close(ch: TelegramChannel, approval: dict[str, Any], outcome: str,
                 ref: CardRef) -> None:
    try:
        shown = {**ref.approval, **approval}  # the turn's why and sources, the row's state
        await ch.bot.edit_message_text(text=card(shown, ref.lang, outcome,
                                                 tz=ch.service.settings.tz),
                                       chat_id=ref.chat_id, message_id=ref.message_id,
                                       parse_mode=ParseMode.HTML,
                                       reply_markup=keyboard(  # "Show all" stays
                                           str(approval["approval_id"]), ref.lang,
                                           decide=False, show_all=cuts(shown, ref.lang)),
                                       link_preview_options=_NO_PREVIEW)
    except Exception as exc:  # the card was deleted, or is too old to edit: the reply says it
        log.info("telegram.card_edit_failed approval_id=%s: %s", approval["approval_id"], exc)


async def send_html(ch: TelegramChannel, chat_id: int, html: str) -> None:
    """`html` in as many messages as Telegram's length limit needs, in order."""
    for piece in split_html(html):
        await ch.bot.send_message(chat_id, piece, parse_mode=ParseMode.HTML,
                                  link_preview_options=_NO_PREVIEW)


@asynccontextmanager
async def typing(ch: TelegramChannel, chat_id: int) -> AsyncIterator[None]:
    task = asyncio.get_running_loop().create_task(_typing(ch, chat_id))
    try:
        yield
    finally:
        await _stop(task)


async def _typing(ch: TelegramChannel, chat_id: int) -> None:
    """"typing…" in the chat, renewed before Telegram's 5 s display runs out."""
    while True:
        try:
            await ch.bot.send_chat_action(chat_id, ChatAction.TYPING)
        except Exception as exc:  # only a hint: a failure never stops the turn
            log.debug("telegram.typing_failed: %s", exc)
        await asyncio.sleep(TYPING_EVERY_S)


async def _stop(task: asyncio.Task[None] | None) -> None:
    if task is not None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
