"""`verify`: walk the audit log once, streaming, and name the first line that breaks the chain.

Checks, line by line: the line ends with a newline (else a torn tail), it is a JSON object,
its `seq` is its line number (a deleted, inserted or moved line breaks this), its `hash` is the
hash of its content (an edited line), its `prev` is the previous line's `hash`. Then the signed
checkpoint: a valid signature by the `audit` key, a `seq` that exists in the file (else the
tail was cut) and whose line has the checkpointed hash.

Limit (state it in the threat model): whoever holds the audit private key can rewrite the log
and sign a new checkpoint; the chain only proves integrity against everyone else.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from metnos.mechanisms.audit import chain

if TYPE_CHECKING:
    from metnos.ground.settings import Settings

OK_KEY = "MSG_AUDIT_VERIFY_OK"


@dataclass(frozen=True)
class VerifyReport:
    """The verdict. `first_bad_line` is 1-based; None when ok or when the checkpoint is bad."""

    ok: bool
    lines: int
    first_bad_line: int | None
    reason_key: str
    vars: dict[str, Any] = field(default_factory=dict)

    def message(self, lang: str | None = None) -> str:
        from metnos.ground import i18n

        return i18n.get(self.reason_key, lang, **self.vars)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "lines": self.lines,
            "first_bad_line": self.first_bad_line,
            "reason_key": self.reason_key,
            "vars": self.vars,
        }


def verify(log_path: Path, checkpoint_path: Path, public_key: Ed25519PublicKey) -> VerifyReport:
    """Verify the chain in `log_path` against the signed checkpoint at `checkpoint_path`."""
    try:
        cp = chain.read_checkpoint(checkpoint_path)
    except (OSError, ValueError):
        return _bad(0, None, "ERR_AUDIT_CHECKPOINT_INVALID", path=str(checkpoint_path))
    walk = _walk(Path(log_path), cp.seq if cp else 0)
    if isinstance(walk, VerifyReport):
        return walk
    lines, hash_at_cp = walk
    if cp is None:
        if lines:
            return _bad(lines, None, "ERR_AUDIT_CHECKPOINT_MISSING", path=str(checkpoint_path))
        return VerifyReport(True, 0, None, OK_KEY, {"lines": 0})
    return _check_checkpoint(cp, public_key, lines, hash_at_cp, checkpoint_path)


def verify_instance(settings: Settings) -> VerifyReport:
    """`verify` on the instance's log, checkpoint and `audit` public key."""
    from metnos.ground import keys
    from metnos.ground.errors import SignatureError
    from metnos.mechanisms.audit.log import audit_log_path, checkpoint_path

    try:
        public_key = keys.load_public_key(settings.keys_dir, "audit")
    except SignatureError as exc:
        return _bad(0, None, exc.key, **exc.vars)
    return verify(audit_log_path(settings), checkpoint_path(settings), public_key)


def _walk(path: Path, cp_seq: int) -> VerifyReport | tuple[int, str | None]:
    """Stream the file; a report at the first bad line, else (lines, hash of line `cp_seq`)."""
    prev = chain.GENESIS
    hash_at_cp: str | None = None
    lineno = 0
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return 0, None
    with fh:
        for raw in fh:
            lineno += 1
            if not raw.endswith(b"\n"):
                return _bad(lineno - 1, lineno, "ERR_AUDIT_TORN_TAIL", line=lineno)
            reason, prev = _check_line(raw, lineno, prev)
            if reason is not None:
                return _bad(lineno - 1, lineno, reason, line=lineno)
            if lineno == cp_seq:
                hash_at_cp = prev
    return lineno, hash_at_cp


def _check_line(raw: bytes, lineno: int, prev: str) -> tuple[str | None, str]:
    """(reason key or None, this line's hash) for one line whose predecessor hashed to `prev`."""
    try:
        record = json.loads(raw)
    except ValueError:
        return "ERR_AUDIT_LINE_INVALID", prev
    if not isinstance(record, dict):
        return "ERR_AUDIT_LINE_INVALID", prev
    seq, head = record.get("seq"), record.get("hash")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(head, str):
        return "ERR_AUDIT_LINE_INVALID", prev
    if seq != lineno:
        return "ERR_AUDIT_SEQ_MISMATCH", prev
    if chain.record_hash(record) != head:
        return "ERR_AUDIT_HASH_MISMATCH", prev
    if record.get("prev") != prev:
        return "ERR_AUDIT_PREV_MISMATCH", prev
    return None, head


def _check_checkpoint(
    cp: chain.Checkpoint,
    public_key: Ed25519PublicKey,
    lines: int,
    hash_at_cp: str | None,
    checkpoint_path: Path,
) -> VerifyReport:
    if not chain.checkpoint_valid(cp, public_key):
        return _bad(lines, None, "ERR_AUDIT_CHECKPOINT_SIGNATURE", path=str(checkpoint_path))
    if cp.seq > lines:
        return _bad(lines, lines + 1, "ERR_AUDIT_TAIL_CUT", line=lines + 1, seq=cp.seq)
    if cp.seq and hash_at_cp != cp.hash:
        return _bad(lines, cp.seq, "ERR_AUDIT_CHECKPOINT_MISMATCH", line=cp.seq)
    return VerifyReport(True, lines, None, OK_KEY, {"lines": lines})


def _bad(lines: int, bad_line: int | None, key: str, **vars: Any) -> VerifyReport:
    return VerifyReport(False, lines, bad_line, key, vars)
