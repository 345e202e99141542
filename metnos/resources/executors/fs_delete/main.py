"""fs_delete: move a workspace file or folder to the trash, so it can be undone (Metnos executor).

Protocol: stdin is {"args": {...}, "action_id": "<hex>"}; stdout is one JSON object,
{"ok": true, "result": ...} or {"ok": false, "error": {"key": ..., "vars": ...}}; exit code 0
in both cases. The cwd is the workspace; paths are workspace-relative. Nothing is deleted:
the file or folder is renamed (atomically, on the same filesystem) to
`.trash/<action_id>/<its relative path>`, where `metnos undo <action_id>` finds it. The
action id comes from the host, never from the arguments. Stdlib only.
"""

import json
import os
import re
import sys

MAX_STDIN = 1 << 20
ARGS = {"path"}
TRASH = ".trash"
ACTION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


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
    real = os.path.realpath(os.path.dirname(os.path.normpath(value)) or ".")
    if real != root and not real.startswith(root + os.sep):
        raise Refused("ERR_FILE_PATH_REFUSED", path=value)
    return os.path.normpath(value)


def run(args, action_id):
    if not isinstance(action_id, str) or not ACTION_ID.match(action_id):
        raise Refused("ERR_TRASH_ACTION_ID_MISSING")
    path = safe_path(args.get("path"), "path")
    if path == ".":
        raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if not os.path.lexists(path):
        raise Refused("ERR_FILE_NOT_FOUND", path=path)
    target = os.path.join(TRASH, action_id, path)
    if os.path.lexists(target):
        raise Refused("ERR_FILE_EXISTS", path=target)
    for folder in (TRASH, os.path.join(TRASH, action_id)):
        if os.path.islink(folder):
            raise Refused("ERR_FILE_PATH_REFUSED", path=folder)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    os.rename(path, target)  # the link itself when `path` is a link: never followed
    return {"path": path, "trashed": True}


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
        reply = {"ok": True, "result": run(args, request.get("action_id"))}
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
