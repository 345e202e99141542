"""One audit record: its fields, and the normalisation of what a caller passes to `append`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from metnos.ground.errors import AuditError
from metnos.mechanisms.audit import chain

DECISIONS = frozenset({"allow", "deny", "ask", "error", "info"})
_TEXT_FIELDS = (
    "sender", "channel", "session_id", "turn_id", "action", "action_id", "approval_id",
    "reason", "outcome",
)  # fmt: skip
_MAX_TEXT = 1000
_UNSAFE = re.compile(r"[\x7f-\x9f\ud800-\udfff]")


@dataclass(frozen=True)
class AuditRecord:
    """One line of the audit log."""

    seq: int
    ts: str
    sender: str | None
    channel: str | None
    session_id: str | None
    turn_id: str | None
    action: str
    action_id: str | None
    args_digest: str | None
    decision: str
    reason: str | None
    outcome: str | None
    cost_usd: str | None
    prev: str
    hash: str
    approval_id: str | None = None  # lines about an approval (absent from older lines)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalise_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's fields checked and normalised (no seq/ts/prev/hash yet)."""
    allowed = {*_TEXT_FIELDS, "args", "args_digest", "decision", "cost_usd"}
    unknown = set(fields) - allowed
    if unknown:
        raise AuditError("ERR_AUDIT_FIELD_UNKNOWN", fields=", ".join(sorted(unknown)))
    decision = fields.get("decision")
    if decision not in DECISIONS or not fields.get("action"):
        raise AuditError("ERR_AUDIT_FIELD_INVALID", fields="decision/action")
    body: dict[str, Any] = {name: _text(fields.get(name)) for name in _TEXT_FIELDS}
    body["decision"] = decision
    digest = fields.get("args_digest")
    if "args" in fields:
        digest = chain.digest_args(fields["args"])
    body["args_digest"] = _text(digest)
    body["cost_usd"] = _cost(fields.get("cost_usd"))
    return body


def _text(value: Any) -> str | None:
    """`value` as bounded, always-encodable text: a field a model controls (an executor name,
    say) must never make the line unwritable or unreadable."""
    if value is None:
        return None
    text = str(value)
    if len(text) > _MAX_TEXT:
        text = text[: _MAX_TEXT - 1] + "…"
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    """A lone surrogate (not UTF-8 encodable) or a control character JSON leaves raw (DEL, C1:
    U+009B is a terminal CSI), as a visible escape."""
    code = ord(match.group())
    return f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"


def _cost(value: Any) -> str | None:
    """A cost as a plain decimal string (floats never enter the hashed JSON)."""
    if value is None:
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation as exc:
        raise AuditError("ERR_AUDIT_FIELD_INVALID", fields="cost_usd") from exc
    if not number.is_finite():
        raise AuditError("ERR_AUDIT_FIELD_INVALID", fields="cost_usd")
    return format(number.normalize(), "f")
