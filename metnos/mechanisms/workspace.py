"""The six markdown files of the workspace (SPEC §7.9) that shape every system prompt.

Read on every turn, so the owner edits them without a restart; each file and the whole block
are capped, so a huge MEMORY.md cannot crowd the tools out of the model's context.

Each file is opened the way `fs_read` may open one (Law 2): from the workspace's descriptor
with `O_NOFOLLOW`, a regular file with one link only. A symlink, a hard link (`st_nlink > 1`:
the same inode as a file anywhere else, `~/.ssh/id_rsa` say) or anything but a regular file is
left out of the prompt, logged, and reported to `refused(name, reason)` (the turn writes the
audit line); a turn never fails for it.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from metnos.ground import fdpaths
from metnos.mechanisms.policy.untrusted import wrap_untrusted

log = logging.getLogger(__name__)

FILES = ("IDENTITY.md", "SOUL.md", "USER.md", "TELOS.md", "RULES.md", "MEMORY.md")
PER_FILE_CHARS = 4000
TOTAL_CHARS = 12000
REFUSED_ACTION = "workspace"  # a file left out: the audit action "workspace/<NAME>"
Refused = Callable[[str, str], None]  # (file name, reason) of a file left out


def prompt_context(workspace: Path, *, per_file: int = PER_FILE_CHARS,
                   total: int = TOTAL_CHARS, refused: Refused | None = None,
                   untrusted: Mapping[str, str] | None = None) -> str:
    """The files in their fixed order as `### NAME` sections; missing ones are skipped, and
    refused ones (a link, not a regular file) too, each told to `refused`. A file in
    `untrusted` (name → its source label: a tainted turn wrote it, the owner has not confirmed
    it, `metnos.mechanisms.identity`) is given as data, inside the untrusted-data envelope."""
    parts: list[str] = []
    budget = total
    try:
        ws_fd = fdpaths.open_workspace(workspace)
    except OSError:
        return ""
    try:
        for name in FILES:
            text = _read(ws_fd, name, min(per_file, budget), refused)
            if not text:
                continue
            if untrusted and name in untrusted:
                text = wrap_untrusted(text, source=untrusted[name])
            section = f"### {name}\n{text}"
            parts.append(section)
            budget -= len(section)
            if budget <= 0:
                break
    finally:
        os.close(ws_fd)
    return "\n\n".join(parts)


def _read(ws_fd: int, name: str, limit: int, refused: Refused | None) -> str:
    if limit <= 0:
        return ""
    try:
        fd = os.open(name, fdpaths.FILE_FLAGS, dir_fd=ws_fd)
    except FileNotFoundError:
        return ""
    except OSError as exc:  # ELOOP: a symlink; anything else unreadable
        _refuse(name, "symlink" if exc.errno == errno.ELOOP else "unreadable", refused)
        return ""
    try:
        st = os.fstat(fd)
        why = ("not_a_file" if not stat.S_ISREG(st.st_mode)
               else "hardlink" if st.st_nlink > 1 else None)
        raw = b"" if why else os.read(fd, 4 * (limit + 1))
    except OSError:
        why = "unreadable"
    finally:
        os.close(fd)
    if why:
        _refuse(name, why, refused)
        return ""
    text = raw.decode("utf-8", errors="replace")[:limit + 1].strip()
    return text if len(text) <= limit else text[:limit].rstrip() + " […]"


def _refuse(name: str, reason: str, refused: Refused | None) -> None:
    log.warning("workspace.identity_refused file=%s reason=%s", name, reason)
    if refused is not None:
        try:
            refused(name, reason)
        except Exception:  # the audit disk is gone: the turn goes on without the file
            log.exception("workspace.identity_refused_unrecorded file=%s", name)
