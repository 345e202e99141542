"""fs_write: write or append text to a workspace file, atomically (Metnos executor, stdlib only).

The protocol (stdin, stdout, exit 0) is the sandbox's helper, `metnos_sandbox_protocol`.
The cwd is the workspace; paths are workspace-relative. The new content goes to a temporary
file in the same folder, is flushed to disk, then renamed over the target, so a reader sees
either the old file or the new one, never half of it. Missing parent folders are created.
Appending to a file that does not end with a line break adds one first, so the new text
starts on its own line ("milk, bread" + "eggs" is two lines, never "breadeggs").
"""

import os
import stat
import sys

sys.path.append("/home/metnos/pylib")  # where the sandbox binds the protocol helper
from metnos_sandbox_protocol import (  # noqa: E402
    FILE_ERRORS,
    Refused,
    get_arg,
    make_parent,
    replace_file,
    safe_path,
    serve,
)

MAX_STDIN = 8 << 20
MAX_EXISTING = 64 << 20
ARGS = {"path", "content", "mode"}


def existing_bytes(path, mode):
    """The current content when appending (b"" otherwise), and the current file mode or None."""
    if not os.path.lexists(path):
        return b"", None
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    if not stat.S_ISREG(info.st_mode):
        raise Refused("ERR_FILE_PATH_REFUSED", path=path)
    if mode != "append":
        return b"", stat.S_IMODE(info.st_mode)
    if info.st_size > MAX_EXISTING:
        raise Refused("ERR_FILE_TOO_LARGE", path=path, limit=MAX_EXISTING)
    with open(path, "rb") as fh:
        return fh.read(), stat.S_IMODE(info.st_mode)


def run(args):
    path = safe_path(args.get("path"), "path")
    content = get_arg(args, "content", str, None)
    mode = get_arg(args, "mode", str, "overwrite")
    if content is None:
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="content")
    if mode not in ("overwrite", "append"):
        raise Refused("ERR_EXECUTOR_ARG_INVALID", arg="mode")
    if path == ".":
        raise Refused("ERR_FILE_IS_DIRECTORY", path=path)
    make_parent(path)
    before, file_mode = existing_bytes(path, mode)
    data = content.encode("utf-8")
    if before and not before.endswith(b"\n") and data:
        data = b"\n" + data  # appended text starts on its own line
    replace_file(path, before + data, file_mode, ".metnos-write-")
    return {"path": path, "bytes_written": len(data), "created": file_mode is None}


if __name__ == "__main__":
    serve(run, ARGS, max_stdin=MAX_STDIN, errors=FILE_ERRORS)
