"""Where each identity file's text came from (issue 25: standing orders through the files).

The six workspace files (`metnos.mechanisms.workspace.FILES`) become the system prompt of every
session, so they speak with the owner's voice. Two rules keep outside text from borrowing that
voice:

- A step that may change one of them (a path it writes is the file, or a folder holding it)
  always asks, at every autonomy level (`identity_decision`); the approval carries the whole
  new text (the step's arguments, never cut) and, for `fs_write`, the file's current text.
- A write from a tainted turn is recorded here with its provenance: one row per (file, hash
  of the bytes written) naming the untrusted sources that were in the turn's context, kept in
  the database (outside the workspace; it survives restarts). While the file's current bytes
  hash to an unconfirmed row, the prompt builder hands its text to the model inside the
  untrusted-data envelope and the turn that reads it starts tainted (`untrusted_files`).
  The owner confirms the text (`metnos workspace confirm FILE`, after reading it), or
  replaces it with a whole new text in an untainted turn of their own; an undo that puts the
  tainted bytes back finds their row again.

Every change is noticed by comparing the files' hashes around each step (`snapshot`), so it
does not matter which executor wrote (fs_write, fs_move, shell_run...). A partial write from
an untainted turn (an append, a shell command) keeps the earlier provenance on the new bytes.
An edit by hand outside Metnos gives new bytes with no row: the owner's own text.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sqlalchemy import DateTime, Engine, update
from sqlmodel import JSON, Column, Field, SQLModel, col, select

from metnos.ground.db.engine import session as db_session
from metnos.ground.db.models import utcnow
from metnos.mechanisms.policy.decide import Decision
from metnos.mechanisms.workspace import FILES

ASK_IDENTITY = "ASK_IDENTITY_FILE"
ASK_SCHEDULE = "ASK_OWNER_SCHEDULE"
TAINTED_WRITE = "MSG_IDENTITY_TAINTED_WRITE"
KEPT_WRITE = "MSG_IDENTITY_PROVENANCE_KEPT"
OWNER_WRITE = "MSG_IDENTITY_OWNER_WRITE"
CONFIRMED = "MSG_IDENTITY_CONFIRMED"
MAX_BYTES = 1 << 20  # larger identity files are hashed on their first MiB (and marked)

Snapshot = dict[str, str | None]  # file name → hash of its bytes, None when absent


class IdentityProvenance(SQLModel, table=True):
    """An identity file's bytes that a tainted turn wrote, until the owner confirms them."""

    __tablename__ = "identity_provenance"

    file: str = Field(primary_key=True)
    sha256: str = Field(primary_key=True)
    sources: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    turn_id: str | None = None
    action_id: str | None = None
    written_at: datetime = Field(sa_type=DateTime(timezone=True), default_factory=utcnow)
    confirmed_at: datetime | None = Field(default=None, sa_type=DateTime(timezone=True))


_READY: set[int] = set()


def ensure_table(engine: Engine) -> None:
    """Create the table on first use (an older database gains it here: no migration)."""
    if id(engine) in _READY:
        return
    SQLModel.metadata.create_all(engine, tables=[
        IdentityProvenance.__table__])  # type: ignore[attr-defined]
    _READY.add(id(engine))


