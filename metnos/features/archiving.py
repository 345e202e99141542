"""Where an `archive` step files a document: `archive/<year>/<category>/<name>`, chosen by
the host before the run.

The destination is a host-set input of the executor (`dst`, `access = "write"`), so the
before-record (`metnos.ground.reversibility`) covers both ends of the move, exactly as for
`fs_move`, and `metnos undo ACTION_ID` moves the file back. The year is the `year` input, else the
year of the file's last change in the household's time zone; the category is a slug (a plain
word: "fatture", "invoices", "bollette-luce"); a name already taken gets a numbered suffix
(`fattura-2.pdf`), never an overwrite (the executor refuses an existing destination too, so
a file that appears in between is never replaced).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

from metnos.ground.errors import PolicyDenied
from metnos.ground.settings import Settings
from metnos.mechanisms.policy.paths import resolve_in_workspace

ROOT = "archive"
CATEGORY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MIN_YEAR, MAX_YEAR = 1900, 2999
MAX_SUFFIX = 999


def category_slug(value: object) -> str | None:
    """The category as a slug (trimmed, lower case), None when it is not one plain word."""
    if not isinstance(value, str):
        return None
    slug = value.strip().casefold().replace(" ", "-")
    return slug if CATEGORY_RE.fullmatch(slug) else None


def file_year(workspace: Path, rel: str, tz: tzinfo) -> int:
    """The year of the file's last change (mtime, links not followed) in `tz`."""
    st = os.lstat(workspace / rel)
    return datetime.fromtimestamp(st.st_mtime, UTC).astimezone(tz).year


def numbered(name: str, n: int) -> str:
    """`fattura.pdf` → `fattura-2.pdf` (n ≥ 2); a name without an extension gets `-2`."""
    stem, ext = os.path.splitext(name)
    if not stem:  # ".pdf" alone is a hidden name, never made here: keep the whole as stem
        stem, ext = name, ""
    return f"{stem}-{n}{ext}"


def free_destination(workspace: Path, folder: str, name: str) -> str:
    """`folder/name`, or its first numbered variant that does not exist yet."""
    for n in range(1, MAX_SUFFIX + 1):
        candidate = f"{folder}/{name if n == 1 else numbered(name, n)}"
        if not os.path.lexists(workspace / candidate):
            return candidate
    raise PolicyDenied("ERR_ARCHIVE_NAME_EXHAUSTED", path=f"{folder}/{name}")


def destination(workspace: Path, path: str, category: str, year: int | None,
                tz: tzinfo) -> tuple[str, str, int]:
    """(dst, category slug, year) for archiving the workspace file `path` (canonical,
    workspace-relative). Raises PolicyDenied for a bad category or year, a path that is not
    a file, or a file already in that archive folder."""
    slug = category_slug(category)
    if slug is None:
        raise PolicyDenied("ERR_ARCHIVE_CATEGORY_INVALID", category=str(category)[:60])
    if year is not None and (isinstance(year, bool) or not isinstance(year, int)
                             or not MIN_YEAR <= year <= MAX_YEAR):
        raise PolicyDenied("ERR_EXECUTOR_ARG_INVALID", arg="year")
    target = workspace / path
    if path in (".", "") or not os.path.lexists(target):
        raise PolicyDenied("ERR_FILE_NOT_FOUND", path=path)
    if os.path.islink(target) or not os.path.isfile(target):
        raise PolicyDenied("ERR_ARCHIVE_NOT_A_FILE", path=path)
    chosen = year if year is not None else file_year(workspace, path, tz)
    folder = f"{ROOT}/{chosen}/{slug}"
    if os.path.dirname(path) == folder:
        raise PolicyDenied("ERR_ARCHIVE_ALREADY_THERE", path=path)
    return free_destination(workspace, folder, os.path.basename(path)), slug, chosen


def archive_destination(settings: Settings, name: str, value: Any,
                        args: Mapping[str, Any]) -> dict[str, Any]:
    """The host check of `archive`'s `category` (`check = "archive_destination"`): the
    checked category and year, and the host-set `dst`, resolved in the workspace like any
    path argument (a link on the way is refused). `args["path"]` is resolved already."""
    path = args.get("path")
    if not isinstance(path, str):
        raise PolicyDenied("ERR_EXECUTOR_ARG_INVALID", arg="path")
    dst, slug, year = destination(settings.workspace, path, value, args.get("year"),
                                  settings.tz)
    folder = os.path.dirname(dst)
    existing = folder
    while existing and not os.path.lexists(settings.workspace / existing):
        existing = os.path.dirname(existing)
    if existing:  # what exists of the folder already must resolve to itself (no links)
        resolved = resolve_in_workspace(existing, settings.workspace, home_dir=Path.home(),
                                        metnos_home=settings.home)
        if resolved != existing:
            raise PolicyDenied("ERR_FILE_PATH_REFUSED", path=dst)
    return {name: slug, "year": year, "dst": dst}
