"""archive: file a workspace document under archive/<year>/<category>/ (Metnos executor).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. The host chooses the destination
before the run (`dst`, host-set: `metnos.features.archiving`), so that the before-record covers both
ends of the move and an undo moves the file back; this side checks that `dst` is the file's
place in the archive (`archive/<year>/<category>/<name>` or a numbered `<stem>-<n><ext>`)
and moves it with link + unlink, which fails atomically when the destination exists: never
an overwrite. Missing folders are created. Stdlib only.
"""

import os
import re
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, make_parent, move_file, safe_path, serve  # noqa: E402

MAX_STDIN = 64 << 10
ROOT = "archive"
ARGS = {"path", "category", "year", "dst"}
CATEGORY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
YEAR_RE = re.compile(r"^[12][0-9]{3}$")
MAX_SUFFIX = 999


def names_for(name):
    """The names a file may get in its archive folder: itself, then `<stem>-<n><ext>`."""
    stem, ext = os.path.splitext(name)
    if not stem:
        stem, ext = name, ""
    return {name} | {f"{stem}-{n}{ext}" for n in range(2, MAX_SUFFIX + 1)}


def check_destination(args, src):
    """(dst, category, year) once `dst` is src's place in the archive; else Refused."""
    category = args.get("category")
    if not isinstance(category, str) or not CATEGORY_RE.fullmatch(category):
        raise Refused("ERR_ARCHIVE_CATEGORY_INVALID", category=str(category)[:60])
    if args.get("dst") is None:  # no place chosen by the host: no before-record of it
        raise Refused("ERR_ARCHIVE_UNPLANNED")
    dst = safe_path(args.get("dst"), "dst")
    parts = dst.split("/")
    year = args.get("year")
    if len(parts) != 4 or parts[0] != ROOT or not YEAR_RE.fullmatch(parts[1]):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="dst")
    if parts[2] != category or parts[3] not in names_for(os.path.basename(src)):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="dst")
    if year is not None and (isinstance(year, bool) or year != int(parts[1])):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="year")
    if os.path.dirname(src) == os.path.dirname(dst):
        raise Refused("ERR_ARCHIVE_ALREADY_THERE", path=src)
    return dst, category, int(parts[1])


def run(args):
    src = safe_path(args.get("path"), "path")
    if src == "." or not os.path.lexists(src):
        raise Refused("ERR_FILE_NOT_FOUND", path=src)
    if os.path.islink(src) or not os.path.isfile(src):
        raise Refused("ERR_ARCHIVE_NOT_A_FILE", path=src)
    dst, category, year = check_destination(args, src)
    if os.path.lexists(dst):
        raise Refused("ERR_FILE_EXISTS", path=dst)
    make_parent(dst)
    move_file(src, dst)
    return {"path": dst, "from": src, "category": category, "year": year}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
