"""fs_find: list the workspace files whose name matches a glob (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths in and out are workspace-relative. Hidden (dot) files and
folders are never listed or entered.
"""

import fnmatch
import os
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import FILE_ERRORS, Refused, get_arg, safe_path, serve  # noqa: E402

MAX_STDIN = 1 << 20
MAX_LIMIT = 1000
MAX_SCANNED = 100_000
MAX_OUTPUT_CHARS = 256 * 1024
ARGS = {"pattern", "path", "limit"}


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


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
