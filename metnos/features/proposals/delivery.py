"""Queued proposals reach the owner: one outbox row (`kind="proposal"`) per proposal, or per
introvert batch (the same `payload["batch"]`: one message with a line each), on the owner's
preferred channel (`[notify] channel`; `auto` = the channel the owner last wrote from).

Never inside quiet hours: there they stay `queued` and go at the first round after. The
gateway's delivery loop (`metnos.faces.gateway.outbox_delivery`) carries the row like any message
of Metnos's own, with accept / dismiss buttons on Telegram and a card in the web chat; the
CLI's `metnos chat` prints it, `metnos proposals accept|dismiss ID` answers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from metnos.features.notify.effect import Destination, destination
from metnos.features.notify.quiet import quiet_until
from metnos.features.pairing.models import PairedSender
from metnos.features.proposals import store
from metnos.features.proposals.models import Proposal
from metnos.features.reminders import outbox
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import ChatSession, utcnow
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog

KIND = "proposal"  # the outbox rows of proposals


@dataclass(frozen=True)
class Target:
    channel: str  # web | telegram | cli (an outbox channel)
    address: str  # the chat session (telegram-<chat id> for Telegram)
    lang: str


def preferred(db: Session, settings: Settings, user_id: str) -> Target:
    """Where `user_id` gets what Metnos says on its own: the lookup `notify` uses
    (`metnos.features.notify.effect.destination`: `[notify] channel`, or where the user last wrote
    from); when it knows no such chat, the paired Telegram chat (channel `telegram`), the
    latest conversation, else the CLI. The language is that conversation's."""
    where = destination(db, settings, user_id, _fallback(db, settings, user_id))
    chat = db.get(ChatSession, where.address)
    lang = (chat.interaction_language if chat is not None else None) or settings.lang
    return Target(where.channel, where.address, lang)


def _fallback(db: Session, settings: Settings, user_id: str) -> Destination:
    wanted = settings.notify.channel
    if wanted == "telegram":
        paired = db.exec(select(PairedSender).where(
            PairedSender.user_id == user_id, PairedSender.channel == "telegram",
            col(PairedSender.revoked_at).is_(None))).first()
        if paired is not None:
            return Destination("telegram", f"telegram-{paired.sender_id}")
    query = select(ChatSession).where(ChatSession.user_id == user_id)
    if wanted == "web":
        query = query.where(ChatSession.channel == "web")
    last = db.exec(query.order_by(col(ChatSession.updated_at).desc()).limit(1)).first()
    if wanted == "web":
        return Destination("web", last.id if last else "web")
    if wanted == "cli" or last is None:
        return Destination("cli", "cli")
    return Destination(outbox.channel_of(last.channel), last.id)


def batches(rows: list[Proposal]) -> list[list[Proposal]]:
    """Queued proposals as messages: one per proposal, one per user and introvert batch."""
    groups: dict[tuple[str, str], list[Proposal]] = {}
    out: list[list[Proposal]] = []
    for row in rows:
        batch = row.payload.get("batch") if isinstance(row.payload, dict) else None
        if batch is None:
            out.append([row])
            continue
        key = (row.user_id, str(batch))
        if key not in groups:
            groups[key] = []
            out.append(groups[key])
        groups[key].append(row)
    return out


def message(rows: list[Proposal], target: Target) -> str:
    """The notification's text in the target's language."""
    lang = target.lang
    if len(rows) == 1:
        lines = [i18n.get("MSG_PROPOSAL_ONE", lang, text=store.text(rows[0], lang))]
    else:
        lines = [i18n.get("MSG_PROPOSAL_BATCH", lang, count=len(rows))]
        lines += [i18n.get("MSG_PROPOSAL_LINE", lang, n=n, text=store.text(row, lang))
                  for n, row in enumerate(rows, start=1)]
    if target.channel == "cli":
        lines += [i18n.get("MSG_PROPOSAL_CLI_HINT", lang, id=row.id) for row in rows]
    return "\n".join(lines)


def place(engine: Engine, settings: Settings, *, audit: AuditLog | None = None,
          now: datetime | None = None) -> list[outbox.Outbox]:
    """Put the queued proposals in the outbox (nothing inside quiet hours)."""
    now = now or utcnow()
    if quiet_until(settings, now) is not None:
        return []
    placed: list[outbox.Outbox] = []
    for rows in batches(in_session(engine, store.of_status, "queued")):
        with db_session(engine) as db:  # one message: its row and its proposals together
            target = preferred(db, settings, rows[0].user_id)
            row = outbox.add(db, outbox.Outbox(
                kind=KIND, user_id=rows[0].user_id, channel=target.channel,
                address=target.address, text=message(rows, target), lang=target.lang,
                due_at=now))
            taken = store.mark_delivered(db, [r.id for r in rows], row.id, now)
            if not taken:  # another round placed them first
                outbox.cancel(db, row.id)
        if not taken:
            continue
        placed.append(row)
        for proposal_id in taken:
            _audit(audit, "proposal.delivered", proposal_id, "delivered", target.channel)
    return placed


def expire(engine: Engine, settings: Settings, *, audit: AuditLog | None = None,
           now: datetime | None = None) -> list[Proposal]:
    """Delivered and unanswered past `ignore_after_h`: ignored (one audit line each)."""
    gone = in_session(engine, store.expire, settings, now)
    for row in gone:
        _audit(audit, "proposal.ignored", row.id, "ignored", "metnos")
    return gone


def _audit(audit: AuditLog | None, action: str, proposal_id: str, outcome: str,
           channel: str) -> None:
    if audit is not None:
        audit.append(sender="metnos", channel=channel, action=action, action_id=proposal_id,
                     decision="info", outcome=outcome)
