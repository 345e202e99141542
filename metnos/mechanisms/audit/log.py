"""The tamper-evident audit log (SPEC §6): `workspace/.audit/audit.jsonl`.

One JSON line per tool call, decision or event, hash-chained (see `metnos.mechanisms.audit.chain`),
written with O_APPEND and fsync'd line by line. Appenders in one process serialise on a
`threading.Lock`; appenders in different processes (gateway, serve, CLI) on `fcntl.flock` of
the log file. Under the lock the writer re-reads the tail when the file grew behind its back,
so the chain never forks. A signed head checkpoint goes to `state/audit.checkpoint` (outside
the workspace) every `checkpoint_every` appends and at close.

On open (and whenever the tail is re-read) a last line without its newline — a write cut by a
crash — is copied to `audit.jsonl.torn-<ts>` and truncated away before anything is chained,
and the recovery itself becomes an audit record. A checkpoint that the file contradicts (a cut
tail, a forged signature) makes the log refuse to append: chaining on would launder the cut.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from metnos.ground.errors import AuditError
from metnos.mechanisms.audit import chain
from metnos.mechanisms.audit.record import AuditRecord, normalise_fields

if TYPE_CHECKING:
    from metnos.ground.settings import Settings

log = logging.getLogger(__name__)

KeySource = Ed25519PrivateKey | Callable[[], Ed25519PrivateKey]


class AuditLog:
    """Append-only, hash-chained, fsync'd audit log with a signed head checkpoint."""

    def __init__(
        self,
        log_path: Path,
        checkpoint_path: Path,
        key: KeySource,
        *,
        checkpoint_every: int = 1,
    ) -> None:
        self.log_path = Path(log_path)
        self.checkpoint_path = Path(checkpoint_path)
        self._key = key if isinstance(key, Ed25519PrivateKey) else key()
        self._every = max(1, checkpoint_every)
        self._lock = threading.Lock()
        self._since_checkpoint = 0
        self._seq = 0
        self._head = chain.GENESIS
        self._end = 0  # file size that `_seq`/`_head` describe
        self._torn: list[str] = []  # kept copies of torn tails not yet recorded
        self._fd = self._open()
        self._pid = os.getpid()
        with self._locked():
            self._sync_tail()
            self._check_checkpoint()
            self._record_torn()

    # -- public ----------------------------------------------------------------------------
    def append(self, **fields: Any) -> AuditRecord:
        """Append one record; `args=` is digested, never stored. Returns the written record."""
        body = normalise_fields(fields)
        with self._locked():
            self._sync_tail()
            self._record_torn()
            record = self._write(body)
            self._since_checkpoint += 1
            if self._since_checkpoint >= self._every:
                self._checkpoint(final=False)
        return record

    def tail(self, n: int = 20) -> list[dict[str, Any]]:
        """The last `n` complete records, oldest first."""
        return read_tail(self.log_path, n)

    @property
    def head(self) -> tuple[int, str]:
        """(seq, hash) of the last record this process knows about."""
        return self._seq, self._head

    def close(self) -> None:
        """Write a final checkpoint and close the file. Idempotent."""
        if self._fd < 0:
            return
        with self._locked():
            self._sync_tail()
            self._record_torn()
            if self._seq > 0:
                self._checkpoint(final=True)
        os.close(self._fd)
        self._fd = -1

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- private ---------------------------------------------------------------------------
    def _open(self) -> int:
        self.log_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.checkpoint_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        existed = self.log_path.exists()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
        fd = os.open(self.log_path, flags, 0o600)
        if not existed:
            chain.fsync_dir(self.log_path.parent)
        return fd

    def _locked(self) -> _Locked:
        if self._fd < 0:
            raise AuditError("ERR_AUDIT_CLOSED", path=str(self.log_path))
        if os.getpid() != self._pid:  # a forked child: the inherited fd shares the parent's flock
            os.close(self._fd)
            self._lock = threading.Lock()
            self._fd, self._pid, self._end = self._open(), os.getpid(), -1
        return _Locked(self._lock, self._fd)

    def _sync_tail(self) -> None:
        """Bring (seq, head) up to the file's real tail; recover a torn last line."""
        size = os.fstat(self._fd).st_size
        if size == self._end:
            return
        good = chain.last_newline_end(self._fd, size)
        if good < size:
            self._recover_torn(good, size)
        self._end = good
        self._seq, self._head = _last_record(self._fd, good, self.log_path)

    def _recover_torn(self, good: int, size: int) -> None:
        torn = os.pread(self._fd, size - good, good)
        stamp = chain.utc_now().replace(":", "").replace("-", "")
        keep = self.log_path.with_name(f"{self.log_path.name}.torn-{stamp}")
        fd = os.open(keep, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, torn)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.ftruncate(self._fd, good)
        os.fsync(self._fd)
        log.warning("audit.torn_tail bytes=%d kept=%s", len(torn), keep)
        self._torn.append(keep.name)

    def _record_torn(self) -> None:
        """Make each torn-tail recovery an audit record of its own."""
        while self._torn:
            name = self._torn.pop(0)
            fields = {
                "action": "audit.torn_tail",
                "decision": "info",
                "reason": "ERR_AUDIT_TORN_TAIL",
                "outcome": name,
            }
            self._write(normalise_fields(fields))

    def _check_checkpoint(self) -> None:
        """Refuse to chain on when the signed head contradicts the file."""
        try:
            cp = chain.read_checkpoint(self.checkpoint_path)
        except (OSError, ValueError) as exc:
            path = str(self.checkpoint_path)
            raise AuditError("ERR_AUDIT_CHECKPOINT_INVALID", path=path) from exc
        if cp is None:
            return
        if not chain.checkpoint_valid(cp, self._key.public_key()):
            raise AuditError("ERR_AUDIT_CHECKPOINT_SIGNATURE", path=str(self.checkpoint_path))
        if cp.seq > self._seq:
            raise AuditError("ERR_AUDIT_TAIL_CUT", line=self._seq + 1, seq=cp.seq)
        found = _hash_at(self._fd, self._end, cp.seq) if cp.seq else chain.GENESIS
        if found != cp.hash:
            raise AuditError("ERR_AUDIT_CHECKPOINT_MISMATCH", line=cp.seq)

    def _write(self, body: dict[str, Any]) -> AuditRecord:
        record = {**body, "seq": self._seq + 1, "ts": chain.utc_now(), "prev": self._head}
        record["hash"] = chain.record_hash(record)
        line = (chain.canonical_json(record) + "\n").encode("utf-8")
        try:
            written = os.write(self._fd, line)
            os.fsync(self._fd)
        except OSError as exc:  # the next sync sees whatever reached the file
            raise AuditError("ERR_AUDIT_WRITE_FAILED", path=str(self.log_path)) from exc
        if written != len(line):  # a short write: the next sync sees a torn tail
            raise AuditError("ERR_AUDIT_WRITE_FAILED", path=str(self.log_path))
        self._seq, self._head = record["seq"], record["hash"]
        self._end += written
        return AuditRecord(**record)

    def _checkpoint(self, *, final: bool) -> None:
        cp = chain.sign_checkpoint(self._seq, self._head, self._key)
        chain.write_checkpoint(self.checkpoint_path, cp, sync_dir=final)
        self._since_checkpoint = 0


