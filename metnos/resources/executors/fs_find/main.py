"""fs_find: list the workspace files whose name matches a glob (Metnos executor, stdlib only).

Protocol: stdin is {"args": {...}}; stdout is one JSON object, {"ok": true, "result": ...}
or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0 in both cases.
The cwd is the workspace; paths in and out are workspace-relative. Hidden (dot) files and
folders are never listed or entered.
"""

import fnmatch
import json
import os
import sys

MAX_STDIN = 1 << 20
MAX_LIMIT = 1000
MAX_SCANNED = 100_000
MAX_OUTPUT_CHARS = 256 * 1024
ARGS = {"pattern", "path", "limit"}


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


def check_pattern(pattern):
    parts = pattern.replace("\\", "/").split("/")
    bad = not pattern or len(pattern) > 256 or "\0" in pattern or pattern.startswith("/")
    if bad or ".." in parts:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="pattern")
    return pattern.lower()


def matches(pattern, rel_to_base, name):
    target = rel_to_base if "/" in pattern else name
    return fnmatch.fnmatchcase(target.lower(), pattern)


def walk(base, pattern):
    """Matching files as workspace-relative paths, and whether the scan cap cut the walk."""
    found, scanned = [], 0
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            scanned += 1
            if scanned > MAX_SCANNED:
                return found, True
            if name.startswith("."):
                continue
            path = os.path.join(root, name)
            rel_to_base = os.path.relpath(path, base).replace(os.sep, "/")
            if matches(pattern, rel_to_base, name):
                found.append(os.path.relpath(path, ".").replace(os.sep, "/"))
    return found, False


def run(args):
    pattern = check_pattern(get_arg(args, "pattern", str, "*"))
    base = safe_path(get_arg(args, "path", str, "."), "path")
    limit = max(1, min(get_arg(args, "limit", int, 200), MAX_LIMIT))
    if not os.path.exists(base):
        raise Refused("ERR_FILE_NOT_FOUND", path=base)
    if not os.path.isdir(base):
        raise Refused("ERR_FILE_NOT_DIRECTORY", path=base)
    found, truncated = walk(base, pattern)
    found.sort()
    files, size = [], 0
    for rel in found[:limit]:
        size += len(rel) + 4
        if size > MAX_OUTPUT_CHARS:
            truncated = True
            break
        files.append(rel)
    return {"files": files, "truncated": truncated or len(found) > limit}


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
