"""Whose yes an action needs (SPEC §4): decided by the action, never by who asked.

The owner approves everything of their own. A family member (any other user) approves only
what touches nothing but their own things: their reminders, additions to the shared lists,
and the built-in steps that change nothing and reach nothing (reading, summarising).
Anything on the household's files, the identity files, the shell, the schedules, the mail or
the network waits for the owner, and so does an executor not in the table (fail closed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from metnos.mechanisms.policy.decide import Decision

ASK_OWNER = "ASK_OWNER_APPROVES"
OWNER_USER_ID = "owner"  # the holder of the owner token; `metnos.features.pairing.OWNER_USER_ID`
Approver = Literal["self", "owner"]


class _Sandbox(Protocol):
    @property
    def network(self) -> bool: ...


class Acting(Protocol):
    """What the rule reads of a manifest (`metnos.mechanisms.executors.manifest.Manifest`)."""

    @property
    def name(self) -> str: ...
    @property
    def side_effects(self) -> bool: ...
    @property
    def effect(self) -> str | None: ...
    @property
    def sandbox(self) -> _Sandbox: ...


def _own_reminder(manifest: Acting, args: Mapping[str, Any]) -> bool:
    """A reminder lands in the chat of the member who set it (metnos.features.reminders.effect)."""
    return manifest.effect == "schedule_reminder" and not manifest.sandbox.network


def _list_addition(manifest: Acting, args: Mapping[str, Any]) -> bool:
    """Adding to (or reading) a shared list; removing and clearing are the owner's."""
    return args.get("action") in ("add", "show") and not manifest.sandbox.network


def _changes_nothing(manifest: Acting, args: Mapping[str, Any]) -> bool:
    return not (manifest.side_effects or manifest.sandbox.network)


# built-in executor → when a member may approve its step alone; any other: the owner
MEMBER_MAY: dict[str, Callable[[Acting, Mapping[str, Any]], bool]] = {
    "reminder_set": _own_reminder,
    "lists": _list_addition,
    "fs_read": _changes_nothing, "fs_find": _changes_nothing, "i18n_lint": _changes_nothing,
    "summarize": _changes_nothing, "pdf_ext": _changes_nothing, "ocr": _changes_nothing,
}


def approver_for(manifest: Acting, args: Mapping[str, Any], asker: str) -> Approver:
    """"self" when `asker` may approve this step of theirs, else "owner"."""
    if asker == OWNER_USER_ID:
        return "self"
    allowed = MEMBER_MAY.get(manifest.name)
    return "self" if allowed is not None and allowed(manifest, args) else "owner"


def approver_id(manifest: Acting, args: Mapping[str, Any], asker: str) -> str:
    """The user id that may decide the step `asker` asked for."""
    return asker if approver_for(manifest, args, asker) == "self" else OWNER_USER_ID


def needs_owner(manifest: Acting, args: Mapping[str, Any], asker: str) -> bool:
    """A member's step that only the owner may approve: it asks even where the autonomy
    level would let it run unasked."""
    return approver_for(manifest, args, asker) == "owner"


def owner_asks(verdict: Decision, manifest: Acting, args: Mapping[str, Any],
               asker: str) -> Decision:
    """A member's step that only the owner may approve asks the owner at every autonomy
    level (a deny stays a deny; an ask keeps its own reason)."""
    if verdict.verdict != "allow" or not needs_owner(manifest, args, asker):
        return verdict
    return Decision("ask", ASK_OWNER, {**verdict.vars, "executor": manifest.name})
