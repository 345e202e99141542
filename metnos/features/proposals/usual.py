"""What accepting an "as usual?" proposal does (`metnos.features.proposals.habits`): the
person's own words for the habit run as a turn of that person, in the conversation they last
used for it, with every check a typed message gets (the policy, the Laws, approvals, the
audit, undo); its reply reaches the channel the proposal was delivered to.

`answer` is how every surface answers a proposal (the API, Telegram's buttons): the one path
of `answer_proposal`, then the turn of an accepted "as usual?".
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.engine import Engine

from metnos.features.proposals.answer import answer_proposal
from metnos.features.proposals.habits import KIND
from metnos.features.proposals.models import Proposal
from metnos.features.proposals.store import on_accept
from metnos.features.reminders import outbox
from metnos.features.reminders.outbox import Outbox
from metnos.ground import i18n
from metnos.ground.db.engine import in_session
from metnos.ground.db.models import utcnow
from metnos.ground.errors import MetnosError
from metnos.turns.handle import TurnHandle
from metnos.turns.language import ui_locale

log = logging.getLogger(__name__)

CHANNEL = "proposal"  # the turn's channel: its audit lines say where it came from
REPLY_WAIT_S = 600.0  # an accepted habit may wait for an approval: its reply, when it comes


def accept(engine: Engine, proposal: Proposal) -> None:
    """The kind's handler: an "as usual?" without the person's words cannot run."""
    if not str((proposal.payload or {}).get("text") or "").strip():
        raise ValueError("the proposal carries no words to run")


on_accept(KIND, accept)


async def answer(turns: TurnHandle, proposal_id: str, decision: str, *, user_id: str,
                 sender: str, channel: str) -> Proposal:
    """`user_id`'s answer (`answer_proposal`: ProposalError, audited); an accepted "as
    usual?" then runs in the background."""
    service = turns.service
    row = await asyncio.to_thread(answer_proposal, service.engine, service.audit, proposal_id,
                                  decision, user_id=user_id, sender=sender, channel=channel,
                                  reload_registry=service.reload_registry)
    if row.status == "accepted" and row.kind == KIND:
        turns.launch(run_accepted(turns, row))
    return row


async def run_accepted(turns: TurnHandle, proposal: Proposal) -> None:
    """The habit's words as a turn of its person; the reply to where the proposal went."""
    payload = proposal.payload or {}
    engine = turns.service.engine
    lang = ui_locale(str(payload.get("lang") or ""), None, turns.service.settings)
    try:
        ctx = await turns.start(str(payload["text"]), session_id=payload.get("session_id"),
                                lang=lang, channel=CHANNEL, sender=proposal.user_id)
    except MetnosError as exc:
        log.warning("proposals.as_usual_refused id=%s key=%s", proposal.id, exc.key)
        return
    answered = await turns.reply(ctx.turn_id, REPLY_WAIT_S)
    reply = answered.reply if answered is not None else None
    if answered is not None and answered.status == "awaiting_approval":
        reply = await _final_reply(turns, ctx.turn_id)  # its approvals wait where they wait
    delivered = (await asyncio.to_thread(in_session, engine, outbox.get, proposal.outbox_id)
                 if proposal.outbox_id else None)
    if reply is None or delivered is None:
        return  # still running after REPLY_WAIT_S, or nowhere to say it
    text = i18n.get("MSG_PROPOSAL_AS_USUAL_DONE", ctx.lang, reply=reply)
    await asyncio.to_thread(in_session, engine, outbox.add, Outbox(
        kind="message", user_id=proposal.user_id, channel=delivered.channel,
        address=delivered.address, text=text, lang=ctx.lang, due_at=utcnow(),
        turn_id=ctx.turn_id))


async def _final_reply(turns: TurnHandle, turn_id: str) -> str | None:
    """The reply of a turn that waited for an approval, from its events; None when it has
    none after REPLY_WAIT_S."""
    try:
        async with asyncio.timeout(REPLY_WAIT_S):
            async for event in turns.follow(turn_id):
                if event.kind == "reply":
                    return str(event.data.get("text") or "")
    except TimeoutError:
        return None
    return None
