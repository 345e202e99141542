"""The one path every undo surface takes (SPEC §5): the API and the web's Undo button,
Telegram's button, "annulla" said in a chat, the model's `undo_last` tool.

A scheduled task set from a chat, a reminder, a mail move and a remote action each have their
own undo; everything else is `metnos.undo`. One audit line whatever happens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from metnos import keys
from metnos.mail.undo import undo_mail
from metnos.reminders.effect import cancel_reminder
from metnos.remote.undo import undoer
from metnos.reversibility import valid_action_id
from metnos.undo import UndoReport, undo

if TYPE_CHECKING:
    from metnos.turns.service import TurnService


def run_undo(service: TurnService, action_id: str, *, sender: str, channel: str) -> UndoReport:
    """Undo `action_id` with the instance's keys (blocking; one audit line). Every surface
    that undoes (the API, Telegram's button, "annulla" said in a chat) goes through here.
    The report offers to undo the undo only when the undo has a before-record of its own
    (a cancelled reminder or a removed schedule has none). Raises UndoError."""
    report = _run_undo(service, action_id, sender=sender, channel=channel)
    record = service.settings.state_dir / "before" / report.undo_id / "manifest.json"
    report.redo = valid_action_id(report.undo_id) and record.is_file()
    return report


def _run_undo(service: TurnService, action_id: str, *, sender: str,
              channel: str) -> UndoReport:
    for undo_own in service.undoers:  # a scheduled task set from a chat: it is removed
        report = undo_own(action_id, sender, channel)
        if report is not None:
            return report
    cancelled = cancel_reminder(service, action_id, sender=sender, channel=channel)
    if cancelled is not None:  # a reminder: its message is cancelled, no file changed
        return cancelled
    moved = undo_mail(service, action_id, sender=sender, channel=channel)
    if moved is not None:  # a mail move: the messages go back, through the sandbox
        return moved
    settings = service.settings
    return undo(action_id, state_dir=settings.state_dir, workspace=settings.workspace,
                public_key=keys.load_public_key(settings.keys_dir, "audit"),
                private_key=keys.load_private_key(settings.keys_dir, "audit"),
                audit=service.audit, sender=sender, channel=channel,
                remote=undoer(service))  # a remote action: its pool undoes it
