"""One household, one list: the per-language files of a usual list merged into its one file.

Before a list had one id whatever language named it, "aggiungi latte" wrote `lists/spesa.md`
and "add milk" `lists/shopping.md`. `merge_lists` moves every such file (each name the
lexicon gives a usual list: `metnos.features.lists.aliases`) into `lists/<id>.md`, losing nothing:
the list's own items first, then each other file's in its order, an item already there (the same
words, whatever the case or accents) once; a heading other than a file's title is kept. Before
anything changes, a signed before-record of every file involved is written (`metnos undo
<id>` puts them all back as they were), and each merge leaves an audit line.

It runs when the gateway starts and, lazily, before any list step (the `list_name` host
check), under a lock; a home with nothing to merge is left untouched, so it is idempotent.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import stat
import tempfile
import unicodedata
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metnos.features import lists
from metnos.features.lists import LISTS_DIR, aliases, list_path, list_title, usual
from metnos.ground import keys
from metnos.ground.errors import PolicyDenied
from metnos.ground.reversibility import record_before
from metnos.ground.settings import Settings
from metnos.mechanisms.audit import AuditLog, open_audit_log
from metnos.mechanisms.policy.paths import resolve_in_workspace

log = logging.getLogger(__name__)

ACTION = "lists.merge"
MAX_FILE = 1 << 20
_BULLET = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*?)\s*$")


@dataclass(frozen=True)
class Merged:
    """One list's files merged: `into` (workspace-relative) took the items of `merged`."""

    list_id: str
    into: str
    merged: tuple[str, ...]
    action_id: str
    added: int


def merge_lists(settings: Settings, audit: AuditLog | None = None) -> list[Merged]:
    """Merge every usual list's per-language files (see the module doc); [] when none."""
    if not _pending(settings):
        return []
    own = audit is None
    log_ = open_audit_log(settings) if audit is None else audit
    try:
        with _locked(settings):
            return [m for found, slugs in _pending(settings).items()
                    if (m := _merge(settings, log_, found, slugs)) is not None]
    finally:
        if own:
            log_.close()


def _pending(settings: Settings) -> dict[str, list[str]]:
    folder = settings.workspace / LISTS_DIR
    if not folder.is_dir() or folder.is_symlink():
        return {}
    found: dict[str, list[str]] = {}
    for slug, list_id in sorted(aliases().items()):
        path = folder / f"{slug}.md"
        if _regular(path):
            found.setdefault(list_id, []).append(slug)
    return found


def _merge(settings: Settings, audit: AuditLog, found: str, slugs: list[str]) -> Merged | None:
    folder = settings.workspace / LISTS_DIR
    target = folder / f"{found}.md"
    if os.path.lexists(target) and not _regular(target):
        log.warning("lists.merge_skipped list=%s: not a plain file", found)
        return None
    into = f"{LISTS_DIR}/{found}.md"
    sources = [f"{LISTS_DIR}/{slug}.md" for slug in slugs]
    action_id = uuid.uuid4().hex
    record_before(settings.state_dir, action_id, settings.workspace, "lists", [into, *sources],
                  keys.load_private_key(settings.keys_dir, "audit"))
    lines = _lines(target) if target.exists() else [f"# {list_title(found, settings.lang)}", ""]
    while lines and not lines[-1].strip():
        lines.pop()
    if lines and lines[-1].lstrip().startswith("#"):  # a heading, then a blank line, then items
        lines.append("")
    present = {_fold(i) for i in (_item(line) for line in lines) if i}
    added = 0
    for slug in slugs:
        for n, line in enumerate(_lines(folder / f"{slug}.md")):
            text = line.strip()
            if not text or (n == 0 and text.startswith("#")):  # its title: the list's own
                continue
            item = _item(line)
            if item is None:
                lines.append(line)  # a heading of its own, kept
            elif _fold(item) not in present:
                present.add(_fold(item))
                lines.append(f"- {item}")
                added += 1
    _write(target, lines)
    for slug in slugs:
        os.unlink(folder / f"{slug}.md")
    audit.append(sender="owner", channel="system", action=ACTION, action_id=action_id,
                 args={"into": into, "from": sources},
                 decision="allow", reason="ok", outcome="done")
    log.info("lists.merged list=%s from=%s added=%d", found, ",".join(sources), added)
    return Merged(found, into, tuple(sources), action_id, added)


def _regular(path: Path) -> bool:
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FILE


def _lines(path: Path) -> list[str]:
    return path.read_bytes().decode("utf-8", errors="replace").splitlines()


def _item(line: str) -> str | None:
    """The item a line holds (as the lists executor reads it), None for a heading."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    match = _BULLET.match(line)
    return (match.group(1) if match else text).strip() or None


def _fold(text: str) -> str:
    bare = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return " ".join(bare.casefold().split())


def _write(path: Path, lines: list[str]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".metnos-list-")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(("\n".join(lines) + "\n").encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


@contextmanager
def _locked(settings: Settings) -> Iterator[None]:
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(settings.state_dir / "lists-merge.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def check_list_name(settings: Settings, name: str, value: Any,
                    args: Mapping[str, Any]) -> dict[str, Any]:
    """The `list_name` host check (`metnos.mechanisms.policy.host_checks`)."""
    path = list_path(str(value))
    if path is None:
        raise PolicyDenied("ERR_EXECUTOR_ARG_INVALID", arg=name)
    resolved = resolve_in_workspace(path, settings.workspace, home_dir=Path.home(),
                                    metnos_home=settings.home)
    if resolved != path:  # a link on the way: a list never writes to another file
        raise PolicyDenied("ERR_FILE_PATH_REFUSED", path=path)
    merge_lists(settings)  # lazily, should a per-language file have appeared since the start
    found = lists.list_id(str(value))
    return {name: found if usual(found) else value, "path": resolved,
            "title": list_title(str(value), settings.lang)}
