"""archive: file a workspace document under archive/<year>/<category>/ (Metnos executor).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
The cwd is the workspace; paths are workspace-relative. The host chooses the destination
before the run (`dst`, host-set: `metnos.archiving`), so that the before-record covers both
ends of the move and an undo moves the file back; this side checks that `dst` is the file's
place in the archive (`archive/<year>/<category>/<name>` or a numbered `<stem>-<n><ext>`)
and moves it with link + unlink, which fails atomically when the destination exists: never
an overwrite. Missing folders are created. Stdlib only.
"""

import errno
import json
import os
import re
import sys

MAX_STDIN = 64 << 10
ROOT = "archive"
ARGS = {"path", "category", "year", "dst"}
CATEGORY_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
YEAR_RE = re.compile(r"^[12][0-9]{3}$")
MAX_SUFFIX = 999


class Refused(Exception):
    def __init__(self, key, **vars):
        super().__init__(key)
        self.key = key
        self.vars = vars


def safe_path(value, arg):
    """A workspace-relative path, or Refused (absolute, `..`, hidden parts, escaping links)."""
    if not isinstance(value, str) or not value.strip() or "\0" in value:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=arg)
    parts = value.replace("\\", "/").split("/")
    if value.startswith(("/", "~")) or os.path.isabs(value) or ".." in parts:
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    if any(part.startswith(".") and part != "." for part in parts):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    root = os.path.realpath(".")
    real = os.path.realpath(value)
    if real != root and not real.startswith(root + os.sep):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    return os.path.normpath(value)


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


def move_file(src, dst):
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        raise Refused("ERR_FILE_EXISTS", path=dst) from None
    except OSError as exc:  # no hard links here (EPERM, EXDEV, ENOTSUP...): plain rename
        if exc.errno == errno.ENOENT:
            raise
        if os.path.lexists(dst):
            raise Refused("ERR_FILE_EXISTS", path=dst) from None
        os.rename(src, dst)
        return
    os.unlink(src)


def run(args):
    for name in sorted(set(args) - ARGS):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    src = safe_path(args.get("path"), "path")
    if src == "." or not os.path.lexists(src):
        raise Refused("ERR_FILE_NOT_FOUND", path=src)
    if os.path.islink(src) or not os.path.isfile(src):
        raise Refused("ERR_ARCHIVE_NOT_A_FILE", path=src)
    dst, category, year = check_destination(args, src)
    if os.path.lexists(dst):
        raise Refused("ERR_FILE_EXISTS", path=dst)
    folder = os.path.dirname(dst)
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise Refused("ERR_FILE_NOT_DIRECTORY", path=folder)
    os.makedirs(folder, exist_ok=True)
    move_file(src, dst)
    return {"path": dst, "from": src, "category": category, "year": year}


def main():
    try:
        raw = sys.stdin.buffer.read(MAX_STDIN + 1)
        if len(raw) > MAX_STDIN:
            raise Refused("ERR_EXECUTOR_INPUT_INVALID")
        try:
            request = json.loads(raw.decode("utf-8"))
        except ValueError:
            raise Refused("ERR_EXECUTOR_INPUT_INVALID") from None
        args = request.get("args") if isinstance(request, dict) else None
        if not isinstance(args, dict):
            raise Refused("ERR_EXECUTOR_INPUT_INVALID")
        reply = {"ok": True, "result": run(args)}
    except Refused as exc:
        reply = {"ok": False, "error": {"key": exc.key, "vars": exc.vars}}
    except PermissionError as exc:
        reply = {"ok": False, "error": {"key": "ERR_FILE_PERMISSION_DENIED",
                                        "vars": {"path": str(exc.filename or "")}}}
    except OSError as exc:
        reply = {"ok": False, "error": {"key": "ERR_FILE_IO", "vars": {
            "path": str(exc.filename or ""), "reason": exc.strerror or type(exc).__name__}}}
    sys.stdout.write(json.dumps(reply, ensure_ascii=False))


if __name__ == "__main__":
    main()