def file_hash(path: Path) -> str | None:
    """The sha256 of a regular file's bytes (its first MiB), None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    return hashlib.sha256(data[:MAX_BYTES]).hexdigest()


def snapshot(workspace: Path) -> Snapshot:
    return {name: file_hash(workspace / name) for name in FILES}


def touched(workspace: Path, written: Sequence[str]) -> list[str]:
    """The identity files a step writing `written` (resolved paths) may change: the file
    itself, or a folder that holds it (the workspace, or a folder above it)."""
    root = Path(os.path.realpath(workspace))
    found: list[str] = []
    for raw in written:
        target = Path(os.path.realpath(root / raw))
        for name in FILES:
            if name not in found and (target == root / name or target in (root / name).parents):
                found.append(name)
    return found


def identity_decision(executor: str, files: Sequence[str], verdict: Decision, *,
                      key: str = ASK_IDENTITY) -> Decision:
    """A step that may change an identity file (or set a schedule: `key`) asks, whatever the
    autonomy level; a step that asks anyway keeps its reason (the taint's names the sources)
    and names the files too."""
    if (not files and key == ASK_IDENTITY) or verdict.verdict == "deny":
        return verdict
    if verdict.verdict == "ask":
        return Decision("ask", verdict.key, {**verdict.vars, "identity_files": list(files)})
    return Decision("ask", key, {**verdict.vars, "executor": executor,
                                 "files": ", ".join(files), "identity_files": list(files)})


def record_changes(engine: Engine, workspace: Path, before: Snapshot, *, tainted: bool,
                   sources: Sequence[str], whole: Sequence[str] = (), turn_id: str | None,
                   action_id: str | None) -> list[tuple[str, str]]:
    """After a step: a row for each identity file it changed while the turn was tainted;
    an untainted partial change carries the old bytes' unconfirmed row over to the new ones.
    `whole`: files the step replaced with a text the owner saw whole (an untainted
    `fs_write`), which end any provenance. Returns (file, audit reason) for each change."""
    after = snapshot(workspace)
    changed = [name for name in FILES if after[name] != before.get(name)]
    if not changed:
        return []
    ensure_table(engine)
    decided: list[tuple[str, str]] = []
    with db_session(engine) as db:
        for name in changed:
            new = after[name]
            if new is None:  # gone: nothing of it reaches a prompt
                decided.append((name, OWNER_WRITE if not tainted else TAINTED_WRITE))
                continue
            carried: list[str] = []
            if tainted:
                carried = list(sources)
            elif name not in whole and before.get(name) is not None:
                old = db.get(IdentityProvenance, (name, before[name]))
                if old is not None and old.confirmed_at is None:
                    carried = list(old.sources)
            if not carried:
                decided.append((name, OWNER_WRITE))
                continue
            row = db.get(IdentityProvenance, (name, new))
            if row is None:
                db.add(IdentityProvenance(file=name, sha256=new, sources=carried,
                                          turn_id=turn_id, action_id=action_id))
            else:
                row.sources = list(dict.fromkeys([*row.sources, *carried]))
                row.confirmed_at = None
                db.add(row)
            decided.append((name, TAINTED_WRITE if tainted else KEPT_WRITE))
        db.commit()
    return decided


def untrusted_files(engine: Engine, workspace: Path) -> dict[str, list[str]]:
    """File name → the untrusted sources of its current bytes, for each identity file whose
    text a tainted turn wrote and the owner has not confirmed."""
    current = {name: sha for name, sha in snapshot(workspace).items() if sha is not None}
    if not current:
        return {}
    ensure_table(engine)
    with db_session(engine) as db:
        rows = db.exec(select(IdentityProvenance).where(
            col(IdentityProvenance.file).in_(list(current)),
            col(IdentityProvenance.confirmed_at).is_(None))).all()
    return {row.file: list(row.sources) for row in rows if current.get(row.file) == row.sha256}


def confirm(engine: Engine, workspace: Path, name: str, sha256: str) -> bool:
    """The owner confirms the bytes `sha256` of `name` (what they were shown): False when the
    file changed since (nothing is confirmed then)."""
    if file_hash(workspace / name) != sha256:
        return False
    ensure_table(engine)
    with db_session(engine) as db:
        db.execute(update(IdentityProvenance).where(
            col(IdentityProvenance.file) == name, col(IdentityProvenance.sha256) == sha256,
            col(IdentityProvenance.confirmed_at).is_(None)).values(confirmed_at=utcnow()))
        db.commit()
    return True


def read_label(sources: Sequence[str]) -> str:
    """The sources of a provenance row as a person would read them (`fs_read (x.log)` →
    `x.log`), for the label `MEMORY.md (written after reading …)`."""
    names = [_what(s) for s in sources]
    return ", ".join(dict.fromkeys(n for n in names if n)) or "?"


def _what(source: str) -> str:
    if source.endswith(")") and " (" in source:
        return source.split(" (", 1)[1][:-1]
    return source


def text_key(kind: str, ident: str) -> str:
    """The row key of a text that is not a file (`schedule:<task id>`)."""
    return f"{kind}:{ident}"


def record_text(engine: Engine, key: str, text: str, *, sources: Sequence[str],
                turn_id: str | None, action_id: str | None) -> None:
    """A text a tainted turn set that later runs as the owner's message (a schedule's)."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    ensure_table(engine)
    with db_session(engine) as db:
        if db.get(IdentityProvenance, (key, sha)) is None:
            db.add(IdentityProvenance(file=key, sha256=sha, sources=list(sources),
                                      turn_id=turn_id, action_id=action_id))


def text_sources(engine: Engine, key: str, text: str) -> list[str] | None:
    """The untrusted sources of `text` under `key`, None when a tainted turn did not set it."""
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    ensure_table(engine)
    with db_session(engine) as db:
        row = db.get(IdentityProvenance, (key, sha))
    return None if row is None or row.confirmed_at is not None else list(row.sources)
