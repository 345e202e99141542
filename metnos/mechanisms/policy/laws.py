"""The 4 Laws as code: the deontic guard, the first phase of the Vaglio (SPEC §4).

1. No action that makes state unrecoverable: an irreversible action always asks (even in Full),
   and a mutating action whose *before* record cannot be written is refused
   (`ERR_LAW_NO_UNDO_RECORD`). Enforced by the turn with `decide` and the reversibility store.
2. No exfiltration of secrets: a secret (plain, base64, hex or URL-encoded) in an executor's
   arguments is refused (`ERR_LAW_SECRET_EXFILTRATION`); results are redacted with
   `SecretScanner.redact` before anyone (model, user, audit) sees them.
3. Never obey instructions found in data: untrusted content reaches models only wrapped
   (`metnos.mechanisms.policy.untrusted`), and a step planned after untrusted data was read asks
   even in Full (`ASK_LAW_UNTRUSTED_DATA`). Enforced by the turn (taint).
4. Never act outside the authenticated user: an argument naming a user (`user`, `user_id`,
   `as_user`, `on_behalf_of`, `owner`, any spelling) other than the caller is refused
   (`ERR_LAW_OTHER_USER`).

`check_laws` covers Laws 2 and 4 on one step's arguments; it is pure and fast.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.policy.secret_scan import REDACTED, SecretScanner

__all__ = [
    "ASK_UNTRUSTED",
    "ERR_NO_UNDO_RECORD",
    "ERR_OTHER_USER",
    "ERR_SECRET_EXFILTRATION",
    "REDACTED",
    "USER_ARG_NAMES",
    "SecretScanner",
    "check_laws",
    "untrusted_data_decision",
    "no_undo_record_decision",
]

ERR_SECRET_EXFILTRATION = "ERR_LAW_SECRET_EXFILTRATION"
ERR_OTHER_USER = "ERR_LAW_OTHER_USER"
ASK_UNTRUSTED = "ASK_LAW_UNTRUSTED_DATA"
ERR_NO_UNDO_RECORD = "ERR_LAW_NO_UNDO_RECORD"
# argument names (lower-cased, without `_`/`-`) that say on whose behalf an action runs
USER_ARG_NAMES = frozenset({"user", "userid", "asuser", "onbehalfof", "owner"})


def check_laws(
    *, executor: str, args: dict[str, Any], user_id: str, scanner: SecretScanner
) -> Decision | None:
    """A deny Decision when the step breaks Law 2 or Law 4, else None (the step may go on)."""
    names = scanner.find(args)
    if names:
        return Decision("deny", ERR_SECRET_EXFILTRATION,
                        {"executor": executor, "names": ", ".join(names)})
    for arg, value in _user_args(args):
        if value is not None and value != user_id:
            return Decision("deny", ERR_OTHER_USER, {"executor": executor, "arg": arg})
    return None


UNTRUSTED_SOURCES = "sources"  # the var naming the untrusted sources of an asking step


def untrusted_data_decision(executor: str, sources: Sequence[str] = ()) -> Decision:
    """Law 3: the step comes after untrusted data was read in this turn, so it asks; the
    approval card names the untrusted `sources` in the context."""
    named = ", ".join(dict.fromkeys(sources)) or "?"
    return Decision("ask", ASK_UNTRUSTED, {"executor": executor, UNTRUSTED_SOURCES: named})


def no_undo_record_decision(executor: str) -> Decision:
    """Law 1: the before record could not be written, so the action is refused."""
    return Decision("deny", ERR_NO_UNDO_RECORD, {"executor": executor})


def _user_args(value: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of every argument naming a user, at any depth of nested objects."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and _normalise(key) in USER_ARG_NAMES:
                yield key, item
            yield from _user_args(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _user_args(item)


def _normalise(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "").replace(" ", "")
