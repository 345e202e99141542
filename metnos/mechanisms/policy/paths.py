"""Forbidden paths and canonicalisation of path arguments (SPEC §4, hard core).

`resolve_in_workspace` turns whatever spelling a user or a model gave (`~`, `~user`, `..`, `//`,
`.`, an absolute path into the workspace, `/proc/self/root/...`, symlinks anywhere) into the
canonical workspace-RELATIVE path an executor receives, or refuses it with `PolicyDenied`.

How the decision is made:
1. The raw text is refused when empty, too long, or holding NUL/control characters.
2. `~` and `~user` are expanded (our `home_dir` for `~`); `$VARS` are NOT expanded: `$HOME` is
   just a file name. A relative path is relative to the workspace root.
3. Two forms are checked: the lexical one (`..` and `//` folded, no symlinks followed), so that
   `/proc/self/cwd/...` is refused even when it lands in the workspace, and the real one
   (`os.path.realpath`: every symlink in the chain followed, dangling ones too, each before
   the `..` that comes after it, as the kernel does). A chain that cannot be read is refused.
4. A path whose real form is outside the workspace is refused: `ERR_PATH_FORBIDDEN` when either
   form lies inside a forbidden root, else `ERR_PATH_OUTSIDE_WORKSPACE`.
5. Inside the workspace, the forbidden roots that contain the workspace itself are ignored (a
   METNOS_HOME under `/root`, as when Metnos runs as root, must keep its workspace reachable);
   all the others (`workspace/.audit` above all) still apply to both forms.
6. Hard links: a regular file with more than one link is refused (`ERR_PATH_HARDLINK`). This is
   conservative: it also refuses harmless hard links inside the workspace, because telling them
   from a link to a forbidden inode would mean scanning every forbidden tree.

The check is advisory against races (a symlink swapped after it); the sandbox is the second
layer: it binds only the workspace, so a swapped link finds nothing forbidden to reach.
"""

from __future__ import annotations

import os
import pwd
import stat
import unicodedata
from pathlib import Path

from metnos.ground.errors import PolicyDenied

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255
_HOME_ROOTS = (".ssh", ".gnupg", ".aws", ".config")
_SYSTEM_ROOTS = ("/etc", "/root", "/boot", "/proc", "/sys", "/dev")
_METNOS_ROOTS = ("secrets", "keys", "state", "pg", "signatures")


def forbidden_roots(home_dir: Path, metnos_home: Path, workspace: Path) -> list[Path]:
    """The hard-core forbidden roots, absolute and lexically normalised, without duplicates."""
    roots = [home_dir / name for name in _HOME_ROOTS]
    roots += [Path(p) for p in _SYSTEM_ROOTS]
    roots += [metnos_home / name for name in _METNOS_ROOTS]
    roots += [workspace / ".audit", workspace / ".trash"]
    out: list[Path] = []
    for root in roots:
        norm = Path(_normpath(os.path.abspath(root)))
        if norm not in out:
            out.append(norm)
    return out