class _Locked:
    """Thread lock + exclusive flock on the log file, held together."""

    def __init__(self, lock: threading.Lock, fd: int) -> None:
        self._lock, self._fd = lock, fd

    def __enter__(self) -> None:
        self._lock.acquire()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._lock.release()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()


def open_audit_log(settings: Settings, *, checkpoint_every: int = 1) -> AuditLog:
    """The instance's audit log, with its `audit` key pair (created when missing)."""
    from metnos.ground import keys

    keys.ensure_keypair(settings.keys_dir, "audit")
    return AuditLog(
        audit_log_path(settings),
        checkpoint_path(settings),
        keys.load_private_key(settings.keys_dir, "audit"),
        checkpoint_every=checkpoint_every,
    )


def audit_log_path(settings: Settings) -> Path:
    return settings.audit_dir / "audit.jsonl"


def checkpoint_path(settings: Settings) -> Path:
    return settings.state_dir / "audit.checkpoint"


def read_tail(log_path: Path, n: int) -> list[dict[str, Any]]:
    """The last `n` complete, parseable records of the log at `log_path`, oldest first."""
    out: list[dict[str, Any]] = []
    try:
        fd = os.open(log_path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return out
    try:
        end = chain.last_newline_end(fd, os.fstat(fd).st_size)
        for _, raw in chain.lines_backwards(fd, end):
            if len(out) >= n:
                break
            try:
                out.append(json.loads(raw))
            except ValueError:
                continue
    finally:
        os.close(fd)
    out.reverse()
    return out


def _last_record(fd: int, end: int, path: Path) -> tuple[int, str]:
    """(seq, hash) of the last complete line before `end`; genesis for an empty file."""
    for _, raw in chain.lines_backwards(fd, end):
        try:
            record = json.loads(raw)
            seq, head = record["seq"], record["hash"]
        except (ValueError, KeyError, TypeError) as exc:
            raise AuditError("ERR_AUDIT_TAIL_UNREADABLE", path=str(path)) from exc
        if not isinstance(seq, int) or chain.record_hash(record) != head:
            raise AuditError("ERR_AUDIT_TAIL_UNREADABLE", path=str(path))
        return seq, head
    return 0, chain.GENESIS


def _hash_at(fd: int, end: int, seq: int) -> str | None:
    """The hash of the record with `seq`, reading backwards from `end` (None when absent)."""
    for _, raw in chain.lines_backwards(fd, end):
        try:
            record = json.loads(raw)
        except ValueError:
            return None
        if not isinstance(record, dict) or not isinstance(record.get("seq"), int):
            return None
        if record["seq"] == seq:
            return str(record.get("hash"))
        if record["seq"] < seq:
            return None
    return None
