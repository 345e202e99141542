"""The hash chain of the audit log: canonical JSON, record hashes, signed checkpoints, tail reads.

A record is a flat JSON object. Its `hash` is the sha256 of the canonical JSON of the record
without `hash` (sorted keys, separators `,` `:`, UTF-8 not escaped). No floats are ever hashed:
costs are decimal strings. The genesis record has `prev = "0" * 64` and `seq = 1`, so a record's
`seq` equals its line number.

The signed head checkpoint `{seq, hash, ts, signature}` lives outside the workspace; it is what
makes a cut tail detectable (a plain chain cannot tell a short log from a truncated one).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from metnos.ground import durable

GENESIS = "0" * 64
_CHECKPOINT_DOMAIN = b"metnos-audit-checkpoint-v1\n"
_CHUNK = 8192


def canonical_json(obj: Any) -> str:
    """Canonical JSON text: sorted keys, no spaces, non-ASCII kept; non-JSON values via str()."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def digest_args(args: Any) -> str:
    """sha256 hex of the canonical JSON of tool arguments (which are never logged themselves).

    `surrogatepass`: a model can send a lone surrogate (JSON "\\ud800"); it must still digest."""
    return hashlib.sha256(canonical_json(args).encode("utf-8", "surrogatepass")).hexdigest()


def record_hash(record: Mapping[str, Any]) -> str:
    """The chain hash of `record`: sha256 over its canonical JSON without the `hash` field."""
    body = {k: v for k, v in record.items() if k != "hash"}
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


def utc_now() -> str:
    """Now as UTC ISO-8601 with microseconds and a `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- checkpoints ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Checkpoint:
    """The signed head of the chain: the record `seq` had hash `hash` at time `ts`."""

    seq: int
    hash: str
    ts: str
    signature: str = ""

    def signed_bytes(self) -> bytes:
        body = {"seq": self.seq, "hash": self.hash, "ts": self.ts}
        return _CHECKPOINT_DOMAIN + canonical_json(body).encode("utf-8")


def sign_checkpoint(seq: int, head: str, key: Ed25519PrivateKey) -> Checkpoint:
    unsigned = Checkpoint(seq=seq, hash=head, ts=utc_now())
    signature = base64.b64encode(key.sign(unsigned.signed_bytes())).decode("ascii")
    return Checkpoint(seq=seq, hash=head, ts=unsigned.ts, signature=signature)


def checkpoint_valid(cp: Checkpoint, public_key: Ed25519PublicKey) -> bool:
    try:
        public_key.verify(base64.b64decode(cp.signature, validate=True), cp.signed_bytes())
    except (InvalidSignature, ValueError):
        return False
    return True


def write_checkpoint(path: Path, cp: Checkpoint, *, sync_dir: bool = True) -> None:
    """Write `cp` atomically: a temporary file, fsync, rename over, fsync the directory.

    `sync_dir=False` skips the directory fsync (measured: it is most of the cost). A crash may
    then leave the previous checkpoint in place, which is harmless: a checkpoint that lags the
    file is valid, and the file content is always fsync'd before the rename.
    """
    data = json.dumps(
        {"seq": cp.seq, "hash": cp.hash, "ts": cp.ts, "signature": cp.signature}, sort_keys=True
    )
    durable.write_atomic(path, data.encode("utf-8") + b"\n", mode=0o600, sync_dir=sync_dir)


def read_checkpoint(path: Path) -> Checkpoint | None:
    """The checkpoint at `path`; None when there is none. Raises ValueError when unreadable."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    data = json.loads(raw)
    if not isinstance(data, dict):
        raise ValueError("checkpoint is not an object")
    seq, head, ts, sig = data.get("seq"), data.get("hash"), data.get("ts"), data.get("signature")
    if not (isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0):
        raise ValueError("checkpoint seq is not a non-negative integer")
    if not all(isinstance(v, str) for v in (head, ts, sig)):
        raise ValueError("checkpoint fields are not strings")
    return Checkpoint(seq=seq, hash=str(head), ts=str(ts), signature=str(sig))


fsync_dir = durable.fsync_dir


# -- reading the file backwards ------------------------------------------------------------


def lines_backwards(fd: int, end: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines of the file before offset `end`, last first, as (start offset, bytes).

    `end` must sit just after a newline (or be 0). The bytes exclude the newline.
    """
    buf = b""
    pos = end
    while pos > 0:
        size = min(_CHUNK, pos)
        pos -= size
        buf = os.pread(fd, size, pos) + buf
        # buf covers [pos, end of the last line not yet yielded) and ends with its newline
        while True:
            cut = buf.rfind(b"\n", 0, len(buf) - 1)
            if cut < 0:
                break
            yield pos + cut + 1, buf[cut + 1 : -1]
            buf = buf[: cut + 1]
    if buf:
        yield 0, buf[:-1]


def last_newline_end(fd: int, size: int) -> int:
    """Offset just after the last newline in the first `size` bytes (0 when there is none)."""
    pos = size
    while pos > 0:
        chunk_start = max(0, pos - _CHUNK)
        chunk = os.pread(fd, pos - chunk_start, chunk_start)
        idx = chunk.rfind(b"\n")
        if idx >= 0:
            return chunk_start + idx + 1
        pos = chunk_start
    return 0
