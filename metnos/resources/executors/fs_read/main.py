"""fs_read: read a UTF-8 text file of the workspace (Metnos executor, stdlib only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
The cwd is the workspace; paths are workspace-relative.
"""

import json
import os
import stat
import sys

MAX_STDIN = 1 << 20
MAX_BYTES = 256 * 1024
ARGS = {"path", "max_bytes"}


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


def decode_text(data, truncated, path):
    """The text of `data`, allowing a multi-byte character cut by the size limit."""
    if b"\0" in data:
        raise Refused("ERR_FILE_NOT_TEXT", path=path)
    for cut in range(4 if truncated else 1):
        try:
            return data[: len(data) - cut].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise Refused("ERR_FILE_NOT_TEXT", path=path)


def run(args):
    path = safe_path(args.get("path"), "path")
    max_bytes = max(1, min(get_arg(args, "max_bytes", int, 65536), MAX_BYTES))
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    if os.path.isdir(path):
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise Refused("ERR_FILE_NOT_TEXT", path=path)
        data = fh.read(max_bytes + 1)
    truncated = len(data) > max_bytes
    content = decode_text(data[:max_bytes], truncated, path)
    return {"path": path, "content": content, "truncated": truncated, "size": info.st_size}


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
