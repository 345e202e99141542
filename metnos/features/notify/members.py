"""Telling the owner what family members had done (SPEC §4, issue 25): after a member's
step that changes something (or reaches the network) ran, whoever approved it, one outbox
notice goes to the owner's preferred chat, naming who asked and what happened, in plain
words. `watcher` is registered with every runtime (`metnos.faces.wiring.FEATURES`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from metnos.features import pairing
from metnos.features.notify.effect import Destination, destination
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.settings import Settings
from metnos.mechanisms.approvals.card import action_sentence
from metnos.mechanisms.policy.approver import OWNER_USER_ID

if TYPE_CHECKING:
    from metnos.turns.context import CheckedStep, TurnContext
    from metnos.turns.reply import StepOutcome
    from metnos.turns.runtime import Runtime

log = logging.getLogger(__name__)

KIND = "member"  # the outbox rows' kind
FALLBACK = Destination("cli", "member-notices")  # no chat of the owner known
Watcher = Callable[["TurnContext", "CheckedStep", "StepOutcome"], Awaitable[None]]


def watcher(service: Runtime) -> Watcher:
    """The runner's hook after each step: a member's done step that acted tells the owner."""
    async def watch(ctx: TurnContext, checked: CheckedStep, outcome: StepOutcome) -> None:
        spec = checked.spec
        if ctx.user_id == OWNER_USER_ID or outcome.status != "done" or spec is None:
            return
        if not (spec.manifest.side_effects or spec.manifest.sandbox.network):
            return
        args = checked.request.args if checked.request is not None else checked.step.args
        await asyncio.to_thread(in_session, service.engine, tell_owner, service.settings,
                                ctx.user_id, checked.step.executor, args, ctx.turn_id,
                                checked.action_id)
    return watch


def tell_owner(db: Session, settings: Settings, asker: str, executor: str,
               args: Mapping[str, Any], turn_id: str | None = None,
               action_id: str | None = None) -> Outbox:
    """One notice to the owner: `asker` had `executor` run with `args`."""
    where = owner_destination(db, settings)
    lang = settings.lang
    text = i18n.get("MSG_APPROVAL_MEMBER_CHANGED", lang, asker=asker,
                    action=action_sentence(executor, args, lang))
    return outbox.add(db, Outbox(kind=KIND, user_id=OWNER_USER_ID, channel=where.channel,
                                 address=where.address, text=text, lang=lang,
                                 due_at=datetime.now(UTC), turn_id=turn_id))


def owner_destination(db: Session, settings: Settings) -> Destination:
    """The owner's preferred chat (`[notify] channel`, or the one they last wrote from);
    their Telegram chat, else the CLI's notices, when none is known."""
    return destination(db, settings, OWNER_USER_ID, _owner_chat(db) or FALLBACK)


def _owner_chat(db: Session) -> Destination | None:
    """The owner's Telegram chat when they paired there (a private chat's id is theirs)."""
    found = pairing.paired_user(db, "telegram", OWNER_USER_ID)
    return Destination("telegram", f"telegram-{found.sender_id}") if found else None
