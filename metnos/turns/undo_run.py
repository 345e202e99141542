"""The one path every undo surface takes (SPEC §5): the API and the web's Undo button,
Telegram's button, "annulla" said in a chat, the model's `undo_last` tool.

The reversals (`metnos.features.reversal`, registered by `metnos.faces.wiring.FEATURES`) are asked
in turn whose action it is: an effect's (a scheduled task set from a chat, a reminder), a mail move,
a remote action, and last the files (`metnos.mechanisms.undo`). One audit line whatever happens.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sqlmodel import col, select

from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import TurnStep
from metnos.ground.reversibility import PARTIAL_PREFIX, valid_action_id
from metnos.mechanisms.undo import UndoError, UndoReport

if TYPE_CHECKING:
    from metnos.turns.runtime import Runtime
    from metnos.turns.service import TurnService

MIN_PREFIX = 4  # the shortest handle taken as a prefix of an action's id


class Ambiguous(ValueError):
    """A handle that more than one action's id starts with."""


def run_undo(service: TurnService, action_id: str, *, sender: str, channel: str) -> UndoReport:
    """Undo `action_id` with the instance's keys (blocking; one audit line). Every surface
    that undoes (the API, Telegram's button, "annulla" said in a chat) goes through here.
    The report offers to undo the undo only when the undo has a before-record of its own
    (a cancelled reminder or a removed schedule has none). Raises UndoError."""
    report = _run_undo(service, action_id, sender=sender, channel=channel)
    record = service.settings.state_dir / "before" / report.undo_id / "manifest.json"
    report.redo = valid_action_id(report.undo_id) and record.is_file()
    return report


def undo_handle(service: TurnService, handle: str, *, sender: str,
                channel: str) -> UndoReport:
    """`run_undo` of the action `handle` names: its whole id, or a unique prefix of it as
    git takes (`metnos undo 3f9c`); an ambiguous handle is refused with its audit line."""
    try:
        found = resolve(service, handle)
    except Ambiguous:
        service.audit.append(sender=sender, channel=channel, action="undo", action_id=None,
                             args={"action_id": handle[:80]}, decision="deny",
                             reason="ERR_UNDO_AMBIGUOUS", outcome="refused")
        raise UndoError("ERR_UNDO_AMBIGUOUS", handle=handle[:80]) from None
    action_id = found if found is not None else handle
    return run_undo(service, action_id, sender=sender, channel=channel)


def _run_undo(service: TurnService, action_id: str, *, sender: str,
              channel: str) -> UndoReport:
    for reversal in service.hooks.reversals.values():
        report = reversal.undo(service, service.hooks, action_id, sender=sender,
                               channel=channel)
        if report is not None:
            return report
    raise UndoError("ERR_UNDO_NOT_FOUND", action_id=str(action_id)[:80])


def resolve(service: Runtime, handle: str) -> str | None:
    """The action id `handle` stands for: itself when it is a whole id, else the one id it
    is a unique prefix of (the before-records, the steps). None: no such action.
    Raises Ambiguous when several ids start with it."""
    handle = handle.strip().lower()
    state = service.settings.state_dir / "before"
    if valid_action_id(handle) and (state / handle).is_dir():
        return handle
    if len(handle) < MIN_PREFIX or not handle.isalnum() or not handle.isascii():
        return handle if valid_action_id(handle) else None
    try:
        found = {n for n in os.listdir(state)
                 if n.startswith(handle) and not n.startswith(PARTIAL_PREFIX)}
    except FileNotFoundError:
        found = set()
    with db_session(service.engine) as db:
        found.update(str(a) for a in db.exec(
            select(TurnStep.action_id).where(col(TurnStep.action_id).startswith(handle))
            .limit(3)).all() if a)
    if len(found) > 1:
        raise Ambiguous(handle)
    return found.pop() if found else handle if valid_action_id(handle) else None
