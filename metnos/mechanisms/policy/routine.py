"""Which steps are ordinary reversible changes (issue 27: reversibility lowers the cost of yes).

In `Supervised`, such a step runs without a card and shows Undo (`policy.decide`,
`routine=True`), when the turn read no outside text and the session does not ask for
everything. The class is decided here, in code, per built-in executor (like the approver's
table): writing a file, moving or renaming one, archiving one, changing a list, setting a
reminder, renaming a batch of photos. Every one of them keeps a before-record first, inside
the workspace (paths outside it are refused before this), and can be undone.

Never in the class, whatever a manifest says: deleting (`fs_delete` moves to the trash, but
a deletion still asks), the shell, the network, the mailbox, schedules (they run later as the
owner), any executor not in the table (fail closed), and any step a manifest gives a network,
a mail account or an effect other than a reminder. The identity files (the system prompt)
ask on their own rule (`metnos.mechanisms.identity`), whatever this says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from metnos.mechanisms.policy import approver


class Acting(approver.Acting, Protocol):
    """What the rule reads of a manifest (`metnos.mechanisms.executors.manifest.Manifest`): the
    approver's view, and whether it can be undone and which mail account it uses."""

    @property
    def reversible(self) -> bool: ...
    @property
    def account(self) -> str | None: ...


def _always(manifest: Acting, args: Mapping[str, Any]) -> bool:
    return True


def _own_reminder(manifest: Acting, args: Mapping[str, Any]) -> bool:
    return manifest.effect == "schedule_reminder"


# built-in executor → when its step is an ordinary reversible change; any other: not one
ROUTINE: dict[str, Callable[[Acting, Mapping[str, Any]], bool]] = {
    "fs_write": _always,  # a new file, or one whose bytes the before-record copies
    "fs_move": _always,  # a move or rename: never over an existing file
    "archive": _always,  # a move under archive/<year>/<category>/
    "lists": _always,  # add, remove, clear: the list file's before-state is kept
    "reminder_set": _own_reminder,  # undone until it arrives
    "photo_rename": _always,  # renames only, the signed list of names kept on the server
}
EFFECTS = frozenset({None, "schedule_reminder"})


def routine_change(manifest: Acting, args: Mapping[str, Any]) -> bool:
    """Whether this step is an ordinary reversible change (before its before-record is
    known to fit: the caller checks that too)."""
    rule = ROUTINE.get(manifest.name)
    if rule is None or not (manifest.side_effects and manifest.reversible):
        return False
    if manifest.sandbox.network or manifest.account is not None:
        return False
    if manifest.effect not in EFFECTS:
        return False
    return rule(manifest, args)
