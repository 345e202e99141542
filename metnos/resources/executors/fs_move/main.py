"""fs_move: move or rename a workspace file or folder, never overwriting (Metnos executor).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
The cwd is the workspace; paths are workspace-relative. An existing destination is refused:
a file is moved with link + unlink, which fails atomically when the destination exists.
Missing parent folders of the destination are created. Stdlib only.
"""

import errno
import json
import os
import sys

MAX_STDIN = 1 << 20
ARGS = {"src", "dst"}


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


def get_arg(args, name, kind, default):
    value = args.get(name)
    if value is None:
        return default
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
    return value


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
    src = safe_path(args.get("src"), "src")
    dst = safe_path(args.get("dst"), "dst")
    for path in (src, dst):
        if path == ".":
            raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if not os.path.lexists(src):
        raise Refused("ERR_FILE_NOT_FOUND", path=src)
    if os.path.lexists(dst):
        raise Refused("ERR_FILE_EXISTS", path=dst)
    if (dst + os.sep).startswith(src + os.sep):
        raise Refused("ERR_FILE_PATH_REFUSED", path=dst)
    folder = os.path.dirname(dst)
    if folder:
        if os.path.lexists(folder) and not os.path.isdir(folder):
            raise Refused("ERR_FILE_NOT_DIRECTORY", path=folder)
        os.makedirs(folder, exist_ok=True)
    if os.path.isdir(src) and not os.path.islink(src):
        os.rename(src, dst)
    else:
        move_file(src, dst)
    return {"src": src, "dst": dst}


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
        for name in sorted(set(args) - ARGS):
            raise Refused("ERR_EXECUTOR_ARG_INVALID", arg=name)
        reply = {"ok": True, "result": run(args)}
    except Refused as exc:
        reply = {"ok": False, "error": {"key": exc.key, "vars": exc.vars}}
    except PermissionError as exc:
        reply = {
            "ok": False,
            "error": {
                "key": "ERR_FILE_PERMISSION_DENIED",
                "vars": {"path": str(exc.filename or "")},
            },
        }
    except OSError as exc:
        reply = {
            "ok": False,
            "error": {
                "key": "ERR_FILE_IO",
                "vars": {
                    "path": str(exc.filename or ""),
                    "reason": exc.strerror or type(exc).__name__,
                },
            },
        }
    sys.stdout.buffer.write(json.dumps(reply).encode("ascii"))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