def resolve_in_workspace(raw: str, workspace: Path, *, home_dir: Path, metnos_home: Path) -> str:
    """The canonical workspace-relative path for `raw` (`.` is the workspace root).

    Raises `PolicyDenied` with key ERR_PATH_FORBIDDEN, ERR_PATH_OUTSIDE_WORKSPACE,
    ERR_PATH_HARDLINK, ERR_PATH_CONTROL_CHARS, ERR_PATH_TOO_LONG, ERR_PATH_EMPTY,
    ERR_PATH_SYMLINK_LOOP or ERR_PATH_UNRESOLVABLE, and vars `path` (the spelling, printable)
    and `reason` (a short code for the audit line).
    """
    _check_spelling(raw)
    shown = printable(raw)
    ws_lexical = _normpath(os.path.abspath(workspace))
    ws_real = os.path.realpath(workspace)
    joined = os.path.join(ws_lexical, _expand_user(raw, home_dir))
    lexical = _normpath(joined)
    roots = _root_forms(forbidden_roots(home_dir, metnos_home, workspace))
    real = _realpath(joined)  # from `joined`: a symlink is followed before the `..` after it
    if real is None:
        if any(_within(lexical, r) for r in roots):
            raise PolicyDenied("ERR_PATH_FORBIDDEN", path=shown, reason="forbidden_root")
        raise PolicyDenied("ERR_PATH_UNRESOLVABLE", path=shown, reason="unresolvable")
    forms = (lexical, real)
    if not _within(real, ws_real):
        if any(_within(p, r) for p in forms for r in roots):
            raise PolicyDenied("ERR_PATH_FORBIDDEN", path=shown, reason="forbidden_root")
        raise PolicyDenied("ERR_PATH_OUTSIDE_WORKSPACE", path=shown, reason="outside_workspace")
    applicable = [r for r in roots if not (_within(ws_real, r) or _within(ws_lexical, r))]
    if any(_within(p, r) for p in forms for r in applicable):
        raise PolicyDenied("ERR_PATH_FORBIDDEN", path=shown, reason="forbidden_root")
    if _has_symlink(real):
        raise PolicyDenied("ERR_PATH_SYMLINK_LOOP", path=shown, reason="symlink_loop")
    if _is_hardlinked(real):
        raise PolicyDenied("ERR_PATH_HARDLINK", path=shown, reason="hardlink")
    return Path(os.path.relpath(real, ws_real)).as_posix()


def printable(raw: str, limit: int = 200) -> str:
    """`raw` safe to show in a message or a log: control characters escaped, length capped."""
    text = "".join(
        f"\\x{ord(ch):02x}" if unicodedata.category(ch) == "Cc" else ch for ch in raw[:limit]
    )
    return text + "…" if len(raw) > limit else text


# -- private helpers ----------------------------------------------------------------------


def _check_spelling(raw: str) -> None:
    if not isinstance(raw, str) or not raw.strip():
        raise PolicyDenied("ERR_PATH_EMPTY", path="", reason="empty")
    if "\x00" in raw:
        raise PolicyDenied("ERR_PATH_CONTROL_CHARS", path=printable(raw), reason="nul_byte")
    if any(unicodedata.category(ch) == "Cc" for ch in raw):
        raise PolicyDenied("ERR_PATH_CONTROL_CHARS", path=printable(raw), reason="control_char")
    try:
        encoded = os.fsencode(raw)
    except UnicodeEncodeError as exc:  # a lone surrogate: not a name any file can have
        shown = printable(raw)
        raise PolicyDenied("ERR_PATH_CONTROL_CHARS", path=shown, reason="encoding") from exc
    if len(encoded) > MAX_PATH_BYTES or any(len(p) > MAX_NAME_BYTES for p in encoded.split(b"/")):
        raise PolicyDenied("ERR_PATH_TOO_LONG", path=printable(raw), reason="too_long")


def _expand_user(raw: str, home_dir: Path) -> str:
    """`~` → home_dir, `~user` → that user's home (unknown users stay literal names)."""
    if not raw.startswith("~"):
        return raw
    first, sep, rest = raw.partition("/")
    name = first[1:]
    if not name:
        base = str(home_dir)
    else:
        try:
            base = pwd.getpwnam(name).pw_dir
        except KeyError:
            return raw
    return os.path.join(base, rest) if sep else base


def _normpath(path: str) -> str:
    """normpath, and a leading `//` folded to `/` as Linux does (POSIX lets normpath keep it)."""
    norm = os.path.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


def _realpath(path: str) -> str | None:
    """The real path, or None when a link in the chain cannot be read (e.g. /proc/1/cwd)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return None


def _root_forms(roots: list[Path]) -> list[str]:
    """Each root as written and as resolved (a root may itself be a symlink)."""
    forms: list[str] = []
    for root in roots:
        for form in (str(root), os.path.realpath(root)):
            if form not in forms:
                forms.append(form)
    return forms


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _has_symlink(real: str) -> bool:
    """True when a component of an already-resolved path is still a symlink (a loop)."""
    current = real
    while True:
        if os.path.islink(current):
            return True
        parent = os.path.dirname(current)
        if parent == current:
            return False
        current = parent


def _is_hardlinked(real: str) -> bool:
    try:
        st = os.stat(real)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_nlink > 1
